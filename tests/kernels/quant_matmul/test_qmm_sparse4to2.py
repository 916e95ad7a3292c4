"""Sparse4to2QuantMatmul: the compressor (TV-J, TV-S2), round trips, the end-to-end vector TV-S1, random inputs
against the independent golden (bit-exact), the checks' status codes and the aclnn pair
(docs/ops/sparse4to2_quant_matmul.md)."""

import ml_dtypes
import numba
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.quant_matmul import golden as golden
from npu_emu.kernels.quant_matmul import sparse4to2 as sp
from npu_emu.kernels.quant_matmul.api import NzWeight

BF16 = ml_dtypes.bfloat16


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def sparse_weight(rng, n, k, density=0.7):
    """A random int8 (n, k) weight with at most 2 non-zeros in every group of 4 along k (the tail group too)."""
    kp = -(-k // 4) * 4
    w = rng.integers(-128, 128, (n, kp), dtype=np.int16).astype(np.int8)
    groups = w.reshape(n, -1, 4)
    for r in range(n):
        for g in range(groups.shape[1]):
            keep = rng.choice(4, size=rng.integers(0, 3), replace=False)
            mask = np.zeros(4, bool)
            mask[keep] = True
            mask &= rng.random(4) < density + 0.3
            groups[r, g, ~mask] = 0
    return np.ascontiguousarray(w[:, :k])


def status(fn):
    with pytest.raises(AclnnError) as e:
        fn()
    return e.value.status


# --- TV-J / TV-S2: compression format ----------------------------------------------------------------------------

TV_J = np.array([[0, 3, 0, -2, 5, 0, 0, 0, 0, 0, 7, 1, -4, 0, 0, 9]], np.int8)


def test_tv_j_compression():
    s, idx = sp.trans_sparse4to2_para(TV_J)
    assert s.shape == (1, 1, 16, 32) and s.dtype == np.int8
    assert idx.shape == (1, 1, 16, 8) and idx.dtype == np.uint8
    # vector TV-J: row 0 compressed [3, -2, 5, 0, 7, 1, -4, 9], index [0x09, 0x8A]; everything else zero padding
    assert s[0, 0, 0, :8].tolist() == [3, -2, 5, 0, 7, 1, -4, 9]
    assert not s[0, 0, 0, 8:].any() and not s[0, 0, 1:].any()
    assert idx[0, 0, 0].tolist() == [0x09, 0x8A, 0, 0, 0, 0, 0, 0]
    assert not idx[0, 0, 1:].any()
    gs, gi = golden.sparse4to2_compress(TV_J)
    assert np.array_equal(gs, s) and np.array_equal(gi, idx)


@pytest.mark.parametrize("group, code, kept", [
    ([0, 7, 0, 0], 0b0001, [7, 0]),      # TV-S2: single non-zero at 1 keeps w1, w2; decodes to positions 1, 1
    ([0, 0, 7, 0], 0b0010, [7, 0]),      # single non-zero at 2 keeps w2, w3; decodes to positions 2, 1
    ([0, 0, 0, 0], 0b0000, [0, 0]),      # all zero keeps positions 0, 1
    ([0, 0, 0, 7], 0b1000, [0, 7]),      # single non-zero at 3 keeps positions 0, 3 (table row 0001)
    ([7, 0, 0, 0], 0b0000, [7, 0]),      # table row 1000
    ([7, 0, -1, 0], 0b0100, [7, -1]),    # table row 1010
    ([0, 7, 0, -1], 0b1001, [7, -1]),    # table row 0101
    ([0, 7, -1, 0], 0b0101, [7, -1]),    # table row 0110
])
def test_tv_s2_codes(group, code, kept):
    w = np.array([group + [0, 0, 0, 0]], np.int8)
    s, idx = sp.trans_sparse4to2_para(w)
    assert idx[0, 0, 0, 0] == code
    assert s[0, 0, 0, :2].tolist() == kept
    assert np.array_equal(sp.decompress(s, idx, 1, 8), w)
    assert np.array_equal(golden.sparse4to2_decompress(s, idx, 1, 8), w)
    gs, gi = golden.sparse4to2_compress(w)
    assert np.array_equal(gs, s) and np.array_equal(gi, idx)


def _one_group(kept, code):
    """NZ storage and index of a (1, 8) weight whose first group holds ``kept`` under ``code``."""
    s = np.zeros((1, 1, 16, 32), np.int8)
    idx = np.zeros((1, 1, 16, 8), np.uint8)
    s[0, 0, 0, :2] = kept
    idx[0, 0, 0, 0] = code
    return s, idx


@pytest.mark.parametrize("kept, code, dense", [
    ([7, 0], 0b0001, [0, 7, 0, 0]),      # CANN's code for [0, 7, 0, 0]: both kept values name position 1
    ([7, 0], 0b0010, [0, 0, 7, 0]),      # CANN's code for [0, 0, 7, 0]: the kept zero names position 1
    ([3, 4], 0b0110, [0, 0, 7, 0]),      # a code no compressor writes, both non-zero at position 2: 3 + 4
    ([-128, -128], 0b0001, [0, -256, 0, 0]),   # the sum leaves int8: the product is still exact
])
def test_decode_adds_each_kept_value_at_its_position(kept, code, dense):
    # the cube multiplies each kept value with the activation at its decoded position, so values that name one
    # position add up; overwriting (as npu-emu once did) lost w1 for CANN's code 0001
    s, idx = _one_group(kept, code)
    want = np.array([dense + [0, 0, 0, 0]])
    assert np.array_equal(sp.decompress(s, idx, 1, 8), want)
    assert np.array_equal(golden.sparse4to2_decompress(s, idx, 1, 8), want)
    x = np.array([[1, 2, 3, 4, 5, 6, 7, 8]], np.int8)
    y = sp.sparse4to2_quant_matmul(x, s, idx, np.array([1.0], np.float32), np.array([1.0], np.float32))
    assert float(np.asarray(y, np.float32)[0, 0]) == float(np.dot(want[0], np.arange(1, 9)))


def test_index_naming_position_4_is_rejected():
    s, idx = _one_group([1, 1], 0b1100)                 # bits 3..2 = 3: second position 3 + 1 = 4
    x = np.ones((1, 8), np.int8)
    assert status(lambda: sp.sparse4to2_quant_matmul(x, s, idx, np.ones(1, np.float32),
                                                     np.ones(1, np.float32))) == 161002


@pytest.mark.parametrize("n, k", [(1, 16), (5, 24), (17, 70), (33, 130), (16, 64)])
def test_round_trip_random(n, k):
    rng = np.random.default_rng(n * 1000 + k)
    w = sparse_weight(rng, n, k)
    s, idx = sp.trans_sparse4to2_para(w)
    gs, gi = golden.sparse4to2_compress(w)
    assert s.shape == (-(-k // 64), -(-n // 16), 16, 32)
    assert np.array_equal(s, gs) and np.array_equal(idx, gi)
    assert np.array_equal(sp.decompress(s, idx, n, k), w)
    assert np.array_equal(golden.sparse4to2_decompress(gs, gi, n, k), w)


def test_three_nonzeros_rejected():
    w = np.zeros((2, 8), np.int8)
    w[1, 4:8] = [1, 2, 3, 0]            # vector TV-J: a group with 3 non-zeros fails with 161002
    with pytest.raises(AclnnError) as e:
        sp.trans_sparse4to2_para(w)
    assert e.value.status == 161002 and "50% sparsity" in str(e.value) and "row 1" in str(e.value)
    with pytest.raises(ValueError):
        golden.sparse4to2_compress(w)


def test_compress_input_checks():
    assert status(lambda: sp.trans_sparse4to2_para(np.zeros((2, 8), np.int16))) == 161002
    assert status(lambda: sp.trans_sparse4to2_para(np.zeros(8, np.int8))) == 161002
    assert status(lambda: sp.trans_sparse4to2_para(None)) == 161001


# --- end to end -----------------------------------------------------------------------------------------------

def test_tv_s1():
    s, idx = sp.trans_sparse4to2_para(TV_J)
    y = sp.sparse4to2_quant_matmul(np.ones((1, 16), np.int8), s, idx, np.array([2.0], np.float32),
                                   np.array([0.5], np.float32), np.array([0.25], BF16))
    # vector TV-S1: acc 19; 19 * 0.5 = 9.5; * 2 = 19; + 0.25 = 19.25 -> bf16 0x419A
    assert y.dtype == BF16 and y.shape == (1, 1)
    assert bits(y)[0, 0] == 0x419A


@pytest.mark.parametrize("m, n, k, with_bias", [(3, 5, 16, True), (7, 20, 70, False), (130, 300, 136, True)])
def test_random_vs_golden(m, n, k, with_bias):
    rng = np.random.default_rng(m + n + k)
    w = sparse_weight(rng, n, k)
    x = rng.integers(-128, 128, (m, k), dtype=np.int16).astype(np.int8)
    xs = rng.uniform(0.001, 0.1, m).astype(np.float32)
    ws = (rng.uniform(0.001, 0.1, n) * rng.choice([-1, 1], n)).astype(np.float32)
    bias = rng.normal(0, 3, n).astype(BF16) if with_bias else None
    s, idx = sp.trans_sparse4to2_para(w)
    y, tr = sp.sparse4to2_quant_matmul(x, s, idx, xs, ws, bias, trace=True)
    want = golden.sparse4to2_quant_matmul(x, w, xs, ws, bias)
    assert np.array_equal(bits(y), bits(want))
    assert tr.op == "Sparse4to2QuantMatmul" and tr.block_dim >= 1
    # the NzWeight form of the same storage gives the same bits
    y2 = sp.sparse4to2_quant_matmul(x, NzWeight(s, (n, -(-k // 8) * 4)), idx, xs, ws, bias)
    assert np.array_equal(bits(y2), bits(y))


def test_cast_overflow_switch():
    w = np.zeros((1, 8), np.int8)
    w[0, 0] = 127
    s, idx = sp.trans_sparse4to2_para(w)
    x = np.full((1, 8), 127, np.int8)
    big = np.array([3e38], np.float32)
    # acc 16129 * 3e38 overflows float32 to inf: "inf" keeps it, "saturate" gives the bf16 max (0x7F7F)
    y = sp.sparse4to2_quant_matmul(x, s, idx, np.ones(1, np.float32), big)
    assert bits(y)[0, 0] == 0x7F80
    y = sp.sparse4to2_quant_matmul(x, s, idx, np.ones(1, np.float32), big, cast_overflow="saturate")
    assert bits(y)[0, 0] == 0x7F7F
    assert np.array_equal(bits(golden.sparse4to2_quant_matmul(x, w, np.ones(1, np.float32), big, None,
                                                              "saturate")), bits(y))


def test_thread_count_invariance():
    rng = np.random.default_rng(5)
    w = sparse_weight(rng, 40, 128)
    x = rng.integers(-128, 128, (50, 128), dtype=np.int16).astype(np.int8)
    xs, ws = np.full(50, 0.01, np.float32), np.full(40, 0.02, np.float32)
    s, idx = sp.trans_sparse4to2_para(w)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        y1 = sp.sparse4to2_quant_matmul(x, s, idx, xs, ws, core_num=3)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        y2 = sp.sparse4to2_quant_matmul(x, s, idx, xs, ws, core_num=24)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(bits(y1), bits(y2))


# --- checks ------------------------------------------------------------------------------------------------------

def _inputs():
    w = np.zeros((4, 16), np.int8)
    w[:, 1] = 3
    s, idx = sp.trans_sparse4to2_para(w)
    return dict(x=np.ones((2, 16), np.int8), sparse_weight=s, index=idx, x_scale=np.ones(2, np.float32),
                sparse_weight_scale=np.ones(4, np.float32), bias=np.zeros(4, BF16))


@pytest.mark.parametrize("key", ["x", "sparse_weight", "index", "x_scale", "sparse_weight_scale"])
def test_null_inputs(key):
    kw = _inputs()
    kw[key] = None
    assert status(lambda: sp.sparse4to2_quant_matmul(**kw)) == 161001


@pytest.mark.parametrize("key, value", [
    ("x", np.ones((2, 16), np.int16)),                       # dtype
    ("x", np.ones((1, 2, 16), np.int8)),                     # x must be 2-D
    ("x", np.ones((2, 80), np.int8)),                        # k of x needs 2 k1 blocks of NZ storage, it has 1
    ("sparse_weight", NzWeight(np.zeros((1, 1, 16, 32), np.int8), (4, 12))),  # align8(16) != 2 * 12
    ("sparse_weight", np.zeros((4, 8), np.int8)),            # ND, not the NZ storage
    ("sparse_weight", np.zeros((1, 2, 16, 32), np.int8)),    # storage does not match n
    ("index", np.zeros((1, 1, 16, 8), np.int8)),             # index dtype UINT8
    ("index", np.zeros((1, 1, 16, 4), np.uint8)),            # index shape
    ("x_scale", np.ones(3, np.float32)),                     # (m,)
    ("x_scale", np.ones(2, np.float16)),                     # dtype
    ("sparse_weight_scale", np.ones((4, 1), np.float32)),    # 1-D
    ("bias", np.zeros(4, np.float32)),                       # bias BF16 only
    ("bias", np.zeros(5, BF16)),                             # (n,)
])
def test_invalid_inputs(key, value):
    kw = _inputs()
    kw[key] = value
    assert status(lambda: sp.sparse4to2_quant_matmul(**kw)) == 161002


def test_empty_inputs_go_through_the_checks():
    # CheckParams runs CheckDtypeValid, CheckFormatValid and CheckShape before CheckEmptyTensor, all 161002
    # (hicann/ops-nn: matmul/sparse4to2quant_matmul/op_host/op_api/aclnn_sparse4to2quant_matmul_weight_nz.cpp):
    # an empty x with a wrong dtype or shape fails on that check; only a consistent empty call reaches the
    # "empty" rejection.
    def message(**change):
        kw = {**_inputs(), **change}
        with pytest.raises(AclnnError) as e:
            sp.sparse4to2_quant_matmul(**kw)
        assert e.value.status == 161002
        return str(e.value)

    assert "dtype of x" in message(x=np.ones((0, 16), np.int16), x_scale=np.ones(0, np.float32))
    assert "xScale" in message(x=np.ones((0, 16), np.int8))                      # xScale (2,) != (m,) = (0,)
    assert "empty" in message(x=np.ones((0, 16), np.int8), x_scale=np.ones(0, np.float32))


def test_soc_and_code_checks():
    kw = _inputs()
    assert status(lambda: sp.sparse4to2_quant_matmul(**kw, soc="ascend950pr")) == 161002
    bad = kw["index"].copy()
    bad[0, 0, 0, 0] = 0x0C                                   # c1 = 3 names position 4, outside the group
    kw["index"] = bad
    assert status(lambda: sp.sparse4to2_quant_matmul(**kw)) == 161002


def test_aclnn_pair():
    kw = _inputs()
    out = np.zeros((2, 4), BF16)
    st, ws, ex = sp.aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize(
        kw["x"], kw["sparse_weight"], kw["index"], kw["x_scale"], kw["sparse_weight_scale"], kw["bias"], out)
    assert st == 0 and ws >= 0
    assert sp.aclnnSparse4to2QuantMatmulWeightNz(None, ws, ex) == 0
    assert np.all(out.astype(np.float32) == 3.0)            # x = 1, one weight 3 per row, scales 1, bias 0
    bad_out = np.zeros((2, 4), np.float16)
    st, _, ex = sp.aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize(
        kw["x"], kw["sparse_weight"], kw["index"], kw["x_scale"], kw["sparse_weight_scale"], None, bad_out)
    assert st == 161002 and ex is None
    st, _, _ = sp.aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize(
        kw["x"], kw["sparse_weight"], kw["index"], kw["x_scale"], kw["sparse_weight_scale"], None, None)
    assert st == 161001
    assert set(sp.OPS_EXPORTS) <= set(dir(sp)) and set(sp.ACLNN_EXPORTS) <= set(dir(sp))


def test_aclnn_trans_sparse4to2_para():
    st, s, sd, idx, idd = sp.aclnnTransSparse4to2Para(TV_J.reshape(-1), [1, 16])
    assert st == 0 and sd == [1, 1, 16, 32] and idd == [1, 1, 16, 8]
    assert idx[0, 0, 0, :2].tolist() == [0x09, 0x8A]                      # TV-J
    assert sp.aclnnTransSparse4to2Para(TV_J, [2, 16])[0] == 161002         # shape does not match the data
    bad = np.array([[1, 2, 3, 0, 0, 0, 0, 0]], np.int8)
    assert sp.aclnnTransSparse4to2Para(bad, [1, 8])[0] == 161002           # 3 non-zeros in a group
    assert sp.aclnnTransSparse4to2Para(None, [1, 8])[0] == 161001
