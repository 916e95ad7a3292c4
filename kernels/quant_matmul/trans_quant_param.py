"""The packed UINT64 quantisation parameter: npu_trans_quant_param / aclnnTransQuantParamV2 / V3
(docs/ops/quant_matmul.md §3.3).

Word layout: bits 0..31 the fp32 scale reduced to FP19 (t19 truncation for round_mode 0, r19 RNE for round_mode 1,
docs/codecs.md §3.5), bits 37..45 the int9 offset (CAST_RINT then clamped to [-256, 255]), bit 46 always 1.
Device kernel: ``hicann/ops-nn: quant/trans_quant_param_v2/op_kernel/trans_quant_param_v2.h``
(``CalQuantPreScaleValue``, ``SetOffsetValue``); shapes: ``quant/trans_quant_param_v2/docs/aclnnTransQuantParamV2.md``
(约束说明) and ``Ascend/op-plugin: op_plugin/ops/opapi/TransQuantParamKernelNpuOpApi.cpp``.
"""

import numpy as np
from numba import njit

from npu_emu.dtypes import scalar
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from npu_emu.device.read_only import read_only as ro

QUANT_FLAG = np.uint64(1 << 46)
OFFSET_SHIFT = 37
INT9_MIN, INT9_MAX = -256, 255


@njit(cache=True, error_model="numpy")
def _pack(scale_bits, offsets, n, round_mode, out):
    """out[i] = FP19(scale[i or 0]) | offset9(offset[i or 0]) << 37 | 1 << 46 (one core; the device uses one)."""
    ns = scale_bits.size
    no = offsets.size
    for i in range(n):
        u = scale_bits[i if ns > 1 else 0]
        s = scalar.r19(u) if round_mode == 1 else scalar.t19(u)
        word = np.uint64(s) | np.uint64(1 << 46)
        if no > 0:
            o = scalar.round_to_integral(np.float64(offsets[i if no > 1 else 0]), scalar.CAST_RINT)
            o = min(max(o, -256.0), 255.0)
            word |= (np.uint64(np.int64(o) & 0x1FF)) << np.uint64(37)
        out[i] = word


def _as_f32(a, name):
    if a.dtype != np.float32:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name} dtype must be FLOAT (float32), got {a.dtype}; "
                                                  f"cast it with .astype(np.float32)")
    return np.ascontiguousarray(a)


def check_shapes(scale, offset):
    """The shape rules of aclnnTransQuantParamV2/V3 (约束说明). Returns the output shape."""
    if scale.size == 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "scale is an empty tensor; aclnnTransQuantParam does not accept "
                                                  "empty tensors")
    if scale.ndim not in (1, 2):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"scale must be 1-D (t,) or 2-D (1, n)/(g, 1)/(g, n), got shape "
                                                  f"{scale.shape}")
    if offset is None:
        return scale.shape
    if offset.size == 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "offset is an empty tensor; pass None or a non-empty offset")
    if not (offset.ndim == 1 or (offset.ndim == 2 and offset.shape[0] == 1)):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"offset must be (t,) or (1, n), got shape {offset.shape}")
    ns, no = scale.size, offset.size
    if ns != 1 and no != 1 and ns != no:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"scale has {ns} elements and offset {no}; they must be equal or "
                                                  f"one of them must be 1")
    if scale.ndim == 1:
        return (max(ns, no),)
    if no > ns:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"a 2-D scale {scale.shape} fixes the output shape; offset has "
                                                  f"{no} elements, more than the scale")
    return scale.shape


def trans_quant_param(scale, offset=None, round_mode=0):
    """numpy float32 scale (and offset) -> uint64 packed words (docs/ops/quant_matmul.md §3.3). Inputs already
    normalised."""
    if scale is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, "scale is None; pass a float32 array")
    if round_mode not in (0, 1):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"round_mode must be 0 or 1. but now is {round_mode}")
    scale = _as_f32(np.asarray(scale), "scale")
    offset = None if offset is None else _as_f32(np.asarray(offset), "offset")
    shape = check_shapes(scale, offset)
    out = np.empty(int(np.prod(shape)), np.uint64)
    offs = np.empty(0, np.float32) if offset is None else np.ascontiguousarray(offset).reshape(-1)
    _pack(ro(np.ascontiguousarray(scale).reshape(-1).view(np.uint32)), ro(offs), out.size, int(round_mode), out)
    return out.reshape(shape)


def deq_scale(words):
    """uint64/int64 words -> the float32 scale the Fixpipe reads (bits 0..31, low 13 bits ignored)."""
    u = np.ascontiguousarray(words).view(np.uint64) & np.uint64(0xFFFFFFFF)
    return _t19_array(u.astype(np.uint32))


def deq_offset(words):
    """uint64/int64 words -> the int9 offset of bits 37..45, sign-extended (int32)."""
    raw = (np.ascontiguousarray(words).view(np.uint64) >> np.uint64(OFFSET_SHIFT)) & np.uint64(0x1FF)
    raw = raw.astype(np.int32)
    return np.where(raw >= 256, raw - 512, raw).astype(np.int32)


@njit(cache=True, error_model="numpy")
def _t19_loop(u, out):
    for i in range(u.size):
        out[i] = scalar.t19(u[i])


def _t19_array(u32):
    """t19 of every element, returned as float32 values."""
    flat = np.ascontiguousarray(u32, dtype=np.uint32).reshape(-1)
    out = np.empty(flat.size, np.uint32)
    _t19_loop(ro(flat), out)
    return out.view(np.float32).reshape(np.shape(u32))


def t19_f32(values):
    """float32 array -> float32 array truncated to FP19 (the cube path's own scale truncation)."""
    return _t19_array(np.ascontiguousarray(values, dtype=np.float32).view(np.uint32))
