"""Every test vector of docs/codecs.md §13 (and the §7.4 double-rounding vectors), one parametrised case each, plus
one vector per switch alternative whose result differs from the default (docs/conventions.md §3 rule 5; the vectors:
docs/codecs.md §13)."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import dtypes as D

# Random bit patterns include signalling NaNs (numpy flags "invalid" when it converts them) and some inputs are
# deliberately out of range for numpy's own casts ("overflow"); neither is a test failure.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning",
                                        "ignore:overflow encountered in cast:RuntimeWarning")


def f32(bits):
    return np.array([bits], np.uint32).view(np.float32)


def _code(x, fmt, **kw):
    return int(D.encode(np.asarray(x), fmt, **kw).ravel()[0])


# §13.1 HiF8 "round" (TA) from fp32: bits, ns, sat
HIF8_TA = [
    (0x00000000, 0x00, 0x00), (0x80000000, 0x00, 0x00), (0x3F800000, 0x08, 0x08), (0x3F880000, 0x09, 0x09),
    (0x3F980000, 0x0A, 0x0A), (0x3FF80000, 0x10, 0x10), (0x3F000000, 0x18, 0x18), (0x3F400000, 0x1C, 0x1C),
    (0x4177FF97, 0x2F, 0x2F), (0x41780000, 0x40, 0x40), (0x41880000, 0x40, 0x40), (0x41900000, 0x41, 0x41),
    (0x41B00000, 0x42, 0x42), (0x38000000, 0x7E, 0x7E), (0x38200000, 0x7F, 0x7F), (0x38600000, 0x7C, 0x7C),
    (0x37800000, 0x07, 0x07), (0x37C00000, 0x7E, 0x7E), (0x37BFFFAC, 0x07, 0x07), (0x34800000, 0x01, 0x01),
    (0x34C00000, 0x02, 0x02), (0x34000000, 0x01, 0x01), (0x34000001, 0x01, 0x01), (0x33FFFFFE, 0x00, 0x00),
    (0xB4000000, 0x81, 0x81), (0x8DA24260, 0x00, 0x00), (0x0020AAC8, 0x00, 0x00), (0x47000000, 0x6E, 0x6E),
    (0x47100000, 0x6E, 0x6E), (0x471FFFFF, 0x6E, 0x6E), (0x47200000, 0x6F, 0x6E), (0x47400000, 0x6F, 0x6E),
    (0x477FE000, 0x6F, 0x6E), (0x7F800000, 0x6F, 0x6E), (0xFF800000, 0xEF, 0xEE), (0xC7200000, 0xEF, 0xEE),
    (0xC7000000, 0xEE, 0xEE), (0x7FC00000, 0x80, 0x00),
]


@pytest.mark.parametrize("bits,ns,sat", HIF8_TA, ids=[f"{b:08x}" for b, _, _ in HIF8_TA])
def test_hif8_round(bits, ns, sat):
    assert _code(f32(bits), "hifloat8") == ns
    assert _code(f32(bits), "hifloat8", saturate=True) == sat


# §13.2 HiF8 "hybrid" from fp32: bits, ns, sat, TA for comparison
HIF8_HYBRID = [
    (0x41800000, 0x41, 0x41, 0x40), (0x41800001, 0x40, 0x40, 0x40), (0x41880000, 0x41, 0x41, 0x40),
    (0x41A00000, 0x42, 0x42, 0x41), (0x3F800000, 0x08, 0x08, 0x08), (0x3F880000, 0x09, 0x09, 0x09),
    (0x47000000, 0x6F, 0x6E, 0x6E), (0x47200000, 0x6F, 0x6E, 0x6F), (0x47203FFF, 0x6E, 0x6E, 0x6F),
    (0x37800000, 0x7E, 0x7E, 0x07), (0x34000000, 0x01, 0x01, 0x01),
]


@pytest.mark.parametrize("bits,ns,sat,ta", HIF8_HYBRID, ids=[f"{b:08x}" for b, *_ in HIF8_HYBRID])
def test_hif8_hybrid_fp32(bits, ns, sat, ta):
    assert _code(f32(bits), "hifloat8", round_mode="hybrid") == ns
    assert _code(f32(bits), "hifloat8", round_mode="hybrid", saturate=True) == sat
    assert _code(f32(bits), "hifloat8", round_mode="round") == ta


def test_hif8_hybrid_overflow_script():
    # §13.2 note: 41023.996 keeps 32768 under the pseudo-code, "script" gives Inf
    assert _code(f32(0x47203FFF), "hifloat8", round_mode="hybrid", hybrid_overflow="script") == 0x6F
    assert _code(f32(0xC7203FFF), "hifloat8", round_mode="hybrid", hybrid_overflow="script") == 0xEF
    assert _code(f32(0xC7203FFF), "hifloat8", round_mode="hybrid") == 0xEE


# §13.2 from fp16: bits -> hybrid (TA)
HIF8_HYBRID_F16 = [
    (0x4C00, 0x40, 0x40), (0x4C40, 0x41, 0x40), (0x4C41, 0x40, 0x40), (0x4C60, 0x41, 0x40), (0x4C61, 0x40, 0x40),
    (0x0014, 0x04, 0x03), (0x0015, 0x03, 0x03), (0x7900, 0x6F, 0x6F), (0x7901, 0x6E, 0x6F), (0x7902, 0x6F, 0x6F),
    (0x0002, 0x01, 0x01),
]


@pytest.mark.parametrize("bits,hybrid,ta", HIF8_HYBRID_F16, ids=[f"{b:04x}" for b, _, _ in HIF8_HYBRID_F16])
def test_hif8_hybrid_fp16(bits, hybrid, ta):
    h = np.array([bits], np.uint16).view(np.float16)
    assert _code(h, "hifloat8", round_mode="hybrid") == hybrid
    assert _code(h, "hifloat8") == ta
    assert _code(h.astype(np.float32), "hifloat8") == ta  # fp16 TA = TA of the widened value


def test_hif8_hybrid_f16_subnormal_raw_differs():
    # 0x0003 = 3·2^-24 (E = -23, thr = 3). normalised fraction 1.1b: {1, 1} = 3 >= 3 -> 2^-22 (0x01);
    # raw field 0b0000000011: {1, g[9] = 0} = 2 < 3 -> 0x00
    h = np.array([0x0003], np.uint16).view(np.float16)
    assert _code(h, "hifloat8", round_mode="hybrid") == 0x01
    assert _code(h, "hifloat8", round_mode="hybrid", hybrid_f16_subnormal="raw") == 0x00


# §13.3 hicann/ge UtestHiF8 golden vectors (TA)
GE_F32 = [(0x3638C290, 0x04), (0x3698AEB6, 0x05), (0x36E515DD, 0x06), (0x371C2FF8, 0x06), (0x358B4F67, 0x03),
          (0x3F48849E, 0x1D), (0x3CFDC7CD, 0x54), (0x3F112A2C, 0x19), (0x3F655965, 0x1E), (0x3E2040ED, 0x3A),
          (0x43411383, 0x4E), (0x438E0E21, 0x60), (0x42356389, 0x46), (0x43B308DB, 0x61), (0x42536B25, 0x47),
          (0x4686C7E7, 0x6C), (0x46E1CA4A, 0x6E), (0x453D6D1B, 0x67), (0x462B0BBF, 0x6B), (0x4743505E, 0x6F)]
GE_F16 = [(0x0005, 0x01), (0x0008, 0x02), (0x002C, 0x04), (0x0033, 0x05), (0x008D, 0x06), (0x289B, 0x55),
          (0x3716, 0x36), (0x2E79, 0x52), (0x3B69, 0x1F), (0x38FC, 0x1A), (0x67DF, 0x66), (0x64F3, 0x64),
          (0x658D, 0x65), (0x6070, 0x62), (0x691F, 0x67), (0x7871, 0x6E), (0x77AE, 0x6E), (0x746E, 0x6C),
          (0x711B, 0x6B), (0x79EA, 0x6F)]


@pytest.mark.parametrize("bits,code", GE_F32, ids=[f"{b:08x}" for b, _ in GE_F32])
def test_hif8_ge_golden_fp32(bits, code):
    assert _code(f32(bits), "hifloat8") == code


@pytest.mark.parametrize("bits,code", GE_F16, ids=[f"{b:04x}" for b, _ in GE_F16])
def test_hif8_ge_golden_fp16(bits, code):
    assert _code(np.array([bits], np.uint16).view(np.float16), "hifloat8") == code


NAN = None  # "a NaN" (the byte is not specified for FP8 in non-saturating mode, docs/codecs.md §5.2)

# §13.4 E4M3FN (rint): input, ns, sat
E4M3 = [
    (2.0 ** -9, 0x01, 0x01), (2.0 ** -10, 0x00, 0x00), (f32(0x3A800001)[0], 0x01, 0x01),  # 2^-10·(1 + 2^-23)
    (1.5 * 2.0 ** -9, 0x02, 0x02), (2.5 * 2.0 ** -9, 0x02, 0x02), (15 * 2.0 ** -10, 0x08, 0x08),
    (1.0625, 0x38, 0x38), (1.1875, 0x3A, 0x3A), (248.0, 0x78, 0x78), (272.0, 0x78, 0x78), (440.0, 0x7E, 0x7E),
    (464.0, 0x7E, 0x7E), (465.0, NAN, 0x7E), (-465.0, "-nan", 0xFE), (np.inf, NAN, 0x7E),
    (-np.inf, "-nan", 0xFE), (np.nan, NAN, 0x00), (-0.0, 0x80, 0x80), (1e-40, 0x00, 0x00),
]
# §13.5 E5M2 (rint): input, ns, sat
E5M2 = [
    (2.0 ** -16, 0x01, 0x01), (2.0 ** -17, 0x00, 0x00), (1.5 * 2.0 ** -16, 0x02, 0x02), (2.5 * 2.0 ** -16, 0x02, 0x02),
    (2.0 ** -14 - 2.0 ** -17, 0x04, 0x04), (1.125, 0x3C, 0x3C), (1.375, 0x3E, 0x3E), (57344.0, 0x7B, 0x7B),
    (59392.0, 0x7B, 0x7B), (61439.0, 0x7B, 0x7B), (61440.0, 0x7C, 0x7B), (-61440.0, 0xFC, 0xFB),
    (np.inf, 0x7C, 0x7B), (-np.inf, 0xFC, 0xFB), (np.nan, NAN, 0x00),
]


def _check_fp8(fmt, x, ns, sat):
    x = np.array([x], np.float32)
    got = D.encode(x, fmt)
    if ns is NAN or ns == "-nan":
        assert np.isnan(D.decode(got, fmt)[0]) and bool(got[0] & 0x80) == (ns == "-nan")
    else:
        assert got[0] == ns
    assert _code(x, fmt, saturate=True) == sat


@pytest.mark.parametrize("x,ns,sat", E4M3, ids=[repr(float(v)) for v, _, _ in E4M3])
def test_e4m3fn(x, ns, sat):
    _check_fp8("float8_e4m3fn", x, ns, sat)


@pytest.mark.parametrize("x,ns,sat", E5M2, ids=[repr(float(v)) for v, _, _ in E5M2])
def test_e5m2(x, ns, sat):
    _check_fp8("float8_e5m2", x, ns, sat)


def test_fp8_sat_keep_nan_differs():
    # CTRL[50] = 1: a saturating conversion keeps NaN (docs/codecs.md §5.2 table); default: NaN -> +0
    x = np.array([np.nan, -np.nan], np.float32)
    for fmt in ("float8_e4m3fn", "float8_e5m2"):
        assert D.encode(x, fmt, saturate=True).tolist() == [0, 0]
        kept = D.encode(x, fmt, saturate=True, sat_keep_nan=True)
        assert np.isnan(D.decode(kept, fmt)).all() and kept[1] & 0x80


def test_e4m3_ml_dtypes_facts():
    # §13.4 "ml_dtypes facts", checked on both ml_dtypes and npu-emu (non-saturating)
    x = np.array([460, 464, 465, 500], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        ml = x.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    mine = D.decode(D.encode(x, "float8_e4m3fn"), "float8_e4m3fn")
    for got in (ml, mine):
        assert got[:2].tolist() == [448, 448] and np.isnan(got[2:]).all()
    y = np.array([1e-3, 2.0 ** -10, 3 * 2.0 ** -10], np.float32)
    assert y.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).tolist() == [1, 0, 2]
    assert D.encode(y, "float8_e4m3fn").tolist() == [1, 0, 2]


# §13.6 E8M0 (bf16 inputs, hardware truncation)
E8M0 = [(1.0, 0x7F), (1.5, 0x7F), (1.9921875, 0x7F), (3.0, 0x80), (0.75, 0x7E), (-3.0, 0x80), (0.0, 0x00),
        (2.0 ** -127, 0x00), (2.0 ** -128, 0x00), (2.0 ** 127, 0xFE), (1.5 * 2.0 ** 127, 0xFE), (np.inf, 0xFE),
        (np.nan, 0xFF)]


@pytest.mark.parametrize("x,code", E8M0, ids=[repr(v) for v, _ in E8M0])
def test_e8m0(x, code):
    b = np.array([x], np.float32).astype(ml_dtypes.bfloat16)
    assert b.astype(np.float32)[0] == x or np.isnan(x)  # every input is a bf16 value
    assert _code(b, "float8_e8m0") == code
    assert _code(np.float32(x), "float8_e8m0") == code


# §13.7 FP4 from bf16, columns rint round floor ceil trunc
E2M1 = [
    (0.25, [0x0, 0x1, 0x0, 0x1, 0x0]), (0.75, [0x2, 0x2, 0x1, 0x2, 0x1]), (1.25, [0x2, 0x3, 0x2, 0x3, 0x2]),
    (1.75, [0x4, 0x4, 0x3, 0x4, 0x3]), (2.5, [0x4, 0x5, 0x4, 0x5, 0x4]), (3.5, [0x6, 0x6, 0x5, 0x6, 0x5]),
    (5.0, [0x6, 0x7, 0x6, 0x7, 0x6]), (5.5, [0x7, 0x7, 0x6, 0x7, 0x6]), (6.5, [0x7, 0x7, 0x7, 0x7, 0x7]),
    (0.1, [0x0, 0x0, 0x0, 0x1, 0x0]), (-0.1, [0x8, 0x8, 0x9, 0x8, 0x8]), (-0.25, [0x8, 0x9, 0x9, 0x8, 0x8]),
    (-2.5, [0xC, 0xD, 0xD, 0xC, 0xC]), (-5.0, [0xE, 0xF, 0xF, 0xE, 0xE]), (np.inf, [0x7] * 5),
    (-np.inf, [0xF] * 5), (np.nan, [0x0] * 5), (-0.0, [0x8] * 5),
]
E1M2 = [
    (0.125, [0x0, 0x1, 0x0, 0x1, 0x0]), (0.375, [0x2, 0x2, 0x1, 0x2, 0x1]), (0.625, [0x2, 0x3, 0x2, 0x3, 0x2]),
    (0.875, [0x4, 0x4, 0x3, 0x4, 0x3]), (1.125, [0x4, 0x5, 0x4, 0x5, 0x4]), (1.625, [0x6, 0x7, 0x6, 0x7, 0x6]),
    (1.875, [0x7] * 5), (2.0, [0x7] * 5), (-0.375, [0xA, 0xA, 0xA, 0x9, 0x9]), (-0.1, [0x8, 0x8, 0x9, 0x8, 0x8]),
    (-1.9, [0xF] * 5), (np.nan, [0x0] * 5),
]
FP4_MODES = ["rint", "round", "floor", "ceil", "trunc"]


@pytest.mark.parametrize("fmt,x,codes", [("float4_e2m1", x, c) for x, c in E2M1]
                         + [("float4_e1m2", x, c) for x, c in E1M2],
                         ids=[f"e2m1-{x!r}" for x, _ in E2M1] + [f"e1m2-{x!r}" for x, _ in E1M2])
def test_fp4(fmt, x, codes):
    b = np.array([x], np.float32).astype(ml_dtypes.bfloat16)
    assert [_code(b, fmt, round_mode=m) for m in FP4_MODES] == codes


def test_fp4_nan_sign_differs():
    x = np.array([-np.nan, np.nan], np.float32)
    assert D.encode(x, "float4_e2m1").tolist() == [0x0, 0x0]
    assert D.encode(x, "float4_e2m1", fp4_nan="nan_sign").tolist() == [0x8, 0x0]
    assert D.encode(x, "float4_e1m2", fp4_nan="nan_sign").tolist() == [0x8, 0x0]


# §7.4 aclnnCast double rounding through bf16: src, bits, dst, via_bf16 code, direct code
CAST_FP4 = [
    ("float32", 0x40200004, "float4_e2m1", 0x4, 0x5),  # 2.5 + 2^-20
    ("float32", 0x3F200010, "float4_e1m2", 0x2, 0x3),  # 0.625 + 2^-20
    ("float32", 0x40A00008, "float4_e2m1", 0x6, 0x7),  # 5.0 + 2^-18
]


@pytest.mark.parametrize("src,bits,dst,via,direct", CAST_FP4, ids=[f"{b:08x}-{d}" for _, b, d, _, _ in CAST_FP4])
def test_cast_fp4_double_rounding(src, bits, dst, via, direct):
    x = f32(bits)
    assert D.cast(x, src, dst)[0] == via
    assert D.cast(x, src, dst, fp4_path="direct")[0] == direct
    assert _code(x, dst) == direct  # encode is the single ("direct") rounding


def test_cast_fp16_to_fp4_via_bf16():
    # fp16 0x4101 (2.501953125) -> bf16 2.5 -> E2M1 tie -> 2.0 (code 4); direct: 3.0 (code 5)
    h = np.array([0x4101], np.uint16).view(np.float16)
    assert D.cast(h, "float16", "float4_e2m1")[0] == 0x4
    assert D.cast(h, None, "float4_e2m1", fp4_path="direct")[0] == 0x5


# §13.8 fp16 / bf16 helper vectors (rint)
# inputs: 65519.996, 65520, 2^-25, 1.5·2^-24, 2049, 2051
F16 = [(0x477FEFFF, 0x7BFF, 0x7BFF), (0x477FF000, 0x7C00, 0x7BFF), (0x33000000, 0x0000, 0x0000),
       (0x33C00000, 0x0002, 0x0002), (0x45001000, 0x6800, 0x6800), (0x45003000, 0x6802, 0x6802)]
BF16 = [(0x3F808000, 0x3F80), (0x3F818000, 0x3F82), (0x7F7FFFFF, 0x7F80)]  # 1 + 2^-8, 1 + 3·2^-8, FLT_MAX


@pytest.mark.parametrize("bits,ns,sat", F16, ids=[f"{b:08x}" for b, _, _ in F16])
def test_fp16_helper(bits, ns, sat):
    assert D.to_float16(f32(bits)).view(np.uint16)[0] == ns
    assert D.to_float16(f32(bits), saturate=True).view(np.uint16)[0] == sat


@pytest.mark.parametrize("bits,code", BF16, ids=[f"{b:08x}" for b, _ in BF16])
def test_bf16_helper(bits, code):
    assert D.to_bfloat16(f32(bits)).view(np.uint16)[0] == code
