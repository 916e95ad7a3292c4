"""FRACTAL_NZ weights beyond the A8W8 case: antiquant with an NZ weight through V4 / V5 (the values read back from
the layout), and ParamsWeightNzDtype, the x-weight-y pairs aclnnGroupedMatmulWeightNz takes
(docs/ops/grouped_matmul.md §11.3)."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, golden, golden_modes
from npu_emu.kernels.quant_matmul.api import NzWeight

RNG = np.random.default_rng(77)
E, M, K, N = 2, 24, 64, 64
GL = np.array([10, 24], np.int64)
X16 = RNG.standard_normal((M, K)).astype(np.float16)
W8 = RNG.integers(-128, 128, (E, K, N)).astype(np.int8)
W4 = RNG.integers(-8, 8, (E, K, N)).astype(ml_dtypes.int4)
S = RNG.uniform(0.001, 0.05, (E, N)).astype(np.float16)
O = RNG.uniform(-3, 3, (E, N)).astype(np.float16)


def _v5(w, out):
    st, ws, ex = api.aclnnGroupedMatmulV5GetWorkspaceSize(
        [X16], [w], None, None, None, [S], [O], None, GL, None, None, None, 3, 0, 0, 0, None, [out])
    assert st == 0
    assert api.aclnnGroupedMatmulV5(None, ws, ex) == 0


@pytest.mark.parametrize("w,nz", [(W8, lambda w: NzWeight.from_nd(w)),
                                  (W4, lambda w: NzWeight.from_nd(w, "int4"))], ids=["w8a16", "w4a16"])
def test_antiquant_nz_weight_through_v5_is_the_nd_weight(w, nz):
    out = np.zeros((M, N), np.float16)
    _v5(nz(w), out)
    want = golden.grouped_matmul_float(X16, golden_modes.antiquant_weight(w, S, O, "float16"), GL)
    assert np.array_equal(out.view(np.uint16), want.view(np.uint16))


def test_weight_nz_entry_refuses_antiquant_pairs():
    """ParamsWeightNzDtype has no FP16-INT8 pair: the device refuses W8A16 through aclnnGroupedMatmulWeightNz, and
    npu_grouped_matmul sends an NZ weight there (op-plugin)."""
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([X16], [NzWeight.from_nd(W8)], antiquant_scale=[S], antiquant_offset=[O],
                               group_list=GL, split_item=3, group_type=0)
    assert ei.value.status == 161002 and "Only supported x-weight" in str(ei.value)


def test_weight_nz_entry_refuses_int8_output():
    """INT8-INT8 through WeightNz: y bfloat16, float16 or int32 only."""
    x = RNG.integers(-128, 128, (M, K)).astype(np.int8)
    words = np.full((E, N), np.float32(0.01).view(np.uint32), np.uint64)
    out = np.zeros((M, N), np.int8)
    st, _, _ = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(
        [x], [NzWeight.from_nd(W8)], None, [words], None, None, None, None, GL, None, None, None, 3, 0, 0, 0, None,
        0, [out])
    assert st == 161002
    y = api.npu_grouped_matmul([x], [W8], scale=[words], group_list=GL, split_item=3, group_type=0)[0]  # ND: fine
    assert np.array_equal(y, golden.grouped_matmul_quant(x, W8, GL, scale=words, out_dtype="int8"))
