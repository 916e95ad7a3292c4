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
