"""The CANN parameter checks of aclnnQuantize (npu_quantize with div_mode=True) (docs/ops/ascend_quant.md §9).

Source: hicann/ops-nn quant/quantize/op_api/aclnn_quantize.cpp (CheckNotNull, CheckShapeValid, CheckDtypeValid with
GetSocSupportDtypeMap, MakeWrapDim) and op_host/arch35/quantize_tiling_arch35.cpp (CheckDtype, CheckAttrs, CheckShape,
SelectMode). Every failure raises AclnnError with CANN's status before anything is computed.
"""

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError

X_DTYPES = ("float32", "float16", "bfloat16")                           # DTYPE_SUPPORT_ALLF_LIST (DAV_3510)
SCALE_DTYPES = ("float32", "float16", "bfloat16")
ZP_DTYPES = ("int8", "uint8", "int32", "float32", "bfloat16")          # DTYPE_SUPPORT_INT_FLOAT_BF16_LIST
Y_DTYPES = ("int8", "uint8", "int32", "hifloat8", "float8_e4m3fn", "float8_e5m2")   # DTYPE_SUPPORT_A5_FOR_OUT_LIST
Y_EMULATED = ("int8", "uint8", "int32")
MAX_DIM = 8
PAGE = "docs/ops/ascend_quant.md"


def _err(message, status=ACLNN_ERR_PARAM_INVALID):
    return AclnnError(status, message)


def check_soc(soc):
    plat = platforms.get(soc)
    if plat.npu_arch != 3510:
        raise _err(f"aclnnQuantize (npu_quantize div_mode=True) is emulated on the Ascend 950 only: its public kernels "
                   f"are hicann/ops-nn quant/quantize/op_kernel/arch35 (regbase); {plat.name!r} (DAV_{plat.npu_arch}) "
                   f"runs a kernel that is not public. Pass soc='ascend950pr' ({PAGE} §9)")


def wrap_dim(axis, nd):
    """MakeWrapDim: negative axes wrap; out-of-range values become nd - 1."""
    n = nd if nd > 0 else 1
    if axis < 0:
        axis += n
    if axis < -n or axis >= n:
        axis = n - 1
    return axis


def check(x_shape, x_dtype, s_shape, s_dtype, z_shape, z_dtype, y_dtype, out_shape, out_dtype, axis):
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
    if x_dtype not in X_DTYPES:
        raise _err(f"x has dtype {x_dtype}; aclnnQuantize takes {', '.join(X_DTYPES)}")
    if s_dtype not in SCALE_DTYPES:
        raise _err(f"scales has dtype {s_dtype}; use one of {', '.join(SCALE_DTYPES)}")
    if z_shape is not None and z_dtype not in ZP_DTYPES:
        raise _err(f"zeroPoints has dtype {z_dtype}; use one of {', '.join(ZP_DTYPES)}")
    if y_dtype not in Y_DTYPES:
        raise _err(f"Param dtype {y_dtype} should be in dtype support list [{', '.join(Y_DTYPES)}]")
    if out_dtype != y_dtype:
        raise _err(f"out dtype {out_dtype} must match dtype {y_dtype}")
    if z_shape is not None:
        if z_dtype == "bfloat16" or s_dtype == "bfloat16":
            if not (x_dtype == s_dtype == z_dtype == "bfloat16"):
                raise _err(f"with a bfloat16 scales or zeroPoints, x, scales and zeroPoints must all be bfloat16 "
                           f"(got x {x_dtype}, scales {s_dtype}, zeroPoints {z_dtype})")
    elif s_dtype == "bfloat16" and x_dtype != "bfloat16":
        raise _err(f"a bfloat16 scales needs a bfloat16 x (got {x_dtype})")
    if y_dtype not in Y_EMULATED:
        raise _err(f"dtype {y_dtype} (an FP8 / HiF8 output) is not emulated yet for aclnnQuantize; use "
                   f"{', '.join(Y_EMULATED)} ({PAGE} §9)")
    pa = wrap_dim(axis, nd)
    if size == 1:
        return "tensor", pa
    return ("channel" if pa == nd - 1 else "head"), pa
