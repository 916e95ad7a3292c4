"""Per-core device code of GroupedMatmul (side by side with ``hicann/ops-transformer: gmm/grouped_matmul/op_kernel/
grouped_matmul.h`` ``GMMProcess::Process`` / ``MNBlockIdxCompute`` and ``grouped_matmul_quant_mixcore.h``
``GMMQuantMixCoreCompute::VectorCompute`` / ``Dequant`` / ``ComputeDequantAndActivate`` / ``PerTokenQuant``).

The walk (docs/ops/grouped_matmul.md §6): for each group in order, m from the group list (cumulative or counts;
a group of m = 0 is skipped), its output blocks singleM x singleN are numbered ``count .. count + blocks - 1``
and core c takes the numbers congruent to c modulo coreNum; ``count`` carries over to the next group as
``(count + blocks) % coreNum``. A block number becomes (mIdx, nIdx) row-major, or by the diagonal walk when the
group has more than ``THRESHOLD_DIM_M`` block rows. K is never split: each block's cube result is the whole
k-sum of its rows and columns.

The cube result of every block is the L0C value (int32 for A8W8) that accum.py's exact primitive produces for the
whole group at once (block decomposition does not change an exact integer sum); this module replays the vector
epilogue per block in its vector tiles of vecBaseM rows x baseN columns: AscendDequant (int32 -> fp32 x scale[n]),
Mul by the per-token scale, Add the bf16 bias (cast to fp32), the activation of ``activeType`` (ActivationCompute,
npu_emu/ascendc/activation.py; docs/ops/grouped_matmul.md §13), Cast to bf16 (CAST_RINT) / fp16 (CAST_NONE). The
element chain is quant_matmul's epilogue row (kernels/quant_matmul/kernel.py ``_dequant_row``), imported from the
copy specialised for the same output type (fp32 when an activation follows): one implementation of the chain.
"""

import numpy as np
from numba import prange

from npu_emu.ascendc.activation import FasterGelu, Gelu, Relu, Silu
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.specialize import const, load, njit
from npu_emu.dtypes import scalar

OUT = const("OUT")            # quant_matmul kernel OUT_* code of this copy
ACC_INT = const("ACC_INT")
RINT = const("RINT")
# activeType (ActiveType of grouped_matmul_utils.h) and the Exp / Div models of the activations; a copy without
# activation is loaded without these switches (so its tag and cache files are those of the copy before them)
ACT = const("ACT", 0)
EXP_MODEL = const("EXP_MODEL", 0)
DIV_MODEL = const("DIV_MODEL", 0)
ACT_NONE, ACT_RELU, ACT_GELU_TANH, ACT_GELU_ERR_FUNC, ACT_FASTGELU, ACT_SILU = range(6)
_QK = None if OUT is None else load("npu_emu.kernels.quant_matmul.kernel", OUT=OUT, ACC_INT=ACC_INT, RINT=RINT)
_dequant_row = None if _QK is None else _QK._dequant_row
OSIZE = None if OUT is None else _QK.OSIZE
# with an activation the chain stops at fp32 (ComputeDequantAndActivate: dequantMiddleResult / mulsResultLocal),
# the activation runs, then the Cast: the fp32-out copy of the same chain
_dequant_row_f32 = None if (OUT is None or ACT == ACT_NONE) else load(
    "npu_emu.kernels.quant_matmul.kernel", OUT=_QK.OUT_F32, ACC_INT=ACC_INT, RINT=RINT)._dequant_row

# walk array layout (host: launch.walk_array)
W_SINGLE_M, W_SINGLE_N, W_BASE_N, W_VEC_M, W_CORES, W_DIAG, W_N, W_LEN = range(8)
THRESHOLD_BLOCK_NUM = 8


@njit(inline="always", cache=True, error_model="numpy")
def _cdiv(a, b):
    return (a + b - 1) // b


@njit(cache=True, error_model="numpy")
def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


@njit(cache=True, error_model="numpy")
def block_idx(cur, count, dim_m, dim_n, diag):
    """MNBlockIdxCompute: (mIdx, nIdx) of block number ``cur`` of a group whose first number is ``count``.

    ``diag``: thresholdDimM (5 on dav-c220; 1 turns the diagonal walk off, as on dav-m200)."""
    rel = cur - count
    if dim_m <= diag or diag == 1:
        return rel // dim_n, rel % dim_n
    t = THRESHOLD_BLOCK_NUM
    tm_dn = t * dim_n
    cur_tm = dim_m % t if rel >= (dim_m * dim_n) // tm_dn * tm_dn else t
    cur_tm_tn = cur_tm * t
    cur_tn = dim_n % t if rel % tm_dn >= (cur_tm * dim_n) // cur_tm_tn * cur_tm_tn else t
    local = rel % tm_dn % cur_tm_tn
    lcm = cur_tm * cur_tn // _gcd(cur_tm, cur_tn)
    m_idx = local % cur_tm + rel // tm_dn * t
    n_idx = (local + local // lcm) % cur_tn + rel % tm_dn // cur_tm_tn * t
    return m_idx, n_idx


@njit(cache=True, error_model="numpy")
def walk_blocks(walk, group_m, out):
    """Every (core, group, mIdx, nIdx) the cores visit, in each core's order; ``out`` int64 (nblocks, 4).
    Returns the number of rows written. Used by the host to check coverage and by the tests."""
    single_m = walk[W_SINGLE_M]
    single_n = walk[W_SINGLE_N]
    cores = walk[W_CORES]
    n = walk[W_N]
    pos = 0
    for core in range(cores):
        count = np.int64(0)                      # int64: block_idx's one signature (a literal 0 is another)
        for g in range(group_m.size):
            m = group_m[g]
            if m <= 0:
                continue
            dim_m = _cdiv(m, single_m)
            dim_n = _cdiv(n, single_n)
            cur_count = count + dim_m * dim_n
            cur = core if core >= count else core + cores
            while cur < cur_count:
                mi, ni = block_idx(cur, count, dim_m, dim_n, walk[W_DIAG])
                out[pos, 0] = core
                out[pos, 1] = g
                out[pos, 2] = mi
                out[pos, 3] = ni
                pos += 1
                cur += cores
            count = cur_count % cores
    return pos


@njit(cache=True, error_model="numpy")
def _activate_and_cast(pre, act, out_u16, cnt):
    """ActivationCompute (FASTGELU -> FasterGelu, RELU -> Relu, SILU -> Silu, GELU_TANH -> Gelu) of the fp32 row
    ``pre`` into ``act``, then the Cast of ComputeDequantAndActivate: bf16 with CAST_RINT, fp16 with CAST_NONE
    (round to nearest even on fp32 -> fp16)."""
    if ACT == ACT_FASTGELU:
        FasterGelu(act, pre, act, cnt, EXP_MODEL, DIV_MODEL)
    elif ACT == ACT_RELU:
        Relu(act, pre, cnt)
    elif ACT == ACT_SILU:
        Silu(act, pre, cnt, EXP_MODEL, DIV_MODEL)
    else:
        Gelu(act, pre, act, cnt, EXP_MODEL, DIV_MODEL)
    if OUT == _QK.OUT_BF16:
        for j in range(cnt):
            out_u16[j] = scalar.f32_to_bf16(act[j], scalar.CAST_RINT, False)
    else:
        for j in range(cnt):
            out_u16[j] = scalar.f32_to_f16(act[j], scalar.CAST_RINT, False)


@njit(cache=True, error_model="numpy")
def _dequant_block(row0, rows, col0, cols, n, base_n, vec_m, acc_i, acc_f, s2, pt, bias_i, bias_f, off9, cfg, work,
                   o8, y8):
    """Dequant of one block: column chunks of baseN (VectorCompute's nDim loop), row chunks of vecBaseM, each
    CopyIn -> the element chain -> Cast -> CopyOut (DataCopyPad2D into y)."""
    out_u16 = o8.view(np.uint16)
    out_f32 = o8.view(np.float32)
    out_i32 = o8.view(np.int32)
    out_i8 = o8.view(np.int8)
    use_pt = pt.size > 0
    for c0 in range(col0, col0 + cols, base_n):
        cn = min(base_n, col0 + cols - c0)
        for r0 in range(row0, row0 + rows, vec_m):
            rn = min(vec_m, row0 + rows - r0)
            for i in range(rn):
                r = r0 + i
                sc1 = pt[r] if use_pt else np.float32(1.0)
                if ACT == ACT_NONE:
                    _dequant_row(acc_i, acc_f, r * n + c0, bias_i, bias_f, c0, s2, c0, sc1, use_pt, off9, cfg,
                                 work, out_u16, out_f32, out_i32, out_i8, 0, cn)
                else:
                    _dequant_row_f32(acc_i, acc_f, r * n + c0, bias_i, bias_f, c0, s2, c0, sc1, use_pt, bias_i[:0],
                                     cfg, work, out_u16, out_f32, out_i32, out_i8, 0, cn)
                    _activate_and_cast(out_f32, work, out_u16, cn)
                dst = r * n + c0                                 # CopyOut (typed, element size OSIZE)
                if OSIZE == 2:
                    y16 = y8.view(np.uint16)
                    for j in range(cn):
                        y16[dst + j] = out_u16[j]
                elif OSIZE == 4:
                    y32 = y8.view(np.int32)
                    for j in range(cn):
                        y32[dst + j] = out_i32[j]
                else:
                    for j in range(cn):
                        y8[dst + j] = o8[j]


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def gmm_epilogue_kernel(walk, group_m, group_row, acc_i, acc_f, scale, pt, bias_i, bias_f, off9, cfg, y8):
    """GMMProcess::Process over the per-token / per-channel dequant of GMMQuantMixCoreCompute, every core a prange
    iteration. acc_i / acc_f: the int32 / fp32 L0C results (M*N, the GM workspace; one is empty); scale (G, N) fp32
    (bf16 scales widened exactly);
    pt (M,) fp32 or empty; bias_i (G, N) int32 or (G, 0); bias_f (G, N) fp32 or (G, 0); off9 (G, N) int32 or
    (G, 0), the int9 offsets of the uint64 FixPipe words (int8 out); y8: the output bytes.

    int8 out is the cube-only kernel (GMM_QUANT_INT8: ``SetQuantVector``, the FixPipe requantises L0C as it writes
    y): the element chain is the same (int32 + bias, x t19 scale, REQ8 with the offset), so it runs here on the same
    blocks."""
    single_m = walk[W_SINGLE_M]
    single_n = walk[W_SINGLE_N]
    base_n = walk[W_BASE_N]
    vec_m = walk[W_VEC_M]
    cores = walk[W_CORES]
    n = walk[W_N]
    for core in prange(cores):
        work = np.empty(base_n, np.float32)
        o8 = np.empty(4 * base_n, np.uint8)
        count = np.int64(0)                      # int64: block_idx's one signature (a literal 0 is another)
        for g in range(group_m.size):
            m = group_m[g]
            if m <= 0:
                continue
            dim_m = _cdiv(m, single_m)
            dim_n = _cdiv(n, single_n)
            cur_count = count + dim_m * dim_n
            cur = np.int64(core) if core >= count else np.int64(core) + cores
            while cur < cur_count:
                mi, ni = block_idx(cur, count, dim_m, dim_n, walk[W_DIAG])
                rows = min(single_m, m - mi * single_m)
                cols = min(single_n, n - ni * single_n)
                _dequant_block(group_row[g] + mi * single_m, rows, ni * single_n, cols, n, base_n, vec_m, acc_i,
                               acc_f, scale[g], pt, bias_i[g], bias_f[g], off9[g], cfg, work, o8, y8)
                cur += cores
            count = cur_count % cores
