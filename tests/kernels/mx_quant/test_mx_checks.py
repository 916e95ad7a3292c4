"""Every parameter check of the MX ops with its CANN status (docs/ops/mx_quant.md §3.2, §4.1, §7), the aclnn
two-phase flow (empty tensors, executors, out buffers, gap rows) and the torch_npu front-end checks."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.mx_quant import api

E4M3, E5M2, E2M1, E1M2 = 36, 35, 40, 41


def bf(shape, value=1.0):
    return np.full(shape, value, np.float32).astype(ml_dtypes.bfloat16)


def grouped_args(m=64, n=4, g=2, y_dtype=ml_dtypes.float8_e4m3fn):
    x = bf((m, n))
    gi = np.linspace(m // g, m, g).astype(np.int32)
    y = np.zeros((m, n), y_dtype)
    s = np.zeros((m // 64 + g, n, 2), np.uint8)
    return x, gi, y, s


def status_v1(x, gi, rm, dt, bs, y, s, **kw):
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, gi, rm, dt, bs, y, s, **kw)
    return st


def status_v2(x, gi, rm, dt, bs, alg, dtm, y, s, **kw):
    st, ws, ex = api.aclnnGroupedDynamicMxQuantV2GetWorkspaceSize(x, gi, rm, dt, bs, alg, dtm, y, s, **kw)
    return st


# --- GroupedDynamicMxQuant aclnn ------------------------------------------------------------------------------

def test_grouped_aclnn_doc_example():
    # aclnnGroupedDynamicMxQuant.md example (docs/ops/mx_quant.md §3.11 / §10 G1), through the two phases
    x = np.array([0, 8, 64, 512] * 2, np.float32).astype(ml_dtypes.bfloat16).reshape(8, 1)
    gi = np.array([4, 8], np.int32)
    y = np.zeros((8, 1), ml_dtypes.float8_e4m3fn)
    s = np.zeros((2, 1, 2), ml_dtypes.float8_e8m0fnu)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, gi, "rint", E4M3, 32, y, s)
    assert (st, ws) == (0, 32)
    assert api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 0
    assert y.view(np.uint8).ravel().tolist() == [0x00, 0x48, 0x60, 0x78] * 2
    assert s.view(np.uint8).tolist() == [[[128, 0]], [[128, 0]]]
    assert api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 561000           # an executor runs once


@pytest.mark.parametrize("which", ["x", "gi", "rm", "y", "s"])
def test_grouped_nullptr(which):
    x, gi, y, s = grouped_args()
    args = dict(x=x, gi=gi, rm="rint", y=y, s=s)
    args[which] = None
    assert status_v1(args["x"], args["gi"], args["rm"], E4M3, 32, args["y"], args["s"]) == 161001


def test_grouped_platform_returns_161002_not_361001():
    x, gi, y, s = grouped_args()
    assert status_v1(x, gi, "rint", E4M3, 32, y, s, soc="ascend910b2") == 161002


@pytest.mark.parametrize("change", ["x_f32", "gi_i64", "y_e2m1", "s_f32", "round", "bs64", "dst_mismatch"])
def test_grouped_v1_dtype_checks(change):
    x, gi, y, s = grouped_args()
    rm, dt, bs = "rint", E4M3, 32
    kw = {}
    if change == "x_f32":
        x = x.astype(np.float32)
    elif change == "gi_i64":
        gi = gi.astype(np.int64)
    elif change == "y_e2m1":                        # V1 has no FP4 outputs
        y, dt, kw = np.zeros((64, 2), np.uint8), E2M1, dict(y_dtype=E2M1)
    elif change == "s_f32":
        s = s.astype(np.float32)
    elif change == "round":
        rm = "round"
    elif change == "bs64":
        bs = 64
    else:
        dt = E5M2
    assert status_v1(x, gi, rm, dt, bs, y, s, **kw) == 161002


@pytest.mark.parametrize("change", ["x3d", "gi2d", "y1d", "s2d", "y_shape", "s_dim2", "s_dim1", "s_dim0"])
def test_grouped_shape_checks(change):
    x, gi, y, s = grouped_args()
    if change == "x3d":
        x = bf((1, 64, 4))
    elif change == "gi2d":
        gi = gi.reshape(1, 2)
    elif change == "y1d":
        y = np.zeros(256, ml_dtypes.float8_e4m3fn)
    elif change == "s2d":
        s = np.zeros((3, 8), np.uint8)
    elif change == "y_shape":
        y = np.zeros((64, 5), ml_dtypes.float8_e4m3fn)
    elif change == "s_dim2":
        s = np.zeros((3, 4, 3), np.uint8)
    elif change == "s_dim1":
        s = np.zeros((3, 5, 2), np.uint8)
    else:
        s = np.zeros((4, 4, 2), np.uint8)           # error vector: [m // 64 + g + 1, n, 2]
    assert status_v1(x, gi, "rint", E4M3, 32, y, s) == 161002


def test_grouped_empty_inputs():
    x, gi, y, s = grouped_args()
    assert status_v1(x, np.zeros(0, np.int32), "rint", E4M3, 32, y, np.zeros((1, 4, 2), np.uint8)) == 161002
    xe = bf((0, 4))
    ye = np.zeros((0, 4), ml_dtypes.float8_e4m3fn)
    se = np.full((1, 4, 2), 0xAB, np.uint8)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(xe, np.array([0], np.int32), "rint", E4M3, 32, ye, se)
    assert (st, ws) == (0, 0)
    assert api.aclnnGroupedDynamicMxQuant(None, 0, ex) == 0 and (se == 0xAB).all()   # no kernel, out untouched


@pytest.mark.parametrize("m, n", [(0, 4), (64, 0)])
@pytest.mark.parametrize("change, status", [("gi_int64", 161002), ("gi_2d", 161002), ("s_rows", 161002),
                                            ("gi_values", 161002), ("gi_last", 161002), (None, 0)])
def test_grouped_empty_x_still_runs_the_checks(m, n, change, status):
    # CANN's CheckParams (dtypes, shapes) come before the x->IsEmpty() early return
    # (hicann/ops-nn: quant/grouped_dynamic_mx_quant/op_api/aclnn_grouped_dynamic_mx_quant[_v2].cpp); the
    # emulator-added groupIndex value check runs on empty x too
    gi = np.array([m // 2, m], np.int32)
    s = np.full((m // 64 + 2, n, 2), 0xAB, np.uint8)
    if change == "gi_int64":
        gi = gi.astype(np.int64)
    elif change == "gi_2d":
        gi = gi.reshape(1, 2)
        s = np.full((m // 64 + 1, n, 2), 0xAB, np.uint8)
    elif change == "s_rows":
        s = np.full((m // 64 + 3, n, 2), 0xAB, np.uint8)
    elif change == "gi_values":
        gi = np.array([m + 1, m], np.int32)               # decreasing, past m
    elif change == "gi_last":
        gi = np.array([0, m + 5], np.int32)
    x, y = bf((m, n)), np.zeros((m, n), ml_dtypes.float8_e4m3fn)
    for st in (status_v1(x, gi, "rint", E4M3, 32, y, s), status_v2(x, gi, "rint", E4M3, 32, 0, 0.0, y, s)):
        assert st == status, change
    if status == 0:
        assert (s == 0xAB).all()                          # success launches nothing: the caller's bytes stay
    if change in ("gi_values", "gi_last", "gi_int64"):
        with pytest.raises(AclnnError) as e:
            api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24)
        assert e.value.status == status
    elif change is None:
        y2, s2 = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24, gap_fill=7)
        assert np.asarray(y2).shape == (m, n) and (s2 == 7).all() and s2.shape == s.shape


@pytest.mark.parametrize("gi, why", [([40, 30, 64], "decreasing"), ([30, 60], "last != m"), ([-1, 64], "negative"),
                                     ([30, 70], "past m")])
def test_grouped_group_index_values_emulator_check(gi, why):
    x, _, y, _ = grouped_args()
    s = np.zeros((1 + len(gi), 4, 2), np.uint8)
    st = status_v1(x, np.array(gi, np.int32), "rint", E4M3, 32, y, s)
    assert st == 161002, why
    with pytest.raises(AclnnError, match="emulator-added") as e:
        api.npu_grouped_dynamic_mx_quant(x, np.array(gi, np.int32), dst_type=24)
    assert e.value.status == 161002


def test_grouped_mxscale_must_be_contiguous():
    x, gi, y, _ = grouped_args()
    s = np.zeros((4, 3, 2), np.uint8).transpose(1, 0, 2)
    assert not s.flags.c_contiguous
    assert status_v1(x, gi, "rint", E4M3, 32, y, s) == 161002


def test_grouped_y_may_be_non_contiguous_for_fp8():
    x, gi, _, s = grouped_args()
    big = np.zeros((64, 8), ml_dtypes.float8_e4m3fn)
    y = big[:, ::2]
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, gi, "rint", E4M3, 32, y, s)
    assert st == 0 and api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 0
    assert (y.view(np.uint8) == 0x78).all() and not big.view(np.uint8)[:, 1::2].any()   # 1.0: scale 0x77, y 256


@pytest.mark.parametrize("args, status", [
    (("floor", E4M3, 0, 0.0), 561103),        # error vector: FP8 needs rint (tiling rule)
    (("rint", E2M1, 1, 0.0), 561103),         # scale_alg 1 only for FP8
    (("rint", E4M3, 2, 0.0), 561103),         # scale_alg 2 only for FP4
    (("rint", E2M1, 0, 5.0), 561103),         # E2M1 dst_type_max 0 or [6, 12]
    (("rint", E2M1, 0, 12.5), 561103),
    (("rint", E1M2, 2, 4.0), 561103),         # E1M2 dst_type_max 0 or [1.75, 3.5]
    (("rint", E4M3, 3, 0.0), 161002),         # scaleAlg outside {0, 1, 2}
    (("ceil", E2M1, 0, 0.0), 161002),         # roundMode outside rint/round/floor
])
def test_grouped_v2_rules(args, status):
    rm, dt, alg, dtm = args
    x, gi, _, s = grouped_args()
    y = np.zeros((64, 2), np.uint8) if dt in (E2M1, E1M2) else np.zeros((64, 4), ml_dtypes.float8_e4m3fn)
    kw = dict(y_dtype=dt) if dt in (E2M1, E1M2) else {}
    assert status_v2(x, gi, rm, dt, 32, alg, dtm, y, s, **kw) == status


def test_grouped_v2_fp4_odd_n_and_contiguity():
    x, gi, _, _ = grouped_args(n=3)
    s = np.zeros((3, 3, 2), np.uint8)
    y = np.zeros((64, 3), ml_dtypes.float4_e2m1fn)                 # unpacked FP4: shape as x
    assert status_v2(x, gi, "rint", E2M1, 32, 0, 0.0, y, s) == 561103
    x, gi, _, s = grouped_args(n=4)
    y = np.zeros((64, 4), np.uint8)[:, ::2]                        # packed [64, 2] but strided
    assert status_v2(x, gi, "rint", E2M1, 32, 0, 0.0, y, s, y_dtype=E2M1) == 161002


def test_grouped_v2_fp4_outputs_packed_and_unpacked():
    x, gi, _, s = grouped_args(n=4)
    ref_y, ref_s = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=296)
    yp = np.zeros((64, 2), np.uint8)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantV2GetWorkspaceSize(x, gi, "rint", E2M1, 32, 0, 0.0, yp, s,
                                                                  y_dtype="float4_e2m1")
    assert st == 0 and api.aclnnGroupedDynamicMxQuantV2(None, ws, ex) == 0
    assert np.array_equal(yp, ref_y) and np.array_equal(s, ref_s)
    yu = np.zeros((64, 4), ml_dtypes.float4_e2m1fn)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantV2GetWorkspaceSize(x, gi, "rint", E2M1, 32, 0, 0.0, yu, s)
    assert st == 0 and api.aclnnGroupedDynamicMxQuantV2(None, ws, ex) == 0
    assert np.array_equal(yu.view(np.uint8)[:, 0::2], ref_y & 0xF) and np.array_equal(yu.view(np.uint8)[:, 1::2],
                                                                                        ref_y >> 4)


def test_grouped_versions():
    x, gi, y, s = grouped_args()
    assert status_v2(x, gi, "rint", E4M3, 32, 0, 0.0, y, s, cann_version="9.0.0") == 161002   # no V2 before 9.1
    assert status_v2(x, gi, "rint", E4M3, 32, 1, 0.0, y, s, cann_version="9.1.0") == 0
    assert status_v2(x, gi, "rint", E4M3, 32, 2, 0.0, y, s, cann_version="9.1.0") == 161002   # scale_alg 0/1
    assert status_v1(x, gi, "rint", E4M3, 32, y, s, cann_version="8.5.0") == 161002


def test_grouped_gap_fill_none_keeps_caller_bytes():
    m, n = 64, 2
    x = bf((m, n))
    gi = np.array([64, 64], np.int32)           # group 0 owns row 0; row 1 is a gap row, group 1 row 2 is empty
    y = np.zeros((m, n), ml_dtypes.float8_e4m3fn)
    s = np.full((3, n, 2), 0xAB, np.uint8)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, gi, "rint", E4M3, 32, y, s, gap_fill=None)
    assert st == 0 and api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 0
    assert (s[0] == 0x77).all() and (s[1:] == 0xAB).all()
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, gi, "rint", E4M3, 32, y, s)
    assert api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 0 and (s[1:] == 0).all()


# --- GroupedDynamicMxQuant torch_npu front end ------------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(x=bf((2, 8, 4))), "X dimNum should be 2"),
    (dict(gi=np.array([[8]], np.int32)), "Group_index dimNum should be 1"),
    (dict(blocksize=64), "blocksize must be 32"),
    (dict(scale_alg=3), "scale_alg must be 0, 1 or 2"),
    (dict(dst_type=36), "not an MX output type"),                 # an aclDataType code, not a torch code
    (dict(dst_type=296, x=bf((8, 3))), "divisible by 2"),
    (dict(scale_alg=1, cann_version="9.0.0"), "does not support the parameter scale_alg"),
    (dict(gap_fill=300), "gap_fill"),
    (dict(nan_in_max="max"), "nan_in_max"),
])
def test_grouped_torch_checks(kw, match):
    args = dict(x=bf((8, 4)), gi=np.array([8], np.int32))
    args.update({k: kw.pop(k) for k in ("x", "gi") if k in kw})
    with pytest.raises(AclnnError, match=match) as e:
        api.npu_grouped_dynamic_mx_quant(args["x"], args["gi"], **kw)
    assert e.value.status == 161002


def test_grouped_torch_ut_zeros():
    # op-plugin UT (docs/ops/mx_quant.md §7): x zeros [1, 2], group_index [1] -> y 0, mxscale [1, 2, 2] all 0x00
    y, s = api.npu_grouped_dynamic_mx_quant(bf((1, 2), 0.0), [1], dst_type=24)
    assert not np.asarray(y).view(np.uint8).any() and s.shape == (1, 2, 2) and not s.any()


def test_grouped_trace():
    (y, s), tr = api.npu_grouped_dynamic_mx_quant(bf((32, 128)), [32], dst_type=24, trace=True)
    assert tr.op == "GroupedDynamicMxQuant" and tr.block_dim == 56 and tr.tiling_key == 256
    assert list(tr.tiling_data.values())[:9] == [56, 56, 128, 32, 128, 64, 128, 1, 1]
    assert len(tr.tiling_data_bytes) == 88 and tr.workspace_size == 32 and tr.gm_overrun == []


# --- DynamicMxQuant aclnn -------------------------------------------------------------------------------------

def dyn_status(version, x, axis=-1, rm="rint", dt=E2M1, bs=32, alg=0, dtm=0.0, mlb=0.0, y=None, s=None, **kw):
    shape = x.shape if x is not None else (4, 64)
    if y is None:
        y = np.zeros(shape[:-1] + (shape[-1] // 2,), np.uint8) if dt in (E2M1, E1M2) else \
            np.zeros(shape, ml_dtypes.float8_e4m3fn if dt == E4M3 else ml_dtypes.float8_e5m2)
        if dt in (E2M1, E1M2):
            kw.setdefault("y_dtype", dt)
    if s is None:
        ax = axis % len(shape)
        ss = list(shape)
        ss[ax] = -(-(-(-shape[ax] // bs)) // 2) if bs > 0 else 1
        s = np.zeros(tuple(ss) + (2,), np.uint8)
    if version == "v1":
        st, ws, ex = api.aclnnDynamicMxQuantGetWorkspaceSize(x, axis, rm, dt, bs, alg, y, s, **kw)
    elif version == "v2":
        st, ws, ex = api.aclnnDynamicMxQuantV2GetWorkspaceSize(x, axis, rm, dt, bs, alg, dtm, y, s, **kw)
    else:
        st, ws, ex = api.aclnnDynamicMxQuantV3GetWorkspaceSize(x, axis, rm, dt, bs, alg, dtm, mlb, y, s, **kw)
    if st == 0:
        name = {"v1": "aclnnDynamicMxQuant", "v2": "aclnnDynamicMxQuantV2", "v3": "aclnnDynamicMxQuantV3"}[version]
        assert getattr(api, name)(None, ws, ex) == 0
    return st


def test_dynamic_aclnn_example_and_outputs():
    # D1 through aclnnDynamicMxQuant (V1): bf16 [1, 4] -> E4M3 00 48 60 78, mxscale [1, 1, 2] = 80 00
    x = np.array([[0, 8, 64, 512]], np.float32).astype(ml_dtypes.bfloat16)
    y = np.zeros((1, 4), ml_dtypes.float8_e4m3fn)
    s = np.zeros((1, 1, 2), np.uint8)
    st, ws, ex = api.aclnnDynamicMxQuantGetWorkspaceSize(x, -1, None, E4M3, 32, 0, y, s)   # null roundMode = rint
    assert (st, ws) == (0, 32) and api.aclnnDynamicMxQuant(None, ws, ex) == 0
    assert y.view(np.uint8).ravel().tolist() == [0x00, 0x48, 0x60, 0x78] and s.ravel().tolist() == [0x80, 0]


def test_dynamic_nullptr_and_platform():
    assert dyn_status("v1", None) == 161001
    x = bf((4, 64))
    st, _, _ = api.aclnnDynamicMxQuantGetWorkspaceSize(x, -1, "rint", E2M1, 32, 0, None, np.zeros((4, 1, 2),
                                                                                                  np.uint8))
    assert st == 161001
    assert dyn_status("v1", x, soc="ascend910b2") == 361001          # error vector: 361001 for Dynamic


@pytest.mark.parametrize("version, kw", [
    ("v1", dict(x=np.zeros((4, 64), np.int8))),
    ("v1", dict(y=np.zeros((4, 64), np.float16))),
    ("v1", dict(s=np.zeros((4, 1, 2), np.float32))),
    ("v1", dict(dt=34)),                                   # HIFLOAT8 is not an MX output
    ("v1", dict(dt=E5M2, y=np.zeros((4, 64), ml_dtypes.float8_e4m3fn))),
    ("v1", dict(rm="ceil")), ("v1", dict(dt=E4M3, rm="floor")),
    ("v1", dict(bs=48)), ("v1", dict(bs=0)), ("v1", dict(bs=2048)),
    ("v1", dict(x=np.zeros((4, 64), np.float32), bs=64)),
    ("v1", dict(alg=2)), ("v1", dict(alg=1)),               # V1: scale_alg 0/1, FP4 only 0
    ("v2", dict(dt=E1M2, alg=2)), ("v2", dict(alg=1)), ("v2", dict(dt=E4M3, alg=2)), ("v2", dict(alg=2, bs=64)),
    ("v2", dict(alg=3)),
    ("v2", dict(dtm=5.0)), ("v2", dict(dtm=13.0)), ("v2", dict(dt=E4M3, dtm=7.0)), ("v2", dict(dtm=8.0, bs=64)),
    ("v3", dict(dt=E4M3, alg=1, mlb=-1.0)), ("v3", dict(dt=E4M3, alg=0, mlb=1.0)),
    ("v1", dict(x=bf((1,) * 8))), ("v1", dict(axis=2)), ("v1", dict(axis=-3)),
    ("v1", dict(y=np.zeros((4, 31), np.uint8))),           # packed FP4 y of the wrong logical shape
    ("v1", dict(x=bf((4, 63)), y=np.zeros((4, 31), np.uint8))),                           # odd last dim, FP4
    ("v1", dict(s=np.zeros((4, 2, 2), np.uint8))), ("v1", dict(s=np.zeros((4, 1), np.uint8))),
    ("v1", dict(x=np.zeros((4, 16), np.float32), dt=E4M3, s=np.zeros((4, 1, 2), np.uint8))),  # FP32 axis < 32
    ("v1", dict(y=np.zeros((4, 64), np.uint8)[:, ::2])),    # yOut non-contiguous
    ("v1", dict(s=np.zeros((8, 1, 2), np.uint8)[::2])),    # mxscaleOut non-contiguous
])
def test_dynamic_checks(version, kw):
    x = kw.pop("x", bf((4, 64)))
    assert dyn_status(version, x, **kw) == 161002


@pytest.mark.parametrize("version, kw", [
    ("v2", dict(alg=2, dtm=6.0)), ("v2", dict(alg=2, dtm=12.0)), ("v3", dict(dt=E4M3, alg=1, mlb=2.0)),
    ("v1", dict(dt=E5M2, alg=1)), ("v1", dict(dt=E1M2, rm="floor")), ("v1", dict(axis=0, bs=64)),
])
def test_dynamic_accepted(version, kw):
    x = kw.pop("x", bf((4, 64)))
    assert dyn_status(version, x, **kw) == 0


def test_dynamic_empty_input():
    x = bf((0, 64))
    y = np.zeros((0, 32), np.uint8)
    s = np.zeros((0, 1, 2), np.uint8)
    st, ws, ex = api.aclnnDynamicMxQuantGetWorkspaceSize(x, -1, "rint", E2M1, 32, 0, y, s, y_dtype=E2M1)
    assert (st, ws) == (0, 0) and api.aclnnDynamicMxQuant(None, 0, ex) == 0


@pytest.mark.parametrize("kw, match", [
    (dict(axis=2), "axis"), (dict(block_size=48), "block_size"), (dict(dst_type=40), "not an MX output"),
    (dict(x=bf((4, 7))), "divisible by 2"), (dict(fp4_nibble_order="msb"), "fp4_nibble_order"),
])
def test_dynamic_torch_checks(kw, match):
    x = kw.pop("x", bf((4, 64)))
    with pytest.raises(AclnnError, match=match) as e:
        api.npu_dynamic_mx_quant(x, **kw)
    assert e.value.status == 161002


def test_dynamic_trace_notes():
    (y, s), tr = api.npu_dynamic_mx_quant(bf((8, 64)), trace=True)
    assert tr.op == "DynamicMxQuant" and any("tiling not reproduced" in n for n in tr.notes)
    assert y.shape == (8, 32) and y.dtype == np.uint8 and s.shape == (8, 1, 2)


def test_grouped_pad_slots_are_written_over_caller_bytes():
    # §10 G9 through aclnn with gap_fill=None over a 0xAB-filled mxscale: the kernel itself writes the pad slot of
    # row 1 (0x00); only the gap row 3 keeps the caller's bytes
    a = np.empty(130, np.uint16)
    a[0:32], a[32:64], a[64:70], a[70:102], a[102:130] = 0x3F80, 0x4040, 0x3F00, 0xBFC0, 0x42C8
    x = a.view(ml_dtypes.bfloat16).reshape(130, 1)
    y = np.zeros((130, 1), ml_dtypes.float8_e4m3fn)
    s = np.full((4, 1, 2), 0xAB, np.uint8)
    for faithful in (False, True):
        st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, np.array([70, 130], np.int32), "rint", E4M3,
                                                                    32, y, s, gap_fill=None, faithful=faithful)
        assert st == 0 and api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 0
        assert s.ravel().tolist() == [0x77, 0x78, 0x76, 0x00, 0x77, 0x7D, 0xAB, 0xAB]


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("axis", [-1, 0])
def test_dynamic_pad_slots_are_written_over_caller_bytes(axis, faithful):
    # §10 D2 (70 elements along the axis -> 3 blocks, slot 1 of the second pair is the 0x00 pad) into a
    # 0xAB-filled mxscaleOut, along the last axis and along axis 0 (the copy-out replaces every caller byte; that the
    # kernel itself writes the pad is proven with poisoned internal buffers in test_mx_written.py)
    a = np.empty(70, np.uint16)
    a[:32], a[32:64], a[64:] = 0x3F80, 0x4040, 0x3F00
    x = a.view(ml_dtypes.bfloat16).reshape((1, 70) if axis == -1 else (70, 1))
    y = np.zeros(x.shape, ml_dtypes.float8_e4m3fn)
    s = np.full((1, 2, 2) if axis == -1 else (2, 1, 2), 0xAB, np.uint8)
    st, ws, ex = api.aclnnDynamicMxQuantGetWorkspaceSize(x, axis, "rint", E4M3, 32, 0, y, s, faithful=faithful)
    assert st == 0 and api.aclnnDynamicMxQuant(None, ws, ex) == 0
    assert s.ravel().tolist() == [0x77, 0x78, 0x76, 0x00]


# --- dst_type forms, exports, memory guard, no partial writes ---------------------------------------------------

@pytest.mark.parametrize("dst_type, want", [
    (23, "float8_e5m2"), (24, "float8_e4m3fn"), (291, "float8_e5m2"), (292, "float8_e4m3fn"),   # torch / torch_npu
    (296, "float4_e2m1"), (297, "float4_e1m2"), (np.int64(24), "float8_e4m3fn"),
    ("float8_e4m3fn", "float8_e4m3fn"), ("e5m2", "float8_e5m2"), ("torch.float8_e5m2", "float8_e5m2"),
    ("float4_e1m2fn_x2", "float4_e1m2"), (ml_dtypes.float8_e4m3fn, "float8_e4m3fn"),
    (ml_dtypes.float4_e2m1fn, "float4_e2m1"),
])
def test_dst_type_forms(dst_type, want):
    # the same format whatever the spelling: compare with the canonical torch code's result
    code = {"float8_e5m2": 23, "float8_e4m3fn": 24, "float4_e2m1": 296, "float4_e1m2": 297}[want]
    x = np.linspace(-3, 3, 4 * 64, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(4, 64)
    got = api.npu_dynamic_mx_quant(x, dst_type=dst_type)
    ref = api.npu_dynamic_mx_quant(x, dst_type=code)
    assert got[0].dtype == ref[0].dtype
    assert np.array_equal(got[0].view(np.uint8), ref[0].view(np.uint8)) and np.array_equal(got[1], ref[1])
    got = api.npu_grouped_dynamic_mx_quant(x, [4], dst_type=dst_type)
    ref = api.npu_grouped_dynamic_mx_quant(x, [4], dst_type=code)
    assert np.array_equal(got[0].view(np.uint8), ref[0].view(np.uint8)) and np.array_equal(got[1], ref[1])


@pytest.mark.parametrize("dst_type, status, match", [
    (290, 161002, r"hifloat8\) is not an MX output type"),       # torch_npu.hifloat8: known code, not an MX format
    (293, 161002, r"float8_e8m0\) is not an MX output type"),    # torch_npu.float8_e8m0fnu: the scale format
    (25, 161002, "not a torch_npu dtype code"),
    (35, 161002, "aclDataType of float8_e5m2, whose torch code is 23"),
    (40, 161002, "aclDataType of float4_e2m1, whose torch code is 296"),
    ("float8_e8m0", 161002, "not an MX output type"),
    (np.float16, 161002, "not an MX output type"),
    (True, 161002, "not a dtype"),
    (None, 161001, "dst_type is None"),
])
def test_dst_type_rejected(dst_type, status, match):
    with pytest.raises(AclnnError, match=match) as e:
        api.npu_dynamic_mx_quant(bf((2, 32)), dst_type=dst_type)
    assert e.value.status == status


def test_export_lists_name_public_functions():
    assert set(api.OPS_EXPORTS) >= {"npu_grouped_dynamic_mx_quant", "npu_dynamic_mx_quant"}
    assert len(api.ACLNN_EXPORTS) == 10
    for name in api.OPS_EXPORTS + api.ACLNN_EXPORTS:
        assert callable(getattr(api, name)), name
    for op in ("GroupedDynamicMxQuant", "GroupedDynamicMxQuantV2", "DynamicMxQuant", "DynamicMxQuantV2",
               "DynamicMxQuantV3"):
        assert f"aclnn{op}" in api.ACLNN_EXPORTS and f"aclnn{op}GetWorkspaceSize" in api.ACLNN_EXPORTS


@pytest.fixture
def memory_limit():
    from npu_emu.frontend import core as frontend

    old = frontend.set_memory_limit(None)
    yield frontend.set_memory_limit
    frontend.set_memory_limit(old)


def test_memory_guard_before_allocation(memory_limit):
    # outputs of x [64, 256] to E4M3: y 16384 bytes + mxscale 64 * 4 pairs * 2 = 512 (dynamic, last axis) or
    # (64 // 64 + 1) * 256 * 2 = 1024 (grouped, one group)
    x = bf((64, 256))
    memory_limit(10_000)
    for call, need in ((lambda: api.npu_dynamic_mx_quant(x, dst_type=24), "16,896"),
                       (lambda: api.npu_grouped_dynamic_mx_quant(x, [64], dst_type=24), "17,408")):
        with pytest.raises(AclnnError, match=f"needs {need} bytes") as e:
            call()
        assert e.value.status == 361001
    memory_limit(20_000)
    api.npu_dynamic_mx_quant(x, dst_type=24)


def test_phase_two_failure_leaves_outputs_untouched(memory_limit):
    # the memory guard trips in phase 2 (after a successful GetWorkspaceSize): status 361001, y and mxscale keep
    # the caller's bytes
    x = bf((64, 256))
    y = np.full((64, 256), 0x11, np.uint8).view(ml_dtypes.float8_e4m3fn)
    s = np.full((1, 256, 2), 0x22, np.uint8)              # axis 0: 64 rows = 2 blocks = 1 pair
    st, ws, ex = api.aclnnDynamicMxQuantGetWorkspaceSize(x, 0, "rint", E4M3, 32, 0, y, s)
    assert st == 0
    memory_limit(1000)
    assert api.aclnnDynamicMxQuant(None, ws, ex) == 361001
    assert (y.view(np.uint8) == 0x11).all() and (s == 0x22).all()
    gi = np.array([64], np.int32)
    yg = np.full((64, 256), 0x11, np.uint8).view(ml_dtypes.float8_e4m3fn)
    sg = np.full((2, 256, 2), 0x22, np.uint8)
    memory_limit(None)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, gi, "rint", E4M3, 32, yg, sg)
    assert st == 0
    memory_limit(1000)
    assert api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 361001
    assert (yg.view(np.uint8) == 0x11).all() and (sg == 0x22).all()


def test_read_only_output_is_rejected_before_anything_is_written():
    x = bf((64, 256))
    y = np.full((64, 256), 0x11, np.uint8).view(ml_dtypes.float8_e4m3fn)
    s = np.zeros((2, 256, 2), np.uint8)
    s.flags.writeable = False
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, np.array([64], np.int32), "rint", E4M3, 32, y, s)
    assert st == 161002 and ex is None and (y.view(np.uint8) == 0x11).all()
