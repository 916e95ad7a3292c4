"""The per-row dynamic quantization chain of the Ascend C quant kernels, written once.

Shared by DynamicQuant (kernels/dynamic_quant/kernel.py, every tiling key) and by the fused ops that end in a
per-token dynamic quantization (DequantSwigluQuant, quant_mode=1). The chain, as hicann/ops-nn
quant/dynamic_quant/op_kernel/dynamic_quant*.h run it on one row held in UB as float32 (x cast CAST_NONE, times the
smooth scale if any)::

    Abs -> ReduceMax = m                                    (row_absmax)
    q = c / m              vector Div (keys 0/1, 2/3, 10, 100, 7) or scalar divide (keys 6, 8)   (sym_scale)
    stored scale = m * fp32(1/c)  (keys 100, 10, 2/3: DYNAMIC_QUANT_FACTOR / constInvScale)
                 | 1 / q          (keys 0/1, 6, 7, 8)                                              (sym_scale)
    Muls(x, q) -> Cast RINT to int32 (int16 on keys 2/3 and 10) -> Cast ROUND to half -> Cast TRUNC to
    int8 / int4                                                                                    (quant_row_sym)

    asymmetric (DynamicQuantV2): ReduceMax / ReduceMin of x = mx, mn;
    scale = GetMax((mx - mn) / c_range, 1e-12); offset = c_off - mx / scale; back = 1 / scale       (asym_scale)
    Muls(x, back) -> Adds(offset) -> the same cast chain                                           (quant_row_asym)

Constants ``c``: 127 (int8) or 7 (int4); asymmetric ``c_range`` / ``c_off``: 255 / 127 (int8), 15 / 7 (int4)
(dynamic_quant_base.h). Every float operation is one float32 rounding (IEEE, no FMA).

Functions (all ``@njit(cache=True, error_model='numpy')``; arrays are 1-D contiguous). Each step has a
``*_faithful`` form, which calls the instructions of npu_emu.ascendc (Cast, Mul, Abs, ReduceMax, ReduceMin, Div,
Muls, Adds) on the row views as the kernel does, and a fused form computing the same bits in plain loops (LLVM
vectorises them; tests prove the two equal on every key, with Inf/NaN/zero rows). They are separate functions so
that a fused caller never compiles the instruction layer:

* ``load_row_f32[_faithful](dst, x_bits, x_off, n, xdt, smooth, has_smooth)``: dst[:n] = f32(x[x_off:x_off+n])
  (* smooth[:n]). ``x_bits`` are the uint16 bits of half (``xdt`` = DT_FLOAT16) or bf16 (DT_BF16); ``smooth`` is
  float32 (already cast; any float32 array when ``has_smooth`` is False).
* ``row_absmax_faithful(src, n, tmp)`` / ``row_absmax(src, n)`` -> float32 max |src[:n]| (NaN: the first NaN,
  sign cleared). ``load_row_absmax(dst, x_bits, x_off, n, xdt, smooth, has_smooth)``: the two fused in one pass.
  ``row_absmax_16(x_bits, x_off, n, xdt)`` / ``quant_row_sym_16(x_bits, x_off, n, q, out, out_off, xdt)``: half /
  bf16 rows without smooth, int8 out, straight from the 16-bit codes (no float32 row stored; the fastest path).
* ``row_minmax(src, n, tmp)`` -> (max, min) with ReduceMax / ReduceMin's order rules (one form).
* ``sym_scale[_faithful](m, c, q_mode, div_model, scale_mode)`` -> (q, stored scale). ``q_mode`` Q_VECTOR_DIV /
  Q_SCALAR_DIV, ``div_model`` DIV_IEEE / DIV_RECIP_MUL (npu_emu.ascendc.constants; the vector Div only: the
  scalar unit divides IEEE), ``scale_mode`` SCALE_MAX_TIMES_INV / SCALE_RECIP_Q.
* ``asym_scale(mx, mn, c_range, c_off)`` -> (scale, offset, back_scale) (scalar code, one form).
* ``quant_row_sym_faithful(src, n, q, out, out_off, inter, dst, tmp_i32, tmp_u16)`` /
  ``quant_row_sym(src, n, q, out, out_off, dst, tmp_i32)``: Muls + the cast chain; writes n codes into ``out``
  (uint8) at element ``out_off`` (int8: one byte each; int4 (``dst`` = DT_INT4): two per byte, element 2i in the
  low nibble, ``out_off`` even). ``inter`` = DT_INT32 / DT_INT16. ``src`` is overwritten (multiplied in place).
  ``tmp_i32`` int32 scratch of >= n elements, ``tmp_u16`` uint16 scratch of >= n.
* ``quant_row_asym_faithful(src, n, back, offset, out, out_off, inter, dst, tmp_i32, tmp_u16)`` /
  ``quant_row_asym(src, n, back, offset, out, out_off, dst, tmp_i32)``: Muls + Adds + the cast chain.
* ``quant_row_div_faithful(src, n, s, out, out_off, inter, dst, tmp_i32, tmp_u16, div_model)`` /
  ``quant_row_div(src, n, s, out, out_off, dst, tmp_i32, div_model)``: Div by the stored scale (DequantSwigluQuant's
  dynamic quant, ``y = x / (max * (1/127))``) + the cast chain.
* ``cast_chain_code(v, dst)``: the cast chain of one float32 value as an int (NaN -> 0, RINT, saturate). Why the fused cast chain is a clamp: RINT to int32/int16 saturates, the
int -> half ROUND cast is monotone and exact below 2048, and half -> int8/int4 TRUNC saturates, so every code is
clamp(rint(v), lo, hi); NaN -> 0 (npu_emu.ascendc.cast: "输入为nan时，返回0"), whichever intermediate.
"""

import numpy as np
from numba import njit
from numba.extending import overload

from npu_emu.ascendc import Abs, Adds, Cast, Div, Mul, Muls, ReduceMax, ReduceMin
from npu_emu.ascendc.constants import (
    CAST_NONE,
    CAST_RINT,
    CAST_ROUND,
    CAST_TRUNC,
    DIV_IEEE,
    DIV_RECIP_MUL,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT16,
    DT_INT4,
    DT_INT8,
    DT_INT16,
    DT_INT32,
)
from npu_emu.ascendc.vector import div_f32
from npu_emu.device.specialize import literal_args
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32

_J = dict(cache=True, error_model="numpy")

# q computed by the vector Div (Div(constScale, max)) or by a scalar divide (GetScale: 127.0f / max)
Q_VECTOR_DIV = 0
Q_SCALAR_DIV = 1
# stored scale: max * fp32(1/c) (Muls / Mul by constInvScale) or 1 / q (scalar)
SCALE_MAX_TIMES_INV = 0
SCALE_RECIP_Q = 1

SYM_INT8 = np.float32(127.0)
SYM_INT4 = np.float32(7.0)
ASYM_RANGE_INT8 = np.float32(255.0)
ASYM_OFFSET_INT8 = np.float32(127.0)
ASYM_RANGE_INT4 = np.float32(15.0)
ASYM_OFFSET_INT4 = np.float32(7.0)
EPSILON = np.float32(1e-12)           # DYNAMIC_QUANT_EPSINON (a float constexpr)

__all__ = [
    "Q_VECTOR_DIV", "Q_SCALAR_DIV", "SCALE_MAX_TIMES_INV", "SCALE_RECIP_Q", "DIV_IEEE", "DIV_RECIP_MUL",
    "SYM_INT8", "SYM_INT4", "ASYM_RANGE_INT8", "ASYM_OFFSET_INT8", "ASYM_RANGE_INT4", "ASYM_OFFSET_INT4", "EPSILON",
    "load_row_f32", "load_row_f32_faithful", "load_row_absmax", "row_absmax_16", "quant_row_sym_16", "row_absmax",
    "row_absmax_faithful", "row_minmax", "sym_scale",
    "sym_scale_faithful", "asym_scale", "quant_row_sym", "quant_row_sym_faithful", "quant_row_asym",
    "quant_row_asym_faithful", "cast_chain_code", "sym_const", "asym_consts", "vector_div_scalar",
    "quant_row_div", "quant_row_div_faithful",
]


def sym_const(dst):
    """c of the symmetric scale: 127 for int8, 7 for int4."""
    return SYM_INT4 if dst == DT_INT4 else SYM_INT8


def asym_consts(dst):
    """(c_range, c_off) of the asymmetric scale: (255, 127) for int8, (15, 7) for int4."""
    return (ASYM_RANGE_INT4, ASYM_OFFSET_INT4) if dst == DT_INT4 else (ASYM_RANGE_INT8, ASYM_OFFSET_INT8)


@literal_args(**_J)
def load_row_f32_faithful(dst, x_bits, x_off, n, xdt, smooth, has_smooth):
    """dst[:n] = Cast(x, CAST_NONE) (then Mul by smooth): the x -> float32 step of every key."""
    Cast(dst, x_bits[x_off:x_off + n], CAST_NONE, n, DT_FLOAT, xdt)
    if has_smooth:
        Mul(dst, dst, smooth, n)


@literal_args(**_J)
def load_row_f32(dst, x_bits, x_off, n, xdt, smooth, has_smooth):
    """Fused :func:`load_row_f32_faithful`."""
    du = dst.view(np.uint32)
    xr = x_bits[x_off:x_off + n]           # (sliced: a range index needs no negative-index check, so LLVM vectorises)
    if xdt == DT_BF16:
        for i in range(n):
            du[i] = np.uint32(xr[i]) << np.uint32(16)
    else:
        for i in range(n):
            dst[i] = f16_to_f32(xr[i])
    if has_smooth:
        for i in range(n):
            dst[i] = dst[i] * smooth[i]


@literal_args(**_J)
def load_row_absmax(dst, x_bits, x_off, n, xdt, smooth, has_smooth):
    """Fused load_row_f32 + row_absmax in one pass: dst[:n] = f32(x) (* smooth); returns max |dst[:n]|."""
    du = dst.view(np.uint32)
    m = np.uint32(0)
    if xdt == DT_BF16 and not has_smooth:
        xr = x_bits[x_off:x_off + n]
        for i in range(n):
            u = np.uint32(xr[i]) << np.uint32(16)
            du[i] = u
            a = u & np.uint32(0x7FFFFFFF)
            m = a if a > m else m
    else:
        load_row_f32(dst, x_bits, x_off, n, xdt, smooth, has_smooth)
        for i in range(n):
            a = du[i] & np.uint32(0x7FFFFFFF)
            m = a if a > m else m
    if m > np.uint32(0x7F800000):
        m = _first_nan_abs(dst, n)
    return np.array([m], dtype=np.uint32).view(np.float32)[0]


@literal_args(**_J)
def row_absmax_16(x_bits, x_off, n, xdt):
    """max |x| of a half / bf16 row without smooth (``xdt`` DT_FLOAT16 / DT_BF16), on the 16-bit codes (the
    widening to float32 is exact and order-preserving on magnitudes): the value load_row_absmax returns, without
    writing the float32 row."""
    top = np.uint16(0x7F80) if xdt == DT_BF16 else np.uint16(0x7C00)      # the infinity's magnitude code
    m = np.uint16(0)
    xr = x_bits[x_off:x_off + n]
    for i in range(n):
        a = xr[i] & np.uint16(0x7FFF)
        m = a if a > m else m
    if m > top:
        for i in range(n):
            if (xr[i] & np.uint16(0x7FFF)) > top:
                m = xr[i] & np.uint16(0x7FFF)
                break
    return _x16_f32(m, xdt)


@literal_args(**_J)
def quant_row_sym_16(x_bits, x_off, n, q, out, out_off, xdt):
    """quant_row_sym for a half / bf16 row without smooth and an int8 output, reading the 16-bit codes again (the
    float32 row is never stored). ``q`` must come from this row's own abs max (c / m, either division model)."""
    q = np.float32(q)
    o = out[out_off:out_off + n].view(np.int8)
    xr = x_bits[x_off:x_off + n]
    if q > np.float32(0.0) and q < np.float32(np.inf):
        # q = c / m finite and > 0 means m, the row's abs max, is finite and > 0: every x is finite and
        # |x * q| <= m * RN(c / m) <= c * (1 + 2^-23) < c + 0.5, so neither the NaN rule nor the clamp can act
        for i in range(n):
            o[i] = np.int8(np.rint(_x16_f32(xr[i], xdt) * q))
        return
    for i in range(n):
        v = _x16_f32(xr[i], xdt) * q
        v = v if v == v else np.float32(0.0)
        v = np.float32(127.0) if v > np.float32(127.0) else v
        v = np.float32(-128.0) if v < np.float32(-128.0) else v
        o[i] = np.int8(np.rint(v))


def _x16_f32(b, xdt):
    """float32 of half / bf16 code ``b`` (``xdt`` a literal: one decoder, inlined)."""
    raise NotImplementedError("_x16_f32 is only callable from njit code")


@overload(_x16_f32, inline="always", prefer_literal=True)
def _x16_f32_ol(b, xdt):
    if getattr(xdt, "literal_value", None) == DT_BF16:
        return lambda b, xdt: bf16_to_f32(b)
    return lambda b, xdt: f16_to_f32(b)


@njit(**_J)
def _first_nan_abs(src, n):
    for i in range(n):
        if src[i] != src[i]:
            return np.uint32(src[i:i + 1].view(np.uint32)[0] & np.uint32(0x7FFFFFFF))
    return np.uint32(0)


@njit(**_J)
def row_absmax_faithful(src, n, tmp):
    """max |src[:n]| (Abs then ReduceMax); a row with NaN gives its first NaN with the sign cleared."""
    Abs(tmp, src, n)
    ReduceMax(tmp, tmp, tmp, n)
    return np.float32(tmp[0])


@njit(**_J)
def row_absmax(src, n):
    """Fused :func:`row_absmax_faithful` (an integer max of the magnitude bits)."""
    su = src.view(np.uint32)
    m = np.uint32(0)
    for i in range(n):
        a = su[i] & np.uint32(0x7FFFFFFF)
        m = a if a > m else m
    if m > np.uint32(0x7F800000):
        m = _first_nan_abs(src, n)
    return np.array([m], dtype=np.uint32).view(np.float32)[0]


@njit(**_J)
def row_minmax(src, n, tmp):
    """(ReduceMax, ReduceMin) of src[:n] (the asymmetric keys; one implementation for both paths)."""
    ReduceMax(tmp, src, tmp, n)
    mx = np.float32(tmp[0])
    ReduceMin(tmp, src, tmp, n)
    return mx, np.float32(tmp[0])


@literal_args(**_J)
def sym_scale_faithful(m, c, q_mode, div_model, scale_mode):
    """:func:`sym_scale` with the vector Div and Muls run as instructions on one-element tensors."""
    m = np.float32(m)
    c = np.float32(c)
    if q_mode == Q_SCALAR_DIV:
        q = np.float32(c / m)
    else:
        q = vector_div_scalar(c, m, div_model)
    if scale_mode == SCALE_RECIP_Q:
        s = np.float32(np.float32(1.0) / q)
    else:
        t = np.empty(1, np.float32)
        t[0] = m
        Muls(t, t, np.float32(np.float32(1.0) / c), 1)
        s = t[0]
    return q, s


@literal_args(**_J)
def sym_scale(m, c, q_mode, div_model, scale_mode):
    """(q, stored scale) of a row whose abs max is m (see the module docstring)."""
    m = np.float32(m)
    c = np.float32(c)
    if q_mode == Q_SCALAR_DIV:
        q = np.float32(c / m)
    else:
        q = div_f32(c, m, div_model)
    if scale_mode == SCALE_RECIP_Q:
        s = np.float32(np.float32(1.0) / q)
    else:
        s = np.float32(m * np.float32(np.float32(1.0) / c))
    return q, s


@njit(**_J)
def asym_scale(mx, mn, c_range, c_off):
    """GetScaleAndOffset (dynamic_quant_base.h): scalar float32 arithmetic; GetMax(a, b) = a > b ? a : b."""
    r = np.float32(np.float32(np.float32(mx) - np.float32(mn)) / np.float32(c_range))
    scale = r if r > EPSILON else EPSILON
    offset = np.float32(np.float32(c_off) - np.float32(np.float32(mx) / scale))
    back = np.float32(np.float32(1.0) / scale)
    return scale, offset, back


@literal_args(**_J)
def cast_chain_code(v, dst):
    """The cast chain of one float32 value: NaN -> 0, RINT, saturate to int8 / int4 (see the module docstring)."""
    hi = np.float32(7.0) if dst == DT_INT4 else np.float32(127.0)
    lo = np.float32(-8.0) if dst == DT_INT4 else np.float32(-128.0)
    v = np.float32(v)
    v = v if v == v else np.float32(0.0)
    v = hi if v > hi else v
    v = lo if v < lo else v
    return np.int32(np.rint(v))


@literal_args(**_J)
def _chain_faithful(src, n, out, out_off, inter, dst, tmp_i32, tmp_u16):
    if inter == DT_INT16:
        t16 = tmp_i32.view(np.int16)
        Cast(t16, src, CAST_RINT, n, DT_INT16, DT_FLOAT)
        Cast(tmp_u16, t16, CAST_ROUND, n, DT_FLOAT16, DT_INT16)
    else:
        Cast(tmp_i32, src, CAST_RINT, n, DT_INT32, DT_FLOAT)
        Cast(tmp_u16, tmp_i32, CAST_ROUND, n, DT_FLOAT16, DT_INT32)
    if dst == DT_INT4:
        Cast(out[out_off // 2:], tmp_u16, CAST_TRUNC, n, DT_INT4, DT_FLOAT16)
    else:
        Cast(out[out_off:].view(np.int8), tmp_u16, CAST_TRUNC, n, DT_INT8, DT_FLOAT16)


@njit(**_J)
def _pack_int4(codes, n, out, out_off):
    """int8 codes -> nibbles, element 2i in the low nibble (an odd tail keeps the other nibble)."""
    base = out_off // 2
    ob = out[base:base + n // 2]
    for j in range(n // 2):
        ob[j] = np.uint8((np.uint8(codes[2 * j]) & np.uint8(0xF)) | (np.uint8(codes[2 * j + 1]) << np.uint8(4)))
    if n & 1:
        k = base + n // 2
        out[k] = np.uint8((out[k] & np.uint8(0xF0)) | (np.uint8(codes[n - 1]) & np.uint8(0xF)))


@literal_args(**_J)
def _chain_fused(src, n, out, out_off, dst, tmp_i32):
    if dst == DT_INT4:
        hi = np.float32(7.0)
        lo = np.float32(-8.0)
    else:
        hi = np.float32(127.0)
        lo = np.float32(-128.0)
    if dst == DT_INT4:
        codes = tmp_i32.view(np.int8)
        for i in range(n):
            v = src[i]
            v = v if v == v else np.float32(0.0)
            v = hi if v > hi else v
            v = lo if v < lo else v
            codes[i] = np.int8(np.rint(v))
        _pack_int4(codes, n, out, out_off)
    else:
        o = out[out_off:out_off + n].view(np.int8)
        for i in range(n):
            v = src[i]
            v = v if v == v else np.float32(0.0)
            v = hi if v > hi else v
            v = lo if v < lo else v
            o[i] = np.int8(np.rint(v))


@literal_args(**_J)
def quant_row_sym_faithful(src, n, q, out, out_off, inter, dst, tmp_i32, tmp_u16):
    """Muls(src, q) then the cast chain into ``out`` (see the module docstring)."""
    Muls(src, src, np.float32(q), n)
    _chain_faithful(src, n, out, out_off, inter, dst, tmp_i32, tmp_u16)


@literal_args(**_J)
def quant_row_sym(src, n, q, out, out_off, dst, tmp_i32):
    """Fused :func:`quant_row_sym_faithful` (any intermediate: the codes do not depend on it); ``src`` is left
    unchanged (the faithful form multiplies it in place)."""
    q = np.float32(q)
    if dst == DT_INT4:
        codes = tmp_i32.view(np.int8)
        for i in range(n):
            v = src[i] * q
            v = v if v == v else np.float32(0.0)
            v = np.float32(7.0) if v > np.float32(7.0) else v
            v = np.float32(-8.0) if v < np.float32(-8.0) else v
            codes[i] = np.int8(np.rint(v))
        _pack_int4(codes, n, out, out_off)
        return
    o = out[out_off:out_off + n].view(np.int8)
    for i in range(n):
        v = src[i] * q
        v = v if v == v else np.float32(0.0)
        v = np.float32(127.0) if v > np.float32(127.0) else v
        v = np.float32(-128.0) if v < np.float32(-128.0) else v
        o[i] = np.int8(np.rint(v))


@literal_args(**_J)
def quant_row_asym_faithful(src, n, back, offset, out, out_off, inter, dst, tmp_i32, tmp_u16):
    """Muls(src, back), Adds(src, offset), then the cast chain into ``out``."""
    Muls(src, src, np.float32(back), n)
    Adds(src, src, np.float32(offset), n)
    _chain_faithful(src, n, out, out_off, inter, dst, tmp_i32, tmp_u16)


@literal_args(**_J)
def quant_row_asym(src, n, back, offset, out, out_off, dst, tmp_i32):
    """Fused :func:`quant_row_asym_faithful`."""
    back = np.float32(back)
    offset = np.float32(offset)
    for i in range(n):
        src[i] = np.float32(src[i] * back) + offset
    _chain_fused(src, n, out, out_off, dst, tmp_i32)


@literal_args(**_J)
def quant_row_div_faithful(src, n, s, out, out_off, inter, dst, tmp_i32, tmp_u16, div_model):
    """Div(src, src, s) (the stored scale broadcast: DequantSwigluQuant's ``y = x / scale``), then the cast chain."""
    Div(src, src, np.float32(s), n, DT_FLOAT, div_model)
    _chain_faithful(src, n, out, out_off, inter, dst, tmp_i32, tmp_u16)


@literal_args(**_J)
def quant_row_div(src, n, s, out, out_off, dst, tmp_i32, div_model):
    """Fused :func:`quant_row_div_faithful`."""
    s = np.float32(s)
    for i in range(n):
        src[i] = div_f32(src[i], s, div_model)
    _chain_fused(src, n, out, out_off, dst, tmp_i32)


@njit(**_J)
def vector_div_scalar(c, m, div_model):
    """q = Div(constScale, max) on one element, through the Div instruction (the faithful path)."""
    a = np.empty(1, np.float32)
    b = np.empty(1, np.float32)
    a[0] = np.float32(c)
    b[0] = np.float32(m)
    Div(a, a, b, 1, DT_FLOAT, div_model)
    return a[0]


_ = (DT_INT8, DT_INT32, DIV_IEEE, DIV_RECIP_MUL)
