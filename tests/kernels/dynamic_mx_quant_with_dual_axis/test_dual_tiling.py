"""Host tiling against the ops-nn UT vectors and the op_host formulas (hicann/ops-nn:
quant/dynamic_mx_quant_with_dual_axis/tests/ut/op_host/test_dynamic_mx_quant_with_dual_axis_tiling.cpp), the task
split, the tiling key and the validated access pattern."""

import numpy as np
import pytest

from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import launch, tiling as t


def _ut_string(td):
    vals = []
    for name, v in td.fields().items():
        vals.append(f"{v:.6f}" if isinstance(v, float) else str(v))
    return " ".join(vals) + " "


@pytest.mark.parametrize("y, rm, want", [
    ("float8_e5m2", "rint", "64 2 4 35 0 32 1 128 256 256 64 0 64 256 2 1 1 0 2 0 0 0 2 8 4 0.000000 0.166667 "),
    ("float4_e1m2", "round", "64 2 0 41 0 32 1 128 256 256 64 0 64 256 2 1 1 0 2 0 0 0 2 8 4 0.000000 0.166667 "),
    ("float4_e1m2", "floor", "64 2 1 41 0 32 1 128 256 256 64 0 64 256 2 1 1 0 2 0 0 0 2 8 4 0.000000 0.166667 "),
])
def test_ut_vectors(y, rm, want):
    tr = t.dual_axis_tiling((128, 256), y_dtype=y, round_mode=rm, core_num=64)
    assert _ut_string(tr.tiling) == want
    assert tr.block_dim == 2


def test_split_block_h_from_ub():
    # per 64-row group of a 256-column task: 74240 bytes, double-buffered, 1024 reserved
    assert t.group_per_ub(262144) == 1 and t.group_per_ub(2 * 74240 * 3 + 1024) == 3
    tr = t.dual_axis_tiling((4, 1000, 300), y_dtype="float8_e4m3fn", ub_size=2 * 74240 * 3 + 1024, core_num=7)
    td = tr.tiling
    assert td.splitBlockH == 192 and td.dimNeg2Tail == 1000 - 5 * 192 and td.dimNeg1Tail == 300 - 256
    assert td.dimNeg2SplitBlockNum == 6 and td.dimNeg1BlockNum == 2 and td.blockCountPerBatch == 12
    tasks = 4 * 12
    assert (td.blockPerHeadCore, td.blockPerTailCore, td.headCoreNum) == (-(-tasks // 7), tasks // 7, tasks % 7)
    assert (td.dimNeg2IsOdd, td.dimNeg1IsOdd, td.dimNeg1IsPad) == (32 % 2, 10 % 2, 1)
    assert td.scale1ColCountPerBatch == 10 and td.scale2RowCountPerBatch == 32


def test_tasks_cover_once():
    td = t.dual_axis_tiling((3, 70, 600), y_dtype="float8_e4m3fn", core_num=5).tiling
    got = []
    for c in range(td.usedCoreNum):
        f, n = t.core_tasks(td, c)
        got += list(range(f, f + n))
    assert got == list(range(td.dim0 * td.blockCountPerBatch))


@pytest.mark.parametrize("rm, alg, key", [("rint", 0, 0), ("round", 0, 2), ("floor", 0, 4), ("rint", 1, 16),
                                          ("floor", 2, 36)])
def test_tiling_key(rm, alg, key):
    assert t.tiling_key(rm, alg) == key


@pytest.mark.parametrize("shape, y", [((2, 100, 600), "float8_e5m2"), ((33, 2), "float4_e2m1"),
                                      ((1, 3, 130, 70), "float4_e1m2")])
def test_access_pattern_validates(shape, y):
    from npu_emu.device.validate import validate
    tr = t.dual_axis_tiling(shape, y_dtype=y, core_num=6)
    rep = validate(launch.dual_access(tr.tiling, y.startswith("float4")), ub_size=tr.ub_size)
    assert rep.ok, str(rep)


def test_ub_bytes_fit():
    tr = t.dual_axis_tiling((64, 256), y_dtype="float8_e4m3fn")
    assert t.ub_bytes(tr.tiling.splitBlockH) <= tr.ub_size
    assert np.float32(tr.tiling.invDstTypeMax) == np.float32(1 / 6)


def test_a_block_size_other_than_32_is_refused_before_the_kernel():
    # the kernel copies are compiled for 32-element blocks only: a tiling that says otherwise never reaches them
    from dataclasses import replace

    from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError

    tr = t.dual_axis_tiling((64, 256), y_dtype="float8_e4m3fn", round_mode="rint", scale_alg=1)
    tr = replace(tr, tiling=replace(tr.tiling, blockSize=16))
    p1, p2, r32 = launch.make_axis_params(x_dtype="bfloat16", y_dtype="float8_e4m3fn", round_mode="rint", scale_alg=1,
                                          dst_type_max=0.0, signed_zero=False, ftz=False, fp4_nibble_order="low_first")
    y = np.full(64 * 256, 0xAB, np.uint8)
    with pytest.raises(AclnnError) as e:
        launch.run(np.zeros(64 * 256, np.uint16), y, y.copy(), y.copy(), y.copy(), tr, p1, p2, r32)
    assert e.value.status == ACLNN_ERR_INNER_TILING_ERROR and "blockSize=16" in str(e.value)
    assert (y == 0xAB).all()
