"""torch_npu's packed int4 weights in npu_grouped_matmul: an int32 tensor carries 8 int4 values along its last dim,
the first in the low nibble (op-plugin's GroupedMatmulKernelNpuOpApi.cpp: y has N = 8 x the int32 weight's last
dim; npu_convert_weight_to_int4pack packs that way). The W4A16 antiquant golden on the unpacked values."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.grouped_matmul import api, golden, golden_modes

RNG = np.random.default_rng(90)
E, M, K, N = 2, 20, 32, 16
GL = np.array([9, 20], np.int64)
W4 = RNG.integers(-8, 8, (E, K, N)).astype(np.int8)


def pack(v):
    """int4 values (last dim a multiple of 8) -> int32 words, element 8j + i in nibble i (written from the rule,
    with python ints)."""
    codes = (v.astype(np.int64) & 0xF).reshape(v.shape[:-1] + (-1, 8))
    words = np.zeros(codes.shape[:-1], np.int64)
    for i in range(8):
        words |= codes[..., i] << (4 * i)
    return words.astype(np.uint32).view(np.int32)


@pytest.mark.parametrize("dtype_kw", [{}, {"weight_dtype": "int4"}], ids=["int32", "weight_dtype"])
def test_w4a16_int32_packed_weight_is_the_int4_weight(dtype_kw):
    x = RNG.standard_normal((M, K)).astype(np.float16)
    s = RNG.uniform(0.01, 0.05, (E, N)).astype(np.float16)
    o = RNG.uniform(-2, 2, (E, N)).astype(np.float16)
    packed = pack(W4)
    assert packed.shape == (E, K, N // 8)
    y = api.npu_grouped_matmul([x], [packed], antiquant_scale=[s], antiquant_offset=[o], group_list=GL,
                               split_item=3, group_type=0, **dtype_kw)[0]
    assert y.shape == (M, N)
    want = golden.grouped_matmul_float(x, golden_modes.antiquant_weight(W4.astype(ml_dtypes.int4), s, o, "float16"),
                                       GL)
    assert np.array_equal(y.view(np.uint16), want.view(np.uint16))


def test_torch_int32_packed_weight():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((M, K)).astype(np.float16)
    s = np.full((E, N), 0.03, np.float16)
    o = np.zeros((E, N), np.float16)
    y = api.npu_grouped_matmul([torch.from_numpy(x)], [torch.from_numpy(pack(W4))], antiquant_scale=[s],
                               antiquant_offset=[o], group_list=torch.from_numpy(GL), split_item=3, group_type=0)[0]
    want = golden.grouped_matmul_float(x, golden_modes.antiquant_weight(W4.astype(ml_dtypes.int4), s, o, "float16"),
                                       GL)
    assert np.array_equal(y.numpy().view(np.uint16), want.view(np.uint16))


def test_aclnn_v4_unpacks_an_int32_weight_list():
    """UnpackInt32ToInt4 runs in the aclnn entries themselves: an INT32 weight list through aclnnGroupedMatmulV4 is
    int4 too (W4A16 here)."""
    x = RNG.standard_normal((M, K)).astype(np.float16)
    s = RNG.uniform(0.01, 0.05, (E, N)).astype(np.float16)
    o = RNG.uniform(-2, 2, (E, N)).astype(np.float16)
    out = np.zeros((M, N), np.float16)
    st, ws, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [x], [pack(W4)], None, None, None, [s], [o], None, GL, None, None, None, 3, 0, 0, 0, [out])
    assert st == 0 and api.aclnnGroupedMatmulV4(None, ws, ex) == 0
    want = golden.grouped_matmul_float(x, golden_modes.antiquant_weight(W4.astype(ml_dtypes.int4), s, o, "float16"),
                                       GL)
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))
