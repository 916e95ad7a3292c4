"""Device code of the GroupedMatmul A8W4 MSD epilogue (docs/ops/grouped_matmul.md §12), beside
``hicann/ops-transformer: gmm/grouped_matmul/op_kernel/grouped_matmul_antiquant_a8w4_msd.h``
(``GMMA8W4MSDCompute::Process``, ``VectorCompute``, ``ComputeDequantAndActivate``).

The cube has left, per expert group, the fp16 workspace of the 2m-row hi / lo matrix (row 2t the hi plane of token t,
row 2t + 1 its lo plane; quant_matmul's ``v4_kernel.msd_fused_kernel`` computes it: the Fixpipe dequant to fp16 of
every k group and the fp16 atomic adds). The vector cores then walk the same blocks as the cube (the group loop of
``Process``: blocks of singleM rows of the 2m-row matrix x singleN columns, block ``preCount + i`` to core
``i % coreNum``, ``preCount`` carried between groups) and write, per token t of the block and column c:

    v = f32(16 · H)                 Muls
    v = f32(L + v)                  Add
    v = f32(v + bias[g, c])         Add (the "8 · Σ w · scale" column term the caller precomputes)
    v = f32(f32(rowsum[t] · offset[g, c]) + v)     only with an offset (asymmetric weight)
    v = f32(v · perTokenScale[t])   Mul
    y = cast(v)                     CAST_RINT to bfloat16 / float16

Blocks own disjoint rectangles of y, so the split over cores decides who writes an element, never its value.

MSD_VECTOR_DEQUANT (``grouped_matmul_antiquant_a8w4_msd_new.h``, ``GMMA8W4MSDComputeNew``) keeps H and L in float32
instead (:func:`vector_dequant_step`: fp16 chunk sums times the pair-summed scale, added in float32) and ends with
the same chain (no offset), on blocks of 32 rows x the whole N. :func:`fake_quant_scale_kernel` is the scale
conversion of the PERCHANNEL_ANTIQUANT template's pre-process (``grouped_matmul_antiquant_a8w4_pre.h``).
"""

import numpy as np
from numba import prange, types
from numba.extending import overload

from npu_emu.ascendc.constants import CAST_FLOOR, CAST_RINT
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.specialize import njit
from npu_emu.dtypes.scalar import f16_to_f32, f32_as_u32, f32_to_bf16, f32_to_f16, u32_as_f32

OUT_BF16 = 1


def _plane(ws, r, c):
    """One hi / lo plane value as float32 (njit only; chosen by the workspace's dtype at compile time)."""
    raise NotImplementedError("_plane runs inside njit kernels only")


@overload(_plane)
def _plane_impl(ws, r, c):
    if ws.dtype == types.uint16:
        return lambda ws, r, c: f16_to_f32(ws[r, c])
    return lambda ws, r, c: ws[r, c]


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def msd_dequant_kernel(core_num, counts, n, single_m, single_n, ws, bias, offset, rowsum, pt, out_bf16, y):
    """counts (E,) int64 rows per group (the kernel reads the group list as counts); ws (2·rows, N) the hi / lo
    planes: uint16 fp16 bits (MSD_API_DEQUANT's workspace) or float32 (MSD_VECTOR_DEQUANT's UB sums); bias (E, N)
    float32; offset (E, N) float32 or (0, 0) (no offset); rowsum (M,) float32
    (Σ_k x, with an offset); pt (M,) float32; y (M, N) uint16 bits of bfloat16 (``out_bf16``) or float16."""
    has_offset = offset.shape[0] > 0
    e = counts.shape[0]
    cores = np.int64(core_num)
    sm = np.int64(single_m)
    sn = np.int64(single_n)
    block_dim_n = (np.int64(n) + sn - 1) // sn
    for c_idx in prange(cores):
        core = np.int64(c_idx)
        pre_count = np.int64(0)
        offset_m = np.int64(0)                         # rows of the 2m-row matrix before this group
        for g in range(e):
            m = np.int64(counts[g])
            if m <= 0:
                continue
            mm = 2 * m                                 # int8 split into two int4 rows
            block_dim_m = (mm + sm - 1) // sm
            cur_count = pre_count + block_dim_n * block_dim_m
            cur = core if core >= pre_count else core + cores
            while cur < cur_count:
                m_idx = (cur - pre_count) // block_dim_n
                n_idx = (cur - pre_count) % block_dim_n
                tokens = sm // 2
                if m_idx == block_dim_m - 1:
                    tokens = mm // 2 - m_idx * (sm // 2)
                t0 = offset_m // 2 + m_idx * (sm // 2)
                c0 = n_idx * sn
                cols = min(sn, np.int64(n) - c0)
                for i in range(tokens):
                    t = t0 + i
                    p = pt[t]
                    for c in range(c0, c0 + cols):
                        h = _plane(ws, 2 * t, c)
                        lo = _plane(ws, 2 * t + 1, c)
                        v = np.float32(16.0) * h
                        v = lo + v
                        v = v + bias[g, c]
                        if has_offset:
                            v = rowsum[t] * offset[g, c] + v
                        v = v * p
                        if out_bf16 == OUT_BF16:
                            y[t, c] = f32_to_bf16(v, CAST_RINT, False)
                        else:
                            y[t, c] = f32_to_f16(v, CAST_RINT, False)
                cur += cores
            pre_count = cur_count % cores
            offset_m += mm


@njit(cache=True, error_model="numpy")
def fake_quant_scale_kernel(pairs, out_bf16, out):
    """GMMA8W4FakeQuantPreProcess::ScaleProcess (grouped_matmul_antiquant_a8w4_pre.h) per word: PairReduceSum of its
    two float32 halves (low + high, one float32 add), then for a bfloat16 y Cast with CAST_FLOOR. pairs (W, 2)
    uint32; out (W,) uint32 float32 bits or uint16 bfloat16 bits. The split of the words over the vector cores
    decides who converts a word, never its value."""
    for i in range(pairs.shape[0]):
        v = u32_as_f32(pairs[i, 0]) + u32_as_f32(pairs[i, 1])
        if out_bf16 == OUT_BF16:
            out[i] = f32_to_bf16(v, CAST_FLOOR, False)
        else:
            out[i] = f32_as_u32(v)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def vector_dequant_step(parts, j0, s, acc):
    """GMMA8W4MSDComputeNew::ComputeDequantAndActivate before the last chunk, for k chunks j0 .. j0 + gb - 1 (256
    wide): the chunk's int32 sums (parts (gb, 2m, N), float32 holding them exactly) as the Fixpipe writes them with
    scalar quant 1.0, fp16 (RNE); Cast to float32; Mul by the chunk's float32 scale s[j, n]; the first chunk starts
    acc, the others are Added to it (float32). acc (2m, N) float32."""
    gb, rows, n = parts.shape
    for r in prange(rows):
        for jj in range(gb):
            j = j0 + jj
            for c in range(n):
                v = f16_to_f32(f32_to_f16(parts[jj, r, c], CAST_RINT, False)) * s[j, c]
                if j == 0:
                    acc[r, c] = v
                else:
                    acc[r, c] = acc[r, c] + v
