"""Per-core kernels of AscendQuantV2 on the Atlas A2 / A3, transliterated onto the launch model and the instruction
layer (docs/ops/ascend_quant.md §4).

Source: hicann/ops-nn quant/ascend_quant_v2/op_kernel/ascend_quant_v2_kernel.h (AscendQuantV2Base: ParseCoreBlocks,
GetXInCopyParams, GetOutCopyParams, CastOut), ascend_quant_v2_fp16.h / _bf16.h / _fp32.h
(AscendQuantV2PerChannel*, AscendQuantV2PerTensor*: Process, CopyXAndCompute, CopyInScaleAndOffset, CopyInX,
Compute, CopyOutY). The half / bf16 kernels widen x, scale and offset to float32 (CAST_NONE, exact) into their
cast buffers; the float32 kernels compute in the input buffers. Halves and bf16 travel as uint16 bits.

Per element, in the order of Compute and CastOut:
    t = fp32(x * scale) [; t = fp32(t * scale) when sqrtMode] [; t = fp32(t + offset)]
    Cast float32 -> int32 (roundMode: CAST_RINT / FLOOR / CEIL / TRUNC), Cast int32 -> half (CAST_NONE),
    Cast half -> int8 (the same roundMode; CAST_RINT for "round" on every SoC but __DAV_M200__)

These are the faithful kernels (``faithful=True``). The fused kernels at the end of the module, the default, compute
the same bits GM to GM without the tile walk.
"""

import numpy as np
from numba import njit, prange

from npu_emu.ascendc.cast import Cast
from npu_emu.ascendc.constants import (
    CAST_CEIL,
    CAST_FLOOR,
    CAST_NONE,
    CAST_RINT,
    CAST_TRUNC,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT16,
    DT_INT8,
    DT_INT32,
)
from npu_emu.ascendc.datacopy import DataCopyPad
from npu_emu.ascendc.vector import Add, Adds, Mul, Muls
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.launch import ub_view
from npu_emu.device.specialize import literal_args
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32, round_to_integral

_KJ = dict(parallel=PARALLEL, cache=True, error_model="numpy")
_INL = dict(inline="always", cache=True, error_model="numpy")
# One core's Process() is a serial function the prange calls, not inlined into the prange body: numba's parfor
# passes are super-linear in the size of an inlined loop body (this kernel: 36 CPU-s of compile inlined). XT is a
# literal, so each input dtype compiles its own Cast branches only.
_CORE = dict(cache=True, error_model="numpy")
# the copy and CastOut helpers have one signature for every dtype: compiled once, shared by the six kernels
_HELPER = dict(inline="never", cache=True, error_model="numpy")

BLOCK = 32
FUSED_ROW = 4096                # fused kernels: the longest row piece of the two passes (16 KiB of float32)
DOUBLE_CUT = 11


@njit(**_INL)
def _align32(n):
    return (n + BLOCK - 1) // BLOCK * BLOCK


@njit(**_INL)
def _cast_mode(round_mode):
    """RoundMode::MODE_* -> the Cast mode CastOut uses for it."""
    if round_mode == 1:
        return CAST_FLOOR
    if round_mode == 2:
        return CAST_CEIL
    if round_mode == 3:
        return CAST_TRUNC
    return CAST_RINT


@njit(**_INL)
def _core_blocks(td, block_idx):
    """ParseCoreBlocks -> (blockN, blockLen)."""
    block_n = 1
    block_len = 1
    if td.blockUnion > 1:
        if block_idx >= td.numCore:
            block_n = 0
        else:
            y_core_num = td.numCore // td.dim0
            r = block_idx % td.blockUnion
            if r >= y_core_num:
                block_n = 0
            elif r == y_core_num - 1:
                block_len = td.blockTailFactor
            else:
                block_len = td.blockFactor
    elif td.blockAxis == 0:
        block_n = td.blockTailFactor if block_idx == td.numCore - 1 else td.blockFactor
        block_len = td.dim1
    elif td.blockAxis == 1:
        block_n = td.dim0
        block_len = td.blockTailFactor if block_idx == td.numCore - 1 else td.blockFactor
    return block_n, block_len


@njit(**_INL)
def _gm_offsets(td, block_idx):
    """Process(): the core's first x element and first scale element."""
    if td.blockAxis == 0:
        return block_idx * td.blockFactor * td.dim1, 0
    if td.blockAxis == 1:
        return block_idx * td.blockFactor, block_idx * td.blockFactor
    r = block_idx % td.blockUnion
    return block_idx // td.blockUnion * td.dim1 + r * td.blockFactor, r * td.blockFactor


@njit(**_HELPER)
def _copy_in_x(x_ub, x_gm, td, x_n, x_len, off, es):
    """CopyInX: GetXInCopyParams + DataCopyPad (row stride dim1 in GM, baseLen in UB)."""
    dst_stride = (td.baseLen - x_len) * es // BLOCK if td.baseLen > x_len else 0
    src_stride = (td.dim1 - x_len) * es if td.dim1 > x_len else 0
    DataCopyPad(x_ub, x_gm[off:], x_n, x_len * es, src_stride, dst_stride, False, 0, 0, 0)


@njit(**_HELPER)
def _copy_out_y(y_gm, y_ub, td, y_n, y_len, off):
    """CopyOutY: GetOutCopyParams + DataCopyPad UB -> GM."""
    dst_stride = td.dim1 - y_len if td.dim1 > y_len else 0
    src_stride = (td.baseLen - y_len) // BLOCK if td.baseLen > y_len else 0
    DataCopyPad(y_gm[off:], y_ub, y_n, y_len, src_stride, dst_stride)


@njit(**_HELPER)
def _cast_out(y_ub, f_ub, n, rmode):
    """CastOut: float32 -> int32 (rmode), int32 -> half (CAST_NONE), half -> int8 (rmode), in place in f_ub."""
    i32 = f_ub.view(np.int32)
    Cast(i32, f_ub, rmode, n, DT_INT32, DT_FLOAT)
    h16 = f_ub.view(np.uint16)
    Cast(h16, i32, CAST_NONE, n, DT_FLOAT16, DT_INT32)
    Cast(y_ub, h16, rmode, n, DT_INT8, DT_FLOAT16)


# ---------------------------------------------------------------------------------------------------------------
# per channel (tiling key 0): scale / offset of length dim1
# ---------------------------------------------------------------------------------------------------------------

@literal_args(**_CORE)
def _channel_core(block_idx, td, ub_size, x_gm, s_gm, o_gm, y_gm, XT):
    """One core of AscendQuantV2PerChannel*: Init + Process on the core's block."""
    es = np.int64(4 if XT == DT_FLOAT else 2)     # not a literal: one _copy_in_x signature for both kernels
    wide = XT != DT_FLOAT                # half / bf16: float32 cast buffers beside the input buffers
    base = td.baseLen
    rmode = _cast_mode(td.roundMode)
    ub = np.empty(ub_size, np.uint8)
    block_n, block_len = _core_blocks(td, block_idx)
    if block_idx >= td.numCore or block_n == 0:
        return
    x_off, s_off = _gm_offsets(td, block_idx)
    # UB: inQueueX_ | inQueueScale_ | inQueueOffset_ | castBufX_ | castBufScale_ | castBufOffset_ | outQueueY_
    p_x = 0
    p_s = p_x + _align32(td.baseN * base * es)
    p_o = p_s + _align32(base * es)
    p_cx = p_o + (_align32(base * es) if td.hasOffset != 0 else 0)
    p_cs = p_cx + (_align32(base * 4) if wide else 0)
    p_co = p_cs + (_align32(base * 4) if wide else 0)
    p_y = p_co + (_align32(base * 4) if (wide and td.hasOffset != 0) else 0)
    x_ub = ub_view(ub, p_x, x_gm.dtype, td.baseN * base)
    s_ub = ub_view(ub, p_s, s_gm.dtype, base)
    o_ub = ub_view(ub, p_o, o_gm.dtype, base)
    y_ub = ub_view(ub, p_y, np.int8, td.baseN * base)
    if wide:
        cs = ub_view(ub, p_cs, np.float32, base)
        co = ub_view(ub, p_co, np.float32, base)
    else:
        cs = s_ub.view(np.float32)
        co = o_ub.view(np.float32)
    len_loops = block_len // base
    len_tail = block_len % base
    for i in range(len_loops + (1 if len_tail != 0 else 0)):
        count = base if i < len_loops else len_tail
        col = i * base
        # CopyInScaleAndOffset
        DataCopyPad(s_ub, s_gm[s_off + col:], 1, count * es, 0, 0, False, 0, 0, 0)
        if wide:
            Cast(cs, s_ub, CAST_NONE, count, DT_FLOAT, XT)
        if td.hasOffset != 0:
            DataCopyPad(o_ub, o_gm[s_off + col:], 1, count * es, 0, 0, False, 0, 0, 0)
            if wide:
                Cast(co, o_ub, CAST_NONE, count, DT_FLOAT, XT)
        # CopyXAndCompute
        n_loops = block_n // td.baseN
        n_tail = block_n % td.baseN
        for nidx in range(n_loops + (1 if n_tail != 0 else 0)):
            rows = td.baseN if nidx < n_loops else n_tail
            off = x_off + col + nidx * td.baseN * td.dim1
            _copy_in_x(x_ub, x_gm, td, rows, count, off, es)
            for r in range(rows):
                if wide:
                    cx = ub_view(ub, p_cx, np.float32, base)
                    Cast(cx, x_ub[r * base:], CAST_NONE, count, DT_FLOAT, XT)
                else:
                    cx = x_ub[r * base:(r + 1) * base].view(np.float32)
                Mul(cx, cx, cs, count)
                if td.sqrtMode != 0:
                    Mul(cx, cx, cs, count)
                if td.hasOffset != 0:
                    Add(cx, cx, co, count)
                _cast_out(y_ub[r * base:], cx, count, rmode)
            _copy_out_y(y_gm, y_ub, td, rows, count, off)


@njit(**_KJ)
def per_channel_f16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """AscendQuantV2PerChannelFP16<half>."""
    for block_idx in prange(block_dim):
        _channel_core(np.int64(block_idx), td, ub_size, x_gm, s_gm, o_gm, y_gm, DT_FLOAT16)


@njit(**_KJ)
def per_channel_bf16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """AscendQuantV2PerChannel (bfloat16_t)."""
    for block_idx in prange(block_dim):
        _channel_core(np.int64(block_idx), td, ub_size, x_gm, s_gm, o_gm, y_gm, DT_BF16)


@njit(**_KJ)
def per_channel_f32(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """AscendQuantV2PerChannel (float)."""
    for block_idx in prange(block_dim):
        _channel_core(np.int64(block_idx), td, ub_size, x_gm, s_gm, o_gm, y_gm, DT_FLOAT)


# ---------------------------------------------------------------------------------------------------------------
# per tensor (tiling key 1): one scale / offset, read once per column chunk into a scalar
# ---------------------------------------------------------------------------------------------------------------

@literal_args(**_CORE)
def _tensor_core(block_idx, td, ub_size, x_gm, s_gm, o_gm, y_gm, XT):
    """One core of AscendQuantV2PerTensor*: Init + Process on the core's block."""
    es = np.int64(4 if XT == DT_FLOAT else 2)     # not a literal: one _copy_in_x signature for both kernels
    wide = XT != DT_FLOAT
    base = td.baseLen
    rmode = _cast_mode(td.roundMode)
    ub = np.empty(ub_size, np.uint8)
    block_n, block_len = _core_blocks(td, block_idx)
    if block_idx >= td.numCore or block_n == 0:
        return
    x_off = block_idx * td.blockFactor * td.dim1 if td.blockAxis == 0 else block_idx * td.blockFactor
    # UB: inQueueX_ | inQueueScale_ (one block) | inQueueOffset_ (one block) | castBufX_ | outQueueY_
    p_x = 0
    p_s = p_x + _align32(td.baseN * base * es)
    p_o = p_s + BLOCK
    p_cx = p_o + (BLOCK if td.hasOffset != 0 else 0)
    p_y = p_cx + (_align32(base * 4) if wide else 0)
    x_ub = ub_view(ub, p_x, x_gm.dtype, td.baseN * base)
    s_ub = ub_view(ub, p_s, s_gm.dtype, BLOCK // es)
    o_ub = ub_view(ub, p_o, o_gm.dtype, BLOCK // es)
    y_ub = ub_view(ub, p_y, np.int8, td.baseN * base)
    scalar = np.empty(2, np.float32)          # the scalar unit's float registers scale_, offset_
    len_loops = block_len // base
    len_tail = block_len % base
    for i in range(len_loops + (1 if len_tail != 0 else 0)):
        count = base if i < len_loops else len_tail
        col = i * base
        # CopyInScaleAndOffset: one element each, to a float on the scalar unit (exact widening)
        DataCopyPad(s_ub, s_gm, 1, es, 0, 0, False, 0, 0, 0)
        if wide:
            Cast(scalar[0:1], s_ub, CAST_NONE, 1, DT_FLOAT, XT)
        else:
            scalar[0] = s_ub.view(np.float32)[0]
        if td.hasOffset != 0:
            DataCopyPad(o_ub, o_gm, 1, es, 0, 0, False, 0, 0, 0)
            if wide:
                Cast(scalar[1:2], o_ub, CAST_NONE, 1, DT_FLOAT, XT)
            else:
                scalar[1] = o_ub.view(np.float32)[0]
        scale = scalar[0]
        offset = scalar[1]
        n_loops = block_n // td.baseN
        n_tail = block_n % td.baseN
        for nidx in range(n_loops + (1 if n_tail != 0 else 0)):
            rows = td.baseN if nidx < n_loops else n_tail
            off = x_off + col + nidx * td.baseN * td.dim1
            _copy_in_x(x_ub, x_gm, td, rows, count, off, es)
            for r in range(rows):
                if wide:
                    cx = ub_view(ub, p_cx, np.float32, base)
                    Cast(cx, x_ub[r * base:], CAST_NONE, count, DT_FLOAT, XT)
                else:
                    cx = x_ub[r * base:(r + 1) * base].view(np.float32)
                Muls(cx, cx, scale, count)
                if td.sqrtMode != 0:
                    Muls(cx, cx, scale, count)
                if td.hasOffset != 0:
                    Adds(cx, cx, offset, count)
                _cast_out(y_ub[r * base:], cx, count, rmode)
            _copy_out_y(y_gm, y_ub, td, rows, count, off)


@njit(**_KJ)
def per_tensor_f16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """AscendQuantV2PerTensorFP16<half>."""
    for block_idx in prange(block_dim):
        _tensor_core(np.int64(block_idx), td, ub_size, x_gm, s_gm, o_gm, y_gm, DT_FLOAT16)


@njit(**_KJ)
def per_tensor_bf16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """AscendQuantV2PerTensor (bfloat16_t)."""
    for block_idx in prange(block_dim):
        _tensor_core(np.int64(block_idx), td, ub_size, x_gm, s_gm, o_gm, y_gm, DT_BF16)


@njit(**_KJ)
def per_tensor_f32(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """AscendQuantV2PerTensor (float)."""
    for block_idx in prange(block_dim):
        _tensor_core(np.int64(block_idx), td, ub_size, x_gm, s_gm, o_gm, y_gm, DT_FLOAT)


# ---------------------------------------------------------------------------------------------------------------
# fused kernels (faithful=False, the default): the same per-element steps, GM to GM
# ---------------------------------------------------------------------------------------------------------------
# Every y element depends on its own x element and on its column's scale / offset only, and the blocks of the host
# tiling cover every element once, so instead of walking the tiles each core takes a contiguous 1 / block_dim share
# of the elements in row-major order (tests/kernels/ascend_quant/test_fused.py proves the bits equal on every tiling
# branch). Per element the steps are Compute's, in its order, each one float32 rounding; two identities keep the
# loop free of switches: without sqrtMode the second Mul is by 1.0, without an offset the Add is of -0.0
# (t * 1 and t + -0.0 are t for every float32 t, -0.0 and NaN included). CastOut's three casts are one
# clamp-and-round: float32 -> int32 saturates, int32 -> half (CAST_NONE: RINT) is monotone and exact up to 2048 in
# magnitude, and an integral half -> int8 saturates, so the code is round(clamp(t, -128, 127)) in the mode, and
# NaN -> 0 (Cast: "输入为nan时，返回0"); clamping to integral bounds commutes with rounding to an integer.
# Two passes per row piece: _fused_t (x's dtype a constant of the copy) and _codes (one copy for all six kernels,
# one loop per mode so that each loop vectorises).

@literal_args(**_CORE)
def _fused_t(xr, t, s, s2, o, XT):
    """t = clamp(((x * s) * s2) + o, -128, 127), NaN kept."""
    lo = np.float32(-128.0)
    hi = np.float32(127.0)
    for c in range(t.size):
        if XT == DT_FLOAT16:
            xf = f16_to_f32(xr[c])
        elif XT == DT_BF16:
            xf = bf16_to_f32(xr[c])
        else:
            xf = np.float32(xr[c])
        v = np.float32(np.float32(np.float32(xf * s[c]) * s2[c]) + o[c])
        t[c] = min(max(v, lo), hi) if v == v else v


@njit(**_HELPER)
def _codes(t, yr, rm):
    """yr = round(t) in the mode rm, NaN -> 0 (t already clamped to the int8 range)."""
    z = np.int8(0)
    if rm == CAST_FLOOR:
        for c in range(yr.size):
            yr[c] = np.int8(round_to_integral(np.float64(t[c]), CAST_FLOOR)) if t[c] == t[c] else z
    elif rm == CAST_CEIL:
        for c in range(yr.size):
            yr[c] = np.int8(round_to_integral(np.float64(t[c]), CAST_CEIL)) if t[c] == t[c] else z
    elif rm == CAST_TRUNC:
        for c in range(yr.size):
            yr[c] = np.int8(round_to_integral(np.float64(t[c]), CAST_TRUNC)) if t[c] == t[c] else z
    else:
        for c in range(yr.size):
            yr[c] = np.int8(round_to_integral(np.float64(t[c]), CAST_RINT)) if t[c] == t[c] else z


@literal_args(**_CORE)
def _fused_scales(td, s_gm, o_gm, XT, PER_TENSOR):
    """(s, s2, o) as float32 rows, widened once per launch and read by every core: per channel dim1 long, per
    tensor the one scale and offset repeated over min(FUSED_ROW, elements) (so both layouts run the same row loop)."""
    d1 = min(FUSED_ROW, td.dim0 * td.dim1) if PER_TENSOR else td.dim1
    s = np.empty(d1, np.float32)
    s2 = np.empty(d1, np.float32)
    o = np.empty(d1, np.float32)
    for c in range(d1):
        j = 0 if PER_TENSOR else c
        if XT == DT_FLOAT16:
            s[c] = f16_to_f32(s_gm[j])
            o[c] = f16_to_f32(o_gm[j])
        elif XT == DT_BF16:
            s[c] = bf16_to_f32(s_gm[j])
            o[c] = bf16_to_f32(o_gm[j])
        else:
            s[c] = s_gm[j]
            o[c] = o_gm[j]
        s2[c] = s[c] if td.sqrtMode != 0 else np.float32(1.0)
        o[c] = o[c] if td.hasOffset != 0 else np.float32(-0.0)
    return s, s2, o


@literal_args(**_CORE)
def _fused_core(block_idx, block_dim, td, x_gm, s, s2, o, y_gm, XT, PER_TENSOR):
    """One core's share of the elements, in row pieces of at most FUSED_ROW (per tensor: of any length)."""
    total = td.dim0 * td.dim1
    e0 = total * block_idx // block_dim
    e1 = total * (block_idx + 1) // block_dim
    if e1 <= e0:
        return
    rm = _cast_mode(td.roundMode)
    d1 = s.size
    t = np.empty(min(d1, FUSED_ROW), np.float32)
    e = e0
    while e < e1:
        c0 = 0 if PER_TENSOR else e % d1
        k = min(d1 - c0, e1 - e, FUSED_ROW)
        _fused_t(x_gm[e:e + k], t[:k], s[c0:c0 + k], s2[c0:c0 + k], o[c0:c0 + k], XT)
        _codes(t[:k], y_gm[e:e + k], rm)
        e += k


@njit(**_KJ)
def fused_channel_f16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """Per channel, half x, fused."""
    s, s2, o = _fused_scales(td, s_gm, o_gm, DT_FLOAT16, False)
    for block_idx in prange(block_dim):
        _fused_core(np.int64(block_idx), block_dim, td, x_gm, s, s2, o, y_gm, DT_FLOAT16, False)


@njit(**_KJ)
def fused_channel_bf16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """Per channel, bfloat16 x, fused."""
    s, s2, o = _fused_scales(td, s_gm, o_gm, DT_BF16, False)
    for block_idx in prange(block_dim):
        _fused_core(np.int64(block_idx), block_dim, td, x_gm, s, s2, o, y_gm, DT_BF16, False)


@njit(**_KJ)
def fused_channel_f32(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """Per channel, float32 x, fused."""
    s, s2, o = _fused_scales(td, s_gm, o_gm, DT_FLOAT, False)
    for block_idx in prange(block_dim):
        _fused_core(np.int64(block_idx), block_dim, td, x_gm, s, s2, o, y_gm, DT_FLOAT, False)


@njit(**_KJ)
def fused_tensor_f16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """Per tensor, half x, fused."""
    s, s2, o = _fused_scales(td, s_gm, o_gm, DT_FLOAT16, True)
    for block_idx in prange(block_dim):
        _fused_core(np.int64(block_idx), block_dim, td, x_gm, s, s2, o, y_gm, DT_FLOAT16, True)


@njit(**_KJ)
def fused_tensor_bf16(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """Per tensor, bfloat16 x, fused."""
    s, s2, o = _fused_scales(td, s_gm, o_gm, DT_BF16, True)
    for block_idx in prange(block_dim):
        _fused_core(np.int64(block_idx), block_dim, td, x_gm, s, s2, o, y_gm, DT_BF16, True)


@njit(**_KJ)
def fused_tensor_f32(block_dim, td, ub_size, x_gm, s_gm, o_gm, y_gm):
    """Per tensor, float32 x, fused."""
    s, s2, o = _fused_scales(td, s_gm, o_gm, DT_FLOAT, True)
    for block_idx in prange(block_dim):
        _fused_core(np.int64(block_idx), block_dim, td, x_gm, s, s2, o, y_gm, DT_FLOAT, True)


FUSED = {
    ("channel", "float16"): fused_channel_f16, ("channel", "bfloat16"): fused_channel_bf16,
    ("channel", "float32"): fused_channel_f32, ("tensor", "float16"): fused_tensor_f16,
    ("tensor", "bfloat16"): fused_tensor_bf16, ("tensor", "float32"): fused_tensor_f32,
}

KERNELS = {
    ("channel", "float16"): per_channel_f16, ("channel", "bfloat16"): per_channel_bf16,
    ("channel", "float32"): per_channel_f32, ("tensor", "float16"): per_tensor_f16,
    ("tensor", "bfloat16"): per_tensor_bf16, ("tensor", "float32"): per_tensor_f32,
}
