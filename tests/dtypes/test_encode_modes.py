"""Round modes and switches no oracle implements, against the independent reference of reference.py:
fp16/bf16 helpers in all six modes (± saturation), FP4 in its five modes, HiF8 ROUND as a codebook search (with
saturation), HiF8 HYBRID against the transcribed ISA pseudo-code (fp32 and fp16 sources, all switches), E8M0
truncation, and float64 inputs (which must round once, not twice)."""

import functools

import ml_dtypes
import numpy as np
import pytest

import dtypes_reference as R
from npu_emu import dtypes as D

# Random bit patterns include signalling NaNs (numpy flags "invalid" when it converts them) and some inputs are
# deliberately out of range for numpy's own casts ("overflow"); neither is a test failure.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning",
                                        "ignore:overflow encountered in cast:RuntimeWarning")


@pytest.fixture(scope="module")
def values():
    rng = np.random.default_rng(4242)
    return np.concatenate([
        rng.integers(0, 2 ** 32, 1 << 18, dtype=np.uint32).view(np.float32),
        np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32),
        (np.arange(65536, dtype=np.uint32) << 16).view(np.float32),
    ])


def _boundaries(grid, sentinel):
    ext = np.append(grid, sentinel)
    return np.concatenate([ext, (ext[:-1] + ext[1:]) / 2])


@functools.lru_cache(maxsize=None)  # each format's sweep serves all its modes (np.unique of ~1M patterns)
def _sweep(fmt, k):
    f = R.BINARY[fmt]
    out = R.f32_bits_around(_boundaries(f.grid, f.sentinel), k)
    out.flags.writeable = False
    return out


@pytest.mark.parametrize("sat", [False, True], ids=["ns", "sat"])
@pytest.mark.parametrize("mode", R.MODES)
@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_fp16_bf16_all_modes(values, fmt, mode, sat):
    v = np.concatenate([values, _sweep(fmt, 2)])
    fn = D.to_float16 if fmt == "float16" else D.to_bfloat16
    mine = fn(v, round_mode=mode, saturate=sat).view(np.uint16)
    ref = R.encode_binary(v.astype(np.float64), fmt, mode, sat)
    is_nan = np.isnan(mine.view(np.float16)) if fmt == "float16" else np.isnan(
        mine.view(ml_dtypes.bfloat16).astype(np.float32))
    R.check_codes(mine, ref, v, is_nan, 0x8000, f"{fmt} {mode} sat={sat}")


@pytest.mark.parametrize("nan", ["pos_zero", "nan_sign"])
@pytest.mark.parametrize("mode", ["rint", "round", "floor", "ceil", "trunc"])
@pytest.mark.parametrize("fmt", ["float4_e2m1", "float4_e1m2"])
def test_fp4_all_modes(values, fmt, mode, nan):
    v = np.concatenate([values, _sweep(fmt, 4096)])
    mine = D.encode(v, fmt, round_mode=mode, fp4_nan=nan)
    ref = R.encode_binary(v.astype(np.float64), fmt, mode, nan_sign=nan == "nan_sign")
    R.check_codes(mine, ref, v, np.zeros(v.shape, bool), 0x8, f"{fmt} {mode} {nan}")


@functools.lru_cache(maxsize=None)
def _hif8_sweep(k):
    out = R.f32_bits_around(np.concatenate([_boundaries(R.HIF8_GRID, 49152.0), [40960.0, 2.0 ** -23]]), k)
    out.flags.writeable = False
    return out


@pytest.mark.parametrize("sat", [False, True], ids=["ns", "sat"])
def test_hif8_round_codebook(values, sat):
    v = np.concatenate([values, _hif8_sweep(512)])
    R.check_codes(D.encode(v, "hifloat8", saturate=sat), R.encode_hif8_round(v.astype(np.float64), sat), v,
                  None, 0, f"hifloat8 round sat={sat}")


@pytest.mark.parametrize("script", [False, True], ids=["isa", "script"])
@pytest.mark.parametrize("sat", [False, True], ids=["ns", "sat"])
def test_hif8_hybrid_fp32_matches_pseudo_code(values, sat, script):
    v = np.concatenate([values, _hif8_sweep(512)])
    mine = D.encode(v, "hifloat8", round_mode="hybrid", saturate=sat,
                    hybrid_overflow="script" if script else "isa")
    ref = R.hybrid_f32(v.view(np.uint32), sat, script)
    bad = np.nonzero(mine != ref)[0]
    assert bad.size == 0, (v[bad[:4]], mine[bad[:4]], ref[bad[:4]])


@pytest.mark.parametrize("raw", [False, True], ids=["normalize", "raw"])
@pytest.mark.parametrize("script", [False, True], ids=["isa", "script"])
@pytest.mark.parametrize("sat", [False, True], ids=["ns", "sat"])
def test_hif8_hybrid_fp16_every_pattern(sat, script, raw):
    h = np.arange(65536, dtype=np.uint16)
    mine = D.encode(h.view(np.float16), "hifloat8", round_mode="hybrid", saturate=sat,
                    hybrid_overflow="script" if script else "isa",
                    hybrid_f16_subnormal="raw" if raw else "normalize")
    ref = R.hybrid_f16(h, sat, script, raw)
    bad = np.nonzero(mine != ref)[0]
    assert bad.size == 0, (h[bad[:4]], mine[bad[:4]], ref[bad[:4]])


def test_hif8_round_from_fp16_every_pattern():
    h = np.arange(65536, dtype=np.uint16)
    for sat in (False, True):
        mine = D.encode(h.view(np.float16), "hifloat8", saturate=sat)
        ref = R.encode_hif8_round(h.view(np.float16).astype(np.float64), sat)
        assert np.array_equal(mine, ref)


def test_e8m0_truncation(values):
    v = np.concatenate([values, R.f32_bits_around(2.0 ** np.arange(-149, 128), 64)])
    assert np.array_equal(D.encode(v, "float8_e8m0"), R.encode_e8m0(v.astype(np.float64)))
    b = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16)
    assert np.array_equal(D.encode(b, "float8_e8m0"), R.encode_e8m0(b.astype(np.float64)))


# ---------------------------------------------------------------------------------------------------------------
# float64 inputs: round-to-odd to float32 first must still give one rounding of the float64 value


def _f64_near(bounds, rng):
    """float64 values on, just around (relative 2^-30 … 2^-50, where a float32 step would round onto the boundary)
    and between the boundaries, both signs, plus huge/tiny magnitudes."""
    b = bounds[(bounds > 0) & np.isfinite(bounds)]
    rel = 2.0 ** -np.array([30, 35, 40, 45, 50, 60])
    near = np.concatenate([b, (b[:, None] * (1 + rel)).ravel(), (b[:, None] * (1 - rel)).ravel()])
    extra = np.concatenate([rng.uniform(0, b.max() * 1.2, 20000), 10.0 ** rng.uniform(-60, 60, 5000),
                            [1e300, 1e-300, 5e-324, 3.4028235677973366e38, 2.0 ** 128, 0.0]])
    x = np.concatenate([near, extra])
    return np.concatenate([x, -x])


@pytest.mark.parametrize("mode", R.MODES)
@pytest.mark.parametrize("fmt", ["float16", "bfloat16"])
def test_float64_inputs_fp16_bf16(fmt, mode):
    f = R.BINARY[fmt]
    x = _f64_near(_boundaries(f.grid[::97] if fmt == "bfloat16" else f.grid[::7], f.sentinel),
                  np.random.default_rng(1))
    fn = D.to_float16 if fmt == "float16" else D.to_bfloat16
    mine = fn(x, round_mode=mode).view(np.uint16)
    R.check_codes(mine, R.encode_binary(x, fmt, mode), x, np.zeros(x.shape, bool), 0x8000, f"f64 {fmt} {mode}")


@pytest.mark.parametrize("fmt,modes", [
    ("float8_e4m3fn", ["rint"]), ("float8_e5m2", ["rint"]),
    ("float4_e2m1", ["rint", "round", "floor", "ceil", "trunc"]),
    ("float4_e1m2", ["rint", "round", "floor", "ceil", "trunc"]),
])
def test_float64_inputs_fp8_fp4(fmt, modes):
    f = R.BINARY[fmt]
    x = _f64_near(_boundaries(f.grid, f.sentinel), np.random.default_rng(2))
    for mode in modes:
        mine = D.encode(x, fmt, round_mode=mode)
        R.check_codes(mine, R.encode_binary(x, fmt, mode), x, np.isnan(D.decode(mine, fmt)), f.sign_bit,
                      f"f64 {fmt} {mode}")


def test_float64_inputs_hif8_and_e8m0():
    rng = np.random.default_rng(3)
    x = _f64_near(np.concatenate([_boundaries(R.HIF8_GRID, 49152.0), [40960.0, 2.0 ** -23]]), rng)
    assert np.array_equal(D.encode(x, "hifloat8"), R.encode_hif8_round(x))
    y = _f64_near(2.0 ** np.arange(-140, 128), rng)
    assert np.array_equal(D.encode(y, "float8_e8m0"), R.encode_e8m0(y))


def test_float64_double_rounding_trap():
    # 1 + 2^-11 + 2^-40 is just above the fp16 midpoint of 1 and 1 + 2^-10; float32 RNE would land exactly on the
    # midpoint (1 + 2^-11) and RNE to fp16 would then give 1.0. One rounding gives 1 + 2^-10 (0x3C01).
    x = np.array([1 + 2.0 ** -11 + 2.0 ** -40, 2.5 + 2.0 ** -40, 0.75 - 2.0 ** -45])
    assert D.to_float16(x[:1]).view(np.uint16)[0] == 0x3C01
    assert np.float16(np.float32(x[0])).view(np.uint16) == 0x3C00  # what a silent float32 step would give
    # E2M1: 2.5+ -> 3.0 (code 5) and 0.75- -> 0.5 (code 1); after a float32 step both are ties that go to the even
    # neighbours 2.0 (code 4) and 1.0 (code 2)
    assert D.encode(x[1:], "float4_e2m1").tolist() == [0x5, 0x1]
    assert D.encode(x[1:].astype(np.float32), "float4_e2m1").tolist() == [0x4, 0x2]
