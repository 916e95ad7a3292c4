"""The tensor-list forms of npu_grouped_matmul / aclnnGroupedMatmulV4 (docs/ops/grouped_matmul.md §2.1) against the
independent golden (bits), and CANN's refusals of the combinations it does not accept."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, golden

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(737)
E, K, N = 3, 48, 40
SIZES = [9, 0, 21]
M = sum(SIZES)


def i8(shape):
    return RNG.integers(-128, 128, shape, dtype=np.int16).astype(np.int8)


X = i8((M, K))
W = i8((E, K, N))
SCALE = RNG.uniform(1e-3, 1e-2, (E, N)).astype(BF16)
PT = RNG.uniform(1e-2, 1e-1, M).astype(np.float32)
BIAS = RNG.integers(-1000, 1000, (E, N)).astype(np.int32)
COUNTS = np.array(SIZES, np.int64)


def u(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def same(a, b):
    assert np.asarray(a).shape == np.asarray(b).shape
    assert np.array_equal(u(a), u(b))


def test_separated_weights_single_x_single_y():
    ys = api.npu_grouped_matmul([X], list(W), scale=list(SCALE), per_token_scale=[PT], group_list=COUNTS,
                                group_list_type=1, split_item=3, group_type=0, output_dtype="bfloat16")
    assert len(ys) == 1
    same(ys[0], golden.grouped_matmul_quant(X, W, COUNTS, group_list_type=1, scale=SCALE, per_token_scale=PT,
                                            out_dtype="bfloat16"))


def test_separated_weights_take_one_dimensional_scales_only():
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([X], list(W), scale=[SCALE], group_list=COUNTS, group_list_type=1, split_item=3,
                               group_type=0, output_dtype="bfloat16")
    assert ei.value.status == 161002 and "scale size[1] must be equal with weight size[3]" in str(ei.value)
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([X], list(W), scale=list(SCALE[:, None]), group_list=COUNTS, group_list_type=1,
                               split_item=3, group_type=0, output_dtype="bfloat16")
    assert ei.value.status == 161002 and "scale Dim must be 1" in str(ei.value)


@pytest.mark.parametrize("gl,glt", [(None, 0), (np.cumsum(SIZES), 0), (COUNTS, 1)])
def test_separated_x_and_weights_single_y(gl, glt):
    xs = np.split(X, np.cumsum(SIZES)[:-1])
    ys = api.npu_grouped_matmul(xs, list(W), bias=list(BIAS), group_list=gl, group_list_type=glt, split_item=2,
                                group_type=0, output_dtype="int32")
    same(ys[0], golden.grouped_matmul_quant(X, W, COUNTS, group_list_type=1, bias=BIAS, out_dtype="int32"))


def test_separated_x_refuses_a_disagreeing_group_list_and_per_token_scales():
    xs = np.split(X, np.cumsum(SIZES)[:-1])
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul(xs, list(W), group_list=np.array([9, 9, 31]), split_item=3, group_type=0,
                               output_dtype="int32")
    assert ei.value.status == 161002 and "does not describe the rows" in str(ei.value)
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul(xs, list(W), scale=list(SCALE), per_token_scale=[PT], split_item=3, group_type=0,
                               output_dtype="bfloat16")
    assert ei.value.status == 161002 and "Per-token quant case is only supported" in str(ei.value)


def test_no_split_lists_of_x_weight_y():
    xs = [i8((4, 16)), i8((2, 3, 32)), i8((0, 8))]
    ws = [i8((16, 24)), i8((32, 8)), i8((8, 16))]
    ys = api.npu_grouped_matmul(xs, ws, split_item=0, group_type=-1, output_dtype="int32")
    assert [y.shape for y in ys] == [(4, 24), (2, 3, 8), (0, 16)]
    for x, w, y in zip(xs, ws, ys):
        x2 = x.reshape(-1, x.shape[-1])
        want = golden.grouped_matmul_quant(x2, w[None], np.array([x2.shape[0]]), group_list_type=1,
                                           out_dtype="int32")
        same(y, want.reshape(y.shape))


def test_no_split_per_channel_bf16():
    xs = [i8((5, 16)), i8((7, 16))]
    ws = [i8((16, 32)), i8((16, 32))]
    sc = [RNG.uniform(1e-3, 1e-2, 32).astype(BF16) for _ in range(2)]
    ys = api.npu_grouped_matmul(xs, ws, scale=sc, split_item=1, group_type=-1, output_dtype="bfloat16")
    for x, w, s, y in zip(xs, ws, sc, ys):
        same(y, golden.grouped_matmul_quant(x, w[None], np.array([x.shape[0]]), group_list_type=1, scale=s[None],
                                            out_dtype="bfloat16"))


@pytest.mark.parametrize("glt", [0, 1])
def test_split_k_plain_bf16(glt):
    m, k, n = 6, 40, 24
    x = RNG.standard_normal((m, k)).astype(BF16)
    w = RNG.standard_normal((k, n)).astype(BF16)
    sizes = [16, 0, 20]                                         # an empty group; K values 36.. belong to no group
    gl = np.array(np.cumsum(sizes) if glt == 0 else sizes, np.int64)
    y = api.npu_grouped_matmul([x], [w], group_list=gl, group_list_type=glt, split_item=3, group_type=2)
    assert len(y) == 1 and y[0].shape == (3, m, n)
    k0 = 0
    for e, kg in enumerate(sizes):
        want = golden.grouped_matmul_float(x[:, k0:k0 + kg], w[None, k0:k0 + kg], np.array([m]), group_list_type=1)
        same(y[0][e], want)                                     # an empty K range gives zeros
        k0 += kg


@pytest.mark.parametrize("kw,words", [
    (dict(x=[X], weight=[W[0]], output_dtype="int32", group_list=np.array([48])), "quant cases do not support"),
    (dict(x=[X[:, :8].astype(BF16)], weight=[W[0, :8].astype(BF16)], group_list=np.array([8, 9])), "cover 9"),
    (dict(x=[X[:, :8].astype(BF16)], weight=[W[0, :8].astype(BF16)], group_list=np.array([5, 3])), "incremental"),
    (dict(x=[X.astype(BF16)] * 2, weight=[W[0].astype(BF16)] * 2, group_list=np.array([8, 9])), "unseparated x"),
    (dict(x=[X.astype(BF16)], weight=[W[0].astype(BF16)], group_list=None), "required"),
    (dict(x=[X.astype(BF16)], weight=[W[0].astype(BF16)], group_list=np.array([8]),
          bias=[np.zeros(N, np.float32)]), "bias must be empty"),
])
def test_split_k_refusals(kw, words):
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul(split_item=3, group_type=2, **kw)
    assert ei.value.status == 161002 and words in str(ei.value), str(ei.value)


def _v4(xs, ws, outs, gl, split_item, group_type, glt=0):
    return api.aclnnGroupedMatmulV4GetWorkspaceSize(xs, ws, None, None, None, None, None, None, gl, None, None, None,
                                                    split_item, group_type, glt, 0, outs)


def test_aclnn_refuses_single_x_separated_weight_separated_y_with_a_tensor_group_list():
    outs = [np.zeros((s, N), np.int32) for s in SIZES]
    st, _, ex = _v4([X], list(W), outs, COUNTS, 0, 0, 1)
    assert st == 161002 and ex is None


def test_aclnn_no_split_writes_every_out_only_at_the_end():
    xs = [i8((4, 16)), i8((6, 16))]
    ws = [i8((16, 8)), i8((16, 8))]
    outs = [np.full((4, 8), 5, np.int32), np.full((6, 8), 5, np.int32)]
    st, size, ex = _v4(xs, ws, outs, None, 0, -1)
    assert st == 0 and (outs[0] == 5).all()
    assert api.aclnnGroupedMatmulV4(None, size, ex) == 0
    for x, w, o in zip(xs, ws, outs):
        same(o, (x.astype(np.int64) @ w.astype(np.int64)).astype(np.int32))
    bad = [np.zeros((4, 8), np.int32), np.zeros((6, 9), np.int32)]
    st, _, _ = _v4(xs, ws, bad, None, 0, -1)
    assert st == 161002 and not bad[0].any()


def test_aclnn_split_m_keeps_the_rows_after_the_last_group():
    out = np.full((M + 5, N), 7, np.int32)
    x = np.concatenate([X, i8((5, K))])
    st, size, ex = _v4([x], [W], [out], np.cumsum(SIZES).astype(np.int64), 3, 0)
    assert st == 0 and api.aclnnGroupedMatmulV4(None, size, ex) == 0
    same(out[:M], golden.grouped_matmul_quant(X, W, COUNTS, group_list_type=1, out_dtype="int32"))
    assert (out[M:] == 7).all()
