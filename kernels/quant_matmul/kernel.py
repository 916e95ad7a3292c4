"""Per-core kernels of QuantBatchMatmulV3 (docs/ops/quant_matmul.md §7, §10): device code only, side by side with
op_kernel. The host side (which specialised copy runs, the access pattern, the launch) is launch.py.

Every kernel is ``kernel(block_dim, td, ub_size, *gm)`` (npu_emu.device.launch): ``for core in prange(block_dim)`` the
core walks its base blocks ``core, core + blockDim, ...`` in the order of :func:`tiling.block_coords` and, per
block, its UB tiles of ``ubCalcM`` rows x ``ubCalcN`` columns: CopyIn of the L0C result from the GM workspace
into UB, the epilogue in UB, CopyOut to GM. Blocks own disjoint output rectangles, so results do not depend on
the thread count or on the split.

* :func:`epilogue_kernel` (launched as launch.qbmm_epilogue_kernel) - the Fixpipe (cube path) or vector (mix path)
  dequantisation of docs/ops/quant_matmul.md §7.1-§7.3, §7.5 for int32 / fp32 accumulators; the arithmetic is the
  same float32 chain on both paths, only the order of the steps is selected by the plan (routing.QuantPlan) through
  the host-prepared operands.
* :func:`qbmm_perblock_kernel` - one k-block step of the 950 per-block accumulation (docs/ops/quant_matmul.md §7.4).
* :func:`qbmm_cube_faithful_kernel` - the integer cube block by block: per baseK chunk L0A/L0B loads and the
  instruction layer's Mmad into an int32 L0C; used with ``faithful=True`` to prove the fast exact primitive of
  accum.py bit-identical.

Rounding and overflow of every conversion go through ``npu_emu.dtypes.scalar`` (f32_to_f16, f32_to_bf16,
round_to_integral); ``cfg`` carries the plan's switches (the device's template parameters).
"""

import numpy as np
from numba import prange

from npu_emu.ascendc.constants import DT_AUTO
from npu_emu.ascendc.mmad import Mmad
from npu_emu.dtypes import scalar
from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.quant_matmul.tiling import block_coords
from npu_emu.device.launch import ub_view
from npu_emu.device.specialize import const, njit

OUT_F16, OUT_BF16, OUT_F32, OUT_INT8, OUT_INT32 = 0, 1, 2, 3, 4
OUT_CODES = {"float16": OUT_F16, "bfloat16": OUT_BF16, "float32": OUT_F32, "int8": OUT_INT8, "int32": OUT_INT32}
OUT_ITEMSIZE = {OUT_F16: 2, OUT_BF16: 2, OUT_F32: 4, OUT_INT8: 1, OUT_INT32: 4}

# cfg layout of epilogue_kernel
CFG_OUT, CFG_RMODE, CFG_SAT, CFG_BIAS_ROWS, CFG_ACC_INT, CFG_LEN = 0, 1, 2, 3, 4, 5

# The epilogue is specialised, as the device's is a template: each copy of this module (npu_emu.device.specialize) has the
# output type, the accumulator type and whether the output cast is the plain RINT one as constants, so a call
# compiles the chain of its own output type only. In a plain import they are None and the epilogue is only called
# through launch.qbmm_epilogue_kernel, which picks the copy.
OUT = const("OUT")                # OUT_* code
ACC_INT = const("ACC_INT")        # the accumulator is int32 (else fp32)
RINT = const("RINT")              # the output cast rounds with CAST_RINT and does not saturate


@njit(inline="always", cache=True, error_model="numpy")
def _cdiv(a, b):
    return (a + b - 1) // b


@njit(cache=True, error_model="numpy")
def _walk(td):
    """(geo, total): the block walk every per-core kernel shares. Core c takes blocks c, c + blockDim, ... below
    ``total`` (all batches), in tiling.block_coords order; ``_block(geo, idx)`` gives block idx's rectangle.
    ``geo`` holds the tiling fields as plain ints (numba's parfor bodies cannot take the nested tiling namedtuple).
    Not an IR inline: numba's parfor array analysis fails on the nested tuple an inlined version returns."""
    cube = td.matmulTiling
    l2 = td.tileL2cacheTiling
    geo = (cube.M, cube.N, cube.baseM, cube.baseN, l2.mTileCntL2, l2.nTileCntL2, l2.mTileBlock, l2.nTileBlock,
           l2.calOrder)
    return geo, td.params.batchC * _cdiv(cube.M, cube.baseM) * _cdiv(cube.N, cube.baseN)


@njit(inline="always", cache=True, error_model="numpy")
def _block(geo, idx):
    """(batch, row0, rows, col0, cols) of block ``idx`` (over all batches)."""
    m, n, base_m, base_n, m_tiles, n_tiles, m_tb, n_tb, order = geo
    m_cnt = _cdiv(m, base_m)
    n_cnt = _cdiv(n, base_n)
    per = m_cnt * n_cnt
    b = idx // per
    mi, ni = block_coords(idx % per, m_cnt, n_cnt, m_tiles, n_tiles, m_tb, n_tb, order)
    r0 = mi * base_m
    c0 = ni * base_n
    return b, r0, min(base_m, m - r0), c0, min(base_n, n - c0)


@njit(inline="always", cache=True, error_model="numpy")
def _requant_int8(v, off, rmode):
    """clamp(clamp(round(v), -256, 255) + off, -128, 127): the REQ8 int9 step, then the offset
    (docs/ops/quant_matmul.md §7.1)."""
    if v != v:
        return np.int8(0)  # NaN: undefined on the device (scales must be finite); npu-emu writes 0
    r = scalar.round_to_integral(np.float64(v), rmode)
    r = min(max(r, -256.0), 255.0)
    q = np.int64(r) + off
    return np.int8(min(max(q, -128), 127))


# ---- one UB row of the epilogue ----------------------------------------------------------------------------------
# The device runs the chain as vector instructions over the UB tile (CopyIn, Cast int32->fp32 CAST_RINT, Mul by
# x2Scale, Muls by x1Scale, Add bias, Cast to the output type, CopyOut). Each instruction is element-wise, so
# applying the whole chain element by element gives the same values with one pass over the row; the functions
# are kept out of the parfor body (inlining the codecs there makes numba's parallel compile minutes long).

@njit(inline="always", cache=True, error_model="numpy")
def _dequant_row(acc_i32, acc_f32, src, bias_i, bias_f, boff, s2, col0, sc1, use_s1, off9, cfg, work, out_u16,
                 out_f32, out_i32, out_i8, u0, cnt):
    """The epilogue's vector instructions over one UB row of ``cnt`` elements (each loop one instruction)."""
    rmode = cfg[CFG_RMODE]
    sat = cfg[CFG_SAT] != 0
    w = work[u0:u0 + cnt]
    # CopyIn (+ the int32 bias, the L0C start value) and Cast int32 -> fp32 with CAST_RINT
    if ACC_INT:
        if OUT == OUT_INT32:
            o = out_i32[u0:u0 + cnt]
            if bias_i.size > 0:
                for j in range(cnt):
                    o[j] = np.int32(np.int64(acc_i32[src + j]) + bias_i[boff + j])   # the int32 L0C wraps
            else:
                for j in range(cnt):
                    o[j] = acc_i32[src + j]
            return
        if bias_i.size > 0:
            for j in range(cnt):
                w[j] = np.float32(np.int32(np.int64(acc_i32[src + j]) + bias_i[boff + j]))
        else:
            for j in range(cnt):
                w[j] = np.float32(acc_i32[src + j])
    else:
        for j in range(cnt):
            w[j] = acc_f32[src + j]
    # Mul by x2Scale[n] (or Muls by the per-tensor scale), Muls by x1Scale[m], Add the float bias
    if s2.size > 1:
        for j in range(cnt):
            w[j] = w[j] * s2[col0 + j]
    elif s2.size == 1:
        sc2 = s2[0]
        for j in range(cnt):
            w[j] = w[j] * sc2
    if use_s1:
        for j in range(cnt):
            w[j] = w[j] * sc1
    if bias_f.size > 0:
        for j in range(cnt):
            w[j] = w[j] + bias_f[boff + j]
    # Cast to the output type (the common RINT, non-saturating case with constant arguments: it vectorises)
    if OUT == OUT_F16:
        o16 = out_u16[u0:u0 + cnt]
        if RINT:
            for j in range(cnt):
                o16[j] = scalar.f32_to_f16(w[j], scalar.CAST_RINT, False)
        else:
            for j in range(cnt):
                o16[j] = scalar.f32_to_f16(w[j], rmode, sat)
    elif OUT == OUT_BF16:
        o16 = out_u16[u0:u0 + cnt]
        if RINT:
            for j in range(cnt):
                o16[j] = scalar.f32_to_bf16(w[j], scalar.CAST_RINT, False)
        else:
            for j in range(cnt):
                o16[j] = scalar.f32_to_bf16(w[j], rmode, sat)
    elif OUT == OUT_F32:
        for j in range(cnt):          # (a slice assignment compiles numba's shape-error text: 1.5 s)
            out_f32[u0 + j] = w[j]
    else:
        n_off = off9.size
        for j in range(cnt):
            off = np.int64(off9[col0 + j if n_off > 1 else 0]) if n_off > 0 else np.int64(0)
            out_i8[u0 + j] = _requant_int8(w[j], off, rmode)


# bytes per output element of this copy
OSIZE = None if OUT is None else (4 if OUT in (OUT_F32, OUT_INT32) else (2 if OUT <= OUT_BF16 else 1))


@njit(cache=True, error_model="numpy")
def _epilogue_block(blk, m, n, ub_m, ub_n, acc_i32, acc_f32, s2, s1, bias_i, bias_f, off9, cfg, y8, ub):
    """One base block: its UB tiles of ub_m x ub_n, CopyIn -> dequant chain -> Cast -> CopyOut."""
    b, r0, rows, c0, cols = blk
    brow = b if cfg[CFG_BIAS_ROWS] > 1 else 0
    work = ub_view(ub, 0, np.float32, ub_m * ub_n)                # the fp32 tile the vector ops run on
    ob = 4 * ub_m * ub_n
    out_ub = ub_view(ub, ob, np.uint8, 4 * ub_m * ub_n)           # the cast result, as bytes
    out_u16 = ub_view(ub, ob, np.uint16, ub_m * ub_n)
    out_f32 = ub_view(ub, ob, np.float32, ub_m * ub_n)
    out_i32 = ub_view(ub, ob, np.int32, ub_m * ub_n)
    out_i8 = ub_view(ub, ob, np.int8, ub_m * ub_n)
    n_s1 = s1.size
    y16 = y8.view(np.uint16) if OSIZE == 2 else y8[:0].view(np.uint16)
    y32 = y8.view(np.int32) if OSIZE == 4 else y8[:0].view(np.int32)
    for t0 in range(0, rows, ub_m):
        t_rows = min(ub_m, rows - t0)
        for c_0 in range(0, cols, ub_n):
            t_cols = min(ub_n, cols - c_0)
            col0 = c0 + c_0
            for i in range(t_rows):
                row = r0 + t0 + i
                sc1 = s1[row if n_s1 > 1 else 0] if n_s1 > 0 else np.float32(1.0)
                _dequant_row(acc_i32, acc_f32, (b * m + row) * n + col0, bias_i, bias_f, brow * n + col0, s2, col0,
                             sc1, n_s1 > 0, off9, cfg, work, out_u16, out_f32, out_i32, out_i8, i * ub_n, t_cols)
            for i in range(t_rows):                            # CopyOut (typed, element size osize)
                dst = (b * m + r0 + t0 + i) * n + col0
                u0 = i * ub_n
                if OSIZE == 2:
                    for j in range(t_cols):
                        y16[dst + j] = out_u16[u0 + j]
                elif OSIZE == 4:
                    for j in range(t_cols):
                        y32[dst + j] = out_i32[u0 + j]
                else:
                    for j in range(t_cols):
                        y8[dst + j] = out_ub[u0 + j]


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def epilogue_kernel(block_dim, td, ub_size, acc_i32, acc_f32, s2, s1, bias_i, bias_f, off9, cfg, y8):
    """launch.qbmm_epilogue_kernel's njit body, in the copy for one output type."""
    m = td.matmulTiling.M
    n = td.matmulTiling.N
    geo, total = _walk(td)
    ub_m = td.params.ubCalcM
    ub_n = td.params.ubCalcN
    for core in prange(block_dim):
        ub = np.empty(ub_size, np.uint8)
        for idx in range(np.int64(core), total, block_dim):   # int64: the prange index may be unsigned
            _epilogue_block(_block(geo, idx), m, n, ub_m, ub_n, acc_i32, acc_f32, s2, s1, bias_i, bias_f, off9,
                            cfg, y8, ub)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def qbmm_perblock_kernel(block_dim, td, ub_size, part, x1s, x2s, acc, cfg):
    """One k-block j of the 950 per-block epilogue (block_epilogue_pertile.h, docs/ops/quant_matmul.md §7.4):
    s = f32(x1s[b, i // gsM, j] * x2s[b, j, c // gsN]); p = f32(part * s); acc = p if j == 0 else f32(p + acc).

    part: the fp32 block dot products of k-block j, flat (B, M, N); x1s flat (B, M1, G); x2s flat (B, G, N1).
    cfg: [j, gsM, gsN, G, M1, N1].
    """
    m = td.matmulTiling.M
    n = td.matmulTiling.N
    j = cfg[0]
    gs_m = cfg[1]
    gs_n = cfg[2]
    g = cfg[3]
    m1 = cfg[4]
    n1 = cfg[5]
    geo, total = _walk(td)
    for core in prange(block_dim):
        for idx in range(np.int64(core), total, block_dim):
            b, r0, rows, c0, cols = _block(geo, idx)
            for i in range(rows):
                row = r0 + i
                s_a = x1s[(b * m1 + row // gs_m) * g + j]
                base = (b * m + row) * n
                for c in range(c0, c0 + cols):
                    s = s_a * x2s[(b * g + j) * n1 + c // gs_n]
                    p = part[base + c] * s
                    acc[base + c] = p if j == 0 else p + acc[base + c]


@njit(cache=True, error_model="numpy")
def _cube_block(blk, m, n, k, base_k, a, b, acc, l0a, l0b, l0c, l0a_nz):
    """One base block on the cube: per baseK chunk load L0A (Zz on A2/A3, Nz on 950; k contiguous for the m = 1
    GEMV) and L0B (Zn) from GM, Mmad into L0C (the first chunk initialises C), then move L0C (Nz) to the GM
    workspace (the Fixpipe copy without quantisation)."""
    bb, r0, rows, c0, cols = blk
    m1 = (rows + 15) // 16
    n1 = (cols + 15) // 16
    gemv = rows == 1
    for k0 in range(0, k, base_k):
        kc = min(base_k, k - k0)
        k1 = (kc + 31) // 32
        for i in range(rows):
            src = (bb * m + r0 + i) * k + k0
            for t in range(kc):
                if gemv:
                    pos = t
                elif l0a_nz:
                    pos = ((t // 32) * m1 + i // 16) * 512 + (i % 16) * 32 + t % 32
                else:
                    pos = ((i // 16) * k1 + t // 32) * 512 + (i % 16) * 32 + t % 32
                l0a[pos] = a[src + t]
        for t in range(kc):
            src = (bb * k + k0 + t) * n + c0
            for j in range(cols):
                l0b[((t // 32) * n1 + j // 16) * 512 + (j % 16) * 32 + t % 32] = b[src + j]
        Mmad(l0c, l0a, l0b, rows, cols, kc, k0 == 0, False, None, DT_AUTO, DT_AUTO, False, l0a_nz, False)
    for i in range(rows):
        dst = (bb * m + r0 + i) * n + c0
        for j in range(cols):
            acc[dst + j] = l0c[(j // 16) * m1 * 256 + i * 16 + j % 16]


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def qbmm_cube_faithful_kernel(block_dim, td, ub_size, a, b, acc, cfg):
    """The integer cube of every base block through the instruction layer's Mmad (npu_emu.ascendc.mmad).

    a: int8 (B, M, K) flat, b: int8 (B, K, N) flat (batch broadcast materialised; INT4 values widened to int8,
    which gives the same products), acc: int32 (B, M, N) flat GM workspace. cfg: [l0a_nz].
    """
    cube = td.matmulTiling
    m = cube.M
    n = cube.N
    k = cube.Ka
    bk = cube.baseK
    geo, total = _walk(td)
    a_size = _cdiv(cube.baseM, 16) * 16 * _cdiv(bk, 32) * 32
    b_size = _cdiv(bk, 32) * 32 * _cdiv(cube.baseN, 16) * 16
    c_size = _cdiv(cube.baseM, 16) * _cdiv(cube.baseN, 16) * 256
    l0a_nz = cfg[0] != 0
    for core in prange(block_dim):
        l0a = np.zeros(a_size, np.int8)
        l0b = np.zeros(b_size, np.int8)
        l0c = np.zeros(c_size, np.int32)
        for idx in range(np.int64(core), total, block_dim):
            _cube_block(_block(geo, idx), m, n, k, bk, a, b, acc, l0a, l0b, l0c, l0a_nz)
