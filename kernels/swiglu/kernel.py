"""SwiGlu device code (910B): the per-core tile walk of hicann/ops-nn activation/swi_glu/op_kernel.

Side by side with op_kernel (docs/ops/swiglu.md §4):
* ``swi_glu.cpp``: tiling key 0 (float32) -> SwigluVector, 1 (half) / 27 (bf16) -> SwigluVectorBF16; bufferNum
  from ``isDoubleBuffer`` (timing only).
* ``glu_tiling_kernel.hpp`` SWIGLU_SINGLE_PROCESS: core ``block_idx`` takes tiles block_idx, block_idx + blockDim,
  ...; tile t is row tile t // colTileNum, column tile t % colTileNum; A at row * 2 * colLen + colTile * baseColLen,
  B colLen further on, out at row * colLen + colTile * baseColLen.
* ``swi_glu_single.hpp`` CopyIn / CopyOut: one DataCopy(Pad) of ``rows`` blocks of ``cols`` elements with the
  row strides of the interleaved halves; in UB each row starts at a 32-byte-aligned pitch (``padColLen``).
* ``swi_glu_bf16.hpp`` Compute (half / bf16): Cast(a) -> Muls(-1) -> Exp -> Adds(1) -> Div(a, .) -> Cast(b) ->
  Mul -> Cast(CAST_RINT) (``__CCE_AICORE__ == 220``).
* ``swi_glu_impl.hpp`` Compute (float32): Muls(-1) -> Exp -> Adds(1) -> Div(ones, .) -> Mul(., a) -> Mul(., b).

Two kernels compute this: ``swiglu_faithful_*`` stages every tile through the core's UB with the instructions of
``npu_emu.ascendc``; ``swiglu_fused_*`` reads GM directly. For half / bf16 the fused kernel takes the activated
half's factor A / (1 + Exp(-A)) from a 65,536-entry table that ``swish_table`` builds with the same instructions
(the factor depends on the 16 bits of A alone), then does the Mul and the final Cast per element: bit-identical to
the faithful kernel by construction, and tested to be (tests/kernels/swiglu/test_swiglu_kernel.py).
"""

import numpy as np
from numba import njit, prange

from npu_emu.ascendc import (
    CAST_NONE,
    CAST_RINT,
    DT_AUTO,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT16,
    Adds,
    Cast,
    Div,
    Duplicate,
    Exp,
    Mul,
    Muls,
)
from npu_emu.ascendc.transcendental import exp_f32
from npu_emu.ascendc.vector import div_f32
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32, f32_to_bf16_rint, f32_to_f16
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.launch import ub_view

_JIT = dict(cache=True, error_model="numpy")


# ------------------------------------------------------------------------------------------------------------------
# tile geometry (SwigluSingleTilingKernel::CaclOneTileParam)
# ------------------------------------------------------------------------------------------------------------------

@njit(inline="always", **_JIT)
def _tile(td, t, col_tiles, base_row_tiles, base_col_tiles, tail_row, tail_col):
    """-> (gm row offset, gm column offset, rows, cols) of tile t."""
    r = t // col_tiles
    c = t % col_tiles
    rows = td.baseRowLen if r < base_row_tiles else tail_row
    cols = td.baseColLen if c < base_col_tiles else tail_col
    return r * td.baseRowLen, c * td.baseColLen, rows, cols


@njit(inline="always", **_JIT)
def _geometry(td, itemsize):
    blk = max(1, 32 // itemsize)
    pad_col = td.baseColLen if td.is32BAligned == 1 else (td.baseColLen + blk - 1) // blk * blk
    base_row_tiles = td.rowLen // td.baseRowLen
    base_col_tiles = td.colLen // td.baseColLen
    tail_row = td.rowLen % td.baseRowLen
    tail_col = td.colLen % td.baseColLen
    row_tiles = base_row_tiles + (1 if tail_row > 0 else 0)
    col_tiles = base_col_tiles + (1 if tail_col > 0 else 0)
    return pad_col, base_row_tiles, base_col_tiles, tail_row, tail_col, row_tiles * col_tiles, col_tiles


@njit(inline="always", **_JIT)
def _copy_in(dst, gm, gm_off, rows, cols, gm_stride, pitch):
    """DataCopy(Pad) of ``rows`` blocks of ``cols`` elements, GM row stride ``gm_stride``, UB row pitch ``pitch``."""
    # slice assignments, although they compile numba's shape-error text (about 1 s cold): element loops here made
    # the faithful kernel 1.5x slower (bf16 [512, 4096], one thread: 11.8 against 7.9 ms)
    for i in range(rows):
        dst[i * pitch:i * pitch + cols] = gm[gm_off + i * gm_stride:gm_off + i * gm_stride + cols]


@njit(inline="always", **_JIT)
def _copy_out(gm, src, gm_off, rows, cols, gm_stride, pitch):
    for i in range(rows):
        gm[gm_off + i * gm_stride:gm_off + i * gm_stride + cols] = src[i * pitch:i * pitch + cols]


# ------------------------------------------------------------------------------------------------------------------
# faithful kernels: every tile through the UB
# ------------------------------------------------------------------------------------------------------------------

@njit(parallel=PARALLEL, **_JIT)
def swiglu_faithful_f32(block_dim, td, ub_size, exp_model, div_model, x_gm, y_gm):
    """Key 0: SwigluSingle<SwigluVector<float, float, bufferNum>>."""
    pad_col, brt, bct, tail_row, tail_col, total, col_tiles = _geometry(td, 4)
    tile_len = td.baseRowLen * pad_col
    bn = 2 if td.isDoubleBuffer == 1 else 1
    comb = 2 * td.colLen
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        tmp = ub_view(ub, 3 * bn * tile_len * 4, np.float32, tile_len)
        Duplicate(tmp, np.float32(1.0), tile_len)                        # InitUbBuffer
        k = 0
        for t in range(block_idx, total, block_dim):
            row, col, rows, cols = _tile(td, t, col_tiles, brt, bct, tail_row, tail_col)
            n = rows * (pad_col if td.is32BAligned == 1 else (cols + 7) // 8 * 8)
            pitch = n // rows
            slot = k % bn
            a = ub_view(ub, slot * tile_len * 4, np.float32, tile_len)
            b = ub_view(ub, (bn + slot) * tile_len * 4, np.float32, tile_len)
            c = ub_view(ub, (2 * bn + slot) * tile_len * 4, np.float32, tile_len)
            _copy_in(a, x_gm, row * comb + col, rows, cols, comb, pitch)                  # CopyIn A
            _copy_in(b, x_gm, row * comb + col + td.colLen, rows, cols, comb, pitch)     # CopyIn B
            Muls(c, a, np.float32(-1.0), n)                                  # Compute
            Exp(c, c, n, exp_model)
            Adds(c, c, np.float32(1.0), n)
            Div(c, tmp, c, n, DT_AUTO, div_model)
            Mul(c, c, a, n)
            Mul(c, c, b, n)
            _copy_out(y_gm, c, row * td.colLen + col, rows, cols, td.colLen, pitch)      # CopyOut
            k += 1


@njit(inline="always", **_JIT)
def _faithful_16(block_dim, td, ub_size, exp_model, div_model, x_gm, y_gm, dt):
    pad_col, brt, bct, tail_row, tail_col, total, col_tiles = _geometry(td, 2)
    tile_len = td.baseRowLen * pad_col
    bn = 2 if td.isDoubleBuffer == 1 else 1
    comb = 2 * td.colLen
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        in_tmp = ub_view(ub, 3 * bn * tile_len * 2, np.float32, tile_len)
        out_tmp = ub_view(ub, 3 * bn * tile_len * 2 + tile_len * 4, np.float32, tile_len)
        k = 0
        for t in range(block_idx, total, block_dim):
            row, col, rows, cols = _tile(td, t, col_tiles, brt, bct, tail_row, tail_col)
            n = rows * (pad_col if td.is32BAligned == 1 else (cols + 15) // 16 * 16)
            pitch = n // rows
            slot = k % bn
            a_ = ub_view(ub, slot * tile_len * 2, np.uint16, tile_len)
            b_ = ub_view(ub, (bn + slot) * tile_len * 2, np.uint16, tile_len)
            c_ = ub_view(ub, (2 * bn + slot) * tile_len * 2, np.uint16, tile_len)
            _copy_in(a_, x_gm, row * comb + col, rows, cols, comb, pitch)
            _copy_in(b_, x_gm, row * comb + col + td.colLen, rows, cols, comb, pitch)
            a = in_tmp
            c = out_tmp
            Cast(a, a_, CAST_NONE, n, DT_FLOAT, dt)
            Muls(c, a, np.float32(-1.0), n)
            Exp(c, c, n, exp_model)
            Adds(c, c, np.float32(1.0), n)
            Div(c, a, c, n, DT_AUTO, div_model)
            b = in_tmp                                   # bLocal reuses inputTempBuffer
            Cast(b, b_, CAST_NONE, n, DT_FLOAT, dt)
            Mul(c, c, b, n)
            Cast(c_, c, CAST_RINT, n, dt, DT_FLOAT)
            _copy_out(y_gm, c_, row * td.colLen + col, rows, cols, td.colLen, pitch)
            k += 1


@njit(parallel=PARALLEL, **_JIT)
def swiglu_faithful_bf16(block_dim, td, ub_size, exp_model, div_model, x_gm, y_gm):
    """Key 27: SwigluSingle<SwigluVectorBF16<bfloat16_t, float, bfloat16_t, bufferNum>>."""
    _faithful_16(block_dim, td, ub_size, exp_model, div_model, x_gm, y_gm, DT_BF16)


@njit(parallel=PARALLEL, **_JIT)
def swiglu_faithful_f16(block_dim, td, ub_size, exp_model, div_model, x_gm, y_gm):
    """Key 1: SwigluSingle<SwigluVectorBF16<half, float, half, bufferNum>>."""
    _faithful_16(block_dim, td, ub_size, exp_model, div_model, x_gm, y_gm, DT_FLOAT16)


# ------------------------------------------------------------------------------------------------------------------
# fused kernels: the same per-element steps, GM to GM
# ------------------------------------------------------------------------------------------------------------------

@njit(**_JIT)
def swish_table(table, dt, exp_model, div_model):
    """table[h] = A / (1 + Exp(-A)) for A the half / bf16 value of bit pattern h: Compute's first five steps
    (Cast, Muls, Exp, Adds, Div) run once over all 65,536 patterns."""
    a_ = np.arange(65536).astype(np.uint16)
    a = np.empty(65536, np.float32)
    if dt == DT_BF16:
        Cast(a, a_, CAST_NONE, 65536, DT_FLOAT, DT_BF16)
    else:
        Cast(a, a_, CAST_NONE, 65536, DT_FLOAT, DT_FLOAT16)
    Muls(table, a, np.float32(-1.0), 65536)
    Exp(table, table, 65536, exp_model)
    Adds(table, table, np.float32(1.0), 65536)
    Div(table, a, table, 65536, DT_AUTO, div_model)


@njit(**_JIT)
def _fused_row_bf16(table, a, b, y, tmp):
    """Two passes: the table gathers (a loop that does not vectorise: four 16-bit indices per 64-bit load, the host
    being little-endian as numba's targets are), then the Mul and the RINT cast (branch-free: it vectorises)."""
    n = y.size
    n4 = n - n % 4
    a64 = a[:n4].view(np.uint64)
    m = np.uint64(0xFFFF)
    for j in range(n4 // 4):
        w = a64[j]
        tmp[4 * j] = table[w & m]
        tmp[4 * j + 1] = table[(w >> np.uint64(16)) & m]
        tmp[4 * j + 2] = table[(w >> np.uint64(32)) & m]
        tmp[4 * j + 3] = table[w >> np.uint64(48)]
    for j in range(n4, n):
        tmp[j] = table[np.intp(a[j])]
    for j in range(n):
        y[j] = f32_to_bf16_rint(np.float32(tmp[j] * bf16_to_f32(b[j])))


@njit(**_JIT)
def _fused_row_f16(table, a, b, y, tmp):
    n = y.size
    for j in range(n):
        tmp[j] = table[np.intp(a[j])]
    for j in range(n):
        y[j] = f32_to_f16(np.float32(tmp[j] * f16_to_f32(b[j])), CAST_RINT, False)


@njit(**_JIT)
def _fused_row_f32(a, b, y, exp_model, div_model, tmp):
    one = np.float32(1.0)
    for j in range(y.size):
        c = exp_f32(np.float32(a[j] * np.float32(-1.0)), exp_model)
        c = div_f32(one, np.float32(c + one), div_model)
        y[j] = np.float32(np.float32(c * a[j]) * b[j])


# The fused kernels: every output element depends on its own A and B elements only, so instead of walking the
# tiles (rows of baseColLen-element pieces 2 * colLen apart: short strided streams, 2x slower on the host) each
# core takes a contiguous 1 / block_dim share of the rowLen x colLen outputs in row-major order. The tiles of all
# cores cover exactly these outputs (any tiling with base lengths >= 1: the tile grid is ceil(rowLen / baseRowLen)
# x ceil(colLen / baseColLen), dealt round-robin to the cores), so the bits are the faithful kernel's; the launch's
# access pattern still checks the tiling data against the GM tensors.

@njit(inline="always", **_JIT)
def _share(td, block_idx, block_dim):
    total = td.rowLen * td.colLen
    return total * block_idx // block_dim, total * (block_idx + 1) // block_dim


@njit(parallel=PARALLEL, **_JIT)
def swiglu_fused_bf16(block_dim, td, ub_size, table, x_gm, y_gm):
    """Key 27, fused: y = Cast_RINT(table[A] * Cast(B)) over this core's share of the outputs."""
    C = td.colLen
    for block_idx in prange(block_dim):
        e0, e1 = _share(td, block_idx, block_dim)
        tmp = np.empty(min(C, max(e1 - e0, 0)), np.float32)
        e = e0
        while e < e1:
            r = e // C
            c0 = e - r * C
            c1 = min(C, c0 + e1 - e)
            xa = r * 2 * C
            _fused_row_bf16(table, x_gm[xa + c0:xa + c1], x_gm[xa + C + c0:xa + C + c1],
                            y_gm[r * C + c0:r * C + c1],
                            tmp)
            e += c1 - c0


@njit(parallel=PARALLEL, **_JIT)
def swiglu_fused_f16(block_dim, td, ub_size, table, x_gm, y_gm):
    """Key 1, fused: y = Cast_RINT(table[A] * Cast(B)) over this core's share of the outputs."""
    C = td.colLen
    for block_idx in prange(block_dim):
        e0, e1 = _share(td, block_idx, block_dim)
        tmp = np.empty(min(C, max(e1 - e0, 0)), np.float32)
        e = e0
        while e < e1:
            r = e // C
            c0 = e - r * C
            c1 = min(C, c0 + e1 - e)
            xa = r * 2 * C
            _fused_row_f16(table, x_gm[xa + c0:xa + c1], x_gm[xa + C + c0:xa + C + c1], y_gm[r * C + c0:r * C + c1],
                           tmp)
            e += c1 - c0


@njit(parallel=PARALLEL, **_JIT)
def swiglu_fused_f32(block_dim, td, ub_size, exp_model, div_model, x_gm, y_gm):
    """Key 0, fused: the six float32 steps per element over this core's share of the outputs."""
    C = td.colLen
    for block_idx in prange(block_dim):
        e0, e1 = _share(td, block_idx, block_dim)
        tmp = np.empty(1, np.float32)
        e = e0
        while e < e1:
            r = e // C
            c0 = e - r * C
            c1 = min(C, c0 + e1 - e)
            xa = r * 2 * C
            _fused_row_f32(x_gm[xa + c0:xa + c1], x_gm[xa + C + c0:xa + C + c1], y_gm[r * C + c0:r * C + c1],
                           exp_model, div_model, tmp)
            e += c1 - c0
