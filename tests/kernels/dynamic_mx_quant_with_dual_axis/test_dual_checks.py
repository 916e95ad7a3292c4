"""Parameter checks of DynamicMxQuantWithDualAxis with CANN's status codes (docs/ops/dynamic_mx_quant_with_dual_axis.md
§5), the aclnn two-phase flow (outputs written into the caller's buffers, none touched on an error), the
torch_npu front end's checks, and a small fuzz: bad arguments give AclnnError, never another exception."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import api, golden
from npu_emu.kernels.dynamic_mx_quant_with_dual_axis.tiling import dual_axis_tiling

E4M3, E5M2, E2M1, E1M2 = 36, 35, 40, 41


def bf(shape, value=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * value).astype(ml_dtypes.bfloat16)


def outs(shape, fp4=False, ydt=ml_dtypes.float8_e4m3fn):
    yshape = shape[:-1] + (shape[-1] // 2,) if fp4 else shape
    y = np.full(yshape, 0xAB, np.uint8) if fp4 else np.zeros(shape, ydt)
    y2 = y.copy()
    s1 = np.full(shape[:-1] + (-(-shape[-1] // 64), 2), 0xCD, np.uint8)
    s2 = np.full(shape[:-2] + (-(-shape[-2] // 64), shape[-1], 2), 0xCD, np.uint8)
    return y, s1, y2, s2


def status(*args, v2=False, **kw):
    f = api.aclnnDynamicMxQuantWithDualAxisV2GetWorkspaceSize if v2 else \
        api.aclnnDynamicMxQuantWithDualAxisGetWorkspaceSize
    return f(*args, **kw)[0]


def test_aclnn_two_phase_writes_outputs():
    x = bf((2, 40, 96))
    y1, s1, y2, s2 = outs(x.shape)
    st, ws, ex = api.aclnnDynamicMxQuantWithDualAxisGetWorkspaceSize(x, "rint", E4M3, 0, y1, s1, y2, s2)
    assert st == 0 and ws == 16 * 2 ** 20
    assert api.aclnnDynamicMxQuantWithDualAxis(None, ws, ex) == 0
    ref = golden.dual_axis_quant(x, "float8_e4m3fn")
    for a, b in zip((y1, s1, y2, s2), ref):
        np.testing.assert_array_equal(a.view(np.uint8), b)
    assert api.aclnnDynamicMxQuantWithDualAxis(None, ws, ex) == 561000          # an executor runs once


def test_aclnn_v2_fp4_packed_and_unpacked():
    x = bf((64, 64))
    y1, s1, y2, s2 = outs(x.shape, fp4=True)
    st, ws, ex = api.aclnnDynamicMxQuantWithDualAxisV2GetWorkspaceSize(x, "floor", E2M1, 2, 7.0, y1, s1, y2, s2,
                                                                       y_dtype="float4_e2m1")
    assert st == 0 and api.aclnnDynamicMxQuantWithDualAxisV2(None, ws, ex) == 0
    ref = golden.dual_axis_quant(x, "float4_e2m1", round_mode="floor", scale_alg=2, dst_type_max=7.0)
    for a, b in zip((y1, s1, y2, s2), ref):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("which", range(5))
def test_nullptr(which):
    x = bf((32, 64))
    args = [x, *outs(x.shape)]
    args[which] = None
    assert status(args[0], "rint", E4M3, 0, *args[1:]) == 161001


@pytest.mark.parametrize("soc", ["ascend910b1", "ascend910_93", "kirin9020"])
def test_soc_refused_361001(soc):
    x = bf((32, 64))
    assert status(x, "rint", E4M3, 0, *outs(x.shape), soc=soc) == 361001
    with pytest.raises(AclnnError) as e:
        api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=24, soc=soc)
    assert e.value.status == 361001


def test_950dt_accepted():
    x = bf((32, 64))
    assert status(x, "rint", E4M3, 0, *outs(x.shape), soc="ascend950dt") == 0


@pytest.mark.parametrize("case, kw", [
    ("x float32", dict(x=np.ones((32, 64), np.float32))),
    ("round for fp8", dict(rm="round")),
    ("bad round", dict(rm="ceil")),
    ("dstType mismatch", dict(dt=E5M2)),
    ("dstType not MX", dict(dt=27)),
    ("scaleAlg 2 on V1", dict(alg=2)),
    ("scaleAlg 3", dict(alg=3)),
    ("x rank 1", dict(x=np.ones(64, ml_dtypes.bfloat16))),
    ("y1 shape", dict(y1=np.zeros((32, 32), ml_dtypes.float8_e4m3fn))),
    ("mxscale1 shape", dict(s1=np.zeros((32, 2, 2), np.uint8))),
    ("mxscale2 shape", dict(s2=np.zeros((2, 64, 2), np.uint8))),
    ("y2 dtype", dict(y2=np.zeros((32, 64), ml_dtypes.float8_e5m2))),
    ("mxscale dtype", dict(s1=np.zeros((32, 1, 2), np.float16))),
])
def test_invalid_161002_and_outputs_untouched(case, kw):
    x = kw.get("x", bf((32, 64)))
    y1, s1, y2, s2 = outs((32, 64))
    a = dict(x=x, rm="rint", dt=E4M3, alg=0, y1=y1, s1=s1, y2=y2, s2=s2)
    a.update(kw)
    before = [np.array(v, copy=True) for v in (y1, s1, y2, s2)]
    assert status(a["x"], a["rm"], a["dt"], a["alg"], a["y1"], a["s1"], a["y2"], a["s2"]) == 161002, case
    for v, b in zip((y1, s1, y2, s2), before):
        np.testing.assert_array_equal(v.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("dst, alg, dtm, rm", [
    (E2M1, 1, 0.0, "rint"), (E1M2, 2, 0.0, "rint"), (E1M2, 1, 0.0, "rint"), (E4M3, 2, 0.0, "rint"),
    (E2M1, 2, 5.0, "rint"), (E2M1, 2, 12.5, "rint"), (E2M1, 2, -1.0, "rint"), (E5M2, 0, 0.0, "floor"),
])
def test_v2_attribute_rules(dst, alg, dtm, rm):
    x = bf((32, 64))
    fp4 = dst in (E2M1, E1M2)
    label = {E2M1: "float4_e2m1", E1M2: "float4_e1m2", E4M3: "float8_e4m3fn", E5M2: "float8_e5m2"}[dst]
    assert status(x, rm, dst, alg, dtm, *outs(x.shape, fp4=fp4), v2=True, y_dtype=label) == 161002


def test_fp4_odd_last_dim():
    x = bf((32, 63))
    with pytest.raises(AclnnError) as e:
        api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=296)
    assert e.value.status == 161002 and "divisible by 2" in str(e.value)


def test_torch_front_end_checks():
    with pytest.raises(AclnnError, match="at least 2D"):
        api.npu_dynamic_mx_quant_with_dual_axis(np.ones(64, ml_dtypes.bfloat16))
    with pytest.raises(AclnnError) as e:
        api.npu_dynamic_mx_quant_with_dual_axis(bf((4, 64)), dst_type=36)       # aclDataType, not a torch code
    assert e.value.status == 161002
    with pytest.raises(AclnnError) as e:
        api.npu_dynamic_mx_quant_with_dual_axis(bf((4, 64)), dst_type=24, round_mode="floor")
    assert e.value.status == 161002


def test_empty_input():
    y1, s1, y2, s2 = api.npu_dynamic_mx_quant_with_dual_axis(np.zeros((0, 64), ml_dtypes.bfloat16), dst_type=24)
    assert y1.shape == (0, 64) and s1.shape == (0, 1, 2) and y2.shape == (0, 64) and s2.shape == (0, 64, 2)


def test_small_ub_is_a_tiling_error():
    with pytest.raises(AclnnError) as e:
        dual_axis_tiling((64, 64), y_dtype="float8_e4m3fn", ub_size=100000)
    assert e.value.status == 561002


def test_fuzz_bad_arguments():
    """Random bad argument mixes: every one an AclnnError with 161001 / 161002 / 361001."""
    rng = np.random.default_rng(1)
    choices = dict(round_mode=["rint", "floor", "bad", None, 3], dst_type=[23, 24, 296, 297, 36, 40, 1, "x", None],
                   scale_alg=[0, 1, 2, 3, -1, 1.5], dst_type_max=[0.0, 6.0, 7.0, 5.0, 13.0, float("nan"), None],
                   soc=["ascend950pr", "ascend910b1"])
    shapes = [(64,), (4, 64), (4, 63), (2, 3, 32, 32)]
    n_ok = 0
    for _ in range(150):
        kw = {k: v[rng.integers(len(v))] for k, v in choices.items()}
        x = bf(shapes[rng.integers(len(shapes))])
        try:
            api.npu_dynamic_mx_quant_with_dual_axis(x, **kw)
            n_ok += 1
        except AclnnError as e:
            assert e.status in (161001, 161002, 361001), (kw, e)
    assert n_ok > 0
