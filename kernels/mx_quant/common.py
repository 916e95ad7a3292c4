"""The MX quantizers' block arithmetic that does not depend on the output format or the kernel path: element
loads, the block statistic and scale (mx_quant_common.h: ComputeMxScaleOCP / ComputeMxScaleCuBLAS /
ComputeMxScaleDynamicDtypeRange), the GroupedSplit tile walk and the DataCopyPad helpers.

Compiled once per process and shared by every specialisation of kernel.py (npu_emu.device.specialize), which holds
everything whose code depends on the output format or on the path (fused or UB-staged).
"""

import numpy as np
from numba import njit

from npu_emu.ascendc.datacopy import DataCopyPad
from npu_emu.dtypes.scalar import (
    CAST_FLOOR,
    CAST_RINT,
    CAST_ROUND,
    bf16_to_f32,
    f16_to_f32,
    f32_as_u32,
    f32_to_bf16,
    u32_as_f32,
)

# Scalar helpers are not inlined by numba (inline="never"): numba's inlining copies a helper's IR into every call
# site and types it again there, which made the kernels' first call take minutes; LLVM still inlines the small ones
# into the loops after linking. _ocp_code_recip is the exception: the loops of _ocp_scales and of the kernels' run
# pass vectorise only with it inlined before LLVM sees them.
_FN = dict(cache=True, error_model="numpy")
# Integer arguments of non-inlined calls go as int64 values, never as literals: numba compiles a separate copy of the
# callee for each combination of literal constants at its call sites (0 is typed Literal[int](0)), and the FP32 row
# loops had five copies in the DynamicMxQuant kernel alone, about four minutes of compile time each.
_0, _1 = np.int64(0), np.int64(1)

# input kinds, output kinds, scale algorithms
X_BF16, X_F16, X_F32 = 0, 1, 2
D_E4M3, D_E5M2, D_E2M1, D_E1M2 = 0, 1, 2, 3
ALG_OCP, ALG_RCEIL, ALG_RCEIL_NOSUB, ALG_RANGE = 0, 1, 2, 3
ROUND_MODE = {"rint": CAST_RINT, "round": CAST_ROUND, "floor": CAST_FLOOR}
X_KIND = {"bfloat16": X_BF16, "float16": X_F16, "float32": X_F32}
D_KIND = {"float8_e4m3fn": D_E4M3, "float8_e5m2": D_E5M2, "float4_e2m1": D_E2M1, "float4_e1m2": D_E1M2}
EMAX_OF = (8, 15, 2, 0)                         # by D_* kind
RANGE_ADD = (0, 0x3F, 0x1F, 0x0F)               # bump constant by dst_type_max class (ADD_VALUE_FOR_BF16_MAN1..3)

# int64 parameter vector shared by both kernels (built by make_params)
P_XK, P_DST, P_RMODE, P_ALG, P_ADD, P_LEGACY, P_SIGNED_ZERO, P_FTZ, P_NAN_IGNORE, P_HIGH_FIRST, P_DYN, \
    P_FAITHFUL, P_BF16_MUL, P_LEN = range(14)


def make_params(*, x_dtype, y_dtype, round_mode, alg, dtm_class, legacy, signed_zero, ftz, nan_in_max,
                fp4_nibble_order, dynamic, faithful, bf16_mul=None):
    """The kernels' int64 switch vector (see the P_* indices). ``bf16_mul``: BF16 inputs multiplied by the
    reciprocal in BF16 (default: DynamicMxQuant's ``dynamic`` kernels do, the grouped ones do not; the dual-axis op
    sets it per axis)."""
    p = np.zeros(P_LEN, np.int64)
    p[P_XK] = X_KIND[x_dtype]
    p[P_DST] = D_KIND[y_dtype]
    p[P_RMODE] = ROUND_MODE[round_mode]
    p[P_ALG] = alg
    p[P_ADD] = RANGE_ADD[dtm_class]
    p[P_LEGACY] = bool(legacy)
    p[P_SIGNED_ZERO] = bool(signed_zero)
    p[P_FTZ] = bool(ftz)
    p[P_NAN_IGNORE] = nan_in_max == "ignore"
    p[P_HIGH_FIRST] = fp4_nibble_order == "high_first"
    p[P_DYN] = bool(dynamic)
    p[P_FAITHFUL] = bool(faithful)
    p[P_BF16_MUL] = bool(dynamic if bf16_mul is None else bf16_mul)
    return p


@njit(**_FN)
def _ftz32(v):
    """FP32 subnormal -> zero of the same sign (``ftz=True``)."""
    u = f32_as_u32(v)
    if (u & np.uint32(0x7F800000)) == 0:
        return u32_as_f32(u & np.uint32(0x80000000))
    return np.float32(v)


@njit(**_FN)
def _x_f32(b, xk):
    """Exact FP32 value of one input element given as its bits."""
    if xk == X_BF16:
        return bf16_to_f32(b)
    if xk == X_F16:
        return f16_to_f32(np.uint16(b))
    return u32_as_f32(np.uint32(b))


@njit(**_FN)
def _load(xs, i, xk):
    """Bits of input element i. GM and UB x arrive as uint16 words whatever the input type (one compiled kernel);
    an FP32 element is two little-endian words."""
    if xk == X_F32:
        return np.int64(xs[2 * i]) | (np.int64(xs[2 * i + 1]) << 16)
    return np.int64(xs[i])


@njit(**_FN)
def _bf16_rint(v):
    """FP32 -> BF16 (RNE) -> FP32: the BF16 vector multiply's rounding, and the FP16 -> BF16 cast of the
    dynamic-range rule."""
    return bf16_to_f32(f32_to_bf16(v, CAST_RINT, False))


@njit(**_FN)
def _f16_bf16_exponent(h):
    """Exponent field of an FP16 value cast to BF16 with CAST_TRUNC: truncation never changes the exponent and every
    FP16 value is a normal BF16, so it is the exact value's floor(log2) + 127 (0 for zero, 255 for Inf/NaN)."""
    e5 = (h >> 10) & 0x1F
    if e5 == 31:
        return np.int64(255)
    if e5 != 0:
        return e5 + 112
    m = h & 0x3FF
    k = np.int64(0)
    while m > 1:
        m >>= 1
        k += 1
    return np.int64(103) + k if (h & 0x3FF) != 0 else np.int64(0)


@njit(**_FN)
def _stat_key(b, xk, alg, dyn, nan_ignore):
    """The quantity whose integer maximum over a block decides its scale.

    OCP: the biased exponent of the element viewed as BF16 (FP16 through a CAST_TRUNC to BF16; FP32: its own
    exponent field). RCEIL: the |x| bits in the input format (NaN > Inf > finite; "ignore" drops NaN as the
    floating Max would). Dynamic range: the |x| bits as BF16 (FP16 cast with CAST_RINT, the DynamicMxQuant kernel
    forcing FP16 Inf/NaN to 0x7F80; FP32 truncated to its top 16 bits).
    """
    u = np.int64(b)
    if alg == ALG_OCP:
        if xk == X_BF16:
            return (u >> 7) & 0xFF
        if xk == X_F32:
            return (u >> 23) & 0xFF
        return _f16_bf16_exponent(u)
    if alg == ALG_RANGE:
        if xk == X_BF16:
            return u & 0x7FFF
        if xk == X_F32:
            return (u & 0x7FFFFFFF) >> 16
        if dyn and (u & 0x7C00) == 0x7C00:
            return np.int64(0x7F80)
        return np.int64(f32_as_u32(_bf16_rint(f16_to_f32(np.uint16(u & 0x7FFF))))) >> 16
    if xk == X_F32:
        a = u & 0x7FFFFFFF
        nan = a > 0x7F800000
    elif xk == X_F16:
        a = u & 0x7FFF
        nan = a > 0x7C00
    else:
        a = u & 0x7FFF
        nan = a > 0x7F80
    if nan and nan_ignore:
        return np.int64(0)
    return a


@njit(**_FN)
def _stats(xs, xb, xstride, r0, r1, ncols, stat, stat16, xk, alg, dyn, nan_ignore):
    """stat[j] = max over rows [r0, r1) of the key of column j. BF16 keys are bit masks of the input, kept in
    uint16 (``stat16``) so the loops vectorise 16 lanes wide (the OCP exponent is taken as 0x7F80 bits and shifted
    once at the end)."""
    if xk == X_BF16 and (alg == ALG_OCP or alg == ALG_RANGE or not nan_ignore):
        mask = np.uint16(0x7F80 if alg == ALG_OCP else 0x7FFF)
        for j in range(ncols):
            stat16[j] = 0
        for r in range(r0, r1):
            xr = xs[xb + r * xstride:xb + r * xstride + ncols]      # a row slice: lets the loop vectorise
            for j in range(ncols):
                stat16[j] = max(np.uint16(xr[j] & mask), stat16[j])
        for j in range(ncols):
            stat[j] = np.int64(stat16[j]) >> 7 if alg == ALG_OCP else np.int64(stat16[j])
        return
    for j in range(ncols):
        stat[j] = 0
    for r in range(r0, r1):
        row = xb + r * xstride
        for j in range(ncols):
            stat[j] = max(stat[j], _stat_key(_load(xs, row + j, xk), xk, alg, dyn, nan_ignore))


@njit(**_FN)
def _scale(stat, xk, alg, add, em, legacy, dyn, r32, mlb32, ftz):
    """(E8M0 code, BF16 bits of the reciprocal) of a block from its statistic
    (docs/ops/mx_quant.md §3.4, §3.7, §4)."""
    if alg == ALG_OCP:
        # ComputeMxScaleOCP: E = 255 -> NaN path; E <= emax -> code 0 and a zero reciprocal (v9.0-9.1 Grouped and
        # v9.0 DynamicMxQuant: only E = 0; a tiny normal block gets 2^127); else 2^(127 - code), 2^-127 for 254.
        if stat == 255:
            return np.int64(255), np.int64(0x7F81)
        if stat <= em:
            return np.int64(0), np.int64(0x7F00 if (legacy and stat != 0) else 0)
        code = stat - em
        return code, np.int64(0x0040 if code == 254 else 0x7F00 - (code << 7))
    if alg == ALG_RANGE:
        # ComputeMxScaleDynamicDtypeRange, in the 16-bit register arithmetic of the kernel
        ems = em << 7
        e = stat & 0x7F80
        if e == 0x7F80:
            return np.int64(255), np.int64(0x7F81)
        ea = (stat + add) & 0x7F80
        if e < ems:
            ea = ems
        shared = (ea - ems) & 0xFFFF
        zero = shared == 0 if dyn else e == 0
        if zero:
            return np.int64(0), np.int64(0)
        if shared == 0x7F00:
            return np.int64(254), np.int64(0x0040)
        return (shared >> 7) & 0xFF, (0x7F00 - shared) & 0xFFFF
    # RCEIL (ComputeMxScaleCuBLAS / ComputeScaleCublas): S = A * fl32(1/max), exponent + 1 when inexact
    a = _x_f32(stat, xk)
    if dyn:
        if not (a <= np.float32(3.4028234663852886e38)):
            return np.int64(255), np.int64(0x7F81)
        if a == np.float32(0.0):
            return np.int64(0), np.int64(0)
        if mlb32 > a:
            a = mlb32
    if ftz:
        a = _ftz32(a)
    s = np.float32(a * r32)
    if ftz:
        s = _ftz32(s)
    u = np.int64(f32_as_u32(s))
    e = u >> 23
    m = u & 0x7FFFFF
    c = e
    if (0 < e < 254 and m > 0) or (alg == ALG_RCEIL and e == 0 and m > 0x400000):
        c = e + 1
    if dyn:
        return c & 0xFF, (0x7F00 - (c << 7)) & 0xFFFF
    sh = (c << 7) & 0xFFFF
    if sh == 0x7F80:
        return c & 0xFF, np.int64(0x7F81)
    if sh == 0x7F00:
        return c & 0xFF, np.int64(0x0040)
    return c & 0xFF, (0x7F00 - sh) & 0xFFFF


@njit(inline="always", cache=True, error_model="numpy")
def _ocp_code_recip(stat, em, legacy):
    """_scale's OCP branch (no ftz) written with selects, so that a loop over a row of blocks vectorises; equal to
    _scale for every statistic, emax and legacy flag (tests/kernels/mx_quant/test_mx_fast.py)."""
    code = stat - em
    low = stat <= em
    rb = np.int64(0x0040) if code == 254 else np.int64(0x7F00) - (code << 7)
    rb = (np.int64(0x7F00) if (legacy and stat != 0) else np.int64(0)) if low else rb
    c = np.int64(0) if low else code
    nan = stat == 255
    return (np.int64(255) if nan else c), (np.int64(0x7F81) if nan else rb)


@njit(**_FN)
def _ocp_scales(stat, nblk, em, legacy, recips, ss, sb, sstride):
    """Codes and FP32 reciprocals of ``nblk`` OCP blocks: code b to ss[sb + b * sstride], reciprocal to recips[b]."""
    for b in range(nblk):
        c, rb = _ocp_code_recip(stat[b], em, legacy)
        recips[b] = u32_as_f32(np.uint32(rb << 16))
        ss[sb + b * sstride] = np.uint8(c)


@njit(**_FN)
def _scaled(b, xk, recip, ftz, bf16_mul):
    """x * reciprocal as the vector unit forms it: one FP32 multiply (DynamicMxQuant BF16 inputs: a BF16 one)."""
    x = _x_f32(b, xk)
    if ftz:
        x = _ftz32(x)
    v = np.float32(x * recip)
    if bf16_mul and (f32_as_u32(v) & np.uint32(0x7F800000)) == 0:
        # A BF16 x times a power of two is exact in BF16 unless it falls below the normal range: only then can
        # the BF16 multiply's rounding differ from the FP32 one.
        v = _bf16_rint(v)
    if ftz:
        v = _ftz32(v)
    return v


@njit(**_FN)
def _unsign_zero(c, zero_code, signed_zero):
    if not signed_zero and c == zero_code:
        return np.uint8(0)
    return c


@njit(**_FN)
def _block_scale(stat, p, r32, mlb32):
    """(code, reciprocal as FP32) of one block."""
    ftz = p[P_FTZ] != 0
    code, rb = _scale(stat, p[P_XK], p[P_ALG], p[P_ADD], EMAX_OF[p[P_DST]], p[P_LEGACY] != 0, p[P_DYN] != 0, r32,
                      mlb32, ftz)
    r = bf16_to_f32(np.uint16(rb))
    return code, (_ftz32(r) if ftz else r)


@njit(**_FN)
def _copy_in(ub_x, x_gm, rows, row_bytes, src_stride_bytes):
    DataCopyPad(ub_x, x_gm, rows, row_bytes, src_stride_bytes, 0, False, 0, 0, 0)


@njit(**_FN)
def _copy_out(gm, ub, rows, row_bytes, dst_stride_bytes):
    DataCopyPad(gm, ub, rows, row_bytes, 0, dst_stride_bytes)


@njit(**_FN)
def grouped_core_tiles(total_cores, core, group_index, group_num, block_col_size, block_row_count, out):
    """GroupedSplit::ProcessBase for one core: fills out[k] = (group, group start, group size, block in group)
    for the core's k-th tile (if ``out`` has room) and returns the number of tiles."""
    rotate = 0
    k = 0
    for g in range(group_num):
        start = np.int64(group_index[g - 1]) if g > 0 else np.int64(0)
        size = np.int64(group_index[g]) - start
        if size <= 0:
            continue
        count = ((size + block_col_size - 1) // block_col_size) * block_row_count
        used = count if count < total_cores else total_cores
        idx = core - rotate
        if idx < 0:
            idx += total_cores
        loop, offset = np.int64(0), np.int64(0)
        if idx < used:
            head = count % used
            per_head = (count + used - 1) // used
            per_tail = count // used
            if idx < head:
                loop, offset = per_head, idx * per_head
            else:
                loop, offset = per_tail, head * per_head + (idx - head) * per_tail
        rotate = (rotate + count) % total_cores
        for i in range(loop):
            if k < out.shape[0]:
                out[k, 0] = g
                out[k, 1] = start
                out[k, 2] = size
                out[k, 3] = offset + i
            k += 1
    return k


@njit(**_FN)
def _tile_table(used, block_dim, group_index, group_num, block_col_size, block_row_count):
    counts = np.zeros(block_dim, np.int64)
    for core in range(min(block_dim, used)):
        counts[core] = grouped_core_tiles(used, core, group_index, group_num, block_col_size, block_row_count,
                                          np.empty((0, 4), np.int64))
    total = 0
    for core in range(block_dim):
        total += counts[core]
    out = np.empty((total, 6), np.int64)
    k = 0
    for core in range(min(block_dim, used)):
        t = np.empty((counts[core], 4), np.int64)
        grouped_core_tiles(used, core, group_index, group_num, block_col_size, block_row_count, t)
        # element by element: a slice assignment compiles numba's broadcast checks and the string formatting of
        # their error message (about 1.5 s of a cold GroupedDynamicMxQuant call)
        for i in range(counts[core]):
            out[k, 0] = core
            out[k, 1] = i
            for q in range(4):
                out[k, 2 + q] = t[i, q]
            k += 1
    return out
