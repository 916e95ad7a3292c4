"""Independent golden of GroupedMatmul's A16W8-MSD antiquant kernel (docs/ops/grouped_matmul.md §11.5): plain numpy
from the semantics, written from ``hicann/ops-transformer: gmm/grouped_matmul/op_kernel/
grouped_matmul_antiquant_a16w8_msd.h`` and the tiling of ``op_host/op_tiling/grouped_matmul_tiling.cpp``; it
imports neither the kernel nor the instruction layer.

For a row x of group g (fp32 values of the bf16 / fp16 input), weight W = weight[g] (int8), scale s, offset o:

    amax = max_k |x_k|;   a_tmp = fl(x * fl(127 / amax));
    a1 = round_away(a_tmp);   a2 = round_away(fl(254 * (a_tmp - a1)))
    c1 = a1 @ W, c2 = a2 @ W (exact integers);   asum = the row sum of x (ReduceSum of per-core K chunks, then of
    the row's coreNum slots, as the pre-processing split it)
    y = cast(((fl(c1) + fl(c2) * fl(1/254)) * fl(amax / 127) + o * asum) * s [+ bias])

every operation a float32 rounding in that order, cast = RNE to y's dtype, so that x @ (W + o) * s is approximated
with x ~ amax / 127 * (a1 + a2 / 254).
"""

import ml_dtypes
import numpy as np


def _cdiv(a, b):
    return -(-a // b)


def tiling(m, k, n, core_num=24, ub_size=196352, l0a=65536, l0b=65536, l0c=131072):
    """(coreNum, baseM, singleN) of the MSD tiling (grouped_matmul_tiling.cpp, the A16W8-MSD branches)."""
    base_n = 512 if n >= 2048 else 256
    base_k = (l0b // 2 // base_n) // 16 * 16
    base_m = min(l0a // 2 // base_k, l0c // (base_n * 4))
    base_m = _cdiv(2 * m, 16) * 16 if base_m > 2 * m else base_m // 16 * 16
    base_m = min(base_m, 256)
    ub_cal = (ub_size - base_m // 2 * _cdiv(core_num, 8) * 8 * 4) // 30 // 512 * 512
    single_n = 1024 * _cdiv(n // 4, 1024) if (n >= 2048 and n // k >= 2) else base_n
    return core_num, base_m, min(single_n, ub_cal)


def row_chunks(sizes, k, n, core_num, base_m, single_n):
    """{row: [(k0, k1, slot), ...]}: which pre-processing core sums which K chunk of a row, and its slot."""
    out = {}
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(int) if len(sizes) else []
    half = base_m // 2
    g, cnt = 0, 0
    while g < len(sizes):
        batch = []
        while cnt < core_num and len(batch) < 12 and g < len(sizes):
            if sizes[g] > 0:
                batch.append((int(starts[g]), int(sizes[g])))
                cnt += _cdiv(2 * int(sizes[g]), base_m) * _cdiv(n, single_n)
            g += 1
        if not batch:
            break
        cnt %= core_num
        pieces = []
        for r0, m in batch:                       # pieces of at most baseM / 2 rows
            for o in range(0, m, half):
                pieces.append((r0 + o, min(half, m - o), m - o > half))
        free = max(core_num - len(pieces), 0)
        left = sum(p[1] for p in pieces)
        for r0, m, cut in pieces:
            cores = (_cdiv(free * m, left) if cut else free * m // left) + 1
            free -= cores - 1
            left -= m
            if m < cores:
                bk = _cdiv(k // cores, 128) * 128
                dk = _cdiv(k, bk)
                dm = cores // dk
            else:
                bk, dk, dm = k, 1, cores
            sm = _cdiv(m, dm)
            for i in range(m):
                mi = i // sm
                out[r0 + i] = [(j * bk, min(k, (j + 1) * bk), mi * dk + j) for j in range(dk)]
    return out


def _tree_sum(v):
    """ReduceSum (A2 / A3 count mode): pairwise sums of adjacent lanes in each 64-lane repeat, repeats in order."""
    v = np.asarray(v, np.float32)
    pad = _cdiv(v.size, 64) * 64 - v.size
    v = np.concatenate((v, np.zeros(pad, np.float32))).reshape(-1, 64)
    while v.shape[1] > 1:
        v = v[:, 0::2] + v[:, 1::2]
    acc = v[0, 0]
    for r in range(1, v.shape[0]):
        acc = np.float32(acc + v[r, 0])
    return acc


def _round_away(t):
    t64 = t.astype(np.float64)
    tr = np.trunc(t64)
    r = np.where(np.abs(t64 - tr) >= 0.5, tr + np.sign(t64), tr)
    return r.astype(np.float32)


def _int8(v):
    return np.where(np.isnan(v), 0, np.clip(np.nan_to_num(v), -128, 127)).astype(np.int64)


def grouped_matmul_msd(x, weight, scale, offset, group_list, group_list_type=0, bias=None, core_num=24,
                       ub_size=196352):
    """y (M, N) of x's dtype (rows outside every group: 0). x (M, K) bfloat16 / float16, weight (E, K, N) int8,
    scale / offset (E, N) of x's dtype, bias (E, N) float32 (bf16 x) / float16."""
    dt = x.dtype
    m_x, k = x.shape
    e, _, n = weight.shape
    gl = np.asarray(group_list, np.int64)
    sizes = np.diff(gl, prepend=0) if group_list_type == 0 else gl.copy()
    cn, base_m, single_n = tiling(m_x, k, n, core_num, ub_size)
    chunks = row_chunks(list(sizes), k, n, cn, base_m, single_n)
    xf = x.astype(np.float32)
    y = np.zeros((m_x, n), np.float32)
    done = np.zeros(m_x, bool)
    r = 0
    for g in range(e):
        for row in range(r, r + int(sizes[g])):
            xr = xf[row]
            amax = np.float32(np.abs(xr).max())
            slots = np.zeros(_cdiv(cn, 8) * 8, np.float32)
            with np.errstate(all="ignore"):                 # Inf / NaN as IEEE float32 gives them
                for k0, k1, slot in chunks[row]:
                    slots[slot] = _tree_sum(xr[k0:k1])
                asum = _tree_sum(slots)
                t = (xr * (np.float32(127.0) / amax)).astype(np.float32)
                a1 = _round_away(t)
                a2 = _round_away(((t - a1).astype(np.float32) * np.float32(254)).astype(np.float32))
                w64 = weight[g].astype(np.int64)
                c1 = (_int8(a1) @ w64).astype(np.float64).astype(np.float32)
                c2 = (_int8(a2) @ w64).astype(np.float64).astype(np.float32)
                t3 = (c1 + (c2 * np.float32(1.0 / 254)).astype(np.float32)).astype(np.float32)
                t2 = (t3 * np.float32(amax / np.float32(127.0))).astype(np.float32)
                u = (t2 + (offset[g].astype(np.float32) * asum).astype(np.float32)).astype(np.float32)
                v = (u * scale[g].astype(np.float32)).astype(np.float32)
                if bias is not None:
                    v = (v + bias[g].astype(np.float32)).astype(np.float32)
            y[row] = v
            done[row] = True
        r += int(sizes[g])
    with np.errstate(over="ignore"):                 # fp32 overflow -> Inf, as the device cast
        out = y.astype(ml_dtypes.bfloat16 if dt == ml_dtypes.bfloat16 else np.float16)
    out[~done] = 0
    return out
