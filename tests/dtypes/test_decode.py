"""Decoding every code: against the tables of docs/codecs.md §4.4, §5.1, §6.1, §7.1 and against
ml_dtypes/en_dtypes."""

import math

import en_dtypes
import ml_dtypes
import numpy as np
import pytest
from numba import njit

from npu_emu import dtypes as D
from npu_emu.dtypes import scalar as S

# Random bit patterns include signalling NaNs (numpy flags "invalid" when it converts them) and some inputs are
# deliberately out of range for numpy's own casts ("overflow"); neither is a test failure.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning",
                                        "ignore:overflow encountered in cast:RuntimeWarning")

# docs/codecs.md §4.4 (HiF8) and §5.1 (E4M3FN, E5M2), copied cell by cell: row = high nibble, 16 columns = low nibble.
HIF8_TABLE = {
    '0_': '0 | 2^-22 | 2^-21 | 2^-20 | 2^-19 | 2^-18 | 2^-17 | 2^-16 | 1 | 1.125 | 1.25 | 1.375 | 1.5 | 1.625 | 1.75 | 1.875',
    '1_': '2 | 2.25 | 2.5 | 2.75 | 3 | 3.25 | 3.5 | 3.75 | 0.5 | 0.5625 | 0.625 | 0.6875 | 0.75 | 0.8125 | 0.875 | 0.9375',
    '2_': '4 | 4.5 | 5 | 5.5 | 6 | 6.5 | 7 | 7.5 | 8 | 9 | 10 | 11 | 12 | 13 | 14 | 15',
    '3_': '0.25 | 0.28125 | 0.3125 | 0.34375 | 0.375 | 0.40625 | 0.4375 | 0.46875 | 0.125 | 0.140625 | 0.15625 | 0.171875 | 0.1875 | 0.203125 | 0.21875 | 0.234375',
    '4_': '16 | 20 | 24 | 28 | 32 | 40 | 48 | 56 | 64 | 80 | 96 | 112 | 128 | 160 | 192 | 224',
    '5_': '0.0625 | 0.078125 | 0.09375 | 0.109375 | 2^-5 | 1.25·2^-5 | 1.5·2^-5 | 1.75·2^-5 | 2^-6 | 1.25·2^-6 | 1.5·2^-6 | 1.75·2^-6 | 2^-7 | 1.25·2^-7 | 1.5·2^-7 | 1.75·2^-7',
    '6_': '256 | 384 | 512 | 768 | 1024 | 1536 | 2048 | 3072 | 4096 | 6144 | 8192 | 12288 | 16384 | 24576 | 32768 | +Inf',
    '7_': '2^-8 | 1.5·2^-8 | 2^-9 | 1.5·2^-9 | 2^-10 | 1.5·2^-10 | 2^-11 | 1.5·2^-11 | 2^-12 | 1.5·2^-12 | 2^-13 | 1.5·2^-13 | 2^-14 | 1.5·2^-14 | 2^-15 | 1.5·2^-15',
}
E4M3_TABLE = {
    '0_': '0 | 2^-9 | 2^-8 | 1.5·2^-8 | 2^-7 | 1.25·2^-7 | 1.5·2^-7 | 1.75·2^-7 | 2^-6 | 1.125·2^-6 | 1.25·2^-6 | 1.375·2^-6 | 1.5·2^-6 | 1.625·2^-6 | 1.75·2^-6 | 1.875·2^-6',
    '1_': '2^-5 | 1.125·2^-5 | 1.25·2^-5 | 1.375·2^-5 | 1.5·2^-5 | 1.625·2^-5 | 1.75·2^-5 | 1.875·2^-5 | 0.0625 | 0.0703125 | 0.078125 | 0.0859375 | 0.09375 | 0.1015625 | 0.109375 | 0.1171875',
    '2_': '0.125 | 0.140625 | 0.15625 | 0.171875 | 0.1875 | 0.203125 | 0.21875 | 0.234375 | 0.25 | 0.28125 | 0.3125 | 0.34375 | 0.375 | 0.40625 | 0.4375 | 0.46875',
    '3_': '0.5 | 0.5625 | 0.625 | 0.6875 | 0.75 | 0.8125 | 0.875 | 0.9375 | 1 | 1.125 | 1.25 | 1.375 | 1.5 | 1.625 | 1.75 | 1.875',
    '4_': '2 | 2.25 | 2.5 | 2.75 | 3 | 3.25 | 3.5 | 3.75 | 4 | 4.5 | 5 | 5.5 | 6 | 6.5 | 7 | 7.5',
    '5_': '8 | 9 | 10 | 11 | 12 | 13 | 14 | 15 | 16 | 18 | 20 | 22 | 24 | 26 | 28 | 30',
    '6_': '32 | 36 | 40 | 44 | 48 | 52 | 56 | 60 | 64 | 72 | 80 | 88 | 96 | 104 | 112 | 120',
    '7_': '128 | 144 | 160 | 176 | 192 | 208 | 224 | 240 | 256 | 288 | 320 | 352 | 384 | 416 | 448 | NaN',
}
E5M2_TABLE = {
    '0_': '0 | 2^-16 | 2^-15 | 1.5·2^-15 | 2^-14 | 1.25·2^-14 | 1.5·2^-14 | 1.75·2^-14 | 2^-13 | 1.25·2^-13 | 1.5·2^-13 | 1.75·2^-13 | 2^-12 | 1.25·2^-12 | 1.5·2^-12 | 1.75·2^-12',
    '1_': '2^-11 | 1.25·2^-11 | 1.5·2^-11 | 1.75·2^-11 | 2^-10 | 1.25·2^-10 | 1.5·2^-10 | 1.75·2^-10 | 2^-9 | 1.25·2^-9 | 1.5·2^-9 | 1.75·2^-9 | 2^-8 | 1.25·2^-8 | 1.5·2^-8 | 1.75·2^-8',
    '2_': '2^-7 | 1.25·2^-7 | 1.5·2^-7 | 1.75·2^-7 | 2^-6 | 1.25·2^-6 | 1.5·2^-6 | 1.75·2^-6 | 2^-5 | 1.25·2^-5 | 1.5·2^-5 | 1.75·2^-5 | 0.0625 | 0.078125 | 0.09375 | 0.109375',
    '3_': '0.125 | 0.15625 | 0.1875 | 0.21875 | 0.25 | 0.3125 | 0.375 | 0.4375 | 0.5 | 0.625 | 0.75 | 0.875 | 1 | 1.25 | 1.5 | 1.75',
    '4_': '2 | 2.5 | 3 | 3.5 | 4 | 5 | 6 | 7 | 8 | 10 | 12 | 14 | 16 | 20 | 24 | 28',
    '5_': '32 | 40 | 48 | 56 | 64 | 80 | 96 | 112 | 128 | 160 | 192 | 224 | 256 | 320 | 384 | 448',
    '6_': '512 | 640 | 768 | 896 | 1024 | 1280 | 1536 | 1792 | 2048 | 2560 | 3072 | 3584 | 4096 | 5120 | 6144 | 7168',
    '7_': '8192 | 10240 | 12288 | 14336 | 16384 | 20480 | 24576 | 28672 | 32768 | 40960 | 49152 | 57344 | +Inf | NaN | NaN | NaN',
}
# docs/codecs.md §7.1: bf16 bits of the 8 positive FP4 codes (from asc-devkit Fp4e2m1ToBf16 / Fp4e1m2ToBf16)
FP4_BF16_BITS = {
    "float4_e2m1": [0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0],
    "float4_e1m2": [0x0000, 0x3E80, 0x3F00, 0x3F40, 0x3F80, 0x3FA0, 0x3FC0, 0x3FE0],
}


def _parse(cell):
    cell = cell.strip()
    if cell in ("NaN", "+Inf"):
        return math.nan if cell == "NaN" else math.inf
    coef, _, power = cell.partition("2^")
    coef = coef.rstrip("·")
    return (float(coef) if coef else 1.0) * (2.0 ** int(power) if power else 1.0) if power else float(cell)


def _positive(table):
    return [_parse(c) for row in sorted(table) for c in table[row].split("|")]


def _spec_values(fmt):
    """All 256 values of a table: negatives are the mirror image (docs/codecs.md §4.4 / §5.1)."""
    pos = _positive({"hifloat8": HIF8_TABLE, "float8_e4m3fn": E4M3_TABLE, "float8_e5m2": E5M2_TABLE}[fmt])
    vals = pos + [-v for v in pos]
    if fmt == "hifloat8":
        vals[0x80] = math.nan  # the -0 slot is the only NaN
    return np.array(vals, np.float32)


def assert_same_f32(mine, ref, nan_bits=False):
    """Bitwise equality of float32 arrays (so ±0 are distinguished); NaN matched by NaN, or bit for bit when
    ``nan_bits`` (npu-emu decodes NaN codes to the quiet NaN with the code's sign, like ml_dtypes/en_dtypes)."""
    mine = np.asarray(mine, np.float32)
    ref = np.asarray(ref, np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(mine), nan)
    keep = np.ones(nan.shape, bool) if nan_bits else ~nan
    assert np.array_equal(mine[keep].view(np.uint32), ref[keep].view(np.uint32))


ALL8 = np.arange(256, dtype=np.uint8)


@pytest.mark.parametrize("fmt", ["hifloat8", "float8_e4m3fn", "float8_e5m2"])
def test_decode_matches_spec_table(fmt):
    assert_same_f32(D.decode(ALL8, fmt), _spec_values(fmt))


def test_hif8_spot_values():
    # docs/codecs.md §4.4 "Spot values"
    spots = {0x08: 1.0, 0x09: 1.125, 0x0F: 1.875, 0x10: 2, 0x12: 2.5, 0x18: 0.5, 0x20: 4, 0x28: 8, 0x30: 0.25,
             0x38: 0.125, 0x3F: 0.234375, 0x40: 16, 0x48: 64, 0x5F: 0.013671875, 0x60: 256, 0x6E: 32768,
             0x7F: 4.57763671875e-05, 0x88: -1.0, 0xEE: -32768, 0x01: 2.0 ** -22, 0x07: 2.0 ** -16}
    codes = np.array(list(spots), np.uint8)
    assert_same_f32(D.decode(codes, "hifloat8"), np.array(list(spots.values()), np.float32))
    # §4.2 counts: 1 zero, 1 NaN, 2 infinities, 252 finite non-zero values
    v = D.decode(ALL8, "hifloat8")
    assert (v == 0).sum() == 1 and np.isnan(v).sum() == 1 and np.isinf(v).sum() == 2
    assert (np.isfinite(v) & (v != 0)).sum() == 252


ORACLES = [
    ("hifloat8", en_dtypes.hifloat8, 256),
    ("float8_e4m3fn", ml_dtypes.float8_e4m3fn, 256),
    ("float8_e5m2", ml_dtypes.float8_e5m2, 256),
    ("float8_e8m0", ml_dtypes.float8_e8m0fnu, 256),
    ("float8_e8m0", en_dtypes.float8_e8m0, 256),
    ("float4_e2m1", ml_dtypes.float4_e2m1fn, 16),
    ("float4_e2m1", en_dtypes.float4_e2m1, 16),
    ("float4_e1m2", en_dtypes.float4_e1m2, 16),
    ("float6_e3m2", ml_dtypes.float6_e3m2fn, 64),
    ("float6_e2m3", ml_dtypes.float6_e2m3fn, 64),
]


@pytest.mark.parametrize("fmt,dtype,n", ORACLES, ids=[f"{f}-{np.dtype(d).name}" for f, d, _ in ORACLES])
def test_decode_matches_oracle(fmt, dtype, n):
    codes = np.arange(n, dtype=np.uint8)
    assert_same_f32(D.decode(codes, fmt), codes.view(dtype).astype(np.float32), nan_bits=True)
    # the typed array itself is accepted as input
    assert_same_f32(D.decode(codes.view(dtype), fmt), codes.view(dtype).astype(np.float32), nan_bits=True)


@pytest.mark.parametrize("fmt", ["float4_e2m1", "float4_e1m2"])
def test_fp4_decode_matches_spec_bf16_bits(fmt):
    bits = np.array(FP4_BF16_BITS[fmt] + [b | 0x8000 for b in FP4_BF16_BITS[fmt]], np.uint32)
    assert_same_f32(D.decode(np.arange(16, dtype=np.uint8), fmt), (bits << 16).view(np.float32))


def test_e8m0_decode_and_zero_switch():
    # docs/codecs.md §13.6 "Decode": 00 -> 2^-127, 7f -> 1, 80 -> 2, fe -> 2^127, ff -> NaN; §6.1 switch e8m0_zero
    codes = np.array([0x00, 0x7F, 0x80, 0xFE, 0xFF], np.uint8)
    assert_same_f32(D.decode(codes, "float8_e8m0"), np.array([2.0 ** -127, 1, 2, 2.0 ** 127, np.nan], np.float32))
    assert_same_f32(D.decode(codes, 37, e8m0_zero="zero"), np.array([0, 1, 2, 2.0 ** 127, np.nan], np.float32))
    # 2^-127 is the fp32 subnormal 0x00400000 (bf16 0x0040)
    assert D.decode(codes[:1], "float8_e8m0").view(np.uint32)[0] == 0x00400000


@njit(cache=True, error_model="numpy")
def _scalar_decodes(codes, zero_is_zero, out):
    for i in range(codes.size):
        c = codes[i]
        out[0, i] = S.decode_hif8(c)
        out[1, i] = S.decode_e4m3fn(c)
        out[2, i] = S.decode_e5m2(c)
        out[3, i] = S.decode_fp4_e2m1(c)
        out[4, i] = S.decode_fp4_e1m2(c)
        out[5, i] = S.decode_e8m0(c, zero_is_zero)


@pytest.mark.parametrize("zero_is_zero", [False, True])
def test_scalar_decoders_match_array_decode(zero_is_zero):
    out = np.empty((6, 256), np.float32)
    _scalar_decodes(ALL8, zero_is_zero, out)
    for row, fmt in enumerate(["hifloat8", "float8_e4m3fn", "float8_e5m2"]):
        assert_same_f32(out[row], D.decode(ALL8, fmt))
    # FP4 scalar decoders read the low nibble only, so element 2i of a packed byte decodes directly
    for row, fmt in ((3, "float4_e2m1"), (4, "float4_e1m2")):
        assert_same_f32(out[row], D.decode(ALL8 & 0xF, fmt))
    assert_same_f32(out[5], D.decode(ALL8, "float8_e8m0", e8m0_zero="zero" if zero_is_zero else "pow2"))


@pytest.mark.parametrize("fmt", ["hifloat8", "float8_e4m3fn", "float8_e5m2", "float4_e2m1", "float4_e1m2"])
def test_decode_is_exact_in_fp16_and_bf16(fmt):
    # docs/codecs.md §11 last bullet (FP4 also, §7.1): every value converts to fp16 and bf16 without loss
    n = 16 if fmt.startswith("float4") else 256
    v = D.decode(np.arange(n, dtype=np.uint8), fmt)
    for t in (np.float16, ml_dtypes.bfloat16):
        back = v.astype(t).astype(np.float32)
        assert_same_f32(back, v)
