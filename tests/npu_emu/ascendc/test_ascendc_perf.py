"""Speed guard for the instruction-level kernel structure (numba_rules.md §3.1 probe), marked slow.

SignBitsUnpack f32 on the 910B tile of 2368 input bytes: the faithful stages (DataCopy in, Duplicate, Select in
place, DataCopy out) against a fused loop that writes the outputs directly. The faithful form writes the UB tile
before copying it, so it is expected to cost about 2-3x the fused loop; the guard is generous (timings on a shared
2-core machine are noisy) but catches the regressions measured while writing the layer: a branchy in-place Select
(11x), a per-element mask byte index (4x over the faithful form), loops inlined over UB views (2.8x on Select).
"""

import time

import numpy as np
import pytest
from numba import njit

from npu_emu.ascendc import VSEL_TENSOR_SCALAR_MODE, DataCopy, Duplicate, Select

TILE = 2368
UB_BYTES = 196352


@njit(cache=True, error_model="numpy")
def fused(x, y):
    for j in range(len(x)):
        b = x[j]
        for k in range(8):
            y[8 * j + k] = np.float32(1.0) if (b >> k) & 1 else np.float32(-1.0)


@njit(cache=True, error_model="numpy")
def faithful(x, y, ub):
    in_ub = ub[:TILE]
    out_ub = ub[4096:4096 + 4 * 8 * TILE].view(np.float32)
    for t in range(len(x) // TILE):
        off = t * TILE
        DataCopy(in_ub, x[off:], TILE)
        Duplicate(out_ub, np.float32(1.0), 8 * TILE)
        Select(out_ub, in_ub, out_ub, np.float32(-1.0), VSEL_TENSOR_SCALAR_MODE, 8 * TILE)
        DataCopy(y[8 * off:], out_ub, 8 * TILE)


def best_of(fn, *args, reps=15):
    fn(*args)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


@pytest.mark.slow
def test_faithful_tile_loop_stays_close_to_fused():
    n = 400 * TILE                                   # ~0.9 MiB in, 30 MiB out
    x = np.random.default_rng(18).integers(0, 256, n, dtype=np.uint8)
    y_fused = np.empty(8 * n, np.float32)
    y_faithful = np.empty(8 * n, np.float32)
    ub = np.zeros(UB_BYTES, np.uint8)
    t_fused = best_of(fused, x, y_fused)
    t_faithful = best_of(faithful, x, y_faithful, ub)
    assert np.array_equal(y_fused.view(np.uint32), y_faithful.view(np.uint32))
    assert t_faithful < 5.0 * t_fused, (t_faithful, t_fused)
