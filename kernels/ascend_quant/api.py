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

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import (
    Executor,
    Origin,
    Trace,
    as_array,
    as_int,
    dtype_name_of,
    get_workspace,
    resolve_dtype,
    run_executor,
    storage_dtype,
    to_user,
    write_out,
)
from npu_emu.kernels.ascend_quant import checks, launch

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
                 soc=DEFAULT_SOC, core_num=None, ub_size=None, trace=False):
    """aclnnAscendQuantV3 as a function: y = int8(round((x * scale [* scale]) + offset)) with the device's casts
    (float32 -> int32 -> half -> int8, docs/ops/ascend_quant.md §2)."""
    origin = Origin()
    y_dtype = _out_dtype(dst_type)
    xa, sa, oa, x_dtype, layout = _prepare(x, scale, offset, y_dtype, as_int(axis, "axis"), round_mode, origin)
    y, tr = launch.run(xa, sa, oa, x_dtype, layout, sqrt_mode=bool(sqrt_mode), round_mode=round_mode, soc=soc,
                       core_num=core_num, ub_size=ub_size)
    out = to_user(y, origin)
    return (out, _trace(tr)) if trace else out


def npu_quantize(input, scales, zero_points=None, dtype=None, axis=1, div_mode=True, *, soc=DEFAULT_SOC,
                 trace=False):
    """torch_npu.npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True) on the CPU.

    ``div_mode=False`` (what vLLM-Ascend's W8A8 static path passes) is aclnnAscendQuantV3:
    y = int8(rint(input * scales + zero_points)). ``dtype``: torch.qint8 / torch.int8 (int8 out)."""
    if div_mode:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"npu_quantize(div_mode=True) runs aclnnQuantize (y = round(x / scales + zero_points)), "
                         f"which is not emulated yet; div_mode=False (aclnnAscendQuantV3, "
                         f"x * scales + zero_points) is emulated ({PAGE} §1)")
    axis = as_int(axis, "axis")
    axis = axis if axis < -1 else -1
    return ascend_quant(input, scales, zero_points, sqrt_mode=False, round_mode="round", dst_type=_out_dtype(dtype),
                        axis=axis, soc=soc, trace=trace)


def aclnnAscendQuantV3GetWorkspaceSize(x, scale, offset, sqrtMode, roundMode, dstType, axis, y, *,
                                       soc=DEFAULT_SOC):
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
                                soc=soc)
            write_out(y, res, "y")
        return Executor("aclnnAscendQuantV3", run)
    return get_workspace("aclnnAscendQuantV3", build)


def aclnnAscendQuantV3(workspace, workspaceSize, executor, stream=None):
    return run_executor(executor, workspaceSize, "aclnnAscendQuantV3")
