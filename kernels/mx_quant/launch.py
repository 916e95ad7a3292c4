"""Host side of GroupedDynamicMxQuant and DynamicMxQuant (docs/ops/mx_quant.md): which specialised copy of kernel.py a
call runs (:func:`device_for`), the GM access patterns of its kernels, the tiling checks numba cannot make, and the
launchers :func:`run_grouped` / :func:`run_dynamic`.

The grouped tile walk is hicann/ops-nn: quant/quant_common/op_kernel/grouped_split_base.h (ProcessBase); the
dynamic one npu-emu's unit decomposition (tiling.py) of quant/dynamic_mx_quant/op_kernel/arch35/.
"""

import numpy as np

from npu_emu.device import memo
from npu_emu.dtypes.scalar import CAST_RINT
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.mx_quant import kernel
from npu_emu.kernels.mx_quant.common import (
    D_E1M2,
    D_E2M1,
    D_E4M3,
    D_E5M2,
    P_DST,
    P_FAITHFUL,
    P_FTZ,
    P_HIGH_FIRST,
    P_RMODE,
    P_SIGNED_ZERO,
    P_XK,
    X_BF16,
    X_F16,
    _tile_table,
)
from npu_emu.kernels.mx_quant.kernel import (
    RUN_CHUNK, M_ELEMENT, M_FAITHFUL, M_FAST, M_HALF, W_ANY, W_COLS, W_ROWS, W_ROWS32,
)
from npu_emu.kernels.mx_quant.tiling import dynamic_ub_bytes, grouped_ub_bytes, unit_ranges
from npu_emu.device.launch import checked_access, launch
from npu_emu.device.read_only import read_only
from npu_emu.device.specialize import load
from npu_emu.device.validate import MAX_BLOCK_DIM, MAX_TILES, AccessPattern


# ---------------------------------------------------------------------------------------------------------------
# the specialised copy of kernel.py a call runs
# ---------------------------------------------------------------------------------------------------------------

def mode_of(p):
    """The M_* path of a switch vector (make_params): with RINT and no switches, M_FAST for BF16 inputs and M_HALF
    for FP16 ones."""
    if p[P_FAITHFUL]:
        return M_FAITHFUL
    plain = (p[P_FTZ] == 0 and p[P_SIGNED_ZERO] != 0 and p[P_HIGH_FIRST] == 0
             and (p[P_DST] < D_E2M1 or p[P_RMODE] == CAST_RINT))
    if plain and p[P_XK] == X_BF16:
        return M_FAST
    if plain and p[P_XK] == X_F16:
        return M_HALF
    return M_ELEMENT


def device(dst, mode, walk=W_ANY, *, ocp=True, no16=False):
    """This module specialised for output kind ``dst`` (D_*), path ``mode`` (M_*) and DynamicMxQuant walk ``walk``
    (W_*): its kernels compile only that format's, that path's and that walk's code. ``ocp=False``: no call uses
    the OCP scale algorithm; ``no16``: the FP32 loops alone, never the 16-bit forms (kernel.OCP_SCALES,
    kernel.NO16)."""
    if (dst not in (D_E4M3, D_E5M2, D_E2M1, D_E1M2) or mode not in (M_FAST, M_ELEMENT, M_FAITHFUL, M_HALF)
            or walk not in (W_ANY, W_ROWS, W_COLS, W_ROWS32)):
        raise ValueError(f"no MX kernel for dst={dst!r}, mode={mode!r}, walk={walk!r}")
    extra = {}
    if not ocp:
        extra["OCP"] = 0
    if no16:
        extra["NO16"] = 1
    return load(kernel.__name__, DST=int(dst), MODE=int(mode), WALK=int(walk), **extra)


def device_for(p, walk=W_ANY):
    """The specialised module a switch vector runs on."""
    return device(int(p[P_DST]), mode_of(p), walk)


# ---------------------------------------------------------------------------------------------------------------
# GroupedDynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

def fused_walk_covers(td, block_dim, params):
    """Whether run_grouped may take kernel.grouped_fused_kernel: not faithful, and the tiles partition x (so that the slab
    walk converts the same blocks once each)."""
    cols_end = (td.blockRowCount - 1) * td.blockRowSize + td.blockRowTailSize
    return (params[P_FAITHFUL] == 0 and td.blockRowCount > 0 and cols_end == td.rowSize
            and 0 < td.blockRowTailSize <= td.blockRowSize and block_dim >= td.usedCoreNum)


def grouped_tile_table(td, group_index, block_dim):
    """All tiles of all cores: int64 array [(core, tile, group, start, size, block in group)]."""
    gi = read_only(np.ascontiguousarray(group_index, np.int32))
    return _tile_table(td.usedCoreNum, block_dim, gi, td.groupNum, td.blockColSize, td.blockRowCount)


def _join_tiles(core, tile, first, count, pitch, width):
    """Tiles one core walks back to back that continue each other's rows (same row count, the next one starting
    where the previous one's first row ends) as one wider tile, as long as the joined rows still fit the pitch
    (so no row of it overlaps the next). The grouped kernel's cores walk 40-odd 128-column tiles of a 64-row
    block in a row: joining them first expands 23x fewer rows (the MoE layer: 917,504 -> 39,936 for x)."""
    if len(count) < 2:
        return core, tile, first, count, width
    join = np.zeros(len(count), bool)
    join[1:] = ((core[1:] == core[:-1]) & (count[1:] == count[:-1]) & (first[1:] == first[:-1] + width[:-1])
                & (width[1:] > 0) & (width[:-1] > 0))
    total = np.add.reduceat(width, np.flatnonzero(~join))
    join &= (total <= pitch)[np.cumsum(~join) - 1]     # a run whose rows would reach past the pitch stays in tiles
    if not join.any():
        return core, tile, first, count, width
    heads = np.flatnonzero(~join)
    return core[heads], tile[heads], first[heads], count[heads], np.add.reduceat(width, heads)


def _expand_rows(core, tile, first, count, pitch, width):
    """Records of ``count`` rows of ``width`` elements, row r starting at first + r * pitch (vectorised), with the
    runs one core touches back to back merged into one record (a core covering whole rows gives one record per
    tile row instead of 64 per tile; overlaps stay visible, as overlapping ranges never merge)."""
    core, tile, first, count, width = _join_tiles(core, tile, first, count, pitch, width)
    reps = np.repeat(np.arange(len(count)), count)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    start = first[reps] + within * pitch
    core, tile, stop = core[reps], tile[reps], start + width[reps]
    if start.size < 2:
        return core, tile, start, stop
    order = np.lexsort((start, core))
    core, tile, start, stop = core[order], tile[order], start[order], stop[order]
    new = np.ones(start.size, bool)
    new[1:] = (core[1:] != core[:-1]) | (start[1:] != stop[:-1])
    heads = np.flatnonzero(new)
    ends = np.append(heads[1:], start.size) - 1
    return core[heads], tile[heads], start[heads], stop[ends]


def grouped_access(td, group_index, m, n, fp4, block_dim):
    """The AccessPattern of the grouped kernel for this tiling and group_index (x, group_index, y, mxscale)."""
    tab = grouped_tile_table(td, group_index, block_dim)
    core, tile, g, start, size, blk = tab.T if len(tab) else (np.empty(0, np.int64),) * 6
    row_idx = blk % td.blockRowCount
    col_idx = blk // td.blockRowCount
    col_count = (size + td.blockColSize - 1) // td.blockColSize
    cols = np.where(row_idx == td.blockRowCount - 1, td.blockRowTailSize, td.blockRowSize)
    rows = np.where(col_idx == col_count - 1, size - (col_count - 1) * td.blockColSize, td.blockColSize)
    x_off = (start + col_idx * td.blockColSize) * n + row_idx * td.blockRowSize
    s_off = (start // 64 + g + col_idx) * n * 2 + row_idx * td.blockRowSize * 2
    ap = AccessPattern(block_dim)
    ap.gm("x", m * n, np.uint16)
    ap.gm("group_index", td.groupNum, np.int32)
    ap.gm("y", m * n // 2 if fp4 else m * n, np.uint8, output=True)
    ap.gm("mxscale", (m // 64 + td.groupNum) * n * 2, np.uint8)
    c, t, a, b = _expand_rows(core, tile, x_off, rows, n, cols)
    ap.read("x", c, t, a, b)
    if fp4:
        c, t, a, b = _expand_rows(core, tile, x_off // 2, rows, n // 2, cols // 2)
    ap.write("y", c, t, a, b)
    ap.write("mxscale", core, tile, s_off, s_off + 2 * cols)
    ap.read("group_index", np.arange(block_dim), np.full(block_dim, -1), 0, td.groupNum)
    ap.ub(np.arange(block_dim), -1, grouped_ub_bytes(td))
    return ap


def run_grouped(x_bits, group_index, y, mxscale, tr, params, r32, *, shape, validate=True):
    """Launch the grouped kernel on flat bit views of x [m, n] (``shape``: the real one, which a user tiling's
    rowSize/colSize must match); returns the validation report's overruns (none expected)."""
    td = tr.tiling
    fp4 = params[P_DST] >= D_E2M1
    m, n = shape
    memo.call(_check_grouped_tiling, td, m, n, tr.ub_size, group_index, validate)
    access = checked_access(("mx_quant.grouped", tr, group_index, m, n, fp4),
                            lambda: grouped_access(td, group_index, m, n, fp4, tr.block_dim), ub_size=tr.ub_size,
                            what="grouped_dynamic_mx_quant tiling") if validate else None

    fused = fused_walk_covers(td, tr.block_dim, params)

    # GroupedDynamicMxQuant quantizes along the rows only: column blocks, the copy without the last-axis loops
    dev = device_for(params, W_COLS)
    params = read_only(params)

    def grouped_dynamic_mx_quant(block_dim, tdn, ub_size, x_gm, gi_gm, y_gm, s_gm):
        if fused:
            dev.grouped_fused_kernel(tdn, x_gm, gi_gm, y_gm, s_gm, params, np.float32(r32))
        else:
            dev.grouped_dynamic_mx_quant_kernel(block_dim, tdn, ub_size, x_gm, gi_gm, y_gm, s_gm, params,
                                                np.float32(r32))

    report = launch(grouped_dynamic_mx_quant, tr.block_dim, td, read_only(x_bits), read_only(group_index), y,
                    mxscale, ub_size=tr.ub_size, access=access, validate=validate)
    return list(report.overruns) if report is not None else []


def _check_grouped_tiling(td, m, n, ub_size, group_index, validate):
    """What the kernel's scratch and UB views rely on, checked even with validate=False (numba does not bounds-check):
    the shape fields match x and groupIndex, 64-row tiles, tile widths a multiple of 16 (the UB row pitch) that fit
    the scratch, and a tile count the tile walk and the validator's tables can hold. With validate=False the column
    tiles must also end inside the rows (the validator reports that, with ranges, otherwise)."""
    problems = []
    if td.rowSize != n or td.colSize != m:
        problems.append(f"rowSize/colSize = {td.rowSize}/{td.colSize} but x is [{m}, {n}]")
    if td.groupNum != len(group_index):
        # the tile walk reads groupIndex[0 .. groupNum - 1]
        problems.append(f"groupNum = {td.groupNum} but groupIndex holds {len(group_index)} groups")
    if not 0 < td.blockRowCount <= max(n, 1):
        problems.append(f"blockRowCount = {td.blockRowCount} column tiles for n = {n} columns: every tile needs at "
                        f"least one column (the host tiling gives ceil(n / blockRowSize))")
    else:
        row_tiles = np.diff(np.concatenate(([0], np.asarray(group_index, np.int64))))
        tiles = int((-(-np.maximum(row_tiles, 0) // 64)).sum()) * td.blockRowCount
        if tiles > MAX_TILES:
            problems.append(f"{tiles} tiles in all, more than {MAX_TILES}; check blockRowCount")
    end = (td.blockRowCount - 1) * td.blockRowSize + td.blockRowTailSize
    if not validate and td.blockRowCount > 0 and end > n:
        problems.append(f"the column tiles end at column {end}, past n = {n} (validate=False: nothing else would "
                        f"stop the out-of-bounds access)")
    if td.blockColSize != 64:
        problems.append(f"blockColSize = {td.blockColSize}; the kernel's two scale blocks need 64 rows")
    if td.blockRowSize <= 0 or td.blockRowSize % 16 or not 0 < td.blockRowTailSize <= td.blockRowSize:
        problems.append(f"blockRowSize = {td.blockRowSize}, blockRowTailSize = {td.blockRowTailSize}: tile widths "
                        f"must be positive, the full one a multiple of 16 and not smaller than the tail")
    if not 0 < td.usedCoreNum <= min(td.totalCoreNum, MAX_BLOCK_DIM):
        problems.append(f"usedCoreNum = {td.usedCoreNum} (totalCoreNum {td.totalCoreNum}); use 1 .. "
                        f"min(totalCoreNum, {MAX_BLOCK_DIM})")
    if grouped_ub_bytes(td) > ub_size:
        problems.append(f"the queues need {grouped_ub_bytes(td)} UB bytes, more than the {ub_size} available")
    if problems:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "grouped tiling rejected: " + "; ".join(problems))


# ---------------------------------------------------------------------------------------------------------------
# DynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

def dynamic_access(td, fp4, x_dtype):
    """AccessPattern of the dynamic kernel (x, y, mxscale); every y element and scale byte is written once."""
    first, count = unit_ranges(td)
    core = np.repeat(np.arange(td.usedCoreNum), count)
    u = np.concatenate([np.arange(f, f + c) for f, c in zip(first, count)]) if len(first) else np.empty(0, int)
    tile = u - np.repeat(first, count)
    pc = u % td.postChunkNum
    rest = u // td.postChunkNum
    qc = rest % td.pairChunkNum
    pre = rest // td.pairChunkNum
    d, post, bs = td.axisSize, td.postAxisSize, td.blockSize
    total = td.preAxisSize * d * post
    xw = 2 if x_dtype == "float32" else 1                    # the kernel takes x as uint16 words
    ap = AccessPattern(td.usedCoreNum)
    ap.gm("x", total * xw, np.uint16)
    ap.gm("y", total // 2 if fp4 else total, np.uint8, output=True)
    ap.gm("mxscale", td.preAxisSize * td.pairNum * post * 2, np.uint8, output=True)
    q0 = qc * td.pairChunk
    q1 = np.minimum(q0 + td.pairChunk, td.pairNum)
    if post == 1:
        x0 = pre * d + q0 * 2 * bs
        x1 = pre * d + np.minimum(q1 * 2 * bs, d)
        ap.read("x", core, tile, x0 * xw, x1 * xw)
        ap.write("y", core, tile, x0 // 2 if fp4 else x0, x1 // 2 if fp4 else x1)
        s0 = (pre * td.pairNum + q0) * 2
        ap.write("mxscale", core, tile, s0, s0 + 2 * (q1 - q0))
    else:
        c0 = pc * td.postChunk
        ncols = np.minimum(td.postChunk, post - c0)
        # pairChunk is 1 for these units: one pair q0 per unit
        r0 = 2 * q0 * bs
        rows = np.minimum(r0 + 2 * bs, d) - r0
        x0 = (pre * d + r0) * post + c0
        c, t, a, b = _expand_rows(core, tile, x0 * xw, rows, post * xw, ncols * xw)
        ap.read("x", c, t, a, b)
        c, t, a, b = _expand_rows(core, tile, x0 // 2 if fp4 else x0, rows, post // 2 if fp4 else post,
                                  ncols // 2 if fp4 else ncols)
        ap.write("y", c, t, a, b)
        s0 = ((pre * td.pairNum + q0) * post + c0) * 2
        ap.write("mxscale", core, tile, s0, s0 + 2 * ncols)
    ap.ub(np.arange(td.usedCoreNum), -1, dynamic_ub_bytes(td, x_dtype, fp4))
    return ap


def run_dynamic(x_bits, y, mxscale, tr, params, r32, mlb32, x_dtype, *, validate=True):
    td = tr.tiling
    fp4 = params[P_DST] >= D_E2M1
    if td.postAxisSize > 1 and td.pairChunk != 1:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                         f"pairChunk={td.pairChunk}: units off the tail axis hold one block pair (pairChunk 1)")
    access = checked_access(("mx_quant.dynamic", tr, fp4, x_dtype), lambda: dynamic_access(td, fp4, x_dtype),
                            ub_size=tr.ub_size, what="dynamic_mx_quant tiling") if validate else None

    # a copy of the kernel for the walk this call takes (kernel.WALK: each compiles about half the unit)
    walk = W_COLS if td.postAxisSize > 1 else W_ROWS32 if td.blockSize == RUN_CHUNK else W_ROWS
    dev = device_for(params, walk)
    params = read_only(params)

    def dynamic_mx_quant(block_dim, tdn, ub_size, x_gm, y_gm, s_gm):
        dev.dynamic_mx_quant_kernel(block_dim, tdn, ub_size, x_gm, y_gm, s_gm, params, np.float32(r32),
                                np.float32(mlb32))

    report = launch(dynamic_mx_quant, tr.block_dim, td, read_only(x_bits), y, mxscale, ub_size=tr.ub_size,
                    access=access, validate=validate)
    return list(report.overruns) if report is not None else []
