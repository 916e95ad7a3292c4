"""Per-core kernels of SignBitsUnpack / SignBitsPack, transliterated from Ascend C (docs/ops/sign_bits.md §2.6, §2.9,
§3.5, §3.9) onto the launch model and the instruction layer.

910B: hicann/ops-math experimental/math/sign_bits_unpack/op_kernel/sign_bits_unpack.h (KernelSignBitsUnpack<T>)
and experimental/math/sign_bits_pack/op_kernel/sign_bits_pack.h (KernelSignBitsPack<T>).
950: math/sign_bits_unpack/op_kernel/arch35/sign_bits_unpack.h, math/sign_bits_pack/op_kernel/arch35/.

GM tensors are the caller's exact-size arrays. The device reads and writes past their logical ends (§2.7, §3.7);
here DataCopy cuts at the end of the GM view, and the access patterns below report those device accesses as
``gm_overrun`` records instead. Halves travel as uint16 bits (numba has no float16).
"""

from dataclasses import replace

import numpy as np
from numba import njit, prange

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
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.launch import checked_access, launch, ub_view
from npu_emu.kernels.sign_bits.tiling import PACK950_SLOT
from npu_emu.device.validate import AccessPattern, tile_ranges

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

@njit(inline="always", cache=True)
def _pack_compute(out_ub, nan_ub, in_ub, count, dtype, cmp_mode, nan_bit, ftz):
    """CompareScalar(out, in, 0, mode, count). The nan_bit=1 switch models a compare that reports NaN as true:
    an isnan mask (Compare(x, x, NE)) ORed into the result."""
    if dtype == DT_FLOAT16:
        CompareScalar(out_ub, in_ub, np.uint16(0), cmp_mode, count, DT_FLOAT16, ftz)
        if nan_bit:
            Compare(nan_ub, in_ub, in_ub, NE, count, DT_FLOAT16, ftz)
            Or(out_ub, out_ub, nan_ub, count // 8)
    else:
        CompareScalar(out_ub, in_ub, np.float32(0.0), cmp_mode, count, DT_AUTO, ftz)
        if nan_bit:
            Compare(nan_ub, in_ub, in_ub, NE, count, DT_AUTO, ftz)
            Or(out_ub, out_ub, nan_ub, count // 8)


@njit(inline="always", cache=True)
def _pack_core(block_idx, block_dim, td, ub, x_gm, y_gm, dtype, pad_value, nan_bit, ftz):
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
            _pack_compute(out_ub, nan_ub, in_ub, n, dtype, GE, nan_bit, ftz)                 # Compute
            DataCopyPad(y_gm[yo:], out_ub, 1, n // 8, 0, 0)                                  # CopyOut
        else:
            # The last tile of the last core: DataCopyPad of lastCopyLength elements, right-padded with -1 to
            # the 32-byte boundary, compare lastCalcLength elements, copy lastCalcLength / 8 bytes out.
            DataCopyPad(in_ub, x_gm[min(off, x_gm.size):], 1, td.lastCopyLength * es, 0, 0,
                        True, 0, td.rightPaddingElemNums, pad_value)
            _pack_compute(out_ub, nan_ub, in_ub, td.lastCalcLength, dtype, GE, nan_bit, ftz)
            DataCopyPad(y_gm[yo:], out_ub, 1, td.lastCalcLength // 8, 0, 0)


@njit(**_KJ)
def sign_bits_pack_f32(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack_core(block_idx, block_dim, td, ub, x_gm, y_gm, DT_AUTO, F32_M1, nan_bit, ftz)


@njit(**_KJ)
def sign_bits_pack_f16(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack_core(block_idx, block_dim, td, ub, x_gm, y_gm, DT_FLOAT16, F16_M1, nan_bit, ftz)


# ---------------------------------------------------------------------------------------------------------------
# Ascend 950 (arch35)
# ---------------------------------------------------------------------------------------------------------------

@njit(inline="always", cache=True)
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
        _unpack950_core(block_idx, td, ub, x_gm, y_gm, True)


@njit(**_KJ)
def sign_bits_unpack_950_f16(block_dim, td, ub_size, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _unpack950_core(block_idx, td, ub, x_gm, y_gm, False)


@njit(inline="always", cache=True)
def _reverse_bits(buf, count):
    """The arch35 kernel's register-level bit reversal inside each byte (swap masks 0x55 / 0x33 / 0x0F)."""
    for j in range(count):
        b = np.uint32(buf[j])
        b = ((b >> 1) & np.uint32(0x55)) | ((b & np.uint32(0x55)) << 1)
        b = ((b >> 2) & np.uint32(0x33)) | ((b & np.uint32(0x33)) << 2)
        b = ((b >> 4) & np.uint32(0x0F)) | ((b & np.uint32(0x0F)) << 4)
        buf[j] = np.uint8(b & np.uint32(0xFF))


@njit(inline="always", cache=True)
def _pack950_core(block_idx, td, ub, x_gm, y_gm, dtype, pad_value, nan_bit, ftz):
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
        _pack_compute(out_ub, nan_ub, in_ub, k * slot, dtype, LT, nan_bit, ftz)
        nbytes = (elems + 7) // 8
        _reverse_bits(out_ub, nbytes)
        DataCopyPad(y_gm[s * slot // 8:], out_ub, 1, nbytes, 0, 0)
        s += k


@njit(**_KJ)
def sign_bits_pack_950_f32(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack950_core(block_idx, td, ub, x_gm, y_gm, DT_AUTO, F32_M1, nan_bit, ftz)


@njit(**_KJ)
def sign_bits_pack_950_f16(block_dim, td, ub_size, nan_bit, ftz, x_gm, y_gm):
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        _pack950_core(block_idx, td, ub, x_gm, y_gm, DT_FLOAT16, F16_M1, nan_bit, ftz)


# ---------------------------------------------------------------------------------------------------------------
# host side: per-core split, access patterns, tiling-data checks, launch
#
# A user may hand in their own tiling data (api.py ``tiling=``). The access patterns below are computed from the
# tiling fields exactly as the kernels above walk them (never from the input length), so the launch model's
# validator sees the GM ranges the kernel will really touch. What the validator cannot see - a tile longer than
# its UB buffer, a length the instructions round down (DataCopy: whole 32-byte blocks, Compare: whole 256-byte
# repeats), a loop step of 0 - is checked by the ``*_tiling_problems`` functions, one sentence per problem naming
# core, tile and range. Both land in one AclnnError 561002 before any kernel runs.
# ---------------------------------------------------------------------------------------------------------------

# Larger values cannot describe a GM buffer this host (or a device) holds; they would overflow int64 arithmetic.
_MAX_FIELD = 1 << 48


def _tiling_error(msg):
    return AclnnError(ACLNN_ERR_INNER_TILING_ERROR, msg)


def _check_field_sizes(td, fields):
    for f in fields:
        v = getattr(td, f)
        if v > _MAX_FIELD:
            raise _tiling_error(f"tiling data {f}={v} is larger than any GM buffer (> 2^48); check the field")


def _split_910b(td, block_dim):
    """(core_start, tile_num, tail) per core, exactly as the kernels' Init computes them."""
    c = np.arange(block_dim, dtype=np.int64)
    big = c < td.tailBlockNum
    start = np.where(big, c * td.bigCoreDataNum,
                     c * td.bigCoreDataNum - (td.bigCoreDataNum - td.smallCoreDataNum) * (c - td.tailBlockNum))
    tiles = np.where(big, td.finalBigTileNum, td.finalSmallTileNum).astype(np.int64)
    tail = np.where(big, td.bigTailDataNum, td.smallTailDataNum).astype(np.int64)
    return start, tiles, tail


def _split_950_unpack(td, block_dim):
    """(core_start, tile_num, step, tail) in input bytes, as _unpack950_core walks them: core c owns
    [c * blockFactor, min(+blockFactor, totalNum)) and moves ubFactor / 8 bytes per UB pass."""
    step = td.ubFactor // 8
    if step < 1:
        raise _tiling_error(f"ubFactor={td.ubFactor}: every core moves ubFactor / 8 input bytes per UB pass, so "
                            f"ubFactor < 8 gives a loop that never advances; the host tiling uses multiples of 128")
    c = np.arange(block_dim, dtype=np.int64)
    start = c * td.blockFactor
    length = np.clip(td.totalNum - start, 0, td.blockFactor)
    tiles = -(-length // step)
    tail = length - np.maximum(tiles - 1, 0) * step
    return start, tiles, step, tail


def _split_950_pack(td, block_dim):
    """(first_slot, tile_num, slotsPerTile, tail_slots) per core, as _pack950_core walks its 256-element slots."""
    per_tile = td.slotsPerTile
    if per_tile < 1:
        raise _tiling_error("slotsPerTile=0: every core packs slotsPerTile 256-element slots per UB pass, so 0 "
                            "gives a loop that never advances; use slotsPerTile >= 1")
    c = np.arange(block_dim, dtype=np.int64)
    first = c * td.slotsPerCore
    slots = np.clip(-(-td.totalNum // PACK950_SLOT) - first, 0, td.slotsPerCore)
    tiles = -(-slots // per_tile)
    tail = slots - np.maximum(tiles - 1, 0) * per_tile
    return first, tiles, per_tile, tail


def core_split(op, tr, family, n):
    """Rows (core, start, length, tiles, tail length) for ``npu-emu tiling``; lengths in input units."""
    td, bd = tr.tiling, tr.block_dim
    if family == "950" and op == "unpack":
        start, tiles, step, tail = _split_950_unpack(td, bd)
        length = np.where(tiles > 0, (tiles - 1) * step + tail, 0)
    elif family == "950":
        first, tiles, per_tile, tail = _split_950_pack(td, bd)
        start = first * PACK950_SLOT
        stop = np.minimum((first + np.where(tiles > 0, (tiles - 1) * per_tile + tail, 0)) * PACK950_SLOT,
                          td.totalNum)
        length = np.maximum(stop - start, 0)
        tail = np.where(tiles > 0, length - np.maximum(tiles - 1, 0) * per_tile * PACK950_SLOT, 0)
    else:
        start, tiles, tail = _split_910b(td, bd)
        length = np.where(tiles > 0, (tiles - 1) * td.tileDataNum + tail, 0)
    return [(c, int(start[c]), int(length[c]), int(tiles[c]), int(tail[c])) for c in range(bd)]


def _tile_start(td, start, tiles, c):
    """First input element of core c's last tile."""
    return int(start[c]) + (int(tiles[c]) - 1) * td.tileDataNum


def _kinds_910b(td, bd, start, tiles):
    """(core, label, tail field) for the first core of each kind (big / small) launched with tiles; the kernels
    give all cores of a kind the same tile count and tail, so one sentence per kind covers them."""
    out = []
    for first, last, label, field in ((0, min(td.tailBlockNum, bd), "big", "bigTailDataNum"),
                                      (min(td.tailBlockNum, bd), bd, "small", "smallTailDataNum")):
        if first < last and tiles[first] > 0:
            cores = f"core {first}" if last - first == 1 else f"cores {first}..{last - 1}"
            out.append((first, last, f"{label} {cores}", field))
    return out


def unpack_tiling_problems(tr, n, out_itemsize, family):
    """The unpack tiling fields the kernels need consistent, beyond what the access pattern shows."""
    td, bd = tr.tiling, tr.block_dim
    if family == "950":
        es = out_itemsize
        if td.ubFactor % (8 * es):
            return [f"ubFactor={td.ubFactor} is not a multiple of {8 * es}: each UB pass holds ubFactor / 8 input "
                    f"bytes followed by the {'float' if es == 4 else 'half'} output buffer, which must start at a "
                    f"multiple of {es} bytes (the host tiling uses multiples of 128)"]
        return []
    problems = []
    tile = td.tileDataNum
    if tile == 0 or tile % 32:
        problems.append(f"tileDataNum={tile} is not a positive multiple of 32 bytes: DataCopy moves whole 32-byte "
                        f"blocks (the rest of a tile would be stale UB) and the output buffer starts at "
                        f"BUFFER_NUM * tileDataNum bytes, misaligned otherwise (the host tiling uses multiples of 64)")
    start, tiles, _ = _split_910b(td, bd)
    for c, _, who, field in _kinds_910b(td, bd, start, tiles):
        t, tail = int(tiles[c]) - 1, getattr(td, field)
        s = _tile_start(td, start, tiles, c)
        if tail % 32:
            problems.append(f"core {c} tile {t} (last tile of the {who}): {field}={tail} is not a multiple of 32 "
                            f"bytes; DataCopy copies only self[{s}, {s + tail - tail % 32}) and the outputs "
                            f"y[{8 * (s + tail - tail % 32)}, {8 * (s + tail)}) would come from stale UB")
        if tail > tile:
            problems.append(f"core {c} tile {t} (last tile of the {who}): {field}={tail} bytes (self[{s}, "
                            f"{s + tail})) do not fit the UB tile buffer of tileDataNum={tile} bytes; its outputs "
                            f"would overwrite the input still being read. Keep {field} <= tileDataNum")
    return problems


def pack_tiling_problems(tr, n, in_itemsize, family):
    """The pack tiling fields the kernels need consistent, beyond what the access pattern shows."""
    td, bd = tr.tiling, tr.block_dim
    if family == "950":
        if 0 < n - td.totalNum < 8:
            # a shortfall of a whole byte or more leaves y bytes unwritten, which the validator reports; less than a
            # byte still writes every y byte, with the tail slot's -1.0 padding in place of x's last elements
            return [f"totalNum={td.totalNum} but x has {n} elements: the last y byte would pack the pad value "
                    f"-1.0 (bit 1) for x[{td.totalNum}, {n}) instead of reading them; set totalNum={n}"]
        return []
    es = in_itemsize
    unit = 256 // es                         # CompareScalar computes whole 256-byte repeats only
    problems = []
    tile = td.tileDataNum
    if tile == 0 or tile % unit:
        problems.append(f"tileDataNum={tile} is not a positive multiple of {unit} elements: CompareScalar packs "
                        f"whole 256-byte repeats only, the output bytes of a partial repeat would be stale UB")
    start, tiles, _ = _split_910b(td, bd)
    odd = np.flatnonzero((start % 8 != 0) & (tiles > 0))
    if odd.size:
        c = int(odd[0])
        problems.append(f"core {c} starts at element {int(start[c])}, not a multiple of 8: its output bytes "
                        f"y[{int(start[c]) // 8}, ...) would hold bits of other elements; the core data counts "
                        f"(smallCoreDataNum, bigCoreDataNum) must be multiples of 8")
    last = bd - 1
    for c, stop, who, field in _kinds_910b(td, bd, start, tiles):
        if c == last:
            continue                          # the last core's last tile is described by the last* fields below
        t, tail = int(tiles[c]) - 1, getattr(td, field)
        s = _tile_start(td, start, tiles, c)
        if tail % unit:
            problems.append(f"core {c} tile {t} (last tile of the {who}): {field}={tail} is not a multiple of "
                            f"{unit} elements; CompareScalar packs only x[{s}, {s + tail - tail % unit}) and the "
                            f"output bytes y[{(s + tail - tail % unit) // 8}, {(s + tail) // 8}) would be stale UB")
        if tail > tile:
            problems.append(f"core {c} tile {t} (last tile of the {who}): {field}={tail} elements (x[{s}, "
                            f"{s + tail})) do not fit the UB tile buffer of tileDataNum={tile} elements; keep "
                            f"{field} <= tileDataNum")
    if tiles[last] < 1:
        return problems                       # the validator reports what the last core leaves unwritten
    t = int(tiles[last]) - 1
    s = _tile_start(td, start, tiles, last)
    where = f"core {last} tile {t} (the last tile of the last core)"
    copy, pad, calc = td.lastCopyLength, td.rightPaddingElemNums, td.lastCalcLength
    rest = n - s
    if copy != rest:
        have = f"x[{s}, {n}) ({rest} elements)" if rest > 0 else f"nothing (x has {n} elements)"
        problems.append(f"{where}: lastCopyLength={copy} copies x[{s}, {s + copy}) but the rest of x from its "
                        f"start is {have}; set lastCopyLength={max(rest, 0)}")
    if pad * es > 32:
        # npu_emu/ascendc/datacopy.py (DataCopyPad): a pad is at most 32 bytes
        problems.append(f"{where}: rightPaddingElemNums={pad} is {pad * es} bytes; DataCopyPad pads at most 32 "
                        f"bytes")
    elif copy % 8 and pad == 0:
        j = (s + copy) // 8
        problems.append(f"{where}: x[{s + copy - copy % 8}, {s + copy}) fill only part of output byte y[{j}, "
                        f"{j + 1}) and rightPaddingElemNums=0, so DataCopyPad completes its 32-byte block with "
                        f"copies of x[{s}] instead of -1.0; set rightPaddingElemNums={-(-copy // 8) * 8 - copy} "
                        f"or more")
    if calc == 0 or calc % unit:
        done = s + calc - calc % unit
        problems.append(f"{where}: lastCalcLength={calc} is not a positive multiple of {unit} elements; "
                        f"CompareScalar packs only x[{s}, {done}) and the output bytes y[{done // 8}, "
                        f"{(s + calc) // 8}) would be stale UB; the host uses lastCopyLength rounded up to {unit}")
    filled = -(-(copy + pad) * es // 32) * 32 // es          # elements DataCopyPad writes into the tile buffer
    need = max(calc, filled)
    if need > tile:
        problems.append(f"{where}: the last tile needs {need} elements of UB (x[{s}, {s + need}): lastCopyLength "
                        f"+ padding to 32 bytes, lastCalcLength) but the tile buffer holds tileDataNum={tile}")
    return problems


def unpack_access(tr, n, out_itemsize, family):
    """GM ranges (elements) and UB bytes of the unpack kernel, from the tiling data alone."""
    td, bd = tr.tiling, tr.block_dim
    out_dtype = np.float32 if out_itemsize == 4 else np.uint16
    ap = AccessPattern(bd)
    if family == "950":
        _check_field_sizes(td, ("totalNum", "blockFactor", "ubFactor"))
        start, tiles, step, tail = _split_950_unpack(td, bd)
        ap.gm("self", n, np.uint8)
        ap.gm("y", 8 * n, out_dtype, output=True)
        core, tile, s, e = tile_ranges(start, tiles, step, tail, block_dim=bd)
        ap.read("self", core, tile, s, e)
        ap.write("y", core, tile, 8 * s, 8 * e)
        ap.ub(np.arange(bd), -1, step + td.ubFactor * out_itemsize + 2 * 2 * td.ubFactor)
        return ap
    _check_field_sizes(td, [f for f in td.fields() if f != "bufferOpen"])
    aligned = -(-n // 64) * 64
    ap.gm("self", n, np.uint8, overrun=aligned - n)
    ap.gm("y", 8 * n, out_dtype, output=True, overrun=8 * (aligned - n))
    start, tiles, tail = _split_910b(td, bd)
    core, tile, s, e = tile_ranges(start, tiles, td.tileDataNum, tail, block_dim=bd)
    ap.read("self", core, tile, s, e - (e - s) % 32)           # DataCopy: whole 32-byte blocks
    ap.write("y", core, tile, 8 * s, 8 * e)
    buffer_num = 2 if td.bufferOpen else 1
    per_core = buffer_num * td.tileDataNum * (1 + 8 * out_itemsize)
    if out_itemsize == 4:
        per_core += 8 * td.tileDataNum * 2           # the f32 path's VECCALC half buffer (allocated, unused)
    ap.ub(np.arange(bd), -1, per_core)
    return ap


def pack_access(tr, n, in_itemsize, family, nan_bit):
    td, bd = tr.tiling, tr.block_dim
    in_dtype = np.float32 if in_itemsize == 4 else np.uint16
    packed = -(-n // 8)
    ap = AccessPattern(bd)
    if family == "950":
        _check_field_sizes(td, td.fields())
        first, tiles, per_tile, tail = _split_950_pack(td, bd)
        core, tile, s, e = tile_ranges(first, tiles, per_tile, tail, block_dim=bd)
        s, e = s * PACK950_SLOT, np.minimum(e * PACK950_SLOT, td.totalNum)   # slots -> elements
        ap.gm("x", n, in_dtype)
        ap.gm("y", packed, np.uint8, output=True)
        ap.read("x", core, tile, s, e)
        ap.write("y", core, tile, s // 8, -(-e // 8))            # exact tailByteCount writes
        nbuf = per_tile * PACK950_SLOT
        ap.ub(np.arange(bd), -1, nbuf * in_itemsize + 2 * (nbuf // 8))
        return ap
    _check_field_sizes(td, [f for f in td.fields() if f != "usedDb"])
    start, tiles, tail = _split_910b(td, bd)
    core, tile, s, e = tile_ranges(start, tiles, td.tileDataNum, tail, block_dim=bd)
    # Output bytes as the kernel addresses them: outStart = inStart / 8, then tileDataNum / 8 bytes per tile.
    write_s = start[core] // 8 + tile * (td.tileDataNum // 8)
    write_e = write_s + (e - s) // 8
    # The last tile of the last core reads lastCopyLength elements and writes lastCalcLength / 8 bytes.
    last = np.flatnonzero((core == bd - 1) & (tile == tiles[bd - 1] - 1))
    e[last] = s[last] + td.lastCopyLength
    write_e[last] = write_s[last] + td.lastCalcLength // 8
    overrun = max(0, int(write_e.max()) - packed) if len(write_e) else 0
    ap.gm("x", n, in_dtype)
    ap.gm("y", packed, np.uint8, output=True, overrun=overrun)
    ap.read("x", core, tile, s, e)
    ap.write("y", core, tile, write_s, write_e)
    buffer_num = 2 if td.usedDb else 1
    per_core = buffer_num * td.tileDataNum * in_itemsize + buffer_num * td.tileDataNum // 4
    if nan_bit:
        per_core += td.tileDataNum // 8             # the isnan mask of the nan_bit=1 switch
    ap.ub(np.arange(bd), -1, per_core)
    return ap


def with_block_dim(tr, block_dim):
    """A user may launch their tiling with another block_dim (a user-supplied tiling's SetBlockDim)."""
    if block_dim is None:
        return tr
    if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)) or block_dim < 1:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"block_dim={block_dim!r} must be a positive integer")
    return replace(tr, block_dim=int(block_dim))


def _overruns(checked):
    if not checked.validated:
        return []
    return list(checked.overruns)


def run_unpack(x, y, tr, family, *, validate=True, faithful=False):
    """Launch the unpack kernel: x uint8[N], y float32[8N] or float16[8N]. Returns the gm_overrun records.
    On the 910B the fused kernel runs unless ``faithful``; the 950 kernels are always the faithful ones."""
    f16 = y.dtype == np.float16
    yk = y.view(np.uint16) if f16 else y
    if family == "950":
        kern = sign_bits_unpack_950_f16 if f16 else sign_bits_unpack_950_f32
    elif faithful:
        kern = sign_bits_unpack_f16 if f16 else sign_bits_unpack_f32
    else:
        p1, m1 = (F16_P1, F16_M1) if f16 else (F32_P1, F32_M1)

        def kern(block_dim, td, ub_size, x_gm, y_gm):
            sign_bits_unpack_fused(block_dim, td, ub_size, x_gm, y_gm, p1, m1)

        kern.__name__ = "sign_bits_unpack_fused"
    # The access pattern and the tiling-data problems are reported together as one 561002 (a gap next to the
    # field that causes it); the whole check is pure in (tiling, sizes, family), so repeats take it from the memo.
    n, es = x.size, y.dtype.itemsize
    checked = checked_access(("sign_bits.unpack", tr, n, es, family), lambda: unpack_access(tr, n, es, family),
                             ub_size=tr.ub_size, validate=validate, what=f"{kern.__name__} tiling",
                             problems=lambda: unpack_tiling_problems(tr, n, es, family))
    launch(kern, tr.block_dim, tr.tiling, x, yk, ub_size=tr.ub_size, access=checked, validate=False)
    return _overruns(checked)


def run_pack(bits, y, tr, family, *, nan_bit=0, ftz=False, validate=True):
    """Launch the pack kernel on the input's bits (uint16 for half, float32 for float) into y uint8[ceil(N/8)]."""
    f16 = bits.dtype == np.uint16
    xk = bits if f16 else bits.view(np.float32)
    if family == "950":
        kern = sign_bits_pack_950_f16 if f16 else sign_bits_pack_950_f32
    else:
        kern = sign_bits_pack_f16 if f16 else sign_bits_pack_f32
    n, es, nb, fz = xk.size, xk.itemsize, int(nan_bit), bool(ftz)

    def kernel(block_dim, td, ub_size, x_gm, y_gm):
        kern(block_dim, td, ub_size, nb, fz, x_gm, y_gm)

    kernel.__name__ = kern.__name__
    checked = checked_access(("sign_bits.pack", tr, n, es, family, nb), lambda: pack_access(tr, n, es, family, nb),
                             ub_size=tr.ub_size, validate=validate, what=f"{kern.__name__} tiling",
                             problems=lambda: pack_tiling_problems(tr, n, es, family))
    launch(kernel, tr.block_dim, tr.tiling, xk, y, ub_size=tr.ub_size, access=checked, validate=False)
    return _overruns(checked)
