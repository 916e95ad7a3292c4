"""GroupedMatmul A8W4 (int8 x, int4 weight, A2/A3; docs/ops/grouped_matmul.md §12) against the independent golden
(golden_a8w4, bits of y), through npu_grouped_matmul and aclnnGroupedMatmulV4 / V5 / WeightNz, and every check."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.aclnn import aclGetRecentErrMsg
from npu_emu.kernels.grouped_matmul import a8w4, api, golden
from npu_emu.kernels.grouped_matmul.golden_a8w4 import (fake_a8w8_scale, fixpipe_scale, grouped_matmul_a8w4_msd,
                                                        grouped_matmul_a8w4_msd_vector)
from npu_emu.kernels.quant_matmul.api import NzWeight

RNG = np.random.default_rng(48)
E, M, K, N = 3, 20, 512, 128
G = 2                                                       # k groups of 256, as vLLM-Ascend's w4a8 per group
GL = np.array([7, 0, 11], np.int64)                         # counts, an empty expert, 2 rows after the groups
X = RNG.integers(-128, 128, (M, K)).astype(np.int8)
W = RNG.integers(-8, 8, (E, K, N)).astype(np.int8)


def words(scale):
    """float32 scales -> the int64 words vLLM-Ascend builds (float32 bits in the low half, 0 above)."""
    out = np.zeros(scale.shape, np.uint64)
    out[...] = np.asarray(scale, np.float32).view(np.uint32)
    return out.view(np.int64)


def vllm_bias(w, scale):
    """vLLM-Ascend's w1_scale_bias: 8 · Σ_k w · scale per column (restores the lo plane's + 8)."""
    e, k, n = w.shape
    g = scale.shape[1]
    return (8 * (w.reshape(e, g, k // g, n).astype(np.float32) * scale[:, :, None, :]).sum(axis=(1, 2))) \
        .astype(np.float32)


S = RNG.uniform(1e-3, 2e-2, (E, G, N)).astype(np.float32)
SW = words(S)
BIAS = vllm_bias(W, S)
PT = RNG.uniform(0.01, 0.1, M).astype(np.float32)


def gmm(x=X, w=W, scale=SW, bias=BIAS, pt=PT, gl=GL, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list_type", 1)
    kw.setdefault("output_dtype", "bfloat16")
    if isinstance(w, np.ndarray) and w.dtype == np.int8:
        w = w.astype(ml_dtypes.int4)
    return api.npu_grouped_matmul([x], [w], scale=None if scale is None else [scale],
                                  bias=None if bias is None else [bias], per_token_scale=None if pt is None else [pt],
                                  group_list=gl, **kw)[0]


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize == 2
    assert np.array_equal(a.view(np.uint16), b.view(np.uint16))


def pack_int32(w):
    """int4 values (..., N) -> torch_npu's int32 words (..., N / 8), element 0 in the low nibble."""
    nib = (w.astype(np.int64) & 0xF).reshape(w.shape[:-1] + (-1, 8))
    return (nib << (4 * np.arange(8))).sum(axis=-1).astype(np.uint32).view(np.int32)


@pytest.mark.parametrize("out", ["bfloat16", "float16"])
def test_per_group_bits(out):
    y = gmm(output_dtype=out)
    same_bits(y, grouped_matmul_a8w4_msd(X, W, SW, BIAS, PT, GL, out))
    assert np.all(np.asarray(y)[18:].view(np.uint16) == 0)          # rows after the groups: a fresh y's zeros


def test_golden_is_the_w4a8_product():
    """The golden's formula (hi / lo planes, + the bias) gives pt · Σ_k x · w · scale up to the fp16 workspace."""
    ref = np.zeros((M, N))
    s = fixpipe_scale(SW).astype(np.float64)
    row = 0
    for g, mg in enumerate(GL):
        r = slice(row, row + mg)
        for q in range(G):
            kq = slice(q * K // G, (q + 1) * K // G)
            ref[r] += (X[r, kq].astype(np.float64) @ W[g, kq]) * s[g, q]
        ref[r] *= PT[r, None]
        row += mg
    y = grouped_matmul_a8w4_msd(X, W, SW, vllm_bias(W, fixpipe_scale(SW)), PT, GL, "float16").astype(np.float64)
    assert np.allclose(y[:18], ref[:18], rtol=2e-2, atol=2e-2)


def test_per_channel_decode_float16_and_core_counts():
    """Per-channel scale (E, 1, N) with few rows per expert (N // (M // E) > 4): still MSD_API_DEQUANT."""
    s1 = RNG.uniform(1e-3, 2e-2, (E, 1, N)).astype(np.float32)
    gl = np.array([3, 2, 1], np.int64)
    b = vllm_bias(W, s1)
    ref = grouped_matmul_a8w4_msd(X, W, words(s1), b, PT, gl, "float16")
    for cores in (None, 1, 5):
        same_bits(gmm(scale=words(s1), bias=b, gl=gl, output_dtype="float16", core_num=cores), ref)


def test_scale_bits_below_fp19_are_ignored():
    """The Fixpipe reads the scale as FP19: the 13 lowest bits of the float32 change nothing."""
    dirty = SW.view(np.uint64) | np.uint64(0x1FFF)
    same_bits(gmm(scale=dirty), gmm())


def test_int32_packed_and_nz_weights():
    ref = grouped_matmul_a8w4_msd(X, W, SW, BIAS, PT, GL, "bfloat16")
    same_bits(gmm(w=pack_int32(W)), ref)
    same_bits(gmm(w=NzWeight.from_nd(W.astype(ml_dtypes.int4), "int4")), ref)
    same_bits(gmm(w=NzWeight.from_nd(W.astype(ml_dtypes.int4), "int32")), ref)


def test_short_and_long_m_blocks():
    """avg_m >= 32 switches the blocks to 128 x 256 (isShortM false); values do not depend on the walk."""
    m = 200
    x = RNG.integers(-128, 128, (m, K)).astype(np.int8)
    pt = RNG.uniform(0.01, 0.1, m).astype(np.float32)
    gl = np.array([90, 40, 70], np.int64)
    ref = grouped_matmul_a8w4_msd(x, W, SW, BIAS, pt, gl, "bfloat16")
    same_bits(gmm(x=x, pt=pt, gl=gl), ref)
    same_bits(gmm(x=x, pt=pt, gl=gl, tuning_config=[4]), ref)       # avg_m from the tuning value: short blocks


def test_asymmetric_offset_float16():
    off = RNG.uniform(-0.01, 0.01, (E, 1, N)).astype(np.float32)
    s1 = RNG.uniform(1e-3, 2e-2, (E, 1, N)).astype(np.float32)
    b = vllm_bias(W, s1)
    pt2 = PT.reshape(M, 1)
    y = gmm(scale=words(s1), bias=b, pt=pt2, output_dtype="float16", offset=[off])
    same_bits(y, grouped_matmul_a8w4_msd(X, W, words(s1), b, pt2, GL, "float16", offset=off))
    assert not np.array_equal(np.asarray(y).view(np.uint16), gmm(scale=words(s1), bias=b, pt=pt2,
                                                                  output_dtype="float16").view(np.uint16))


def test_offset_of_another_shape_is_ignored():
    """The tiling turns withOffset on only for an (E, 1, N) offset (a warning otherwise)."""
    off = np.ones((E, N), np.float32)
    same_bits(gmm(offset=[off]), gmm())


FAKE_GL = {0: np.array([7, 7, 20], np.int64), 1: np.array([7, 0, 13], np.int64)}


@pytest.mark.parametrize("out", ["bfloat16", "float16"])
@pytest.mark.parametrize("glt", [0, 1])
def test_per_channel_prefill_is_fake_a8w8(out, glt):
    """Per channel with N // (M // E) <= 4 (here 8 // 6): PERCHANNEL_ANTIQUANT - the int4 weight as int8, the words
    as the A8W8 scale (golden_a8w4.fake_a8w8_scale), the A8W8 per-token chain (golden.grouped_matmul_quant) with
    the bias not read; the group list honours group_list_type 0 / 1."""
    n = 8
    s1 = RNG.uniform(1e-3, 2e-2, (E, 1, n)).astype(np.float32)
    s1[0, 0, :3] *= -1
    w = W[:, :, :n]
    sc = fake_a8w8_scale(words(s1), out)
    ref = golden.grouped_matmul_quant(X, w, FAKE_GL[glt], group_list_type=glt, scale=sc, per_token_scale=PT,
                                      out_dtype=out)
    y = gmm(w=w, scale=words(s1), bias=vllm_bias(w, s1), gl=FAKE_GL[glt], group_list_type=glt, output_dtype=out)
    same_bits(y, ref)
    same_bits(gmm(w=w, scale=words(s1), bias=None, gl=FAKE_GL[glt], group_list_type=glt, output_dtype=out), ref)


def test_fake_a8w8_scale_rounds_toward_minus_infinity():
    """bfloat16 y: ScaleProcess casts with CAST_FLOOR: 1 + 2^-9 and -(1 + 2^-9) (between bfloat16 neighbours) go
    to 1 and -(1 + 2^-7); float16 y keeps the float32; a nonzero high word is added (PairReduceSum)."""
    v = np.array([[[1 + 2 ** -9, -(1 + 2 ** -9)]]], np.float32)
    w = words(v)
    assert fake_a8w8_scale(w, "bfloat16").view(np.uint16).tolist() == [[0x3F80, 0xBF81]]
    assert a8w4.fake_a8w8_scale(w, "bfloat16").view(np.uint16).tolist() == [[0x3F80, 0xBF81]]
    assert a8w4.fake_a8w8_scale(w, "float16").tolist() == v.reshape(1, 2).tolist()
    hi = w.view(np.uint64) | (np.uint64(np.float32(0.5).view(np.uint32)) << np.uint64(32))
    assert a8w4.fake_a8w8_scale(hi, "float16").tolist() == [[1.5 + 2 ** -9, -0.5 - 2 ** -9]]


def _lists(w=W.astype(ml_dtypes.int4), scale=SW, bias=BIAS, pt=PT, gl=GL, offset=None):
    return dict(x=[X], weight=[w], biasOptional=None if bias is None else [bias], scaleOptional=[scale], offsetOptional=offset,
                antiquantScaleOptional=None, antiquantOffsetOptional=None, perTokenScaleOptional=[pt],
                groupListOptional=gl, activationInputOptional=None, activationQuantScaleOptional=None,
                activationQuantOffsetOptional=None, splitItem=3, groupType=0, groupListType=1, actType=0)


def test_aclnn_v4_v5_weight_nz_keep_rows_after_groups():
    ref = grouped_matmul_a8w4_msd(X, W, SW, BIAS, PT, GL, "bfloat16")
    out = np.full((M, N), 0x3F80, np.uint16).view(ml_dtypes.bfloat16)      # 1.0 everywhere before the call
    st, ws, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(**_lists(w=pack_int32(W)), out=[out],
                                                          activationFeatureOutOptional=None,
                                                          dynQuantScaleOutOptional=None)
    assert st == 0 and ws > 0 and api.aclnnGroupedMatmulV4(None, ws, ex) == 0
    same_bits(out[:18], ref[:18])
    assert np.all(out[18:].view(np.uint16) == 0x3F80)
    out5 = np.zeros((M, N), np.float16)
    st, ws, ex = api.aclnnGroupedMatmulV5GetWorkspaceSize(**_lists(), tuningConfigOptional=[0], out=[out5],
                                                          activationFeatureOutOptional=None,
                                                          dynQuantScaleOutOptional=None)
    assert st == 0 and api.aclnnGroupedMatmulV5(None, ws, ex) == 0
    same_bits(out5[:18], grouped_matmul_a8w4_msd(X, W, SW, BIAS, PT, GL, "float16")[:18])
    outz = np.zeros((M, N), ml_dtypes.bfloat16)
    nz = NzWeight.from_nd(W.astype(ml_dtypes.int4), "int32")
    st, ws, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(**_lists(w=nz), tuningConfigOptional=None,
                                                                quantGroupSize=0, out=[outz],
                                                                activationFeatureOutOptional=None,
                                                                dynQuantScaleOutOptional=None)
    assert st == 0 and api.aclnnGroupedMatmulWeightNz(None, ws, ex) == 0
    same_bits(outz[:18], ref[:18])


def test_trace_names_the_template():
    _, tr8 = api.npu_grouped_matmul([X], [W[:, :, :8].astype(ml_dtypes.int4)], scale=[SW[:, :1, :8]],
                                    per_token_scale=[PT], group_list=GL, group_list_type=1, split_item=3,
                                    group_type=0, output_dtype="bfloat16", trace=True)
    assert any("PERCHANNEL_ANTIQUANT" in note for note in tr8.notes)
    _, tr = api.npu_grouped_matmul([X], [W.astype(ml_dtypes.int4)], scale=[SW], bias=[BIAS], per_token_scale=[PT],
                                   group_list=GL, group_list_type=1, split_item=3, group_type=0,
                                   output_dtype="bfloat16", trace=True)
    assert "MSD_API_DEQUANT" in tr.quant_mode and tr.block_dim > 0


def test_template_choice():
    """GMMTiling::A8W4Tiling's choice (derived by hand from its conditions)."""
    pick = a8w4.pick_template
    assert pick(8, 64, 512, 256, 2, False, False, 0, 0) == a8w4.MSD_API_DEQUANT           # per group
    assert pick(8, 64, 512, 256, 1, False, False, 0, 0) == a8w4.MSD_API_DEQUANT           # 256 // 8 > 4
    assert pick(8, 512, 512, 256, 1, False, False, 0, 0) == a8w4.PERCHANNEL_ANTIQUANT     # 256 // 64 = 4
    assert pick(8, 512, 512, 256, 1, True, False, 0, 0) == a8w4.MSD_API_DEQUANT           # offset forces MSD
    assert pick(8, 512, 512, 256, 1, False, False, 16, 1) == a8w4.MSD_API_DEQUANT         # tuning avg_m 16
    assert pick(1, 16, 256, 512, 1, False, True, 0, 0) == a8w4.MSD_VECTOR_DEQUANT         # white list, k / G = 256
    assert pick(1, 16, 256, 512, 1, False, False, 0, 0) == a8w4.MSD_API_DEQUANT          # ... but ND
    assert pick(8, 64, 512, 256, 2, False, False, 0, 2) == a8w4.AUTOTILING


def _raises(status, words, **kw):
    with pytest.raises(AclnnError) as ei:
        gmm(**kw)
    assert ei.value.status == status and words in str(ei.value), str(ei.value)


@pytest.mark.parametrize("kw,status,words", [
    # CheckA8W4AsymQuantParams, in its order (an (E, 1, N) offset turns it on)
    (dict(offset=[np.zeros((E, 1, N), np.float32)]), 161002, "output y dtype should be float16"),
    (dict(offset=[np.zeros((E, 1, N), np.float16)], output_dtype="float16"), 161002, "offset dtype does not match"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", bias=None), 161002,
     "bias must not be null"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", scale=None), 161002,
     "scale must not be null"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", pt=None), 161002,
     "perTokenScale must not be null"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", bias=BIAS.astype(np.float16)), 161002,
     "bias dtype does not match"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", scale=S), 161002,
     "scale dtype does not match with required dtype uint64"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", pt=PT.astype(np.float16)), 161002,
     "perTokenScale dtype does not match"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16",
          antiquant_scale=[np.zeros((E, N), np.float16)]), 161002, "antiquantScale must be nullptr"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16",
          antiquant_offset=[np.zeros((E, N), np.float16)]), 161002, "antiquantOffset must be nullptr"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", bias=BIAS[:, :2]), 161002,
     "bias shape is invalid"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16"), 161002, "scale shape is invalid"),
    (dict(offset=[np.zeros((E, 1, N), np.float32)], output_dtype="float16", scale=SW[:, :1]), 161002,
     "perTokenScale shape is invalid"),
    # the shape / group list checks A8W8 shares (checks.py)
    (dict(split_item=0), 161002, "splitItem should be 2/3"),
    (dict(act_type=1), 161002, "act_type 1 with A8W4 is not modelled"),
    (dict(x=X[:, :256]), 161002, "k dim value of x and weight is not matched"),
    (dict(gl=GL[:2]), 161002, "size of groupList(tensor) 2 should be equal to weight dim 0 3"),
    (dict(gl=GL.astype(np.int32)), 161002, "Only int64 is supported for groupList"),
    (dict(tuning_config=[M + 1]), 161002, "Invalid tuningConfigOptional"),
    (dict(w=W[:, :, :N - 1]), 161002, "weight's inner axis size[127] is not even!"),
    (dict(w=NzWeight.from_nd(W[:, :, :96].astype(ml_dtypes.int4), "int4"), scale=SW[:, :, :96],
          bias=BIAS[:, :96]), 161002, "should be divisible by the following shape"),
    (dict(output_dtype="int32"), 161002, "the A8W4 kernels write bfloat16 or float16"),
    (dict(output_dtype=None), 161002, "the A8W4 kernels write bfloat16 or float16"),
    (dict(w=np.swapaxes(W.astype(ml_dtypes.int4).swapaxes(1, 2).copy(), 1, 2)), 161002, "transposed weight"),
    (dict(scale=None), 161002, "scale must not be nullptr for A8W4"),
    (dict(scale=SW[:, 0]), 161002, "scale must be 3-D (E, G, N)"),
    (dict(tuning_config=[0, 1]), 161002, "AUTOTILING"),
    # GMMTiling::A8W4Tiling (tiling failures)
    (dict(scale=words(np.ones((E, 3, N), np.float32))), 561002, "k should be divisible by quantGroupNum"),
    (dict(x=X[:, :96], w=W[:, :96], scale=SW[:, :1]), 561002, "k should be divisible by 64"),
    (dict(x=np.zeros((M, 18496), np.int8), w=np.zeros((E, 18496, N), np.int8), scale=SW[:, :1]), 561002,
     "K should be less than 18432"),
    # PERCHANNEL_ANTIQUANT (per channel, N // (M // E) <= 4): the A8W8 tiling and its emulator-added needs
    (dict(scale=SW[:, :1, :8], gl=np.array([[0, 7], [1, 7], [2, 6]], np.int64), w=W[:, :, :8],
          group_list_type=2), 561002,
     "Only both x and weight dtype are int8 support groupListType is 2"),
    (dict(scale=S[:, :1, :8], w=W[:, :, :8]), 161002, "scale must be uint64 / int64 (E, 1, N)"),
    (dict(scale=SW[:, :1, :8], w=W[:, :, :8], pt=None), 161002, "forces the per-token epilogue"),
    (dict(scale=SW[:, :1, :8], w=W[:, :, :8], pt=PT[:3]), 161002, "per_token_scale must be float32 (M,)"),
    # emulator-added (the MSD kernel reads these unconditionally)
    (dict(group_list_type=0, gl=np.cumsum(GL)), 161002, "reads the group list as counts"),
    (dict(scale=S), 161002, "reads uint64 Fixpipe words"),
    (dict(scale=SW[:2]), 161002, "scale shape (2, 2, 128) must be (E, G, N)"),
    (dict(bias=None), 161002, "bias must not be nullptr for A8W4"),
    (dict(bias=BIAS.astype(np.float16)), 161002, "bias must be float32 (E, N)"),
    (dict(pt=None), 161002, "per_token_scale must not be nullptr for A8W4"),
    (dict(pt=PT[:5]), 161002, "per_token_scale must be float32 (M,)"),
    (dict(gl=np.array([7, 0, 14], np.int64)), 161002, "the groups cover 21 rows but x has 20"),
])
def test_checks(kw, status, words):
    _raises(status, words, **kw)


@pytest.mark.parametrize("out", ["bfloat16", "float16"])
def test_vector_dequant_template(out):
    """The white-listed (E, M, K, N, NZ) = (1, 16, 256, 512, NZ) with one 256-wide k group takes
    MSD_VECTOR_DEQUANT (golden_a8w4.grouped_matmul_a8w4_msd_vector); the same call with an ND weight takes
    MSD_API_DEQUANT, whose fp16 workspace and FP19 scale give other bits here."""
    x = RNG.integers(-128, 128, (16, 256)).astype(np.int8)
    wv = RNG.integers(-8, 8, (1, 256, 512)).astype(np.int8)
    sc = RNG.uniform(1e-3, 2e-2, (1, 1, 512)).astype(np.float32)
    sw = words(sc)
    sw = (sw.view(np.uint64) | np.uint64(0x1FFF)).view(np.int64)        # bits FP19 drops and this template keeps
    b, pt, gl = vllm_bias(wv, sc), RNG.uniform(0.01, 0.1, 16).astype(np.float32), np.array([16], np.int64)
    y = gmm(x=x, w=NzWeight.from_nd(wv.astype(ml_dtypes.int4), "int32"), scale=sw, bias=b, pt=pt, gl=gl,
            output_dtype=out)
    same_bits(y, grouped_matmul_a8w4_msd_vector(x, wv, sw, b, pt, gl, out))
    y_nd = gmm(x=x, w=wv, scale=sw, bias=b, pt=pt, gl=gl, output_dtype=out)
    same_bits(y_nd, grouped_matmul_a8w4_msd(x, wv, sw, b, pt, gl, out))
    assert not np.array_equal(np.asarray(y).view(np.uint16), np.asarray(y_nd).view(np.uint16))


def test_aclnn_status_and_null():
    out = np.zeros((M, N), ml_dtypes.bfloat16)
    st, _, _ = api.aclnnGroupedMatmulV4GetWorkspaceSize(**_lists(bias=None), out=[out],
                                                        activationFeatureOutOptional=None,
                                                        dynQuantScaleOutOptional=None)
    assert st == 161002 and "bias must not be nullptr" in aclGetRecentErrMsg()
    lists = _lists()
    lists["x"] = None
    st, _, _ = api.aclnnGroupedMatmulV4GetWorkspaceSize(**lists, out=[out], activationFeatureOutOptional=None,
                                                        dynQuantScaleOutOptional=None)
    assert st == 161001
    nz = NzWeight.from_nd(W.astype(ml_dtypes.int4), "int4")
    lists = _lists(w=nz)
    lists["groupType"] = 2
    st, _, _ = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(**lists, tuningConfigOptional=None, quantGroupSize=0,
                                                              out=[out], activationFeatureOutOptional=None,
                                                              dynQuantScaleOutOptional=None)
    assert st == 161002
    lists["groupType"] = 0
    st, _, _ = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(**lists, tuningConfigOptional=None, quantGroupSize=0,
                                                              out=[np.zeros((M, N), np.float32)],
                                                              activationFeatureOutOptional=None,
                                                              dynQuantScaleOutOptional=None)
    assert st == 161002 and "aclnnGroupedMatmulWeightNz takes y float16 / bfloat16" in aclGetRecentErrMsg()


def test_torch_binding_int32_weight():
    """torch.ops.npu.npu_grouped_matmul with torch_npu's operands (int32-packed weight, int64 scale words): the
    fake's y has 8x the weight's last dim, as op-plugin's; the values are the golden's."""
    torch = pytest.importorskip("torch")
    import npu_emu.torch  # noqa: F401
    from torch._subclasses.fake_tensor import FakeTensorMode

    op = torch.ops.npu.npu_grouped_matmul.default
    args = ([torch.from_numpy(X)], [torch.from_numpy(pack_int32(W))])
    kw = dict(scale=[torch.from_numpy(SW)], bias=[torch.from_numpy(BIAS)], per_token_scale=[torch.from_numpy(PT)],
              group_list=torch.from_numpy(GL), group_list_type=1, split_item=3, group_type=0,
              output_dtype=torch.bfloat16)
    y = op(*args, **kw)[0]
    ref = grouped_matmul_a8w4_msd(X, W, SW, BIAS, PT, GL, "bfloat16")
    assert y.dtype == torch.bfloat16
    assert np.array_equal(y.view(torch.int16).numpy().view(np.uint16), ref.view(np.uint16))
    with FakeTensorMode() as mode:
        fa = [[mode.from_tensor(t) for t in lst] for lst in args]
        fkw = {key: ([mode.from_tensor(t) for t in v] if isinstance(v, list) else
                     mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for key, v in kw.items()}
        fy = op(*fa, **fkw)[0]
    assert tuple(fy.shape) == (M, N) and fy.dtype == torch.bfloat16


def test_dask_rows_per_group_scale():
    """The A8W4 template follows M / E (and the white list names M), so the Dask front end keeps x's rows in one
    chunk (a warning says so) and gives the bits of one call."""
    da = pytest.importorskip("dask.array")
    from npu_emu import dask as nd

    with pytest.warns(Warning, match="A8W4"):
        y = nd.grouped_matmul(da.from_array(X, chunks=(6, K)), [W.astype(ml_dtypes.int4)], group_list=GL,
                              group_list_type=1, scale=[SW], bias=[BIAS], per_token_scale=[PT],
                              output_dtype="bfloat16")
    assert len(y.chunks[0]) == 1
    y = y.compute()
    same_bits(y, grouped_matmul_a8w4_msd(X, W, SW, BIAS, PT, GL, "bfloat16"))


def test_separated_weights_refused():
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([X], [W[0].astype(ml_dtypes.int4), W[1].astype(ml_dtypes.int4)], scale=[SW],
                               bias=[BIAS], per_token_scale=[PT], group_list=GL[:2], group_list_type=1,
                               split_item=3, group_type=0, output_dtype="bfloat16")
    assert ei.value.status == 161002 and "single tensors" in str(ei.value)


def test_first_k_group_is_a_plain_write():
    """k group 0 reaches the fp16 workspace by a plain write, so a -0.0 partial stays -0.0 (an atomic add onto a +0
    workspace would give +0.0). Per channel (one k group): x[0] = 31 (hi 1, lo 7), w[k = 0] = -1, other w 0, scale
    2^-40: both partials (-2^-40, -7 * 2^-40) are -0.0 in fp16, so v = -0 + -0 + bias (-0.0) = -0.0 and y = 0x8000."""
    x = np.zeros((1, 512), np.int8)
    x[0, 0] = 31
    w = np.zeros((1, 512, 128), np.int8)
    w[0, 0] = -1
    s = words(np.full((1, 1, 128), 2.0 ** -40, np.float32))
    b = np.full((1, 128), -0.0, np.float32)
    one, gl = np.ones(1, np.float32), np.array([1], np.int64)
    y = gmm(x=x, w=w, scale=s, bias=b, pt=one, gl=gl, output_dtype="float16")
    assert np.all(np.asarray(y).view(np.uint16) == 0x8000)
    same_bits(y, grouped_matmul_a8w4_msd(x, w, s, b, one, gl, "float16"))
