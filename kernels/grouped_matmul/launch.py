"""Host side of a GroupedMatmul launch (docs/ops/grouped_matmul.md §6, §7): the group entries from the group list,
the cube's L0C values per group (kernels/quant_matmul/accum.py: exact int32, or the float accumulation models),
and the per-core epilogue kernel (kernel.py) over the groups' output blocks.
"""

import numpy as np

from npu_emu.dtypes import scalar
from npu_emu.kernels.grouped_matmul import tiling as tiling_mod
from npu_emu.kernels.quant_matmul import accum
from npu_emu.kernels.quant_matmul import kernel as qmm_kernel
from npu_emu.device.specialize import load

OUT_CODES = qmm_kernel.OUT_CODES


def entries(group_list, group_list_type, num_groups, m_x):
    """(weight index, first row, rows) arrays of the groups the kernel visits (GetSplitValueFromGroupList, the
    sparse [e, 2] walk of GMMGroupMSparseProcess). Inputs already checked: rows >= 0, total <= m_x."""
    gl = np.asarray(group_list, dtype=np.int64)
    if group_list_type == 2:
        idx, ms = [], []
        for e in range(gl.shape[0]):
            if gl[e, 1] <= 0:
                break
            idx.append(int(gl[e, 0]))
            ms.append(int(gl[e, 1]))
        w = np.array(idx, np.int64)
        m = np.array(ms, np.int64)
    else:
        g = min(num_groups, gl.shape[0])
        m = np.diff(gl[:g], prepend=0) if group_list_type == 0 else gl[:g].copy()
        w = np.arange(g, dtype=np.int64)
    row = np.concatenate(([0], np.cumsum(m)[:-1])).astype(np.int64) if m.size else np.zeros(0, np.int64)
    return w, row, m


def int_cube(x, weight_nd, ent, acc):
    """The int32 L0C value of every computed row: acc[rows of g] = x[rows of g] @ weight[g] exactly
    (accum.int_matmul, whose value does not depend on the block split: K is never split across cores)."""
    w_idx, row, m = ent
    for g in range(w_idx.size):
        if m[g] > 0:
            r0 = int(row[g])
            acc[r0:r0 + int(m[g])] = accum.int_matmul(x[r0:r0 + int(m[g])], weight_nd[int(w_idx[g])])


def float_cube(x64, weight64, ent, acc, sig, float_accum, base_k, bias, x32=None, w32=None):
    """The fp32 L0C value of every computed row under ``float_accum`` (accum.float_matmul): the cube of a plain
    bf16 / fp16 matmul, the bias (fp32 values) as the L0C start value."""
    w_idx, row, m = ent
    for g in range(w_idx.size):
        if m[g] > 0:
            r0, r1 = int(row[g]), int(row[g] + m[g])
            gi = int(w_idx[g])
            b = None if bias is None else bias[gi:gi + 1]
            acc[r0:r1] = accum.float_matmul(x64[r0:r1], weight64[gi], sig, sig, float_accum=float_accum,
                                            base_k=base_k, bias=b,
                                            a32=None if x32 is None else x32[r0:r1],
                                            b32=None if w32 is None else w32[gi])


def walk_array(tr, n, vec_m, diag=tiling_mod.THRESHOLD_DIM_M):
    from npu_emu.kernels.grouped_matmul import kernel as k

    single_m, single_n, base_n, cores = tiling_mod.walk_params(tr)
    walk = np.zeros(k.W_LEN, np.int64)
    walk[k.W_SINGLE_M] = single_m
    walk[k.W_SINGLE_N] = single_n
    walk[k.W_BASE_N] = base_n
    walk[k.W_VEC_M] = max(1, min(vec_m, single_m))
    walk[k.W_CORES] = cores
    walk[k.W_DIAG] = diag
    walk[k.W_N] = n
    return walk


def vec_base_m(tr):
    """VectorTilingCalc: vecBaseM = ubCalSize / AlignUp(baseN, 16) (before the min with the block's rows)."""
    td = tr.tiling
    base_n = td.mmTilingData.baseN
    cal = td.gmmBaseParams.ubCalSize
    if cal == 0:
        return td.mmTilingData.baseM
    return max(1, cal // (-(-base_n // 16) * 16))


def run_epilogue(tr, ent, n, acc_i, acc_f, scale, pt, bias_i, bias_f, out_code, y):
    """The per-core epilogue kernel of the module copy for ``out_code`` over the groups' blocks.

    scale (G, N) fp32 or (G, 0); pt (M,) fp32 or empty; bias_i (G, N) int32 or (G, 0); bias_f (G, N) fp32 or
    (G, 0), all indexed by the weight index of each entry; y: the output array (rows of no group untouched)."""
    w_idx, row, m = ent
    acc_int = acc_i.size > 0
    dev = load("npu_emu.kernels.grouped_matmul.kernel", OUT=int(out_code), ACC_INT=int(acc_int), RINT=1)
    cfg = np.zeros(qmm_kernel.CFG_LEN, np.int64)
    cfg[qmm_kernel.CFG_OUT] = out_code
    cfg[qmm_kernel.CFG_RMODE] = scalar.CAST_RINT
    cfg[qmm_kernel.CFG_ACC_INT] = int(acc_int)
    cfg[qmm_kernel.CFG_BIAS_ROWS] = 1

    def per_entry(a, dt):
        a = np.asarray(a, dt)
        return np.ascontiguousarray(a[w_idx]) if a.shape[1] else np.zeros((w_idx.size, 0), dt)

    walk = walk_array(tr, n, vec_base_m(tr))
    y8 = y.reshape(-1).view(np.uint8)
    dev.gmm_epilogue_kernel(walk, np.ascontiguousarray(m), np.ascontiguousarray(row),
                            acc_i.reshape(-1), acc_f.reshape(-1), per_entry(scale, np.float32),
                            np.array(pt, np.float32, copy=True).reshape(-1), per_entry(bias_i, np.int32),
                            per_entry(bias_f, np.float32), cfg, y8)


def block_table(tr, ent, n):
    """Every visited block as int64 rows (core, entry, mIdx, nIdx), from the tiling data and the group sizes."""
    from npu_emu.kernels.grouped_matmul import kernel as k

    walk = walk_array(tr, n, 1)
    _, _, m = ent
    single_m, single_n = int(walk[k.W_SINGLE_M]), int(walk[k.W_SINGLE_N])
    total = sum(-(-int(v) // single_m) * -(-n // single_n) for v in m if v > 0)
    out = np.zeros((total, 4), np.int64)
    got = k.walk_blocks(walk, np.ascontiguousarray(m, dtype=np.int64), out)
    return out[:got]
