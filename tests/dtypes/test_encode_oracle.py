"""RNE / TA encoders against ml_dtypes, en_dtypes and numpy (docs/codecs.md §12): every float16 and bfloat16 bit
pattern, 2^24 random float32 bit patterns (fixed seed) and dense sweeps around every grid value and midpoint of each
format.

Oracle differences handled as docs/codecs.md §12 prescribes: NaN bytes are compared as "is NaN with the input's sign"
(except HiF8, whose only NaN is 0x80); saturation is emulated by clipping to ±max (NaN -> 0 first, or kept for
``sat_keep_nan``) because ml_dtypes/en_dtypes never saturate; ml_dtypes' FP4 NaN sign is ignored.
"""

import functools

import en_dtypes
import ml_dtypes
import numpy as np
import pytest

import dtypes_reference as R
from npu_emu import dtypes as D

# Random bit patterns include signalling NaNs (numpy flags "invalid" when it converts them) and some inputs are
# deliberately out of range for numpy's own casts ("overflow"); neither is a test failure.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning",
                                        "ignore:overflow encountered in cast:RuntimeWarning")

SEED = 20240824


@pytest.fixture(scope="module")
def inputs():
    """float32 input sets; the fp16/bf16 sets are the exact float32 images of all 65536 patterns."""
    rng = np.random.default_rng(SEED)
    return {
        "random": rng.integers(0, 2 ** 32, 1 << 24, dtype=np.uint32).view(np.float32),
        "all_f16": np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32),
        "all_bf16": (np.arange(65536, dtype=np.uint32) << 16).view(np.float32),
    }


@functools.lru_cache(maxsize=None)  # shared by a format's variants (np.unique of up to ~1M patterns)
def _sweep(fmt, k):
    """float32 patterns within k ulps of every value and every midpoint of the format's grid (both signs)."""
    if fmt == "hifloat8":
        grid, sentinel = R.HIF8_GRID, 49152.0
    else:
        grid, sentinel = R.BINARY[fmt].grid, R.BINARY[fmt].sentinel
    ext = np.append(grid, sentinel)
    out = R.f32_bits_around(np.concatenate([ext, (ext[:-1] + ext[1:]) / 2]), k)
    out.flags.writeable = False
    return out


SWEEP_ULPS = {"float16": 8, "bfloat16": 8, "hifloat8": 2048, "float8_e4m3fn": 1024, "float8_e5m2": 1024,
              "float4_e2m1": 4096, "float4_e1m2": 4096}

ORACLE = {
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, 448.0, 0x80),
    "float8_e5m2": (ml_dtypes.float8_e5m2, 57344.0, 0x80),
    "hifloat8": (en_dtypes.hifloat8, 32768.0, 0),
    "float4_e2m1": (ml_dtypes.float4_e2m1fn, 6.0, 0x8),
    "float4_e1m2": (en_dtypes.float4_e1m2, 1.75, 0x8),
    "float16": (np.float16, 65504.0, 0x8000),
    "bfloat16": (ml_dtypes.bfloat16, 3.3895313892515355e38, 0x8000),
}


def _oracle_codes(v, fmt):
    dtype = ORACLE[fmt][0]
    with np.errstate(invalid="ignore", over="ignore"):
        y = v.astype(dtype)
    codes = y.view(np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint8).astype(np.int64)
    if fmt == "hifloat8":
        return codes  # 0x80 is the only NaN on both sides: exact
    return np.where(np.isnan(y.astype(np.float32)), R.NAN, codes)


def _mine(v, fmt, **kw):
    if fmt == "float16":
        return D.to_float16(v, **kw).view(np.uint16)
    if fmt == "bfloat16":
        return D.to_bfloat16(v, **kw).view(np.uint16)
    return D.encode(v, fmt, **kw)


def _is_nan(codes, fmt):
    if fmt == "float16":
        return np.isnan(codes.view(np.float16))
    if fmt == "bfloat16":
        return np.isnan(codes.view(ml_dtypes.bfloat16).astype(np.float32))
    return np.isnan(D.decode(codes, fmt))


def _check(v, fmt, variant):
    _, vmax, sign_bit = ORACLE[fmt]
    kw = {}
    w = v
    if variant != "ns":
        kw = dict(saturate=True, sat_keep_nan=variant == "sat_keep_nan")
        with np.errstate(invalid="ignore"):
            w = np.clip(v, -vmax, vmax)
        if variant == "sat":
            w = np.where(np.isnan(v), np.float32(0), w)
    if fmt == "float4_e1m2":
        kw["fp4_nan"] = "nan_sign"  # en_dtypes keeps the NaN's sign on the zero
    mine = _mine(v, fmt, **kw)
    ref = _oracle_codes(w, fmt)
    if fmt == "float4_e2m1":
        ref = np.where(np.isnan(v), 0, ref)  # ml_dtypes' sign there is an artefact (docs/codecs.md §12)
    R.check_codes(mine, ref, v, _is_nan(mine, fmt), sign_bit, f"{fmt} {variant}")


VARIANTS = {
    "float8_e4m3fn": ["ns", "sat", "sat_keep_nan"],
    "float8_e5m2": ["ns", "sat", "sat_keep_nan"],
    "hifloat8": ["ns", "sat"],
    "float4_e2m1": ["ns"],
    "float4_e1m2": ["ns"],
    "float16": ["ns"],
    "bfloat16": ["ns"],
}
CASES = [(f, s, var) for f in VARIANTS for s in ("random", "all_f16", "all_bf16", "sweep") for var in VARIANTS[f]]


@pytest.mark.parametrize("fmt,input_set,variant", CASES, ids=["-".join(c) for c in CASES])
def test_encode_matches_oracle(inputs, fmt, input_set, variant):
    v = _sweep(fmt, SWEEP_ULPS[fmt]) if input_set == "sweep" else inputs[input_set]
    _check(v, fmt, variant)


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2", "hifloat8", "float4_e2m1", "float4_e1m2"])
def test_half_and_bf16_inputs_equal_their_widened_values(inputs, fmt):
    # float16/bfloat16 arrays go through the same exact widening the hardware chains use (docs/codecs.md §4.5, §5.2)
    h = np.arange(65536, dtype=np.uint16)
    assert np.array_equal(D.encode(h.view(np.float16), fmt), D.encode(inputs["all_f16"], fmt))
    assert np.array_equal(D.encode(h.view(ml_dtypes.bfloat16), fmt), D.encode(inputs["all_bf16"], fmt))


def test_e8m0_documented_oracle_differences():
    # §13.6 columns "ml_dtypes" and "en_dtypes": the oracles really behave as that table says, and npu-emu
    # differs from both exactly there
    x = np.array([1.0, 1.5, 1.9921875, 3.0, 0.75, -3.0, 0.0, 2.0 ** -127, 2.0 ** -128, 2.0 ** 127, 1.5 * 2.0 ** 127,
                  np.inf, np.nan], np.float32)
    npu = [0x7F, 0x7F, 0x7F, 0x80, 0x7E, 0x80, 0x00, 0x00, 0x00, 0xFE, 0xFE, 0xFE, 0xFF]
    ml = [0x7F, 0x80, 0x80, 0x81, 0x7F, 0xFF, 0xFF, 0x00, 0x00, 0xFE, 0xFF, 0xFF, 0xFF]
    en = [0x7F, 0x7F, 0x7F, 0x80, 0x7E, 0xFF, 0xFF, 0x00, 0xFF, 0xFE, 0xFE, 0xFF, 0xFF]
    with np.errstate(invalid="ignore", over="ignore"):
        assert x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).tolist() == ml
        assert x.astype(en_dtypes.float8_e8m0).view(np.uint8).tolist() == en
    assert D.encode(x, "float8_e8m0").tolist() == npu
    assert D.encode(x.astype(ml_dtypes.bfloat16), "float8_e8m0").tolist() == npu
