"""The CANN parameter checks of aclnnAscendQuantV3 on the Atlas A2 / A3 (docs/ops/ascend_quant.md §5).

Source: hicann/ops-nn quant/ascend_quant_v2/op_api/aclnn_ascend_quant_v3.cpp (CheckNotNull, CheckInputScalar,
CheckDtypeValid, CheckDtypeCompatible, CheckAxis, CheckShape, CheckDim, CheckRoundMode), and the host tiling's
GetOpParam (which template runs). Every failure raises AclnnError with CANN's status before anything is computed.
"""

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError

X_DTYPES = ("float32", "float16", "bfloat16")        # DAV_2201: X_DTYPE_SUPPORT_LIST_WITH_BF16
SCALE_DTYPES = ("float32", "float16", "bfloat16")
Y_DTYPES = ("int8", "int32", "int4")                  # OUT_DTYPE_SUPPORT_LIST_INT
ROUND_MODES = ("round", "floor", "ceil", "trunc")
MAX_DIM = 8
PAGE = "docs/ops/ascend_quant.md"


def _err(message, status=ACLNN_ERR_PARAM_INVALID):
    return AclnnError(status, message)


def check(x_shape, x_dtype, scale_shape, scale_dtype, offset_shape, offset_dtype, y_dtype, axis, round_mode):
    """-> "tensor" | "channel" (the template the call runs); raises AclnnError otherwise."""
    if x_shape is None or scale_shape is None:
        raise _err("x and scale must not be null (aclnnAscendQuantV3 CheckNotNull); pass both tensors",
                   ACLNN_ERR_PARAM_NULLPTR)
    nd = len(x_shape)
    if nd == 0:
        raise _err("input x does not support scalar; pass at least a 1-D tensor")
    if x_dtype not in X_DTYPES:
        raise _err(f"x has dtype {x_dtype}; aclnnAscendQuantV3 takes {', '.join(X_DTYPES)} on the Atlas A2 / A3")
    if y_dtype not in Y_DTYPES:
        raise _err(f"y dtype {y_dtype} is not supported; use one of {', '.join(Y_DTYPES)}")
    if scale_dtype not in SCALE_DTYPES:
        raise _err(f"scale has dtype {scale_dtype}; use one of {', '.join(SCALE_DTYPES)}")
    if offset_shape is not None:
        if offset_dtype not in SCALE_DTYPES:
            raise _err(f"offset has dtype {offset_dtype}; use one of {', '.join(SCALE_DTYPES)}")
        if offset_dtype != scale_dtype:
            raise _err(f"offset dtype {offset_dtype} differs from scale dtype {scale_dtype}; they must be the same")
    if x_dtype in ("float16", "bfloat16") and scale_dtype != x_dtype:
        raise _err(f"dtype of input x:{x_dtype} is not compatible with scale:{scale_dtype}; a {x_dtype} x needs "
                   f"a {x_dtype} scale (only a float32 x takes any scale dtype)")
    if axis >= nd or axis < -nd:
        raise _err(f"invalid axis: {axis}, axis can't exceed the dimension of x: {nd}")
    if nd > 2 and (axis < -2 or 0 <= axis < nd - 2):
        raise _err(f"invalid axis: {axis}, axis must be one of last two dimensions of x")
    if y_dtype == "int32" or y_dtype == "int4":
        raise _err(f"y dtype {y_dtype} (int4 output, packed into int32 by npu_quantize) is not emulated yet; "
                   f"use int8 ({PAGE} §1)")
    if nd > MAX_DIM:
        raise _err(f"x has {nd} dimensions; at most {MAX_DIM}")
    if offset_shape is not None and tuple(offset_shape) != tuple(scale_shape):
        raise _err(f"offset shape {tuple(offset_shape)} differs from scale shape {tuple(scale_shape)}; they must "
                   f"be equal")
    sd = len(scale_shape)
    if sd == 0:
        raise _err("scale and offset do not support scalar; pass a 1-element 1-D tensor for one scale")
    if sd != 1 and sd != nd:
        raise _err(f"scale dimNum must be same as x dimNum or 1 (scale has {sd}, x has {nd})")
    x_axis = axis if axis >= 0 else nd + axis
    s_axis = 0 if sd == 1 else x_axis
    x_dim, s_dim = int(x_shape[x_axis]), int(scale_shape[s_axis])
    if s_dim != x_dim and s_dim != 1:
        raise _err(f"scale dim({s_axis})'s value({s_dim}) is invalid, should be same as x dim({x_axis})'s "
                   f"value({x_dim}) or 1")
    total = 1
    for d in scale_shape:
        total *= int(d)
    if total != s_dim:
        raise _err("If scale is not 1-dimensional tensor, all dimensions except the dimension specified by axis "
                   "should be 1")
    if round_mode not in ROUND_MODES:
        raise _err(f"check roundMode failed, roundMode[{round_mode}] not in ['round','floor','ceil','trunc'] "
                   f"for int8/int4/int32")
    # GetOpParam: which template
    if total == 1:
        return "tensor"
    if axis == -2 or (axis == nd - 2 and nd > 1):
        if int(x_shape[-1]) != 1:
            raise _err(f"a scale along axis {axis} (the per-head template) is not emulated yet; quantize along "
                       f"the last axis (axis=-1) ({PAGE} §1)")
    return "channel"
