"""op_host tiling of SignBitsUnpack / SignBitsPack (docs/ops/sign_bits.md §2.5, §2.9, §3.4).

910B: hicann/ops-math experimental/math/sign_bits_unpack/op_host/sign_bits_unpack_tiling.cpp
(CalculateCoreBlockNums) and experimental/math/sign_bits_pack/op_host/sign_bits_pack_tiling.cpp
(CalcAndSetTilingData). All arithmetic is unsigned integer with truncating division, as in the C++.
"""

from dataclasses import dataclass

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult

UNPACK_BLOCK_SIZE = 64          # bytes per work block
PACK_GM_ALIGN = 512             # bytes: the pack's element alignment unit
PACK_REPEAT_ALIGN = 256
PACK_UB_ALIGN = 32
PACK_MAX_TILEDATA = 18 * 1024


def _ceil_div(a, b):
    return (a + b - 1) // b


@dataclass(frozen=True)
class SignBitsUnpackTilingData(TilingData):
    """experimental/.../op_kernel/sign_bits_unpack_tiling_data.h: nine uint64_t (72 bytes)."""

    smallCoreDataNum: int
    bigCoreDataNum: int
    finalBigTileNum: int
    finalSmallTileNum: int
    tileDataNum: int
    smallTailDataNum: int
    bigTailDataNum: int
    tailBlockNum: int
    bufferOpen: int

    _ctypes = ("uint64",) * 9


@dataclass(frozen=True)
class SignBitsPackTilingData(TilingData):
    """experimental/.../op_kernel/sign_bits_pack_tiling_data.h: eight uint64_t then four uint32_t (80 bytes)."""

    smallCoreDataNum: int
    bigCoreDataNum: int
    finalBigTileNum: int
    finalSmallTileNum: int
    tileDataNum: int
    smallTailDataNum: int
    bigTailDataNum: int
    tailBlockNum: int
    usedDb: int
    lastCopyLength: int
    rightPaddingElemNums: int
    lastCalcLength: int

    _ctypes = ("uint64",) * 8 + ("uint32",) * 4


def _platform_numbers(soc, core_num, ub_size):
    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    return plat, plat.GetCoreNum(), plat.GetCoreMemSize("UB")


def _system_workspace(plat):
    return plat.GetLibApiWorkSpaceSize()


def unpack_tiling(n, out_dtype, *, soc="ascend910b2", core_num=None, ub_size=None):
    """SignBitsUnpack 910B host tiling for ``n`` input bytes and output dtype "float32"/"float16"."""
    if n <= 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "inputNum is 0: the tiling needs at least one input byte")
    plat, cores, ub = _platform_numbers(soc, core_num, ub_size)
    f16 = out_dtype == "float16"
    blk = UNPACK_BLOCK_SIZE
    aligned = _ceil_div(n, blk) * blk                                   # inputLengthAlgin
    # Single-buffer UB budget in input bytes: 1 B in + 8 outputs (+ the f32 path's unused half temp).
    per_byte = 17 if f16 else 49
    t = ub - _ceil_div(ub, per_byte) * (per_byte - 1)
    buffer_open, ub_data_number = 1, 2
    if aligned < cores * (t // blk * blk):
        buffer_open, ub_data_number = 0, 1
    if buffer_open == 1:
        per_byte2 = 34 if f16 else 82
        t = ub - _ceil_div(ub, per_byte2) * (per_byte2 - 2)
    tile_block_num = (t // blk) // ub_data_number
    tile_data_num = tile_block_num * blk
    if tile_block_num == 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"ub_size={ub} is too small for one 64-byte tile")
    block_dim = 1 if tile_data_num >= n else min(cores, aligned // blk)

    every = aligned // blk // block_dim
    tail_block_num = (aligned // blk) % block_dim

    def core_split(blocks):
        data = blocks * blk
        tiles = blocks // tile_block_num
        final = tiles if blocks % tile_block_num == 0 else tiles + 1
        tail = data - tile_data_num * tiles
        return data, final, (tile_data_num if tail == 0 else tail)

    small, final_small, small_tail = core_split(every)
    big, final_big, big_tail = core_split(every + 1)
    td = SignBitsUnpackTilingData(
        smallCoreDataNum=small, bigCoreDataNum=big, finalBigTileNum=final_big, finalSmallTileNum=final_small,
        tileDataNum=tile_data_num, smallTailDataNum=small_tail, bigTailDataNum=big_tail,
        tailBlockNum=tail_block_num, bufferOpen=buffer_open)
    return TilingResult(td, block_dim, 1 if f16 else 0, _system_workspace(plat), ub, cores, plat.name)


def pack_tiling(n, in_dtype, *, soc="ascend910b2", core_num=None, ub_size=None):
    """SignBitsPack 910B host tiling for ``n`` input elements of "float32"/"float16"."""
    if n <= 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "the tiling needs at least one input element")
    # hicann/ops-math: experimental/math/sign_bits_pack/op_host/sign_bits_pack_tiling.cpp fetches the UB size but
    # never uses it for the tile size (checked 2026-11-30); see the note below
    plat, cores, ub = _platform_numbers(soc, core_num, ub_size)
    type_len = 2 if in_dtype == "float16" else 4
    epb = PACK_GM_ALIGN // type_len
    aligned = _ceil_div(n, epb) * epb
    tile0 = PACK_MAX_TILEDATA * (4 // type_len)
    need_core_num = _ceil_div(aligned, tile0 * 2)
    core_cnt = min(cores, need_core_num)
    need_core_data = _ceil_div(aligned, core_cnt)
    if core_cnt < cores // 4 and need_core_data > 4608:
        core_cnt *= 2
        need_core_data = _ceil_div(aligned, core_cnt)
    used_db, buffer_num = 1, 2
    if need_core_data < 9216:
        used_db, buffer_num = 0, 1
    need_tile = _ceil_div(_ceil_div(need_core_data, buffer_num), epb) * epb
    tile = min(tile0, need_tile)

    every = aligned // epb // core_cnt
    tail_block_num = (aligned // epb) % core_cnt
    small = every * epb
    final_small = _ceil_div(small, tile)
    small_tail = small - (final_small - 1) * tile
    big = small + epb
    final_big = _ceil_div(big, tile)
    big_tail = big - (final_big - 1) * tile

    real_last = small_tail - (aligned - n)
    calc_unit = PACK_REPEAT_ALIGN // type_len
    copy_unit = PACK_UB_ALIGN // type_len
    last_calc = _ceil_div(real_last, calc_unit) * calc_unit
    right_pad = _ceil_div(real_last, copy_unit) * copy_unit - real_last
    td = SignBitsPackTilingData(
        smallCoreDataNum=small, bigCoreDataNum=big, finalBigTileNum=final_big, finalSmallTileNum=final_small,
        tileDataNum=tile, smallTailDataNum=small_tail, bigTailDataNum=big_tail, tailBlockNum=tail_block_num,
        usedDb=used_db, lastCopyLength=real_last, rightPaddingElemNums=right_pad, lastCalcLength=last_calc)
    notes = ()
    # input + output buffers (docs/ops/sign_bits.md §3.4)
    need = buffer_num * tile * type_len + buffer_num * tile // 4
    if need > ub:
        # CANN only checks ubSize != 0 (GetPlatformInfo); the launch's UB check then refuses this tiling (561002).
        notes = (f"the 910B SignBitsPack host tiling does not size its tiles by the UB (CANN fetches ubSize and "
                 f"only checks it is non-zero); this tiling needs {need} B of UB per core but ub_size={ub}, so a "
                 f"launch is refused with 561002 (the device would overrun its UB)",)
    return TilingResult(td, core_cnt, 0, _system_workspace(plat), ub, cores, plat.name, notes=notes)


# ---------------------------------------------------------------------------------------------------------------
# Ascend 950 (arch35)
# ---------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SignBitsUnpackTilingData950(TilingData):
    """math/sign_bits_unpack/op_kernel/arch35 tiling struct: four uint64_t then two uint32_t
    (docs/ops/sign_bits.md §2.9)."""

    totalNum: int
    blockFactor: int
    ubFactor: int
    size: int
    enableDump: int
    dumpFlag: int

    _ctypes = ("uint64",) * 4 + ("uint32",) * 2


@dataclass(frozen=True)
class SignBitsPackTilingData950(TilingData):
    """An npu-emu decomposition of the arch35 pack kernel's work (the source's per-core split is not transcribed,
    docs/ops/sign_bits.md §3.9): 256-element slots, ``slotsPerCore`` consecutive slots per core, ``slotsPerTile`` per
    UB pass. Values do not depend on it."""

    totalNum: int
    slotsPerCore: int
    slotsPerTile: int

    _ctypes = ("uint64",) * 3


PACK950_SLOT = 256


def unpack_tiling_950(n, out_dtype, *, soc="ascend950pr", core_num=None, ub_size=None, size=1):
    """math/sign_bits_unpack/op_host/arch35/sign_bits_unpack_tiling_arch35.cpp (docs/ops/sign_bits.md §2.9)."""
    if n <= 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "the tiling needs at least one input byte")
    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    cores, ub = plat.GetCoreNumAiv(), plat.GetCoreMemSize("UB")
    out_size = 2 if out_dtype == "float16" else 4
    bpg = 1 + 8 * out_size + 2 * 8 * 2
    avail = ub - _ceil_div(ub, bpg) * (bpg - 1)
    ub_factor = max(128, avail * 8 // 128 * 128)
    block_factor = max(16, _ceil_div(_ceil_div(n, cores), 16) * 16)
    block_dim = _ceil_div(n, block_factor)
    td = SignBitsUnpackTilingData950(totalNum=n, blockFactor=block_factor, ubFactor=ub_factor, size=size,
                                     enableDump=1, dumpFlag=0)
    return TilingResult(td, block_dim, 1 if out_dtype == "float16" else 0, _system_workspace(plat), ub, cores,
                        plat.name)


def pack_tiling_950(n, in_dtype, *, soc="ascend950pr", core_num=None, ub_size=None):
    if n <= 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "the tiling needs at least one input element")
    plat, cores, ub = _platform_numbers(soc, core_num, ub_size)
    type_len = 2 if in_dtype == "float16" else 4
    slots = _ceil_div(n, PACK950_SLOT)
    per_core = _ceil_div(slots, cores)
    block_dim = _ceil_div(slots, per_core)
    per_tile = max(1, ub // (PACK950_SLOT * type_len + 2 * (PACK950_SLOT // 8)))   # input + result + isnan masks
    td = SignBitsPackTilingData950(totalNum=n, slotsPerCore=per_core, slotsPerTile=min(per_tile, per_core))
    return TilingResult(td, block_dim, 0, _system_workspace(plat), ub, cores, plat.name,
                        notes=("ascend950 SignBitsPack per-core split is an npu-emu decomposition "
                               "(not transcribed from the arch35 tiling); values are unaffected",))
