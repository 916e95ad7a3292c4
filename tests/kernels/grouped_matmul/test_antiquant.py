"""GroupedMatmul antiquant (W8A16 / W4A16, docs/ops/grouped_matmul.md §11) against the independent golden (bits):
the AscendAntiQuant weight prologue, then the plain float cube; and the checks of CheckGroupedMatmulAntiQuant."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, golden, golden_modes

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(816)
E, M, K, N = 3, 30, 64, 24
GL = np.array([7, 7, 25], np.int64)
W8 = RNG.integers(-128, 128, (E, K, N)).astype(np.int8)
W4 = RNG.integers(-8, 8, (E, K, N)).astype(ml_dtypes.int4)


def _x(dt):
    return RNG.standard_normal((M, K)).astype(dt)


def _params(dt, shape):
    return (RNG.uniform(0.001, 0.05, shape).astype(dt), RNG.uniform(-3, 3, shape).astype(dt))


def gmm(x, w, s, o, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list", GL)
    return api.npu_grouped_matmul([x], [w], antiquant_scale=None if s is None else [s],
                                  antiquant_offset=None if o is None else [o], **kw)[0]


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize
    assert np.array_equal(a.view(np.uint16), b.view(np.uint16))


@pytest.mark.parametrize("dt,name", [(BF16, "bfloat16"), (np.float16, "float16")])
def test_w8a16_per_channel_bits(dt, name):
    x = _x(dt)
    s, o = _params(dt, (E, N))
    y = gmm(x, W8, s, o)
    wq = golden_modes.antiquant_weight(W8, s, o, name)
    same_bits(y, golden.grouped_matmul_float(x, wq, GL))


@pytest.mark.parametrize("dt,name", [(BF16, "bfloat16"), (np.float16, "float16")])
def test_w4a16_per_group_bits_and_bias(dt, name):
    x = _x(dt)
    s, o = _params(dt, (E, 4, N))                   # 4 groups of 16 along K
    bias = RNG.uniform(-1, 1, (E, N)).astype(np.float32 if name == "bfloat16" else np.float16)
    y = gmm(x, W4, s, o, bias=[bias])
    wq = golden_modes.antiquant_weight(W4, s, o, name)
    same_bits(y, golden.grouped_matmul_float(x, wq, GL, bias=bias))


def test_weight_prologue_bits_alone():
    # the dequantised weight itself: one group per expert, x = identity rows pick weight rows exactly
    s, o = _params(np.float16, (E, N))
    x = np.zeros((E * K, K), np.float16)
    for e in range(E):
        x[e * K:(e + 1) * K] = np.eye(K, dtype=np.float16)
    gl = np.full(E, K, np.int64)
    y = gmm(x, W8, s, o, group_list=gl, group_list_type=1)
    same_bits(y, golden_modes.antiquant_weight(W8, s, o, "float16").reshape(E * K, N))


def test_separated_weights_and_numpy_model():
    x = _x(BF16)
    s, o = _params(BF16, (E, N))
    y = api.npu_grouped_matmul([x], list(W8), antiquant_scale=list(s), antiquant_offset=list(o), group_list=GL,
                               split_item=3, group_type=0, float_accum="numpy")[0]
    wq = golden_modes.antiquant_weight(W8, s, o, "bfloat16")
    ref = np.zeros((M, N), np.float32)
    r0 = 0
    for g, m in enumerate(np.diff(GL, prepend=0)):
        ref[r0:r0 + m] = x[r0:r0 + m].astype(np.float32) @ wq[g].astype(np.float32)
        r0 += m
    same_bits(y[:25], ref[:25].astype(BF16))


def test_aclnn_v4():
    x = _x(np.float16)
    s, o = _params(np.float16, (E, N))
    out = np.zeros((M, N), np.float16)
    st, ws, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize([x], [W8], None, None, None, [s], [o], None, GL, None,
                                                          None, None, 3, 0, 0, 0, [out])
    assert st == 0 and api.aclnnGroupedMatmulV4(None, ws, ex) == 0
    same_bits(out, gmm(x, W8, s, o))


S16, O16 = _params(np.float16, (E, N))


@pytest.mark.parametrize("kw,words", [
    (dict(o=None), "antiquantOffset must not be nullptr"),
    (dict(s=None), "antiquantScale must not be nullptr"),
    (dict(s=S16.astype(np.float32)), "antiquantScale dtype does not match"),
    (dict(s=S16[:2]), "batch size[2]"),
    (dict(s=S16[:, :5]), "NDim[5]"),
    (dict(s=np.ones((E, 2, N), np.float16)), "Dim must be 2"),
    (dict(output_dtype="bfloat16"), "y dtype does not match"),
    (dict(bias=[np.zeros((E, N), np.float32)]), "bias dtype does not match"),
    (dict(scale=[np.ones((E, N), np.float32)]), "Detected antiquant, but quant inputs"),
    (dict(act_type=1), "activation"),
])
def test_antiquant_errors(kw, words):
    s, o = kw.pop("s", S16), kw.pop("o", O16)
    with pytest.raises(AclnnError) as ei:
        gmm(_x(np.float16), W8, s, o, **kw)
    assert ei.value.status == 161002 and words in str(ei.value)


def test_int4_group_errors():
    with pytest.raises(AclnnError) as ei:
        gmm(_x(np.float16), W4, np.ones((E, 5, N), np.float16), np.ones((E, 5, N), np.float16))
    assert "perGroupNum" in str(ei.value)
    with pytest.raises(AclnnError) as ei:
        gmm(_x(np.float16), W4, np.ones((E, 4, N), np.float16), np.ones((E, N), np.float16))
    assert "dim num" in str(ei.value)


def test_split_k_refused():
    x = _x(np.float16)
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([x], [W8[0]], antiquant_scale=[S16[0]], antiquant_offset=[O16[0]],
                               group_list=np.array([32, 32], np.int64), group_list_type=1, split_item=3,
                               group_type=2)
    assert "splited axis is k" in str(ei.value)
