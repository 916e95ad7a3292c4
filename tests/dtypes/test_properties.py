"""Round-trip properties of docs/codecs.md §11, and independence of the results from the numba thread count."""

import ml_dtypes
import numba
import numpy as np
import pytest

from npu_emu import dtypes as D

# Random bit patterns include signalling NaNs (numpy flags "invalid" when it converts them) and some inputs are
# deliberately out of range for numpy's own casts ("overflow"); neither is a test failure.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning",
                                        "ignore:overflow encountered in cast:RuntimeWarning")

ALL8 = np.arange(256, dtype=np.uint8)
ALL4 = np.arange(16, dtype=np.uint8)


def test_hif8_round_trip_round():
    v = D.decode(ALL8, "hifloat8")
    assert np.array_equal(D.encode(v, "hifloat8"), ALL8)  # 0x80 -> NaN -> 0x80, 0x6F -> Inf -> 0x6F
    want = ALL8.copy()
    want[[0x6F, 0xEF, 0x80]] = [0x6E, 0xEE, 0x00]
    assert np.array_equal(D.encode(v, "hifloat8", saturate=True), want)


def test_hif8_hybrid_from_fp32_moves_up_one_step():
    # exact fp32 values have zero low bits, so thr = 0 <= frac: every code with abs(e) >= 4 or in the denormal
    # range moves to the next larger magnitude (0x40 -> 0x41, 0x07 -> 0x7E, 0x6E -> 0x6F); abs(e) <= 3 stays
    v = D.decode(ALL8, "hifloat8")
    got = D.encode(v, "hifloat8", round_mode="hybrid")
    finite = np.isfinite(v) & (v != 0)
    e = np.floor(np.log2(np.abs(np.where(finite, v, 1.0)))).astype(int)  # exact: HiF8 values are short
    moves = finite & ((np.abs(e) >= 4) | (e < -15))
    mags = np.sort(np.unique(np.abs(v[np.isfinite(v)])))
    nxt = {m: (mags[i + 1] if i + 1 < len(mags) else np.inf) for i, m in enumerate(mags)}
    want_val = np.where(moves, np.sign(v) * np.array([nxt.get(abs(x), 0) for x in v]), v)
    assert np.array_equal(got[~moves], ALL8[~moves])
    dec = D.decode(got[moves], "hifloat8")
    assert np.array_equal(dec, want_val[moves].astype(np.float32))
    assert got[0x40] == 0x41 and got[0x07] == 0x7E and got[0x6E] == 0x6F


def test_hif8_hybrid_from_fp16_is_idempotent():
    v = D.decode(ALL8, "hifloat8").astype(np.float16)  # exact (docs/codecs.md §3.1)
    assert np.array_equal(D.encode(v, "hifloat8", round_mode="hybrid"), ALL8)


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_round_trip(fmt):
    v = D.decode(ALL8, fmt)
    got = D.encode(v, fmt)
    nan = np.isnan(v)
    assert np.array_equal(got[~nan], ALL8[~nan])  # -0 (0x80) included
    # NaN payloads canonicalise to 0x7F/0xFF (E4M3FN) and 0x7E/0xFE (E5M2), keeping the sign
    canon = 0x7F if fmt == "float8_e4m3fn" else 0x7E
    assert np.array_equal(got[nan], canon | (ALL8[nan] & 0x80))


@pytest.mark.parametrize("mode", ["rint", "round", "floor", "ceil", "trunc"])
@pytest.mark.parametrize("fmt", ["float4_e2m1", "float4_e1m2"])
def test_fp4_round_trip_every_mode(fmt, mode):
    v = D.decode(ALL4, fmt)
    assert np.array_equal(D.encode(v, fmt, round_mode=mode), ALL4)
    assert np.array_equal(D.encode(v.astype(ml_dtypes.bfloat16), fmt, round_mode=mode), ALL4)


def test_e8m0_round_trip_via_bf16():
    for zero in ("pow2", "zero"):
        v = D.decode(ALL8, "float8_e8m0", e8m0_zero=zero).astype(ml_dtypes.bfloat16)  # exact, 2^-127 is 0x0040
        assert np.array_equal(D.encode(v, "float8_e8m0"), ALL8)


def test_fp16_bf16_helpers_round_trip():
    h = np.arange(65536, dtype=np.uint16)
    nan16 = np.isnan(h.view(np.float16))
    for mode in ("rint", "round", "floor", "ceil", "trunc", "odd"):
        got = D.to_float16(h.view(np.float16).astype(np.float32), round_mode=mode).view(np.uint16)
        assert np.array_equal(got[~nan16], h[~nan16])
        b = (h.astype(np.uint32) << 16).view(np.float32)
        gotb = D.to_bfloat16(b, round_mode=mode).view(np.uint16)
        nanb = np.isnan(b)
        assert np.array_equal(gotb[~nanb], h[~nanb])
        assert np.isnan(gotb.view(ml_dtypes.bfloat16).astype(np.float32)[nanb]).all()


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs at least 2 numba threads")
def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(11)
    x = rng.integers(0, 2 ** 32, 100003, dtype=np.uint32).view(np.float32)
    cases = [("hifloat8", {}), ("hifloat8", {"round_mode": "hybrid"}), ("float8_e4m3fn", {}),
             ("float8_e5m2", {"saturate": True}), ("float4_e2m1", {"round_mode": "ceil"}), ("float8_e8m0", {})]

    def run():
        return [D.encode(x, f, **kw) for f, kw in cases] + [D.decode(x.view(np.uint8), "hifloat8").view(np.uint32),
                                                            D.to_float16(x, round_mode="odd").view(np.uint16)]

    before = numba.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            numba.set_num_threads(threads)
            results.append(run())
    finally:
        numba.set_num_threads(before)
    for one, two in zip(*results):
        assert np.array_equal(one, two)
