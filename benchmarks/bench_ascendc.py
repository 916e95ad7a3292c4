"""The instruction layer's cost inside a kernel (docs/contributing/numba_rules.md §3.1 probe).

SignBitsUnpack f32 on the 910B tile of 2368 input bytes: the faithful stages (DataCopy in, Duplicate, Select in
place, DataCopy out) against a fused loop that writes the outputs directly. The faithful form writes the UB tile
before copying it, so about 2-3x the fused loop is expected; regressions measured while writing the layer were a
branchy in-place Select (11x), a per-element mask byte index (4x) and loops inlined over UB views (2.8x on Select).
"""

import numpy as np
from numba import njit

from npu_emu.ascendc import VSEL_TENSOR_SCALAR_MODE, DataCopy, Duplicate, Select

from .common import best_seconds

TILE = 2368
UB_BYTES = 196352
N = 400 * TILE                                   # ~0.9 MiB in, 30 MiB out


@njit(cache=True, error_model="numpy")
def _fused(x, y):
    for j in range(len(x)):
        b = x[j]
        for k in range(8):
            y[8 * j + k] = np.float32(1.0) if (b >> k) & 1 else np.float32(-1.0)


@njit(cache=True, error_model="numpy")
def _faithful(x, y, ub):
    in_ub = ub[:TILE]
    out_ub = ub[4096:4096 + 4 * 8 * TILE].view(np.float32)
    for t in range(len(x) // TILE):
        off = t * TILE
        DataCopy(in_ub, x[off:], TILE)
        Duplicate(out_ub, np.float32(1.0), 8 * TILE)
        Select(out_ub, in_ub, out_ub, np.float32(-1.0), VSEL_TENSOR_SCALAR_MODE, 8 * TILE)
        DataCopy(y[8 * off:], out_ub, 8 * TILE)


class TileLoop:
    timeout = 300

    def setup(self):
        self.x = np.random.default_rng(18).integers(0, 256, N, dtype=np.uint8)
        self.y_fused = np.empty(8 * N, np.float32)
        self.y_faithful = np.empty(8 * N, np.float32)
        self.ub = np.zeros(UB_BYTES, np.uint8)
        _fused(self.x, self.y_fused)
        _faithful(self.x, self.y_faithful, self.ub)
        if not np.array_equal(self.y_fused.view(np.uint32), self.y_faithful.view(np.uint32)):
            raise AssertionError("faithful and fused tile loops differ")

    def time_fused(self):
        _fused(self.x, self.y_fused)

    def time_faithful(self):
        _faithful(self.x, self.y_faithful, self.ub)

    def track_faithful_over_fused(self):
        return (best_seconds(lambda: _faithful(self.x, self.y_faithful, self.ub))
                / best_seconds(lambda: _fused(self.x, self.y_fused)))
    track_faithful_over_fused.unit = "x fused time"
