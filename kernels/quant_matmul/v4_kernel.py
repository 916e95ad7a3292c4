"""Per-core kernels of the QuantBatchMatmulV4 modes (docs/ops/quant_matmul.md §7.4, §7.7, §7.8, §10).

Each kernel is one k-group step (or the final combine) of a V4 mix kernel: ``for core in prange(block_dim)`` the
core walks its base blocks ``core, core + blockDim, ...`` (kernel._block, the order of tiling.block_coords), read
from the V4 TilingData struct of its template (v4_tiling.py: the MSD struct, the A2 per-block struct, the 950
BasicAPI struct or the V3 struct of the per-group kernels; :func:`_v4_walk` turns each into the shared walk), and
applies the AIV vector chain of that step to its block's rows. The cube's int32 block result for the group
arrives as ``part`` (float32 holding exact integers: the GM workspace after the int32 -> fp32 CAST_RINT, exact
below 2^24, which every V4 group size guarantees). Blocks own disjoint output rectangles, so nothing depends on
the thread count or the core split.

* :func:`perblock_step_kernel` - int8 G-B, one 128-wide k block (block_epilogue_pertile.h on 950,
  quant_batch_matmul_v4_perblock.h on A2/A3; ``cfg`` selects the accumulator start).
* :func:`a4w4_group_kernel` - A4W4 asymmetric K-G, one 256-wide k group (quant_batch_matmul_v4_pergroup.h).
* :func:`msd_group_kernel` - A8W4 MSD, one k group: Fixpipe fp32 -> fp16 and the fp16 atomic add into the
  workspace (quant_batch_matmul_v4_msd.h).
* :func:`msd_combine_kernel` - A8W4 MSD, the AIV combine ``16·H + L + yOffset`` per token.
The final ``·x1Scale`` / ``+bias`` and the output cast are launch.qbmm_epilogue_kernel (the same vector chain).

The default (fast) path runs the same per-element chains fused over several k groups: ``*_fused_kernel`` take the
cube results of groups ``j0 .. j0 + gb - 1`` at once (``parts`` (gb, rows, N)) and walk independent output tiles
(one row x up to ``FUSED_COLS`` columns) in prange, applying the groups to each tile in ascending k order while the
tile stays in L1 - every element sees exactly the operations, operands and order of the per-group step kernels
(those stay as the ``faithful=True`` path; tests prove the two bit-identical). What changes is only memory
traffic: the accumulator is read and written once per batch of groups instead of once per group.
"""

import numpy as np
from numba import njit, prange
from numba.extending import overload

from npu_emu.dtypes import scalar
from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.quant_matmul.kernel import _block, _cdiv, _walk

# cfg of perblock_step_kernel
PB_J, PB_G, PB_BIAS_FIRST, PB_LEN = 0, 1, 2, 3
# cfg of msd_group_kernel
MSD_RMODE, MSD_SAT, MSD_LEN = 0, 1, 2


# ---- the block walk of each V4 struct -----------------------------------------------------------------------------
# geo = (M, N, baseM, baseN, mTileCntL2, nTileCntL2, mTileBlock, nTileBlock, calOrder), as kernel._walk returns it.
# Not IR inlines, for the reason kernel._walk gives.

@njit(cache=True, error_model="numpy")
def _walk_perblock_a2(td):
    """QuantBatchMatmulV4PerblockTilingData: 2-D, the L2 tiles of tileL2cacheTiling."""
    cube = td.matmulTiling
    l2 = td.tileL2cacheTiling
    geo = (cube.M, cube.N, cube.baseM, cube.baseN, l2.mTileCntL2, l2.nTileCntL2, l2.mTileBlock, l2.nTileBlock,
           l2.calOrder)
    return geo, _cdiv(cube.M, cube.baseM) * _cdiv(cube.N, cube.baseN)


@njit(cache=True, error_model="numpy")
def _walk_basic_api(td):
    """QuantBatchMatmulV3BasicAPITilingData (950 per-tile): one L2 tile, blocks row-major (the sliding-window order
    is not reproduced; blocks are disjoint, so the order changes no value)."""
    cube = td.matmulTiling
    m_cnt = _cdiv(cube.m, cube.baseM)
    n_cnt = _cdiv(cube.n, cube.baseN)
    one = np.int64(1)
    geo = (cube.m, cube.n, cube.baseM, cube.baseN, one, one, m_cnt, n_cnt, np.int64(0))
    return geo, td.params.batchC * m_cnt * n_cnt


@njit(cache=True, error_model="numpy")
def _walk_msd(td, tokens):
    """QuantBatchMatmulV4MsdTilingData (quant_batch_matmul_v4_msd.h Process: block i -> (i / nBlocks, i % nBlocks)
    over the 2m-row hi/lo matrix in baseM x baseN blocks). ``tokens``: the same blocks over the m output rows
    (baseM / 2 tokens each, what a block's AIV combine writes)."""
    cube = td.matmulTiling
    rows = td.mSize if tokens else 2 * td.mSize
    base_m = cube.baseM // 2 if tokens else cube.baseM
    m_cnt = _cdiv(rows, base_m)
    n_cnt = _cdiv(td.nSize, cube.baseN)
    one = np.int64(1)
    geo = (rows, td.nSize, base_m, cube.baseN, one, one, m_cnt, n_cnt, np.int64(0))
    return geo, m_cnt * n_cnt


def _v4_walk(td):
    """(geo, total) of the V4 struct ``td`` (njit only; dispatched on the struct's members at compile time)."""
    raise NotImplementedError("_v4_walk runs inside njit kernels only")


@overload(_v4_walk)
def _v4_walk_impl(td):
    names = getattr(td, "fields", ())
    if "mSize" in names and "parallNum" in names:
        return lambda td: _walk_msd(td, False)
    if "tileL2cacheTiling" in names and "params" in names:
        return lambda td: _walk(td)
    if "tileL2cacheTiling" in names:
        return lambda td: _walk_perblock_a2(td)
    if "params" in names and "adaptiveSlidingWin" in names:
        return lambda td: _walk_basic_api(td)
    return None


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def perblock_step_kernel(block_dim, td, ub_size, part, x1s, x2s, bias, acc, cfg):
    """k block j: s = f32(x1s[row, j]·x2s[j, col]); p = f32(part·s); acc = f32(p + acc).

    The 950 order starts with acc = p (j = 0) and adds the bias after the last block (in the epilogue); the A2/A3
    order (cfg[PB_BIAS_FIRST]) starts the UB accumulator at the bias (0 without one) and adds every p to it.
    part, acc flat (M, N); x1s flat (M, G); x2s flat (G, N), the per-column view of the (G, ⌈N/gsN⌉) scales
    (the host repeats each gsN times, so the vector Mul reads one scale per column); bias (N,) or empty.
    """
    j = cfg[PB_J]
    g = cfg[PB_G]
    bias_first = cfg[PB_BIAS_FIRST] != 0
    has_bias = bias.size > 0
    geo, total = _v4_walk(td)
    n = geo[1]
    for core in prange(block_dim):
        for idx in range(np.int64(core), total, block_dim):
            b, r0, rows, c0, cols = _block(geo, idx)
            for i in range(rows):
                row = r0 + i
                s_a = x1s[row * g + j]
                base = row * n
                sb = j * n
                if j == 0 and bias_first:                       # Duplicate / DataCopy of the start value
                    for c in range(c0, c0 + cols):
                        acc[base + c] = bias[c] if has_bias else np.float32(0.0)
                if j == 0 and not bias_first:
                    for c in range(c0, c0 + cols):
                        acc[base + c] = part[base + c] * (s_a * x2s[sb + c])
                else:
                    for c in range(c0, c0 + cols):
                        acc[base + c] = part[base + c] * (s_a * x2s[sb + c]) + acc[base + c]


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def a4w4_group_kernel(block_dim, td, ub_size, part, rowsum, x2off, x2s, acc, cfg):
    """k group g: off = f32(x2Offset·rowsum); t = f32(mm − off); t = f32(x2Scale·t); acc = f32(t + acc).

    part, acc flat (M, N) (acc starts at 0.0: the kernel's Duplicate before the group loop); rowsum (M,) float32
    (exact small integers); x2off (N,) float32 (widened from fp16, exact); x2s (N,); cfg unused (kept for the
    launch signature).
    """
    geo, total = _v4_walk(td)
    n = geo[1]
    for core in prange(block_dim):
        for idx in range(np.int64(core), total, block_dim):
            b, r0, rows, c0, cols = _block(geo, idx)
            for i in range(rows):
                row = r0 + i
                rs = rowsum[row]
                base = row * n
                for c in range(c0, c0 + cols):
                    off = x2off[c] * rs
                    t = part[base + c] - off
                    t = x2s[c] * t
                    acc[base + c] = t + acc[base + c]


FUSED_COLS = 512      # columns of one fused-kernel tile: a row chunk of acc (2 KiB) stays in L1 across the groups


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def perblock_fused_kernel(parts, j0, x1s, x2s, bias, bias_first, acc):
    """perblock_step_kernel for k blocks j0 .. j0 + gb - 1 in one pass: parts (gb, M, N); x1s (M, G); x2s (G, N);
    bias (N,) or empty; acc (M, N), set at block 0 (the bias / 0.0 start value on A2/A3, p_0 on 950).
    (1-D row views in the inner loops: 2-D indexing there does not vectorise.)"""
    gb, m, n = parts.shape
    has_bias = bias.size > 0
    nch = (n + FUSED_COLS - 1) // FUSED_COLS
    for t in prange(m * nch):
        row = t // nch
        c0 = (t % nch) * FUSED_COLS
        w = min(n - c0, FUSED_COLS)
        ar = acc[row, c0:c0 + w]
        for jj in range(gb):
            j = j0 + jj
            s_a = x1s[row, j]
            pr = parts[jj, row, c0:c0 + w]
            xr = x2s[j, c0:c0 + w]
            if j == 0 and bias_first:                           # Duplicate / DataCopy of the start value
                for c in range(w):
                    ar[c] = bias[c0 + c] if has_bias else np.float32(0.0)
            if j == 0 and not bias_first:
                for c in range(w):
                    ar[c] = pr[c] * (s_a * xr[c])
            else:
                for c in range(w):
                    ar[c] = pr[c] * (s_a * xr[c]) + ar[c]


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def a4w4_fused_kernel(parts, j0, rowsum, x2off, x2s, acc):
    """a4w4_group_kernel for k groups j0 .. j0 + gb - 1 in one pass: parts (gb, M, N); rowsum (G, M); x2off and
    x2s (G, N); acc (M, N), zeroed by the host before group 0 (the kernel's Duplicate)."""
    gb, m, n = parts.shape
    nch = (n + FUSED_COLS - 1) // FUSED_COLS
    for t in prange(m * nch):
        row = t // nch
        c0 = (t % nch) * FUSED_COLS
        w = min(n - c0, FUSED_COLS)
        ar = acc[row, c0:c0 + w]
        for jj in range(gb):
            j = j0 + jj
            rs = rowsum[j, row]
            pr = parts[jj, row, c0:c0 + w]
            orow = x2off[j, c0:c0 + w]
            srow = x2s[j, c0:c0 + w]
            for c in range(w):
                off = orow[c] * rs
                tv = pr[c] - off
                tv = srow[c] * tv
                ar[c] = tv + ar[c]


@njit(inline="always", cache=True, error_model="numpy")
def _fixpipe_f16_add(ws_val, v, rmode, sat):
    """The Fixpipe cast of one fp32 value to fp16, then the fp16 atomic add onto the workspace value (the sum of
    two fp16 values is exact in fp32, so one RNE rounding is the fp16 add)."""
    h = scalar.f32_to_f16(v, rmode, sat)
    return scalar.f32_to_f16(scalar.f16_to_f32(ws_val) + scalar.f16_to_f32(h), scalar.CAST_RINT, False)


@njit(inline="always", cache=True, error_model="numpy")
def _msd_group_core(core, block_dim, geo, total, part, s2, ws, rmode, sat):
    """msd_group_kernel's work of one core. Inlined, so that the constant mode of the _rint kernels reaches the
    element loop and it vectorises."""
    n = geo[1]
    for idx in range(np.int64(core), total, block_dim):
        b, r0, rows, c0, cols = _block(geo, idx)
        for i in range(rows):
            base = (r0 + i) * n
            for c in range(c0, c0 + cols):
                ws[base + c] = _fixpipe_f16_add(ws[base + c], part[base + c] * s2[c], rmode, sat)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def msd_group_kernel(block_dim, td, ub_size, part, s2, ws, cfg):
    """k group g of the 2m-row hi/lo matrix: ws = fp16(ws + fp16(f32(part·t19(x2Scale[g, n])))).

    part flat (2M, N) float32 exact integers; s2 (N,) the FP19 scales of group g; ws flat (2M, N) uint16 fp16
    bits (zeroed before the first group). Any Fixpipe round mode (cfg); the default one, CAST_RINT without
    saturation, takes msd_group_kernel_rint: a kernel holding both loops compiled both (cold A8W4 MSD call)."""
    rmode = cfg[MSD_RMODE]
    sat = cfg[MSD_SAT] != 0
    geo, total = _walk_msd(td, False)
    for core in prange(block_dim):
        _msd_group_core(core, block_dim, geo, total, part, s2, ws, rmode, sat)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def msd_group_kernel_rint(block_dim, td, ub_size, part, s2, ws, cfg):
    """msd_group_kernel for CAST_RINT without saturation (``cfg`` unread: the launch signature of the other)."""
    geo, total = _walk_msd(td, False)
    for core in prange(block_dim):
        _msd_group_core(core, block_dim, geo, total, part, s2, ws, scalar.CAST_RINT, False)


@njit(inline="always", cache=True, error_model="numpy")
def _msd_fused_tile(parts, j0, s2, ws, t, nch, rmode, sat):
    """msd_fused_kernel's output tile t (one row x up to FUSED_COLS columns), groups in ascending k order."""
    gb, rows, n = parts.shape
    row = t // nch
    c0 = (t % nch) * FUSED_COLS
    w = min(n - c0, FUSED_COLS)
    wr = ws[row, c0:c0 + w]
    for jj in range(gb):
        pr = parts[jj, row, c0:c0 + w]
        sr = s2[j0 + jj, c0:c0 + w]
        for c in range(w):
            wr[c] = _fixpipe_f16_add(wr[c], pr[c] * sr[c], rmode, sat)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def msd_fused_kernel(parts, j0, s2, ws, cfg):
    """msd_group_kernel for k groups j0 .. j0 + gb - 1 in one pass: parts (gb, 2M, N); s2 (G, N); ws (2M, N) fp16
    bits (zeroed before group 0). Any round mode; msd_fused_kernel_rint for the default one."""
    rows, n = parts.shape[1], parts.shape[2]
    rmode = cfg[MSD_RMODE]
    sat = cfg[MSD_SAT] != 0
    nch = (n + FUSED_COLS - 1) // FUSED_COLS
    for t in prange(rows * nch):
        _msd_fused_tile(parts, j0, s2, ws, t, nch, rmode, sat)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def msd_fused_kernel_rint(parts, j0, s2, ws, cfg):
    """msd_fused_kernel for CAST_RINT without saturation (``cfg`` unread)."""
    rows, n = parts.shape[1], parts.shape[2]
    nch = (n + FUSED_COLS - 1) // FUSED_COLS
    for t in prange(rows * nch):
        _msd_fused_tile(parts, j0, s2, ws, t, nch, scalar.CAST_RINT, False)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def msd_combine_kernel(block_dim, td, ub_size, ws, y_offset, y):
    """Per token t: y[t, n] = f32(f32(f32(16·H) + L) + yOffset[n]), H = ws row 2t, L = ws row 2t + 1.

    Walks the MSD struct's blocks over the m tokens; ws flat (2M, N) uint16; y flat (M, N) float32."""
    geo, total = _walk_msd(td, True)
    n = geo[1]
    for core in prange(block_dim):
        for idx in range(np.int64(core), total, block_dim):
            b, r0, rows, c0, cols = _block(geo, idx)
            for i in range(rows):
                t = r0 + i
                hb = 2 * t * n
                lb = hb + n
                for c in range(c0, c0 + cols):
                    h = scalar.f16_to_f32(ws[hb + c])
                    lo = scalar.f16_to_f32(ws[lb + c])
                    v = np.float32(16.0) * h
                    v = v + lo
                    y[t * n + c] = v + y_offset[c]
