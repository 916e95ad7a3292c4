"""Per-core kernels of SignBitsUnpack / SignBitsPack, transliterated from Ascend C (docs/ops/sign_bits.md §2.6, §2.9,
§3.5, §3.9) onto the launch model and the instruction layer.

910B: hicann/ops-math experimental/math/sign_bits_unpack/op_kernel/sign_bits_unpack.h (KernelSignBitsUnpack<T>)
and experimental/math/sign_bits_pack/op_kernel/sign_bits_pack.h (KernelSignBitsPack<T>).
950: math/sign_bits_unpack/op_kernel/arch35/sign_bits_unpack.h, math/sign_bits_pack/op_kernel/arch35/.

Device code only, side by side with op_kernel; the host side (per-core split, access patterns, tiling-data
checks, the launchers) is launch.py.

GM tensors are the caller's exact-size arrays. The device reads and writes past their logical ends (§2.7, §3.7);
here DataCopy cuts at the end of the GM view, and the access patterns of launch.py report those device accesses as
``gm_overrun`` records instead. Halves travel as uint16 bits (numba has no float16).
"""

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from npu_emu.ascendc.cast import Cast
from npu_emu.ascendc.cmpsel import Compare, CompareScalar, Select
from npu_emu.ascendc.constants import (
    CAST_NONE,
    DT_AUTO,
    DT_FLOAT,
    DT_FLOAT16,
    GE,
    LT,
    NE,
    VSEL_TENSOR_SCALAR_MODE,
    VSEL_TENSOR_TENSOR_MODE,
)
from npu_emu.ascendc.datacopy import DataCopy, DataCopyPad
from npu_emu.ascendc.vector import Duplicate, Or
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.launch import ub_view
from npu_emu.device.specialize import literal_args

_KJ = dict(parallel=PARALLEL, cache=True, error_model="numpy")

F32_P1 = np.float32(1.0)
F32_M1 = np.float32(-1.0)
F16_P1 = np.uint16(0x3C00)
F16_M1 = np.uint16(0xBC00)


@njit(inline="always", cache=True)
def _core_range(td, block_idx):
    """Init(): the first tailBlockNum cores are big (one 64-byte block / one 512-byte unit more)."""
    if block_idx < td.tailBlockNum:
        return block_idx * td.bigCoreDataNum, td.finalBigTileNum, td.bigTailDataNum
    start = block_idx * td.bigCoreDataNum - (td.bigCoreDataNum - td.smallCoreDataNum) * (block_idx - td.tailBlockNum)
    return start, td.finalSmallTileNum, td.smallTailDataNum


# ---------------------------------------------------------------------------------------------------------------
# SignBitsUnpack, 910B
# ---------------------------------------------------------------------------------------------------------------

@njit(**_KJ)
def sign_bits_unpack_f32(block_dim, td, ub_size, x_gm, y_gm):
    """KernelSignBitsUnpack<float>: per tile DataCopy in -> Duplicate(+1) -> Select(mask, out, -1) -> DataCopy out."""
    buffer_num = 2 if td.bufferOpen else 1
    tile = td.tileDataNum
    in_bytes = buffer_num * tile
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        in_start, tile_num, tail = _core_range(td, block_idx)
        for i in range(tile_num):
            in_len = tile if i < tile_num - 1 else tail
            slot = i % buffer_num
            in_ub = ub_view(ub, slot * tile, np.uint8, in_len)
            out_ub = ub_view(ub, in_bytes + slot * 8 * tile * 4, np.float32, 8 * in_len)
            off = in_start + i * tile
            DataCopy(in_ub, x_gm[min(off, x_gm.size):], in_len)                         # CopyIn
            Duplicate(out_ub, F32_P1, 8 * in_len)                                       # Compute
            Select(out_ub, in_ub, out_ub, F32_M1, VSEL_TENSOR_SCALAR_MODE, 8 * in_len)
            DataCopy(y_gm[min(8 * off, y_gm.size):], out_ub, 8 * in_len)                # CopyOut


@njit(**_KJ)
def sign_bits_unpack_f16(block_dim, td, ub_size, x_gm, y_gm):
    """KernelSignBitsUnpack<half>: Duplicate(+1), then a Select with +1 (a no-op the source comments as data
    alignment), then the Select with -1."""
    buffer_num = 2 if td.bufferOpen else 1
    tile = td.tileDataNum
    in_bytes = buffer_num * tile
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        in_start, tile_num, tail = _core_range(td, block_idx)
        for i in range(tile_num):
            in_len = tile if i < tile_num - 1 else tail
            slot = i % buffer_num
            in_ub = ub_view(ub, slot * tile, np.uint8, in_len)
            out_ub = ub_view(ub, in_bytes + slot * 8 * tile * 2, np.uint16, 8 * in_len)
            off = in_start + i * tile
            DataCopy(in_ub, x_gm[min(off, x_gm.size):], in_len)
            Duplicate(out_ub, F16_P1, 8 * in_len)
            Select(out_ub, in_ub, out_ub, F16_P1, VSEL_TENSOR_SCALAR_MODE, 8 * in_len)
            Select(out_ub, in_ub, out_ub, F16_M1, VSEL_TENSOR_SCALAR_MODE, 8 * in_len)
            DataCopy(y_gm[min(8 * off, y_gm.size):], out_ub, 8 * in_len)


@njit(**_KJ)
def sign_bits_unpack_fused(block_dim, td, ub_size, x_gm, y_gm, p1, m1):
    """The 910B unpack kernels with the UB staging folded away: the same cores and tiles, each output written once
    straight from its byte (the faithful form writes every output three times: Duplicate, Select, DataCopy).
    Covers exactly what the faithful CopyIn copies - whole 32-byte units, cut at the end of x - so the two are
    bit-identical on every host tiling branch (tests/kernels/sign_bits/test_fused.py) and on every user tiling
    that passes validation (unpack_tiling_problems refuses the tile lengths where the faithful kernel would read
    stale UB: tests/kernels/sign_bits/test_tiling_checks.py)."""
    tile = td.tileDataNum
    for block_idx in prange(block_dim):
        in_start, tile_num, tail = _core_range(td, block_idx)
        for i in range(tile_num):
            in_len = tile if i < tile_num - 1 else tail
            off = in_start + i * tile
            n = min(in_len - in_len % 32, x_gm.size - off, (y_gm.size - 8 * off) // 8)
            if n <= 0:
                continue
            xv = x_gm[off:off + n]
            yv = y_gm[8 * off:8 * (off + n)]
            for j in range(n):
                b = xv[j]
                for k in range(8):
                    yv[8 * j + k] = p1 if (b >> k) & 1 else m1


# ---------------------------------------------------------------------------------------------------------------
# SignBitsPack, 910B
# ---------------------------------------------------------------------------------------------------------------

# The per-core functions below are serial functions the prange calls (numba's parfor passes are super-linear in the
# size of an inlined body). Compute is chosen from the input's element type while typing (half travels as uint16
# bits): a branch on a format tag inside an inlined helper is not pruned, and every kernel compiled both formats'
# Compare loops (cold SignBitsPack float32: 12.3 -> 7.2 CPU-s; prefer_literal keeps the compare mode a literal, which
# the Compare loop needs to vectorise: 10x slower without).
def _pack_compute(out_ub, nan_ub, in_ub, count, cmp_mode, nan_bit, ftz):
    """CompareScalar(out, in, 0, mode, count). The nan_bit=1 switch models a compare that reports NaN as true:
    an isnan mask (Compare(x, x, NE)) ORed into the result. (njit only)"""
    raise NotImplementedError("_pack_compute is only callable from njit code")


def _pack_compute_f16(out_ub, nan_ub, in_ub, count, cmp_mode, nan_bit, ftz):
    CompareScalar(out_ub, in_ub, np.uint16(0), cmp_mode, count, DT_FLOAT16, ftz)
    if nan_bit:
        Compare(nan_ub, in_ub, in_ub, NE, count, DT_FLOAT16, ftz)
        Or(out_ub, out_ub, nan_ub, count // 8)


def _pack_compute_f32(out_ub, nan_ub, in_ub, count, cmp_mode, nan_bit, ftz):
    CompareScalar(out_ub, in_ub, np.float32(0.0), cmp_mode, count, DT_AUTO, ftz)
    if nan_bit:
        Compare(nan_ub, in_ub, in_ub, NE, count, DT_AUTO, ftz)
        Or(out_ub, out_ub, nan_ub, count // 8)


@overload(_pack_compute, prefer_literal=True, jit_options=dict(cache=True, error_model="numpy"))
def _pack_compute_ol(out_ub, nan_ub, in_ub, count, cmp_mode, nan_bit, ftz):
    return _pack_compute_f16 if in_ub.dtype == types.uint16 else _pack_compute_f32


@njit(cache=True, error_model="numpy")
def _pack_core(block_idx, block_dim, td, ub, x_gm, y_gm, pad_value, nan_bit, ftz):
    buffer_num = 2 if td.usedDb else 1
    tile = td.tileDataNum
    es = x_gm.itemsize
    in_bytes = buffer_num * tile * es
    out_bytes = buffer_num * tile // 4               # the device's output buffer is twice what it needs
    in_start, tile_num, tail = _core_range(td, block_idx)
    out_start = in_start // 8
    for i in range(tile_num):
        slot = i % buffer_num
        off = in_start + i * tile
        in_ub = ub_view(ub, slot * tile * es, x_gm.dtype, tile)
        out_ub = ub_view(ub, in_bytes + slot * (tile // 4), np.uint8, tile // 8)
        nan_ub = ub_view(ub, in_bytes + out_bytes, np.uint8, tile // 8)
        yo = min(out_start + i * (tile // 8), y_gm.size)
        if i < tile_num - 1 or block_idx != block_dim - 1:
            n = tile if i < tile_num - 1 else tail
            DataCopy(in_ub, x_gm[min(off, x_gm.size):], n)                                   # CopyIn
            _pack_compute(out_ub, nan_ub, in_ub, n, GE, nan_bit, ftz)                        # Compute
            DataCopyPad(y_gm[yo:], out_ub, 1, n // 8, 0, 0)                                  # CopyOut
        else:
            # The last tile of the last core: DataCopyPad of lastCopyLength elements, right-padded with -1 to
            # the 32-byte boundary, compare lastCalcLength elements, copy lastCalcLength / 8 bytes out.
            DataCopyPad(in_ub, x_gm[min(off, x_gm.size):], 1, td.lastCopyLength * es, 0, 0,
                        True, 0, td.rightPaddingElemNums, pad_value)
            _pack_compute(out_ub, nan_ub, in_ub, td.lastCalcLength, GE, nan_bit, ftz)
            DataCopyPad(y_gm[yo:], out_ub, 1, td.lastCalcLength // 8, 0, 0)


@njit(**_KJ)
def sign_bits_pack_f32(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack_core(np.int64(block_idx), block_dim, td, ub, x_gm, y_gm, F32_M1, nan_bit, ftz)


@njit(**_KJ)
def sign_bits_pack_f16(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack_core(np.int64(block_idx), block_dim, td, ub, x_gm, y_gm, F16_M1, nan_bit, ftz)


# ---------------------------------------------------------------------------------------------------------------
# Ascend 950 (arch35)
# ---------------------------------------------------------------------------------------------------------------

# A serial function the prange calls, not inlined into it: numba's parfor passes are super-linear in the size of an
# inlined loop body (cold SignBitsUnpack 950 float32, first call in a fresh process: 10.4-11.4 -> 9.4-9.8 CPU-s).
# to_f32 is a constant of each copy, so the float16 kernel compiles no Cast.
@literal_args(cache=True, error_model="numpy")
def _unpack950_core(block_idx, td, ub, x_gm, y_gm, to_f32):
    """Exact-length DataCopyPad in and out (no overrun), Select mode 2 between +-1 half tensors, then (f32 output)
    an exact half -> float Cast (§2.9). The arch35 code does Select and Cast in registers; here the selected halves
    go to the upper half of the output buffer and the Cast widens them forward in place (each float lands on
    halves already consumed), which keeps the UB budget of the tiling (1 + 8 * outSize + 32 bytes per input byte).
    """
    n = td.totalNum
    start = block_idx * td.blockFactor
    length = min(td.blockFactor, n - start)
    u = td.ubFactor
    step = u // 8                                            # input bytes per UB iteration
    es = y_gm.itemsize
    in_ub = ub_view(ub, 0, np.uint8, step)
    out_ub = ub_view(ub, step, y_gm.dtype, u)
    pos_ub = ub_view(ub, step + u * es, np.uint16, u)
    neg_ub = ub_view(ub, step + u * es + 2 * u, np.uint16, u)
    sel_ub = ub_view(ub, step + u * es - 2 * u, np.uint16, u)   # the last 2u bytes of the output buffer
    Duplicate(pos_ub, F16_P1, u)
    Duplicate(neg_ub, F16_M1, u)
    done = 0
    while done < length and step > 0:               # step 0 (ubFactor < 8) is refused by the access pattern
        cnt = min(step, length - done)
        DataCopyPad(in_ub, x_gm[start + done:], 1, cnt, 0, 0, True, 0, 0, 0)
        Select(sel_ub, in_ub, pos_ub, neg_ub, VSEL_TENSOR_TENSOR_MODE, 8 * cnt)
        if to_f32:
            Cast(out_ub, sel_ub, CAST_NONE, 8 * cnt, DT_FLOAT, DT_FLOAT16)
        DataCopyPad(y_gm[8 * (start + done):], out_ub, 1, 8 * cnt * es, 0, 0)
        done += cnt


@njit(**_KJ)
def sign_bits_unpack_950_f32(block_dim, td, ub_size, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _unpack950_core(np.int64(block_idx), td, ub, x_gm, y_gm, True)


@njit(**_KJ)
def sign_bits_unpack_950_f16(block_dim, td, ub_size, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _unpack950_core(np.int64(block_idx), td, ub, x_gm, y_gm, False)


@njit(inline="always", cache=True)
def _reverse_bits(buf, count):
    """The arch35 kernel's register-level bit reversal inside each byte (swap masks 0x55 / 0x33 / 0x0F)."""
    for j in range(count):
        b = np.uint32(buf[j])
        b = ((b >> 1) & np.uint32(0x55)) | ((b & np.uint32(0x55)) << 1)
        b = ((b >> 2) & np.uint32(0x33)) | ((b & np.uint32(0x33)) << 2)
        b = ((b >> 4) & np.uint32(0x0F)) | ((b & np.uint32(0x0F)) << 4)
        buf[j] = np.uint8(b & np.uint32(0xFF))


@njit(cache=True, error_model="numpy")
def _pack950_core(block_idx, td, ub, x_gm, y_gm, pad_value, nan_bit, ftz):
    """Compare(x, 0, LT) per 256-element slot, bit-reverse each byte (MSB first), exact tailByteCount writes;
    the tail is padded with -1.0 (which gives bit 1 here)."""
    slot = 256
    n = td.totalNum
    es = x_gm.itemsize
    first = block_idx * td.slotsPerCore
    last = min(first + td.slotsPerCore, (n + slot - 1) // slot)
    per_tile = td.slotsPerTile
    in_ub = ub_view(ub, 0, x_gm.dtype, per_tile * slot)
    out_ub = ub_view(ub, per_tile * slot * es, np.uint8, per_tile * slot // 8)
    nan_ub = ub_view(ub, per_tile * slot * es + per_tile * slot // 8, np.uint8, per_tile * slot // 8)
    s = first
    while s < last and per_tile > 0:               # slotsPerTile 0 is refused by the access pattern
        k = min(per_tile, last - s)
        elems = min(k * slot, n - s * slot)
        DataCopyPad(in_ub, x_gm[s * slot:], 1, elems * es, 0, 0, True, 0, 0, pad_value)
        Duplicate(in_ub[elems:], pad_value, k * slot - elems)
        _pack_compute(out_ub, nan_ub, in_ub, k * slot, LT, nan_bit, ftz)
        nbytes = (elems + 7) // 8
        _reverse_bits(out_ub, nbytes)
        DataCopyPad(y_gm[s * slot // 8:], out_ub, 1, nbytes, 0, 0)
        s += k


@njit(**_KJ)
def sign_bits_pack_950_f32(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack950_core(np.int64(block_idx), td, ub, x_gm, y_gm, F32_M1, nan_bit, ftz)


@njit(**_KJ)
def sign_bits_pack_950_f16(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack950_core(np.int64(block_idx), td, ub, x_gm, y_gm, F16_M1, nan_bit, ftz)
