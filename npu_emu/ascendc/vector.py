"""Vector arithmetic, logic and reduction instructions in count mode ("tensor前n个数据计算").

Each function processes the first ``count`` elements of its LocalTensor views (cut at the end of the shortest
view: the emulator never writes outside a view). Element formats (``dtype`` argument, a ``DT_*`` tag from
``npu_emu.ascendc.constants``):

* ``DT_AUTO`` (default): the numpy dtype of the views. float32 uses IEEE single-precision operations (numba, no
  fastmath, no FMA); integer types wrap around on overflow (the vector ALU does not saturate integer
  Add/Sub/Mul; Reg ``Abs.md``: "非饱和截断").
* ``DT_FLOAT16`` / ``DT_BF16`` on uint16 bit views (scalars as uint16 bits): every operation is
  ``round_rne(f32(a) op f32(b))`` (docs/codecs.md §3.2: float32 has enough precision for this double rounding to
  be innocuous, so the result is the correctly rounded half / bf16 result), Inf/NaN mode (no saturation; Reg
  ``Mul.md``: "输出结果为不饱和模式").

``ftz=True`` models the ``fp16_subnormal="flush"`` / ``ftz`` switches of the op pages
(docs/ops/gather_dequant_int8.md §0, docs/ops/mx_quant.md §9): subnormal operands are read as zeros of the same sign
and subnormal results become signed zeros. Default ``False``: IEEE gradual underflow.

Structure (compile time): the public functions are tiny ``inline='always'`` dispatchers; with a constant ``dtype``
numba keeps one call, to a loop function compiled once per signature and cached on disk (inlining the codecs into
every call site instead costs about a minute of compile time per kernel).

Sources: ``cannmirror/asc-devkit: docs/zh/api/SIMD-API/基础API/Memory矢量计算/基础算术/*.md``, ``逻辑计算/*.md``,
``数据填充/Duplicate.md``, ``归约计算/ReduceMax.md``; ``Reg矢量计算/基础算术/Max.md``, ``Min.md`` (signed zeros).
"""

import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from npu_emu.ascendc._elem import as_elem, flush_f32, flush_u16, is_float, itemsize, pick
from npu_emu.ascendc.constants import CAST_RINT, DIV_IEEE, DIV_RECIP_MUL, DT_AUTO, DT_BF16, DT_FLOAT16
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32, f32_as_u32, f32_to_bf16, f32_to_f16, u32_as_f32

_INLINE = dict(inline="always", cache=True, error_model="numpy")
_LOOP = dict(cache=True, error_model="numpy")

_ADD = 0
_SUB = 1
_MUL = 2
_MAX = 3
_MIN = 4


@njit(**_INLINE)
def _fminmax(a, b, op, nan_propagate):
    """IEEE 754-2019 maximum / minimum on float32: NaN propagates (or is ignored), max(-0, +0) = +0, min = -0."""
    if a != a:
        return a if (nan_propagate or b != b) else b
    if b != b:
        return b if nan_propagate else a
    if a == b:
        a_neg = (f32_as_u32(a) >> np.uint32(31)) != 0
        if op == _MAX:
            return b if a_neg else a
        return a if a_neg else b
    if op == _MAX:
        return a if a > b else b
    return a if a < b else b


@njit(**_INLINE)
def _fadd(a, b, nan_propagate):
    return np.float32(a + b)


@njit(**_INLINE)
def _fsub(a, b, nan_propagate):
    return np.float32(a - b)


@njit(**_INLINE)
def _fmul(a, b, nan_propagate):
    return np.float32(a * b)


@njit(**_INLINE)
def _fmax(a, b, nan_propagate):
    return _fminmax(a, b, _MAX, nan_propagate)


@njit(**_INLINE)
def _fmin(a, b, nan_propagate):
    return _fminmax(a, b, _MIN, nan_propagate)


@njit(**_INLINE)
def _iadd(a, b):
    return a + b


@njit(**_INLINE)
def _isub(a, b):
    return a - b


@njit(**_INLINE)
def _imul(a, b):
    return a * b


@njit(**_INLINE)
def _imax(a, b):
    return a if a > b else b


@njit(**_INLINE)
def _imin(a, b):
    return a if a < b else b


_F32_OPS = {_ADD: _fadd, _SUB: _fsub, _MUL: _fmul, _MAX: _fmax, _MIN: _fmin}
_INT_OPS = {_ADD: _iadd, _SUB: _isub, _MUL: _imul, _MAX: _imax, _MIN: _imin}


@njit(**_INLINE)
def _u16_pick(ha, hb, fa, fb, op, nan_propagate):
    """Max / Min of two half / bf16 values returns one operand's bits unchanged (no re-rounding, NaN kept)."""
    r = _fminmax(fa, fb, op, nan_propagate)
    if r != r:
        return ha if fa != fa else hb
    if r == fa and ((f32_as_u32(r) ^ f32_as_u32(fa)) >> np.uint32(31)) == 0:
        return ha
    return hb


# The loops below pick their operation and element format at typing time, from literal arguments (overloads with
# prefer_literal): a branch on a mode inside an inlined helper is not pruned before the helper is inlined, and
# numba.literally types a function once with every branch inlined before it asks for the literal, so either way
# each signature paid for the code of every operation and format (0.8 s of compile per signature, measured).

def _literal(ty, what):
    value = getattr(ty, "literal_value", None)
    if value is None:
        raise TypingError(f"{what} must be a compile-time constant (got {ty})")
    return value


@njit(**_INLINE)
def _u16_operands(src0, src1, i, ftz, fmt):
    """The half / bf16 bits of element i of both operands, subnormals flushed to signed zeros when ``ftz``."""
    ha = np.uint16(src0[i])
    hb = np.uint16(pick(src1, i))
    if ftz:
        ha = flush_u16(ha, fmt)
        hb = flush_u16(hb, fmt)
    return ha, hb


def _binary_u16(dst, src0, src1, n, op, ftz, nan_propagate, fmt):
    """Half / bf16 loop (``fmt`` = DT_FLOAT16 / DT_BF16) on uint16 bits; src1 is a tensor or a scalar (uint16 bits)."""
    raise NotImplementedError("_binary_u16 is only callable from njit code")


@overload(_binary_u16, prefer_literal=True, jit_options=_LOOP)
def _binary_u16_ol(dst, src0, src1, n, op, ftz, nan_propagate, fmt):
    op_, fmt_ = _literal(op, "op"), _literal(fmt, "fmt")
    decode, encode = (f16_to_f32, f32_to_f16) if fmt_ == DT_FLOAT16 else (bf16_to_f32, f32_to_bf16)
    if op_ == _MAX or op_ == _MIN:
        def impl(dst, src0, src1, n, op, ftz, nan_propagate, fmt):
            for i in range(n):
                ha, hb = _u16_operands(src0, src1, i, ftz, fmt_)
                dst[i] = _u16_pick(ha, hb, decode(ha), decode(hb), op_, nan_propagate)
        return impl
    f = _F32_OPS[op_]

    def impl(dst, src0, src1, n, op, ftz, nan_propagate, fmt):
        for i in range(n):
            ha, hb = _u16_operands(src0, src1, i, ftz, fmt_)
            h = encode(f(decode(ha), decode(hb), nan_propagate), CAST_RINT, False)
            dst[i] = flush_u16(h, fmt_) if ftz else h
    return impl


def _binary_native(dst, src0, src1, n, op, ftz, nan_propagate):
    """float32 (IEEE) or integer (wrap-around) loop; src1 is a tensor or a scalar of the element type."""
    raise NotImplementedError("_binary_native is only callable from njit code")


@overload(_binary_native, prefer_literal=True, jit_options=_LOOP)
def _binary_native_ol(dst, src0, src1, n, op, ftz, nan_propagate):
    op_ = _literal(op, "op")
    if not isinstance(src0.dtype, types.Float):
        g = _INT_OPS[op_]

        def impl(dst, src0, src1, n, op, ftz, nan_propagate):
            for i in range(n):
                dst[i] = g(src0[i], pick(src1, i))
        return impl
    f = _F32_OPS[op_]
    if getattr(ftz, "literal_value", None) is False:
        def impl(dst, src0, src1, n, op, ftz, nan_propagate):
            for i in range(n):
                dst[i] = f(np.float32(src0[i]), np.float32(pick(src1, i)), nan_propagate)
        return impl

    def impl(dst, src0, src1, n, op, ftz, nan_propagate):
        for i in range(n):
            a = np.float32(src0[i])
            b = np.float32(pick(src1, i))
            if ftz:
                a = flush_f32(a)
                b = flush_f32(b)
            r = f(a, b, nan_propagate)
            dst[i] = flush_f32(r) if ftz else r
    return impl


@njit(**_INLINE)
def Duplicate(dst, scalarValue, count):
    """AscendC::Duplicate(dst, scalarValue, count): dst[i] = scalarValue for i < count (``Duplicate.md``).

    The scalar is converted to the element type of dst (pass half / bf16 values as uint16 bits).
    """
    v = as_elem(dst, scalarValue)
    dst[:min(count, len(dst))] = v


@njit(**_INLINE)
def Add(dst, src0, src1, count, dtype=DT_AUTO, ftz=False):
    """AscendC::Add(dst, src0, src1, count): dst[i] = src0[i] + src1[i] (``Add.md``)."""
    n = min(count, len(dst), len(src0), len(src1))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src0, src1, n, _ADD, ftz, True, dtype)
    else:
        _binary_native(dst, src0, src1, n, _ADD, ftz, True)


@njit(**_INLINE)
def Sub(dst, src0, src1, count, dtype=DT_AUTO, ftz=False):
    """AscendC::Sub(dst, src0, src1, count): dst[i] = src0[i] - src1[i] (``Sub.md``)."""
    n = min(count, len(dst), len(src0), len(src1))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src0, src1, n, _SUB, ftz, True, dtype)
    else:
        _binary_native(dst, src0, src1, n, _SUB, ftz, True)


@njit(**_INLINE)
def Mul(dst, src0, src1, count, dtype=DT_AUTO, ftz=False):
    """AscendC::Mul(dst, src0, src1, count): dst[i] = src0[i] * src1[i] (``Mul.md``)."""
    n = min(count, len(dst), len(src0), len(src1))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src0, src1, n, _MUL, ftz, True, dtype)
    else:
        _binary_native(dst, src0, src1, n, _MUL, ftz, True)


@njit(**_INLINE)
def Max(dst, src0, src1, count, dtype=DT_AUTO, nan_propagate=True):
    """AscendC::Max(dst, src0, src1, count): element-wise maximum (``Max.md``).

    Floats: max(-0, +0) = +0 (Reg ``Max.md`` 约束说明). NaN handling is not documented; default: a NaN operand
    gives NaN (the ``nan_in_max="propagate"`` default of docs/ops/mx_quant.md §9, [HW-unverified]);
    ``nan_propagate=False`` returns the other operand (``"ignore"``). Half / bf16 results are one operand's bits,
    unchanged.
    """
    n = min(count, len(dst), len(src0), len(src1))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src0, src1, n, _MAX, False, nan_propagate, dtype)
    else:
        _binary_native(dst, src0, src1, n, _MAX, False, nan_propagate)


@njit(**_INLINE)
def Min(dst, src0, src1, count, dtype=DT_AUTO, nan_propagate=True):
    """AscendC::Min(dst, src0, src1, count): element-wise minimum; min(-0, +0) = -0 (Reg ``Min.md``); NaN as Max."""
    n = min(count, len(dst), len(src0), len(src1))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src0, src1, n, _MIN, False, nan_propagate, dtype)
    else:
        _binary_native(dst, src0, src1, n, _MIN, False, nan_propagate)


@njit(**_INLINE)
def Adds(dst, src, scalarValue, count, dtype=DT_AUTO, ftz=False):
    """AscendC::Adds(dst, src, scalarValue, count): dst[i] = src[i] + scalarValue (``Adds.md``).

    The scalar has the element type (half: uint16 bits). GatherDequantInt8 uses the half form
    (docs/ops/gather_dequant_int8.md §3.3: ``Adds(calc, calc, negZ, E)``, one fp16 rounding).
    """
    n = min(count, len(dst), len(src))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src, as_elem(src, scalarValue), n, _ADD, ftz, True, dtype)
    else:
        _binary_native(dst, src, as_elem(src, scalarValue), n, _ADD, ftz, True)


@njit(**_INLINE)
def Muls(dst, src, scalarValue, count, dtype=DT_AUTO, ftz=False):
    """AscendC::Muls(dst, src, scalarValue, count): dst[i] = src[i] * scalarValue (``Muls.md``)."""
    n = min(count, len(dst), len(src))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src, as_elem(src, scalarValue), n, _MUL, ftz, True, dtype)
    else:
        _binary_native(dst, src, as_elem(src, scalarValue), n, _MUL, ftz, True)


@njit(**_INLINE)
def Maxs(dst, src, scalarValue, count, dtype=DT_AUTO, nan_propagate=True):
    """AscendC::Maxs(dst, src, scalarValue, count): dst[i] = max(src[i], scalarValue) (``Maxs.md``), the element
    rule of :func:`Max` (signed zeros, NaN) with the scalar as the second operand."""
    n = min(count, len(dst), len(src))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src, as_elem(src, scalarValue), n, _MAX, False, nan_propagate, dtype)
    else:
        _binary_native(dst, src, as_elem(src, scalarValue), n, _MAX, False, nan_propagate)


@njit(**_INLINE)
def Mins(dst, src, scalarValue, count, dtype=DT_AUTO, nan_propagate=True):
    """AscendC::Mins(dst, src, scalarValue, count): dst[i] = min(src[i], scalarValue) (``Mins.md``), the element
    rule of :func:`Min`."""
    n = min(count, len(dst), len(src))
    if dtype == DT_FLOAT16 or dtype == DT_BF16:  # (the tag test sits in each instruction so that numba prunes it)
        _binary_u16(dst, src, as_elem(src, scalarValue), n, _MIN, False, nan_propagate, dtype)
    else:
        _binary_native(dst, src, as_elem(src, scalarValue), n, _MIN, False, nan_propagate)


@njit(cache=True, error_model="numpy", inline="always")
def div_f32(a, b, div_model):
    """One float32 vector division under a division model (``DIV_IEEE``: correctly rounded; ``DIV_RECIP_MUL``:
    ``a * fp32(1 / b)``, two roundings). The device's Div rounding is not public ([HW-unverified])."""
    if div_model == DIV_RECIP_MUL:
        return np.float32(np.float32(a) * np.float32(np.float32(1.0) / np.float32(b)))
    return np.float32(np.float32(a) / np.float32(b))


def _div_loop(dst, src0, src1, n, div_model, fmt):
    """The Div loop; ``fmt`` (DT_FLOAT16 / DT_BF16 on uint16 bits, anything else: float32) chosen at typing time."""
    raise NotImplementedError("_div_loop is only callable from njit code")


@overload(_div_loop, prefer_literal=True, jit_options=_LOOP)
def _div_loop_ol(dst, src0, src1, n, div_model, fmt):
    fmt_ = _literal(fmt, "fmt")
    if fmt_ == DT_FLOAT16 or fmt_ == DT_BF16:
        decode, encode = (f16_to_f32, f32_to_f16) if fmt_ == DT_FLOAT16 else (bf16_to_f32, f32_to_bf16)

        def impl(dst, src0, src1, n, div_model, fmt):
            for i in range(n):
                r = div_f32(decode(np.uint16(src0[i])), decode(np.uint16(pick(src1, i))), div_model)
                dst[i] = encode(r, CAST_RINT, False)
        return impl

    def impl(dst, src0, src1, n, div_model, fmt):
        for i in range(n):
            dst[i] = div_f32(np.float32(src0[i]), np.float32(pick(src1, i)), div_model)
    return impl


@njit(**_INLINE)
def Div(dst, src0, src1, count, dtype=DT_AUTO, div_model=DIV_IEEE):
    """AscendC::Div(dst, src0, src1, count): dst[i] = src0[i] / src1[i] (``基础算术/Div.md``; float types only).

    ``div_model`` (``DIV_IEEE`` default, ``DIV_RECIP_MUL``) names how the result is rounded: the device's Div is
    not documented as correctly rounded ([HW-unverified], docs/conventions.md). half / bf16 (``DT_FLOAT16`` /
    ``DT_BF16`` on uint16 views): the float32 quotient of the widened operands, rounded RNE once.
    """
    _div_loop(dst, src0, src1, min(count, len(dst), len(src0)), div_model, dtype)


# The loops below are separate functions, not inlined: loops inlined into a kernel over views of the UB byte buffer
# (``ub[a:b].view(...)``) do not vectorise.


@njit(**_LOOP)
def _and_loop(dst, src0, src1, n):
    for i in range(n):
        dst[i] = src0[i] & src1[i]


@njit(**_LOOP)
def _or_loop(dst, src0, src1, n):
    for i in range(n):
        dst[i] = src0[i] | src1[i]


@njit(**_LOOP)
def _not_loop(dst, src, n):
    for i in range(n):
        dst[i] = ~src[i]


@njit(**_LOOP)
def _abs_loop(dst, src, n, half_like):
    if half_like:
        for i in range(n):
            dst[i] = np.uint16(np.uint16(src[i]) & np.uint16(0x7FFF))
    else:
        for i in range(n):
            x = src[i]
            if is_float(x):
                dst[i] = u32_as_f32(np.uint32(f32_as_u32(np.float32(x)) & np.uint32(0x7FFFFFFF)))
            else:
                dst[i] = -x if x < 0 else x


@njit(**_LOOP)
def _shift_left_loop(dst, src, s, n):
    bits = itemsize(src) * 8
    s = min(s, bits)
    if as_elem(src, -1) < 0:
        low = (np.int64(1) << np.int64(bits - 1)) - 1
        for i in range(n):
            v = np.int64(src[i])
            mag = (v << s) & low if s < bits else np.int64(0)
            dst[i] = mag - (low + 1) if v < 0 else mag
    else:
        for i in range(n):
            dst[i] = (np.uint64(src[i]) << np.uint64(s)) if s < bits else 0


@njit(**_LOOP)
def _shift_right_loop(dst, src, s, n):
    bits = itemsize(src) * 8
    if as_elem(src, -1) < 0:
        s = min(s, bits - 1)
        for i in range(n):
            dst[i] = np.int64(src[i]) >> s
    else:
        for i in range(n):
            dst[i] = (np.uint64(src[i]) >> np.uint64(s)) if s < bits else 0


@njit(**_INLINE)
def Abs(dst, src, count, dtype=DT_AUTO):
    """AscendC::Abs(dst, src, count): |src[i]| (``Abs.md``).

    Floats: the sign bit is cleared (exact; NaN stays NaN). Integers wrap: Abs(-128) of int8 is -128 (Reg
    ``Abs.md``: "非饱和截断").
    """
    _abs_loop(dst, src, min(count, len(dst), len(src)), dtype == DT_FLOAT16 or dtype == DT_BF16)


@njit(**_INLINE)
def ShiftLeft(dst, src, scalarValue, count):
    """AscendC::ShiftLeft(dst, src, scalarValue, count) (``ShiftLeft.md``).

    Unsigned types: logical shift. Signed types: "arithmetic" left shift as documented: the sign bit is kept and
    the bits below it shift ("次高位被丢弃": int16 0b1010101010101010 << 1 = 0b1101010101010100). Shifts of the bit
    width or more give 0 (the sign bit alone for negative signed values): undocumented, the emulator's choice.
    """
    _shift_left_loop(dst, src, np.int64(scalarValue), min(count, len(dst), len(src)))


@njit(**_INLINE)
def ShiftRight(dst, src, scalarValue, count):
    """AscendC::ShiftRight(dst, src, scalarValue, count) (``ShiftRight.md``): logical for unsigned, arithmetic
    (sign-filling) for signed types. Shifts of the bit width or more give 0 or -1 (undocumented, the emulator's
    choice)."""
    _shift_right_loop(dst, src, np.int64(scalarValue), min(count, len(dst), len(src)))


@njit(**_INLINE)
def And(dst, src0, src1, count):
    """AscendC::And(dst, src0, src1, count): bitwise and (``And.md``; int16 / uint16 on A2, any int type here)."""
    _and_loop(dst, src0, src1, min(count, len(dst), len(src0), len(src1)))


@njit(**_INLINE)
def Or(dst, src0, src1, count):
    """AscendC::Or(dst, src0, src1, count): bitwise or (``Or.md``)."""
    _or_loop(dst, src0, src1, min(count, len(dst), len(src0), len(src1)))


@njit(**_INLINE)
def Not(dst, src, count):
    """AscendC::Not(dst, src, count): bitwise not (``Not.md``)."""
    _not_loop(dst, src, min(count, len(dst), len(src)))


@njit(**_INLINE)
def _float_greater(a, b):
    """ReduceMax order on float32: NaN above everything (the first NaN wins), +0 above -0, ties keep the first."""
    if b != b:
        return False
    if a != a:
        return True
    if a == b:
        return (f32_as_u32(a) >> np.uint32(31)) == 0 and (f32_as_u32(b) >> np.uint32(31)) != 0
    return a > b


@njit(**_INLINE)
def _float_less(a, b):
    """ReduceMin order on float32: NaN below everything (the first NaN wins), -0 below +0, ties keep the first."""
    if b != b:
        return False
    if a != a:
        return True
    if a == b:
        return (f32_as_u32(a) >> np.uint32(31)) != 0 and (f32_as_u32(b) >> np.uint32(31)) == 0
    return a < b


@njit(**_INLINE)
def _int_greater(a, b):
    return a > b


@njit(**_INLINE)
def _int_less(a, b):
    return a < b


@njit(**_INLINE)
def _f16_key(x):
    return f16_to_f32(np.uint16(x))


@njit(**_INLINE)
def _bf16_key(x):
    return bf16_to_f32(np.uint16(x))


@njit(**_INLINE)
def _f32_key(x):
    return np.float32(x)


@njit(**_INLINE)
def _int_key(x):
    return x


def _reduce_arg(src, n, dtype, want_max):
    """Index of the maximum (``want_max``) or minimum of src[:n] (n >= 1) in the ReduceMax / ReduceMin orders; the
    element format and the order are chosen at typing time."""
    raise NotImplementedError("_reduce_arg is only callable from njit code")


@overload(_reduce_arg, prefer_literal=True, jit_options=_LOOP)
def _reduce_arg_ol(src, n, dtype, want_max):
    fmt_, max_ = _literal(dtype, "dtype"), _literal(want_max, "want_max")
    if fmt_ == DT_FLOAT16 or fmt_ == DT_BF16 or isinstance(src.dtype, types.Float):
        key = _f16_key if fmt_ == DT_FLOAT16 else _bf16_key if fmt_ == DT_BF16 else _f32_key
        before = _float_greater if max_ else _float_less
    else:
        key, before = _int_key, (_int_greater if max_ else _int_less)

    def impl(src, n, dtype, want_max):
        idx = 0
        for i in range(1, n):
            if before(key(src[i]), key(src[idx])):
                idx = i
        return idx
    return impl


@njit(**_INLINE)
def ReduceMin(dst, src, sharedTmpBuffer, count, calIndex=False, dtype=DT_AUTO):
    """AscendC::ReduceMin(dst, src, sharedTmpBuffer, count, calIndex) (``归约计算/ReduceMin.md``): dst[0] = the
    minimum of src[:count], as :func:`ReduceMax` with the order reversed (NaN: the first NaN, [HW-unverified])."""
    n = min(count, len(src))
    if n <= 0:
        return
    idx = _reduce_arg(src, n, dtype, False)
    dst[0] = src[idx]
    if calIndex and len(dst) > 1:
        if dtype == DT_FLOAT16 or dtype == DT_BF16:
            dst[1] = np.uint16(idx)
        elif is_float(src[0]):
            dst[1] = u32_as_f32(np.uint32(idx))
        else:
            dst[1] = idx


@njit(**_INLINE)
def ReduceMax(dst, src, sharedTmpBuffer, count, calIndex=False, dtype=DT_AUTO):
    """AscendC::ReduceMax(dst, src, sharedTmpBuffer, count, calIndex) (``归约计算/ReduceMax.md``).

    dst[0] = the maximum of src[:count]; with calIndex, dst[1] = its index (the smallest index among equal
    maxima), stored as the bit pattern of T ("索引按操作数的数据类型存储": reinterpret dst[1:2] as uint32 /
    uint16 to read it; for half the index must be < 65536). ``sharedTmpBuffer`` is accepted for signature
    fidelity and not used. NaN: not documented; here the first NaN is the maximum (propagation, [HW-unverified]);
    +0 counts above -0. count == 0 is a no-op.
    """
    n = min(count, len(src))
    if n <= 0:
        return
    idx = _reduce_arg(src, n, dtype, True)
    dst[0] = src[idx]
    if calIndex and len(dst) > 1:
        if dtype == DT_FLOAT16 or dtype == DT_BF16:
            dst[1] = np.uint16(idx)
        elif is_float(src[0]):
            dst[1] = u32_as_f32(np.uint32(idx))
        else:
            dst[1] = idx
