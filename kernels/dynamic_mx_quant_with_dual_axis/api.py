"""Front ends of DynamicMxQuantWithDualAxis: torch_npu.npu_dynamic_mx_quant_with_dual_axis and the aclnn two-phase
pairs aclnnDynamicMxQuantWithDualAxis[V2].

Call flow (docs/contributing/layout.md): normalise -> checks (torch_npu's, then aclnn's) -> host tiling -> allocate
-> launch (launch.py) -> convert back. The argument plumbing (output descriptors, float attributes, the switch
checks, traces, writing into a caller's out) is the MX family's, imported from kernels/mx_quant/api.py.

Outputs as npu_dynamic_mx_quant's: y1 / y2 ml_dtypes float8 arrays of x's shape, or packed uint8 (last dim halved)
for FP4; mxscale1 [..., M, ceil(N/64), 2] and mxscale2 [..., ceil(M/64), N, 2] uint8 E8M0 codes.
"""

import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import Executor, Origin, as_array, as_int, check_memory, get_workspace, run_executor, to_user, \
    write_out
from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import checks, launch, tiling as tiling_mod
from npu_emu.kernels.mx_quant import checks as mx_checks
from npu_emu.kernels.mx_quant.api import _ML_FP8, _empty, _float_arg, _make_trace, _out_desc, _write_y, _x_bits, \
    _x_name
from npu_emu.kernels.mx_quant.checks import Desc
from npu_emu.kernels.mx_quant.tiling import FP4
from npu_emu.device import memo

DEFAULT_SOC = tiling_mod.DEFAULT_SOC
OPS_EXPORTS = ["npu_dynamic_mx_quant_with_dual_axis"]
ACLNN_EXPORTS = [
    "aclnnDynamicMxQuantWithDualAxisGetWorkspaceSize", "aclnnDynamicMxQuantWithDualAxis",
    "aclnnDynamicMxQuantWithDualAxisV2GetWorkspaceSize", "aclnnDynamicMxQuantWithDualAxisV2",
]
OP = "DynamicMxQuantWithDualAxis"


def _switches(signed_zero, ftz, fp4_nibble_order):
    mx_checks.check_switches(signed_zero=signed_zero, ftz=ftz, fp4_nibble_order=fp4_nibble_order)


def _run(xa, x_dtype, y_dtype, round_mode, scale_alg, dst_type_max, *, soc, signed_zero, ftz, fp4_nibble_order,
         core_num, ub_size, validate, device_walk=False, faithful=False):
    """-> (y1, mxscale1, y2, mxscale2 flat uint8, TilingResult, overruns) for checked, non-empty input."""
    shape = tuple(xa.shape)
    tr = memo.call(tiling_mod.dual_axis_tiling, shape, y_dtype=y_dtype, round_mode=round_mode, scale_alg=scale_alg,
                   dst_type_max=dst_type_max, soc=soc, core_num=core_num, ub_size=ub_size)
    p1, p2, r32 = launch.make_axis_params(x_dtype=x_dtype, y_dtype=y_dtype, round_mode=round_mode,
                                          scale_alg=scale_alg, dst_type_max=dst_type_max, signed_zero=signed_zero,
                                          ftz=ftz, fp4_nibble_order=fp4_nibble_order, faithful=faithful)
    total = xa.size
    ybytes = total // 2 if y_dtype in FP4 else total
    s1_shape, s2_shape = checks.scale_shapes(shape)
    n1, n2 = int(np.prod(s1_shape)), int(np.prod(s2_shape))
    check_memory(2 * ybytes + n1 + n2, "DynamicMxQuantWithDualAxis outputs")
    y1, y2, s1, s2 = _empty(ybytes), _empty(ybytes), _empty(n1), _empty(n2)
    overruns = launch.run(_x_bits(xa), y1, s1, y2, s2, tr, p1, p2, r32, merge=1 if device_walk else None,
                          validate=validate)
    return y1, s1, y2, s2, tr, overruns


def _y_view(y, shape, y_dtype):
    if y_dtype in FP4:
        return y.reshape(tuple(shape[:-1]) + (shape[-1] // 2,))
    return y.reshape(shape).view(_ML_FP8[y_dtype])


def npu_dynamic_mx_quant_with_dual_axis(input, *, round_mode="rint", dst_type=296, scale_alg=0, dst_type_max=0.0,
                                        soc=DEFAULT_SOC, signed_zero=True, ftz=False, fp4_nibble_order="low_first",
                                        core_num=None, ub_size=None, device_walk=False, faithful=False, validate=True,
                                        trace=False):
    """torch_npu.npu_dynamic_mx_quant_with_dual_axis(input, ...) -> (y1, mxscale1, y2, mxscale2): MX quantisation
    of an fp16/bf16 tensor of rank 2-7 in blocks of 32 along axis -1 (y1, mxscale1) and axis -2 (y2, mxscale2).

    dst_type: torch dtype code (23 float8_e5m2, 24 float8_e4m3fn, 296 float4_e2m1 default, 297 float4_e1m2; 291 /
    292), a dtype or a name. scale_alg 0 (OCP), 1 (cuBLAS, FP8), 2 (dynamic range, FLOAT4_E2M1, with
    dst_type_max 0 or [6, 12]: the call goes to aclnnDynamicMxQuantWithDualAxisV2). Emulator keywords: ``soc``
    (Ascend 950 only, else 361001), the codec switches ``signed_zero``, ``ftz``, ``fp4_nibble_order``
    (docs/ops/mx_quant.md §1), ``core_num`` / ``ub_size`` (tiling only), ``device_walk`` (each core walks its tasks
    one by one as the device does, instead of a row block's tasks as one segment; same values), ``faithful``
    (every task staged through UB as the arch35 kernel does, DataCopyPad in and out, per-element arithmetic; same
    values, slower), ``validate``, ``trace``.
    """
    origin = Origin()
    xa = as_array(input, "input", origin=origin)
    _switches(signed_zero, ftz, fp4_nibble_order)
    scale_alg = as_int(scale_alg, "scale_alg")
    dst_type_max = _float_arg(dst_type_max, "dst_type_max")
    x_desc = Desc(_x_name(xa, "input"), tuple(xa.shape))
    y_dtype = checks.check_torch(x_desc, dst_type)
    s1_shape, s2_shape = checks.scale_shapes(xa.shape)
    version = "v2" if (scale_alg == 2 or dst_type_max != 0.0) else "v1"
    round_mode, _, empty = checks.check_aclnn(x_desc, round_mode, tiling_mod.ACL_CODE[y_dtype], scale_alg,
                                              dst_type_max, Desc(y_dtype, x_desc.shape), Desc("float8_e8m0", s1_shape),
                                              Desc(y_dtype, x_desc.shape), Desc("float8_e8m0", s2_shape),
                                              version=version, soc=soc)
    tr, overruns = None, []
    ybytes = xa.size // 2 if y_dtype in FP4 else xa.size
    if empty:
        y1, y2 = np.zeros(ybytes, np.uint8), np.zeros(ybytes, np.uint8)
        s1, s2 = np.zeros(int(np.prod(s1_shape)), np.uint8), np.zeros(int(np.prod(s2_shape)), np.uint8)
    else:
        y1, s1, y2, s2, tr, overruns = _run(xa, x_desc.dtype, y_dtype, round_mode, scale_alg, dst_type_max, soc=soc,
                                            signed_zero=signed_zero, ftz=ftz, fp4_nibble_order=fp4_nibble_order,
                                            core_num=core_num, ub_size=ub_size, validate=validate,
                                            device_walk=device_walk, faithful=bool(faithful))
    result = (to_user(_y_view(y1, xa.shape, y_dtype), origin), to_user(s1.reshape(s1_shape), origin),
              to_user(_y_view(y2, xa.shape, y_dtype), origin), to_user(s2.reshape(s2_shape), origin))
    if trace:
        return result, (_make_trace(OP, tr, overruns) if tr is not None else None)
    return result


def _workspace(op, version, x, roundModeOptional, dstType, scaleAlg, dstTypeMax, y1Out, mxscale1Out, y2Out,
               mxscale2Out, soc, signed_zero, ftz, fp4_nibble_order, core_num, ub_size, y_dtype):
    def build():
        _switches(signed_zero, ftz, fp4_nibble_order)
        xa = None if x is None else as_array(x, "x")
        dt = as_int(dstType, "dstType")
        alg = as_int(scaleAlg, "scaleAlg")
        dtm = _float_arg(dstTypeMax, "dstTypeMax")
        label = y_dtype if y_dtype is not None else mx_checks.ACL_NAME.get(dt, "uint8")
        descs, forms = [], []
        for name, t, is_scale in (("y1Out", y1Out, False), ("mxscale1Out", mxscale1Out, True),
                                  ("y2Out", y2Out, False), ("mxscale2Out", mxscale2Out, True)):
            if t is None:
                descs.append(None)
                forms.append(None)
                continue
            d, f = _out_desc(t, None, "float8_e8m0", name) if is_scale else _out_desc(t, y_dtype, label, name)
            descs.append(d)
            forms.append(f)
        x_desc = None if xa is None else Desc(_x_name(xa), tuple(xa.shape))
        rm, y_name, empty = checks.check_aclnn(x_desc, roundModeOptional, dt, alg, dtm, *descs, version=version,
                                               soc=soc)
        if empty:
            return Executor(op, lambda: None, 0)
        tr = memo.call(tiling_mod.dual_axis_tiling, x_desc.shape, y_dtype=y_name, round_mode=rm, scale_alg=alg,
                       dst_type_max=dtm, soc=soc, core_num=core_num, ub_size=ub_size)

        def run():
            y1, s1, y2, s2, _, _ = _run(xa, x_desc.dtype, y_name, rm, alg, dtm, soc=soc, signed_zero=signed_zero,
                                        ftz=ftz, fp4_nibble_order=fp4_nibble_order, core_num=core_num,
                                        ub_size=ub_size, validate=True)
            _write_y(y1Out, y1, descs[0], forms[0], fp4_nibble_order)
            write_out(mxscale1Out, s1.reshape(descs[1].shape), "mxscale1Out")
            _write_y(y2Out, y2, descs[2], forms[2], fp4_nibble_order)
            write_out(mxscale2Out, s2.reshape(descs[3].shape), "mxscale2Out")

        return Executor(op, run, tr.workspace_size)

    return get_workspace(op, build)


def aclnnDynamicMxQuantWithDualAxisGetWorkspaceSize(x, roundModeOptional, dstType, scaleAlg, y1Out, mxscale1Out,
                                                    y2Out, mxscale2Out, *, soc=DEFAULT_SOC, signed_zero=True,
                                                    ftz=False, fp4_nibble_order="low_first", core_num=None,
                                                    ub_size=None, y_dtype=None):
    """-> (status, workspace_size, executor). dstType: aclDataType 35/36/40/41; scaleAlg 0 or 1. y1Out / y2Out:
    ml_dtypes float8 arrays, uint8 bits labelled by ``y_dtype`` (FP4: packed, last dim halved) or
    ml_dtypes.float4_e2m1fn arrays with one code per byte; mxscale1Out / mxscale2Out: uint8 / float8_e8m0fnu."""
    return _workspace("aclnnDynamicMxQuantWithDualAxis", "v1", x, roundModeOptional, dstType, scaleAlg, 0.0, y1Out,
                      mxscale1Out, y2Out, mxscale2Out, soc, signed_zero, ftz, fp4_nibble_order, core_num, ub_size,
                      y_dtype)


def aclnnDynamicMxQuantWithDualAxis(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnDynamicMxQuantWithDualAxis")


def aclnnDynamicMxQuantWithDualAxisV2GetWorkspaceSize(x, roundModeOptional, dstType, scaleAlg, dstTypeMax, y1Out,
                                                      mxscale1Out, y2Out, mxscale2Out, *, soc=DEFAULT_SOC,
                                                      signed_zero=True, ftz=False, fp4_nibble_order="low_first",
                                                      core_num=None, ub_size=None, y_dtype=None):
    """V2 adds scaleAlg 2 (FLOAT4_E2M1) and dstTypeMax (0 or [6, 12])."""
    return _workspace("aclnnDynamicMxQuantWithDualAxisV2", "v2", x, roundModeOptional, dstType, scaleAlg, dstTypeMax,
                      y1Out, mxscale1Out, y2Out, mxscale2Out, soc, signed_zero, ftz, fp4_nibble_order, core_num,
                      ub_size, y_dtype)


def aclnnDynamicMxQuantWithDualAxisV2(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnDynamicMxQuantWithDualAxisV2")
