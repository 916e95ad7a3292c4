"""Hand-checked vectors of docs/ops/mx_quant.md §10 (and the switch alternatives), run through both the independent
numpy golden and the emulator (torch_npu-style front end), compared as bytes.

Each vector's derivation is in the section of the op page named in its comment; vectors marked "source" are derived
here from the kernel source where the page has no vector (the derivation is in the comment).
"""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.mx_quant import golden as golden
from npu_emu.kernels.mx_quant import api

TORCH_CODE = {"float8_e5m2": 23, "float8_e4m3fn": 24, "float4_e2m1": 296, "float4_e1m2": 297}
IMPLS = ("golden", "kernel")


def bf16(vals, shape):
    return np.array(vals, np.uint16).reshape(shape).view(ml_dtypes.bfloat16)


def column(vals, m=32, dtype=ml_dtypes.bfloat16):
    """x [m, 1] with the given 16-bit patterns on top and zero rows below (docs/ops/mx_quant.md §10 notation)."""
    a = np.zeros(m, np.uint16)
    a[:len(vals)] = vals
    return a.view(dtype).reshape(m, 1)


def row(vals, n=32, dtype=ml_dtypes.bfloat16):
    a = np.zeros(n, np.uint16)
    a[:len(vals)] = vals
    return a.view(dtype).reshape(1, n)


def grouped(impl, x, gi, dst, **kw):
    if impl == "golden":
        kw.pop("faithful", None)
        y, s = golden.grouped_dynamic_mx_quant(x, gi, dst_type=dst, **kw)
    else:
        y, s = api.npu_grouped_dynamic_mx_quant(x, np.asarray(gi, np.int32), dst_type=TORCH_CODE[dst], **kw)
    return np.asarray(y).view(np.uint8), np.asarray(s)


def dynamic(impl, x, dst, **kw):
    if impl == "golden":
        kw.pop("faithful", None)
        y, s = golden.dynamic_mx_quant(x, dst_type=dst, **kw)
    else:
        y, s = api.npu_dynamic_mx_quant(x, dst_type=TORCH_CODE[dst], **kw)
    return np.asarray(y).view(np.uint8), np.asarray(s)


def hexes(a):
    return " ".join(f"{v:02x}" for v in np.asarray(a, np.uint8).ravel())


def unpack(y):
    return golden.unpack_fp4(y).ravel()


# --- GroupedDynamicMxQuant ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_g1_blog_example(impl):
    # §10 G1 = the aclnn doc example: group 0 E = 136 -> code 128 (2^1), reciprocal 2^-1: 0, 4, 32, 256
    x = bf16([0x0000, 0x4100, 0x4280, 0x4400] * 2, (8, 1))
    y, s = grouped(impl, x, [4, 8], "float8_e4m3fn")
    assert hexes(y) == "00 48 60 78 00 48 60 78"
    assert s.shape == (2, 1, 2) and s.tolist() == [[[128, 0]], [[128, 0]]]


@pytest.mark.parametrize("impl", IMPLS)
def test_g2_rne_ties_and_fp8_subnormals(impl):
    # §10 G2: E = 127 -> scale 0x77, multiply by 2^8, RNE at every tie
    x = column([0x3F80, 0x3F88, 0x3F89, 0x3F98, 0xBF98, 0x3C00, 0x3700, 0x3680, 0x36C0, 0xB680, 0x3740, 0x3B40])
    y, s = grouped(impl, x, [32], "float8_e4m3fn")
    assert hexes(y[:12]) == "78 78 79 7a fa 40 01 00 01 80 02 34"
    assert not y[12:].any() and hexes(s) == "77 00"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dst, scale, want", [
    ("float8_e4m3fn", "77 00", "7e 7e 7e 7e fe 7e 7d"),     # §10 G3: x256 -> 510 448 464 480 -510 432 416
    ("float8_e5m2", "70 00", "7b 7b 7b 7b fb 7b 7a"),       # x2^15; 61440 ties up to 65536 and saturates
])
def test_g3_saturation(impl, dst, scale, want):
    x = column([0x3FFF, 0x3FE0, 0x3FE8, 0x3FF0, 0xBFFF, 0x3FD8, 0x3FD0])
    y, s = grouped(impl, x, [32], dst)
    assert hexes(y[:7]) == want and hexes(s) == scale


@pytest.mark.parametrize("impl", IMPLS)
def test_g4_zero_block_and_signed_zero_switch(impl):
    x = column([0x0000, 0x0000, 0x0000, 0x8000])
    y, s = grouped(impl, x, [32], "float8_e4m3fn")
    assert hexes(y[:4]) == "00 00 00 80" and hexes(s) == "00 00"           # §10 G4
    y, s = grouped(impl, x, [32], "float8_e4m3fn", signed_zero=False)
    assert not y.any()                                                      # signed_zero=False: always +0


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dst", ["float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("vals", [[0x7F80, 0x3F80, 0xC000], [0x3F80, 0x7FC1, 0xC000], [0x3F80, 0xFF80, 0xC000]])
def test_g5_inf_nan_blocks(impl, dst, vals):
    # §10 G5: any Inf/NaN -> E = 255 -> scale 0xFF, reciprocal NaN, every y = +0 (SAT: NaN -> 0x00)
    y, s = grouped(impl, column(vals), [32], dst)
    assert not y.any() and hexes(s) == "ff 00"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("vals, dtype, scale, want", [
    ([0x0001, 0x8001], np.float16, "5f 00", "78 f8"),      # §10 G6a: E = 103, ±2^-24 * 2^32 = ±256
    ([0x0003, 0x0001], np.float16, "60 00", "7c 70"),      # G6b: 384, 128
    ([0x3C00, 0x0200], np.float16, "77 00", "78 04"),      # G6c: 2^-15 * 2^8 = 4 * 2^-9
    ([0x0880, 0x0040, 0x0060, 0x0020], ml_dtypes.bfloat16, "09 00", "78 01 02 00"),   # G6d (ftz=False)
    ([0x0040, 0x8020], ml_dtypes.bfloat16, "00 00", "00 80"),                        # G6e: E = 0 -> ±0
])
def test_g6_subnormal_inputs(impl, vals, dtype, scale, want):
    y, s = grouped(impl, column(vals, dtype=dtype), [32], "float8_e4m3fn")
    assert hexes(y[:len(vals)]) == want and hexes(s) == scale


@pytest.mark.parametrize("impl", IMPLS)
def test_g6d_ftz_switch(impl):
    # §10 G6d with ftz=True: the BF16-subnormal elements flush to +0 before the multiply
    y, s = grouped(impl, column([0x0880, 0x0040, 0x0060, 0x0020]), [32], "float8_e4m3fn", ftz=True)
    assert hexes(y[:4]) == "78 00 00 00" and hexes(s) == "09 00"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("v, dst", [(0x0400, "float8_e4m3fn"), (0x0780, "float8_e5m2")])
def test_g7_tiny_block_versions(impl, v, dst):
    # §10 G7: E = emax -> code 0; master flushes to zero, CANN <= 9.1.0 passes x * 2^127 through (= 1.0 -> 0x78)
    x = column([v])
    y, s = grouped(impl, x, [32], dst)
    assert y[0, 0] == 0x00 and hexes(s) == "00 00"
    for version in ("9.1.0", "9.0.1", "9.0.0"):
        y, s = grouped(impl, x, [32], dst, cann_version=version)
        assert y[0, 0] == 0x78 and hexes(s) == "00 00"
    # one exponent up the block is normal in every version: code 1, x * 2^126 = 1.0
    y, s = grouped(impl, column([v + 0x80]), [32], dst)
    assert y[0, 0] == 0x78 and hexes(s) == "01 00"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("vals, dst, scale, want", [
    ([0x7BFF, 0x3C00], "float8_e4m3fn", "86 00", "7e 04"),   # §10 G8: 65504/128 = 511.75 -> sat; 2^-7
    ([0x3BFF], "float8_e4m3fn", "76 00", "7e"),              # 0.99951171875 * 2^9 = 511.75 -> 448
    ([0xFBFF], "float8_e5m2", "7f 00", "fb"),                # -65504 -> -57344
])
def test_g8_fp16_large(impl, vals, dst, scale, want):
    y, s = grouped(impl, column(vals, dtype=np.float16), [32], dst)
    assert hexes(y[:len(vals)]) == want and hexes(s) == scale


def _g9_input():
    a = np.empty(130, np.uint16)
    a[0:32], a[32:64], a[64:70], a[70:102], a[102:130] = 0x3F80, 0x4040, 0x3F00, 0xBFC0, 0x42C8
    return a.view(ml_dtypes.bfloat16).reshape(130, 1)


@pytest.mark.parametrize("impl", IMPLS)
def test_g9_multi_group_pad_gap(impl):
    # §10 G9 / §3.6 worked layout: rows 0-1 group 0 (row 1 padded), row 2 group 1, row 3 a gap row.
    # Rows 102-129 (100.0, E = 133 -> code 125 = 0x7D, as the scale row says) are multiplied by 2^(127 - 125) = 4,
    # not divided: 400 is the tie 384|416 -> even -> 384 = 0x7C (an earlier table's "100/4 = 25 -> 0x5C" applied
    # the scale the wrong way round).
    y, s = grouped(impl, _g9_input(), [70, 130], "float8_e4m3fn")
    want = np.concatenate([np.full(32, 0x78), np.full(32, 0x7C), np.full(6, 0x78), np.full(32, 0xFC),
                           np.full(28, 0x7C)])
    assert np.array_equal(y.ravel(), want)
    assert s.shape == (4, 1, 2) and hexes(s) == "77 78 76 00 77 7d 00 00"


@pytest.mark.parametrize("impl", IMPLS)
def test_g9_gap_fill_switch(impl):
    _, s = grouped(impl, _g9_input(), [70, 130], "float8_e4m3fn", gap_fill=0x7F)   # the CANN golden's 1.0
    assert hexes(s) == "77 78 76 00 77 7d 7f 7f"


@pytest.mark.parametrize("impl", IMPLS)
def test_g10_empty_group(impl):
    # §10 G10: columns interleave as (c0 b0, c0 b1, c1 b0, c1 b1); the empty group's and the last row are gaps
    a = np.empty((100, 2), np.uint16)
    a[:, 0], a[:, 1] = 0x3F80, 0xC100
    y, s = grouped(impl, a.view(ml_dtypes.bfloat16), [40, 40, 100], "float8_e4m3fn")
    assert (y[:, 0] == 0x78).all() and (y[:, 1] == 0xF8).all()
    assert s.shape == (4, 2, 2) and hexes(s) == "77 77 7a 7a 00 00 00 00 77 77 7a 7a 00 00 00 00"


@pytest.mark.parametrize("impl", IMPLS)
def test_grouped_rceil_nan_in_max_switch(impl):
    # source (§3.7 step 1 + mx_quant_common.h ComputeMxScaleCuBLAS): column 1.0, NaN, 2.0 with scale_alg 1.
    # "propagate": the floating Max is NaN -> S NaN -> code 0xFF, every y +0.
    # "ignore": A = 2.0, S = 2 * fl32(1/448) = 1.1428571 * 2^-8 (non-zero mantissa) -> code 120 = 0x78,
    # reciprocal 2^7: 1.0 -> 128 = 0x70, NaN -> 0x00, 2.0 -> 256 = 0x78.
    x = column([0x3F80, 0x7FC0, 0x4000])
    y, s = grouped(impl, x, [32], "float8_e4m3fn", scale_alg=1)
    assert not y.any() and hexes(s) == "ff 00"
    y, s = grouped(impl, x, [32], "float8_e4m3fn", scale_alg=1, nan_in_max="ignore")
    assert hexes(y[:3]) == "70 00 78" and hexes(s) == "78 00"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("vals, scale, want", [
    ([0x43E1, 0x3F80], "80 00", "76 30"),   # §10 D6 (same rule in Grouped, R = fl32(1/448) for dst_type_max 0)
    ([0x43E0], "7f 00", "7e"),
    ([0x3FF0], "78 00", "77"),
    ([0x7F80, 0x3F80], "ff 00", "00 00"),
])
def test_grouped_rceil(impl, vals, scale, want):
    y, s = grouped(impl, column(vals), [32], "float8_e4m3fn", scale_alg=1)
    assert hexes(y[:len(vals)]) == want and hexes(s) == scale


@pytest.mark.parametrize("impl", IMPLS)
def test_grouped_rceil_dst_type_max(impl):
    # source (grouped tiling GetAttr: invDstTypeMax = 1/dst_type_max whenever dst_type_max != 0, also for FP8):
    # 1.0 with dst_type_max 100: S = fl32(1/100) = 1.28 * 2^-7 -> code 121 = 0x79, reciprocal 2^6 -> 64 = 0x68
    y, s = grouped(impl, column([0x3F80]), [32], "float8_e4m3fn", scale_alg=1, dst_type_max=100.0)
    assert hexes(s) == "79 00" and y[0, 0] == 0x68
    # CANN 9.1.0's kernel used the constant 1/448: 1.0 / 448 = 1.14 * 2^-9 -> code 119, y = 1.0 * 2^8 -> 0x78
    y, s = grouped(impl, column([0x3F80]), [32], "float8_e4m3fn", scale_alg=1, dst_type_max=100.0,
                   cann_version="9.1.0")
    assert hexes(s) == "77 00" and y[0, 0] == 0x78


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("v, dtm, scale, code", [
    (0x3FE0, 0.0, 0x7E, 6), (0x3FE0, 6.0, 0x7E, 6), (0x3FE0, 7.0, 0x7D, 7),   # §10 D7 in the grouped kernel
    (0x3FC0, 6.0, 0x7D, 7), (0x3FC1, 6.0, 0x7E, 5),
])
def test_grouped_scale_alg2(impl, v, dtm, scale, code):
    x = np.zeros((32, 2), np.uint16)
    x[0, 0] = v
    y, s = grouped(impl, x.view(ml_dtypes.bfloat16), [32], "float4_e2m1", scale_alg=2, dst_type_max=dtm)
    assert s[0, 0, 0] == scale and y[0, 0] & 0xF == code


@pytest.mark.parametrize("impl", IMPLS)
def test_e1m2_code_254_and_ftz(impl):
    # source/§3.4: E1M2 emax 0, BF16 2^127 (0x7F00) -> code 254, reciprocal 0x0040 = 2^-127 (an FP32
    # subnormal): y = 1.0 -> E1M2 code 4. ftz=True flushes the reciprocal -> y = +0.
    x = row([0x7F00], 32)
    y, s = dynamic(impl, x, "float4_e1m2")
    assert hexes(s) == "fe 00" and unpack(y)[0] == 4
    y, s = dynamic(impl, x, "float4_e1m2", ftz=True)
    assert hexes(s) == "fe 00" and not unpack(y).any()
    xg = np.zeros((32, 2), np.uint16)
    xg[0, 0] = 0x7F00
    y, s = grouped(impl, xg.view(ml_dtypes.bfloat16), [32], "float4_e1m2")
    assert s[0, 0, 0] == 0xFE and y[0, 0] == 0x04


@pytest.mark.parametrize("impl", IMPLS)
def test_fp4_floor_product_underflow(impl):
    # source: the element product is an FP32 multiply in Grouped (mx_quant_common.h ComputeData) and a BF16
    # multiply for BF16 inputs in DynamicMxQuant (dynamic_mx_quant_tail_axis.h ComputeDataBf16, floor mode).
    # Block max 2^20 (0x4980): E = 147 -> E2M1 code 145, reciprocal 2^-18. Element -2^-120 (0x8380) -> -2^-138:
    #   FP32 keeps it (subnormal) -> floor on the 0.5 grid -> -0.5 -> code 9 (Grouped);
    #   BF16 rounds it to -0 (below half of 2^-133) -> floor(-0) -> code 8 (DynamicMxQuant).
    # 2^20 * 2^-18 = 4 -> code 6 in both.
    xg = np.zeros((32, 2), np.uint16)
    xg[0, 0], xg[1, 0] = 0x4980, 0x8380
    y, s = grouped(impl, xg.view(ml_dtypes.bfloat16), [32], "float4_e2m1", round_mode="floor")
    assert s[0, 0, 0] == 145 and y[0, 0] == 0x06 and y[1, 0] == 0x09
    y, s = dynamic(impl, row([0x4980, 0x8380]), "float4_e2m1", round_mode="floor")
    assert hexes(s) == "91 00" and unpack(y)[:2].tolist() == [6, 8]


# --- DynamicMxQuant ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("impl", IMPLS)
def test_d1_blog_example(impl):
    y, s = dynamic(impl, bf16([0x0000, 0x4100, 0x4280, 0x4400], (1, 4)), "float8_e4m3fn")
    assert hexes(y) == "00 48 60 78" and s.shape == (1, 1, 2) and hexes(s) == "80 00"


@pytest.mark.parametrize("impl", IMPLS)
def test_d2_tail_axis_odd_block_count(impl):
    a = np.empty(70, np.uint16)
    a[:32], a[32:64], a[64:] = 0x3F80, 0x4040, 0x3F00
    y, s = dynamic(impl, a.view(ml_dtypes.bfloat16).reshape(1, 70), "float8_e4m3fn")
    assert s.shape == (1, 2, 2) and hexes(s) == "77 78 76 00"
    assert np.array_equal(y.ravel(), np.repeat([0x78, 0x7C, 0x78], [32, 32, 6]))


@pytest.mark.parametrize("impl", IMPLS)
def test_d3_non_tail_axis(impl):
    a = np.zeros((2, 33, 2), np.uint16)
    a[0, :32, 0], a[0, 32, 0] = 0x3F80, 0x4040
    a[0, :32, 1], a[0, 32, 1] = 0x4100, 0xC000
    a[1, :, 0] = 0x3F00
    y, s = dynamic(impl, a.view(ml_dtypes.bfloat16), "float8_e4m3fn", axis=1)
    assert s.shape == (2, 1, 2, 2)
    assert hexes(s) == "77 78 7a 78 76 76 00 00"
    assert (y[0, :32, 0] == 0x78).all() and y[0, 32, 0] == 0x7C
    assert (y[0, :32, 1] == 0x78).all() and y[0, 32, 1] == 0xF8
    assert (y[1, :, 0] == 0x78).all() and not y[1, :, 1].any()


D4 = [0x40C0, 0x3E80, 0xBE80, 0x4020, 0x40A0, 0xC0A0, 0x3F40, 0x3FA0, 0x4060, 0xBE4D]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("mode, want", [
    ("rint", "07 48 e6 22 86"), ("round", "17 59 f7 32 86"), ("floor", "07 49 f6 21 95")])   # §10 D4
def test_d4_fp4_e2m1_round_modes(impl, mode, want):
    y, s = dynamic(impl, row(D4), "float4_e2m1", round_mode=mode)
    assert hexes(s) == "7f 00" and hexes(y[0, :5]) == want and not y[0, 5:].any()


@pytest.mark.parametrize("impl", IMPLS)
def test_d4_switches(impl):
    # fp4_nibble_order="high_first": element 2i in the high nibble (codes 7 0 8 4 6 E 2 2 6 8 of D4 rint)
    y, _ = dynamic(impl, row(D4), "float4_e2m1", fp4_nibble_order="high_first")
    assert hexes(y[0, :5]) == "70 84 6e 22 68"
    # signed_zero=False: -0.25 and -0.2001953125 round to -0 (0x8) and become 0x0
    y, _ = dynamic(impl, row(D4), "float4_e2m1", signed_zero=False)
    assert hexes(y[0, :5]) == "07 40 e6 22 06"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("mode, want", [("rint", [6, 0, 2, 8, 7]), ("round", [6, 1, 2, 9, 7]),
                                        ("floor", [6, 0, 1, 9, 7])])                  # §10 D5
def test_d5_fp4_e1m2(impl, mode, want):
    y, s = dynamic(impl, row([0x3FC0, 0x3E00, 0x3EC0, 0xBE00, 0x3FF0]), "float4_e1m2", round_mode=mode)
    assert hexes(s) == "7f 00" and unpack(y)[:5].tolist() == want


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("vals, alg, scale, want", [
    ([0x43E1, 0x3F80], 1, "80 00", "76 30"), ([0x43E1, 0x3F80], 0, "7f 00", "7e 38"),    # §10 D6
    ([0x43E0], 1, "7f 00", "7e"), ([0x3F80], 1, "77 00", "78"),
    ([0x3FF0], 1, "78 00", "77"), ([0x3FF0], 0, "77 00", "7e"),
    ([0x0000], 1, "00 00", "00"), ([0x7F80, 0x3F80], 1, "ff 00", "00 00"),
])
def test_d6_scale_alg1(impl, vals, alg, scale, want):
    y, s = dynamic(impl, row(vals), "float8_e4m3fn", scale_alg=alg)
    assert hexes(s) == scale and hexes(y[0, :len(vals)]) == want


@pytest.mark.parametrize("impl", IMPLS)
def test_dynamic_max_low_bound(impl):
    # §4.2 (V3): A = max(A, maxLowBound) before the RCEIL rule. 1.0 alone: code 0x77 (y 0x78); with
    # max_low_bound 448: S = 448 * fl32(1/448) = 1.0 exactly -> code 0x7F, y = 1.0 -> 0x38.
    # A zero block keeps code 0 (the zero test runs before the bound).
    y, s = dynamic(impl, row([0x3F80]), "float8_e4m3fn", scale_alg=1, max_low_bound=448.0)
    assert hexes(s) == "7f 00" and y[0, 0] == 0x38
    y, s = dynamic(impl, row([0x0000]), "float8_e4m3fn", scale_alg=1, max_low_bound=448.0)
    assert hexes(s) == "00 00" and not y.any()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("v, dtm, scale, code", [
    (0x3FE0, 0.0, 0x7E, 6), (0x3FE0, 6.0, 0x7E, 6), (0x3FE0, 7.0, 0x7D, 7),               # §10 D7
    (0x3FC0, 6.0, 0x7D, 7), (0x3FC1, 6.0, 0x7E, 5),
    # dst_type_max 8 is not a bump template: RCEIL without the subnormal rule, R = fl32(1/8):
    # 1.75 / 8 = 1.75 * 2^-3, mantissa non-zero -> e = 124 + 1 -> code 125 = 0x7D, y = 1.75 * 4 = 7 -> code 7
    (0x3FE0, 8.0, 0x7D, 7),
])
def test_d7_scale_alg2(impl, v, dtm, scale, code):
    y, s = dynamic(impl, row([v]), "float4_e2m1", scale_alg=2, dst_type_max=dtm)
    assert s[0, 0, 0] == scale and unpack(y)[0] == code


@pytest.mark.parametrize("impl", IMPLS)
def test_dynamic_tiny_block_versions(impl):
    # §4.3: master (and 9.1.0) flush a block with E <= emax; 9.0.0 passes x * 2^127 through
    x = row([0x0400])
    y, s = dynamic(impl, x, "float8_e4m3fn")
    assert y[0, 0] == 0 and hexes(s) == "00 00"
    y, s = dynamic(impl, x, "float8_e4m3fn", cann_version="9.0.0")
    assert y[0, 0] == 0x78 and hexes(s) == "00 00"


@pytest.mark.parametrize("impl", IMPLS)
def test_dynamic_fp32_input(impl):
    # §4.2: FP32 input, E = FP32 exponent field; 3.0 (E 128) -> code 120, x * 2^7: 384 -> 0x7C, -64 -> 0xE8;
    # an FP32 subnormal block (E = 0) -> code 0, y = +-0
    a = np.zeros((2, 32), np.float32)
    a[0, 0], a[0, 1] = 3.0, -0.5
    a[1, 0], a[1, 1] = 1e-40, -1e-40
    y, s = dynamic(impl, a, "float8_e4m3fn")
    assert hexes(s) == "78 00 00 00" and hexes(y[0, :2]) == "7c e8" and hexes(y[1, :2]) == "00 80"


def test_mx_dequantize_e8m0_zero_switch():
    # codes decode as y * 2^(c - 127); code 0 is 2^-127 ("pow2") or 0.0 ("zero") -- docs/codecs.md §6.1
    y = np.array([[0x38, 0x40]], np.uint8).view(ml_dtypes.float8_e4m3fn)        # 1.0, 2.0
    s = np.array([[[0x00, 0x00]]], np.uint8)
    v = api.mx_dequantize(y, s, dst_type=24)
    assert np.array_equal(v, np.array([[2.0 ** -127, 2.0 ** -126]], np.float32))
    assert not api.mx_dequantize(y, s, dst_type=24, e8m0_zero="zero").any()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("ftz", [False, True])
def test_max_low_bound_with_subnormal_block(impl, ftz):
    # source (dynamic_mx_quant_tail_axis_fp8.h ComputeScaleCublas): the zero test reads the block maximum before
    # Maxs(max, maxLowBound); a BF16-subnormal maximum (0x0010 = 2^-130) is not zero, so with max_low_bound 448 the
    # scale is S = 448 * fl32(1/448) = 1.0 -> code 0x7F in both ftz modes; y = 2^-130 -> +0 (flushed or rounded).
    y, s = dynamic(impl, row([0x0010]), "float8_e4m3fn", scale_alg=1, max_low_bound=448.0, ftz=ftz)
    assert hexes(s) == "7f 00" and not y.any()
