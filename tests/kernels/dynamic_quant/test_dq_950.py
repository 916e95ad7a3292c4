"""DynamicQuant on Ascend 950 (arch35): every emulated template against the independent golden, bit for bit.

The golden (golden.dynamic_quant_950) is plain numpy from docs/ops/dynamic_quant.md §9.1; FP8 through ml_dtypes after
the saturation clamp, HiF8 through npu_emu.dtypes.golden.encode_round. Templates are selected with small
core_num / ub_size overrides (tiling_arch35 derives them; the test asserts the template it expects).
"""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.dynamic_quant import api, golden, tiling_arch35 as T

BF16 = ml_dtypes.bfloat16
SOC = "ascend950pr"
TORCH_CODE = {"int8": None, "int4": 16, "hifloat8": 290, "float8_e5m2": 23, "float8_e4m3fn": 24}
KINDS = ("int8", "int4", "hifloat8", "float8_e5m2", "float8_e4m3fn")

# (template, rows, L, core_num, ub_size, quant_mode, moe)
SHAPES = {
    0: (7, 300, 4, None, "pertoken", False),
    1: (8, 2000, 4, 8192, "pertoken", False),
    2: (7, 96, 4, None, "pertoken", True),
    3: (8, 2000, 4, 8192, "pertoken", True),
    4: (9, 300, 4, None, "pertensor", False),
    5: (8, 2000, 4, 8192, "pertensor", False),
    10: (7, 96, 4, None, "pertensor", True),
    11: (8, 2000, 4, 8192, "pertensor", True),
    12: (2, 3002, 8, 4096, "pertoken", False),
}


def _data(rows, L, dtype=BF16, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, L)) * 3 * rng.random((rows, 1)) * 4).astype(np.float32)
    return x.astype(dtype)


def _run(x, smooth=None, group=None, *, kind="int8", asym=False, quant_mode="pertoken", dst_type_max=0.0,
         core_num=None, ub_size=None, faithful=False, div_model="ieee"):
    fn = api.npu_dynamic_quant_asymmetric if asym else api.npu_dynamic_quant
    out = fn(x, smooth_scales=smooth, group_index=group, dst_type=TORCH_CODE[kind], quant_mode=quant_mode,
             dst_type_max=dst_type_max, soc=SOC, core_num=core_num, ub_size=ub_size, faithful=faithful,
             div_model=div_model)
    return out if asym else (out[0], out[1], None)


def _golden(x, smooth, group, **kw):
    xdt = "bfloat16" if x.dtype == BF16 else "float16"
    gx = golden.widen(x.view(np.uint16), xdt).reshape(-1, x.shape[-1])
    gs = None if smooth is None else golden.widen(smooth.view(np.uint16), xdt)
    return golden.dynamic_quant_950(gx, gs, group, **kw)


def _same_f32(a, b):
    a = np.asarray(a, np.float32).reshape(-1)
    b = np.asarray(b, np.float32).reshape(-1)
    nan = np.isnan(b)
    assert np.array_equal(np.isnan(a), nan)
    assert np.array_equal(a[~nan].view(np.uint32), b[~nan].view(np.uint32))


def _check(x, smooth=None, group=None, *, kind="int8", asym=False, quant_mode="pertoken", dst_type_max=0.0,
           core_num=None, ub_size=None, template=None, faithful=False):
    rows, L = int(np.prod(x.shape[:-1])), x.shape[-1]
    if template is not None:
        res = T.tiling(rows, L, has_smooth=smooth is not None, group_num=0 if group is None else len(group),
                       y_kind=kind, asymmetric=asym, quant_mode=quant_mode, soc=SOC, core_num=core_num,
                       ub_size=ub_size)
        assert res.tiling_key == template
    y, s, o = _run(x, smooth, group, kind=kind, asym=asym, quant_mode=quant_mode, dst_type_max=dst_type_max,
                   core_num=core_num, ub_size=ub_size, faithful=faithful)
    gy, gs, go = _golden(x, smooth, group, y_kind=kind, asymmetric=asym, quant_mode=quant_mode,
                         dst_type_max=dst_type_max)
    yb = np.asarray(y).reshape(rows, -1).view(np.uint8)
    if kind == "int4":
        assert np.array_equal(yb, golden.pack_int4(gy))
    else:
        assert np.array_equal(yb, gy.reshape(rows, -1).view(np.uint8))
    assert np.asarray(s).shape == ((1,) if quant_mode == "pertensor" else x.shape[:-1])
    _same_f32(s, gs)
    if asym:
        _same_f32(o, go)
    return y, s, o


def test_a_reused_output_is_written_whole(cache_every_output):
    """A second call gets the first call's freed y (tests/conftest.py): every byte is written again."""
    y = _check(_data(5, 200, seed=1))[0]
    where = y.ctypes.data
    del y
    y = _check(_data(5, 200, seed=2))[0]
    assert y.ctypes.data == where


def _inputs(template, kind, dtype=BF16, seed=0):
    rows, L, core, ub, mode, moe = SHAPES[template]
    if kind == "int4":                 # torch_npu's quint4x2 packs eight codes per int32
        L += -L % 8
    x = _data(rows, L, dtype, seed)
    smooth = group = None
    if moe:
        rng = np.random.default_rng(seed + 1)
        smooth = (rng.random((3, L)) * 1.5 + 0.25).astype(np.float32).astype(dtype)
        group = np.array([2, 2, rows], np.int32)
    return x, smooth, group, dict(quant_mode=mode, core_num=core, ub_size=ub, template=template)


@pytest.mark.parametrize("template", sorted(SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_templates_symmetric(template, kind):
    x, smooth, group, kw = _inputs(template, kind)
    _check(x, smooth, group, kind=kind, **kw)


@pytest.mark.parametrize("template", [0, 1, 4, 12])
@pytest.mark.parametrize("kind", KINDS)
def test_templates_asymmetric(template, kind):
    x, smooth, group, kw = _inputs(template, kind, seed=3)
    _check(x, smooth, group, kind=kind, asym=True, **kw)


@pytest.mark.parametrize("kind", ["int8", "float8_e4m3fn"])
def test_smooth_and_half(kind):
    x = _data(6, 200, np.float16, 5)
    sm = (np.random.default_rng(9).random(200) + 0.5).astype(np.float16)
    _check(x, sm, kind=kind, template=0)
    _check(x, sm, kind=kind, quant_mode="pertensor", template=4)


def test_special_rows():
    x = _data(6, 128, np.float32, 7)
    x[0] = 0.0
    x[1, 5] = np.inf
    x[2, 7] = np.nan
    x[3] *= np.float32(2.0 ** -130)           # subnormal after the bf16 cast
    x[4, 3] = -np.inf
    xb = x.astype(BF16)
    for kind in KINDS:
        y, s, _ = _check(xb, kind=kind)
        assert s[0] == 0 and np.all(np.asarray(y)[0].view(np.uint8) == 0)     # 0 / 0 = NaN -> code 0
    for kind in ("int8", "hifloat8"):
        _check(xb, kind=kind, asym=True)
        _check(xb, kind=kind, quant_mode="pertensor")


@pytest.mark.parametrize("dtm", [0.0, 1e-7, 15.0, 1000.5, 32768.0])
def test_dst_type_max(dtm):
    x = _data(5, 256, BF16, 11)
    y, s, _ = _check(x, kind="hifloat8", dst_type_max=dtm)
    c = np.float32(32768.0) if dtm < 1e-6 else np.float32(dtm)
    m = np.abs(golden.widen(x.view(np.uint16), "bfloat16")).max(axis=1)
    assert np.array_equal(s.view(np.uint32), (m * (np.float32(1) / c)).astype(np.float32).view(np.uint32))
    # dst_type_max only changes the hifloat8 constant
    y8, s8, _ = _run(x, kind="float8_e4m3fn", dst_type_max=dtm)
    y0, s0, _ = _run(x, kind="float8_e4m3fn")
    assert np.array_equal(s8.view(np.uint32), s0.view(np.uint32))


@pytest.mark.parametrize("dtm", [-1.0, 32769.0, float("nan")])
def test_dst_type_max_range(dtm):
    with pytest.raises(AclnnError) as e:
        _run(_data(2, 64), kind="hifloat8", dst_type_max=dtm)
    assert e.value.status == 561002


@pytest.mark.parametrize("template", [0, 1, 3, 4, 11, 12])
@pytest.mark.parametrize("kind, asym", [("int8", False), ("int4", True), ("hifloat8", False),
                                        ("float8_e5m2", True)])
def test_faithful_equals_fused(template, kind, asym):
    x, smooth, group, kw = _inputs(template, kind, seed=21)
    x[0, :7] = np.array([0, np.inf, -1e-40, 3, -3, 1e30, 2], np.float32).astype(BF16)
    kw.pop("template")
    a = _run(x, smooth, group, kind=kind, asym=asym, **kw)
    b = _run(x, smooth, group, kind=kind, asym=asym, faithful=True, **kw)
    assert np.array_equal(np.asarray(a[0]).view(np.uint8), np.asarray(b[0]).view(np.uint8))
    _same_f32(a[1], b[1])
    if asym:
        _same_f32(a[2], b[2])


def test_aclnn_v3_v4():
    x = _data(4, 64)
    y = np.zeros((4, 64), np.uint8)
    s = np.zeros(1, np.float32)
    st, ws, ex = api.aclnnDynamicQuantV4GetWorkspaceSize(x, None, None, 34, True, "pertensor", 15.0, y, s, None,
                                                         soc=SOC)
    assert st == 0 and ws >= T.SYS_WORKSPACE_SIZE
    assert api.aclnnDynamicQuantV4(None, ws, ex) == 0
    gy, gs, _ = _golden(x, None, None, y_kind="hifloat8", quant_mode="pertensor", dst_type_max=15.0)
    assert np.array_equal(y, gy.reshape(4, 64)) and s.view(np.uint32)[0] == gs.view(np.uint32)[0]
    y8 = np.zeros((4, 64), ml_dtypes.float8_e5m2)
    s8 = np.zeros(4, np.float32)
    o8 = np.zeros(4, np.float32)
    st, ws, ex = api.aclnnDynamicQuantV3GetWorkspaceSize(x, None, None, 35, False, "pertoken", y8, s8, o8, soc=SOC)
    assert st == 0 and api.aclnnDynamicQuantV3(None, ws, ex) == 0
    gy, gs, go = _golden(x, None, None, y_kind="float8_e5m2", asymmetric=True)
    assert np.array_equal(y8.view(np.uint8), gy.reshape(4, 64))
    # V1 / V2 run the same kernels on the 950
    y1 = np.zeros((4, 64), np.int8)
    s1 = np.zeros(4, np.float32)
    st, ws, ex = api.aclnnDynamicQuantGetWorkspaceSize(x, None, y1, s1, soc=SOC)
    assert st == 0 and api.aclnnDynamicQuant(None, ws, ex) == 0
    gy, gs, _ = _golden(x, None, None)
    assert np.array_equal(y1, gy.reshape(4, 64)) and np.array_equal(s1.view(np.uint32), gs.view(np.uint32))


@pytest.mark.parametrize("case, status", [
    (dict(soc="ascend910b2"), 561000),                             # V3 / V4 exist on the 950 only
    (dict(quantMode="perchannel", s=np.zeros(1, np.float32)), 161002),    # perchannel scale: x[:-2] + x[-1]
    (dict(quantMode="pertoken"), 161002),                          # scale (1,) is not x's leading dims
    (dict(quantMode="perrow"), 161002),
    (dict(y=np.zeros((4, 64), np.float16)), 161002),               # y dtype outside the 950 list
    (dict(y=np.zeros((4, 64), np.uint8), dstType=2), 161002),      # uint8 yOut names no FP8 / HiF8 format
    (dict(dstTypeMax=40000.0), 561002),
    (dict(x=np.zeros((4, 64), np.float32)), 161002),
])
def test_aclnn_checks(case, status):
    args = dict(x=_data(4, 64), dstType=34, quantMode="pertensor", dstTypeMax=0.0, y=np.zeros((4, 64), np.uint8),
                s=np.zeros(1, np.float32), soc=SOC)
    args.update(case)
    st, ws, ex = api.aclnnDynamicQuantV4GetWorkspaceSize(
        args["x"], None, None, args["dstType"], True, args["quantMode"], args["dstTypeMax"], args["y"], args["s"],
        None, soc=args["soc"])
    assert st == status


def test_group_index_int64_and_empty():
    x = _data(4, 64)
    sm = np.ones((2, 64), BF16)
    with pytest.raises(AclnnError) as e:
        api.npu_dynamic_quant(x, smooth_scales=sm, group_index=np.array([2, 4], np.int64), soc=SOC)
    assert e.value.status == 561002
    y, s = api.npu_dynamic_quant(np.zeros((0, 64), BF16), soc=SOC, dst_type=24)
    assert y.shape == (0, 64) and s.shape == (0,)


def test_torch_dst_type_on_a2_still_refused():
    with pytest.raises(AclnnError) as e:
        api.npu_dynamic_quant(_data(2, 64), dst_type=24)
    assert e.value.status == 161002


def test_vendor_golden_distance():
    """The ops-nn tests/assets/golden.py recipe (scale = max * fp32(1/C) with C = 32768 for HiF8 whatever
    dst_type_max, y = astype of x / scale without a saturation clamp, offset C - max / scale) on finite random rows:
    bit-identical to the kernel for dst types 34 / 35 / 36, symmetric and not (the kernel's clamp never acts there:
    |x / scale| <= C (1 + 2^-23), which the casts round to C)."""
    en_dtypes = pytest.importorskip("en_dtypes")
    x = _data(6, 320, BF16, 31)
    xf = golden.widen(x.view(np.uint16), "bfloat16")
    for kind, c, r, tgt in (("hifloat8", 32768.0, 65536.0, en_dtypes.hifloat8),
                            ("float8_e5m2", 57344.0, 114688.0, ml_dtypes.float8_e5m2),
                            ("float8_e4m3fn", 448.0, 896.0, ml_dtypes.float8_e4m3fn)):
        for asym in (False, True):
            y, s, o = _run(x, kind=kind, asym=asym)
            c32, r32 = np.float32(c), np.float32(r)
            if asym:
                mx, mn = xf.max(-1, keepdims=True), xf.min(-1, keepdims=True)
                vs = ((mx - mn) * (np.float32(1.0) / r32)).astype(np.float32)
                vo = (c32 - mx / vs).astype(np.float32)
                vy = (xf / vs + vo).astype(np.float32).astype(tgt)
            else:
                vs = (np.abs(xf).max(-1, keepdims=True) * (np.float32(1.0) / c32)).astype(np.float32)
                vy = (xf / vs).astype(np.float32).astype(tgt)
            assert np.array_equal(np.asarray(y).view(np.uint8), vy.view(np.uint8)), (kind, asym)
            assert np.array_equal(s.view(np.uint32), vs[:, 0].view(np.uint32))


# perchannel: (template, x shape, core_num, ub_size)
PC_SHAPES = {7: ((2, 16, 200), None, None), 8: ((3, 40, 256), 4, 16384), 9: ((1, 300, 96), 4, 16384)}


def _pc_check(template, kind, asym=False, smooth=False, dtype=BF16, seed=0, faithful=False):
    shape, core, ub = PC_SHAPES[template]
    shape = shape[:-1] + (shape[-1] + (-shape[-1] % 8 if kind == "int4" else 0),)
    x = _data(int(np.prod(shape[:-1])), shape[-1], dtype, seed).reshape(shape)
    sm = (np.random.default_rng(seed + 2).random(shape[-2]) + 0.5).astype(np.float32).astype(dtype) if smooth else None
    res = T.tiling_perchannel(int(np.prod(shape[:-2])), shape[-2], shape[-1], has_smooth=smooth, y_kind=kind,
                              asymmetric=asym, soc=SOC, core_num=core, ub_size=ub)
    assert res.tiling_key == template
    y, s, o = _run(x, sm, None, kind=kind, asym=asym, quant_mode="perchannel", core_num=core, ub_size=ub,
                   faithful=faithful)
    assert np.asarray(s).shape == shape[:-2] + shape[-1:]
    xdt = "bfloat16" if dtype == BF16 else "float16"
    gx = golden.widen(x.view(np.uint16), xdt).reshape(-1, shape[-1])
    gs = None if sm is None else golden.widen(sm.view(np.uint16), xdt)
    gy, gsc, go = golden.dynamic_quant_950(gx, gs, y_kind=kind, asymmetric=asym, quant_mode="perchannel",
                                           m_len=shape[-2])
    yb = np.asarray(y).reshape(gx.shape[0], -1).view(np.uint8)
    assert np.array_equal(yb, golden.pack_int4(gy) if kind == "int4" else gy.view(np.uint8))
    _same_f32(s, gsc)
    if asym:
        _same_f32(o, go)
    return y, s, o


@pytest.mark.parametrize("template", sorted(PC_SHAPES))
@pytest.mark.parametrize("kind", KINDS)
def test_perchannel_templates(template, kind):
    _pc_check(template, kind)


@pytest.mark.parametrize("template", sorted(PC_SHAPES))
@pytest.mark.parametrize("kind", ["int8", "hifloat8"])
def test_perchannel_asym_smooth(template, kind):
    _pc_check(template, kind, asym=True, smooth=True, seed=4)


@pytest.mark.parametrize("template", sorted(PC_SHAPES))
def test_perchannel_faithful(template):
    a = _pc_check(template, "int8", asym=True, smooth=True, seed=8)
    b = _pc_check(template, "int8", asym=True, smooth=True, seed=8, faithful=True)
    assert np.array_equal(np.asarray(a[0]).view(np.uint8), np.asarray(b[0]).view(np.uint8))


def test_perchannel_tiling_unsigned_wrap():
    """IsCapableForFullLoad mixes int64 with sizeof (size_t): for mLen above (UB - 8192 - 16 * 64) / 4 the
    numerator wraps to a huge unsigned value and full load is chosen (reproduced; the device's UB would not hold
    the rows)."""
    big = T.tiling_perchannel(1, 100000, 64, soc=SOC, core_num=8)
    assert big.tiling_key == 7
    small = T.tiling_perchannel(1, 40000, 64, soc=SOC, core_num=8)
    assert small.tiling_key in (8, 9)


def test_torch_tensors():
    """torch in -> torch out: npu_dynamic_quant returns torch.float8_e4m3fn / uint8 (HiF8 codes) tensors, and
    aclnnDynamicQuantV3 writes a torch.float8_e5m2 yOut."""
    torch = pytest.importorskip("torch")
    x = _data(4, 64)
    xt = torch.from_numpy(x.view(np.uint16).astype(np.int16)).view(torch.bfloat16)
    y, s = api.npu_dynamic_quant(xt, dst_type=24, soc=SOC)
    gy, gs, _ = _golden(x, None, None, y_kind="float8_e4m3fn")
    assert y.dtype == torch.float8_e4m3fn and np.array_equal(y.view(torch.uint8).numpy(), gy.reshape(4, 64))
    y, s = api.npu_dynamic_quant(xt, dst_type=290, soc=SOC, quant_mode="pertensor")
    gy, gs, _ = _golden(x, None, None, y_kind="hifloat8", quant_mode="pertensor")
    assert y.dtype == torch.uint8 and np.array_equal(y.numpy(), gy.reshape(4, 64)) and tuple(s.shape) == (1,)
    yo = torch.zeros((4, 64), dtype=torch.float8_e5m2)
    so = torch.zeros(4, dtype=torch.float32)
    st, ws, ex = api.aclnnDynamicQuantV3GetWorkspaceSize(xt, None, None, 35, True, "pertoken", yo, so, None, soc=SOC)
    assert st == 0 and api.aclnnDynamicQuantV3(None, ws, ex) == 0
    gy, gs, _ = _golden(x, None, None, y_kind="float8_e5m2")
    assert np.array_equal(yo.view(torch.uint8).numpy(), gy.reshape(4, 64))
    assert np.array_equal(so.numpy().view(np.uint32), gs.view(np.uint32))
