"""Device code of GroupedMatmul's A16W8-MSD antiquant kernel (docs/ops/grouped_matmul.md §11.5), beside
``hicann/ops-transformer: gmm/grouped_matmul/op_kernel/grouped_matmul_antiquant_a16w8_msd.h``
(``GMMA16W8MSDCompute``: ``PreProcessCalc`` / ``CopyOriginInput`` / ``CalcAMax`` / ``CalcReduceSum`` /
``CalcAMatrix`` on the vector cores, ``MMCompute`` on the cube, ``PostProcess`` / ``CalcASum`` / ``ProcessC1C2`` /
``CalcCMatrix`` / ``CopyOutFinalResult`` on the vector cores).

Stage 1 (``msd_preprocess_kernel``) runs the pieces of ``antiquant_msd.preprocess_pieces`` (the scalar walk of
``PreProcess`` / ``PreProcessTiling``): every vector core of a piece reads its rows and K chunk of x, writes the
chunk's max |x| into the row's amax with an atomic max (``SetAtomicMax``, start 0) and the chunk's ReduceSum into
its slot of the row's local sums; after the SyncAll it splits its chunk into the two int8 parts a1, a2.
Stage 2 is the int8 x int8 -> int32 cube of both parts (quant_matmul's exact ``accum.int_matmul_groups``: an integer
sum, which the cube's K / N tiles do not change). Stage 3 (``msd_post_kernel``) is the per-element epilogue.

The element formulas are the instruction layer's (npu_emu.ascendc), written in one fused loop with the same codecs
as antiquant_kernel.py does: Muls / Sub / Add / Mul float32 are single IEEE operations, Cast float -> float
CAST_ROUND is ``round_to_integral`` (ties away), float -> int8 maps NaN to 0 and saturates (cast.py), int32 ->
float32 CAST_NONE rounds to nearest even, float32 -> bf16 CAST_RINT / -> half CAST_NONE are the RNE codecs.
``ReduceSum`` is the count-mode API on A2 / A3 (``归约计算/ReduceSum.md`` "方式一"): a binary tree of adjacent pairs
inside each 64-float repeat (``ReduceDataBlock.md`` 关键特性说明), the repeat results added in order.
"""

import numpy as np

from npu_emu.ascendc.constants import CAST_RINT, CAST_ROUND
from npu_emu.device.specialize import const, njit
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, round_to_integral

BF16 = const("BF16")          # 1: bf16 x / y (bias float32), 0: half x / y (bias half)
HAS_BIAS = const("HAS_BIAS")

REPEAT_F32 = 64               # floats of one 256-byte repeat
FLOAT_ALIGN = 8               # FACTOR_FOR_FLOAT_ALIGN_TO_32


@njit(cache=True, error_model="numpy", inline="never")
def reduce_sum_f32(src, start, count, lanes):
    """AscendC::ReduceSum<float>(dst, src, tmp, count) on A2 / A3 (count mode, "方式一"): each repeat of 64 lanes
    summed by a binary tree of adjacent pairs (lanes past ``count`` read as +0), the repeats' sums added in order.
    ``lanes``: a float32 scratch of 64."""
    acc = np.float32(0.0)
    for r0 in range(0, count, REPEAT_F32):
        n = min(REPEAT_F32, count - r0)
        for i in range(REPEAT_F32):
            lanes[i] = src[start + r0 + i] if i < n else np.float32(0.0)
        w = REPEAT_F32
        while w > 1:
            w //= 2
            for i in range(w):
                lanes[i] = np.float32(lanes[2 * i] + lanes[2 * i + 1])
        acc = lanes[0] if r0 == 0 else np.float32(acc + lanes[0])
    return acc


@njit(cache=True, error_model="numpy", inline="never")
def _x_f32(h):
    return bf16_to_f32(h) if BF16 == 1 else f16_to_f32(h)


@njit(cache=True, error_model="numpy", inline="never")
def _to_int8(v):
    """Cast float -> int8 (through half, exact for these integral values): NaN -> 0, saturating (cast.py)."""
    if v != v:
        return np.int8(0)
    if v >= np.float32(127.0):
        return np.int8(127)
    if v <= np.float32(-128.0):
        return np.int8(-128)
    return np.int8(np.int64(v))


@njit(cache=True, error_model="numpy")
def msd_preprocess_kernel(x, pieces, amax, lsum, a1, a2):
    """x (M, K) uint16 bits of x's dtype; pieces (P, 6) int64 rows (row0, m, baseK, blockDimK, blockDimM, singleM)
    of ``preprocess_pieces``; amax (M,) float32 zeros (globalMaxGm); lsum (M, S) float32 zeros (localSumGm, S >=
    coreNum); a1 / a2 (M, K) int8 (aMatrixGm's two parts of every row)."""
    k = x.shape[1]
    cols = np.empty(k, np.float32)
    lanes = np.empty(REPEAT_F32, np.float32)
    # PreProcessCalc, first loop of every core: CopyOriginInput, CalcAMax, CalcReduceSum
    for p in range(pieces.shape[0]):
        row0, m, base_k, dim_k, dim_m, single_m = pieces[p]
        for c in range(dim_m * dim_k):
            m_idx, k_idx = c // dim_k, c % dim_k
            cur_k = base_k if k_idx < dim_k - 1 else k - k_idx * base_k
            cur_m = single_m if m_idx < dim_m - 1 else m - m_idx * single_m
            k0 = k_idx * base_k
            for r in range(row0 + m_idx * single_m, row0 + m_idx * single_m + cur_m):
                best = np.float32(0.0)
                for j in range(cur_k):
                    cols[j] = _x_f32(x[r, k0 + j])            # Cast x -> float (exact)
                    a = abs(cols[j])                             # Abs
                    if a > best or a != a:                       # ReduceMax (NaN wins, [HW-unverified])
                        best = a
                if best > amax[r] or best != best:               # SetAtomicMax into globalMaxGm
                    amax[r] = best
                lsum[r, c] = reduce_sum_f32(cols, 0, cur_k, lanes)
    # SyncAll; second loop of every core: CalcAMatrix with the row's whole-K amax
    for p in range(pieces.shape[0]):
        row0, m, base_k, dim_k, dim_m, single_m = pieces[p]
        for c in range(dim_m * dim_k):
            m_idx, k_idx = c // dim_k, c % dim_k
            cur_k = base_k if k_idx < dim_k - 1 else k - k_idx * base_k
            cur_m = single_m if m_idx < dim_m - 1 else m - m_idx * single_m
            k0 = k_idx * base_k
            for r in range(row0 + m_idx * single_m, row0 + m_idx * single_m + cur_m):
                inv = np.float32(np.float32(127.0) / amax[r])   # scalar 127.0f / amax
                for j in range(k0, k0 + cur_k):
                    t = np.float32(_x_f32(x[r, j]) * inv)                        # Muls: a_tmp
                    h1 = np.float32(round_to_integral(np.float64(t), CAST_ROUND))  # Cast CAST_ROUND: a1
                    a1[r, j] = _to_int8(h1)
                    d = np.float32(t - h1)                                         # Sub
                    s = np.float32(d * np.float32(254.0))                          # Muls 254
                    a2[r, j] = _to_int8(np.float32(round_to_integral(np.float64(s), CAST_ROUND)))


@njit(cache=True, error_model="numpy")
def msd_post_kernel(c1, c2, amax, lsum, n_sum, groups, scale, offset, bias, out):
    """c1 / c2 (M, N) int32 cube results of a1 / a2; amax (M,); lsum (M, S) local sums (ReduceSum over the first
    ``n_sum`` = AlignUp(coreNum, 8) slots); groups (G, 3) int64 (weight index, first row, rows); scale / offset (E, N)
    uint16 bits of x's dtype; bias (E, N) float32 bits (bf16) / uint16 half bits, or (0, 0); out (M, N) uint16."""
    n = c1.shape[1]
    lanes = np.empty(REPEAT_F32, np.float32)
    inv254 = np.float32(1.0 / 254)                          # static_cast<float>(1.0 / 254)
    for g in range(groups.shape[0]):
        e, r0, mg = groups[g, 0], groups[g, 1], groups[g, 2]
        for r in range(r0, r0 + mg):
            a_sum = reduce_sum_f32(lsum[r], 0, n_sum, lanes)             # CalcASum: the row's global sum
            amax_d = np.float32(amax[r] / np.float32(127.0))             # scalar amax / 127.0f
            for j in range(n):
                c_tmp = np.float32(_x_f32(offset[e, j]) * a_sum)         # Muls: offset * asum
                t1 = np.float32(np.float32(c2[r, j]) * inv254)           # Cast c2, Muls 1/254
                t3 = np.float32(np.float32(c1[r, j]) + t1)               # Cast c1, Add
                t2 = np.float32(t3 * amax_d)                             # Muls amax / 127
                u = np.float32(t2 + c_tmp)                               # Add c_tmp
                v = np.float32(u * _x_f32(scale[e, j]))                  # Mul scale
                if HAS_BIAS == 1:
                    if BF16 == 1:
                        v = np.float32(v + bias[e, j])
                    else:
                        v = np.float32(v + f16_to_f32(np.uint16(bias[e, j])))
                out[r, j] = f32_to_bf16(v, CAST_RINT, False) if BF16 == 1 else f32_to_f16(v, CAST_RINT, False)
