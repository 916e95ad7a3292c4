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

MindSpeed's call (BF16 input, rint, OCP scales: M_FAST) takes the fused walk instead (``FUSED``, _fused_slice): the
group in slices of up to SLICE columns (whole rows at MindSpeed's sizes: one contiguous run of x), one pass loading
each 32-element chunk once for both axes' maxima, the codes and shifts from a table, a second casting each chunk for
both axes while the slice is in L2, through the same 16-bit vector forms and FP32 loops of kernels/mx_quant; x is
read from memory once (docs/ops/dynamic_mx_quant_with_dual_axis.md §6).

Specialised like kernels/mx_quant/kernel.py: ``DST`` (D_* kind), ``MODE`` (M_FAST / M_HALF / M_ELEMENT) and
``FUSED`` are constants of each copy, loaded by :func:`device`, so a call compiles one format and one walk. Cores
write disjoint GM ranges.
"""

import numpy as np
from numba import prange

from npu_emu.device.jit_options import PARALLEL
from npu_emu.dtypes.scalar import u32_as_f32
from npu_emu.dtypes.vector import (
    LANES,
    bf16_masked_max32_acc,
    e1m2_pow2_dual32,
    e2m1_pow2_dual32,
    e4m3_pow2_dual32,
    e4m3_pow2_full_cols32,
    e5m2_pow2_dual32,
    e5m2_pow2_full_cols32,
)
from npu_emu.kernels.mx_quant import kernel as mx_kernel
from npu_emu.kernels.mx_quant import launch as mx_launch
from npu_emu.kernels.mx_quant.common import D_E1M2, D_E2M1, D_E4M3, D_E5M2, EMAX_OF, P_LEGACY, _0, _1, _copy_in, \
    _copy_out, _ocp_code_recip
from npu_emu.device.specialize import const, load, njit

_FN = dict(cache=True, error_model="numpy")
# _segment and _core have one call site each: inlined, so that LLVM does not optimise them once more on their own
# (each non-inlined function is optimised again, with what it calls, by its caller). _core inlined: the FP4
# scale_alg 2 first call 11.24 -> 10.74 s (wrappers' passes skipped, their machine code kept), same kernel speed;
# numba then hoists _core's scratch allocations out of the prange: once per thread, not once per core
_INL = dict(inline="always", cache=True, error_model="numpy")

# read every switch before loading the mx_quant copy (a nested load resets the switches of this one)
DST = const("DST")
MODE = const("MODE")
FUSED = bool(const("FUSED", False))
OCP = bool(const("OCP", True))      # False: scale_alg 1 / 2, never the OCP scales (mx_quant's OCP_SCALES)
FAITHFUL = MODE == mx_kernel.M_FAITHFUL
FP4 = DST is not None and DST >= D_E2M1
# the fused walk calls mx_quant's FP32 loops only in their per-column form (a row block's reciprocal repeated per
# lane), so it loads the column-walk copy: _fp32_rows compiles one loop instead of two (and is the copy
# GroupedDynamicMxQuant compiles); the per-axis walks need both walks' helpers
# (blocks are always BLOCK long: the tiling's blockSize is checked against it before a launch; the fused walk's
# column copy is GroupedDynamicMxQuant's, whose calls compile it once for both ops)
_MX = (mx_launch.device(DST, MODE, mx_kernel.W_COLS if FUSED else mx_kernel.W_ANY, ocp=OCP, no16=not FUSED)
       if DST is not None else None)
_column_blocks = _MX._column_blocks if _MX is not None else None
_row_blocks = _MX._row_blocks if _MX is not None else None
_fp32_rows = _MX._fp32_rows if _MX is not None else None
_pow2_shift = _MX._pow2_shift if _MX is not None else None
EM = EMAX_OF[DST] if DST is not None else 0
BLOCK = 32
# columns of one slice of the fused walk: a 32-row group of a whole row of up to 8192 columns (at most 512 KiB of
# BF16, one core's L2 on the reference host) is one contiguous run of x, read at the memory's streaming rate, and
# stays near the core between the maxima pass and the casts of both axes. E4M3 [8192, 7168], warm outputs, one
# thread: 41 ms against 47 ms with 1024-column slices (32 rows of 2 KiB pieces 14 KiB apart)
SLICE = 8192
SLICE_CHUNKS = SLICE // LANES
YCHUNK = LANES // 2 if FP4 else LANES          # y bytes of one 32-element chunk


def device(dst, mode, fused=False, ocp=True):
    """This module specialised for output kind ``dst`` (D_*), path ``mode`` (mx_quant's M_FAST / M_HALF /
    M_ELEMENT) and ``fused`` (the one-pass OCP walk of M_FAST, :func:`_fused_slice`; only its code compiles);
    ``ocp=False``: no call of this copy uses the OCP scale algorithm."""
    if dst not in (D_E4M3, D_E5M2, D_E2M1, D_E1M2) or mode not in (mx_kernel.M_FAST, mx_kernel.M_HALF,
                                                                     mx_kernel.M_ELEMENT, mx_kernel.M_FAITHFUL):
        raise ValueError(f"no dual-axis MX kernel for dst={dst!r}, mode={mode!r}")
    if fused and mode != mx_kernel.M_FAST:
        raise ValueError("the fused dual-axis walk is M_FAST's")
    extra = {} if ocp else {"OCP": 0}
    return load(__name__.split("[")[0], DST=int(dst), MODE=int(mode), FUSED=int(bool(fused)), **extra)


@njit(**_FN)
def _ocp_table(legacy, tab):
    """What the fused walk needs of an OCP block, by its statistic e (the maximum biased exponent, 0 .. 255), from
    _ocp_code_recip and _pow2_shift: tab[e] the scale code, tab[256 + e] the shift of its reciprocal, tab[512 + e]
    whether the 16-bit forms take it. Three loads per block instead of the scale arithmetic, which costs more than
    the block's maximum."""
    for e in range(256):
        code, rb = _ocp_code_recip(np.int64(e), EM, legacy)
        d, ok = _pow2_shift(u32_as_f32(np.uint32(rb << 16)))
        tab[e] = code
        tab[256 + e] = d
        tab[512 + e] = ok


@njit(**_INL)
def _fill(a, n, v):
    for t in range(n):
        a[t] = v


@njit(**_FN)
def _fp32_chunk(xs, i, y1, y2, j, k, e1, col_ok, cmax, recips, r1, legacy):
    """A chunk of _fused_slice with a block the 16-bit forms do not take on either axis (zero, Inf/NaN, extreme):
    both axes through the FP32 loops, which take every reciprocal (y2: columns k .. k + 31's reciprocals, formed
    here unless the slice already holds them, ``col_ok`` False; y1: the row block's, statistic e1). A function of
    its own: in the chunk loop it cost the common chunks 5 ms (E4M3 benchmark) and a second copy of the vector
    forms there cost cold compile time."""
    if col_ok:
        for l in range(k, k + LANES):
            recips[l] = u32_as_f32(np.uint32(_ocp_code_recip(np.int64(cmax[l]) >> 7, EM, legacy)[1] << 16))
    _fp32_rows(xs, i, _0, _0, _1, np.int64(LANES), recips[k:], _0, _1, y2, j, _0)
    _fill(r1, LANES, u32_as_f32(np.uint32(_ocp_code_recip(e1, EM, legacy)[1] << 16)))
    _fp32_rows(xs, i, _0, _0, _1, np.int64(LANES), r1, _0, _1, y1, j, _0)


@njit(**_FN)
def _fused_slice(xs, xb, n, nr, w, y1, y2, yb, ystride, s1, s1b, s1stride, s2, s2b, slot, legacy, tab, cmax, dcol,
                 cok, recips, r1, ddv, st16):
    """``nr`` (<= 32) rows x ``w`` (<= SLICE) columns from xs[xb] (row stride n) of BF16 input with OCP scales, both
    axes in two passes over the slice while it is in L2 (M_FAST, ``FUSED``). The first loads each 32-element chunk
    once and folds it into both maxima (bf16_masked_max32_acc: the row chunk's block maximum for axis -1, the column
    maxima for axis -2); the column codes and shifts follow from the table ``tab`` (_ocp_table). The second casts
    each chunk for both axes from one load (*_pow2_dual32): y2 with one shift per column in the full form, y1 with
    its row block's shift (FP8: the normal-only form, the chunk formed again by the full form when it flags a lane).
    A chunk with a reciprocal those forms do not take on either axis (zero, Inf/NaN and extreme blocks), and the
    tail of fewer than 32 columns, go through mx_quant's FP32 loops (_fp32_rows) on both axes. The arithmetic is
    that of _column_blocks + _row_blocks on M_FAST (the same helpers; tests/kernels/dynamic_mx_quant_with_dual_axis
    compare both walks). Row r's codes: mxscale1 from s1[s1b + r * s1stride], mxscale2 of column j at
    s2[s2b + 2 * j + slot]; y rows from yb, ystride apart (FP4
    packed). st16 holds the row chunks' maxima, SLICE_CHUNKS + 1 a row (the tail chunk included)."""
    nch = w // LANES
    wt = w - nch * LANES
    rp = SLICE_CHUNKS + 1
    mask = np.uint16(0x7F80)
    for j in range(w):
        cmax[j] = 0
    for r in range(nr):
        row = xb + r * n
        for c in range(nch):
            st16[r * rp + c] = bf16_masked_max32_acc(xs, row + c * LANES, cmax, c * LANES, mask)
        if wt > 0:
            m = np.uint16(0)
            for i in range(nch * LANES, w):
                v = np.uint16(xs[row + i] & mask)
                cmax[i] = max(v, cmax[i])
                m = max(m, v)
            st16[r * rp + nch] = m
    # the column codes and shifts, and each chunk's verdict: whether the 16-bit forms take all its shifts; then the FP32 reciprocals only where the FP32 loops need them
    for c in range(nch):
        good = np.int16(1)
        for j in range(c * LANES, c * LANES + LANES):
            e = cmax[j] >> 7
            s2[s2b + 2 * j + slot] = np.uint8(tab[e])
            dcol[j] = tab[256 + e]
            good &= tab[512 + e]
        cok[c] = good != 0
    for j in range(nch * LANES, w):
        s2[s2b + 2 * j + slot] = np.uint8(tab[cmax[j] >> 7])
    for c in range(nch + (1 if wt > 0 else 0)):
        if c == nch or not cok[c]:
            for j in range(c * LANES, min(w, c * LANES + LANES)):
                recips[j] = u32_as_f32(np.uint32(_ocp_code_recip(np.int64(cmax[j]) >> 7, EM, legacy)[1] << 16))
    for r in range(nr):
        row = xb + r * n
        yrow = yb + r * ystride
        sr = s1b + r * s1stride
        for c in range(nch):
            i = row + c * LANES
            k = c * LANES
            j = yrow + c * YCHUNK
            e1 = np.int64(st16[r * rp + c]) >> 7
            s1[sr + c] = np.uint8(tab[e1])
            ok = tab[512 + e1] != 0
            dd = tab[256 + e1]
            # y2 in the full form straight away: a column block spans tokens of different magnitudes, so the
            # normal-only form would flag about 30 % of the chunks (the benchmark's data), at random; the branch it
            # then takes and the second form cost more than the full form alone. y1 in the normal-only form (FP8),
            # formed again by the full one in the rare chunk it flags
            if ok and cok[c]:
                if DST == D_E4M3:
                    redo = e4m3_pow2_dual32(xs, i, y1, y2, j, dd, dcol, k)
                elif DST == D_E5M2:
                    redo = e5m2_pow2_dual32(xs, i, y1, y2, j, dd, dcol, k)
                elif DST == D_E2M1:
                    redo = e2m1_pow2_dual32(xs, i, y1, y2, j, dd, dcol, k)
                else:
                    redo = e1m2_pow2_dual32(xs, i, y1, y2, j, dd, dcol, k)
            else:
                redo = False
                _fp32_chunk(xs, i, y1, y2, j, k, e1, cok[c], cmax, recips, r1, legacy)
            if DST == D_E4M3:
                if redo:
                    for t in range(LANES):
                        ddv[t] = dd
                    e4m3_pow2_full_cols32(xs, i, y1, j, ddv, _0)
            elif DST == D_E5M2:
                if redo:
                    for t in range(LANES):
                        ddv[t] = dd
                    e5m2_pow2_full_cols32(xs, i, y1, j, ddv, _0)
        if wt > 0:
            i = row + nch * LANES
            j = yrow + nch * YCHUNK
            e1 = np.int64(st16[r * rp + nch]) >> 7
            s1[sr + nch] = np.uint8(tab[e1])
            _fill(r1, wt, u32_as_f32(np.uint32(_ocp_code_recip(e1, EM, legacy)[1] << 16)))
            _fp32_rows(xs, i, _0, _0, _1, np.int64(wt), recips[nch * LANES:], _0, _1, y2, j, _0)
            _fp32_rows(xs, i, _0, _0, _1, np.int64(wt), r1, _0, _1, y1, j, _0)


@njit(**_FN)
def _staged_task(x_gm, y1_gm, s1_gm, y2_gm, s2_gm, ub_x, ub_y1, ub_y2, ub_s1, ub_s2, x0, y0, s10, s20, n, ystride,
                 s1cols, nrows, ncols, at_end, nblk, last, pad, scr, scr16, recips, todo, p1, p2, r32, mlb32):
    """One task staged through UB as the arch35 kernel does (``faithful=True``): CopyIn of the nrows x ncols x tile
    (DataCopyPad, rows padded to 32 bytes), ComputeAll on the UB tile (per 32-row group: the column blocks to the
    scale2 pair rows, each row's 32-column blocks to the scale1 rows, the MX family's per-element arithmetic), then
    CopyOut of y1, y2, the scale1 row pieces and the scale2 pair rows (DataCopyPad UB -> GM)."""
    bs = np.int64(BLOCK)
    xp = (ncols * 2 + 31) // 32 * 32 // 2                       # UB row pitch of x, in elements
    yb = ncols // 2 if FP4 else ncols                           # y bytes of a row
    yp = (yb + 31) // 32 * 32
    s1b = nblk + pad
    s1p = (s1b + 31) // 32 * 32
    s2w = 2 * ncols
    s2p = (s2w + 31) // 32 * 32
    _copy_in(ub_x, x_gm[x0:], nrows, ncols * 2, (n - ncols) * 2)
    for g0 in range(0, nrows, bs):
        g1 = min(g0 + bs, nrows)
        slot = (g0 // bs) % 2                                   # row0 is a multiple of 64: the group's pair slot
        sb = (g0 // (2 * bs)) * s2p
        _column_blocks(ub_x, _0, xp, g0, g1, ncols, ub_y2, _0, yp, ub_s2, sb, slot, scr, scr16, recips, p2, r32,
                       mlb32)
        if slot == 0 and g1 == nrows and at_end:
            for j in range(ncols):
                ub_s2[sb + 2 * j + 1] = 0
        for r in range(g0, g1):
            _row_blocks(ub_x, r * xp, nblk, bs, last, pad, ub_y1, r * yp, ub_s1, r * s1p, scr, recips, todo, p1, r32,
                        mlb32)
    _copy_out(y1_gm[y0:], ub_y1, nrows, yb, ystride - yb)
    _copy_out(y2_gm[y0:], ub_y2, nrows, yb, ystride - yb)
    _copy_out(s1_gm[s10:], ub_s1, nrows, s1b, s1cols - s1b)
    _copy_out(s2_gm[s20:], ub_s2, (nrows + 2 * bs - 1) // (2 * bs), s2w, 2 * n - s2w)


@njit(**_INL)
def _segment(td, t, cbn, x_gm, y1_gm, s1_gm, y2_gm, s2_gm, scr, scr16, recips, todo, dcol, cok, r1, ddv, st16, tab,
             ub_x, ub_y1, ub_y2, ub_s1, ub_s2, p1, p2, r32, mlb32):
    """ProcessOneLoop of tasks t .. t + cbn - 1, consecutive column blocks of one row block (cbn = 1: one task,
    as the device runs it): the rows in 32-row groups, both axes from each group (``FUSED``: in slices of SLICE
    columns through _fused_slice)."""
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
    legacy = p1[P_LEGACY] != 0
    if FAITHFUL:
        _staged_task(x_gm, y1_gm, s1_gm, y2_gm, s2_gm, ub_x, ub_y1, ub_y2, ub_s1, ub_s2, xbase + row0 * n,
                     ybase + row0 * ystride, (batch * m + row0) * s1cols + c0 // bs,
                     ((batch * s2pairs + row0 // (2 * bs)) * n + c0) * 2, n, ystride, s1cols, nrows, ncols,
                     row0 + nrows == m, nblk, last, pad, scr, scr16, recips, todo, p1, p2, r32, mlb32)
        return
    for g0 in range(row0, row0 + nrows, bs):
        g1 = min(g0 + bs, row0 + nrows)
        grp = g0 // bs
        # -2 axis: one block per column over the group's rows; code of column j to [batch, grp // 2, c0 + j, grp % 2]
        s2b = ((batch * s2pairs + grp // 2) * n + c0) * 2
        if FUSED:
            for cs in range(0, ncols, SLICE):
                _fused_slice(x_gm, xbase + g0 * n + cs, n, g1 - g0, min(SLICE, ncols - cs), y1_gm, y2_gm,
                             ybase + g0 * ystride + (cs // 2 if FP4 else cs), ystride, s1_gm,
                             (batch * m + g0) * s1cols + (c0 + cs) // bs, s1cols, s2_gm, s2b + 2 * cs, grp % 2,
                             legacy, tab, scr16, dcol, cok, recips, r1, ddv, st16)
            for r in range(g0, g1 if pad else g0):
                s1_gm[(batch * m + r) * s1cols + c0 // bs + nblk] = 0
        else:
            _column_blocks(x_gm, xbase, n, g0, g1, ncols, y2_gm, ybase, ystride, s2_gm, s2b, grp % 2, scr, scr16,
                           recips, p2, r32, mlb32)
        if grp % 2 == 0 and g1 == m:
            # the odd last group's pair slot (dimNeg2IsOdd): the device interleaves a stale tmpScale2 row here
            # (undefined); npu-emu writes the documented pad 0x00
            for j in range(ncols):
                s2_gm[s2b + 2 * j + 1] = 0
        if not FUSED:
            # -1 axis: each row's 32-column blocks, codes to [batch, row, c0 / 32 ...] (+ the 0x00 pad of an odd
            # count)
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
    w = SLICE if FUSED else span * td.blockW
    scr = np.empty(0 if FUSED else w, np.int64)
    scr16 = np.empty(w, np.uint16)
    recips = np.empty(w, np.float32)
    todo = np.empty(0 if FUSED else w // td.blockSize, np.int8)
    dcol = np.empty(w if FUSED else 0, np.int16)
    cok = np.empty(SLICE_CHUNKS if FUSED else 0, np.bool_)
    r1 = np.empty(LANES if FUSED else 0, np.float32)     # a row block's reciprocal, once per lane
    ddv = np.empty(LANES if FUSED else 0, np.int16)
    st16 = np.empty(BLOCK * (SLICE_CHUNKS + 1) if FUSED else 0, np.uint16)      # a slice's row chunk maxima
    tab = np.empty(768 if FUSED else 0, np.int16)
    if FUSED:
        _ocp_table(p1[P_LEGACY] != 0, tab)
    # UB of the staged path (FAITHFUL): one task's x tile, y1 / y2 tiles, scale1 rows, scale2 pair rows (32-byte
    # row pitches, as DataCopyPad lays them out; single-buffered: double buffering changes timing, not values)
    hb = td.splitBlockH if FAITHFUL else 0
    ub_x = np.empty(hb * td.blockW, np.uint16)
    ub_y1 = np.empty(hb * td.blockW, np.uint8)
    ub_y2 = np.empty(hb * td.blockW, np.uint8)
    ub_s1 = np.empty(hb * 32, np.uint8)
    ub_s2 = np.empty((hb + 2 * BLOCK - 1) // (2 * BLOCK) * ((2 * td.blockW + 31) // 32 * 32), np.uint8)
    nb1 = td.dimNeg1BlockNum
    t = first
    while t < first + count:
        cbn = min(nb1 - t % nb1, first + count - t, span)
        _segment(td, np.int64(t), np.int64(cbn), x_gm, y1_gm, s1_gm, y2_gm, s2_gm, scr, scr16, recips, todo, dcol,
                 cok, r1, ddv, st16, tab, ub_x, ub_y1, ub_y2, ub_s1, ub_s2, p1, p2, r32, mlb32)
        t += cbn


@njit(parallel=PARALLEL, **_FN)
def dynamic_mx_quant_with_dual_axis_kernel(block_dim, td, merge, x_gm, y1_gm, s1_gm, y2_gm, s2_gm, p1, p2, r32,
                                           mlb32):
    """One prange iteration per core (blockIdx >= usedCoreNum returns at once, so block_dim = usedCoreNum)."""
    for core in prange(block_dim):
        _core(np.int64(core), td, merge, x_gm, y1_gm, s1_gm, y2_gm, s2_gm, p1, p2, r32, mlb32)
