"""GroupedMatmul MXFP8 on the 950 (docs/ops/grouped_matmul.md §10) against the independent golden (bits), and the
checks of grouped_matmul_950_checker.cpp."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, golden_modes, mx

A5 = "ascend950pr"
E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
RNG = np.random.default_rng(950)
E, M, K, N = 3, 45, 160, 40               # K = 160: the last 64-row of scales holds one used half
KP = -(-K // 64)


def _fp8(shape, dt=E4M3):
    return RNG.standard_normal(shape).astype(dt)


def _codes(shape, lo=118, hi=136):
    return RNG.integers(lo, hi, shape).astype(np.uint8)


X = _fp8((M, K))
W = _fp8((E, K, N))
S2 = _codes((E, KP, N, 2))
S1 = _codes((M, KP, 2))
GL = np.array([12, 12, 40], np.int64)


def gmm(x=X, w=W, s2=S2, s1=S1, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list", GL)
    kw.setdefault("output_dtype", "bfloat16")
    kw.setdefault("soc", A5)
    return api.npu_grouped_matmul([x], [w], scale=None if s2 is None else [s2],
                                  per_token_scale=None if s1 is None else [s1], scale_dtype="float8_e8m0",
                                  per_token_scale_dtype="float8_e8m0", **kw)[0]


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    assert np.array_equal(a.view(u), b.view(u))


@pytest.mark.parametrize("out", ["bfloat16", "float16", "float32"])
def test_split_m_exact_bits(out):
    y = gmm(output_dtype=out)
    same_bits(y, golden_modes.grouped_matmul_mx(X, W, S2, S1, GL, out_dtype=out))
    assert np.all(np.asarray(y, np.float32)[40:] == 0)          # rows after the last group: not written


def test_split_m_counts_e5m2_and_numpy_model():
    x, w = _fp8((M, K), E5M2), _fp8((E, K, N), E5M2)
    gl = np.array([0, 30, 15], np.int64)
    y = gmm(x, w, group_list=gl, group_list_type=1, float_accum="numpy")
    same_bits(y, golden_modes.grouped_matmul_mx(x, w, S2, S1, gl, group_list_type=1, model="numpy"))


def test_scales_are_applied_per_32_values():
    # one scale code raised by 3 in group 1 (k 32..63) of row 0 multiplies exactly that k-block's terms by 8
    s1 = S1.copy()
    s1[0, 0, 1] += 3
    y0 = gmm(output_dtype="float32")
    y1 = gmm(s1=s1, output_dtype="float32")
    same_bits(y1, golden_modes.grouped_matmul_mx(X, W, S2, s1, GL, out_dtype="float32"))
    assert not np.array_equal(y0[0], y1[0]) and np.array_equal(y0[1:], y1[1:])


def test_uint8_codes_and_e8m0_arrays_agree():
    y_codes = gmm()
    y_typed = api.npu_grouped_matmul([X], [W], scale=[S2.view(ml_dtypes.float8_e8m0fnu)],
                                     per_token_scale=[S1.view(ml_dtypes.float8_e8m0fnu)], group_list=GL,
                                     split_item=3, group_type=0, output_dtype="bfloat16", soc=A5)[0]
    same_bits(y_codes, y_typed)


def test_core_count_does_not_change_values():
    same_bits(gmm(core_num=1), gmm(core_num=7))


def _split_k_case(sizes, glt=1):
    x = _fp8((M, K))
    w = _fp8((K, N))
    g = len(sizes)
    s2 = _codes((K // 64 + g, N, 2))
    s1 = _codes((M, K // 64 + g, 2))
    gl = np.array(sizes if glt == 1 else np.cumsum(sizes), np.int64)
    return x, w, s2, s1, gl


@pytest.mark.parametrize("sizes,glt", [([64, 64, 32], 1), ([32, 96, 0, 32], 0), ([100, 60], 1)])
def test_split_k_exact_bits(sizes, glt):
    x, w, s2, s1, gl = _split_k_case(sizes, glt)
    y = gmm(x, w, s2, s1, group_list=gl, group_list_type=glt, group_type=2, split_item=3)
    assert y.shape == (len(sizes), M, N)
    same_bits(y, golden_modes.grouped_matmul_mx(x, w, s2, s1, gl, group_list_type=glt, group_type=2))


def test_split_k_scale_rows():
    # UpdateOffset: group g's first scale row is k0 // 64 + g
    assert [mx.split_k_scale_row(k0, g) for g, k0 in enumerate([0, 64, 128])] == [0, 2, 4]
    assert [mx.split_k_scale_row(k0, g) for g, k0 in enumerate([0, 32, 128])] == [0, 1, 4]


def test_aclnn_v5_split_m_keeps_rows_outside_groups():
    out = np.full((M, N), 3.0, np.float32)
    st, ws, ex = api.aclnnGroupedMatmulV5GetWorkspaceSize(
        [X], [W], None, [S2.view(ml_dtypes.float8_e8m0fnu)], None, None, None,
        [S1.view(ml_dtypes.float8_e8m0fnu)], GL, None, None, None, 3, 0, 0, 0, None, [out], soc=A5)
    assert st == 0
    assert api.aclnnGroupedMatmulV5(None, ws, ex) == 0
    same_bits(out[:40], golden_modes.grouped_matmul_mx(X, W, S2, S1, GL, out_dtype="float32")[:40])
    assert np.all(out[40:] == 3.0)


def test_torch_front_end():
    torch = pytest.importorskip("torch")
    from npu_emu import ops
    y = ops.npu_grouped_matmul([torch.from_numpy(X.view(np.uint8)).view(torch.float8_e4m3fn)],
                               [torch.from_numpy(W.view(np.uint8)).view(torch.float8_e4m3fn)],
                               scale=[torch.from_numpy(S2).view(torch.float8_e8m0fnu)],
                               per_token_scale=[torch.from_numpy(S1).view(torch.float8_e8m0fnu)],
                               group_list=torch.from_numpy(GL), split_item=3, group_type=0,
                               output_dtype=torch.bfloat16, soc=A5)[0]
    assert y.dtype == torch.bfloat16
    same_bits(y.view(torch.int16).numpy(), gmm())


# ---- checks ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,words", [
    (dict(s2=None), "scale cannot be nullptr"),
    (dict(s1=None), "perTokenScale cannot be nullptr"),
    (dict(group_list=None), "groupList cannot be nullptr"),
    (dict(bias=[np.zeros((E, N), np.float32)]), "bias is nonnull"),
    (dict(output_dtype="int8"), "FLOAT16, BFLOAT16 or FLOAT32"),
    (dict(s2=S2[:, :1]), "ceil(k/64)"),
    (dict(s1=S1[:5]), "axis M of x"),
    (dict(s2=S2[..., :1]), "last axis"),
    (dict(s2=S2[:2]), "axis group of scale"),
    (dict(s2=S2[0]), "expected 4"),
    (dict(group_list=np.array([12, 12, 46], np.int64)), "x has 45"),
    (dict(group_list=np.array([12, 40], np.int64)), "weight dim 0"),
    (dict(group_type=1), "0 or 2"),
    (dict(offset=[np.zeros((E, N), np.float32)]), "offset"),
    (dict(tiling={}), "not modelled"),
])
def test_mx_errors(kw, words):
    with pytest.raises(AclnnError) as ei:
        gmm(**kw)
    assert ei.value.status == 161002 and words in str(ei.value)


def test_split_k_shape_errors():
    x, w, s2, s1, gl = _split_k_case([64, 96])
    with pytest.raises(AclnnError) as ei:
        gmm(x, w, s2[:-1], s1, group_list=gl, group_list_type=1, group_type=2)
    assert "divided by 64, plus groupSize" in str(ei.value)
    with pytest.raises(AclnnError) as ei:
        gmm(x, w, s2, s1, group_list=np.array([64, 200], np.int64), group_list_type=1, group_type=2)
    assert "cover 264" in str(ei.value)


def test_on_910b_the_dtypes_have_no_pattern():
    with pytest.raises(AclnnError) as ei:
        gmm(soc="ascend910b2")
    assert ei.value.status == 161002 and "no matching" in str(ei.value)


def test_fp8_without_e8m0_scales_is_named_not_implemented():
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([X], [W], scale=[np.ones((E, N), np.float32)], group_list=GL, split_item=3,
                               group_type=0, output_dtype="bfloat16", soc=A5)
    assert ei.value.status == 161002 and "not implemented" in str(ei.value)


# ---- MXFP4 (float4_e2m1 x and weight, split M) ---------------------------------------------------------------

FP4 = ml_dtypes.float4_e2m1fn


def _fp4(shape):
    return (RNG.standard_normal(shape) * 2).astype(FP4)


X4 = _fp4((M, K))
W4 = _fp4((E, K, N))
BIAS = RNG.uniform(-4, 4, (E, N)).astype(np.float32)


@pytest.mark.parametrize("bias,out", [(None, "bfloat16"), (BIAS, "float32"), (BIAS, "float16")])
def test_mxfp4_split_m_bits(bias, out):
    y = gmm(X4, W4, output_dtype=out, bias=None if bias is None else [bias])
    same_bits(y, golden_modes.grouped_matmul_mx(X4, W4, S2, S1, GL, out_dtype=out, bias=bias))


def test_mxfp4_numpy_model():
    y = gmm(X4, W4, bias=[BIAS], float_accum="numpy", output_dtype="float32")
    same_bits(y, golden_modes.grouped_matmul_mx(X4, W4, S2, S1, GL, out_dtype="float32", bias=BIAS, model="numpy"))


@pytest.mark.parametrize("kw,words", [
    (dict(group_type=2, split_item=3), "expected 0"),
    (dict(bias=[BIAS.astype(np.float16)]), "expected FLOAT32"),
    (dict(bias=[BIAS[:2]]), "axis group of bias"),
    (dict(x=_fp4((M, 3)), w=_fp4((E, 3, N)), s2=S2[:, :1], s1=S1[:, :1]), "axis K of x must be an even"),
    (dict(x=_fp4((M, 2)), w=_fp4((E, 2, N)), s2=S2[:, :1], s1=S1[:, :1]), "must not be equal to 2"),
    (dict(w=_fp4((E, K, N - 1)), s2=S2[:, :, :N - 1]), "axis N of weight must be an even"),
])
def test_mxfp4_errors(kw, words):
    kw.setdefault("x", X4)
    kw.setdefault("w", W4)
    with pytest.raises(AclnnError) as ei:
        gmm(**kw)
    assert ei.value.status == 161002 and words in str(ei.value)


# ---- W4A8-MX (float8_e4m3fn x, transposed FRACTAL_NZ float4_e2m1 weight, §10.7) ---------------------------------

K8, N8 = 128, 64                          # the checker wants N and K multiples of 64
X8 = _fp8((M, K8))
W8T = _fp4((E, N8, K8))                   # the stored (E, N, K) matrix; the logical weight is its transpose
W8 = np.swapaxes(W8T, 1, 2)
AQ = _codes((E, K8 // 64, N8, 2))
PT = _codes((M, K8 // 64, 2))


def a8w4(x=X8, wt=W8T, aq=AQ, pt=PT, **kw):
    from npu_emu.kernels.quant_matmul.api import NzWeight

    w = wt if not isinstance(wt, np.ndarray) else NzWeight.from_nd(wt, "float4_e2m1", transposed=True)
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list", GL)
    kw.setdefault("output_dtype", "bfloat16")
    kw.setdefault("soc", A5)
    return api.npu_grouped_matmul([x], [w], antiquant_scale=None if aq is None else [aq.view(ml_dtypes.float8_e8m0fnu)],
                                  per_token_scale=None if pt is None else [pt.view(ml_dtypes.float8_e8m0fnu)],
                                  **kw)[0]


@pytest.mark.parametrize("out,with_bias", [("bfloat16", False), ("bfloat16", True), ("float16", True)])
def test_w4a8_mx_bits(out, with_bias):
    bias = RNG.uniform(-4, 4, (E, N8)).astype(ml_dtypes.bfloat16 if out == "bfloat16" else np.float16) \
        if with_bias else None
    y = a8w4(output_dtype=out, bias=None if bias is None else [bias])
    same_bits(y, golden_modes.grouped_matmul_mx_a8w4(X8, W8, AQ, PT, GL, out_dtype=out, bias=bias))
    assert np.all(np.asarray(y, np.float32)[40:] == 0)          # rows after the last group: not written


def test_w4a8_mx_numpy_model_counts():
    gl = np.array([0, 30, 15], np.int64)
    bias = RNG.uniform(-4, 4, (E, N8)).astype(ml_dtypes.bfloat16)
    y = a8w4(group_list=gl, group_list_type=1, bias=[bias], float_accum="numpy")
    same_bits(y, golden_modes.grouped_matmul_mx_a8w4(X8, W8, AQ, PT, gl, group_list_type=1, bias=bias,
                                                     model="numpy"))


def test_w4a8_mx_bias_is_scaled_in_its_own_dtype():
    """ScaleMxBias multiplies the float16 bias by 0.015625 in float16: 0x1401 = 2^-10 (1 + 2^-10) becomes
    2^-16 (1 + 2^-10), a subnormal whose step is 2^-24, so it rounds (ties to even) to 2^-16; with x = 0 the
    FixPipe's x 64 gives y = 2^-10 = 0x1400, not the bias. A bfloat16 bias keeps its bits (0x3A81 x 2^-6 is a
    normal bfloat16)."""
    x = np.zeros((M, K8), E4M3)
    b16 = np.full((E, N8), 0x1401, np.uint16).view(np.float16)
    y = a8w4(x=x, bias=[b16], output_dtype="float16")
    assert np.all(y[:40].view(np.uint16) == 0x1400)
    bb = np.full((E, N8), 0x3A81, np.uint16).view(ml_dtypes.bfloat16)
    y = a8w4(x=x, bias=[bb])
    assert np.all(y[:40].view(np.uint16) == 0x3A81)


def test_w4a8_mx_weight_nz_entry_and_v4_refusal():
    from npu_emu.kernels.quant_matmul.api import NzWeight

    nz = NzWeight.from_nd(W8T, "float4_e2m1", transposed=True)
    y = np.zeros((M, N8), ml_dtypes.bfloat16)
    lists = dict(x=[X8], weight=[nz], biasOptional=None, scaleOptional=None, offsetOptional=None,
                 antiquantScaleOptional=[AQ.view(ml_dtypes.float8_e8m0fnu)], antiquantOffsetOptional=None,
                 perTokenScaleOptional=[PT.view(ml_dtypes.float8_e8m0fnu)], groupListOptional=GL,
                 activationInputOptional=None, activationQuantScaleOptional=None,
                 activationQuantOffsetOptional=None, splitItem=3, groupType=0, groupListType=0, actType=0)
    st, ws, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(**lists, tuningConfigOptional=None,
                                                                quantGroupSize=0, out=[y],
                                                                activationFeatureOutOptional=None,
                                                                dynQuantScaleOutOptional=None, soc=A5)
    assert st == 0
    assert api.aclnnGroupedMatmulWeightNz(None, ws, ex) == 0
    same_bits(y[:40], golden_modes.grouped_matmul_mx_a8w4(X8, W8, AQ, PT, GL)[:40])
    st, _, _ = api.aclnnGroupedMatmulV4GetWorkspaceSize(**lists, out=[y], activationFeatureOutOptional=None,
                                                        dynQuantScaleOutOptional=None, soc=A5)
    from npu_emu.aclnn import aclGetRecentErrMsg

    assert st == 161002 and "Only AclnnGroupedMatmulNz" in aclGetRecentErrMsg()


@pytest.mark.parametrize("kw,words,status", [
    (dict(group_type=2), "only support groupType 0", 161002),
    (dict(aq=None), "AntiquantScale must not be nullptr", 161001),
    (dict(antiquant_offset=[np.zeros((E, N8), np.float16)]), "antiquantOffsetOptional is not supported", 161002),
    (dict(scale=[np.zeros((E, N8), np.float32)]), "scale must be null", 161002),
    (dict(pt=None), "perTokenScale must not be null", 161002),
    (dict(output_dtype="float32"), "must be float16 or bfloat16", 161002),
    (dict(bias=[np.zeros((E, N8), np.float16)]), "must be equal to the dtype of y", 161002),
    (dict(wt="nd"), "Only AclnnGroupedMatmulNz", 161002),      # op-plugin sends an ND weight to V4
    (dict(wt="not-transposed"), "weight must be transposed", 161002),
    (dict(pt=PT[:, :1]), "64 times the second dim", 161002),
    (dict(x=_fp8((M, 96)), wt=_fp4((E, N8, 96)), aq=AQ[:, :2, :, :], pt=_codes((M, 2, 2))[:, :, :]),
     "64 times", 161002),
    (dict(aq=AQ[:, :, :32]), "NDim[32] of antiquantScale", 161002),
    (dict(aq=AQ[:, :1]), "groupSize 64", 161002),
    (dict(group_list_type=2, group_list=np.array([[0, 12], [1, 28], [2, 5]], np.int64)), "groupListType 2",
     161002),
])
def test_w4a8_mx_errors(kw, words, status):
    from npu_emu.kernels.quant_matmul.api import NzWeight

    wt = kw.get("wt")
    if isinstance(wt, str) and wt == "not-transposed":
        kw["wt"] = NzWeight.from_nd(W8, "float4_e2m1")           # the (E, K, N) matrix stored as it is
    if isinstance(wt, str) and wt == "nd":
        kw.pop("wt")
        w = W8                                                   # an ND array: not an NzWeight
        with pytest.raises(AclnnError) as ei:
            api.npu_grouped_matmul([X8], [w], antiquant_scale=[AQ.view(ml_dtypes.float8_e8m0fnu)],
                                   per_token_scale=[PT.view(ml_dtypes.float8_e8m0fnu)], group_list=GL,
                                   split_item=3, group_type=0, output_dtype="bfloat16", soc=A5)
    else:
        with pytest.raises(AclnnError) as ei:
            a8w4(**kw)
    assert ei.value.status == status and words in str(ei.value), str(ei.value)


def test_nz_weight_is_the_nd_weight():
    from npu_emu.kernels.quant_matmul.api import NzWeight

    nz = NzWeight.from_nd(W, "float8_e4m3fn")
    same_bits(gmm(w=nz), gmm())
