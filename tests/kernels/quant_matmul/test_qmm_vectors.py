"""Hand-checked vectors of docs/ops/quant_matmul.md §14 (bit-exact on the integer views), switch alternatives, and the
independent golden on the same inputs."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.quant_matmul import golden as golden
from npu_emu.kernels.quant_matmul.api import npu_quant_matmul, npu_trans_quant_param

E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2
BF16 = ml_dtypes.bfloat16
SOC950 = "ascend950pr"


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def f16(values):
    return np.array(values, np.float16)


# --- TV-K: npu_trans_quant_param ---------------------------------------------------------------------------------

@pytest.mark.parametrize("scale, offset, round_mode, word", [
    (0.1, None, 0, 0x0000_4000_3DCC_C000),
    (0.1, 3.7, 0, 0x0000_4080_3DCC_C000),             # offset rint(3.7) = 4 at bit 37
    (0.1, -2.5, 0, 0x0000_7FC0_3DCC_C000),            # -2.5 ties to even -> -2 (V1's round() would give -3)
    (1 + 2**-11 + 2**-12, None, 0, 0x0000_4000_3F80_0000),
    (1 + 2**-11 + 2**-12, None, 1, 0x0000_4000_3F80_2000),
    (1 + 2**-12, None, 1, 0x0000_4000_3F80_0000),     # round bit 0
])
def test_tv_k(scale, offset, round_mode, word):
    s = np.array([scale], np.float32)
    o = None if offset is None else np.array([offset], np.float32)
    got = npu_trans_quant_param(s, o, round_mode)
    assert got.dtype == np.int64 and got.shape == (1,)
    assert int(got.view(np.uint64)[0]) == word
    assert int(golden.trans_quant_param(s, o, round_mode)[0]) == word


def test_trans_quant_param_vector_and_decode():
    s = np.array([0.1, -0.25, 3.0], np.float32)
    o = np.array([1.5, -300.0, 255.6], np.float32)                  # rint: 2, clamp -256, clamp 255
    w = npu_trans_quant_param(s, o).view(np.uint64)
    assert np.array_equal(golden.deq_offset(w), [2, -256, 255])
    assert np.array_equal(bits(golden.deq_scale(w)), bits(s) & np.uint32(0xFFFFE000))
    assert np.array_equal(w, golden.trans_quant_param(s, o))


def test_trans_quant_param_round_mode_carry():
    # mantissa all ones above the round bit: RNE carries into the exponent (1.99999 -> 2.0)
    s = np.array([np.nextafter(np.float32(2.0), np.float32(0))], np.float32)
    assert int(npu_trans_quant_param(s, None, 1).view(np.uint64)[0]) == (1 << 46) | 0x40000000
    assert int(npu_trans_quant_param(s, None, 0).view(np.uint64)[0]) == (1 << 46) | 0x3FFFE000


# --- TV-A / TV-C: int8 Fixpipe path --------------------------------------------------------------------------

X1 = np.array([[1, 2, 3, 4], [-1, 0, 5, -2]], np.int8)
X2 = np.array([[1, 0], [2, -1], [0, 3], [-4, 1]], np.int8)
BIAS = np.array([5, -3], np.int32)


def test_tv_a_per_tensor_ties():
    # acc + bias = [[-6, 8], [12, 10]]; * 0.0999755859375 -> three exact fp16 ties, RNE
    y = npu_quant_matmul(X1, X2, np.array([0.1], np.float32), bias=BIAS, output_dtype="float16")
    assert y.dtype == np.float16
    assert np.array_equal(bits(y), bits(f16([[-0.599609375, 0.7998046875], [1.19921875, 1.0]])))


def test_tv_a_half_away_switch():
    # the same ties rounded away from zero: -1228.5 * 2^-11 -> -1229 * 2^-11, 2457.5 * 2^-11 -> 2458 * 2^-11 ...
    y = npu_quant_matmul(X1, X2, np.array([0.1], np.float32), bias=BIAS, output_dtype="float16",
                         fixpipe_round="half_away")
    want = golden.to_fp16(np.array([[-0.599853515625, 0.7998046875], [1.19970703125, 0.999755859375]], np.float32),
                          "half_away")
    assert np.array_equal(bits(y), bits(want))
    assert not np.array_equal(bits(y), bits(f16([[-0.599609375, 0.7998046875], [1.19921875, 1.0]])))


def test_tv_a_per_channel():
    y = npu_quant_matmul(X1, X2, np.array([0.1, -0.25], np.float32), bias=BIAS, output_dtype="float16")
    assert np.array_equal(bits(y), bits(f16([[-0.599609375, -2.0], [1.19921875, -2.5]])))


def test_tv_c_requant():
    # int9 step rint(acc*s) = [[-1, 1], [1, 1]], + offset 3 -> [[2, 4], [4, 4]]
    y = npu_quant_matmul(X1, X2, np.array([0.1], np.float32), offset=np.array([3.0], np.float32), bias=BIAS)
    assert y.dtype == np.int8
    assert np.array_equal(y, [[2, 4], [4, 4]])


def test_tv_b_kc_bf16():
    y = npu_quant_matmul(X1, X2, np.array([0.5, 0.3], np.float32), pertoken_scale=np.array([0.25, 1.5], np.float32),
                         bias=np.array([1.0, -2.0], BF16), output_dtype="bfloat16")
    assert y.dtype == BF16
    assert np.array_equal(bits(y), bits(np.array([[-0.375, -1.171875], [6.25, 3.84375]], BF16)))


def test_int32_output_ignores_scales():
    y = npu_quant_matmul(X1, X2, np.array([0.7], np.float32), bias=BIAS, output_dtype="int32")
    assert y.dtype == np.int32 and np.array_equal(y, [[-6, 8], [12, 10]])


# --- TV-FP8 / TV-E / TV-D (Ascend 950) -------------------------------------------------------------------------

FX1 = np.array([[0x3C, 0xC0]], np.uint8).view(E4M3)       # [1.5, -2.0]
FX2 = np.array([[0x42], [0x3A]], np.uint8).view(E5M2)      # [3.0, 0.75]^T, sum 3.0


def test_tv_fp8_static_bias_before_scale():
    words = npu_trans_quant_param(np.array([0.1], np.float32))
    y = npu_quant_matmul(FX1, FX2, words, bias=np.array([0.5], np.float32), output_dtype="float16", soc=SOC950)
    assert np.array_equal(bits(y), bits(f16([[0.349853515625]])))


def test_tv_fp8_dynamic_bias_after_scales():
    y = npu_quant_matmul(FX1, FX2, np.array([0.1], np.float32), pertoken_scale=np.array([2.0], np.float32),
                         bias=np.array([0.5], np.float32), output_dtype="float16", soc=SOC950)
    assert np.array_equal(bits(y), bits(f16([[1.099609375]])))


HX1 = np.array([[0x09, 0x18, 0x20]], np.uint8)             # hif8 [1.125, 0.5, 4]
HX2 = np.array([[0x08], [0x12], [0x30]], np.uint8)         # hif8 [1, 2.5, 0.25]^T, sum 3.375


def test_tv_e_hif8_cube_merged_scale():
    y = npu_quant_matmul(HX1, HX2, np.array([0.7], np.float32), pertoken_scale=np.array([0.3], np.float32),
                         x1_dtype="hifloat8", x2_dtype="hifloat8", output_dtype="float16", soc=SOC950)
    assert np.array_equal(bits(y), bits(f16([[0.70849609375]])))


def test_tv_e_hif8_mix_with_bias():
    y = npu_quant_matmul(HX1, HX2, np.array([0.7], np.float32), pertoken_scale=np.array([0.3], np.float32),
                         bias=np.array([0.1], np.float32), x1_dtype="hifloat8", x2_dtype="hifloat8",
                         output_dtype="float16", soc=SOC950)
    assert np.array_equal(bits(y), bits(f16([[0.80859375]])))


def _tv_d(**kw):
    x1 = np.array([[0x3C] * 32 + [0xB0] * 32], np.uint8).view(E4M3)           # 1.5 x32, -0.5 x32
    x2t = np.zeros((2, 64), np.uint8)
    x2t[0, :32], x2t[0, 32:], x2t[1] = 0x40, 0x44, 0x28                        # col 0: 2 / 3; col 1: 0.25
    s1 = np.array([[[128, 125]]], np.uint8)                                     # [2, 2^-2]
    s2 = np.array([[[127, 130]], [[126, 127]]], np.uint8)                       # n0 [1, 8]; n1 [0.5, 1]
    return npu_quant_matmul(x1, x2t.view(E4M3).T, s2, pertoken_scale=s1, scale_dtype="float8_e8m0",
                            pertoken_scale_dtype="float8_e8m0", bias=np.array([0.5, -1.0], np.float32),
                            output_dtype="bfloat16", group_sizes=[1, 1, 32], soc=SOC950, **kw)


@pytest.mark.parametrize("float_accum", ["exact", "kchunk", "sequential", "numpy"])
def test_tv_d_mx(float_accum):
    # every float_accum model agrees here: all partial sums are exact in fp32
    y = _tv_d(float_accum=float_accum)
    assert np.array_equal(bits(y), bits(np.array([[96.5, 10.0]], BF16)))


def test_e8m0_zero_switch():
    # x1Scale code 0 on group 1: 2^-127 (pow2) makes group 1 vanish below fp32 resolution; "zero" drops it exactly
    x1 = np.array([[0x38] * 64], np.uint8).view(E4M3)                           # all 1.0
    x2 = np.array([[0x38] * 64], np.uint8).view(E4M3).T                         # (64, 1) all 1.0
    s1 = np.array([[[127, 0]]], np.uint8)
    s2 = np.array([[[127, 127]]], np.uint8)
    kw = dict(pertoken_scale=s1, scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
              output_dtype="float32", group_sizes=[1, 1, 32], soc=SOC950)
    pow2 = npu_quant_matmul(x1, x2, s2, **kw)
    zero = npu_quant_matmul(x1, x2, s2, e8m0_zero="zero", **kw)
    assert zero[0, 0] == np.float32(32.0)
    # exact: 32 + 32 * 2^-127 rounds to 32 in fp32 as well - the switch shows up in the float_accum="numpy" golden
    assert pow2[0, 0] == np.float32(32.0)
    s1b = np.array([[[0, 0]]], np.uint8)                                        # only tiny groups: 64 * 2^-127
    tiny = npu_quant_matmul(x1, x2, s2, **{**kw, "pertoken_scale": s1b})
    tiny0 = npu_quant_matmul(x1, x2, s2, e8m0_zero="zero", **{**kw, "pertoken_scale": s1b})
    assert bits(tiny)[0, 0] == bits(np.float32(2.0 ** -121)) and tiny0[0, 0] == 0.0


# --- accumulation models that differ --------------------------------------------------------------------------

def test_float_accum_models_differ():
    # one product 448 * 448 = 200704 (fp32 ulp 2^-6 there) and 255 products 2^-6 * 2^-6 = 2^-12 (< half an ulp):
    # exact: 200704 + 255 * 2^-12 -> 200704.0625; sequential drops every small term -> 200704;
    # kchunk (baseK 128): 200704 + 127 * 2^-12 -> 200704.03125, then + 128 * 2^-12 = 0.03125 -> 200704.0625
    k = 256
    a = np.full((1, k), 0x08, np.uint8)
    b = np.full((k, 1), 0x08, np.uint8)
    a[0, 0] = b[0, 0] = 0x7E                                                    # 448
    x1, x2 = a.view(E4M3), b.view(E4M3)
    words = npu_trans_quant_param(np.array([1.0], np.float32))
    out = {}
    for fa in ("exact", "kchunk", "sequential", "numpy"):
        out[fa] = npu_quant_matmul(x1, x2, words, output_dtype="float32", float_accum=fa, soc=SOC950)[0, 0]
        if fa != "numpy":
            ref = golden.quant_matmul(x1, x2, golden.trans_quant_param(np.float32(1.0)), x1_dtype="float8_e4m3fn",
                                      x2_dtype="float8_e4m3fn", scale_dtype="uint64", out_dtype="float32",
                                      float_accum=fa, base_k=128)
            assert bits(out[fa]) == bits(ref)[0, 0], fa
    assert out["exact"] == np.float32(200704.0625)
    assert out["kchunk"] == np.float32(200704.0625)
    assert out["sequential"] == np.float32(200704.0)


# --- cast_overflow ---------------------------------------------------------------------------------------------

def test_cast_overflow_switch():
    x1 = np.array([[127, 127]], np.int8)
    x2 = np.array([[127], [127]], np.int8)
    s = np.array([8.0], np.float32)                                              # 32258 * 8 > 65504
    inf = npu_quant_matmul(x1, x2, s, output_dtype="float16")
    sat = npu_quant_matmul(x1, x2, s, output_dtype="float16", cast_overflow="saturate")
    assert bits(inf)[0, 0] == 0x7C00 and bits(sat)[0, 0] == 0x7BFF
    assert bits(golden.to_fp16(np.float32(258064.0), cast_overflow="saturate")) == 0x7BFF
