"""Per-core kernel of Quantize (aclnnQuantize, npu_quantize div_mode=True) on the Ascend 950, on the launch model and
the instruction layer (docs/ops/ascend_quant.md §9).

Source: hicann/ops-nn quant/quantize/op_kernel/arch35/quantize.h (QuantizeBase: ParseCoreBlocks, the CAST_TRAIT_*
constants), quantize_per_tensor[_no_offset]_regbase.h, quantize_per_channel[_nddma][_no_offset]_regbase.h,
quantize_per_head[_no_offset]_regbase.h (Process, CopyXAndCompute, Compute). The tiling key carries
TPL_DIV_MODE_DIV, TPL_ROUND_MODE_NONE and TPL_NO_SQRT_MODE, so per element, in the order of Compute:

    xf = float32(x)                        (half / bf16: exact widening)
    sf = float32(scale)                    (bf16: exact widening; a half scale was cast to float32 by aclnn)
    t  = Div(xf, sf)                       (MicroAPI::Div, ZEROING; the rounding is the div_model switch)
    t  = Add(t, float32(zero_point))       (int8 / uint8 -> half -> float32; int32 -> float32 CAST_RINT; bf16 exact)
    int8 / uint8: Cast float32 -> int16 (CAST_RINT), int16 -> half (CAST_RINT), half -> int8 / uint8 (CAST_RINT)
    int32:        Cast float32 -> int32 (CAST_RINT)

The walk: each core takes its block from ParseCoreBlocks (tensor / channel: rows or columns of the merged
(dim0, dim1); head: dim0, (dim0, dim1) or (dim0 * dim1, dim2) with blockUnion), and walks it in tiles of baseN rows
of baseLen elements. GM buffers travel as bytes; ``tags`` = (mode, div model).

That is the tile walk (``quantize_kernel``, ``faithful=True``); ``fused_kernel`` at the end of the module, the
default, computes the same bits GM to GM.

The module is loaded once per (x, y, scale, zero-point) dtype quadruple (:func:`device`, npu_emu.device.specialize),
with those as the constants XT, YT, ST and ZT: a call compiles its own casts only (one kernel with every zero-point
and scale cast of the nine x / y pairs took 24 CPU-s cold for one call; a plain import compiles nothing).
"""

import numpy as np
from numba import prange

from npu_emu.ascendc.cast import Cast
from npu_emu.ascendc.constants import (
    CAST_NONE,
    DIV_IEEE,
    DIV_RECIP_MUL,
    CAST_RINT,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT16,
    DT_INT8,
    DT_INT16,
    DT_INT32,
    DT_UINT8,
)
from npu_emu.ascendc.vector import Add, Adds, Div, div_f32
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.specialize import const, load, njit
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32, round_to_integral

_KJ = dict(parallel=PARALLEL, cache=True, error_model="numpy")
_INL = dict(inline="always", cache=True, error_model="numpy")
# One core's Process() is a serial function the prange calls, not inlined into the prange body: numba's parfor
# passes are super-linear in the size of an inlined loop body.
_FN = dict(cache=True, error_model="numpy")

# scale types, zero-point types (Z_NONE: no zero point)
S_F32, S_BF16 = 0, 1
Z_NONE, Z_F32, Z_BF16, Z_INT8, Z_UINT8, Z_INT32 = -1, 0, 1, 2, 3, 4

XT = const("XT", DT_FLOAT)           # x: DT_FLOAT / DT_FLOAT16 / DT_BF16
YT = const("YT", DT_INT8)            # y: DT_INT8 / DT_UINT8 / DT_INT32
ST = const("ST", S_F32)
ZT = const("ZT", Z_NONE)

_X_TAGS = {"float32": DT_FLOAT, "float16": DT_FLOAT16, "bfloat16": DT_BF16}
_Y_TAGS = {"int8": DT_INT8, "uint8": DT_UINT8, "int32": DT_INT32}
_S_TAGS = {"float32": S_F32, "bfloat16": S_BF16}
_Z_TAGS = {None: Z_NONE, "float32": Z_F32, "bfloat16": Z_BF16, "int8": Z_INT8, "uint8": Z_UINT8, "int32": Z_INT32}


def device(x_dtype, y_dtype, s_dtype, z_dtype):
    """This module specialised for one x / y / scale / zero-point dtype (names; z_dtype None: no zero point)."""
    return load(__name__.split("[")[0], XT=_X_TAGS[x_dtype], YT=_Y_TAGS[y_dtype], ST=_S_TAGS[s_dtype],
                ZT=_Z_TAGS[z_dtype])


@njit(**_INL)
def _copy_f32(dst, gm, start, n):
    # an element loop: a slice assignment compiles numba's shape-mismatch error formatting (1.7 CPU-s cold)
    src = gm.view(np.float32)
    for i in range(n):
        dst[i] = src[start + i]


@njit(**_INL)
def _widen_scale(dst, s_gm, start, n):
    """CopyInScale + the load's cast: n scales from element ``start`` to float32."""
    if ST == S_BF16:
        Cast(dst, s_gm.view(np.uint16)[start:start + n], CAST_NONE, n, DT_FLOAT, DT_BF16)
    else:
        _copy_f32(dst, s_gm, start, n)


@njit(**_INL)
def _widen_zp(dst, z_gm, start, n, h_tmp):
    """CopyInOffset + the load's casts: n zero points to float32."""
    if ZT == Z_BF16:
        Cast(dst, z_gm.view(np.uint16)[start:start + n], CAST_NONE, n, DT_FLOAT, DT_BF16)
    elif ZT == Z_INT8:
        Cast(h_tmp, z_gm.view(np.int8)[start:start + n], CAST_NONE, n, DT_FLOAT16, DT_INT8)
        Cast(dst, h_tmp, CAST_NONE, n, DT_FLOAT, DT_FLOAT16)
    elif ZT == Z_UINT8:
        Cast(h_tmp, z_gm[start:start + n], CAST_NONE, n, DT_FLOAT16, DT_UINT8)
        Cast(dst, h_tmp, CAST_NONE, n, DT_FLOAT, DT_FLOAT16)
    elif ZT == Z_INT32:
        Cast(dst, z_gm.view(np.int32)[start:start + n], CAST_RINT, n, DT_FLOAT, DT_INT32)
    else:
        _copy_f32(dst, z_gm, start, n)


@njit(**_INL)
def _load_x(dst, x_gm, start, n):
    if XT == DT_FLOAT:
        _copy_f32(dst, x_gm, start, n)
    else:
        Cast(dst, x_gm.view(np.uint16)[start:start + n], CAST_NONE, n, DT_FLOAT, XT)


@njit(**_INL)
def _store_y(y_gm, start, t, n, i16, h16):
    if YT == DT_INT32:
        Cast(y_gm.view(np.int32)[start:start + n], t, CAST_RINT, n, DT_INT32, DT_FLOAT)
    else:
        Cast(i16, t, CAST_RINT, n, DT_INT16, DT_FLOAT)
        Cast(h16, i16, CAST_RINT, n, DT_FLOAT16, DT_INT16)
        if YT == DT_INT8:
            Cast(y_gm.view(np.int8)[start:start + n], h16, CAST_RINT, n, DT_INT8, DT_FLOAT16)
        else:
            Cast(y_gm[start:start + n], h16, CAST_RINT, n, DT_UINT8, DT_FLOAT16)


@njit(**_FN)
def _block(td, mode, b):
    """ParseCoreBlocks (+ the per-head blockUnion split) -> (a0, a_n, r0, r_n, c0, c_n) over (outer, rows, cols)."""
    last = b == td.numCore - 1
    if mode != 2:           # tensor / channel: rows dim0, cols dim1
        if td.blockAxis == 0:
            n = td.blockTailFactor if last else td.blockFactor
            return 0, 1, b * td.blockFactor, n, 0, td.dim1
        n = td.blockTailFactor if last else td.blockFactor
        return 0, 1, 0, td.dim0, b * td.blockFactor, n
    if td.blockAxis == 0:   # head: outer dim0, rows dim1, cols dim2
        n = td.blockTailFactor if last else td.blockFactor
        return b * td.blockFactor, n, 0, td.dim1, 0, td.dim2
    u = td.blockUnion
    r = b % u
    n = td.blockTailFactor if r == u - 1 else td.blockFactor
    if td.blockAxis == 1:
        return b // u, 1, r * td.blockFactor, n, 0, td.dim2
    flat = b // u
    return flat // td.dim1, 1, flat % td.dim1, 1, r * td.blockFactor, n


@njit(**_FN)
def _core(b, td, x_gm, s_gm, z_gm, y_gm, tags):
    """One core: Init + Process on the core's block (tile loop of baseN rows x baseLen elements)."""
    mode = tags[0]
    dm = tags[1]
    base = td.baseLen
    rows_c = td.dim1 if mode == 2 else td.dim0
    cols_c = td.dim2 if mode == 2 else td.dim1
    a0, a_n, r0, r_n, c0, c_n = _block(td, mode, b)
    # UB (float32 registers of one tile, the scale / zero-point vectors, the cast stages)
    t = np.empty(base, np.float32)
    sv = np.empty(max(base, td.baseN), np.float32)
    zv = np.empty(max(base, td.baseN), np.float32)
    h_tmp = np.empty(max(base, td.baseN), np.uint16)
    i16 = np.empty(base, np.int16)
    h16 = np.empty(base, np.uint16)
    if mode == 0:
        _widen_scale(sv, s_gm, 0, 1)
        if ZT != Z_NONE:
            _widen_zp(zv, z_gm, 0, 1, h_tmp)
    for a in range(a0, a0 + a_n):
        for cc in range(c0, c0 + c_n, base):
            count = min(base, c0 + c_n - cc)
            if mode == 1:
                _widen_scale(sv, s_gm, cc, count)
                if ZT != Z_NONE:
                    _widen_zp(zv, z_gm, cc, count, h_tmp)
            for rr in range(r0, r0 + r_n, td.baseN):
                rows = min(td.baseN, r0 + r_n - rr)
                if mode == 2:
                    _widen_scale(sv, s_gm, rr, rows)
                    if ZT != Z_NONE:
                        _widen_zp(zv, z_gm, rr, rows, h_tmp)
                for j in range(rows):
                    off = (a * rows_c + rr + j) * cols_c + cc
                    _load_x(t, x_gm, off, count)
                    if mode == 1:
                        Div(t, t, sv, count, DT_FLOAT, dm)
                        if ZT != Z_NONE:
                            Add(t, t, zv, count)
                    else:
                        k = j if mode == 2 else 0
                        Div(t, t, sv[k], count, DT_FLOAT, dm)
                        if ZT != Z_NONE:
                            Adds(t, t, zv[k], count)
                    _store_y(y_gm, off, t, count, i16, h16)


@njit(**_KJ)
def quantize_kernel(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    """The Quantize kernel of this module's dtypes: every core b < numCore runs its block."""
    for b in prange(block_dim):
        if b < td.numCore:
            _core(np.int64(b), td, x_gm, s_gm, z_gm, y_gm, tags)


# ---------------------------------------------------------------------------------------------------------------
# fused kernel (faithful=False, the default): the same per-element steps, GM to GM
# ---------------------------------------------------------------------------------------------------------------
# Every y element depends on its own x element and its scale / zero point only (one of them, of the element's
# channel, or of its head: index (e // dim2) % dim1 of the flat index e), and the blocks of the host tiling cover
# every element once, so each core takes a contiguous 1 / block_dim share of the elements in row-major order
# (tests/kernels/ascend_quant/test_quantize_fused.py proves the bits equal to the tile walk's). Per element: the
# widening of x, Div under the division model, the Add of the zero point, each one float32 rounding as in Compute.
# The int8 / uint8 cast chain float32 -> int16 -> half -> int8 / uint8 (each RINT) is one clamp and one RINT: the
# int16 cast saturates, int16 -> half is monotone and exact up to 2048 in magnitude, and an integral half -> int8 /
# uint8 saturates, so the code is rint(clamp(t, lo, hi)), NaN -> 0 (clamping to integral bounds commutes with
# rounding to an integer); int32 is one saturating RINT.

FUSED_ROW = 4096        # the longest piece of a row one loop call takes


@njit(**_INL)
def _x_at(xr, i):
    if XT == DT_FLOAT16:
        return f16_to_f32(xr[i])
    if XT == DT_BF16:
        return bf16_to_f32(xr[i])
    return np.float32(xr[i])


@njit(**_INL)
def _put_code(yr, i, t):
    """Store the code of float32 t: the cast chain of _store_y."""
    if YT == DT_INT32:
        r = round_to_integral(np.float64(t), CAST_RINT)
        r = np.float64(-2147483648.0) if r < np.float64(-2147483648.0) else r
        r = np.float64(2147483647.0) if r > np.float64(2147483647.0) else r
        yr[i] = np.int32(r) if t == t else np.int32(0)
    else:
        lo = np.float32(0.0) if YT == DT_UINT8 else np.float32(-128.0)
        hi = np.float32(255.0) if YT == DT_UINT8 else np.float32(127.0)
        c = min(max(t, lo), hi)
        yr[i] = yr.dtype.type(round_to_integral(np.float64(c), CAST_RINT)) if t == t else yr.dtype.type(0)


@njit(**_FN)
def _piece_vec(xr, yr, sv, zv, dm):
    """A piece of one channel row: scale / zero point per element."""
    if dm == DIV_RECIP_MUL:
        for i in range(yr.size):
            t = div_f32(_x_at(xr, i), sv[i], DIV_RECIP_MUL)
            if ZT != Z_NONE:
                t = np.float32(t + zv[i])
            _put_code(yr, i, t)
    else:
        for i in range(yr.size):
            t = div_f32(_x_at(xr, i), sv[i], DIV_IEEE)
            if ZT != Z_NONE:
                t = np.float32(t + zv[i])
            _put_code(yr, i, t)


@njit(**_FN)
def _piece_scalar(xr, yr, s, z, dm):
    """A piece with one scale / zero point (per tensor, or within one head's run of dim2 elements)."""
    if dm == DIV_RECIP_MUL:
        for i in range(yr.size):
            t = div_f32(_x_at(xr, i), s, DIV_RECIP_MUL)
            if ZT != Z_NONE:
                t = np.float32(t + z)
            _put_code(yr, i, t)
    else:
        for i in range(yr.size):
            t = div_f32(_x_at(xr, i), s, DIV_IEEE)
            if ZT != Z_NONE:
                t = np.float32(t + z)
            _put_code(yr, i, t)


@njit(**_FN)
def _fused_scales(td, s_gm, z_gm, tags):
    """The scales and zero points as float32, widened once per launch and read by every core (one per tensor, dim1
    per channel or head)."""
    ns = 1 if tags[0] == 0 else td.dim1
    sv = np.empty(ns, np.float32)
    zv = np.empty(ns, np.float32)
    h_tmp = np.empty(ns, np.uint16)
    _widen_scale(sv, s_gm, 0, ns)
    if ZT != Z_NONE:
        _widen_zp(zv, z_gm, 0, ns, h_tmp)
    return sv, zv


@njit(**_FN)
def _fused_core(b, block_dim, td, x_gm, sv, zv, y_gm, tags):
    mode = tags[0]
    dm = tags[1]
    d1 = td.dim1
    d2 = td.dim2
    total = td.dim0 * d1 * d2
    e0 = total * b // block_dim
    e1 = total * (b + 1) // block_dim
    if e1 <= e0:
        return
    if XT == DT_FLOAT:
        xv = x_gm.view(np.float32)
    else:
        xv = x_gm.view(np.uint16)
    if YT == DT_INT32:
        yv = y_gm.view(np.int32)
    elif YT == DT_INT8:
        yv = y_gm.view(np.int8)
    else:
        yv = y_gm
    e = e0
    while e < e1:
        if mode != 0 and d2 == 1:
            c0 = e % d1
            k = min(d1 - c0, e1 - e, FUSED_ROW)
            _piece_vec(xv[e:e + k], yv[e:e + k], sv[c0:c0 + k], zv[c0:c0 + k], dm)
        else:
            j = 0 if mode == 0 else (e // d2) % d1
            k = min(e1 - e, FUSED_ROW) if mode == 0 else min(d2 - e % d2, e1 - e, FUSED_ROW)
            _piece_scalar(xv[e:e + k], yv[e:e + k], sv[j], zv[j], dm)
        e += k


@njit(**_KJ)
def fused_kernel(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    """The fused Quantize kernel of this module's dtypes: each core its share of the elements."""
    sv, zv = _fused_scales(td, s_gm, z_gm, tags)
    for b in prange(block_dim):
        _fused_core(np.int64(b), block_dim, td, x_gm, sv, zv, y_gm, tags)
