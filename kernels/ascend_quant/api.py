"""Front ends of AscendQuantV2: torch_npu's ``npu_quantize`` and aclnn's ``aclnnAscendQuantV3`` two-phase API
(docs/ops/ascend_quant.md §1, §6).

Call flow: normalise -> checks -> cast scale / offset to x's dtype (aclnn's l0op::Cast; exact, because the checks
allow only a float32 x to take another scale dtype) -> host tiling -> launch -> convert back.

``npu_quantize`` follows Ascend/op-plugin op_plugin/ops/opapi/QuantizeKernelNpuOpApi.cpp: with
``div_mode=False`` it calls aclnnAscendQuantV3 with sqrt_mode False, round_mode "round" and ``axis = axis if
axis < -1 else -1`` (so the default axis=1 means the last axis); ``div_mode=True`` goes to aclnnQuantize
(hicann/ops-nn quant/quantize, whose public kernels are the Ascend 950's), which is not emulated yet.
"""

import numpy as np
from npu_emu.kernels.ascend_quant import (
    checks,
    launch,
    quantize_launch,
    quantize_tiling,
)

from npu_emu.ascendc.transcendental import DIV_MODELS
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend import output_cache
from npu_emu.frontend.core import (
    Executor,
    Origin,
    Trace,
    as_array,
    as_int,
    check_memory,
    dtype_name_of,
    get_workspace,
    resolve_dtype,
    run_executor,
    storage_dtype,
    to_user,
    write_out,
)

DEFAULT_SOC = "ascend910b2"
PAGE = "docs/ops/ascend_quant.md"

# npu_quantize's `dtype`: c10::ScalarType codes (torch.qint8 = 12, torch.int8 = 1, torch.quint4x2 = 16)
_SCALAR_TYPE_CODES = {1: "int8", 12: "int8", 16: "int4", 3: "int32"}


def _out_dtype(dtype):
    if dtype is None:
        return "int8"
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if int(dtype) in _SCALAR_TYPE_CODES:
            return _SCALAR_TYPE_CODES[int(dtype)]
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"dtype={int(dtype)} is not torch.qint8 (12), torch.int8 (1) or torch.quint4x2 (16)")
    text = str(dtype).replace("torch.", "")
    if text in ("qint8", "int8"):
        return "int8"
    if text in ("quint4x2", "int4"):
        return "int4"
    return resolve_dtype(dtype, "dtype")


def _convert(a, name, dtype):
    """scale / offset as x's dtype (l0op::Cast); only widening conversions reach here."""
    if dtype_name_of(a) == dtype:
        return a
    return a.astype(np.float32).astype(storage_dtype(dtype))


def _prepare(x, scale, offset, y_dtype, axis, round_mode, origin):
    xa = as_array(x, "x", origin=origin)
    sa = as_array(scale, "scale")
    oa = None if offset is None else as_array(offset, "offset")
    x_dtype = dtype_name_of(xa)
    s_dtype = dtype_name_of(sa)
    o_dtype = None if oa is None else dtype_name_of(oa)
    layout = checks.check(xa.shape, x_dtype, sa.shape, s_dtype, None if oa is None else oa.shape, o_dtype,
                          y_dtype, axis, round_mode)
    sa = _convert(sa, "scale", x_dtype)
    oa = None if oa is None else _convert(oa, "offset", x_dtype)
    return xa, sa, oa, x_dtype, layout


def _trace(tr):
    td = tr.tiling
    return Trace(op="AscendQuantV2", soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tr.ub_size, gm_overrun=[], notes=list(tr.notes))


def ascend_quant(x, scale, offset=None, *, sqrt_mode=False, round_mode="round", dst_type="int8", axis=-1,
                 soc=DEFAULT_SOC, core_num=None, ub_size=None, faithful=False, trace=False):
    """aclnnAscendQuantV3 as a function: y = int8(round((x * scale [* scale]) + offset)) with the device's casts
    (float32 -> int32 -> half -> int8, docs/ops/ascend_quant.md §2). ``faithful=True`` runs the UB-staged
    transliteration of the kernel instead of the fused one (the same bits, slower; §4)."""
    origin = Origin()
    y_dtype = _out_dtype(dst_type)
    xa, sa, oa, x_dtype, layout = _prepare(x, scale, offset, y_dtype, as_int(axis, "axis"), round_mode, origin)
    check_memory(xa.size, "the AscendQuantV2 output")
    y, tr = launch.run(xa, sa, oa, x_dtype, layout, sqrt_mode=bool(sqrt_mode), round_mode=round_mode, soc=soc,
                       core_num=core_num, ub_size=ub_size, faithful=bool(faithful),
                       y=output_cache.empty(xa.shape, np.int8))
    out = to_user(y, origin)
    return (out, _trace(tr)) if trace else out


def npu_quantize(input, scales, zero_points=None, dtype=None, axis=1, div_mode=True, *, soc=DEFAULT_SOC,
                 faithful=False, trace=False):
    """torch_npu.npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True) on the CPU.

    ``div_mode=False`` (what vLLM-Ascend's W8A8 static path passes) is aclnnAscendQuantV3:
    y = int8(rint(input * scales + zero_points)). ``dtype``: torch.qint8 / torch.int8 (int8 out).
    ``div_mode=True`` is aclnnQuantize, emulated on soc="ascend950pr" only (pass it):
    y = rint(input / scales + zero_points) as torch.qint8 / quint8 / qint32 (int8 / uint8 / int32).
    ``faithful=True``: the kernel's tile walk instead of the fused kernel, same bits."""
    if div_mode:
        return quantize(input, scales, zero_points, dtype=_quantize_dtype(dtype), axis=axis, soc=soc,
                        faithful=faithful, trace=trace)
    axis = as_int(axis, "axis")
    axis = axis if axis < -1 else -1
    return ascend_quant(input, scales, zero_points, sqrt_mode=False, round_mode="round", dst_type=_out_dtype(dtype),
                        axis=axis, soc=soc, faithful=faithful, trace=trace)


def aclnnAscendQuantV3GetWorkspaceSize(x, scale, offset, sqrtMode, roundMode, dstType, axis, y, *,
                                       soc=DEFAULT_SOC, faithful=False):
    """-> (status, workspace_size, executor); ``dstType`` an aclDataType (2 = int8), ``y`` the output array."""
    def build():
        y_name = resolve_dtype(dstType, "dstType")
        if y is None:
            raise AclnnError(161001, "y is None (a null tensor in aclnn); pass the output array")
        ya = as_array(y, "y")
        if dtype_name_of(ya) != y_name:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"dstType:{dstType}({y_name}) must be able to represent the y dtype[{dtype_name_of(ya)}]")
        xa, sa, oa, x_dtype, layout = _prepare(x, scale, offset, y_name, as_int(axis, "axis"), roundMode, Origin())
        if tuple(ya.shape) != tuple(xa.shape):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"y shape {tuple(ya.shape)} must equal x shape "
                                                      f"{tuple(xa.shape)}")

        def run():
            res, _ = launch.run(xa, sa, oa, x_dtype, layout, sqrt_mode=bool(sqrtMode), round_mode=roundMode,
                                soc=soc, faithful=bool(faithful))
            write_out(y, res, "y")
        return Executor("aclnnAscendQuantV3", run)
    return get_workspace("aclnnAscendQuantV3", build)


def aclnnAscendQuantV3(workspace, workspaceSize, executor, stream=None):
    return run_executor(executor, workspaceSize, "aclnnAscendQuantV3")


# ---- aclnnQuantize (npu_quantize div_mode=True), Ascend 950 only (docs/ops/ascend_quant.md §9) --------------

QUANTIZE_SOC = "ascend950pr"

# op-plugin QUANTIZE_SUPPORT_MAP: quint8 13, qint8 12, qint32 14, uint8 0, int8 1, int32 3, float8_e4m3fn 24,
# float8_e5m2 23, torch_npu hifloat8 290
_QUANTIZE_CODES = {13: "uint8", 12: "int8", 14: "int32", 0: "uint8", 1: "int8", 3: "int32", 24: "float8_e4m3fn",
                   23: "float8_e5m2", 290: "hifloat8"}
_QUANTIZE_NAMES = {"quint8": "uint8", "qint8": "int8", "qint32": "int32"}


def _quantize_dtype(dtype):
    if dtype is None:
        return "int8"
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if int(dtype) in _QUANTIZE_CODES:
            return _QUANTIZE_CODES[int(dtype)]
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"dtype={int(dtype)}: Param (dtype) must be Int8, UInt8, Int32, "
                                                  f"HiFloat8, Float8_e4m3fn, Float8_e5m2 (npu_quantize div_mode=True)")
    text = str(dtype).replace("torch.", "")
    return _QUANTIZE_NAMES.get(text) or resolve_dtype(dtype, "dtype")


def _div_model(div_model):
    if div_model not in DIV_MODELS:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"div_model={div_model!r}: use one of {sorted(DIV_MODELS)} "
                                                  f"({PAGE} §9)")
    return DIV_MODELS[div_model]


def _prepare_quantize(x, scales, zero_points, y_dtype, out_shape, out_dtype, axis, soc, origin=None):
    quantize_tiling.check_soc(soc)
    if x is None or scales is None:
        raise AclnnError(161001, "x and scales must not be null (aclnnQuantize CheckNotNull); pass both tensors")
    xa = as_array(x, "x", origin=origin)
    sa = as_array(scales, "scales")
    za = None if zero_points is None else as_array(zero_points, "zeroPoints")
    x_dtype, s_dtype = dtype_name_of(xa), dtype_name_of(sa)
    z_dtype = None if za is None else dtype_name_of(za)
    out_shape = tuple(xa.shape) if out_shape is None else out_shape
    out_dtype = y_dtype if out_dtype is None else out_dtype
    mode, pa = checks.check_quantize(xa.shape, x_dtype, sa.shape, s_dtype, None if za is None else za.shape, z_dtype,
                                     y_dtype, out_shape, out_dtype, axis)
    if s_dtype == "float16":           # aclnn: l0op::Cast of a half scales to float32 (exact)
        sa, s_dtype = sa.astype(np.float32), "float32"
    return xa, sa, za, x_dtype, s_dtype, z_dtype, mode, pa


def _quantize_trace(tr):
    td = tr.tiling
    return Trace(op="Quantize", soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tr.ub_size, gm_overrun=[], notes=list(tr.notes))


def _run_quantize(xa, sa, za, x_dtype, s_dtype, z_dtype, y_dtype, mode, pa, div_model, soc, core_num=None,
                  ub_size=None, faithful=False):
    y_np = quantize_launch._Y[y_dtype]
    if xa.size == 0 or sa.size == 0 or (za is not None and za.size == 0):
        return np.empty(xa.shape, y_np), None
    check_memory(xa.size * np.dtype(y_np).itemsize, "the Quantize output")
    return quantize_launch.run(xa, sa, za, x_dtype, s_dtype, z_dtype, y_dtype, mode, pa, div_model=div_model,
                               soc=soc, core_num=core_num, ub_size=ub_size, faithful=bool(faithful),
                               y=output_cache.empty(xa.shape, y_np))


def quantize(x, scales, zero_points=None, *, dtype="int8", axis=1, div_model="ieee", soc=QUANTIZE_SOC,
             core_num=None, ub_size=None, faithful=False, trace=False):
    """aclnnQuantize as a function: y = dtype(rint(x / scales + zero_points)) (docs/ops/ascend_quant.md §9).
    ``dtype``: "int8" / "uint8" / "int32" (aclDataType or torch dtype accepted); ``div_model``: "ieee" (default) or
    "reciprocal", the rounding of the vector Div [HW-unverified]; ``faithful=True``: the tile walk of the kernel
    instead of the fused one (the same bits)."""
    origin = Origin()
    dm = _div_model(div_model)
    y_dtype = _quantize_dtype(dtype)
    prep = _prepare_quantize(x, scales, zero_points, y_dtype, None, None, as_int(axis, "axis"), soc, origin)
    y, tr = _run_quantize(*prep[:6], y_dtype, *prep[6:], dm, soc, core_num, ub_size, faithful)
    out = to_user(y, origin)
    if trace:
        return out, (None if tr is None else _quantize_trace(tr))
    return out


def aclnnQuantizeGetWorkspaceSize(x, scales, zeroPoints, dtype, axis, out, *, soc=QUANTIZE_SOC, div_model="ieee",
                                  faithful=False):
    """-> (status, workspace_size, executor); ``dtype`` an aclDataType (2 = int8, 4 = uint8, 3 = int32)."""
    def build():
        if out is None:
            raise AclnnError(161001, "out is None (a null tensor in aclnn); pass the output array")
        dm = _div_model(div_model)
        y_name = resolve_dtype(dtype, "dtype")
        oa = as_array(out, "out")
        prep = _prepare_quantize(x, scales, zeroPoints, y_name, tuple(oa.shape), dtype_name_of(oa),
                                 as_int(axis, "axis"), soc)

        def run():
            res, _ = _run_quantize(*prep[:6], y_name, *prep[6:], dm, soc, faithful=faithful)
            if res.size:
                write_out(out, res, "out")
        return Executor("aclnnQuantize", run)
    return get_workspace("aclnnQuantize", build)


def aclnnQuantize(workspace, workspaceSize, executor, stream=None):
    return run_executor(executor, workspaceSize, "aclnnQuantize")
