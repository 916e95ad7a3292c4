"""DequantSwigluQuant checks with CANN's statuses, in the order of hicann/ops-nn
quant/dequant_swiglu_quant/op_host/dequant_swiglu_quant_tiling.cpp (GetShapeAttrsInfoInner: last dim % 64,
CheckXAndGroupIndexDtype, CheckBias, CheckForDequant, CheckForQuant, CheckIllegalParam; GetAttr). Shapes and dtypes
-> 161002; what the emulator does not reproduce (x bf16 with group_index, other SoCs) -> 561003.
Without group_index the checks are those of op_host/dequant_swiglu_quant_tiling_base.cpp (SetTotalShape,
checkWeightBiasActivate, checkInputShape, SetAttr): :func:`check_nogroup`.
"""

import numpy as np

from npu_emu.errors import ACLNN_ERR_INNER_FIND_KERNEL_ERROR, ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import dtype_name_of

OP = "DequantSwigluQuant"


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, f"{OP}: {msg}")


def _name(a):
    try:
        return dtype_name_of(a)
    except AclnnError:
        return str(a.dtype)


def _scale_shape(a, name, last, groups):
    if a.ndim < 1 or a.shape[-1] != last:
        raise _bad(f"{name} has shape {a.shape}; its last dim must be {last}")
    if groups > 1 and (a.ndim != 2 or a.shape[0] != groups):
        raise _bad(f"{name} has shape {a.shape}; with {groups} groups pass shape ({groups}, {last})")
    if groups <= 1 and a.ndim > 2:
        raise _bad(f"{name} has shape {a.shape}; pass at most 2 dims")


def check(x, weight_scale, activation_scale, bias, quant_scale, quant_offset, group_index, quant_mode, swiglu_mode,
          soc):
    """-> dict of what the tiling needs."""
    if group_index is None:
        return check_nogroup(x, weight_scale, activation_scale, bias, quant_scale, quant_offset, quant_mode,
                             swiglu_mode, soc)
    if x.ndim < 1 or x.shape[-1] % 64 != 0:
        raise _bad(f"the last dimension of x ({x.shape[-1] if x.ndim else 'none'}) must be divisible by 64")
    xn = _name(x)
    if xn not in ("int32", "bfloat16"):
        raise _bad(f"x has dtype {xn}; pass int32 (or bfloat16)")
    if xn != "int32":
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, f"{OP}: bfloat16 x is not emulated; pass int32 x")
    _soc_ok(soc)
    in_dimy = x.shape[-1]
    in_dimx = int(np.prod(x.shape[:-1], dtype=np.int64))
    out_dimy = in_dimy // 2
    if _name(group_index) != "int64":
        raise _bad(f"group_index has dtype {_name(group_index)}; pass int64")
    if group_index.ndim not in (1, 2) or (group_index.ndim == 2 and group_index.shape[1] != 2):
        raise _bad(f"group_index has shape {group_index.shape}; pass [G] counts or [G, 2] (index, count) pairs")
    groups = group_index.shape[0]
    spe = group_index.ndim == 2
    bias_dtype = None
    if bias is not None:
        bias_dtype = _name(bias)
        _scale_shape(bias, "bias", in_dimy, groups)
        if bias_dtype not in ("int32", "float32", "float16", "bfloat16"):
            raise _bad(f"bias has dtype {bias_dtype}; pass bf16, fp16, float or int32")
    if weight_scale is None:
        raise _bad("weight_scale is required for int32 x")
    if _name(weight_scale) != "float32":
        raise _bad(f"weight_scale has dtype {_name(weight_scale)}; pass float32")
    _scale_shape(weight_scale, "weight_scale", in_dimy, groups)
    if activation_scale is not None and activation_scale.size > 0:
        if _name(activation_scale) != "float32":
            raise _bad(f"activation_scale has dtype {_name(activation_scale)}; pass float32")
        if activation_scale.size != in_dimx:
            raise _bad(f"activation_scale has {activation_scale.size} elements; pass one per token ({in_dimx})")
    qs_dtype = None
    quant_is_one = False
    if quant_scale is not None:
        qs_dtype = _name(quant_scale)
        if qs_dtype not in ("float32", "float16", "bfloat16"):
            raise _bad(f"quant_scale has dtype {qs_dtype}; pass float32, float16 or bfloat16")
    if quant_mode not in (0, 1):
        raise _bad(f"quant_mode={quant_mode!r}; pass 0 (static) or 1 (dynamic)")
    if quant_mode == 1:
        if quant_offset is not None:
            raise _bad("quant_offset must be None in dynamic quant mode (quant_mode=1)")
        if quant_scale is not None:
            _scale_shape(quant_scale, "quant_scale", out_dimy, groups)
    else:
        if quant_scale is None or quant_offset is None:
            raise _bad("static quant (quant_mode=0) needs quant_scale and quant_offset")
        if _name(quant_offset) != qs_dtype:
            raise _bad(f"quant_offset ({_name(quant_offset)}) and quant_scale ({qs_dtype}) must share a dtype")
        cols = []
        for a, nm in ((quant_scale, "quant_scale"), (quant_offset, "quant_offset")):
            if a.ndim == 1 and a.shape[0] == groups:
                cols.append(1)
            elif a.ndim == 2 and a.shape == (groups, out_dimy):
                cols.append(out_dimy)
            else:
                raise _bad(f"{nm} has shape {a.shape}; pass [{groups}] or [{groups}, {out_dimy}]")
        if cols[0] != cols[1]:
            raise _bad("quant_scale and quant_offset must have the same shape")
        quant_is_one = cols[0] == 1
    if swiglu_mode not in (0, 1, 2, 3):
        raise _bad(f"swiglu_mode={swiglu_mode!r}; pass 0, 1, 2 or 3")
    if spe and bias is not None:
        raise _bad("group_index must be 1-D when bias is given")
    if spe and swiglu_mode:
        raise _bad("group_index must be 1-D when swiglu_mode is not 0")
    gi = group_index.astype(np.int64)
    counts = gi[:, 1] if spe else gi
    total = 0
    for k, c in enumerate(counts):
        if spe and c <= 0:
            break
        if spe and not 0 <= gi[k, 0] < max(groups, 1):
            raise _bad(f"group_index[{k}] names group {gi[k, 0]}; the scales have {groups} groups "
                       f"(emulator-added check: the device reads outside weight_scale)")
        total += max(int(c), 0)
    if total > in_dimx:
        raise _bad(f"group_index counts add up to {total} rows but x has {in_dimx} (emulator-added check: the "
                   f"device would read and write past x and y)")
    return dict(in_dimx=in_dimx, in_dimy=in_dimy, groups=groups, spe=spe, bias_dtype=bias_dtype,
                qs_dtype=qs_dtype, quant_is_one=quant_is_one, nogroup=False)


def _soc_ok(soc):
    s = str(soc).lower()
    if not (s.startswith("ascend910b") or s.startswith("ascend910_93")):
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, f"{OP}: soc={soc!r} is not emulated (the 950 kernel is "
                                                            f"arch35's); use an ascend910b* or ascend910_93 soc")


def check_nogroup(x, weight_scale, activation_scale, bias, quant_scale, quant_offset, quant_mode, swiglu_mode, soc):
    """DequantSwigluQuantTiling (tiling_base.cpp) checks, in its order -> dict of what nogroup_tiling needs.

    16-bit x: checkInputShape skips checkWeightBiasActivate and the kernels read neither bias nor the dequant
    scales, so they are accepted and ignored. Static mode without quant_scale is legal here (quantScaleIsEmpty: the
    SwiGLU result is cast as it is) and quant_offset is then not looked at."""
    if x.ndim < 2:
        raise _bad(f"x has {x.ndim} dims; without group_index pass at least 2 (SetTotalShape)")
    if x.shape[-1] % 2 != 0:
        raise _bad(f"the last dimension of x ({x.shape[-1]}) must be even")
    xn = _name(x)
    if xn not in ("int32", "bfloat16", "float16"):
        raise _bad(f"x has dtype {xn}; pass int32, bfloat16 or float16")
    _soc_ok(soc)
    in_dimy = x.shape[-1]
    in_dimx = int(np.prod(x.shape[:-1], dtype=np.int64))
    out_dimy = in_dimy // 2
    if quant_mode not in (0, 1):
        raise _bad(f"quant_mode={quant_mode!r}; pass 0 (static) or 1 (dynamic)")
    bias_dtype = None
    if xn == "int32":
        if bias is not None:
            bias_dtype = _name(bias)
            if bias_dtype not in ("int32", "float32", "float16", "bfloat16"):
                raise _bad(f"bias has dtype {bias_dtype}; pass int32, float, fp16 or bf16")
            if bias.size != in_dimy:
                raise _bad(f"bias has {bias.size} elements; without group_index pass {in_dimy} (x's last dim)")
        if weight_scale is None:
            raise _bad("weight_scale is required for int32 x")
        if _name(weight_scale) != "float32":
            raise _bad(f"weight_scale has dtype {_name(weight_scale)}; pass float32")
        if weight_scale.size != in_dimy:
            raise _bad(f"weight_scale has {weight_scale.size} elements; without group_index pass {in_dimy} "
                       f"(x's last dim)")
        if activation_scale is not None and activation_scale.size > 0:
            if _name(activation_scale) != "float32":
                raise _bad(f"activation_scale has dtype {_name(activation_scale)}; pass float32")
            if activation_scale.size != in_dimx:
                raise _bad(f"activation_scale has {activation_scale.size} elements; pass one per token ({in_dimx})")
    qs_size = 0
    qo_size = 0
    if quant_scale is not None:
        if _name(quant_scale) != "float32":
            raise _bad(f"quant_scale has dtype {_name(quant_scale)}; without group_index pass float32")
        qs_size = int(quant_scale.size)
        if qs_size not in (out_dimy, 1):
            raise _bad(f"quant_scale has {qs_size} elements; pass {out_dimy} or 1")
        if quant_mode == 0:
            if quant_offset is None:
                raise _bad("static quant (quant_mode=0) with quant_scale needs quant_offset")
            if _name(quant_offset) != "float32":
                raise _bad(f"quant_offset has dtype {_name(quant_offset)}; without group_index pass float32")
            qo_size = int(quant_offset.size)
            if qo_size not in (out_dimy, 1):
                raise _bad(f"quant_offset has {qo_size} elements; pass {out_dimy} or 1")
            if qs_size == out_dimy != 1 and qo_size == 1:
                raise _bad(f"quant_offset has 1 element but quant_scale {out_dimy}: pass {out_dimy} offsets "
                           f"(emulator-added check: the per-channel kernel reads {out_dimy} offsets)")
    if swiglu_mode != 0:
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, f"{OP}: swiglu_mode={swiglu_mode} without group_index: "
                                                            f"the SwiGluTilingData kernels do not read swiglu_mode; "
                                                            f"pass swiglu_mode=0 or a group_index")
    return dict(in_dimx=in_dimx, in_dimy=in_dimy, groups=0, spe=False, bias_dtype=bias_dtype, qs_dtype=None,
                quant_is_one=qs_size == 1, qs_size=qs_size, nogroup=True, x_dtype=xn)
