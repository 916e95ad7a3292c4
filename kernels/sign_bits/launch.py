"""Host side of SignBitsUnpack / SignBitsPack: the per-core split, the GM access patterns and tiling-data checks of
the kernels in kernel.py, and their launchers (docs/ops/sign_bits.md §2.6, §2.9, §3.5, §3.9).

910B: hicann/ops-math experimental/math/sign_bits_unpack/op_kernel/sign_bits_unpack.h and
experimental/math/sign_bits_pack/op_kernel/sign_bits_pack.h (the kernels' Init: each core's range and tiles);
950: math/sign_bits_unpack/op_kernel/arch35/, math/sign_bits_pack/op_kernel/arch35/.
"""

from dataclasses import replace

import numpy as np

from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.sign_bits.kernel import (
    F16_M1,
    F16_P1,
    F32_M1,
    F32_P1,
    sign_bits_pack_950_f16,
    sign_bits_pack_950_f32,
    sign_bits_pack_f16,
    sign_bits_pack_f32,
    sign_bits_unpack_950_f16,
    sign_bits_unpack_950_f32,
    sign_bits_unpack_f16,
    sign_bits_unpack_f32,
    sign_bits_unpack_fused,
)
from npu_emu.kernels.sign_bits.tiling import PACK950_SLOT
from npu_emu.device.launch import checked_access, launch
from npu_emu.device.read_only import read_only
from npu_emu.device.validate import AccessPattern, tile_ranges


# ---------------------------------------------------------------------------------------------------------------
# host side: per-core split, access patterns, tiling-data checks, launch
#
# A user may hand in their own tiling data (api.py ``tiling=``). The access patterns below are computed from the
# tiling fields exactly as the kernels of kernel.py walk them (never from the input length), so the launch model's
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
    launch(kern, tr.block_dim, tr.tiling, read_only(x), yk, ub_size=tr.ub_size, access=checked, validate=False)
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
    launch(kernel, tr.block_dim, tr.tiling, read_only(xk), y, ub_size=tr.ub_size, access=checked, validate=False)
    return _overruns(checked)
