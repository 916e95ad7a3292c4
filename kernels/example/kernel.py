"""Per-core kernel of the example op add_one, in the CopyIn / Compute / CopyOut shape of an Ascend C kernel,
and its access pattern for tiling validation.

Each stage is a plain loop here; real ops call the instruction layer (npu_emu.ascendc: DataCopy, Adds, ...).
"""

import numpy as np
from numba import njit, prange

from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.example.tiling import BLOCK_ELEMS, DTYPE, ub_bytes_per_core
from npu_emu.device.launch import ub_view
from npu_emu.device.validate import AccessPattern, tile_ranges


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def add_one_kernel(block_dim, td, ub_size, x_gm, y_gm):
    n = x_gm.size
    buffer_num = 2 if td.bufferOpen else 1
    tile_bytes = td.tileDataNum * 4
    for block_idx in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)                  # this core's UB
        # Init: the first tailBlockNum cores are big (one 32-byte block more).
        if block_idx < td.tailBlockNum:
            core_start = block_idx * td.bigCoreDataNum
            tile_num = td.finalBigTileNum
            tail = td.bigTailDataNum
        else:
            core_start = (block_idx * td.bigCoreDataNum
                          - (td.bigCoreDataNum - td.smallCoreDataNum) * (block_idx - td.tailBlockNum))
            tile_num = td.finalSmallTileNum
            tail = td.smallTailDataNum
        for t in range(tile_num):
            length = td.tileDataNum if t < tile_num - 1 else tail
            gm_off = core_start + t * td.tileDataNum
            # The device copies `length` elements; past n that is the tolerated over-run the access pattern
            # reports. The emulator touches only the elements that exist.
            valid = min(length, n - gm_off)
            slot = t % buffer_num                          # double buffering: timing only, same results
            in_ub = ub_view(ub, slot * tile_bytes, np.float32, length)
            out_ub = ub_view(ub, (buffer_num + slot) * tile_bytes, np.float32, length)
            # CopyIn: DataCopy(inLocal, xGm[gm_off], length)
            for i in range(valid):
                in_ub[i] = x_gm[gm_off + i]
            # Compute: Adds(outLocal, inLocal, 1.0f, length), one IEEE fp32 add per element
            for i in range(valid):
                out_ub[i] = in_ub[i] + np.float32(1.0)
            # CopyOut: DataCopy(yGm[gm_off], outLocal, length)
            for i in range(valid):
                y_gm[gm_off + i] = out_ub[i]


def add_one_access(td, block_dim, n):
    """What the device kernel touches, from the tiling data alone (vectorised over tiles, no kernel run).

    It reads the same fields the kernel reads, so a wrong field shows up as a gap, overlap or bound error.
    """
    c = np.arange(block_dim, dtype=np.int64)
    big = c < td.tailBlockNum
    core_start = np.where(big, c * td.bigCoreDataNum,
                          c * td.bigCoreDataNum - (td.bigCoreDataNum - td.smallCoreDataNum) * (c - td.tailBlockNum))
    tile_num = np.where(big, td.finalBigTileNum, td.finalSmallTileNum)
    tail = np.where(big, td.bigTailDataNum, td.smallTailDataNum)
    core, tile, start, stop = tile_ranges(core_start, tile_num, td.tileDataNum, tail)

    overrun = -(-n // BLOCK_ELEMS) * BLOCK_ELEMS - n      # whole-block DataCopy past the end
    ap = AccessPattern(block_dim)
    ap.gm("x", n, DTYPE, overrun=overrun)                 # in the kernel's argument order
    ap.gm("y", n, DTYPE, output=True, overrun=overrun)
    ap.read("x", core, tile, start, stop)
    ap.write("y", core, tile, start, stop)
    ap.ub(c, -1, ub_bytes_per_core(td))                   # -1: allocated once in Init, for all tiles
    return ap
