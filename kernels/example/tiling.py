"""Host tiling of the example op add_one (y = x + 1, float32), in the style of the ops-math elementwise ops.

The element count is split into 32-byte blocks (DataCopy's unit: 8 float32). The first ``tailBlockNum`` cores
("big" cores) take one block more than the others; each core walks its range in tiles of ``tileDataNum``
elements, the last tile being the tail. Like SignBitsUnpack on 910B (docs/ops/sign_bits.md §2.5, §2.7) the device
works in whole blocks, so when n is not a multiple of 8 the last core reads x and writes y up to 7 elements
past their end: the access pattern (kernel.py) declares that as a tolerated over-run; the kernel does not
perform it.
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult

BLOCK_BYTES = 32                      # DataCopy moves GM <-> UB in 32-byte blocks
DTYPE = np.dtype(np.float32)
BLOCK_ELEMS = BLOCK_BYTES // DTYPE.itemsize
QUEUES = 2                            # VECIN (x tile) and VECOUT (y tile)


@dataclass(frozen=True)
class AddOneTilingData(TilingData):
    _ctypes = ("uint64",) * 8 + ("uint32",)   # 8 * 8 + 4 = 68 bytes, padded to 72 by the uint64 alignment
    smallCoreDataNum: int     # elements per small core
    bigCoreDataNum: int       # elements per big core (one block more)
    finalBigTileNum: int      # tiles per big core, tail included
    finalSmallTileNum: int
    tileDataNum: int          # elements per full tile
    smallTailDataNum: int     # elements in the last tile of a small core
    bigTailDataNum: int
    tailBlockNum: int         # number of big cores; they come first
    bufferOpen: int           # 1: double buffering (two UB slots per queue)


def ub_bytes_per_core(td):
    """UB the kernel's Init allocates: QUEUES queues x (1 or 2) slots x one tile."""
    return QUEUES * (2 if td.bufferOpen else 1) * td.tileDataNum * DTYPE.itemsize


def add_one_tiling(n, *, soc="ascend910b2", core_num=None, ub_size=None):
    """Host tiling for n float32 elements -> TilingResult (tiling key 0, workspace = system workspace)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"add_one: n={n!r}; pass a positive element count "
                                                  f"(empty tensors need no kernel)")
    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    ub = plat.GetCoreMemSize("UB")
    cores = plat.GetCoreNum()

    blocks = -(-int(n) // BLOCK_ELEMS)
    slot_bytes = QUEUES * BLOCK_BYTES                     # one block of x plus one block of y
    single_tile_blocks = ub // slot_bytes
    if single_tile_blocks < 1:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"add_one: ub_size={ub} cannot hold one {BLOCK_BYTES}-byte "
                                                  f"block per queue; use at least {slot_bytes}")
    # Double buffering only pays when some core has more than one tile.
    buffer_open = 1 if blocks > cores * single_tile_blocks and single_tile_blocks >= 2 else 0
    tile_blocks = single_tile_blocks // 2 if buffer_open else single_tile_blocks

    block_dim = min(cores, blocks)
    every, tail_block_num = divmod(blocks, block_dim)

    def split(core_blocks):
        tiles = -(-core_blocks // tile_blocks)
        return tiles, (core_blocks - (tiles - 1) * tile_blocks) * BLOCK_ELEMS

    small_tiles, small_tail = split(every)
    big_tiles, big_tail = split(every + 1)
    td = AddOneTilingData(
        smallCoreDataNum=every * BLOCK_ELEMS, bigCoreDataNum=(every + 1) * BLOCK_ELEMS,
        finalBigTileNum=big_tiles, finalSmallTileNum=small_tiles, tileDataNum=tile_blocks * BLOCK_ELEMS,
        smallTailDataNum=small_tail, bigTailDataNum=big_tail, tailBlockNum=tail_block_num,
        bufferOpen=buffer_open)
    return TilingResult(td, block_dim, 0, plat.GetLibApiWorkSpaceSize(), ub, cores, plat.name)
