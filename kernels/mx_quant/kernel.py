"""Per-core kernels of GroupedDynamicMxQuant and DynamicMxQuant (Ascend 950, arch35): device code only, side by side
with op_kernel. The host side (which specialised copy a call runs, the GM access patterns, the tiling checks and the
launchers :func:`run_grouped` / :func:`run_dynamic`) is launch.py.

GroupedDynamicMxQuant transliterates hicann/ops-nn: quant/grouped_dynamic_mx_quant/op_kernel/arch35/
grouped_dynamic_mx_quant_combine.h on quant/quant_common/op_kernel/grouped_split_base.h (ProcessBase: the groups
in order, each group's 64 x 128 tiles spread over the cores from a rotating offset) and
quant/quant_common/op_kernel/mx_quant_common.h (ComputeMxScaleOCP / ComputeMxScaleCuBLAS /
ComputeMxScaleDynamicDtypeRange, ComputeData, ComputeFP4FromFp32). DynamicMxQuant runs the same per-block
arithmetic (quant/dynamic_mx_quant/op_kernel/arch35/dynamic_mx_quant_tail_axis*.h, ..._not_tail_axis*.h) over
npu-emu's unit decomposition (tiling.py).

Specialised, as the C++ kernels are templates: the output format ``DST`` (a D_* kind, the template's U) and the
path ``MODE`` are constants of each copy of this module, loaded by launch.device through npu_emu.specialize, so a
call compiles the loops of its own format and path only (numba prunes the ``if DST == ...`` branches of the other
formats before typing them). The format-independent block arithmetic (element loads, the block statistic and
scale, the tile walk) is in common.py and compiled once. A plain ``import`` of this module gives its constants
(the M_* paths, FUSED_COLS); its device functions are only called through a specialised copy.

The 950 kernels are register-level (Reg::) vector functions; here each becomes a loop over the UB tile with the same
rounding points: the block maximum (integer or floating), the scale code, one FP32 multiply by the power-of-two
reciprocal (a BF16 multiply for DynamicMxQuant BF16 inputs) and one saturating conversion through the codecs of
npu_emu.dtypes.scalar. With ``faithful`` (MODE M_FAITHFUL) each tile goes GM -> UB (DataCopyPad), Compute,
UB -> GM (DataCopyPad); otherwise the same compute functions read and write GM directly (and convert elements as
below).

Speed (MODE M_FAST: BF16 inputs with RINT and no switches: ftz, unsigned zeros, high-nibble-first FP4): _convert_fast
/ _convert_run, the element multiply and the codecs of npu_emu.dtypes in loops over contiguous row slices without
calls or data-dependent branches, which LLVM vectorises. Where a block's reciprocal is a normal power of two in range
(_pow2_shift: every block but zero, Inf/NaN and extreme ones), the product's BF16 bits are an integer add and the cast
is rint_code_bf16_pow2, all in 16-bit lanes, proven equal to the FP32 product and codecs exhaustively
(tests/dtypes/test_pow2_codes.py). Runs along a row (DynamicMxQuant on the last axis) take its vector forms of
npu_emu.dtypes.vector, 32 elements a call (_run_blocks); with OCP scales one pass per block forms the block maximum,
the scale and the codes while the block is in L1. FP8 there takes the normal-only form, which flags the chunks
holding a code that is a nonzero subnormal one (or NaN/Inf inputs): rare within one token's block, so the blocks
holding one are formed again by the full form (_pow2_redo). Other blocks are converted again through the FP32 loops
(_fp32_rows: the codecs written with selects, encode_e4m3fn, encode_e5m2, the RINT path of the FP4 encoders), or the
whole call is when more than an eighth of its columns are such. Column blocks (the grouped op, DynamicMxQuant off
the last axis) take the block maxima row by row over a run of columns, then encode row by row with one shift per
column (_pow2_rows: the vector forms with a shift per lane, FP8 again in the normal-only form, chunks it flags formed
again at once by the full form). Their OCP scale codes and reciprocals are one branch-free loop too (_ocp_scales),
and the grouped op walks 64-row slabs of FUSED_COLS columns instead of the device's 64 x 128 tiles
(grouped_fused_kernel), which read x in short pieces of far-apart rows. MODE M_HALF (FP16 inputs, M_FAST's
conditions otherwise) runs the FP32 loops (_fp32_rows, reading FP16) on the same walks, with each block's statistic
from the maximum of |x|'s 16 bits where the key allows it (_half_keys). MODE M_ELEMENT (other inputs or switches)
converts every element through _enc_one, the per-element transliteration, on the same walks; M_FAITHFUL stages
every tile through UB and converts through _enc_one. The tests prove the paths equal
(tests/kernels/mx_quant/test_mx_fast.py) and equal to the golden.

Cores write disjoint GM ranges, so results do not depend on the host thread count.
"""

import numpy as np
from numba import prange

from npu_emu.dtypes.scalar import (
    CAST_RINT,
    bf16_to_f32,
    encode_e4m3fn,
    encode_e5m2,
    encode_fp4_e1m2,
    encode_fp4_e2m1,
    f16_to_f32,
    f32_as_u32,
    pow2_bias,
    pow2_shift_ok,
    rint_code_bf16_pow2,
    u32_as_f32,
)
from npu_emu.dtypes.vector import (
    LANES,
    bf16_masked_max32,
    e1m2_pow2_full32,
    e1m2_pow2_full_cols32,
    e2m1_pow2_full32,
    e2m1_pow2_full_cols32,
    e4m3_pow2_full_cols32,
    e4m3_pow2_normal32,
    e4m3_pow2_normal_cols32,
    e5m2_pow2_full_cols32,
    e5m2_pow2_normal32,
    e5m2_pow2_normal_cols32,
)
from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.mx_quant.common import (  # noqa: F401  (the constants and helpers are part of this module's API)
    _0,
    _1,
    ALG_OCP,
    ALG_RANGE,
    ALG_RCEIL,
    ALG_RCEIL_NOSUB,
    D_E1M2,
    D_E2M1,
    D_E4M3,
    D_E5M2,
    D_KIND,
    EMAX_OF,
    P_ADD,
    P_ALG,
    P_BF16_MUL,
    P_DST,
    P_DYN,
    P_FAITHFUL,
    P_FTZ,
    P_HIGH_FIRST,
    P_LEGACY,
    P_LEN,
    P_NAN_IGNORE,
    P_RMODE,
    P_SIGNED_ZERO,
    P_XK,
    RANGE_ADD,
    ROUND_MODE,
    X_BF16,
    X_F16,
    X_F32,
    X_KIND,
    _block_scale,
    _copy_in,
    _copy_out,
    _f16_bf16_exponent,
    _load,
    _ocp_code_recip,
    _ocp_scales,
    _scale,
    _scaled,
    _stat_key,
    _stats,
    _tile_table,
    _unsign_zero,
    grouped_core_tiles,
    make_params,
)
from npu_emu.device.launch import ub_view
from npu_emu.device.specialize import const, njit

# numba inlines (inline="always") the helpers that walk a row or a run and the element casts inside those loops
# (a few call sites each per copy; their format constants and literal lengths must fold before LLVM's vectoriser
# sees the loop), and the per-core and per-tile/unit functions that have one call site: every function numba
# compiles on its own is optimised again, with everything it calls, by each function that calls it, so a deep
# chain of one-call functions costs LLVM time at every level (the DynamicMxQuant E4M3 kernel: 23 -> 19 s cold,
# measured on a loaded box). Everything else is an ordinary call: inlining copies a function's IR into every call
# site and types it again there, which is where the kernels' first call used to spend minutes.
_INL = dict(inline="always", cache=True, error_model="numpy")
_FN = dict(cache=True, error_model="numpy")

# the paths (MODE): the vectorised BF16/RINT loops, per-element codecs on the same walks, the UB-staged tiles, and
# the vectorised FP32 loops for FP16 inputs (RINT, no switches: M_FAST's conditions)
M_FAST, M_ELEMENT, M_FAITHFUL, M_HALF = 0, 1, 2, 3

# the walks of DynamicMxQuant (WALK): along the last axis (rows of blocks; W_ROWS32: of the default 32 elements), along
# another axis (column blocks), or either, chosen per unit at run time (the dual-axis and grouped kernels, which use
# neither dynamic walk)
W_ANY, W_ROWS, W_COLS, W_ROWS32 = 0, 1, 2, 3

DST = const("DST")          # D_* kind of this copy (None in a plain import: no device function may compile)
MODE = const("MODE")        # M_* path of this copy
# a call along the last axis never runs the column walk and vice versa: a copy per walk compiles only its loops
# (DynamicMxQuant E4M3, one cold call: 22.3 -> 13.8 CPU-s along the last axis, 30.2 -> 15.9 along axis -2)
WALK = const("WALK", W_ANY)
# 1 when the copy walks only the last axis / only column blocks / only 32-element blocks along the last axis; numba
# prunes a branch on a comparison of such constants before it types the branch
ROWS_ONLY = int(WALK == W_ROWS or WALK == W_ROWS32)
COLS_ONLY = int(WALK == W_COLS)
# 1 in a copy whose runs are all of 32-element blocks: its 16-bit pass compiles no copy for a run-time block length
BS32_ONLY = int(WALK == W_ROWS32)
# OCP: 0 in a copy no call of which uses the OCP scale algorithm (the dual-axis kernel's scale_alg 1 / 2 copy): it
# compiles no OCP scale loop. NO16: 1 in a copy that converts through the FP32 loops alone, never the 16-bit forms
# (_pow2_rows, _convert_run): the dual-axis kernel's per-axis walk, which only its scale_alg 1 / 2 calls take
# (scale_alg 0, MindSpeed's, takes the fused walk). Those forms for both block shapes were a third of such a call's
# first-call compile (E4M3 scale_alg 1: 15.3 -> 10.6 s, FP4 scale_alg 2: 17.2 -> 12.2 s, one fresh process, empty
# cache, 2026-12-06), for 1.5-1.6x the time at [8192, 7168] (E4M3 37-58 -> 58-84 ms, FP4 34 -> 53-56 ms)
OCP_SCALES = int(const("OCP", 1))
NO16 = int(const("NO16", 0))
FP4 = DST is not None and DST >= D_E2M1
FAST = MODE == M_FAST
FAITHFUL = MODE == M_FAITHFUL
HALF = MODE == M_HALF


def _p2_constants(dst):
    """rint_code_bf16_pow2's format constants of D_* kind ``dst``: (mantissa bits, smallest normal exponent, largest
    finite code, sign bit); module constants of each copy, so they fold before LLVM's vectoriser sees the loops."""
    if dst is None:
        return 0, 0, 0, 0
    return ((3, 2, 1, 2)[dst], (-6, -14, 0, 0)[dst], (0x7E, 0x7B, 7, 7)[dst], 3 if dst >= D_E2M1 else 7)


P2_MB, P2_EMIN, P2_MAX, P2_SBIT = _p2_constants(DST)


# ---------------------------------------------------------------------------------------------------------------
# element conversion (the output format DST of this copy)
# ---------------------------------------------------------------------------------------------------------------

@njit(**_FN)
def _enc_one(b, xk, recip, rmode, ftz, bf16_mul, sz):
    """One element through the codecs, as the kernel forms it (multiply, then the saturating cast): the per-element
    path (M_ELEMENT, M_FAITHFUL) and every case _convert_fast does not take."""
    v = _scaled(b, xk, recip, ftz, bf16_mul)
    if DST == D_E4M3:
        return _unsign_zero(encode_e4m3fn(v, True, False), np.uint8(0x80), sz)
    if DST == D_E5M2:
        return _unsign_zero(encode_e5m2(v, True, False), np.uint8(0x80), sz)
    if DST == D_E2M1:
        return _unsign_zero(encode_fp4_e2m1(v, rmode, False), np.uint8(8), sz)
    return _unsign_zero(encode_fp4_e1m2(v, rmode, False), np.uint8(8), sz)


@njit(**_INL)
def _rint_code(v):
    """The saturating element cast with RINT (FP8: NaN -> 0; FP4: NaN -> 0, code in the low nibble)."""
    if DST == D_E4M3:
        return encode_e4m3fn(v, True, False)
    if DST == D_E5M2:
        return encode_e5m2(v, True, False)
    if DST == D_E2M1:
        return encode_fp4_e2m1(v, CAST_RINT, False)
    return encode_fp4_e1m2(v, CAST_RINT, False)


@njit(**_INL)
def _widen(h):
    """The FP32 value of one input element's 16 bits: FP16 in an M_HALF copy, BF16 otherwise."""
    if HALF:
        return f16_to_f32(h)
    return bf16_to_f32(h)


@njit(**_INL)
def _fast_row(xr, yr, recips, rc, ncols, per_col):
    """One row of _convert_fast (and of M_HALF's _convert). Called with a constant ``per_col``, so that after
    inlining each copy is one loop without branches (a runtime choice inside the loop keeps LLVM from vectorising
    it)."""
    if not FP4:
        for j in range(ncols):
            yr[j] = _rint_code(_widen(xr[j]) * (recips[j] if per_col else rc))
    else:
        for j in range(ncols // 2):
            lo = _rint_code(_widen(xr[2 * j]) * (recips[2 * j] if per_col else rc))
            hi = _rint_code(_widen(xr[2 * j + 1]) * (recips[2 * j + 1] if per_col else rc))
            yr[j] = np.uint8(lo | (hi << 4))


RUN_CHUNK = LANES               # elements per vector call of a run's 16-bit pass (every block holds a whole number)


@njit(**_INL)
def _pow2_code(h, dd):
    """rint_code_bf16_pow2 with the format constants of DST (FP4: code in the low nibble)."""
    return rint_code_bf16_pow2(h, dd, P2_MB, P2_EMIN, P2_MAX, P2_SBIT)


@njit(**_INL)
def _pow2_shift(r):
    """(pow2_bias of the reciprocal r = 2^(e - 127), whether rint_code_bf16_pow2 takes r): not for NaN, zero,
    2^-127, or a reciprocal so large that subnormal inputs would leave zero."""
    u = f32_as_u32(r)
    ok = ((u & np.uint32(0xFFFF)) == 0) & pow2_shift_ok(u >> np.uint32(16), P2_MB, P2_EMIN)
    return pow2_bias(u >> np.uint32(16), P2_EMIN), ok


@njit(**_FN)
def _pow2_shifts(recips, ncols, dcol):
    """dcol[j] = the shift of recips[j] (_pow2_shift); returns how many reciprocals rint_code_bf16_pow2 does not
    take (their dcol entries are meaningless)."""
    bad = 0
    for j in range(ncols):
        d, ok = _pow2_shift(recips[j])
        dcol[j] = d
        bad += np.int64(1) - np.int64(ok)
    return bad


@njit(**_INL)
def _pow2_row(xr, yr, dcol, ncols):
    """One row through the 16-bit casts, shift dcol[j] for element j: whole chunks of LANES columns through the
    vector forms with one shift per lane, the rest through rint_code_bf16_pow2. FP8 takes the normal-only form first
    and the full form again over a chunk it flags, at once, while the chunk is in L1: a column block spans tokens of
    different magnitudes, so flagged chunks are common (28 % of the E4M3 chunks of the grouped benchmark's data),
    but the two forms together still cost less than the full form alone (0.26 against 0.31 ns/element, one thread,
    L2-resident; the scalar loop LLVM vectorised took 0.37)."""
    nch = ncols // LANES
    for c in range(nch):
        j = c * LANES
        if DST == D_E4M3:
            if e4m3_pow2_normal_cols32(xr, j, yr, j, dcol, j):
                e4m3_pow2_full_cols32(xr, j, yr, j, dcol, j)
        elif DST == D_E5M2:
            if e5m2_pow2_normal_cols32(xr, j, yr, j, dcol, j):
                e5m2_pow2_full_cols32(xr, j, yr, j, dcol, j)
        elif DST == D_E2M1:
            e2m1_pow2_full_cols32(xr, j, yr, j // 2, dcol, j)
        else:
            e1m2_pow2_full_cols32(xr, j, yr, j // 2, dcol, j)
    if not FP4:
        for j in range(nch * LANES, ncols):
            yr[j] = _pow2_code(xr[j], dcol[j])
    else:
        for j in range(nch * LANES // 2, ncols // 2):
            yr[j] = np.uint8(_pow2_code(xr[2 * j], dcol[2 * j]) | (_pow2_code(xr[2 * j + 1], dcol[2 * j + 1]) << 4))


@njit(**_FN)
def _pow2_rows(xs, xb, xstride, r0, r1, ncols, dcol, ys, yb, ystride):
    """Rows [r0, r1) through _pow2_row with the shifts dcol (one per column)."""
    ybytes = ncols // 2 if FP4 else ncols
    for r in range(r0, r1):
        row, yrow = xb + r * xstride, yb + r * ystride
        _pow2_row(xs[row:row + ncols], ys[yrow:yrow + ybytes], dcol, ncols)


@njit(**_FN)
def _pow2_redo(xs, x0, n, dd, ys, y0):
    """n elements from xs[x0] (FP4: n even, packed from ys[y0]) through the full rint_code_bf16_pow2 with one shift
    dd: a run block the normal-only form flagged, or one that ends in a short chunk."""
    if not FP4:
        xr, yr = xs[x0:x0 + n], ys[y0:y0 + n]
        for i in range(n):
            yr[i] = _pow2_code(xr[i], dd)
    else:
        xr, yr = xs[x0:x0 + n], ys[y0:y0 + n // 2]
        for i in range(n // 2):
            yr[i] = np.uint8(_pow2_code(xr[2 * i], dd) | (_pow2_code(xr[2 * i + 1], dd) << 4))


@njit(**_FN)
def _fp32_rows(xs, xb, xstride, r0, r1, ncols, recips, rrs, rcs, ys, yb, ystride):
    """_convert_fast's FP32 loops: the product formed in FP32, then the FP32 codecs; reciprocal r * rrs + j * rcs."""
    ybytes = ncols // 2 if FP4 else ncols
    for r in range(r0, r1):
        row, yrow = xb + r * xstride, yb + r * ystride
        xr, yr = xs[row:row + ncols], ys[yrow:yrow + ybytes]
        rc = recips[r * rrs]
        # column blocks: one reciprocal per column (the only kind of a column-walk copy, never in a last-axis one)
        if ROWS_ONLY == 0 and (COLS_ONLY == 1 or rcs == 1):
            _fast_row(xr, yr, recips, rc, ncols, True)
        else:                                             # a run: one block per row
            _fast_row(xr, yr, recips, rc, ncols, False)


@njit(**_FN)
def _convert_fast(xs, xb, xstride, r0, r1, ncols, recips, rrs, rcs, ys, yb, ystride):
    """_convert for BF16 input, RINT, no switches: the multiply and codecs of _enc_one in loops over contiguous row
    slices that LLVM vectorises. It forms every product in FP32: DynamicMxQuant's BF16 multiply differs only for
    products below 2^-126, which every RINT cast here takes to a zero of the same sign either way (proven over all
    BF16 inputs and scales in tests/kernels/mx_quant/test_mx_fast.py).

    Column blocks (rcs == 1) whose reciprocals are normal powers of two in range cast in 16-bit lanes (_pow2_rows,
    twice the lanes of the FP32 loops); the few columns whose reciprocal is not (zero, Inf/NaN and extreme blocks)
    are converted again through the FP32 loops. When more than an eighth of the columns are such, the whole call
    takes the FP32 loops. A copy for the last axis (ROWS_ONLY) has no column blocks: it compiles no 16-bit column
    loops; a NO16 copy takes the FP32 loops for every call."""
    if NO16 == 0 and ROWS_ONLY == 0 and rcs == 1:
        dcol = np.empty(ncols, np.int16)
        bad = _pow2_shifts(recips, ncols, dcol)
        if 8 * bad <= ncols:
            _pow2_rows(xs, xb, xstride, r0, r1, ncols, dcol, ys, yb, ystride)
            if bad > 0:
                step = np.int64(2 if FP4 else 1)          # an FP4 byte holds a pair of columns
                for j in range(0, ncols, step):
                    if not (_pow2_shift(recips[j])[1] and _pow2_shift(recips[j + step - 1])[1]):
                        _fp32_rows(xs, xb + j, xstride, r0, r1, step, recips[j:], _0, _1, ys,
                                   yb + (j // 2 if step == 2 else j), ystride)
            return
    _fp32_rows(xs, xb, xstride, r0, r1, ncols, recips, rrs, rcs, ys, yb, ystride)


@njit(**_INL)
def _run_blocks(xs, xb, nblk, bs, last, recips, ys, yb, todo, fused, ss, sb, em, legacy):
    """_run_pass's block loop. No inlined calls that take arrays inside the block loop: numba increfs and decrefs
    every array an inlined function takes, at each call, which cost this loop about half its time (32.7 against
    21.6 ms for the E4M3 pass at the benchmark shape). With ``fused`` each block's OCP scale is formed first, from
    the maximum of its exponent fields while the block is in L1: code to ss[sb + b], reciprocal to recips[b] (what
    _ocp_scales gives); otherwise recips holds the reciprocals. A short last block (``last`` < bs) gets its scale
    here and is left whole to the full form (todo 1) or the FP32 loops (todo 2)."""
    yc = RUN_CHUNK // 2 if FP4 else RUN_CHUNK
    ybs = bs // 2 if FP4 else bs
    nch = bs // RUN_CHUNK
    full = nblk if last == bs or nblk == 0 else nblk - 1
    left = 0
    for b in range(full):
        x0, y0 = xb + b * bs, yb + b * ybs
        if OCP_SCALES == 1 and fused:
            m = bf16_masked_max32(xs, x0, np.uint16(0x7F80))
            for c in range(1, nch):
                m = max(m, bf16_masked_max32(xs, x0 + c * RUN_CHUNK, np.uint16(0x7F80)))
            code, rb = _ocp_code_recip(np.int64(m) >> 7, em, legacy)
            ss[sb + b] = np.uint8(code)
            recips[b] = u32_as_f32(np.uint32(rb << 16))
        dd, ok = _pow2_shift(recips[b])
        t = np.int8(2)
        if ok:
            redo = False
            for c in range(nch):
                # FP8: the normal-only form, which says whether it flagged an element; FP4: the full form
                if DST == D_E4M3:
                    redo |= e4m3_pow2_normal32(xs, x0 + c * RUN_CHUNK, ys, y0 + c * yc, dd)
                elif DST == D_E5M2:
                    redo |= e5m2_pow2_normal32(xs, x0 + c * RUN_CHUNK, ys, y0 + c * yc, dd)
                elif DST == D_E2M1:
                    e2m1_pow2_full32(xs, x0 + c * RUN_CHUNK, ys, y0 + c * yc, dd)
                else:
                    e1m2_pow2_full32(xs, x0 + c * RUN_CHUNK, ys, y0 + c * yc, dd)
            t = np.int8(1) if redo else np.int8(0)
        todo[b] = t
        left += t != 0
    if full < nblk:
        b = nblk - 1
        if OCP_SCALES == 1 and fused:
            m = np.uint16(0)
            for i in range(last):
                m = max(m, np.uint16(xs[xb + b * bs + i] & np.uint16(0x7F80)))
            code, rb = _ocp_code_recip(np.int64(m) >> 7, em, legacy)
            ss[sb + b] = np.uint8(code)
            recips[b] = u32_as_f32(np.uint32(rb << 16))
        todo[b] = np.int8(1) if _pow2_shift(recips[b])[1] else np.int8(2)
        left += 1
    return left


@njit(**_FN)
def _run_pass(xs, xb, nblk, bs, last, recips, ys, yb, todo, fused, ss, sb, em, legacy):
    """The 16-bit pass over a run of blocks (see _convert_run): the whole blocks whose reciprocal the 16-bit forms
    take; todo[b] = 0 (done), 1 (form the block again with the full form: the normal-only form flagged an element, or
    the block is a short last one) or 2 (a reciprocal the 16-bit forms do not take). Returns how many blocks are not
    done. Blocks of RUN_CHUNK elements (the default block size) take a copy of the block loop in which the length is
    a constant: with the length known only at run time the chunk loops cost the E4M3 pass a third (21.6 against
    14.9 ms). A copy for 32-element blocks only (BS32_ONLY) compiles that copy alone."""
    if BS32_ONLY == 1 or bs == RUN_CHUNK:
        return _run_blocks(xs, xb, nblk, RUN_CHUNK, last, recips, ys, yb, todo, fused, ss, sb, em, legacy)
    return _run_blocks(xs, xb, nblk, bs, last, recips, ys, yb, todo, fused, ss, sb, em, legacy)


@njit(**_FN)
def _convert_run(xs, xb, nblk, bs, last, recips, ys, yb, todo, fused, ss, sb, em, legacy):
    """A run of ``nblk`` blocks of ``bs`` elements (a multiple of RUN_CHUNK; the last ``last`` long), reciprocal b for
    block b (with ``fused``: formed here, see _run_blocks), in 16-bit lanes (_run_pass; FP8 in the normal-only form);
    then the blocks it leaves: formed again whole by the full rint_code_bf16_pow2 (a flagged element, or a short
    last block), or through the FP32 loops (reciprocals the 16-bit forms do not take).
    ``todo``: scratch of nblk bytes."""
    if _run_pass(xs, xb, nblk, bs, last, recips, ys, yb, todo, fused, ss, sb, em, legacy) == 0:
        return
    ybs = bs // 2 if FP4 else bs
    for b in range(nblk):
        n = bs if b < nblk - 1 else last
        if todo[b] == 1:
            _pow2_redo(xs, xb + b * bs, n, _pow2_shift(recips[b])[0], ys, yb + b * ybs)
        elif todo[b] == 2:
            _fp32_rows(xs, xb + b * bs, _0, _0, _1, n, recips[b:], _0, _0, ys, yb + b * ybs, _0)


@njit(**_FN)
def _convert(xs, xb, xstride, r0, r1, ncols, recips, rrs, rcs, ys, yb, ystride, p):
    """Rows [r0, r1) x ncols columns of x -> codes (FP4: packed pairs, ncols even); y row r at ys[yb + r * ystride].

    A block's reciprocal is at index r * rrs + j * rcs: (0, 1) for column blocks, (1, 0) for runs laid out as rows.
    M_FAST takes _convert_fast and M_HALF its FP32 loops (the arithmetic of _enc_one, vectorised; tests prove them
    equal); the other paths run every element through _enc_one (the kernel's multiply, then the codec)."""
    if FAST:
        _convert_fast(xs, xb, xstride, r0, r1, ncols, recips, rrs, rcs, ys, yb, ystride)
        return
    if HALF:
        # FP16 inputs: exact in FP32, and never the BF16 multiply, so _enc_one's product is the FP32 one here too
        _fp32_rows(xs, xb, xstride, r0, r1, ncols, recips, rrs, rcs, ys, yb, ystride)
        return
    xk, rmode = p[P_XK], p[P_RMODE]
    ftz, sz, hf = p[P_FTZ] != 0, p[P_SIGNED_ZERO] != 0, p[P_HIGH_FIRST]
    bf16_mul = p[P_BF16_MUL] != 0 and xk == X_BF16
    for r in range(r0, r1):
        row, yrow, rr = xb + r * xstride, yb + r * ystride, r * rrs
        if not FP4:
            for j in range(ncols):
                ys[yrow + j] = _enc_one(_load(xs, row + j, xk), xk, recips[rr + j * rcs], rmode, ftz, bf16_mul, sz)
        else:
            for j in range(0, ncols, 2):
                pair = np.uint8(0)
                for h in range(2):
                    c = _enc_one(_load(xs, row + j + h, xk), xk, recips[rr + (j + h) * rcs], rmode, ftz, bf16_mul, sz)
                    pair |= np.uint8(c << (4 * (h ^ hf)))
                ys[yrow + j // 2] = pair


@njit(**_FN)
def _fast_scales(p):
    """Whether a block row's scales may take _ocp_scales (not the UB-staged path, OCP, no ftz) instead of
    _block_scale."""
    return OCP_SCALES == 1 and not FAITHFUL and p[P_ALG] == ALG_OCP and p[P_FTZ] == 0


# ---------------------------------------------------------------------------------------------------------------
# block shapes: column blocks (rows x cols, one scale per column) and runs (blocks along a row, one scale each)
# ---------------------------------------------------------------------------------------------------------------

@njit(**_FN)
def _half_keys(alg, nan_ignore):
    """Whether an M_HALF copy forms the block statistics from the maximum of |x|'s 16 bits (_half_stats): the OCP
    rule, and RCEIL when NaN counts. Both keys (_stat_key) are non-decreasing in those bits (OCP: the exponent of
    |x| truncated to BF16, 255 for Inf and NaN; RCEIL: the bits themselves), so the key of the maximum is the
    maximum of the keys. The dynamic-range key rounds to BF16, so it stays per element."""
    return alg == ALG_OCP or (alg != ALG_RANGE and not nan_ignore)


@njit(**_FN)
def _half_stats(xs, xb, xstride, r0, r1, ncols, stat, stat16, ocp):
    """_stats for FP16 inputs where _half_keys holds: the column maxima of |x|'s bits in uint16 lanes (the loops
    vectorise), then one key per column."""
    for j in range(ncols):
        stat16[j] = 0
    for r in range(r0, r1):
        xr = xs[xb + r * xstride:xb + r * xstride + ncols]
        for j in range(ncols):
            stat16[j] = max(np.uint16(xr[j] & np.uint16(0x7FFF)), stat16[j])
    for j in range(ncols):
        stat[j] = _f16_bf16_exponent(np.int64(stat16[j])) if ocp else np.int64(stat16[j])


@njit(**_FN)
def _column_blocks(xs, xb, xstride, r0, r1, ncols, ys, yb, ystride, ss, sb, slot, scr, scr16, recips, p,
                   r32, mlb32):
    """Rows [r0, r1) of a tile, ``ncols`` columns: one block per column. Scale code of column j goes to
    ss[sb + 2 * j + slot]; y row r starts at ys[yb + r * ystride] (packed bytes for FP4)."""
    if HALF and _half_keys(p[P_ALG], p[P_NAN_IGNORE] != 0):
        _half_stats(xs, xb, xstride, r0, r1, ncols, scr, scr16, p[P_ALG] == ALG_OCP)
    else:
        _stats(xs, xb, xstride, r0, r1, ncols, scr, scr16, p[P_XK], p[P_ALG], p[P_DYN] != 0,
               p[P_NAN_IGNORE] != 0)
    if OCP_SCALES == 1 and _fast_scales(p):
        _ocp_scales(scr, ncols, EMAX_OF[DST], p[P_LEGACY] != 0, recips, ss, sb + slot, np.int64(2))
    else:
        for j in range(ncols):
            code, recips[j] = _block_scale(scr[j], p, r32, mlb32)
            ss[sb + 2 * j + slot] = np.uint8(code)
    _convert(xs, xb, xstride, r0, r1, ncols, recips, _0, _1, ys, yb, ystride, p)


@njit(**_FN)
def _row_blocks(xs, xb, nblk, bs, last, pad, ys, yb, ss, sb, scr, recips, todo, p, r32, mlb32):
    """``nblk`` consecutive blocks of ``bs`` elements from xs[xb] (the last one ``last`` long), codes to
    ss[sb + b] followed by ``pad`` 0x00 pad slots; y from ys[yb] (FP4: packed; bs and last even). ``todo``: scratch
    of one byte per block for M_FAST's _convert_run (empty: the per-block _convert)."""
    xk, alg, dyn, ni = p[P_XK], p[P_ALG], p[P_DYN] != 0, p[P_NAN_IGNORE] != 0
    fast = FAST and NO16 == 0 and todo.size >= nblk and bs % RUN_CHUNK == 0
    # fused: the OCP scales are formed block by block inside the 16-bit pass (_run_blocks), which then reads x once
    fused = fast and _fast_scales(p)
    for b in range(nblk if not fused else 0):
        n = bs if b < nblk - 1 else last
        row = xb + b * bs
        m = np.int64(0)
        if xk == X_BF16 and (alg == ALG_OCP or alg == ALG_RANGE or not ni):
            mask = np.uint16(0x7F80 if alg == ALG_OCP else 0x7FFF)
            m16 = np.uint16(0)
            xr = xs[row:row + n]
            for i in range(n):
                m16 = max(np.uint16(xr[i] & mask), m16)
            m = np.int64(m16) >> 7 if alg == ALG_OCP else np.int64(m16)
        elif HALF and _half_keys(alg, ni):
            m16 = np.uint16(0)
            xr = xs[row:row + n]
            for i in range(n):
                m16 = max(np.uint16(xr[i] & np.uint16(0x7FFF)), m16)
            m = _f16_bf16_exponent(np.int64(m16)) if alg == ALG_OCP else np.int64(m16)
        else:
            for i in range(n):
                m = max(m, _stat_key(_load(xs, row + i, xk), xk, alg, dyn, ni))
        scr[b] = m
    if OCP_SCALES == 1 and _fast_scales(p) and not fused:
        _ocp_scales(scr, nblk, EMAX_OF[DST], p[P_LEGACY] != 0, recips, ss, sb, _1)
    elif not fused:
        for b in range(nblk):
            code, recips[b] = _block_scale(scr[b], p, r32, mlb32)
            ss[sb + b] = np.uint8(code)
    for b in range(nblk, nblk + pad):
        ss[sb + b] = np.uint8(0)
    ybs = bs // 2 if FP4 else bs
    if FAST and NO16 == 0:
        if fast:
            _convert_run(xs, xb, nblk, bs, last, recips, ys, yb, todo, fused, ss, sb, np.int64(EMAX_OF[DST]),
                         p[P_LEGACY] != 0)
            return
    full = nblk if last == bs else nblk - 1
    _convert(xs, xb, bs, _0, full, bs, recips, _1, _0, ys, yb, ybs, p)
    if full < nblk:
        _convert(xs, xb, bs, full, nblk, last, recips, _1, _0, ys, yb, ybs, p)


# ---------------------------------------------------------------------------------------------------------------
# GroupedDynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

@njit(**_INL)
def _grouped_tile(x_gm, y_gm, s_gm, ub, td, g, start, size, blk, scr, scr16, recips, p, r32):
    """ProcessOneLoop + CopyIn / Compute (ComputeAll) / CopyOut of one 64 x 128 tile."""
    n = td.rowSize
    row_idx = blk % td.blockRowCount                        # tile column index (along n)
    col_idx = blk // td.blockRowCount                       # tile row index (along m)
    col_count = (size + td.blockColSize - 1) // td.blockColSize
    cols = td.blockRowTailSize if row_idx == td.blockRowCount - 1 else td.blockRowSize
    col_tail = size - (col_count - 1) * td.blockColSize
    rows = col_tail if col_idx == col_count - 1 else td.blockColSize
    x_off = (start + col_idx * td.blockColSize) * n + row_idx * td.blockRowSize
    s_off = (start // 64 + g + col_idx) * n * 2 + row_idx * td.blockRowSize * 2
    y_off = x_off // 2 if FP4 else x_off
    y_row = n // 2 if FP4 else n
    yb = cols // 2 if FP4 else cols                          # y bytes per tile row
    half = td.blockColSize // 2                              # BLOCK_SIZE rows per scale block
    if FAITHFUL:
        # UB: in, mxscale and out queues of `buf` bytes each, double-buffered (only buffer 0 is used: double
        # buffering changes timing, not values)
        buf = (td.blockColSize * td.blockRowSize * 2 + 31) // 32 * 32
        ub_x = ub_view(ub, 0, np.uint16, buf // 2)
        ub_s = ub_view(ub, 2 * buf, np.uint8, buf)
        ub_y = ub_view(ub, 4 * buf, np.uint8, buf)
        _copy_in(ub_x, x_gm[x_off:], rows, cols * 2, (n - cols) * 2)
        in_len = (cols + 15) & ~15                           # UB row pitch of the x tile, in elements
        out_len = ((cols + 63) & ~63) // 2 if FP4 else (cols + 31) & ~31
        xs, xb, xp, ys, yo, yp, ss, sb = ub_x, _0, in_len, ub_y, _0, out_len, ub_s, _0
    else:
        xs, xb, xp, ys, yo, yp, ss, sb = x_gm, x_off, n, y_gm, y_off, y_row, s_gm, s_off
    # block 0 = the first 32 rows, block 1 = the rest (ComputeAll padMode 1), or Duplicate(scaleReg1, 0) pads slot 1
    for slot in range(2):
        r0 = slot * half
        if r0 < rows:
            _column_blocks(xs, xb, xp, r0, min(rows, r0 + half), cols, ys, yo, yp, ss, sb, slot, scr, scr16,
                           recips, p, r32, np.float32(0.0))
        else:
            for j in range(cols):
                ss[sb + 2 * j + 1] = 0
    if FAITHFUL:
        _copy_out(y_gm[y_off:], ys, rows, yb, y_row - yb)
        _copy_out(s_gm[s_off:], ss, _1, cols * 2, _0)


@njit(**_INL)
def _grouped_core(core, td, ub_size, x_gm, group_index, y_gm, s_gm, p, r32):
    """Everything one vector core does: Init (UB), then ProcessBase's tiles in order."""
    n_tiles = grouped_core_tiles(td.usedCoreNum, core, group_index, td.groupNum, td.blockColSize,
                                 td.blockRowCount, np.empty((0, 4), np.int64))
    tiles = np.empty((n_tiles, 4), np.int64)
    grouped_core_tiles(td.usedCoreNum, core, group_index, td.groupNum, td.blockColSize, td.blockRowCount, tiles)
    ub = np.empty(ub_size if FAITHFUL else 0, np.uint8)
    scr = np.empty(td.blockRowSize, np.int64)
    scr16 = np.empty(td.blockRowSize, np.uint16)
    recips = np.empty(td.blockRowSize, np.float32)
    for t in range(n_tiles):
        _grouped_tile(x_gm, y_gm, s_gm, ub, td, tiles[t, 0], tiles[t, 1], tiles[t, 2], tiles[t, 3], scr, scr16,
                      recips, p, r32)


@njit(parallel=PARALLEL, **_FN)
def grouped_dynamic_mx_quant_kernel(block_dim, td, ub_size, x_gm, group_index, y_gm, s_gm, p, r32):
    """One prange iteration per vector core (GetBlockIdx() = core); cores past usedCoreNum return at once."""
    for core in prange(block_dim):
        if core < td.usedCoreNum:
            # int64: the prange index is typed differently inside numba's parallel loop body, and each type would
            # compile the whole core again
            _grouped_core(np.int64(core), td, ub_size, x_gm, group_index, y_gm, s_gm, p, r32)


# Columns per slab of the fused grouped walk: 32 rows of them (512 KiB, a reference core's L2) stay near the core
# between the block-maxima pass and the casts, and wider slabs read x in longer runs: the grouped benchmark (bf16
# [16384, 7168], E4M3, 2 threads) took 36-38 ms with whole 7168-column rows against 50 ms with 1024-column slabs.
FUSED_COLS = 8192


@njit(**_INL)
def _fused_slab(td, t, nch, table, x_gm, y_gm, s_gm, p, r32):
    """Slab t of grouped_fused_kernel: 64-row block table[t // nch], columns (t % nch) * FUSED_COLS on."""
    n = td.rowSize
    y_row = n // 2 if FP4 else n
    half = td.blockColSize // 2
    g, start, rows, b = table[t // nch, 0], table[t // nch, 1], table[t // nch, 2], table[t // nch, 3]
    c0 = (t % nch) * FUSED_COLS
    cols = min(FUSED_COLS, n - c0)
    scr = np.empty(cols, np.int64)
    scr16 = np.empty(cols, np.uint16)
    recips = np.empty(cols, np.float32)
    x_off = (start + b * td.blockColSize) * n + c0
    s_off = (start // 64 + g + b) * n * 2 + c0 * 2
    y_off = x_off // 2 if FP4 else x_off
    for slot in range(2):
        r0 = slot * half
        if r0 < rows:
            _column_blocks(x_gm, x_off, n, r0, min(rows, r0 + half), cols, y_gm, y_off, y_row, s_gm, s_off, slot,
                           scr, scr16, recips, p, r32, np.float32(0.0))
        else:
            for j in range(cols):
                s_gm[s_off + 2 * j + 1] = 0


@njit(parallel=PARALLEL, **_FN)
def grouped_fused_kernel(td, x_gm, group_index, y_gm, s_gm, p, r32):
    """The grouped op off the UB-staged path: the same column blocks and arithmetic as the tiles (_column_blocks on
    GM), walked as 64-row slabs of FUSED_COLS columns spread over the host threads. The device's 64 x 128 tiles read
    x in 256-byte pieces of rows 2n bytes apart, which leaves the host waiting on memory; a slab reads runs of up to
    16 KiB. launch.run_grouped takes this walk only when the tiles partition x (column tiles covering [0, n) exactly, every
    core launched), so every block is converted once either way; the tests compare both walks on every tiling
    branch."""
    n = td.rowSize
    nch = (n + FUSED_COLS - 1) // FUSED_COLS
    slabs = 0
    for g in range(td.groupNum):
        size = np.int64(group_index[g]) - (np.int64(group_index[g - 1]) if g > 0 else 0)
        slabs += (size + td.blockColSize - 1) // td.blockColSize if size > 0 else 0
    table = np.empty((slabs, 4), np.int64)               # (group, group start, rows, 64-row block in group)
    k = 0
    for g in range(td.groupNum):
        start = np.int64(group_index[g - 1]) if g > 0 else np.int64(0)
        size = np.int64(group_index[g]) - start
        for b in range((size + td.blockColSize - 1) // td.blockColSize if size > 0 else 0):
            table[k, 0], table[k, 1] = g, start
            table[k, 2], table[k, 3] = min(td.blockColSize, size - b * td.blockColSize), b
            k += 1
    for t in prange(slabs * nch):
        _fused_slab(td, np.int64(t), nch, table, x_gm, y_gm, s_gm, p, r32)


# ---------------------------------------------------------------------------------------------------------------
# DynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

@njit(**_INL)
def _dynamic_unit(x_gm, y_gm, s_gm, ub, td, u, scr, scr16, recips, todo, p, r32, mlb32):
    """One unit of the decomposition: (pre index, chunk of block pairs, chunk of post-axis columns).

    x_gm holds uint16 words (FP32 elements are two words); every index below counts elements."""
    post = td.postAxisSize
    xw = 2 if p[P_XK] == X_F32 else 1                        # uint16 words per element
    pc = u % td.postChunkNum
    rest = u // td.postChunkNum
    qc = rest % td.pairChunkNum
    pre = rest // td.pairChunkNum
    q0 = qc * td.pairChunk
    q1 = min(q0 + td.pairChunk, td.pairNum)
    c0 = pc * td.postChunk
    ncols = min(td.postChunk, post - c0)
    # the WALK conditions are constants of this copy: numba prunes the walk the copy does not take before typing it
    if COLS_ONLY == 0 and (ROWS_ONLY == 1 or post == 1):
        _rows_unit(x_gm, y_gm, s_gm, ub, td, pre, q0, q1, xw, scr, recips, todo, p, r32, mlb32)
    else:
        _cols_unit(x_gm, y_gm, s_gm, ub, td, pre, q0, q1, c0, ncols, xw, scr, scr16, recips, p, r32, mlb32)


@njit(**_INL)
def _rows_unit(x_gm, y_gm, s_gm, ub, td, pre, q0, q1, xw, scr, recips, todo, p, r32, mlb32):
    """A unit along the last axis: the blocks of pairs q0 .. q1 - 1 along one row; their scales [pre, q, 2] are
    contiguous."""
    d, bs = td.axisSize, td.blockSize
    e0 = q0 * 2 * bs
    nel = min(q1 * 2 * bs, d) - e0
    nblk = (nel + bs - 1) // bs
    x0 = pre * d + e0
    s0 = (pre * td.pairNum + q0) * 2
    if FAITHFUL:
        # one unit's UB: the run of x (32-byte pitch), its codes, its scale bytes
        cols_ub = 2 * bs * td.pairChunk
        pitch = ((cols_ub * 2 * xw + 31) // 32) * 32 // (2 * xw)
        ypitch = (((cols_ub // 2 if FP4 else cols_ub) + 31) // 32) * 32
        y_at = pitch * 2 * xw
        s_at = y_at + ypitch
        ub_x = ub_view(ub, 0, np.uint16, pitch * xw)
        ub_y = ub_view(ub, y_at, np.uint8, ypitch)
        ub_s = ub_view(ub, s_at, np.uint8, 2 * td.pairChunk)
        _copy_in(ub_x, x_gm[x0 * xw:], _1, nel * 2 * xw, _0)
        xs, xb, ys, yb, ss, sb = ub_x, _0, ub_y, _0, ub_s, _0
    else:
        xs, xb, ys, yb, ss, sb = x_gm, x0, y_gm, (x0 // 2 if FP4 else x0), s_gm, s0
    # an odd block count leaves the pair's second slot: the pad written by _row_blocks
    _row_blocks(xs, xb, nblk, bs, nel - (nblk - 1) * bs, 2 * (q1 - q0) - nblk, ys, yb, ss, sb, scr, recips,
                todo, p, r32, mlb32)
    if FAITHFUL:
        _copy_out(y_gm[(x0 // 2 if FP4 else x0):], ys, _1, nel // 2 if FP4 else nel, _0)
        _copy_out(s_gm[s0:], ss, _1, 2 * (q1 - q0), _0)


@njit(**_INL)
def _cols_unit(x_gm, y_gm, s_gm, ub, td, pre, q0, q1, c0, ncols, xw, scr, scr16, recips, p, r32, mlb32):
    """A unit along another axis: column blocks of rows along the axis, one scale per column; the pair of a column
    sits in adjacent scale bytes (the "interleave every two rows" layout)."""
    d, post, bs = td.axisSize, td.postAxisSize, td.blockSize
    if FAITHFUL:
        # one unit's UB: x rows (32-byte pitch), y rows (32-byte pitch), scale bytes
        rows_ub = 2 * bs
        pitch = ((ncols * 2 * xw + 31) // 32) * 32 // (2 * xw)
        ypitch = (((ncols // 2 if FP4 else ncols) + 31) // 32) * 32
        y_at = rows_ub * pitch * 2 * xw
        s_at = y_at + rows_ub * ypitch
        ub_x = ub_view(ub, 0, np.uint16, rows_ub * pitch * xw)
        ub_y = ub_view(ub, y_at, np.uint8, rows_ub * ypitch)
        ub_s = ub_view(ub, s_at, np.uint8, 2 * ncols)
    for q in range(q0, q1):
        r0 = 2 * q * bs
        rows = min(r0 + 2 * bs, d) - r0
        x0 = (pre * d + r0) * post + c0
        s0 = ((pre * td.pairNum + q) * post + c0) * 2
        yw = ncols // 2 if FP4 else ncols
        yrow = post // 2 if FP4 else post
        if FAITHFUL:
            _copy_in(ub_x, x_gm[x0 * xw:], rows, ncols * 2 * xw, (post - ncols) * 2 * xw)
            xs, xb, xp, ys, yb, yp, ss, sb = ub_x, _0, pitch, ub_y, _0, ypitch, ub_s, _0
        else:
            xs, xb, xp, ys, yb, yp, ss, sb = x_gm, x0, post, y_gm, (x0 // 2 if FP4 else x0), yrow, s_gm, s0
        for slot in range(2):
            if slot * bs < rows:
                _column_blocks(xs, xb, xp, slot * bs, min(rows, slot * bs + bs), ncols, ys, yb, yp, ss, sb, slot, scr,
                               scr16, recips, p, r32, mlb32)
            else:
                for j in range(ncols):
                    ss[sb + 2 * j + 1] = 0
        if FAITHFUL:
            _copy_out(y_gm[(x0 // 2 if FP4 else x0):], ys, rows, yw, yrow - yw)
            _copy_out(s_gm[s0:], ss, _1, 2 * ncols, _0)


@njit(**_INL)
def _dynamic_core(core, td, ub_size, x_gm, y_gm, s_gm, p, r32, mlb32):
    """Everything one core does: its contiguous range of units, in order."""
    first = core * td.unitsPerCore + min(core, td.bigCoreNum)
    count = td.unitsPerCore + (1 if core < td.bigCoreNum else 0)
    ub = np.empty(ub_size if FAITHFUL else 0, np.uint8)
    width = max(td.postChunk, 2 * td.pairChunk)
    scr = np.empty(width, np.int64)
    scr16 = np.empty(width, np.uint16)
    recips = np.empty(width, np.float32)
    # runs along the last axis: one byte per block of a unit's run for M_FAST's _convert_run
    todo = np.empty(2 * td.pairChunk if td.postAxisSize == 1 and FAST else 0, np.int8)
    for u in range(first, first + count):
        _dynamic_unit(x_gm, y_gm, s_gm, ub, td, np.int64(u), scr, scr16, recips, todo, p, r32, mlb32)


@njit(parallel=PARALLEL, **_FN)
def dynamic_mx_quant_kernel(block_dim, td, ub_size, x_gm, y_gm, s_gm, p, r32, mlb32):
    """One prange iteration per core."""
    for core in prange(block_dim):
        # int64: see grouped_dynamic_mx_quant_kernel
        _dynamic_core(np.int64(core), td, ub_size, x_gm, y_gm, s_gm, p, r32, mlb32)
