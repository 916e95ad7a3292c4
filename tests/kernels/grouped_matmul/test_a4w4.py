"""GroupedMatmul A4W4 (int4 x, int4 weight, uint64 FixPipe scales, fp16 workspace) against the independent golden
(bits), hand-derived workspace roundings, the int4 storage forms, the aclnn and torch entries and every check
(docs/ops/grouped_matmul.md §14)."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api
from npu_emu.kernels.grouped_matmul.golden_a4w4 import grouped_matmul_a4w4
from npu_emu.kernels.quant_matmul.trans_quant_param import trans_quant_param
from npu_emu.kernels.quant_matmul.weight_nz import NzWeight

RNG = np.random.default_rng(44)
E, M, K, N, G = 4, 70, 128, 48, 4
XV = RNG.integers(-8, 8, (M, K)).astype(np.int8)
WV = RNG.integers(-8, 8, (E, K, N)).astype(np.int8)
X = XV.astype(ml_dtypes.int4)
W = WV.astype(ml_dtypes.int4)
# scales that put the FixPipe values on many fp16 binades (each K group's |acc| is at most 32 * 64)
SC_G = trans_quant_param(RNG.uniform(-0.3, 0.3, (E * G, N)).astype(np.float32)).reshape(E, G, N)
SC_C = trans_quant_param(RNG.uniform(-0.05, 0.05, (E * N,)).astype(np.float32)).reshape(E, N)
PT = RNG.uniform(0.25, 3.0, M).astype(np.float32)
GL = np.array([10, 10, 41, 63], np.int64)              # group 1 empty, rows 63.. after the last group
GL_COUNTS = np.array([0, 25, 30, 5], np.int64)         # group 0 empty


def gmm(x=X, w=W, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list", GL)
    kw.setdefault("scale", [SC_G])
    kw.setdefault("per_token_scale", [PT])
    kw.setdefault("output_dtype", "bfloat16")
    return api.npu_grouped_matmul([x], [w], **kw)[0]


def same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.array_equal(np.asarray(a).view(np.uint16), np.asarray(b).view(np.uint16))


def pack_int32(v):
    """int4 values (..., K), K % 8 == 0 -> INT32 words of 8, the first value in the low nibble."""
    nib = (np.asarray(v).astype(np.int64) & 0xF).reshape(v.shape[:-1] + (-1, 8))
    return (nib << (4 * np.arange(8))).sum(axis=-1).astype(np.uint32).view(np.int32)


def pack_bytes(v):
    nib = (np.asarray(v).astype(np.int64) & 0xF).reshape(v.shape[:-1] + (-1, 2))
    return (nib[..., 0] | (nib[..., 1] << 4)).astype(np.uint8)


@pytest.mark.parametrize("scale", [SC_C, SC_G], ids=["per_channel", "per_group"])
@pytest.mark.parametrize("out", ["bfloat16", "float16"])
@pytest.mark.parametrize("glt,gl", [(0, GL), (1, GL_COUNTS)], ids=["cumsum", "counts"])
def test_a4w4_bits(scale, out, glt, gl):
    y = gmm(scale=[scale], group_list=gl, group_list_type=glt, output_dtype=out)
    g = grouped_matmul_a4w4(X, W, scale, PT, gl, group_list_type=glt, out_dtype=out)
    same_bits(y, g)
    covered = int(gl[-1]) if glt == 0 else int(gl.sum())
    assert (np.asarray(y[covered:], np.float32) == 0).all()        # rows of no group: a fresh y holds zeros
    assert np.unique(np.asarray(y[:covered]).view(np.uint16)).size > 1000       # the values spread


def test_fp16_workspace_rounds_after_every_k_group():
    """Per group G = 3 (K = 6): x row = (-8, 0, 1, 0, 1, 0), weight column 0 = -8 at k 0, 1 at k 2 and k 4; scales 32,
    1, 1. K group 0 writes f16(64 * 32) = 2048; each later K group adds 1: 2048 + 1 is a tie between 2048 and 2050
    (fp16's step there is 2) and rounds to the even 2048, twice. Float32 accumulation would give 2050 (0x6801)."""
    x = np.array([[-8, 0, 1, 0, 1, 0]], np.int8).astype(ml_dtypes.int4)
    w = np.zeros((1, 6, 8), np.int8)
    w[0, 0, 0], w[0, 2, 0], w[0, 4, 0] = -8, 1, 1
    s = trans_quant_param(np.array([32.0, 1.0, 1.0], np.float32)[:, None].repeat(8, 1)).reshape(1, 3, 8)
    y = api.npu_grouped_matmul([x], [w.astype(ml_dtypes.int4)], scale=[s], per_token_scale=[np.ones(1, np.float32)],
                               group_list=np.array([1], np.int64), split_item=3, group_type=0,
                               output_dtype="float16")[0]
    assert int(y.view(np.uint16)[0, 0]) == 0x6800                  # 2048.0


def test_k_group_0_is_written_not_added():
    """acc 0 with a negative scale: the FixPipe writes -0 (0x8000) for K group 0 (enAtomic 0); an atomic add onto a
    zeroed workspace would give +0. -0 times the per-token scale 2 is -0 in y."""
    x = np.zeros((1, 8), np.int8).astype(ml_dtypes.int4)
    w = np.ones((1, 8, 8), np.int8).astype(ml_dtypes.int4)
    s = trans_quant_param(np.full(8, -0.5, np.float32)).reshape(1, 8)
    y = api.npu_grouped_matmul([x], [w], scale=[s], per_token_scale=[np.full(1, 2.0, np.float32)],
                               group_list=np.array([1], np.int64), split_item=3, group_type=0,
                               output_dtype="bfloat16")[0]
    assert (y.view(np.uint16) == 0x8000).all()


def test_scale_is_the_t19_of_the_word():
    """scale 1 + 2^-20 reaches the FixPipe as 1.0 (its low 13 mantissa bits cleared): acc 1 -> 1.0 exactly."""
    x = np.zeros((1, 8), np.int8)
    x[0, 0] = 1
    w = np.zeros((1, 8, 8), np.int8)
    w[0, 0] = 1
    s = np.full((1, 8), np.float32(1.0 + 2.0**-20).view(np.uint32), np.uint64)
    y = api.npu_grouped_matmul([x.astype(ml_dtypes.int4)], [w.astype(ml_dtypes.int4)], scale=[s],
                               per_token_scale=[np.full(1, 1.0 + 2.0**-10, np.float32)],
                               group_list=np.array([1], np.int64), split_item=3, group_type=0,
                               output_dtype="float16")[0]
    assert (y.view(np.uint16) == np.float16(1.0 + 2.0**-10).view(np.uint16)).all()


def test_int4_storage_forms_give_the_same_bits():
    """INT32 words of 8 (torch_npu's storage: npu_dynamic_quant(dst_type=quint4x2), aclnn's UnpackInt32ToInt4) for
    x and weight, as they are or relabelled with x_dtype / weight_dtype; uint8 bytes of 2 relabelled; mixed."""
    ref = gmm()
    x32, w32 = pack_int32(XV), pack_int32(WV)
    same_bits(gmm(x=x32, w=w32), ref)
    same_bits(gmm(x=x32, w=w32, x_dtype="int4", weight_dtype="int4"), ref)
    same_bits(gmm(x=pack_bytes(XV), w=pack_bytes(WV), x_dtype=29, weight_dtype="quint4x2"), ref)
    same_bits(gmm(x=x32, w=W, x_dtype="quint4x2"), ref)


def test_aclnn_v4_keeps_rows_after_the_last_group_and_errors_leave_out_untouched():
    out = np.full((M, N), 7, ml_dtypes.bfloat16)
    st, ws, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [pack_int32(XV)], [pack_int32(WV)], None, [SC_G], None, None, None, [PT], GL, None, None, None, 3, 0, 0, 0,
        [out])
    assert st == 0
    assert api.aclnnGroupedMatmulV4(None, ws, ex) == 0
    same_bits(out, grouped_matmul_a4w4(X, W, SC_G, PT, GL, out_dtype="bfloat16", fill=7))
    bad = np.full((M, N), 7, ml_dtypes.bfloat16)
    st, _, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [X], [W], None, [np.ones((E, G, N), np.float32)], None, None, None, [PT], GL, None, None, None, 3, 0, 0, 0,
        [bad])
    assert st == 161002 and ex is None and (np.asarray(bad, np.float32) == 7).all()


def test_aclnn_v5_float16_counts():
    out = np.zeros((M, N), np.float16)
    st, ws, ex = api.aclnnGroupedMatmulV5GetWorkspaceSize(
        [X], [W], None, [SC_C], None, None, None, [PT], GL_COUNTS, None, None, None, 3, 0, 1, 0, None, [out])
    assert st == 0 and api.aclnnGroupedMatmulV5(None, ws, ex) == 0
    same_bits(out, grouped_matmul_a4w4(X, W, SC_C, PT, GL_COUNTS, group_list_type=1, out_dtype="float16"))


def test_torch_int32_packed():
    torch = pytest.importorskip("torch")
    y = api.npu_grouped_matmul([torch.from_numpy(pack_int32(XV))], [torch.from_numpy(pack_int32(WV))],
                               scale=[torch.from_numpy(SC_G)], per_token_scale=[torch.from_numpy(PT)],
                               group_list=torch.from_numpy(GL), split_item=3, group_type=0,
                               output_dtype=torch.bfloat16, x_dtype=torch.quint4x2, weight_dtype=torch.quint4x2)[0]
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16
    same_bits(y.view(torch.int16).numpy(), grouped_matmul_a4w4(X, W, SC_G, PT, GL).view(np.int16))


def test_int64_words_are_taken_as_uint64():
    """The aclnn entry relabels every INT64 scale tensor UINT64 before its checks (torch_npu's
    npu_trans_quant_param returns int64): the same words give the same bits."""
    same_bits(gmm(scale=[SC_G.view(np.int64)]), gmm())


def test_core_count_does_not_change_the_bits():
    same_bits(gmm(core_num=3), gmm())


def test_trace_names_the_mode():
    _, tr = api.npu_grouped_matmul([X], [W], scale=[SC_G], per_token_scale=[PT], group_list=GL, split_item=3,
                                   group_type=0, output_dtype="bfloat16", trace=True)
    assert tr.quant_mode == "a4w4:int4xint4->bfloat16"
    assert any("fp16 workspace" in s for s in tr.notes)


_PT1 = [np.ones(M, np.float32)]


@pytest.mark.parametrize("kw,words", [
    (dict(group_list_type=2, group_list=np.array([[0, 5], [1, 5]], np.int64)),
     "groupListType only support 0 or 1, but now is 2"),
    (dict(output_dtype="int32"), "output y dtype should be float16 or bfloat16, current dtype is int32"),
    (dict(output_dtype=None), "output y dtype should be float16 or bfloat16, current dtype is int4"),
    (dict(offset=[np.zeros((E, N), np.float32)]), "offset must be null"),
    (dict(bias=[np.zeros((E, N), np.float32)]), "bias must be null"),
    (dict(scale=None), "scale must not be null"),
    (dict(scale=[np.ones((E, N), np.float32)]), "required dtype uint64, current dtype is float32"),
    (dict(per_token_scale=[PT.astype(np.float16)]), "perTokenScale dtype does not match with required dtype float32"),
    (dict(per_token_scale=[PT[:, None]]), "perTokenScaleOptional dim num must be 1"),
    (dict(per_token_scale=[PT[:-1]]), f"MDim[{M - 1}] of perTokenScaleOptional should be equal with MDim[{M}]"),
    (dict(scale=[SC_G[None]]), "scale dim only support 2/3 for perchannel/pergroup, but now is 4"),
    (dict(scale=[SC_C[:, :44]]), "A4W4 n axis should align with 16, but now is 44"),
    (dict(scale=[np.ones((E, 3, N), np.uint64)]), "k needs to be divisible by G,but now k is 128, G is 3"),
    (dict(scale=[np.ones((E, 0, N), np.uint64)]), "G is 0"),
    (dict(scale=[np.ones((E, 128, N), np.uint64)]), "pergroup num(k/G) needs to be divisible by 2, but now "
                                                     "pergroupNum is 1"),
    (dict(antiquant_scale=[np.ones((E, N), np.float16)]), "Detected quant, but antiquant inputs is not empty!"),
    (dict(group_type=2, group_list=np.array([64, 128], np.int64)), "A4W4 only support split m"),
    (dict(per_token_scale=None), "emulator-added"),
    (dict(scale=[SC_G[:3]]), "scale must have shape (4, 4, 48)"),
    (dict(scale=[SC_C[:, :40]]), "scale must have shape (4, 48)"),
    (dict(split_item=0), "split_item=0"),
    (dict(group_list=GL[:3]), "size of groupList(tensor) 3 should be equal to weight dim 0 4"),
    (dict(group_list=GL.astype(np.int32)), "Only int64 is supported for groupList"),
    (dict(group_list=np.array([10, 5, 41, 63], np.int64)), "non-negative and incremental"),
    (dict(act_type=1), "act_type=1"),
    (dict(tiling={}), "tiling= is not modelled for A4W4"),
    (dict(soc="ascend950pr"), "qgmm_s4s4_kernel.h"),
])
def test_a4w4_errors(kw, words):
    with pytest.raises(AclnnError) as ei:
        gmm(**kw)
    assert ei.value.status == 161002 and words in str(ei.value)


def test_a4w4_weight_errors():
    with pytest.raises(AclnnError, match="k dim value of x and weight is not matched"):
        gmm(w=W[:, :64])
    with pytest.raises(AclnnError, match="weight's inner axis size"):
        gmm(w=np.zeros((E, K, 7), np.int8).astype(ml_dtypes.int4), scale=[np.ones((E, 8), np.uint64)])
    with pytest.raises(AclnnError, match="transB false"):
        gmm(w=np.ascontiguousarray(np.swapaxes(W, 1, 2)).transpose(0, 2, 1))
    with pytest.raises(AclnnError, match=r"should be divisible by the following shape: INT8:\[16, 32\]"):
        gmm(w=NzWeight.from_nd(WV, "int4"))                         # N 48: not whole (16, 64) int4 fractals
    with pytest.raises(AclnnError, match="per-token quant case is only supported when x, weight and y are all single"):
        api.npu_grouped_matmul([X[:30], X[30:]], [W[0], W[1]], scale=[SC_C[0], SC_C[1]], per_token_scale=[PT],
                               split_item=3, group_type=0, output_dtype="bfloat16")


def test_torch_ops_binding_and_fake():
    """torch.ops.npu.npu_grouped_matmul with INT32 x / weight (no dtype arguments: aclnn unpacks INT32 as int4): the
    fake's y has N = 8 x the weight's last dim (op-plugin's rule for an INT32 weight) and the bits are the golden's."""
    torch = pytest.importorskip("torch")
    import npu_emu.torch  # noqa: F401
    from torch._subclasses.fake_tensor import FakeTensorMode

    op = torch.ops.npu.npu_grouped_matmul.default
    args = ([torch.from_numpy(pack_int32(XV))], [torch.from_numpy(pack_int32(WV))])
    kw = dict(scale=[torch.from_numpy(SC_G)], per_token_scale=[torch.from_numpy(PT)], group_list=torch.from_numpy(GL),
              split_item=3, group_type=0, output_dtype=torch.float16)
    y = op(*args, **kw)[0]
    same_bits(y.numpy(), grouped_matmul_a4w4(X, W, SC_G, PT, GL, out_dtype="float16"))
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fa = [[mode.from_tensor(t) for t in lst] for lst in args]
        fk = {k: ([mode.from_tensor(t) for t in v] if isinstance(v, list) else
                  mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
        fake = op(*fa, **fk)[0]
    assert (tuple(fake.shape), fake.dtype) == ((M, N), torch.float16)


def test_dask_rows_cut_groups():
    """npu_emu.dask.grouped_matmul: row chunks of 16 cut the groups; each chunk's call gives its rows' bits."""
    da = pytest.importorskip("dask.array")
    import npu_emu.dask as nd

    y = nd.grouped_matmul(da.from_array(X, chunks=(16, K)), [W], group_list=GL, scale=[SC_G], per_token_scale=PT,
                          output_dtype="bfloat16").compute()
    g = grouped_matmul_a4w4(X, W, SC_G, PT, GL)
    same_bits(y[:int(GL[-1])], g[:int(GL[-1])])


def test_nz_weight_v4_and_weight_nz():
    """A FRACTAL_NZ int4 weight (NzWeight, two values a byte, c0 64 values) changes where the cube finds a value, not
    the value: the bits of the ND weight, through npu_grouped_matmul and aclnnGroupedMatmulWeightNz."""
    n = 64
    w = RNG.integers(-8, 8, (E, K, n)).astype(np.int8).astype(ml_dtypes.int4)
    s = trans_quant_param(RNG.uniform(-0.3, 0.3, (E * G, n)).astype(np.float32)).reshape(E, G, n)
    g = grouped_matmul_a4w4(X, w, s, PT, GL, out_dtype="float16")
    same_bits(gmm(w=NzWeight.from_nd(w, "int4"), scale=[s], output_dtype="float16"), g)
    out = np.zeros((M, n), np.float16)
    st, ws, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(
        [X], [NzWeight.from_nd(w, "int4")], None, [s], None, None, None, [PT], GL, None, None, None, 3, 0, 0, 0, None,
        0, [out])
    assert st == 0 and api.aclnnGroupedMatmulWeightNz(None, ws, ex) == 0
    same_bits(out[:int(GL[-1])], g[:int(GL[-1])])
