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


# ---- aclnnQuantize (npu_quantize div_mode=True) on the Ascend 950 (docs/ops/ascend_quant.md §9) -------------
# Source: hicann/ops-nn quant/quantize/op_api/aclnn_quantize.cpp (CheckNotNull, CheckShapeValid, CheckDtypeValid with
# GetSocSupportDtypeMap, MakeWrapDim) and op_host/arch35/quantize_tiling_arch35.cpp (CheckDtype, CheckAttrs,
# CheckShape, SelectMode); the SoC check (quantize_tiling.check_soc) comes first.

Q_X_DTYPES = ("float32", "float16", "bfloat16")                           # DTYPE_SUPPORT_ALLF_LIST (DAV_3510)
Q_SCALE_DTYPES = ("float32", "float16", "bfloat16")
Q_ZP_DTYPES = ("int8", "uint8", "int32", "float32", "bfloat16")          # DTYPE_SUPPORT_INT_FLOAT_BF16_LIST
Q_Y_DTYPES = ("int8", "uint8", "int32", "hifloat8", "float8_e4m3fn", "float8_e5m2")   # DTYPE_SUPPORT_A5_FOR_OUT_LIST
Q_Y_EMULATED = ("int8", "uint8", "int32")


def wrap_dim(axis, nd):
    """MakeWrapDim: negative axes wrap; out-of-range values become nd - 1."""
    n = nd if nd > 0 else 1
    if axis < 0:
        axis += n
    if axis < -n or axis >= n:
        axis = n - 1
    return axis


def check_quantize(x_shape, x_dtype, s_shape, s_dtype, z_shape, z_dtype, y_dtype, out_shape, out_dtype, axis):
    """-> (mode, positive axis) with mode "tensor" | "channel" | "head" (SelectMode); raises AclnnError."""
    if x_shape is None or s_shape is None or out_shape is None:
        raise _err("x, scales and out must not be null (aclnnQuantize CheckNotNull); pass all three",
                   ACLNN_ERR_PARAM_NULLPTR)
    nd = len(x_shape)
    # CheckShapeValid
    if nd > MAX_DIM:
        raise _err(f"x has {nd} dimensions; at most {MAX_DIM}")
    if tuple(out_shape) != tuple(x_shape):
        raise _err(f"out shape {tuple(out_shape)} must equal x shape {tuple(x_shape)}")
    if len(s_shape) != 1:
        raise _err(f"Input scales shape only support 1 dimension (scales has {len(s_shape)}); pass a 1-D tensor")
    size = int(s_shape[0])
    if z_shape is not None:
        if len(z_shape) != 1:
            raise _err(f"Input zeroPoints shape only support 1 dimension (zeroPoints has {len(z_shape)})")
        if int(z_shape[0]) != size:
            raise _err(f"Scales size ({size}) should be equal to zeroPoints size ({int(z_shape[0])})")
    if size != 1:
        if axis < -nd or axis >= nd:
            raise _err(f"Axis out of range (expected to be in range of [-{nd}, {nd - 1}], but got {axis})")
        pa = wrap_dim(axis, nd)
        if size != int(x_shape[pa]):
            raise _err(f"The size of scales must equal to 1 or the specified dimension of x, which is "
                       f"{int(x_shape[pa])} (scales has {size})")
    # CheckDtypeValid (DAV_3510 lists)
    if x_dtype not in Q_X_DTYPES:
        raise _err(f"x has dtype {x_dtype}; aclnnQuantize takes {', '.join(Q_X_DTYPES)}")
    if s_dtype not in Q_SCALE_DTYPES:
        raise _err(f"scales has dtype {s_dtype}; use one of {', '.join(Q_SCALE_DTYPES)}")
    if z_shape is not None and z_dtype not in Q_ZP_DTYPES:
        raise _err(f"zeroPoints has dtype {z_dtype}; use one of {', '.join(Q_ZP_DTYPES)}")
    if y_dtype not in Q_Y_DTYPES:
        raise _err(f"Param dtype {y_dtype} should be in dtype support list [{', '.join(Q_Y_DTYPES)}]")
    if out_dtype != y_dtype:
        raise _err(f"out dtype {out_dtype} must match dtype {y_dtype}")
    if z_shape is not None:
        if z_dtype == "bfloat16" or s_dtype == "bfloat16":
            if not (x_dtype == s_dtype == z_dtype == "bfloat16"):
                raise _err(f"with a bfloat16 scales or zeroPoints, x, scales and zeroPoints must all be bfloat16 "
                           f"(got x {x_dtype}, scales {s_dtype}, zeroPoints {z_dtype})")
    elif s_dtype == "bfloat16" and x_dtype != "bfloat16":
        raise _err(f"a bfloat16 scales needs a bfloat16 x (got {x_dtype})")
    if y_dtype not in Q_Y_EMULATED:
        raise _err(f"dtype {y_dtype} (an FP8 / HiF8 output) is not emulated yet for aclnnQuantize; use "
                   f"{', '.join(Q_Y_EMULATED)} ({PAGE} §9)")
    pa = wrap_dim(axis, nd)
    if size == 1:
        return "tensor", pa
    return ("channel" if pa == nd - 1 else "head"), pa
