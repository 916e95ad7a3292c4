"""CANN's checks of aclnnDynamicQuant[V2/V3/V4] and the tiling, with their status codes; no partial writes;
the aclnn two-phase API; the CLI verb."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.dynamic_quant import api

BF16 = ml_dtypes.bfloat16


def _x(rows=4, L=256, dtype=BF16):
    return (np.random.default_rng(0).standard_normal((rows, L)) * 3).astype(np.float32).astype(dtype)


def _status(fn, *a, **k):
    with pytest.raises(AclnnError) as e:
        fn(*a, **k)
    return e.value.status, str(e.value)


def test_torch_npu_rejections():
    x = _x()
    assert _status(api.npu_dynamic_quant, x.astype(np.float32))[0] == 161002             # x dtype
    assert _status(api.npu_dynamic_quant, x[0])[0] == 161002                             # rank 1
    assert _status(api.npu_dynamic_quant, x.reshape((1,) * 7 + (4, 256)))[0] == 161002   # rank 9
    assert _status(api.npu_dynamic_quant, x, smooth_scales=_x(1, 255)[0])[0] == 161002   # smooth length
    assert _status(api.npu_dynamic_quant, x, smooth_scales=_x(1, 256, np.float16)[0])[0] == 161002
    assert _status(api.npu_dynamic_quant, x, dst_type=3)[0] == 161002                    # unknown dst_type
    assert _status(api.npu_dynamic_quant, _x(4, 260), dst_type=16)[0] == 161002          # int4: n % 8
    st, msg = _status(api.npu_dynamic_quant, x, quant_mode="pertensor")
    assert st == 561000 and "Ascend950" in msg
    assert _status(api.npu_dynamic_quant, x, dst_type_max=448.0)[0] == 561000
    assert _status(api.npu_dynamic_quant, x, div_model="fast")[0] == 161002
    assert _status(api.npu_dynamic_quant, x, soc="ascend950pr", quant_mode="perrow")[0] == 161002


def test_group_index_rejections():
    x = _x(6, 256)
    sm = _x(2, 256)
    st, msg = _status(api.npu_dynamic_quant, x, smooth_scales=sm, group_index=np.array([4, 2], np.int32))
    assert st == 161002 and "non-decreasing" in msg
    st, msg = _status(api.npu_dynamic_quant, x, smooth_scales=sm, group_index=np.array([2, 5], np.int32))
    assert st == 161002 and "past smooth_scales" in msg
    assert _status(api.npu_dynamic_quant, x, smooth_scales=sm, group_index=np.array([-1, 6], np.int32))[0] == 161002
    # tiling rules (561002): int64 group_index, smooth rows != groups, 2-D group_index (aclnn: 161002)
    assert _status(api.npu_dynamic_quant, x, smooth_scales=sm, group_index=np.array([3, 6], np.int64))[0] == 561002
    assert _status(api.npu_dynamic_quant, x, smooth_scales=_x(3, 256),
                   group_index=np.array([3, 6], np.int32))[0] == 561002
    assert _status(api.npu_dynamic_quant, x, smooth_scales=sm,
                   group_index=np.array([[3, 6]], np.int32))[0] == 161002
    assert _status(api.npu_dynamic_quant, x, smooth_scales=_x(1025, 256),
                   group_index=np.arange(1, 1026, dtype=np.int32))[0] == 561002


def test_aclnn_two_phase_and_no_partial_writes():
    x = _x(5, 130)
    y = np.full((5, 130), 7, np.int8)
    s = np.full(5, 9.0, np.float32)
    st, ws, ex = api.aclnnDynamicQuantV2GetWorkspaceSize(x, None, None, 2, y, s, None)
    assert st == 0 and ws == 16777216
    assert (y == 7).all()                                   # phase 1 writes nothing
    assert api.aclnnDynamicQuantV2(None, ws, ex) == 0
    ref_y, ref_s = api.npu_dynamic_quant(x)
    assert np.array_equal(y, ref_y) and np.array_equal(s.view(np.uint32), ref_s.view(np.uint32))
    assert api.aclnnDynamicQuantV2(None, ws, ex) == 561000   # an executor runs once
    # bad y shape: status, nothing written
    y2 = np.full((5, 129), 7, np.int8)
    st, ws, ex = api.aclnnDynamicQuantV2GetWorkspaceSize(x, None, None, 2, y2, s, None)
    assert st == 161002 and ex is None and (y2 == 7).all()
    # null x / scale
    assert api.aclnnDynamicQuantGetWorkspaceSize(None, None, y, s)[0] == 161001
    assert api.aclnnDynamicQuantGetWorkspaceSize(x, None, y, None)[0] == 161001
    # int32 y = packed int4, asymmetric with offset
    x8 = _x(3, 256)
    y4 = np.zeros((3, 32), np.int32)
    s3 = np.zeros(3, np.float32)
    o3 = np.zeros(3, np.float32)
    st, ws, ex = api.aclnnDynamicQuantV2GetWorkspaceSize(x8, None, None, 3, y4, s3, o3)
    assert st == 0 and api.aclnnDynamicQuantV2(None, ws, ex) == 0
    ry, rs, ro = api.npu_dynamic_quant_asymmetric(x8, dst_type=16)
    assert np.array_equal(y4, ry) and np.array_equal(o3, ro)
    # V3 / V4 on A2/A3
    assert api.aclnnDynamicQuantV3GetWorkspaceSize(x8, None, None, 2, True, "pertoken", y4, s3, None)[0] == 561000
    assert api.aclnnDynamicQuantV4GetWorkspaceSize(x8, None, None, 2, True, "pertoken", 0.0, y4, s3, None)[0] \
        == 561000


def test_torch_in_torch_out_and_shapes():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 3, 256, dtype=torch.bfloat16)
    y, s = api.npu_dynamic_quant(x)
    assert y.dtype == torch.int8 and y.shape == (2, 3, 256) and s.dtype == torch.float32 and s.shape == (2, 3)
    y4, s4 = api.npu_dynamic_quant(x, dst_type=torch.quint4x2)
    assert y4.dtype == torch.int32 and y4.shape == (2, 3, 32)
    e = api.npu_dynamic_quant(torch.zeros(0, 256, dtype=torch.bfloat16))
    assert e[0].shape == (0, 256) and e[1].shape == (0,)


def test_user_tiling_validated():
    import dataclasses
    from npu_emu.kernels.dynamic_quant import tiling as T
    x = _x(100, 130)
    res = T.tiling(100, 130)
    y0, s0 = api.npu_dynamic_quant(x)
    y1, s1 = api.npu_dynamic_quant(x, tiling=dataclasses.replace(res, tiling_key=0))   # another key's formulas
    assert np.array_equal(y0, y1)
    bad = dataclasses.replace(res, tiling=dataclasses.replace(res.tiling, headCoreNum=5))
    assert _status(api.npu_dynamic_quant, x, tiling=bad)[0] == 161002
    assert _status(api.npu_dynamic_quant, x, tiling=bad)[0] == 161002      # a rejected tiling is not remembered


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend950pr"])
def test_repeated_call_takes_tiling_and_check_from_the_memo(soc, monkeypatch):
    # the tiling and its validation are pure in the shapes and options: a second call computes neither
    from npu_emu.device import memo
    from npu_emu.kernels.dynamic_quant import tiling as T, tiling_arch35 as T35
    mod = T35 if soc == "ascend950pr" else T
    calls = []
    for name in ("tiling", "validate"):
        def counted(*a, _real=getattr(mod, name), _name=name, **k):
            calls.append(_name)
            return _real(*a, **k)
        counted.__qualname__ = f"counted_{name}"           # the memo keys a function by its name
        monkeypatch.setattr(mod, name, counted)
    memo.clear()
    x = _x(6, 256)
    y0, s0 = api.npu_dynamic_quant(x, soc=soc)
    assert calls == ["tiling", "validate"]
    y1, s1 = api.npu_dynamic_quant(x, soc=soc)
    assert calls == ["tiling", "validate"]
    assert np.array_equal(y0, y1) and np.array_equal(s0.view(np.uint32), s1.view(np.uint32))
    api.npu_dynamic_quant(_x(7, 256), soc=soc)                             # another shape: computed again
    assert calls == ["tiling", "validate"] * 2


def test_cli(tmp_path):
    from npu_emu.cli import main
    x = _x(4, 256)
    x.tofile(tmp_path / "x.bin")
    rc = main(["run", "dynamic_quant", "--input", str(tmp_path / "x.bin"), "--shape", "4,256",
               "--output", str(tmp_path / "y.bin"), "--scale", str(tmp_path / "s.bin")])
    assert rc in (0, None)
    y, s = api.npu_dynamic_quant(x)
    assert np.array_equal(np.fromfile(tmp_path / "y.bin", np.int8).reshape(4, 256), y)
    assert np.array_equal(np.fromfile(tmp_path / "s.bin", np.float32), s)


def test_v4_on_a2_and_950():
    """aclnnDynamicQuantV4 returns 561000 on Atlas A2/A3 before any check and writes nothing; on Ascend 950 it runs
    (perchannel here: scale [256] for x [4, 256])."""
    from npu_emu import aclnn

    x = _x()
    y, s = np.full((4, 256), 5, np.uint8), np.full(256, 7.0, np.float32)
    st, _, _ = aclnn.aclnnDynamicQuantV4GetWorkspaceSize(x, None, None, 34, True, "perchannel", 8.0, y, s, None)
    assert st == 561000 and "only supports socVersion Ascend950" in aclnn.aclGetRecentErrMsg()
    assert (y == 5).all() and (s == 7.0).all()
    st, ws, ex = aclnn.aclnnDynamicQuantV4GetWorkspaceSize(x, None, None, 34, True, "perchannel", 8.0, y, s, None,
                                                           soc="ascend950pr")
    assert st == 0 and aclnn.aclnnDynamicQuantV4(None, ws, ex) == 0
    assert not (s == 7.0).any()
