"""CANN parameter checks of GroupedDynamicMxQuant (aclnn V1, V2) and DynamicMxQuant (aclnn V1-V3), in CANN's order.

Grouped: hicann/ops-nn: quant/grouped_dynamic_mx_quant/op_api/aclnn_grouped_dynamic_mx_quant.cpp and
aclnn_grouped_dynamic_mx_quant_v2.cpp (CheckNotNull, CheckDtypeValid, CheckShape, then the GetWorkspaceSize body),
docs/ops/mx_quant.md §3.2. The rules only the host tiling enforces live in tiling.py (status 561103, inferred).
DynamicMxQuant: its op_api source is not public; the checks follow the aclnnDynamicMxQuant[V2|V3].md docs and the
tiling (dynamic_mx_quant_tiling_arch35.cpp GetAttr / CheckShape), docs/ops/mx_quant.md §4.1: null -> 161001,
platform -> 361001, everything else 161002, in the order null, platform, dtypes, attributes, shapes, contiguity.

Tensors are described by :class:`Desc` (canonical dtype name, *logical* shape: FP4 tensors count elements, not
packed bytes, as aclTensor shapes do, and contiguity) so numpy arrays, labelled bit views and torch tensors are
checked alike.
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.device import platforms
from npu_emu.errors import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    AclnnError,
    invalid,
)
from npu_emu.frontend.core import TORCH_NPU_DTYPES, resolve_torch_npu_dtype
from npu_emu.kernels.mx_quant.tiling import ACL_CODE, FP4, FP8, ROUND_MODES, Y_DTYPES

CANN_VERSIONS = ("master", "9.1.0", "9.0.1", "9.0.0")
GROUPED_LEGACY = ("9.1.0", "9.0.1", "9.0.0")      # tiny-block pass-through, FP8 and scale_alg 0/1 only (§3.8)
DYNAMIC_LEGACY = ("9.0.0",)                       # tiny-block pass-through (§4.3)
GROUPED_HAS_V2 = ("master", "9.1.0")              # aclnnGroupedDynamicMxQuantV2 first ships with 9.1.0
ACL_NAME = {v: k for k, v in ACL_CODE.items()}

@dataclass(frozen=True)
class Desc:
    """What aclnn sees of a tensor: dtype name, logical shape, contiguity."""

    dtype: str
    shape: tuple
    contiguous: bool = True

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def numel(self):
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def _null(name):
    return AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} is a null pointer; pass a tensor")


def is_950(soc):
    return platforms.get(soc).npu_arch == 3510


def check_cann_version(cann_version):
    if cann_version not in CANN_VERSIONS:
        raise _bad(f"cann_version={cann_version!r} is not one of {CANN_VERSIONS} (docs/ops/mx_quant.md §1)")
    return cann_version


def check_switches(*, gap_fill=0, signed_zero=True, ftz=False, nan_in_max="propagate",
                   fp4_nibble_order="low_first"):
    """The behaviour switches of docs/ops/mx_quant.md §1 (emulator arguments, 161002 when malformed)."""
    if gap_fill is not None and (isinstance(gap_fill, bool) or not isinstance(gap_fill, (int, np.integer))
                                 or not 0 <= int(gap_fill) <= 255):
        raise _bad(f"gap_fill={gap_fill!r}: use a byte value 0..255, or None to leave gap rows untouched")
    for name, v in (("signed_zero", signed_zero), ("ftz", ftz)):
        if not isinstance(v, (bool, np.bool_)):
            raise _bad(f"{name}={v!r}: use True or False")
    if nan_in_max not in ("propagate", "ignore"):
        raise _bad(f"nan_in_max={nan_in_max!r}: use 'propagate' or 'ignore'")
    if fp4_nibble_order not in ("low_first", "high_first"):
        raise _bad(f"fp4_nibble_order={fp4_nibble_order!r}: use 'low_first' or 'high_first'")


# ---------------------------------------------------------------------------------------------------------------
# GroupedDynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

def check_grouped_aclnn(x, group_index, round_mode, dst_type, blocksize, scale_alg, y, mxscale, *, version, soc,
                        cann_version="master"):
    """aclnnGroupedDynamicMxQuant[V2]GetWorkspaceSize up to the l0op call (V1: scale_alg is 0).

    Returns "empty" when x is empty (success, no kernel), else None. ``x``, ``group_index``, ``y``, ``mxscale``
    are Desc or None; the non-contiguous-mxscale check comes after the l0op call in CANN (see
    :func:`check_grouped_mxscale_contiguous`).
    """
    # CheckNotNull (a null roundMode is logged as PARAM_INVALID but returns 161001)
    for name, t in (("x", x), ("groupIndex", group_index)):
        if t is None:
            raise _null(name)
    if round_mode is None:
        raise _null("roundMode")
    for name, t in (("y", y), ("mxscale", mxscale)):
        if t is None:
            raise _null(name)
    # CheckDtypeValid
    if not is_950(soc):
        raise _bad(f"support for npuArch of {platforms.get(soc).name} is not implemented: GroupedDynamicMxQuant "
                   f"runs on Ascend 950 only (the API logs ACLNN_ERR_RUNTIME_ERROR but returns 161002)")
    v2_full = version == "v2" and cann_version == "master"
    y_ok = FP8 + FP4 if v2_full else FP8
    modes = ROUND_MODES if v2_full else ("rint",)
    algs = (0, 1, 2) if v2_full else (0, 1)
    if x.dtype not in ("float16", "bfloat16"):
        raise _bad(f"x dtype {x.dtype} is not supported; use FLOAT16 or BFLOAT16")
    if group_index.dtype != "int32":
        raise _bad(f"groupIndex dtype {group_index.dtype} is not supported; use INT32")
    if y.dtype not in y_ok:
        raise _bad(f"y dtype {y.dtype} is not supported by aclnnGroupedDynamicMxQuant{'V2' if version == 'v2' else ''}"
                   f" (CANN {cann_version}); use one of {', '.join(y_ok)}")
    if mxscale.dtype != "float8_e8m0":
        raise _bad(f"mxscale dtype {mxscale.dtype} is not supported; use FLOAT8_E8M0 (uint8 bits)")
    if round_mode not in modes:
        raise _bad(f"expected roundMode equals {'/'.join(repr(m) for m in modes)}, get: {round_mode!r}")
    if blocksize != 32:
        raise _bad(f"blocksize only support '32' now, get: {blocksize}")
    if version == "v2" and scale_alg not in algs:
        raise _bad(f"scaleAlg only support {', '.join(repr(a) for a in algs)} now, get: {scale_alg}")
    if ACL_CODE.get(y.dtype) != dst_type:
        raise _bad(f"dstType:{dst_type} must be the same as y dtype [{y.dtype} = {ACL_CODE.get(y.dtype)}]")
    # CheckShape
    if x.ndim != 2:
        raise _bad(f"input x Dims is {x.ndim}, should be 2D.")
    if group_index.ndim != 1:
        raise _bad(f"input groupIndex Dims is {group_index.ndim}, should be 1D.")
    if y.ndim != 2:
        raise _bad(f"output yShape Dims is {y.ndim}, should be 2D.")
    if mxscale.ndim != 3:
        raise _bad(f"output mxscale Dims is {mxscale.ndim}, should be 3D.")
    if tuple(y.shape) != tuple(x.shape):
        raise _bad(f"y shape {list(y.shape)} must equal x shape {list(x.shape)} (FP4 y: the logical shape, "
                   f"i.e. twice the packed last dimension)")
    m, n = x.shape
    g = group_index.shape[0]
    if mxscale.shape[2] != 2:
        raise _bad(f"mxscale dim2 is {mxscale.shape[2]}, should be 2.")
    if mxscale.shape[1] != n:
        raise _bad(f"mxscale dim1 is {mxscale.shape[1]}, should be same as x dim1 ({n}).")
    if mxscale.shape[0] != m // 64 + g:
        raise _bad(f"mxscale dim0 is {mxscale.shape[0]}, should be same with mxscaleDim0Count ({m // 64 + g} = "
                   f"x.shape[0] // 64 + groupIndex.shape[0]).")
    # GetWorkspaceSize body
    if g == 0:
        raise _bad("groupIndex does not support empty values.")
    if x.numel == 0:
        return "empty"
    if version == "v2" and y.dtype in FP4 and not y.contiguous:
        raise _bad("When the data type of y is float4, it must be contiguous")
    return None


def check_grouped_mxscale_contiguous(mxscale):
    if not mxscale.contiguous:
        raise _bad("mxscale must be contiguous.")


def check_group_index_values(group_index, m):
    """Emulator-added: the device never validates groupIndex; out-of-range or decreasing values read and write
    out of bounds on the device (undefined), so npu-emu rejects them (docs/ops/mx_quant.md §3.1)."""
    gi = np.asarray(group_index).astype(np.int64).reshape(-1)
    if gi.size == 0:
        return
    bad = []
    if gi.min() < 0 or gi.max() > m:
        bad.append(f"values must lie in [0, m = {m}], got min {gi.min()} max {gi.max()}")
    if np.any(np.diff(gi) < 0):
        i = int(np.argmax(np.diff(gi) < 0))
        bad.append(f"must be non-decreasing, but groupIndex[{i}] = {gi[i]} > groupIndex[{i + 1}] = {gi[i + 1]}")
    if gi[-1] != m:
        bad.append(f"the last value must equal m = {m} (it is {gi[-1]})")
    if bad:
        raise _bad("groupIndex holds cumulative group END offsets: " + "; ".join(bad)
                   + " (emulator-added check: the device does not validate them and its result is undefined)")


def check_grouped_torch(x, group_index, dst_type, blocksize, scale_alg, dst_type_max, cann_version):
    """torch_npu npu_grouped_dynamic_mx_quant (op-plugin GroupedDynamicMxQuantKernelNpuOpApi.cpp), before aclnn.

    ``x`` and ``group_index`` are Desc (logical shapes). Returns the output dtype name.
    """
    if x.ndim != 2:
        raise _bad(f"X dimNum should be 2, got {x.ndim}")
    if group_index.ndim != 1:
        raise _bad(f"Group_index dimNum should be 1, got {group_index.ndim}")
    y_dtype = torch_dst_type(dst_type)
    if y_dtype in FP4 and x.shape[-1] % 2:
        raise _bad("The last dim of input x must be divisible by 2 if y dtype is torch_npu.float4_e2m1fn_x2 or "
                   "torch_npu.float4_e1m2")
    if blocksize != 32:
        raise _bad(f"Parameter blocksize must be 32, got {blocksize}")
    if scale_alg not in (0, 1, 2):
        raise _bad(f"Parameter scale_alg must be 0, 1 or 2, got {scale_alg}")
    if cann_version not in GROUPED_HAS_V2 and (scale_alg != 0 or float(dst_type_max) != 0.0):
        raise _bad("The current CANN version does not support the parameter scale_alg and dst_type_max. It is "
                   f"recommended to upgrade the CANN package. (cann_version={cann_version!r} has no "
                   "aclnnGroupedDynamicMxQuantV2)")
    return y_dtype


def torch_dst_type(dst_type):
    """Output format name of torch_npu's ``dst_type``: a torch / torch_npu dtype code (23, 24, 291, 292, 296, 297),
    a torch dtype (torch.float8_e4m3fn, torch.float4_e2m1fn_x2, ...), a numpy / ml_dtypes dtype or a name
    ("float8_e4m3fn", "e5m2", "float4_e1m2fn_x2", ...), resolved by npu_emu.frontend.core.resolve_torch_npu_dtype.
    Integers are torch codes, never aclDataType values (torch 23 = aclDataType 35), as in torch_npu."""
    if isinstance(dst_type, (int, np.integer)) and not isinstance(dst_type, (bool, np.bool_)) \
            and int(dst_type) not in TORCH_NPU_DTYPES and int(dst_type) in ACL_NAME:
        name = ACL_NAME[int(dst_type)]
        code = min(k for k, v in TORCH_NPU_DTYPES.items() if v == name)
        raise _bad(f"dst_type={int(dst_type)} is not an MX output type here: {int(dst_type)} is the aclDataType of "
                   f"{name}, whose torch code is {code} (aclDataType values go to the aclnn functions)")
    name = resolve_torch_npu_dtype(dst_type, "dst_type")
    if name not in Y_DTYPES:
        raise _bad(f"dst_type {dst_type!r} ({name}) is not an MX output type: use float8_e4m3fn, float8_e5m2, "
                   f"float4_e2m1 or float4_e1m2 (torch codes 24, 23, 296, 297)")
    return name


# How a user picks the emulated SoC, named wherever a call is refused for running on the wrong one (issue 40):
# the keyword of npu_emu.ops, the variable / setter of the torch front ends, and the command-line options.
SOC_SWITCHES = ("soc='ascend950pr' (npu_emu.ops), NPU_EMU_SOC=ascend950pr or npu_emu.torch.set_soc('ascend950pr') "
                "(torch / torch_npu), `npu-emu exec --soc ascend950pr`, `pytest --npu-emu-soc ascend950pr`")


def soc_switch_hint(soc):
    """' (emulated SoC: <soc>; pick the Ascend 950 with ...)' for error messages."""
    return f" (emulated SoC: {soc}; pick the Ascend 950 with {SOC_SWITCHES})"


# ---------------------------------------------------------------------------------------------------------------
# DynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

def check_dynamic_aclnn(x, axis, round_mode, dst_type, blocksize, scale_alg, dst_type_max, max_low_bound, y,
                        mxscale, *, version, soc):
    """aclnnDynamicMxQuant[V2|V3]GetWorkspaceSize. Returns (round_mode, "empty" | None)."""
    if x is None:
        raise _null("x")
    for name, t in (("yOut", y), ("mxscaleOut", mxscale)):
        if t is None:
            raise _null(name)
    if not is_950(soc):
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"DynamicMxQuant is not supported on {platforms.get(soc).name}: "
                                                  f"it runs on Ascend 950PR/950DT only"
                                                  f"{soc_switch_hint(platforms.get(soc).name)}")
    # dtypes
    if x.dtype not in ("float16", "bfloat16", "float32"):
        raise _bad(f"x dtype {x.dtype} is not supported; use FLOAT16, BFLOAT16 or FLOAT")
    if y.dtype not in FP8 + FP4:
        raise _bad(f"yOut dtype {y.dtype} is not supported; use FLOAT4_E2M1, FLOAT4_E1M2, FLOAT8_E4M3FN or "
                   f"FLOAT8_E5M2")
    if mxscale.dtype != "float8_e8m0":
        raise _bad(f"mxscaleOut dtype {mxscale.dtype} is not supported; use FLOAT8_E8M0 (uint8 bits)")
    if dst_type not in ACL_NAME:
        raise _bad(f"dstType={dst_type} is not supported; use 35 (FLOAT8_E5M2), 36 (FLOAT8_E4M3FN), 40 "
                   f"(FLOAT4_E2M1) or 41 (FLOAT4_E1M2)")
    if ACL_NAME[dst_type] != y.dtype:
        raise _bad(f"the dtypes of yOut ({y.dtype}) and dstType ({dst_type} = {ACL_NAME[dst_type]}) must be the same")
    # attributes
    if round_mode is None:
        round_mode = "rint"
    if round_mode not in ROUND_MODES:
        raise _bad(f"roundModeOptional={round_mode!r}: the value of round_mode must be [rint, round, floor]")
    if y.dtype in FP8 and round_mode != "rint":
        raise _bad(f"roundModeOptional={round_mode!r}: if the dtype of yOut is FLOAT8_E4M3FN/FLOAT8_E5M2, "
                   f"round_mode must be rint")
    if blocksize <= 0 or blocksize > 1024 or blocksize % 32:
        raise _bad(f"blocksize={blocksize}: it must be a multiple of 32 within (0, 1024]")
    if x.dtype == "float32" and blocksize != 32:
        raise _bad(f"blocksize={blocksize}: if the dtype of x is FLOAT, blocksize must be 32")
    algs = (0, 1) if version == "v1" else (0, 1, 2)
    if scale_alg not in algs:
        raise _bad(f"scaleAlg={scale_alg}: the value of scaleAlg must be one of {algs}")
    allowed = {"float8_e4m3fn": (0, 1), "float8_e5m2": (0, 1), "float4_e2m1": (0,) if version == "v1" else (0, 2),
               "float4_e1m2": (0,)}[y.dtype]
    if scale_alg not in allowed:
        raise _bad(f"scaleAlg={scale_alg}: if the dtype of yOut is {y.dtype}, scaleAlg must be one of {allowed}")
    if scale_alg == 2 and blocksize != 32:
        raise _bad(f"blocksize={blocksize}: when scaleAlg is 2, blocksize must be 32")
    d = float(np.float32(dst_type_max))
    if not (d == 0.0 or 6.0 <= d <= 12.0):
        raise _bad(f"dstTypeMax={dst_type_max}: the value of dst_type_max must be within the range [6, 12] or "
                   f"equal to 0")
    if d != 0.0 and (y.dtype != "float4_e2m1" or blocksize != 32):
        raise _bad(f"dstTypeMax={dst_type_max}: it can only be set for FLOAT4_E2M1 with blocksize 32")
    mlb = float(np.float32(max_low_bound))
    if not mlb >= 0:
        raise _bad(f"maxLowBound={max_low_bound}: max_low_bound must be non-negative")
    if mlb != 0.0 and scale_alg != 1:
        raise _bad(f"maxLowBound={max_low_bound}: max_low_bound must be 0 when scale_alg != 1")
    # shapes
    rank = x.ndim
    if not 1 <= rank <= 7:
        raise _bad(f"x has {rank} dims; the shape dim of x must be within the range [1, 7]")
    if not -rank <= axis < rank:
        raise _bad(f"axis={axis}: the value of axis must be within the range [-{rank}, {rank - 1}]")
    ax = axis % rank
    if tuple(y.shape) != tuple(x.shape):
        raise _bad(f"yOut shape {list(y.shape)} must equal x shape {list(x.shape)} (FP4 yOut: the logical shape, "
                   f"i.e. twice the packed last dimension)")
    if y.dtype in FP4 and x.shape[-1] % 2:
        raise _bad(f"x shape {list(x.shape)}: when the yDtype is FLOAT4_E2M1 or FLOAT4_E1M2, the tail axis of x "
                   f"must be an even number")
    want = list(x.shape)
    want[ax] = -(-(-(-x.shape[ax] // blocksize)) // 2)
    want.append(2)
    if list(mxscale.shape) != want:
        raise _bad(f"mxscaleOut shape {list(mxscale.shape)} is invalid; it must be {want} (rank(x) + 1, "
                   f"ceil(ceil(x.shape[axis] / blocksize) / 2) at axis, 2 last)")
    if x.dtype == "float32" and x.shape[ax] < 32 and x.numel:
        raise _bad(f"x.shape[{ax}] = {x.shape[ax]}: if the dtype of x is FLOAT, the quantised axis must hold at "
                   f"least 32 elements")
    if not y.contiguous:
        raise _bad("yOut must be contiguous.")
    if not mxscale.contiguous:
        raise _bad("mxscaleOut must be contiguous.")
    return round_mode, ("empty" if x.numel == 0 else None)


def check_dynamic_torch(x, axis, dst_type, block_size):
    """torch_npu npu_dynamic_mx_quant (op-plugin DynamicMxQuantKernelNpuOpApi.cpp), before aclnn."""
    if not -x.ndim <= axis < x.ndim:
        raise _bad("Param (axis) is out of input dimension range")
    if not (block_size % 32 == 0 and 0 < block_size <= 1024):
        raise _bad("Param (block_size) must be divisible by 32 and no greater than 1024, greater than 0")
    y_dtype = torch_dst_type(dst_type)
    if y_dtype in FP4 and x.shape[-1] % 2:
        raise _bad("The last dim input shape must be divisible by 2 if output dtype is torch_npu.float4_e2m1 or "
                   "torch_npu.float4_e1m2")
    return y_dtype


# ---------------------------------------------------------------------------------------------------------------
# AntiMxQuant (torch_npu.npu_anti_mx_quant): op-plugin AntiMxQuantKernelNpuOpApi.cpp and the aclnn / tiling checks
# ---------------------------------------------------------------------------------------------------------------

# src_type: torch codes (23/24) or torch_npu's (291/292/296/297), as op-plugin takes them
ANTI_SRC = {23: "float8_e5m2", 24: "float8_e4m3fn", 291: "float8_e5m2", 292: "float8_e4m3fn", 296: "float4_e2m1",
            297: "float4_e1m2"}
# dst_type: torch ScalarType codes of the three outputs the kernel writes (c10: Half 5, Float 6, BFloat16 15)
ANTI_DST = {5: "float16", 6: "float32", 15: "bfloat16"}


def check_anti(x, mxscale, axis, dst_type, src_type):
    """-> (axis, output name, source format name, output shape) for arrays already normalised; first failure
    raises (docs/ops/mx_quant.md §7.4)."""
    src = ANTI_SRC.get(int(src_type)) if isinstance(src_type, (int, np.integer)) else None
    if src is None:
        src = {"float8_e5m2": "float8_e5m2", "float8_e4m3fn": "float8_e4m3fn", "float4_e2m1": "float4_e2m1",
               "float4_e1m2": "float4_e1m2"}.get(str(src_type).replace("torch.", ""))
    if src is None:
        raise invalid(f"src_type={src_type!r} is not an MX element format; use 23/291 (float8_e5m2), 24/292 "
                      f"(float8_e4m3fn), 296 (float4_e2m1) or 297 (float4_e1m2)")
    out = ANTI_DST.get(int(dst_type)) if isinstance(dst_type, (int, np.integer)) else None
    if out is None:
        out = str(getattr(dst_type, "name", dst_type)).replace("torch.", "")
        if out not in ("float32", "float16", "bfloat16"):
            raise invalid(f"dst_type={dst_type!r}: y must be float32, float16 or bfloat16 (torch codes 6, 5, 15)")
    if not 1 <= x.ndim <= 7 or not 2 <= mxscale.ndim <= 8:
        raise invalid(f"x must have 1-7 dimensions and mxscale 2-8 (got {x.ndim} and {mxscale.ndim})")
    axis = -1 if axis is None else int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise invalid(f"axis={axis} is outside x's dimensions ({x.ndim})")
    if axis % x.ndim != x.ndim - 1:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                         f"axis={axis}: AntiMxQuant's tiling supports only the last axis (-1 or {x.ndim - 1})")
    shape = list(x.shape)
    if src in FP4:
        if x.dtype != np.uint8:
            raise invalid(f"x has dtype {x.dtype}; FP4 codes (src_type {src_type}) arrive packed in uint8")
        shape[-1] *= 2
    elif x.dtype.name != src:
        raise invalid(f"x has dtype {x.dtype}; src_type {src_type} says {src}")
    want = shape[:-1] + [((shape[-1] + 31) // 32 + 1) // 2, 2]
    if list(mxscale.shape) != want or mxscale.dtype.itemsize != 1:
        raise invalid(f"mxscale has shape {tuple(mxscale.shape)} ({mxscale.dtype}); x of shape {tuple(x.shape)} "
                      f"needs uint8 / float8_e8m0 {tuple(want)}")
    return axis, out, src, tuple(shape)
