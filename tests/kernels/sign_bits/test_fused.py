"""The fused 910B unpack kernel against the faithful one (UB stages tile by tile), bit for bit, on every branch of
the host tiling: one core, big and small cores, a tail tile, single and double buffer, and a length that is not a
multiple of the 64-byte block (its padding is a GM overrun the kernel must not perform)."""

import numpy as np
import pytest

from npu_emu.kernels.sign_bits import golden as golden
from npu_emu.kernels.sign_bits import kernel, tiling

CASES = [  # (n, core_num, ub_size): which branch of docs/ops/sign_bits.md §2 each one takes is asserted below
    (64, None, None),                # one block: one core, one tile
    (100, None, None),               # padded tail block
    (5 * 64 + 17, 3, None),          # big and small cores
    (48 * 4096 + 1000, None, None),  # all cores, tails
    (200_000, 4, 16384),             # small UB: many tiles per core, double buffer
    (3000, 4, 65536),                # little data for the UB: single buffer, several cores
]


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("n, core_num, ub_size", CASES)
def test_fused_equals_faithful(n, core_num, ub_size, dtype):
    x = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    tr = tiling.unpack_tiling(n, dtype, core_num=core_num, ub_size=ub_size)
    out = np.float16 if dtype == "float16" else np.float32
    ys = []
    for faithful in (True, False):
        y = np.full(8 * n, 7, out)                     # a value neither kernel writes
        kernel.run_unpack(x, y, tr, "910b", faithful=faithful)
        ys.append(y.view(np.uint16 if dtype == "float16" else np.uint32))
    np.testing.assert_array_equal(ys[0], ys[1])
    np.testing.assert_array_equal(ys[1], golden.sign_bits_unpack(x, 1, dtype).reshape(-1).view(ys[1].dtype))


def test_cases_reach_every_branch():
    trs = [tiling.unpack_tiling(n, "float32", core_num=c, ub_size=u) for n, c, u in CASES]
    tds = [t.tiling for t in trs]
    assert any(t.block_dim == 1 for t in trs) and any(t.block_dim > 1 for t in trs)
    assert any(td.tailBlockNum > 0 for td in tds) and any(td.bigCoreDataNum != td.smallCoreDataNum for td in tds)
    assert {td.bufferOpen for td in tds} == {0, 1}
    assert any(td.finalBigTileNum > 1 or td.finalSmallTileNum > 1 for td in tds)
