"""Per-core kernel of DynamicMxQuantWithDualAxis (Ascend 950, arch35): device code only.

Transliterates hicann/ops-nn: quant/dynamic_mx_quant_with_dual_axis/op_kernel/arch35/
dynamic_mx_quant_with_dual_axis_base.h. Process: each core walks its contiguous run of tasks (InitParams: head
cores blockPerHeadCore tasks, the others blockPerTailCore); a task index splits into batch, row block of
splitBlockH rows and 256-column block (calcRow / calcCol, the tails dimNeg2Tail / dimNeg1Tail); ComputeAll walks
the task's 32-row groups, and for each group one pass over the rows forms both axes (ComputeScaleOcp /
ComputeScaleCublas / ComputeScaleDynamicDefault / ComputeScaleDynamicCustom: the per-row 32-column block maxima for
mxscale1 and the running per-column maxima for mxscale2; then ComputeYVf: ComputeY1ToFP8 + ComputeY2ToFP8, or
ComputeYBF16ToFP4 / ComputeYFP16ToFP4).

The block arithmetic and the element casts are the MX family's, imported from kernels/mx_quant (its specialised
copy for the same output format and path): ``_column_blocks`` (32 rows x up to 256 columns, one block per column,
the code of column j to mxscale2[..., 2 * j + slot] as the two-row interleave lays it out) and ``_row_blocks`` (one
row's 32-column blocks, an odd count padded with 0x00). The dual kernel's arithmetic differs from DynamicMxQuant's
in two places, both carried by the switch vectors the launcher builds (docs/ops/dynamic_mx_quant_with_dual_axis.md
§4): no tiny-block flush (code 0 with a non-zero maximum keeps the reciprocal 2^127: ``legacy``, and the non-dynamic
zero tests of scale_alg 1 / 2), and the element multiply (y1: BF16 inputs in BF16; y2: FP8 in FP32, FP4 in BF16).

Specialised like kernels/mx_quant/kernel.py: ``DST`` (D_* kind) and ``MODE`` (M_FAST / M_ELEMENT) are constants of
each copy, loaded by :func:`device`. Cores write disjoint GM ranges.
"""

import numpy as np
from numba import prange

from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.mx_quant import kernel as mx_kernel
from npu_emu.kernels.mx_quant import launch as mx_launch
from npu_emu.kernels.mx_quant.common import D_E1M2, D_E2M1, D_E4M3, D_E5M2
from npu_emu.device.specialize import const, load, njit

_INL = dict(inline="always", cache=True, error_model="numpy")
_FN = dict(cache=True, error_model="numpy")

# read every switch before loading the mx_quant copy (a nested load resets the switches of this one)
DST = const("DST")
MODE = const("MODE")
FP4 = DST is not None and DST >= D_E2M1
_MX = mx_launch.device(DST, MODE) if DST is not None else None
_column_blocks = _MX._column_blocks if _MX is not None else None
_row_blocks = _MX._row_blocks if _MX is not None else None
BLOCK = 32


def device(dst, mode):
    """This module specialised for output kind ``dst`` (D_*) and path ``mode`` (mx_quant's M_FAST / M_ELEMENT)."""
    if dst not in (D_E4M3, D_E5M2, D_E2M1, D_E1M2) or mode not in (mx_kernel.M_FAST, mx_kernel.M_ELEMENT):
        raise ValueError(f"no dual-axis MX kernel for dst={dst!r}, mode={mode!r}")
    return load(__name__.split("[")[0], DST=int(dst), MODE=int(mode))


@njit(**_INL)
def _segment(td, t, cbn, x_gm, y1_gm, s1_gm, y2_gm, s2_gm, scr, scr16, recips, todo, p1, p2, r32, mlb32):
    """ProcessOneLoop of tasks t .. t + cbn - 1, consecutive column blocks of one row block (cbn = 1: one task,
    as the device runs it): the rows in 32-row groups, both axes from each group."""
    m, n, bs = td.dimNeg2, td.dimNeg1, td.blockSize
    nb1 = td.dimNeg1BlockNum
    cb = t % nb1
    rb = (t // nb1) % td.dimNeg2SplitBlockNum
    batch = t // td.blockCountPerBatch
    c0 = cb * td.blockW
    ncols = min((cb + cbn) * td.blockW, n) - c0                 # calcCol: dimNeg1Tail in the last column block
    nrows = td.dimNeg2Tail if rb == td.dimNeg2SplitBlockNum - 1 else td.splitBlockH
    row0 = rb * td.splitBlockH
    xbase = batch * m * n + c0                                   # element (row 0 of the batch, column c0)
    ybase = xbase // 2 if FP4 else xbase
    ystride = n // 2 if FP4 else n
    s1cols = td.scale1ColCountPerBatch
    s2pairs = td.scale2RowCountPerBatch // 2
    nblk = (ncols + bs - 1) // bs
    pad = nblk % 2                                               # only the last column block can be odd
    last = ncols - (nblk - 1) * bs
    for g0 in range(row0, row0 + nrows, bs):
        g1 = min(g0 + bs, row0 + nrows)
        grp = g0 // bs
        # -2 axis: one block per column over the group's rows; code of column j to [batch, grp // 2, c0 + j, grp % 2]
        s2b = ((batch * s2pairs + grp // 2) * n + c0) * 2
        _column_blocks(x_gm, xbase, n, g0, g1, ncols, y2_gm, ybase, ystride, s2_gm, s2b, grp % 2, scr, scr16,
                       recips, p2, r32, mlb32)
        if grp % 2 == 0 and g1 == m:
            # the odd last group's pair slot (dimNeg2IsOdd): the device interleaves a stale tmpScale2 row here
            # (undefined); npu-emu writes the documented pad 0x00
            for j in range(ncols):
                s2_gm[s2b + 2 * j + 1] = 0
        # -1 axis: each row's 32-column blocks, codes to [batch, row, c0 / 32 ...] (+ the 0x00 pad of an odd count)
        for r in range(g0, g1):
            _row_blocks(x_gm, xbase + r * n, nblk, bs, last, pad, y1_gm, ybase + r * ystride,
                        s1_gm, (batch * m + r) * s1cols + c0 // bs, scr, recips, todo, p1, r32, mlb32)


@njit(**_INL)
def _core(core, td, merge, x_gm, y1_gm, s1_gm, y2_gm, s2_gm, p1, p2, r32, mlb32):
    """Process(): the core's contiguous run of tasks (InitParams' head / tail split). ``merge`` > 1: up to that
    many of the core's consecutive tasks of one row block run as one segment (the same blocks in fewer and longer
    row pieces; values cannot change, every block is formed from its own 32 elements alone); 1: task by task, as
    the device walks them."""
    if core < td.headCoreNum:
        first, count = core * td.blockPerHeadCore, td.blockPerHeadCore
    else:
        first = td.headCoreNum * td.blockPerHeadCore + (core - td.headCoreNum) * td.blockPerTailCore
        count = td.blockPerTailCore
    span = max(np.int64(1), min(merge, td.dimNeg1BlockNum))
    w = span * td.blockW
    scr = np.empty(w, np.int64)
    scr16 = np.empty(w, np.uint16)
    recips = np.empty(w, np.float32)
    todo = np.empty(w // td.blockSize, np.int8)
    nb1 = td.dimNeg1BlockNum
    t = first
    while t < first + count:
        cbn = min(nb1 - t % nb1, first + count - t, span)
        _segment(td, np.int64(t), np.int64(cbn), x_gm, y1_gm, s1_gm, y2_gm, s2_gm, scr, scr16, recips, todo, p1, p2,
                 r32, mlb32)
        t += cbn


@njit(parallel=PARALLEL, **_FN)
def dynamic_mx_quant_with_dual_axis_kernel(block_dim, td, merge, x_gm, y1_gm, s1_gm, y2_gm, s2_gm, p1, p2, r32,
                                           mlb32):
    """One prange iteration per core (blockIdx >= usedCoreNum returns at once, so block_dim = usedCoreNum)."""
    for core in prange(block_dim):
        _core(np.int64(core), td, merge, x_gm, y1_gm, s1_gm, y2_gm, s2_gm, p1, p2, r32, mlb32)
