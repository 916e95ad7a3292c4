"""Host side of the quantised matmul epilogue (docs/ops/quant_matmul.md §7, §10): which specialised copy of kernel.py
a call runs, the GM/UB access pattern the launch validator checks, and the launcher every route shares (V3, the V4
modes of v4.py, sparse4to2).
"""

import numpy as np

from npu_emu.dtypes import scalar
from npu_emu.kernels.quant_matmul import kernel
from npu_emu.kernels.quant_matmul.tiling import block_coords
from npu_emu.device.launch import checked_access, launch
from npu_emu.device.read_only import read_only
from npu_emu.device.specialize import load
from npu_emu.device.validate import AccessPattern


def rmode(sw):
    """The CAST_* round mode of the Fixpipe and the output cast (switch ``fixpipe_round``)."""
    return scalar.CAST_ROUND if sw.fixpipe_round == "half_away" else scalar.CAST_RINT


def qbmm_epilogue_kernel(block_dim, td, ub_size, acc_i32, acc_f32, s2, s1, bias_i, bias_f, off9, cfg, y8):
    """Dequantise the L0C results block by block (the kernel of the module copy for cfg's output type, accumulator
    and cast: see kernel.OUT, ACC_INT, RINT).

    acc_i32 / acc_f32: the L0C values of every block in the GM workspace (one of them is empty), flat (B, M, N).
    s2 (x2 scale, N or 1 entries, already FP19 where the path truncates), s1 (x1 scale, M or 1), bias_i (int32,
    added to the int32 L0C value), bias_f (float32, added after the scales), off9 (int9 offset for int8 out):
    each may be empty. cfg: see kernel.CFG_*. y8: the output bytes.
    """
    dev = load(kernel.__name__, OUT=int(cfg[kernel.CFG_OUT]), ACC_INT=int(cfg[kernel.CFG_ACC_INT] != 0),
               RINT=int(cfg[kernel.CFG_RMODE] == scalar.CAST_RINT and cfg[kernel.CFG_SAT] == 0))
    dev.epilogue_kernel(block_dim, td, ub_size, acc_i32, acc_f32, s2, s1, bias_i, bias_f, off9, cfg, y8)


# --------------------------------------------------------------------------------------------------------------
# access patterns (what the launch validator checks before a kernel runs)
# --------------------------------------------------------------------------------------------------------------

def block_table(tr):
    """Every block as arrays (core, local index, batch, row0, rows, col0, cols), from the tiling data alone."""
    td = tr.tiling
    cube, l2 = td.matmulTiling, td.tileL2cacheTiling
    m_cnt, n_cnt = -(-cube.M // cube.baseM), -(-cube.N // cube.baseN)
    per = m_cnt * n_cnt
    total = td.params.batchC * per
    idx = np.arange(total, dtype=np.int64)
    coords = np.array([block_coords(i % per, m_cnt, n_cnt, l2.mTileCntL2, l2.nTileCntL2, l2.mTileBlock,
                                    l2.nTileBlock, l2.calOrder) for i in range(per)], dtype=np.int64).reshape(-1, 2)
    mi = np.tile(coords[:, 0], td.params.batchC)
    ni = np.tile(coords[:, 1], td.params.batchC)
    r0 = mi * cube.baseM
    c0 = ni * cube.baseN
    rows = np.minimum(cube.baseM, cube.M - r0)
    cols = np.minimum(cube.baseN, cube.N - c0)
    return idx % tr.block_dim, idx // tr.block_dim, idx // per, r0, rows, c0, cols


def epilogue_access(tr, buffers, out_itemsize):
    """AccessPattern of :func:`qbmm_epilogue_kernel`: acc rows read, output rows written, per block."""
    td = tr.tiling
    m, n = td.matmulTiling.M, td.matmulTiling.N
    ap = AccessPattern(tr.block_dim)
    for name, arr in buffers:
        ap.gm(name, arr.size, arr.dtype, output=(name == "y"))
    core, tile, b, r0, rows, c0, cols = block_table(tr)
    if core.size:
        rep = rows
        rc = np.repeat(core, rep)
        rt = np.repeat(tile, rep)
        first_row = np.repeat(r0, rep)
        offs = np.arange(int(rep.sum())) - np.repeat(np.cumsum(rep) - rep, rep)
        row = np.repeat(b, rep) * m + first_row + offs
        start = row * n + np.repeat(c0, rep)
        stop = start + np.repeat(cols, rep)
        acc_name = "acc_i32" if buffers[0][1].size else "acc_f32"
        ap.read(acc_name, rc, rt, start, stop)
        ap.write("y", rc, rt, start * out_itemsize, stop * out_itemsize)
    ub_bytes = 8 * td.params.ubCalcM * td.params.ubCalcN
    ap.ub(np.arange(tr.block_dim), -1, ub_bytes)
    return ap


# --------------------------------------------------------------------------------------------------------------
# the launch
# --------------------------------------------------------------------------------------------------------------

def launch_epilogue(tr, acc, plan, sw, s2, s1, bias_i, bias_f, off9, y8, out_code):
    """Launch :func:`qbmm_epilogue_kernel` on the L0C results ``acc`` (int32 or float32) into the output bytes ``y8``,
    validated against :func:`epilogue_access` unless ``sw.validate`` is off; returns the launch report."""
    acc_i32 = acc.reshape(-1) if acc.dtype == np.int32 else np.empty(0, np.int32)
    acc_f32 = acc.reshape(-1) if acc.dtype == np.float32 else np.empty(0, np.float32)
    bias_rows = 1
    if bias_i.size:
        bias_rows = bias_i.shape[0]
    elif bias_f.size:
        bias_rows = bias_f.shape[0]
    cfg = np.zeros(kernel.CFG_LEN, np.int64)
    cfg[kernel.CFG_OUT] = out_code
    cfg[kernel.CFG_RMODE] = rmode(sw)
    cfg[kernel.CFG_SAT] = int(sw.cast_overflow == "saturate")
    cfg[kernel.CFG_BIAS_ROWS] = bias_rows
    cfg[kernel.CFG_ACC_INT] = int(acc.dtype == np.int32)
    small = lambda x, dt: read_only(np.ascontiguousarray(x, dtype=dt).reshape(-1))
    bufs = [("acc_i32", read_only(acc_i32)), ("acc_f32", read_only(acc_f32)), ("s2", small(s2, np.float32)),
            ("s1", small(s1, np.float32)), ("bias_i", small(bias_i, np.int32)), ("bias_f", small(bias_f, np.float32)),
            ("off9", small(off9, np.int32)), ("cfg", read_only(cfg)), ("y", y8)]
    itemsize = kernel.OUT_ITEMSIZE[out_code]
    access = None
    if sw.validate:
        # the blocks' rows follow the tiling alone; the buffers enter by their sizes (their dtypes are set above,
        # y8's by the caller)
        sizes = tuple([b.size for _, b in bufs])
        access = checked_access(("quant_matmul.epilogue", tr, sizes, y8.dtype, itemsize),
                                lambda: epilogue_access(tr, bufs, itemsize), ub_size=tr.ub_size,
                                what=f"{qbmm_epilogue_kernel.__name__} tiling")
    report = launch(qbmm_epilogue_kernel, tr.block_dim, tr.tiling, *[b for _, b in bufs], ub_size=tr.ub_size,
                    access=access, validate=sw.validate)
    return report
