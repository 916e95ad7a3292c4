"""Front ends of DequantSwigluQuant: ``npu_dequant_swiglu_quant`` (op-plugin schema and defaults) and the aclnn
pair ``aclnnDequantSwigluQuantV2GetWorkspaceSize`` / ``aclnnDequantSwigluQuantV2``.

Defaults follow op-plugin (activate_left=False, quant_mode=0, clamp_limit=7.0, glu_alpha=1.702, glu_bias=1.0), not
vLLM-Ascend's own registration (True, -, 0.0, 1.0, 0.0; docs/ops/dequant_swiglu_quant.md §1). Switches:
``exp_model``, ``div_model`` (docs/conventions.md), ``soc``.
"""

import numpy as np

from npu_emu.device import memo
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import Executor, Origin, Trace, as_array, check_memory, get_workspace, run_executor, \
    to_user, write_out
from npu_emu.kernels.dequant_swiglu_quant import checks
from npu_emu.kernels.dequant_swiglu_quant.launch import run_group, run_nogroup
from npu_emu.kernels.dequant_swiglu_quant.tiling import dsq_tiling, nogroup_tiling
from npu_emu.kernels.swiglu.api import switches

DEFAULT_SOC = "ascend910b2"


def _opt(a, name, origin=None):
    return None if a is None else as_array(a, name, origin=origin)


def _run(xa, ws, asc, bias, qs, qo, gi, activate_left, quant_mode, swiglu_mode, clamp_limit, glu_alpha, glu_bias,
         em, dm, soc, faithful=False):
    """checks -> host tiling (memoised) -> launch (launch.py) -> (y, scale, TilingResult or None)."""
    info = checks.check(xa, ws, asc, bias, qs, qo, gi, quant_mode, swiglu_mode, soc)
    T, D = info["in_dimx"], info["in_dimy"]
    H = D // 2
    check_memory(T * H + 4 * T + 4 * xa.size, "DequantSwigluQuant outputs")
    out_shape = xa.shape[:-1] + (H,)
    if T == 0:
        return np.zeros(out_shape, np.int8), np.zeros(xa.shape[:-1], np.float32), None
    a_empty = asc is None or asc.size == 0
    if info["nogroup"]:
        tr = memo.call(nogroup_tiling, T, H, bias_dtype=info["bias_dtype"], quant_scale_size=info["qs_size"],
                       activation_scale_empty=a_empty, activate_left=bool(activate_left), quant_mode=quant_mode,
                       x_dtype=info["x_dtype"], soc=soc)
        y, scale = run_nogroup(tr, xa, ws, None if a_empty else asc, bias, info["bias_dtype"],
                               qs if info["qs_size"] else None, qo if info["qs_size"] else None, quant_mode, em, dm,
                               faithful)
    else:
        tr = memo.call(dsq_tiling, T, D, group_num=info["groups"], spe_group_type=info["spe"], quant_mode=quant_mode,
                       activate_left=bool(activate_left), has_bias=bias is not None, bias_dtype=info["bias_dtype"],
                       quant_scale_dtype=info["qs_dtype"], quant_is_one=info["quant_is_one"],
                       activation_scale_empty=a_empty, swiglu_mode=swiglu_mode, clamp_limit=clamp_limit,
                       glu_alpha=glu_alpha, glu_bias=glu_bias, soc=soc)
        y, scale = run_group(tr, xa, ws, None if a_empty else asc, bias, info["bias_dtype"], qs, qo, gi, em, dm,
                             faithful)
    return y.reshape(out_shape), scale.reshape(xa.shape[:-1]), tr


def _trace(tr):
    td = tr.tiling
    return Trace(op="DequantSwigluQuant", soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tr.ub_size, notes=list(tr.notes))


def _attrs(dst_type, round_mode, activate_dim, x):
    if dst_type not in (None, 1, 2, "int8"):   # torch_npu: int8 (ACL_INT8 = 2; torch int8 code 1)
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"DequantSwigluQuant: dst_type={dst_type!r}; only int8 output is "
                                                  f"emulated")
    if round_mode not in (None, "rint", 0):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"DequantSwigluQuant: round_mode={round_mode!r}; only rint is "
                                                  f"emulated")
    if activate_dim not in (None, -1, x.ndim - 1):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"DequantSwigluQuant: activate_dim={activate_dim!r}; only the "
                                                  f"last dim is emulated")


def npu_dequant_swiglu_quant(x, *, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                             quant_offset=None, group_index=None, activate_left=False, quant_mode=0, dst_type=None,
                             round_mode=None, activate_dim=None, swiglu_mode=0, clamp_limit=7.0, glu_alpha=1.702,
                             glu_bias=1.0, exp_model="correctly_rounded", div_model="ieee", soc=DEFAULT_SOC,
                             faithful=False, trace=False):
    """torch_npu.npu_dequant_swiglu_quant -> (y int8 [..., H], scale float32 [...]).

    int32 x [..., 2H] with group_index (counts [G] or (index, count) pairs [G, 2]); dequant (weight_scale[group],
    activation_scale[row], bias), SwiGLU (swiglu_mode 0-3), then per-row dynamic (quant_mode=1) or static (0) int8
    quantisation. Rows no group covers are left 0 (scale 0): undefined on the device.
    """
    origin = Origin()
    xa = as_array(x, "x", origin=origin)
    _attrs(dst_type, round_mode, activate_dim, xa)
    em, dm = switches(exp_model, div_model)
    y, scale, tr = _run(xa, _opt(weight_scale, "weight_scale"), _opt(activation_scale, "activation_scale"),
                        _opt(bias, "bias"), _opt(quant_scale, "quant_scale"), _opt(quant_offset, "quant_offset"),
                        _opt(group_index, "group_index"), activate_left, int(quant_mode), int(swiglu_mode),
                        clamp_limit, glu_alpha, glu_bias, em, dm, soc, bool(faithful))
    out = (to_user(y, origin), to_user(scale, origin))
    if trace:
        return out, (None if tr is None else _trace(tr))
    return out


def aclnnDequantSwigluQuantV2GetWorkspaceSize(x, weightScale, activationScale, bias, quantScale, quantOffset,
                                              groupIndex, activateLeft, quantMode, dstType, roundMode, activateDim,
                                              swigluMode, clampLimit, gluAlpha, gluBias, yOut, scaleOut, *,
                                              exp_model="correctly_rounded", div_model="ieee", soc=DEFAULT_SOC):
    """-> (status, workspace_size, executor). quantMode: "dynamic" / "static" (or 1 / 0)."""

    def build():
        xa = as_array(x, "x")
        yo = as_array(yOut, "yOut")
        so = as_array(scaleOut, "scaleOut")
        qm = {"dynamic": 1, "static": 0, None: 0}.get(quantMode.lower() if isinstance(quantMode, str)
                                                      else quantMode, quantMode)
        _attrs(None, None, activateDim, xa)
        em, dm = switches(exp_model, div_model)
        args = (xa, _opt(weightScale, "weightScale"), _opt(activationScale, "activationScale"), _opt(bias, "bias"),
                _opt(quantScale, "quantScale"), _opt(quantOffset, "quantOffset"), _opt(groupIndex, "groupIndex"))
        checks.check(args[0], *args[1:], qm, swigluMode, soc)
        want = xa.shape[:-1] + (xa.shape[-1] // 2,)
        if tuple(yo.shape) != want or yo.dtype != np.int8:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"DequantSwigluQuant: yOut must be int8 of shape {want}")
        if so.size != int(np.prod(xa.shape[:-1])) or so.dtype != np.float32:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "DequantSwigluQuant: scaleOut must be float32 with one "
                                                      "element per token")

        def run():
            y, s, _ = _run(*args, activateLeft, qm, swigluMode, clampLimit, gluAlpha, gluBias, em, dm, soc)
            write_out(yOut, y, "yOut")
            write_out(scaleOut, s, "scaleOut")

        return Executor("aclnnDequantSwigluQuantV2", run, 32)

    return get_workspace("aclnnDequantSwigluQuantV2", build)


def aclnnDequantSwigluQuantV2(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnDequantSwigluQuantV2")


def aclnnDequantSwigluQuantGetWorkspaceSize(x, weightScaleOptional, activationScaleOptional, biasOptional,
                                            quantScaleOptional, quantOffsetOptional, groupIndexOptional,
                                            activateLeft, quantModeOptional, yOut, scaleOut, *,
                                            exp_model="correctly_rounded", div_model="ieee", soc=DEFAULT_SOC):
    """aclnnDequantSwigluQuant (V1): V2 without dstType .. gluBias; quantModeOptional None means "static"
    (hicann/ops-nn: quant/dequant_swiglu_quant/docs/aclnnDequantSwigluQuant.md)."""
    qm = "static" if quantModeOptional is None else quantModeOptional
    return aclnnDequantSwigluQuantV2GetWorkspaceSize(x, weightScaleOptional, activationScaleOptional, biasOptional,
                                                     quantScaleOptional, quantOffsetOptional, groupIndexOptional,
                                                     activateLeft, qm, None, None, -1, 0, 7.0, 1.702, 1.0, yOut,
                                                     scaleOut, exp_model=exp_model, div_model=div_model, soc=soc)


def aclnnDequantSwigluQuant(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnDequantSwigluQuantV2")
