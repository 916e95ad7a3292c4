"""The exact cube primitives of accum.py against plain Python integer / Fraction arithmetic."""

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.quant_matmul import golden as golden
from npu_emu.kernels.quant_matmul import accum


def _f32bits(x):
    return int(np.float32(x).view(np.uint32))


def test_exact_sum_f32_random():
    rng = np.random.default_rng(1)
    limbs = np.zeros(96, np.int64)
    for _ in range(1000):
        n = int(rng.integers(1, 6))
        vals = (rng.standard_normal(n) * 2.0 ** rng.integers(-160, 160, n)).astype(np.float64)
        if rng.random() < 0.3:                              # near-cancellation
            vals[-1] = -vals[0] + math.ldexp(float(rng.integers(-3, 4)), int(rng.integers(-170, 60)))
        ref = golden.round_f32(sum((Fraction(float(v)) for v in vals), Fraction(0)))
        got = accum.exact_sum_f32(vals, n, limbs)
        assert _f32bits(got) == _f32bits(ref), vals
        ok, fast = accum.fast_sum_f32(vals, n)
        if ok:
            assert _f32bits(fast) == _f32bits(ref), vals


@pytest.mark.parametrize("vals, want", [
    ([1.0, 2.0 ** -24], 1.0),                               # exact tie: even
    ([1.0, 2.0 ** -24, 2.0 ** -80], 1.0 + 2.0 ** -23),      # a far tail breaks the tie
    ([1.0, 2.0 ** -24, -2.0 ** -80], 1.0),
    ([1.5 * 2.0 ** -149, 0.0], 2.0 * 2.0 ** -149),          # subnormal tie -> even
    ([2.0 ** -150, 0.0], 0.0),
    ([2.0 ** 127 * 1.9999999, 2.0 ** 127], math.inf),       # overflow
    ([math.inf, -math.inf], math.nan),
    ([-0.0, -0.0], -0.0),
])
def test_exact_sum_f32_edges(vals, want):
    limbs = np.zeros(96, np.int64)
    got = accum.exact_sum_f32(np.array(vals, np.float64), len(vals), limbs)
    if math.isnan(want):
        assert np.isnan(got)
    else:
        assert _f32bits(got) == _f32bits(np.float32(want))


def _exact_ref(a, b):
    s = golden.exact_dots(a, b)
    return np.array([[golden.round_f32(v) for v in row] for row in s], np.float32)


@pytest.mark.parametrize("k", [5, 100, 700])
def test_exact_matmul_multi_band(k):
    # e5m2 and hif8 over their whole code range need several exponent bands per operand
    import en_dtypes

    rng = np.random.default_rng(k)
    a = rng.integers(0, 256, (4, k)).astype(np.uint8).view(en_dtypes.hifloat8).astype(np.float64)
    b = rng.integers(0, 256, (k, 3)).astype(np.uint8).view(ml_dtypes.float8_e5m2).astype(np.float64)
    a[~np.isfinite(a)] = 3.0
    b[~np.isfinite(b)] = -0.5
    bands_a, bands_b = accum._plan(a, b, 4, 3, k)
    assert len(bands_a) * len(bands_b) > 1
    got = accum.exact_matmul_f32(a, b, 4, 3)
    assert np.array_equal(got.view(np.uint32), _exact_ref(a, b).view(np.uint32))


def test_exact_matmul_nan_inf():
    a = np.array([[1.0, np.inf, 2.0], [np.nan, 1.0, 1.0]])
    b = np.array([[1.0], [1.0], [-2.0]])
    got = accum.exact_matmul_f32(a, b, 4, 4)
    assert np.isposinf(got[0, 0]) and np.isnan(got[1, 0])


def test_int_matmul_chunks_and_wraps():
    # |-128 * -128| = 2^14: 1024-long chunks keep every partial sum of a float32 GEMM an exact integer
    assert accum.int_k_chunk(128, 128, 5000) == 1024
    a = np.full((3, 5000), -128, np.int8)
    b = np.full((5000, 2), -128, np.int8)
    a[1, ::3] = 127
    got = accum.int_matmul(a, b)
    assert np.array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    # beyond 2^31 the int32 L0C wraps (K > 2^17 at int8 extremes)
    k = 140_000
    a = np.full((1, k), -128, np.int8)
    b = np.full((k, 1), -128, np.int8)
    want = np.int64(k) * 16384
    got = accum.int_matmul(a, b)
    assert int(got[0, 0]) == ((int(want) + 2 ** 31) % 2 ** 32) - 2 ** 31


@pytest.mark.parametrize("dt", [np.int8, np.uint8])
def test_int_matmul_one_block_takes_no_scan(dt, monkeypatch):
    # k <= 256 with byte operands: one float32 GEMM, exact at the extremes (256 * 255 * 255 < 2^24), without the
    # magnitude scans; a zero operand gives zeros through the GEMM
    lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    a = np.full((3, 256), lo, dt)
    a[1] = hi
    b = np.full((256, 4), lo, dt)
    b[:, 1] = hi
    b[:, 2] = 0
    monkeypatch.setattr(accum, "int_k_bounds", lambda *args: pytest.fail("scanned"))
    got = accum.int_matmul(a, b)
    assert got.dtype == np.int32
    assert np.array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    assert np.array_equal(accum.int_matmul(np.zeros((2, 7), dt), b[:7]), np.zeros((2, 4), np.int32))


def _l1_row(last):
    """A (1, 1280) int8 row of 1040 entries 127 (all of blocks 0-3, 16 of block 4) and one entry ``last`` in block
    4: its |row| sum is 1040 * 127 + last = 132080 + last."""
    a = np.zeros((1, 1280), np.int8)
    a[0, :1040] = 127
    a[0, 1100] = last
    return a


def test_int_k_bounds_at_the_exactness_limit():
    # b = 127 everywhere: a chunk is exact while 127 * sum|a| <= 2^24, i.e. sum|a| <= floor(2^24 / 127) = 132104
    assert accum.F32_EXACT_INT // 127 == 132104
    b = np.full((1280, 1), 127, np.int8)
    # sum|a| = 132104: one chunk of all 5 blocks; the dot product 127 * 132104 = 16777208 <= 2^24
    a = _l1_row(24)
    assert accum.int_k_bounds(a, 127, 1280) == [0, 1280]
    assert int(accum.int_matmul(a, b)[0, 0]) == 16777208
    # sum|a| = 132105: one more and the 5-block chunk is no longer exact: its value 127 * 132105 = 16777335 is odd
    # and above 2^24, so no float32 GEMM of that chunk can return it whatever its order (float32 spacing is 2 there)
    a = _l1_row(25)
    assert accum.int_k_bounds(a, 127, 1280) == [0, 1024, 1280]
    assert int((a.astype(np.float32) @ b.astype(np.float32))[0, 0]) != 16777335
    assert int(accum.int_matmul(a, b)[0, 0]) == 16777335
    # the bound takes the largest row: a second, small row does not lengthen the chunks
    two = np.vstack([np.ones((1, 1280), np.int8), a])
    assert accum.int_k_bounds(two, 127, 1280) == [0, 1024, 1280]
    # full-range uniform int8 (row sums ~ 64 per entry): 1792-long chunks against int_k_chunk's 1024
    rng = np.random.default_rng(3)
    u = rng.integers(-128, 128, (64, 7168), dtype=np.int8)
    assert accum.int_k_bounds(u, 128, 7168) == [0, 1792, 3584, 5376, 7168]
    # k not a multiple of 256: the last block is short; a 256-block always fits (256 * 128 * 128 = 2^22)
    worst = np.full((2, 1030), -128, np.int8)
    assert accum.int_k_bounds(worst, 128, 1030) == [0, 1024, 1030]


def test_int_matmul_column_split_and_small_activations(monkeypatch):
    # the host-thread column split (forced here: it depends on the load and the thread count) gives the same int32
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (37, 3000), dtype=np.int8)
    b = rng.integers(-128, 128, (3000, 200), dtype=np.int8)
    want = a.astype(np.int64) @ b.astype(np.int64)
    serial = accum.int_matmul(a, b)
    monkeypatch.setattr(accum, "host_column_split",
                        lambda n, macs: [(0, 64), (64, 128), (128, n)] if n > 128 else [(0, n)])
    split = accum.int_matmul(a, b)
    out = np.full((37, 400), 7, np.int32)[:, ::2]                 # strided out
    accum.int_matmul(a, b, out=out)
    assert np.array_equal(serial, want) and np.array_equal(split, want) and np.array_equal(out, want)
    # activations of mostly small values: the whole K in one chunk
    small = np.clip(np.round(rng.standard_normal((16, 7168)) * 8), -127, 127).astype(np.int8)
    small[:, 0] = 127
    bw = rng.integers(-127, 128, (7168, 5), dtype=np.int8)
    bw[0, 0] = 127
    assert accum.int_k_bounds(small, 127, 7168) == [0, 7168]
    assert np.array_equal(accum.int_matmul(small, bw), small.astype(np.int64) @ bw.astype(np.int64))


def test_int_matmul_groups(monkeypatch):
    # the grouped form: an empty group skipped, a weight used twice, rows of no group untouched; forced column
    # ranges (every thread through all groups) give the same int32 as the calling thread
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (40, 700), dtype=np.int8)
    b = rng.integers(-128, 128, (3, 700, 150), dtype=np.int8)
    groups = [(2, 0, 10), (0, 10, 0), (2, 10, 7), (1, 17, 20)]
    want = np.full((40, 150), -5, np.int64)
    for g, r0, m in groups:
        want[r0:r0 + m] = a[r0:r0 + m].astype(np.int64) @ b[g].astype(np.int64)
    serial = np.full((40, 150), -5, np.int32)
    accum.int_matmul_groups(a, b, groups, serial)
    monkeypatch.setattr(accum, "host_column_split", lambda n, macs: [(0, 64), (64, n)])
    split = np.full((40, 150), -5, np.int32)
    accum.int_matmul_groups(a, b, groups, split)
    assert np.array_equal(serial, want) and np.array_equal(split, want)
