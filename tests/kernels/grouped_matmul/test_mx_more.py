"""GroupedMatmul on the 950, the MX cases beyond test_mx.py (docs/ops/grouped_matmul.md §10.6, §10.7): W4A8-MX with a
FLOAT4_E1M2 weight and with separated weights, MXFP4 with a FRACTAL_NZ weight (E2M1 or E1M2), and their checks
(grouped_matmul_950_checker.cpp, grouped_matmul_weight_quant_950_checker.cpp). Values against the independent golden
(golden_modes), compared as bits."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.aclnn import aclGetRecentErrMsg
from npu_emu.kernels.grouped_matmul import api, golden_modes, mx
from npu_emu.kernels.quant_matmul.api import NzWeight

A5 = "ascend950pr"
E8M0 = ml_dtypes.float8_e8m0fnu
FP4 = ml_dtypes.float4_e2m1fn
RNG = np.random.default_rng(3510)
E, M, K, N = 3, 45, 128, 64               # W4A8-MX wants N and K multiples of 64
GL = np.array([12, 12, 40], np.int64)     # cumulative: an empty group, and rows 40.. outside every group


def _codes(shape, lo=118, hi=136):
    return RNG.integers(lo, hi, shape).astype(np.uint8)


def _fp4_codes(shape):
    return RNG.integers(0, 16, shape).astype(np.uint8)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    assert np.array_equal(a.view(u), b.view(u))


X8 = RNG.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn)
WT = _fp4_codes((E, N, K))                # the stored (E, N, K) codes of the transposed NZ weight
W = np.swapaxes(WT, 1, 2)                 # the logical (E, K, N) weight
AQ = _codes((E, K // 64, N, 2))
PT = _codes((M, K // 64, 2))


def a8w4(ws, aqs, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list", GL)
    kw.setdefault("output_dtype", "bfloat16")
    kw.setdefault("soc", A5)
    pt = kw.pop("pt", PT)
    return api.npu_grouped_matmul([kw.pop("x", X8)], ws, antiquant_scale=[a.view(E8M0) for a in aqs],
                                  per_token_scale=[pt.view(E8M0)], **kw)[0]


def nz_t(codes, dtype):
    return NzWeight.from_nd(codes, dtype, transposed=True)


# ---- W4A8-MX with a FLOAT4_E1M2 weight ----------------------------------------------------------------------------

@pytest.mark.parametrize("out,with_bias", [("bfloat16", False), ("bfloat16", True), ("float16", True)])
def test_w4a8_mx_e1m2_bits(out, with_bias):
    bias = RNG.uniform(-4, 4, (E, N)).astype(ml_dtypes.bfloat16 if out == "bfloat16" else np.float16) \
        if with_bias else None
    y = a8w4([nz_t(WT, "float4_e1m2")], [AQ], output_dtype=out, bias=None if bias is None else [bias])
    # the golden builds each e4m3 byte with the prologue's shift 3 / mask 0x8E and decodes it with ml_dtypes
    same_bits(y, golden_modes.grouped_matmul_mx_a8w4(X8, W, AQ, PT, GL, out_dtype=out, bias=bias,
                                                     weight_dtype="float4_e1m2"))
    assert np.all(np.asarray(y, np.float32)[40:] == 0)


def test_e1m2_prologue_byte_is_the_value_times_2_pow_minus_6():
    """Every E1M2 code: the prologue's e4m3 byte (s 0 0 0 e m m 0) x 64 is the E1M2 value (bias 1: e = 0 gives
    m/4, e = 1 gives 1 + m/4), as for E2M1 (s 0 0 e e m 0 0): the FixPipe's x 64 is right for both."""
    c = np.arange(16, dtype=np.uint8)
    for name in ("float4_e1m2", "float4_e2m1"):
        byte = golden_modes.prologue_byte(c, name).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
        same_bits(byte * 64, mx.fp4_values(c, name))
    same_bits(golden_modes.e1m2(c), mx.fp4_values(c, "float4_e1m2"))
    assert list(golden_modes.prologue_byte(np.array([0x7, 0xF], np.uint8), "float4_e1m2")) == [0x0E, 0x8E]


def test_w4a8_mx_e1m2_numpy_model_counts():
    gl = np.array([0, 30, 15], np.int64)
    y = a8w4([nz_t(WT, "float4_e1m2")], [AQ], group_list=gl, group_list_type=1, float_accum="numpy")
    same_bits(y, golden_modes.grouped_matmul_mx_a8w4(X8, W, AQ, PT, gl, group_list_type=1, model="numpy",
                                                     weight_dtype="float4_e1m2"))


def test_w4a8_mx_e1m2_weight_nz_entry_and_v4_refusal():
    y = np.zeros((M, N), ml_dtypes.bfloat16)
    lists = dict(x=[X8], weight=[nz_t(WT, "float4_e1m2")], biasOptional=None, scaleOptional=None,
                 offsetOptional=None, antiquantScaleOptional=[AQ.view(E8M0)], antiquantOffsetOptional=None,
                 perTokenScaleOptional=[PT.view(E8M0)], groupListOptional=GL, activationInputOptional=None,
                 activationQuantScaleOptional=None, activationQuantOffsetOptional=None, splitItem=3, groupType=0,
                 groupListType=0, actType=0)
    st, ws, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(**lists, tuningConfigOptional=None,
                                                                quantGroupSize=0, out=[y],
                                                                activationFeatureOutOptional=None,
                                                                dynQuantScaleOutOptional=None, soc=A5)
    assert st == 0 and api.aclnnGroupedMatmulWeightNz(None, ws, ex) == 0
    same_bits(y[:40], golden_modes.grouped_matmul_mx_a8w4(X8, W, AQ, PT, GL, weight_dtype="float4_e1m2")[:40])
    st, _, _ = api.aclnnGroupedMatmulV4GetWorkspaceSize(**lists, out=[y], activationFeatureOutOptional=None,
                                                        dynQuantScaleOutOptional=None, soc=A5)
    assert st == 161002 and "Only AclnnGroupedMatmulNz" in aclGetRecentErrMsg()


# ---- W4A8-MX with separated weights (a list of E (K, N) NZ weights, IsSingleMultiSingle) ---------------------------

def _separated(dtype):
    return [nz_t(WT[g], dtype) for g in range(E)], [AQ[g] for g in range(E)]


@pytest.mark.parametrize("dtype,out", [("float4_e2m1", "bfloat16"), ("float4_e1m2", "float16")])
def test_w4a8_mx_separated_bits(dtype, out):
    ws, aqs = _separated(dtype)
    bdt = ml_dtypes.bfloat16 if out == "bfloat16" else np.float16
    bias = RNG.uniform(-4, 4, (E, N)).astype(bdt)
    y = a8w4(ws, aqs, output_dtype=out, bias=[bias[g] for g in range(E)])
    wv = W if dtype == "float4_e1m2" else W.view(FP4)
    same_bits(y, golden_modes.grouped_matmul_mx_a8w4(X8, wv, AQ, PT, GL, out_dtype=out, bias=bias,
                                                     weight_dtype=dtype))
    # the kernel's per-group lookup reads the same values as the single (E, N, K) weight
    same_bits(y, a8w4([nz_t(WT, dtype)], [AQ], output_dtype=out, bias=[bias]))


def test_w4a8_mx_separated_through_weight_nz():
    ws, aqs = _separated("float4_e2m1")
    y = np.zeros((M, N), ml_dtypes.bfloat16)
    st, wsz, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(
        x=[X8], weight=ws, biasOptional=None, scaleOptional=None, offsetOptional=None,
        antiquantScaleOptional=[a.view(E8M0) for a in aqs], antiquantOffsetOptional=None,
        perTokenScaleOptional=[PT.view(E8M0)], groupListOptional=GL, activationInputOptional=None,
        activationQuantScaleOptional=None, activationQuantOffsetOptional=None, splitItem=3, groupType=0,
        groupListType=0, actType=0, tuningConfigOptional=None, quantGroupSize=0, out=[y],
        activationFeatureOutOptional=None, dynQuantScaleOutOptional=None, soc=A5)
    assert st == 0 and api.aclnnGroupedMatmulWeightNz(None, wsz, ex) == 0
    same_bits(y[:40], golden_modes.grouped_matmul_mx_a8w4(X8, W.view(FP4), AQ, PT, GL)[:40])


def _sep_case(name):
    ws, aqs = _separated("float4_e2m1")
    kw = {}
    if name == "aq4d":
        aqs = [AQ[g:g + 1] for g in range(E)]
    elif name == "bias2d":
        kw["bias"] = [np.zeros((1, N), ml_dtypes.bfloat16) for _ in range(E)]
    elif name == "bias_n":
        kw["bias"] = [np.zeros((N - 1,), ml_dtypes.bfloat16) for _ in range(E)]
    elif name == "aq_count":
        aqs = aqs[:2]
    elif name == "dtype":
        ws[1] = nz_t(WT[1], "float4_e1m2")
    elif name == "gl_len":
        kw["group_list"] = np.array([12, 40], np.int64)
    elif name == "three_d":
        ws = [nz_t(WT, "float4_e2m1"), nz_t(WT, "float4_e2m1")]
        aqs = [AQ, AQ]
    elif name == "nd":
        ws[2] = WT[2].view(FP4)
    elif name == "k":
        ws[1] = nz_t(_fp4_codes((N, 2 * K)), "float4_e2m1")
    elif name == "transpose":
        ws[1] = NzWeight.from_nd(W[1], "float4_e2m1")
    return ws, aqs, kw


@pytest.mark.parametrize("name,words", [
    ("aq4d", "Dim must be [3]"),
    ("bias2d", "Dim must be [1]"),
    ("bias_n", "NDim[63] of bias"),
    ("aq_count", "antiquantScaleOptional size: 2, weight size: 3"),
    ("dtype", "must be consistent"),
    ("gl_len", "one entry per weight tensor"),
    ("three_d", "separated form"),
    ("nd", "the format of weight must be NZ"),
    ("k", "dim k value 256"),
    ("transpose", "transpose state must be the same"),
])
def test_w4a8_mx_separated_errors(name, words):
    ws, aqs, kw = _sep_case(name)
    with pytest.raises(AclnnError) as ei:
        a8w4(ws, aqs, **kw)
    assert ei.value.status == 161002 and words in str(ei.value), str(ei.value)


# ---- MXFP4 with a FRACTAL_NZ weight (E2M1 or E1M2), aclnnGroupedMatmulWeightNz -------------------------------------

K4, N4 = 160, 40                          # K = 160: the last scale row half-used; N = 40: a partial NZ block
X4 = (RNG.standard_normal((M, K4)) * 2).astype(FP4)
W4 = _fp4_codes((E, K4, N4))              # the (E, K, N) codes, stored as they are (not transposed)
S2 = _codes((E, -(-K4 // 64), N4, 2))
S1 = _codes((M, -(-K4 // 64), 2))
BIAS = RNG.uniform(-4, 4, (E, N4)).astype(np.float32)


def mxfp4(w, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list", GL)
    kw.setdefault("output_dtype", "bfloat16")
    kw.setdefault("soc", A5)
    return api.npu_grouped_matmul([kw.pop("x", X4)], [w], scale=[kw.pop("s2", S2).view(E8M0)],
                                  per_token_scale=[kw.pop("s1", S1).view(E8M0)], **kw)[0]


def nz64(codes, dtype):
    return NzWeight.from_nd(codes, dtype, c0=64)


@pytest.mark.parametrize("dtype,out,bias", [("float4_e2m1", "bfloat16", None), ("float4_e1m2", "bfloat16", None),
                                            ("float4_e1m2", "float32", BIAS), ("float4_e1m2", "float16", BIAS)])
def test_mxfp4_nz_bits(dtype, out, bias):
    y = mxfp4(nz64(W4, dtype), output_dtype=out, bias=None if bias is None else [bias])
    wg = W4.view(FP4) if dtype == "float4_e2m1" else W4
    same_bits(y, golden_modes.grouped_matmul_mx(X4, wg, S2, S1, GL, out_dtype=out, bias=bias, weight_dtype=dtype))


def test_mxfp4_nz_is_the_nd_weight_and_numpy_model():
    same_bits(mxfp4(nz64(W4, "float4_e2m1")), mxfp4(W4.view(FP4)))
    y = mxfp4(nz64(W4, "float4_e1m2"), float_accum="numpy", output_dtype="float32", bias=[BIAS])
    same_bits(y, golden_modes.grouped_matmul_mx(X4, W4, S2, S1, GL, out_dtype="float32", bias=BIAS, model="numpy",
                                                weight_dtype="float4_e1m2"))


def test_mxfp4_e1m2_weight_nz_entry_and_v4_refusal():
    y = np.zeros((M, N4), ml_dtypes.bfloat16)
    lists = dict(x=[X4], weight=[nz64(W4, "float4_e1m2")], biasOptional=None, scaleOptional=[S2.view(E8M0)],
                 offsetOptional=None, antiquantScaleOptional=None, antiquantOffsetOptional=None,
                 perTokenScaleOptional=[S1.view(E8M0)], groupListOptional=GL, activationInputOptional=None,
                 activationQuantScaleOptional=None, activationQuantOffsetOptional=None, splitItem=3, groupType=0,
                 groupListType=0, actType=0)
    st, ws, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(**lists, tuningConfigOptional=None,
                                                                quantGroupSize=0, out=[y],
                                                                activationFeatureOutOptional=None,
                                                                dynQuantScaleOutOptional=None, soc=A5)
    assert st == 0 and api.aclnnGroupedMatmulWeightNz(None, ws, ex) == 0
    same_bits(y[:40], golden_modes.grouped_matmul_mx(X4, W4, S2, S1, GL, weight_dtype="float4_e1m2")[:40])
    st, _, _ = api.aclnnGroupedMatmulV5GetWorkspaceSize(**lists, tuningConfigOptional=None, out=[y],
                                                        activationFeatureOutOptional=None,
                                                        dynQuantScaleOutOptional=None, soc=A5)
    assert st == 161002 and "expected aclnnGroupedMatmulWeightNz" in aclGetRecentErrMsg()


@pytest.mark.parametrize("case,words", [
    ("transposed", "values of scale and weight transposition must be the same"),
    ("c0_32", "or 64 for mxfp4 dtype"),
    ("storage_n", "ceil(n/64) [1]"),
    ("split_k", "expected 0"),
    ("e5m2_nz", "must be within the range INT8, FLOAT8_E4M3FN"),
])
def test_mxfp4_nz_errors(case, words):
    kw = {}
    if case == "transposed":
        w = NzWeight.from_nd(np.swapaxes(W4, 1, 2), "float4_e1m2", c0=64, transposed=True)
    elif case == "c0_32":
        w = NzWeight.from_nd(W4, "float4_e1m2", c0=32)
    elif case == "storage_n":
        w = nz64(W4, "float4_e1m2")
        w = NzWeight(np.concatenate([w.storage, w.storage], axis=1), w.shape, "float4_e1m2")
    elif case == "split_k":
        w, kw = nz64(W4, "float4_e1m2"), dict(group_type=2)
    else:
        w = NzWeight.from_nd(RNG.standard_normal((E, K4, N4)).astype(ml_dtypes.float8_e5m2), "float8_e5m2")
        kw = dict(x=RNG.standard_normal((M, K4)).astype(ml_dtypes.float8_e5m2))
    with pytest.raises(AclnnError) as ei:
        mxfp4(w, **kw)
    assert ei.value.status == 161002 and words in str(ei.value), str(ei.value)


def test_mxfp4_e1m2_nd_weight_is_refused():
    """CheckFp4Params: an E1M2 operand with an ND weight is a format error. npu-emu's ND arrays cannot carry the
    E1M2 label (no ml_dtypes type), so the check is reached here directly."""
    with pytest.raises(AclnnError) as ei:
        mx.check(X4, np.zeros((E, K4, N4)), "float4_e1m2", S2.view(E8M0), S1.view(E8M0), None, GL, "bfloat16",
                 has_offset=False, has_antiquant=False, group_type=0, group_list_type=0, n_x=1, n_w=1, n_y=1,
                 act_type=0)
    assert ei.value.status == 161002 and "expected FRACTAL_NZ" in str(ei.value)
