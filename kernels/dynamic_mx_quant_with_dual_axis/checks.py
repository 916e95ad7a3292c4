"""Parameter checks of DynamicMxQuantWithDualAxis, in the order CANN runs them, with CANN's status codes.

Sources (hicann/ops-nn: quant/dynamic_mx_quant_with_dual_axis/): the aclnn docs
docs/aclnnDynamicMxQuantWithDualAxis[V2].md (return codes: 161001 null x, 161002 dtypes / shapes / attribute
values, 361001 a SoC other than Ascend 950PR/950DT), the tiling's GetAttr / CheckDtype / CheckShape
(op_host/dynamic_mx_quant_with_dual_axis_tiling.cpp: the messages below), and op-plugin's
op_plugin/ops/opapi/DynamicMxQuantWithDualAxisKernelNpuOpApi.cpp for the torch_npu front end. The op_api source
(aclnn_dynamic_mx_quant_with_dual_axis.cpp) is not public: npu-emu checks in the tiling's order, null pointers and the
SoC first (docs/ops/dynamic_mx_quant_with_dual_axis.md §5).
"""

import numpy as np

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, ACLNN_ERR_RUNTIME_ERROR, AclnnError
from npu_emu.kernels.mx_quant.checks import ACL_NAME, Desc, is_950, torch_dst_type  # noqa: F401
from npu_emu.kernels.mx_quant.tiling import FP4, FP8

ROUND_MODES = ("rint", "floor", "round")


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def _null(name):
    return AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} is a null pointer; pass a tensor")


def check_soc(soc):
    if not is_950(soc):
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR,
                         f"DynamicMxQuantWithDualAxis is not supported on {platforms.get(soc).name}: it runs on "
                         f"Ascend 950PR/950DT only (soc='ascend950pr' or 'ascend950dt')")


def scale_shapes(shape):
    """(mxscale1 shape, mxscale2 shape) of x's shape (infershape: ceil(ceil(d / 32) / 2) pairs, a trailing 2)."""
    s1 = list(shape[:-1]) + [-(-(-(-shape[-1] // 32)) // 2), 2]
    s2 = list(shape[:-2]) + [-(-(-(-shape[-2] // 32)) // 2), shape[-1], 2]
    return tuple(s1), tuple(s2)


def check_aclnn(x, round_mode, dst_type, scale_alg, dst_type_max, y1, s1, y2, s2, *, version, soc):
    """aclnnDynamicMxQuantWithDualAxis[V2]GetWorkspaceSize -> (round mode, y dtype name, "empty" | None)."""
    if x is None:
        raise _null("x")
    for name, t in (("y1Out", y1), ("mxscale1Out", s1), ("y2Out", y2), ("mxscale2Out", s2)):
        if t is None:
            raise _null(name)
    check_soc(soc)
    # CheckDtype
    if x.dtype not in ("float16", "bfloat16"):
        raise _bad(f"x dtype {x.dtype} is not supported: the dtype of x must be DT_FLOAT16 or DT_BF16")
    for name, t in (("y1Out", y1), ("y2Out", y2)):
        if t.dtype not in FP8 + FP4:
            raise _bad(f"{name} dtype {t.dtype} is not supported: the dtype of y must be DT_FLOAT4_E2M1, "
                       f"DT_FLOAT4_E1M2, DT_FLOAT8_E4M3FN, or DT_FLOAT8_E5M2")
    if y1.dtype != y2.dtype:
        raise _bad(f"y1Out ({y1.dtype}) and y2Out ({y2.dtype}) must have the same dtype")
    for name, t in (("mxscale1Out", s1), ("mxscale2Out", s2)):
        if t.dtype != "float8_e8m0":
            raise _bad(f"{name} dtype {t.dtype} is not supported; use FLOAT8_E8M0 (uint8 bits)")
    # GetAttr
    if round_mode is None:
        round_mode = "rint"
    if round_mode not in ROUND_MODES:
        raise _bad(f"roundModeOptional={round_mode!r}: the value of round_mode must be rint, floor, or round")
    y = y1.dtype
    if y in FP8 and round_mode != "rint":
        raise _bad(f"roundModeOptional={round_mode!r}: if the dtype of output y is FLOAT8_E4M3FN/FLOAT8_E5M2, "
                   f"parameter round_mode must be rint")
    if isinstance(dst_type, bool) or not isinstance(dst_type, (int, np.integer)) or int(dst_type) not in ACL_NAME \
            or ACL_NAME[int(dst_type)] != y:
        raise _bad(f"y dtype {y}, dstType {dst_type!r}: the dtypes of y and dst_type must be the same (dstType is "
                   f"the aclDataType 35, 36, 40 or 41 of y)")
    algs = (0, 1) if version == "v1" else (0, 1, 2)
    if scale_alg not in algs:
        raise _bad(f"scaleAlg={scale_alg}: the value of scale_alg must be one of {algs}"
                   + (" (scaleAlg 2 needs aclnnDynamicMxQuantWithDualAxisV2)" if version == "v1" else ""))
    if scale_alg == 1 and y == "float4_e2m1":
        raise _bad("scaleAlg=1: if the dtype of output y is FLOAT4_E2M1, parameter scale_alg must be 0 or 2")
    if scale_alg in (1, 2) and y == "float4_e1m2":
        raise _bad(f"scaleAlg={scale_alg}: if the dtype of output y is FLOAT4_E1M2, parameter scale_alg must be 0")
    if scale_alg == 2 and y in FP8:
        raise _bad("scaleAlg=2: if the dtype of output y is FLOAT8_E4M3FN/FLOAT8_E5M2, parameter scale_alg must be "
                   "0 or 1")
    d = float(np.float32(dst_type_max))
    if d < 0 or (0 < d < 6) or d > 12 or not np.isfinite(d):
        raise _bad(f"dstTypeMax={dst_type_max}: the value of dst_type_max must be 0 or in the range [6, 12]")
    # CheckShape
    if x.ndim < 2:
        raise _bad(f"x has {x.ndim} dims: the shape dim of x must be greater than or equal to 2")
    if x.ndim > 7:
        raise _bad(f"x has {x.ndim} dims: x supports 2 to 7 dims")
    if y in FP4 and x.shape[-1] % 2:
        raise _bad(f"x shape {list(x.shape)}: when the yDtype is FLOAT4_E2M1 or FLOAT4_E1M2, the tail axis of x must "
                   f"be an even number")
    if tuple(y1.shape) != tuple(x.shape) or tuple(y2.shape) != tuple(x.shape):
        raise _bad(f"x, y1, y2 shapes {list(x.shape)}, {list(y1.shape)}, {list(y2.shape)}: the shapes of x, y1, and y2 "
                   f"must be the same (FP4 outputs: the logical shape, twice the packed last dimension)")
    want1, want2 = scale_shapes(x.shape)
    if tuple(s1.shape) != want1:
        raise _bad(f"x {list(x.shape)}, mxscale1 {list(s1.shape)}: the shape of mxscale1 must be {list(want1)} "
                   f"([..., ceil(x.last_dim/64), 2])")
    if tuple(s2.shape) != want2:
        raise _bad(f"x {list(x.shape)}, mxscale2 {list(s2.shape)}: the shape of mxscale2 must be {list(want2)} "
                   f"([..., ceil(x.second_last_dim/64), x.last_dim, 2])")
    for name, t in (("y1Out", y1), ("mxscale1Out", s1), ("y2Out", y2), ("mxscale2Out", s2)):
        if not t.contiguous:
            raise _bad(f"{name} must be contiguous.")
    return round_mode, y, ("empty" if x.numel == 0 else None)


def check_torch(x, dst_type):
    """op-plugin npu_dynamic_mx_quant_with_dual_axis before aclnn -> the y dtype name."""
    if x.ndim < 2:
        raise _bad("The input should be at least 2D")
    y = torch_dst_type(dst_type)
    if y in FP4 and x.shape[-1] % 2:
        raise _bad("The last dim input shape must be divisible by 2 if y1 dtype is torch_npu.float4_e2m1fn_x2 or "
                   "torch_npu.float4_e1m2")
    return y
