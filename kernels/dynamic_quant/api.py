"""Front ends of DynamicQuant: torch_npu-style ``npu_dynamic_quant`` / ``npu_dynamic_quant_asymmetric`` and the
aclnn two-phase API (aclnnDynamicQuant, V2, V3, V4).

Call flow: normalise -> checks (aclnn's CheckParams in CANN order, docs/ops/dynamic_quant.md §4) -> the tiling's
own checks (561002) -> emulator-added group_index check -> host tiling (or a user tiling, validated) -> allocate ->
launch -> convert back (torch in -> torch out). Nothing is written to a caller's ``out`` unless everything succeeded.

torch_npu dtype codes (Ascend/op-plugin: op_plugin/ops/opapi/DynamicQuantKernelNpuOpApi.cpp): ``dst_type`` None or
torch.int8 (code 1) -> int8 y of x's shape; torch.quint4x2 (code 16) -> int4 packed eight per int32, y int32
[..., n / 8] (n % 8 == 0). Version choice (select_version): dst_type_max != 0 -> V4, quant_mode != "pertoken" ->
V4 (V3), else V2; V3 / V4 exist on Ascend 950 only (ACLNN_ERR_INNER on A2/A3).

Switches: ``soc`` (default ascend910b2; ascend950pr / ascend950dt run the arch35 kernels, docs §9), ``div_model`` ("ieee" default,
"reciprocal"; the vector Div's rounding, [HW-unverified]), ``faithful`` (the instruction-level transliteration,
bit-identical to the default fused loops), ``tiling`` (a TilingResult to run instead of op_host's, validated),
``core_num`` / ``ub_size`` (platform overrides).
"""

import math

import numpy as np

from npu_emu.device import memo, platforms
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend import output_cache
from npu_emu.frontend.core import (
    Executor,
    Origin,
    as_array,
    check_memory,
    get_workspace,
    is_torch_tensor,
    resolve_dtype,
    run_executor,
    to_user,
    write_out,
)
from npu_emu.ascendc.constants import DT_FLOAT8_E4M3FN, DT_FLOAT8_E5M2, DT_HIFLOAT8, DT_INT4, DT_INT8
from npu_emu.kernels.dynamic_quant import checks, launch, tiling as tiling_mod, tiling_arch35

DEFAULT_SOC = tiling_mod.DEFAULT_SOC
OPS_EXPORTS = ["npu_dynamic_quant", "npu_dynamic_quant_asymmetric"]
ACLNN_EXPORTS = [
    "aclnnDynamicQuantGetWorkspaceSize", "aclnnDynamicQuant",
    "aclnnDynamicQuantV2GetWorkspaceSize", "aclnnDynamicQuantV2",
    "aclnnDynamicQuantV3GetWorkspaceSize", "aclnnDynamicQuantV3",
    "aclnnDynamicQuantV4GetWorkspaceSize", "aclnnDynamicQuantV4",
]
TORCH_INT8 = 1          # at::ScalarType::Char
TORCH_QUINT4X2 = 16     # at::ScalarType::QUInt4x2 (DTYPE_NUM_FOR_QUINT4X2)
ACL_INT8, ACL_INT32, ACL_INT4 = 2, 3, 29


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def _regbase(soc):
    return platforms.get(soc).name.startswith("ascend950")


def _desc(a, name, what):
    if a is None:
        return None
    try:
        dt = resolve_dtype(a.dtype, f"{name} dtype")
    except AclnnError:
        dt = str(a.dtype)
    return (dt, tuple(a.shape)) if what is None else (what, tuple(a.shape))


def _bits(a):
    """x / smooth as uint16 bits (bf16 via ml_dtypes, half via numpy)."""
    return np.ascontiguousarray(a).view(np.uint16)


class _Plan:
    pass


def _new_plan(x, smooth, group, xd, y_desc, *, symmetrical, div_model, faithful):
    """The plan's fields both architectures share (after the checks of the call's descriptors)."""
    launch.div_model_code(div_model)
    p = _Plan()
    p.int4 = y_desc[0] in ("int4", "int32")
    p.y_int32 = y_desc[0] == "int32"
    p.asym = not symmetrical
    p.x_dtype = xd[0]
    p.shape = tuple(x.shape)
    p.L = int(x.shape[-1])
    p.rows = math.prod(x.shape[:-1])
    p.empty = x.size == 0 or p.rows == 0
    p.x, p.smooth, p.group = x, smooth, group
    p.div_model = div_model
    p.faithful = bool(faithful)
    p.result = None
    return p


def _prepare(x, smooth, group, y_desc, scale_desc, offset_desc, *, symmetrical, quant_mode, soc, core_num, ub_size,
             div_model, faithful, tiling, validate, force_key=None, dry=False, dst_type_max=0.0):
    """Checks + tiling -> a plan that ``_execute`` runs. ``x``/``smooth``/``group``: numpy arrays or None."""
    xd, sd, gd = _desc(x, "x", None), _desc(smooth, "smooth_scales", None), _desc(group, "group_index", None)
    regbase = _regbase(soc)
    checks.check_params(xd, sd, gd, y_desc, scale_desc, offset_desc, symmetrical=symmetrical, quant_mode=quant_mode,
                        regbase=regbase)
    if regbase:
        return _prepare_950(x, smooth, group, xd, sd, gd, y_desc, symmetrical=symmetrical, quant_mode=quant_mode,
                            soc=soc, core_num=core_num, ub_size=ub_size, div_model=div_model, faithful=faithful,
                            tiling=tiling, validate=validate, dry=dry, dst_type_max=dst_type_max)
    p = _new_plan(x, smooth, group, xd, y_desc, symmetrical=symmetrical, div_model=div_model, faithful=faithful)
    if p.empty:
        return p
    group_num = checks.check_tiling_inputs(xd, sd, gd, p.int4)
    if group_num >= 1:
        checks.check_group_values(group, p.rows)
    # the tiling and its check are pure in the shapes and options: a repeated call takes them from the memo
    computed = memo.call(tiling_mod.tiling, p.rows, p.L, x_dtype=p.x_dtype, has_smooth=smooth is not None,
                         has_group=group is not None, group_num=group_num, y_int4=p.int4, asymmetric=p.asym,
                         soc=soc, core_num=core_num, ub_size=ub_size, key=force_key)
    p.result = computed if tiling is None else tiling
    if dry:
        return p
    if validate or tiling is not None:
        memo.call(tiling_mod.validate, p.result, p.rows, p.L, smooth is not None)
        if tiling is not None and (tiling.tiling_key in (7, 8)) != (group_num >= 1):
            raise _bad(f"tiling key {tiling.tiling_key} does not match the call (group_index walk: {group_num >= 1})")
    check_memory(p.rows * (p.L + 8), "the DynamicQuant outputs")
    return p


_Y_DT_950 = {"int8": DT_INT8, "int4": DT_INT4, "hifloat8": DT_HIFLOAT8, "float8_e5m2": DT_FLOAT8_E5M2,
             "float8_e4m3fn": DT_FLOAT8_E4M3FN}


def _prepare_950(x, smooth, group, xd, sd, gd, y_desc, *, symmetrical, quant_mode, soc, core_num, ub_size, div_model,
                 faithful, tiling, validate, dry, dst_type_max):
    """Ascend 950: every version runs DynamicQuantV2's arch35 kernels (aclnn_dynamic_quant.cpp, IsRegbase)."""
    p = _new_plan(x, smooth, group, xd, y_desc, symmetrical=symmetrical, div_model=div_model, faithful=faithful)
    p.arch35 = True
    p.quant_mode = quant_mode
    p.y_kind = "int4" if p.int4 else y_desc[0]
    # DynamicQuantRegbaseTiling::CheckAttrs (561002 as a failed tiling), before the empty-tensor exit of op_host;
    # aclnn returns for an empty tensor before the kernel is tiled at all
    if p.empty:
        return p
    tiling_arch35.dst_type_max_value(dst_type_max)
    if quant_mode == "perchannel":
        checks.check_tiling_inputs_950_perchannel(xd, sd, p.int4)
        batch, m_len = math.prod(x.shape[:-2]), int(x.shape[-2])
        computed = memo.call(tiling_arch35.tiling_perchannel, batch, m_len, p.L, has_smooth=smooth is not None,
                             y_kind=p.y_kind, asymmetric=p.asym, dst_type_max=dst_type_max, soc=soc,
                             core_num=core_num, ub_size=ub_size)
        p.result = computed if tiling is None else tiling
        if dry:
            return p
        if validate or tiling is not None:
            memo.call(tiling_arch35.validate_perchannel, p.result, batch, m_len, p.L)
        check_memory(p.rows * (p.L + 8), "the DynamicQuant outputs")
        return p
    group_num = checks.check_tiling_inputs_950(xd, sd, gd, p.int4)
    if group_num >= 1:
        checks.check_group_values(group, p.rows)
    computed = memo.call(tiling_arch35.tiling, p.rows, p.L, has_smooth=smooth is not None, group_num=group_num,
                         y_kind=p.y_kind, asymmetric=p.asym, quant_mode=quant_mode, dst_type_max=dst_type_max,
                         soc=soc, core_num=core_num, ub_size=ub_size)
    p.result = computed if tiling is None else tiling
    if dry:
        return p
    if validate or tiling is not None:
        if p.result.tiling_key in tiling_arch35.PER_CHANNEL:
            raise _bad(f"tiling template {p.result.tiling_key} is a perchannel template; quant_mode is {quant_mode}")
        memo.call(tiling_arch35.validate, p.result, p.rows, p.L)
        if tiling is not None and ((tiling.tiling_key in tiling_arch35.MOE) != (group_num >= 1)
                                   or (tiling.tiling_key in tiling_arch35.PER_TENSOR) != (quant_mode == "pertensor")):
            raise _bad(f"tiling template {tiling.tiling_key} does not match the call (group_index walk: "
                       f"{group_num >= 1}, quant_mode {quant_mode})")
    check_memory(p.rows * (p.L + 8), "the DynamicQuant outputs")
    return p


def _execute(p):
    """-> (y bytes [rows, L or L/2] uint8, scale [rows] (pertensor: [1]), offset or None)."""
    if getattr(p, "arch35", False):
        ns = 1 if p.quant_mode == "pertensor" else (
            int(np.prod(p.shape[:-2], dtype=np.int64)) * p.L if p.quant_mode == "perchannel" else p.rows)
        if p.empty:
            return (np.zeros((p.rows, p.L // 2 if p.int4 else p.L), np.uint8), np.zeros(ns, np.float32),
                    np.zeros(ns, np.float32) if p.asym else None)
        xb = _bits(p.x).reshape(p.rows, p.L)
        sb = None if p.smooth is None else _bits(p.smooth)
        return launch.run_arch35(xb, p.x_dtype, sb, p.group, p.result, y_dt=_Y_DT_950[p.y_kind],
                                 asymmetric=p.asym, div_model=p.div_model, faithful=p.faithful,
                                 y=output_cache.empty((p.rows, p.L // 2 if p.int4 else p.L), np.uint8))
    if p.empty:
        ycols = p.L // 2 if p.int4 else p.L
        return np.zeros((p.rows, ycols), np.uint8), np.zeros(p.rows, np.float32), \
            (np.zeros(p.rows, np.float32) if p.asym else None)
    xb = _bits(p.x).reshape(p.rows, p.L)
    sb = None if p.smooth is None else _bits(p.smooth)
    return launch.run(xb, p.x_dtype, sb, p.group, p.result, int4=p.int4, asymmetric=p.asym,
                      div_model=p.div_model, faithful=p.faithful,
                      y=output_cache.empty((p.rows, p.L // 2 if p.int4 else p.L), np.uint8))


def _ml_int4():
    import ml_dtypes

    return ml_dtypes.int4


def unpack_int4(packed):
    """Packed int4 bytes (element 2i in the low nibble) -> the int8 codes in [-8, 7], flat."""
    b = np.asarray(packed, np.uint8).reshape(-1)
    codes = np.empty(b.size * 2, np.int8)
    codes[0::2] = ((b & np.uint8(0xF)) ^ np.uint8(8)).astype(np.int8) - np.int8(8)
    codes[1::2] = ((b >> np.uint8(4)) ^ np.uint8(8)).astype(np.int8) - np.int8(8)
    return codes


def _ml_fp8(name):
    import ml_dtypes

    return getattr(ml_dtypes, name)


def _y_user(ybytes, p):
    kind = getattr(p, "y_kind", None)
    if kind in ("float8_e5m2", "float8_e4m3fn"):
        return ybytes.reshape(-1).view(_ml_fp8(kind)).reshape(p.shape)
    if kind == "hifloat8":                 # HiF8 codes (no numpy dtype): uint8, as torch_npu stores them
        return ybytes.reshape(p.shape)
    if p.int4:
        return ybytes.reshape(-1).view(np.int32).reshape(p.shape[:-1] + (p.L // 8,)) if p.L % 8 == 0 \
            else ybytes.reshape(p.shape[:-1] + (p.L // 2,))
    return ybytes.view(np.int8).reshape(p.shape)


# ---------------------------------------------------------------------------------------------------------------
# torch_npu
# ---------------------------------------------------------------------------------------------------------------

# torch dtype codes the 950 takes as dst_type (c10_npu::GetAclDataType): torch float8 23 / 24, torch_npu's 290 (hifloat8)
# and 291 / 292 (float8_e5m2 / e4m3fn)
_FP_CODES_950 = {23: "float8_e5m2", 24: "float8_e4m3fn", 290: "hifloat8", 291: "float8_e5m2", 292: "float8_e4m3fn"}


def _dst_kind(dst_type, regbase=False):
    """op-plugin get_output_tensor_wrapper: None / torch.int8 -> int8, torch.quint4x2 -> int32 (packed int4); on
    Ascend 950 also torch.float8_e5m2 / float8_e4m3fn (23 / 24, 291 / 292) and torch_npu.hifloat8 (290)."""
    if dst_type is None:
        return "int8"
    s = str(dst_type)
    is_code = isinstance(dst_type, (int, np.integer)) and not isinstance(dst_type, bool)
    if s in ("torch.int8", "int8") or (is_code and int(dst_type) == TORCH_INT8):
        return "int8"
    if s in ("torch.quint4x2", "quint4x2", "int4") or (is_code and int(dst_type) == TORCH_QUINT4X2):
        return "int32"
    if regbase:
        if is_code and int(dst_type) in _FP_CODES_950:
            return _FP_CODES_950[int(dst_type)]
        name = s.replace("torch.", "").replace("torch_npu.", "")
        if name in ("float8_e5m2", "float8_e4m3fn", "hifloat8"):
            return name
        raise _bad(f"dst_type={dst_type!r} is not supported on Ascend 950: use None / torch.int8, torch.quint4x2 (16), "
                   f"torch.float8_e5m2 (23), torch.float8_e4m3fn (24) or torch_npu.hifloat8 (290)")
    raise _bad(f"dst_type={dst_type!r} is not supported on Atlas A2/A3: use None or torch.int8 (code 1) for int8, "
               f"torch.quint4x2 (code 16) for int4 packed in int32 (FP8/HiF8 destinations exist on Ascend 950 only)")


def _torch_prepare(x, sm, gr, dst_type, quant_mode, dst_type_max, symmetrical, soc, core_num, ub_size, div_model,
                   faithful, tiling, validate, force_key=None, dry=False):
    if x.ndim <= 1:
        raise _bad(f"Input shape dim should be greater than 1, got {x.ndim}")
    regbase = _regbase(soc)
    kind = _dst_kind(dst_type, regbase)
    if kind == "int32" and x.shape[-1] % 8:
        raise _bad(f"Input shape last dim must be divided by 8 when int4 quantization, got {x.shape[-1]}")
    if not isinstance(quant_mode, str):
        raise _bad(f"quant_mode={quant_mode!r} must be a string")
    try:
        dtm = float(np.float32(dst_type_max))
    except (TypeError, ValueError):
        raise _bad(f"dst_type_max={dst_type_max!r} must be a number") from None
    if dtm != 0.0 or quant_mode != "pertoken":
        # select_version -> aclnnDynamicQuantV4 (or V3): Ascend 950 only
        checks.check_soc_for_v3("aclnnDynamicQuantV4" if dtm != 0.0 else "aclnnDynamicQuantV3", regbase)
    lead = tuple(x.shape[:-1])
    y_shape = lead + (x.shape[-1] // 8,) if kind == "int32" else tuple(x.shape)
    if quant_mode == "pertensor":
        s_shape = (1,)
    elif quant_mode == "perchannel":
        s_shape = tuple(x.shape[:-2]) + (x.shape[-1],)
    else:
        s_shape = lead
    return _prepare(x, sm, gr, (kind, y_shape), ("float32", s_shape), None if symmetrical else ("float32", s_shape),
                    symmetrical=symmetrical, quant_mode=quant_mode, soc=soc, core_num=core_num, ub_size=ub_size,
                    div_model=div_model, faithful=faithful, tiling=tiling, validate=validate, force_key=force_key,
                    dry=dry, dst_type_max=dtm)


def torch_call_tiling(dtype, shape, *, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                      dst_type_max=0.0, symmetrical=True, soc=DEFAULT_SOC, core_num=None, ub_size=None,
                      div_model="ieee", key=None):
    """Every check of ``npu_dynamic_quant`` on an x of ``dtype`` / ``shape`` (no data read, nothing allocated)
    -> the host tiling it would run (TilingResult; None for an empty x). ``key``: the tiling of this shape under
    that tiling key (tiling.tiling's ``key``): how the Dask front end runs each chunk as its part of the whole call.
    ``smooth_scales`` / ``group_index``: numpy arrays or None."""
    x = np.broadcast_to(np.zeros((), dtype), tuple(shape))     # a view: no memory, no data
    sm = None if smooth_scales is None else as_array(smooth_scales, "smooth_scales")
    gr = None if group_index is None else as_array(group_index, "group_index")
    p = _torch_prepare(x, sm, gr, dst_type, quant_mode, dst_type_max, symmetrical, soc, core_num, ub_size,
                       div_model, False, None, True, force_key=key, dry=True)
    return p.result


def _torch_npu(input, smooth_scales, group_index, dst_type, quant_mode, dst_type_max, symmetrical, soc, core_num,
               ub_size, div_model, faithful, tiling, validate):
    origin = Origin()
    x = as_array(input, "input", origin=origin)
    if x.ndim <= 1:
        raise _bad(f"Input shape dim should be greater than 1, got {x.ndim}")
    sm = None if smooth_scales is None else as_array(smooth_scales, "smooth_scales", origin=origin)
    gr = None if group_index is None else as_array(group_index, "group_index", origin=origin)
    p = _torch_prepare(x, sm, gr, dst_type, quant_mode, dst_type_max, symmetrical, soc, core_num, ub_size,
                       div_model, faithful, tiling, validate)
    qm = getattr(p, "quant_mode", "pertoken")
    lead = (1,) if qm == "pertensor" else (tuple(x.shape[:-2]) + (x.shape[-1],) if qm == "perchannel"
                                           else tuple(x.shape[:-1]))
    yb, scale, offset = _execute(p)
    y = to_user(_y_user(yb, p), origin)
    s = to_user(scale.reshape(lead), origin)
    if symmetrical:
        return y, s
    return y, s, to_user(offset.reshape(lead), origin)


def npu_dynamic_quant(input, *, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                      dst_type_max=0.0, soc=DEFAULT_SOC, core_num=None, ub_size=None, div_model="ieee",
                      faithful=False, tiling=None, validate=True):
    """torch_npu.npu_dynamic_quant -> (y, scale): per-token symmetric int8 (or int4 in int32) quantization."""
    return _torch_npu(input, smooth_scales, group_index, dst_type, quant_mode, dst_type_max, True, soc, core_num,
                      ub_size, div_model, faithful, tiling, validate)


def npu_dynamic_quant_asymmetric(input, *, smooth_scales=None, group_index=None, dst_type=None,
                                 quant_mode="pertoken", dst_type_max=0.0, soc=DEFAULT_SOC, core_num=None,
                                 ub_size=None, div_model="ieee", faithful=False, tiling=None, validate=True):
    """torch_npu.npu_dynamic_quant_asymmetric -> (y, scale, offset) (DynamicQuantV2 with an offset output)."""
    return _torch_npu(input, smooth_scales, group_index, dst_type, quant_mode, dst_type_max, False, soc, core_num,
                      ub_size, div_model, faithful, tiling, validate)


# ---------------------------------------------------------------------------------------------------------------
# aclnn
# ---------------------------------------------------------------------------------------------------------------

def _out_desc(a, name):
    if a is None:
        return None
    if is_torch_tensor(a):
        a = as_array(a, name)
    dt = resolve_dtype(a.dtype, f"{name} dtype")
    return dt, tuple(a.shape)


def _y_out_desc(y_out, dst_type, soc):
    """yOut's (dtype, shape). On Ascend 950 a uint8 yOut holds the codes of the FP8 / HiF8 format ``dstType`` names
    (34 hifloat8, 35 float8_e5m2, 36 float8_e4m3fn): numpy has no hifloat8 dtype."""
    d = _out_desc(y_out, "yOut")
    if d is not None and d[0] == "uint8" and _regbase(soc) and dst_type is not None:
        try:
            name = resolve_dtype(int(dst_type), "dstType")
        except (AclnnError, TypeError, ValueError):
            return d
        if name in ("hifloat8", "float8_e5m2", "float8_e4m3fn"):
            return name, d[1]
    return d


def _build(op, x, smooth, group, y_out, scale_out, offset_out, *, symmetrical, quant_mode, kw, dst_type=None,
           dst_type_max=0.0):
    xa = None if x is None else as_array(x, "x")
    sa = None if smooth is None else as_array(smooth, "smoothScalesOptional")
    ga = None if group is None else as_array(group, "groupIndexOptional")
    if xa is None:
        checks.check_params(None, None, None, None, None, None)
    p = _prepare(xa, sa, ga, _y_out_desc(y_out, dst_type, kw.get("soc", DEFAULT_SOC)), _out_desc(scale_out, "scaleOut"),
                 _out_desc(offset_out, "offsetOut"), symmetrical=symmetrical, quant_mode=quant_mode,
                 dst_type_max=dst_type_max, **kw)

    def run():
        yb, scale, offset = _execute(p)
        if p.y_int32:
            ysrc = yb.reshape(-1).view(np.int32)
        elif p.int4:                       # a DT_INT4 yOut of x's shape (ml_dtypes.int4: one code per byte)
            ysrc = unpack_int4(yb).astype(_ml_int4())
        elif getattr(p, "y_kind", "int8") in ("float8_e5m2", "float8_e4m3fn"):
            ysrc = yb.reshape(-1) if _out_desc(y_out, "yOut")[0] == "uint8" else yb.reshape(-1).view(_ml_fp8(p.y_kind))
        elif getattr(p, "y_kind", "int8") == "hifloat8":
            ysrc = yb.reshape(-1)
        else:
            ysrc = yb.reshape(-1).view(np.int8)
        write_out(y_out, ysrc, "yOut")
        write_out(scale_out, scale, "scaleOut")
        if offset_out is not None:
            write_out(offset_out, offset, "offsetOut")

    ws = 0 if p.empty else (p.result.workspace_size if getattr(p, "arch35", False) else tiling_mod.SYS_WORKSPACE_SIZE)
    return Executor(op, run, ws)


def _kw(soc, core_num, ub_size, div_model, faithful, tiling, validate):
    return dict(soc=soc, core_num=core_num, ub_size=ub_size, div_model=div_model, faithful=faithful, tiling=tiling,
                validate=validate)


def aclnnDynamicQuantGetWorkspaceSize(x, smoothScalesOptional, yOut, scaleOut, *, soc=DEFAULT_SOC, core_num=None,
                                      ub_size=None, div_model="ieee", faithful=False, tiling=None, validate=True):
    """-> (status, workspace_size, executor); symmetric, dstType int8 by y."""
    kw = _kw(soc, core_num, ub_size, div_model, faithful, tiling, validate)
    return get_workspace("aclnnDynamicQuant", lambda: _build(
        "aclnnDynamicQuant", x, smoothScalesOptional, None, yOut, scaleOut, None, symmetrical=True,
        quant_mode="pertoken", kw=kw))


def aclnnDynamicQuant(workspace, workspaceSize, executor, stream=None):
    return run_executor(executor, workspaceSize, "aclnnDynamicQuant")


def aclnnDynamicQuantV2GetWorkspaceSize(x, smoothScalesOptional, groupIndexOptional, dstType, yOut, scaleOut,
                                        offsetOut, *, soc=DEFAULT_SOC, core_num=None, ub_size=None,
                                        div_model="ieee", faithful=False, tiling=None, validate=True):
    """-> (status, workspace_size, executor); asymmetric when offsetOut is given. ``dstType`` is recorded but, as in
    the source, the kernel's output type comes from yOut (int8, or int32 = packed int4)."""
    kw = _kw(soc, core_num, ub_size, div_model, faithful, tiling, validate)
    return get_workspace("aclnnDynamicQuantV2", lambda: _build(
        "aclnnDynamicQuantV2", x, smoothScalesOptional, groupIndexOptional, yOut, scaleOut, offsetOut,
        symmetrical=offsetOut is None, quant_mode="pertoken", kw=kw, dst_type=dstType))


def aclnnDynamicQuantV2(workspace, workspaceSize, executor, stream=None):
    return run_executor(executor, workspaceSize, "aclnnDynamicQuantV2")


def aclnnDynamicQuantV3GetWorkspaceSize(x, smoothScalesOptional, groupIndexOptional, dstType, isSymmetrical,
                                        quantMode, yOut, scaleOut, offsetOut, *, soc=DEFAULT_SOC, core_num=None,
                                        ub_size=None, div_model="ieee", faithful=False, tiling=None, validate=True):
    """Ascend 950 only (ACLNN_ERR_INNER on A2/A3, as in the source): quantMode pertoken / pertensor / perchannel,
    yOut int8 / int4 / int32 / FP8 / HiF8 (a uint8 yOut with dstType 34 / 35 / 36)."""
    kw = _kw(soc, core_num, ub_size, div_model, faithful, tiling, validate)

    def build():
        checks.check_soc_for_v3("aclnnDynamicQuantV3", _regbase(soc))
        return _build("aclnnDynamicQuantV3", x, smoothScalesOptional, groupIndexOptional, yOut, scaleOut, offsetOut,
                      symmetrical=bool(isSymmetrical), quant_mode=str(quantMode), kw=kw, dst_type=dstType)
    return get_workspace("aclnnDynamicQuantV3", build)


def aclnnDynamicQuantV3(workspace, workspaceSize, executor, stream=None):
    return run_executor(executor, workspaceSize, "aclnnDynamicQuantV3")


def aclnnDynamicQuantV4GetWorkspaceSize(x, smoothScalesOptional, groupIndexOptional, dstType, isSymmetrical,
                                        quantMode, dstTypeMax, yOut, scaleOut, offsetOut, *, soc=DEFAULT_SOC,
                                        core_num=None, ub_size=None, div_model="ieee", faithful=False, tiling=None,
                                        validate=True):
    """V3 plus ``dstTypeMax`` (hifloat8 only: the C of scale = max / C; 0 -> 32768; outside [0, 32768] 561002)."""
    kw = _kw(soc, core_num, ub_size, div_model, faithful, tiling, validate)

    def build():
        checks.check_soc_for_v3("aclnnDynamicQuantV4", _regbase(soc))
        try:
            dtm = float(np.float32(dstTypeMax))
        except (TypeError, ValueError):
            raise _bad(f"dstTypeMax={dstTypeMax!r} must be a number") from None
        return _build("aclnnDynamicQuantV4", x, smoothScalesOptional, groupIndexOptional, yOut, scaleOut, offsetOut,
                      symmetrical=bool(isSymmetrical), quant_mode=str(quantMode), kw=kw, dst_type=dstType,
                      dst_type_max=dtm)
    return get_workspace("aclnnDynamicQuantV4", build)


def aclnnDynamicQuantV4(workspace, workspaceSize, executor, stream=None):
    return run_executor(executor, workspaceSize, "aclnnDynamicQuantV4")
