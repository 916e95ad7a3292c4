"""npu_grouped_matmul / aclnnGroupedMatmulV4/V5/WeightNz against the independent golden (bits), the per-core walk,
the host tiling and the checks (docs/ops/grouped_matmul.md)."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, golden, launch, tiling
from npu_emu.kernels.grouped_matmul import kernel as gk
from npu_emu.kernels.quant_matmul.api import NzWeight

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(37)
E, M, K, N = 4, 70, 96, 40


def _int8(shape, lo=-128, hi=128):
    return RNG.integers(lo, hi, shape, dtype=np.int8)


X = _int8((M, K))
W = _int8((E, K, N))
SCALE_BF16 = RNG.uniform(1e-3, 1e-2, (E, N)).astype(BF16)
SCALE_F32 = RNG.uniform(1e-3, 1e-2, (E, N)).astype(np.float32)
PT = RNG.uniform(1e-3, 1e-1, M).astype(np.float32)
BIAS_BF16 = RNG.uniform(-4, 4, (E, N)).astype(BF16)
BIAS_I32 = RNG.integers(-2**31, 2**31 - 1, (E, N), dtype=np.int64).astype(np.int32)


def gmm(x=X, w=W, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    return api.npu_grouped_matmul([x], [w], **kw)[0]


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    assert np.array_equal(a.view(u), b.view(u))


# ---- W8A8 -> int32 (split_item 3, the first GMM of the W8A8-dynamic MoE chain) -------------------------------

@pytest.mark.parametrize("gl,glt", [
    ([10, 10, 35, 70], 0),             # cumulative, an empty group
    ([5, 0, 40, 25], 1),               # counts
    ([0, 0, 0, 70], 0),                # every row in the last group
    ([[2, 30], [0, 11], [3, 29], [1, 0]], 2),   # sparse [e, 2]: (weight index, rows), stops at rows <= 0
])
def test_int32_bits(gl, glt):
    gl = np.array(gl, np.int64)
    y = gmm(group_list=gl, group_list_type=glt, output_dtype=np.int32)
    same_bits(y, golden.grouped_matmul_quant(X, W, gl, group_list_type=glt, out_dtype="int32"))


def test_int32_bias_wraps_like_the_int32_accumulator():
    gl = np.array([20, 40, 60, 70], np.int64)
    bias = np.full((E, N), 2**31 - 1, np.int32)
    bias[1] = BIAS_I32[1]
    y = gmm(group_list=gl, bias=[bias], output_dtype="int32")
    want = golden.grouped_matmul_quant(X, W, gl, bias=bias, out_dtype="int32")
    same_bits(y, want)
    big = X[:20].astype(np.int64) @ W[0].astype(np.int64) + bias[0].astype(np.int64)
    assert (big > 2**31 - 1).any()                     # the case really wraps


def test_rows_after_the_last_group():
    gl = np.array([10, 10, 25, 31], np.int64)           # x has 70 rows: 39 belong to no group
    y = gmm(group_list=gl, output_dtype=np.int32)
    assert not y[31:].any()                              # a fresh y: zeros there (docs §3.3)
    out = np.full((M, N), 12345, np.int32)
    st, ws, ex = api.aclnnGroupedMatmulV5GetWorkspaceSize(
        [X], [W], None, None, None, None, None, None, gl, None, None, None, 3, 0, 0, 0, None, [out])
    assert st == 0 and (out == 12345).all()
    assert api.aclnnGroupedMatmulV5(None, ws, ex) == 0
    assert (out[31:] == 12345).all()                     # an aclnn out keeps its bytes: the kernel never writes them
    same_bits(out[:31], y[:31])


# ---- W8A8 with per-channel scale (+ per-token scale) -> bf16 / fp16 ------------------------------------------

@pytest.mark.parametrize("pt,bias", [(True, None), (True, "bf16"), (True, "i32"), (False, None), (False, "i32")])
def test_bf16_out_bits(pt, bias):
    gl = np.array([7, 7, 50, 66], np.int64)
    b = {None: None, "bf16": BIAS_BF16, "i32": BIAS_I32 // 65536}[bias]
    kw = dict(scale=[SCALE_BF16], group_list=gl, output_dtype="bfloat16")
    if pt:
        kw["per_token_scale"] = [PT]
    if b is not None:
        kw["bias"] = [b]
    y = gmm(**kw)
    want = golden.grouped_matmul_quant(X, W, gl, scale=SCALE_BF16, per_token_scale=PT if pt else None, bias=b,
                                       out_dtype="bfloat16")
    same_bits(y, want)


def test_fp16_out_bits_counts():
    gl = np.array([16, 1, 0, 53], np.int64)
    y = gmm(scale=[SCALE_F32], per_token_scale=[PT], group_list=gl, group_list_type=1, output_dtype=np.float16)
    same_bits(y, golden.grouped_matmul_quant(X, W, gl, group_list_type=1, scale=SCALE_F32, per_token_scale=PT,
                                             out_dtype="float16"))


def test_results_do_not_depend_on_the_core_count():
    gl = np.array([3, 40, 41, 70], np.int64)
    kw = dict(scale=[SCALE_BF16], per_token_scale=[PT], bias=[BIAS_BF16], group_list=gl, output_dtype="bfloat16")
    ys = [gmm(core_num=c, **kw) for c in (1, 3, 24)]
    same_bits(ys[0], ys[1])
    same_bits(ys[0], ys[2])


def test_nz_weight_is_the_nd_weight():
    gl = np.array([9, 30, 31, 70], np.int64)
    w, sc = np.ascontiguousarray(W[..., :32]), np.ascontiguousarray(SCALE_BF16[:, :32])   # n a multiple of 32
    nz = NzWeight.from_nd(w)
    assert nz.storage.shape == (E, 1, K // 16, 16, 32)
    out = np.zeros((M, 32), BF16)
    st, ws, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(
        [X], [nz], None, [sc], None, None, None, [PT], gl, None, None, None, 3, 0, 0, 0, None, 0, [out])
    assert st == 0 and api.aclnnGroupedMatmulWeightNz(None, ws, ex) == 0
    same_bits(out, gmm(w=w, scale=[sc], per_token_scale=[PT], group_list=gl, output_dtype="bfloat16"))


def test_nz_weight_must_fill_whole_fractals():
    """TransWeightFormat: an int8 NZ weight needs k % 16 == 0 and n % 32 == 0 (N = 40 here), reversed when the
    weight is transposed."""
    with pytest.raises(AclnnError) as ei:
        gmm(w=NzWeight.from_nd(W), scale=[SCALE_BF16], per_token_scale=[PT], group_list=GL, output_dtype="bfloat16")
    assert ei.value.status == 161002 and "FRACTAL_NZ" in str(ei.value) and "n[40]" in str(ei.value)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    gl = np.array([10, 20, 30, 70], np.int64)
    y = api.npu_grouped_matmul([torch.from_numpy(X)], [torch.from_numpy(W)], group_list=torch.from_numpy(gl),
                               split_item=3, group_type=0, output_dtype=torch.int32)
    assert isinstance(y, list) and y[0].dtype == torch.int32 and tuple(y[0].shape) == (M, N)
    same_bits(y[0].numpy(), golden.grouped_matmul_quant(X, W, gl, out_dtype="int32"))


# ---- plain float ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", [BF16, np.float16])
def test_plain_float_exact_bits(dt):
    x = RNG.standard_normal((12, 40)).astype(dt)
    w = RNG.standard_normal((3, 40, 24)).astype(dt)
    bias = RNG.standard_normal((3, 24)).astype(np.float32 if dt == BF16 else np.float16)
    gl = np.array([3, 0, 9], np.int64)
    y = gmm(x, w, bias=[bias], group_list=gl, group_list_type=1)
    same_bits(y, golden.grouped_matmul_float(x, w, gl, group_list_type=1, bias=bias))


def test_plain_float_numpy_model_is_the_fp32_matmul():
    x = RNG.standard_normal((12, 40)).astype(BF16)
    w = RNG.standard_normal((2, 40, 24)).astype(BF16)
    gl = np.array([5, 12], np.int64)
    y = gmm(x, w, group_list=gl, float_accum="numpy")
    want = np.concatenate([x[:5].astype(np.float32) @ w[0].astype(np.float32),
                           x[5:].astype(np.float32) @ w[1].astype(np.float32)]).astype(BF16)
    same_bits(y, want)


# ---- the per-core walk (grouped_matmul.h Process / MNBlockIdxCompute) ------------------------------------------

def _tr(m, n, cores, single_m=None, k=64):
    s = tiling.GmmShape(group_num=3, m=m, k=k, n=n, x_dtype="int8", w_dtype="int8", y_dtype="int32")
    tr = tiling.grouped_matmul_tiling(s, core_num=cores)
    return tr


def test_walk_round_robin_carries_over_between_groups():
    tr = _tr(300, 600, 5)
    assert (tr.tiling.mmTilingData.baseM, tr.tiling.mmTilingData.baseN) == (128, 256)
    ent = (np.arange(3), np.array([0, 100, 100]), np.array([100, 0, 200]))
    tab = launch.block_table(tr, ent, 600)
    # group 0: 1 x 3 blocks numbered 0..2; group 2 (group 1 is empty): 2 x 3 blocks numbered 3..8
    blocks = {(int(g), int(mi), int(ni)): int(c) for c, g, mi, ni in tab}
    assert len(blocks) == len(tab) == 3 + 6
    assert [blocks[(0, 0, j)] for j in range(3)] == [0, 1, 2]
    assert [blocks[(2, i, j)] for i in range(2) for j in range(3)] == [3, 4, 0, 1, 2, 3]


def test_diagonal_walk_is_a_permutation():
    # dav-c220: more than 5 block rows -> the diagonal order of MNBlockIdxCompute
    for dim_m, dim_n in ((6, 1), (9, 3), (17, 10), (40, 7)):
        seen = {gk.block_idx(c, 0, dim_m, dim_n, 5) for c in range(dim_m * dim_n)}
        assert seen == {(i, j) for i in range(dim_m) for j in range(dim_n)}
    assert gk.block_idx(1, 0, 9, 3, 5) != (0, 1)                    # not row-major
    assert [gk.block_idx(c, 0, 9, 3, 1) for c in range(3)] == [(0, 0), (0, 1), (0, 2)]


def test_tiling_figures():
    tr = _tr(4096, 2048, None, k=7168)
    td = tr.tiling
    assert (td.mmTilingData.baseM, td.mmTilingData.baseN, td.mmTilingData.baseK) == (128, 256, 128)
    assert td.gmmBaseParams.coreNum == 24 and td.gmmBaseParams.singleN == 0
    s = tiling.GmmShape(group_num=8, m=4096, k=7168, n=2048, x_dtype="int8", w_dtype="int8", y_dtype="bfloat16",
                        scale_dtype="bfloat16", per_token=True)
    td = tiling.grouped_matmul_tiling(s).tiling
    # (196352 - (256 * 2 + 128 * 4) * 2) // 28 // 2048 * 2048
    assert td.gmmBaseParams.ubCalSize == 6144 and launch.vec_base_m(tiling.grouped_matmul_tiling(s).tiling) == 24
    # NZ weight with few tokens per expert: FindBestSingleNPertoken
    s = tiling.GmmShape(group_num=8, m=64, k=7168, n=2048, x_dtype="int8", w_dtype="int8", y_dtype="bfloat16",
                        scale_dtype="bfloat16", per_token=True, weight_nz=True)
    assert tiling.grouped_matmul_tiling(s).tiling.gmmBaseParams.singleN == 1024
    bf = tiling.GmmShape(group_num=2, m=50, k=64, n=64, x_dtype="bfloat16", w_dtype="bfloat16", y_dtype="bfloat16")
    td = tiling.grouped_matmul_tiling(bf).tiling
    assert (td.mmTilingData.baseM, td.mmTilingData.baseK) == (64, 64)   # baseM capped at SixteenAlign(maxM, up)


# ---- checks ---------------------------------------------------------------------------------------------------

GL = np.array([10, 20, 30, 70], np.int64)


@pytest.mark.parametrize("kw,code,words", [
    (dict(group_list=np.array([10, 5, 30, 70])), 161002, "incremental"),
    (dict(group_list=np.array([10, 5, -1, 70]), group_list_type=1), 161002, "non-negative"),
    (dict(group_list=np.array([10, 20, 30, 71])), 161002, "x has 70"),
    (dict(group_list=np.array([10, 20, 70])), 161002, "weight dim 0"),
    (dict(group_list=GL.astype(np.int32)), 161002, "int64"),
    (dict(group_list=None), 161002, "required"),
    (dict(group_list=GL, scale=[SCALE_F32], output_dtype="bfloat16"), 161002, "bfloat16"),
    (dict(group_list=GL, scale=[SCALE_BF16], per_token_scale=[PT[:5]], output_dtype="bfloat16"), 161002, "MDim"),
    (dict(group_list=GL, output_dtype="bfloat16"), 161002, "scale must not be nullptr"),
    (dict(group_list=GL, scale=[SCALE_BF16], offset=[SCALE_F32], output_dtype="bfloat16"), 161002, "offset"),
    (dict(group_list=GL, scale=[SCALE_BF16], bias=[BIAS_BF16], output_dtype="bfloat16"), 161002, "per_token"),
    (dict(group_list=GL, output_dtype="int8"), 161002, "scale must not be nullptr"),
    (dict(group_list=GL, output_dtype="int32", split_item=0, group_type=-1), 161002, "nullptr when groupType is -1"),
    (dict(group_list=GL, output_dtype="int32", split_item=2, group_type=-1), 161002, "groupType can not be -1"),
    (dict(group_list=GL, output_dtype="int32", split_item=3, group_type=1), 161002, "can not be 1"),
    (dict(group_list=GL, output_dtype="int32", act_type=1), 161002, "int32 dose not support activation"),
    (dict(group_list=GL, output_dtype="int32", tuning_config=[71]), 161002, "tuningConfig"),
    (dict(group_list=np.array([[5, 3], [0, 2], [1, 0], [2, 0]]), group_list_type=2, output_dtype="int32"), 161002,
     "weight index"),
])
def test_errors(kw, code, words):
    kw.setdefault("output_dtype", "int32")
    with pytest.raises(AclnnError) as ei:
        gmm(**kw)
    assert ei.value.status == code and words in str(ei.value)


def test_null_and_dtype_pattern():
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul(None, [W], group_list=GL, split_item=3, group_type=0)
    assert ei.value.status == 161001
    with pytest.raises(AclnnError) as ei:        # CheckNotNull: a null entry of a list is PARAM_INVALID
        api.npu_grouped_matmul([None], [W], group_list=GL, split_item=3, group_type=0)
    assert ei.value.status == 161002 and "x[0] is None" in str(ei.value)
    with pytest.raises(AclnnError) as ei:
        gmm(X.astype(np.float16), W, group_list=GL)
    assert ei.value.status == 161002 and "antiquant" in str(ei.value)
    with pytest.raises(AclnnError) as ei:
        gmm(X.astype(np.float32), W.astype(np.float16), group_list=GL)
    assert ei.value.status == 161002 and "no matching" in str(ei.value)


def test_aclnn_errors_leave_out_untouched():
    out = np.full((M, N), 7, np.int32)
    st, _, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [X], [W], None, None, None, None, None, None, np.array([10, 5, 30, 70]), None, None, None, 3, 0, 0, 0, [out])
    assert st == 161002 and ex is None and (out == 7).all()
    st, _, _ = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [X], [W], None, None, None, None, None, None, GL, None, None, None, 3, 0, 0, 0,
        [np.zeros((M, N + 1), np.int32)])
    assert st == 161002
    st, _, _ = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(
        [X], [W], None, None, None, None, None, None, GL, None, None, None, 3, 0, 0, 0, None, 0, [out])
    assert st == 161002
