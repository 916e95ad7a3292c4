"""Cast: element type conversion with the Ascend C RoundMode, through the codecs of ``npu_emu.dtypes.scalar``.

No rounding rule is written here: every inexact step calls a codec (``f32_to_f16``, ``f32_to_bf16``,
``round_to_integral``, ``f64_to_f32_odd``, the FP8 / HiF8 / FP4 / E8M0 encoders). This module only routes a
(destination, source) pair to them, clamps integer results and packs sub-byte codes.

Sources: ``cannmirror/asc-devkit: docs/zh/api/SIMD-API/基础API/Memory矢量计算/类型转换/Cast.md`` (supported pairs and
modes per SoC), ``.../数据结构/precision_conversion.md`` (rounding rules, "溢出默认按照饱和模式处理"),
``.../Reg矢量计算/类型转换/Cast.md`` 表4 (saturating / non-saturating behaviour per conversion class);
docs/codecs.md §2, §3, §9, §10.
"""

import numpy as np
from numba import njit
from numba.core.errors import TypingError
from numba.extending import overload

from npu_emu.ascendc.constants import (
    CAST_FLAG_E8M0_ZERO,
    CAST_FLAG_F16_SUB_RAW,
    CAST_FLAG_FP4_HIGH_FIRST,
    CAST_FLAG_FP4_NAN_SIGN,
    CAST_FLAG_HYBRID_SCRIPT,
    CAST_FLAG_KEEP_NAN,
    CAST_FLAG_SAT,
    CAST_NONE,
    CAST_ODD,
    CAST_RINT,
    CAST_ROUND,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT4_E1M2,
    DT_FLOAT4_E2M1,
    DT_FLOAT8_E4M3FN,
    DT_FLOAT8_E5M2,
    DT_FLOAT8_E8M0,
    DT_FLOAT16,
    DT_HIFLOAT8,
    DT_INT4,
    DT_INT8,
    DT_INT16,
    DT_INT32,
    DT_INT64,
    DT_UINT8,
    DT_UINT16,
    DT_UINT32,
)
from npu_emu.device.specialize import literal_args
from npu_emu.dtypes.scalar import (
    bf16_to_f32,
    decode_e4m3fn,
    decode_e5m2,
    decode_e8m0,
    decode_fp4_e1m2,
    decode_fp4_e2m1,
    decode_hif8,
    encode_e4m3fn,
    encode_e5m2,
    encode_e8m0_bf16,
    encode_e8m0_f32,
    encode_fp4_e1m2,
    encode_fp4_e2m1,
    encode_hif8,
    encode_hif8_f16,
    f16_to_f32,
    f32_to_bf16,
    f32_to_f16,
    f64_to_f32_odd,
    round_to_integral,
)

_INLINE = dict(inline="always", cache=True, error_model="numpy")
_LOOP = dict(cache=True, error_model="numpy")


@njit(**_INLINE)
def _is_int(t):
    return (t == DT_INT8 or t == DT_UINT8 or t == DT_INT16 or t == DT_UINT16 or t == DT_INT32 or t == DT_UINT32
            or t == DT_INT64 or t == DT_INT4)


@njit(**_INLINE)
def _int_lo(t):
    if t == DT_INT4:
        return -8
    if t == DT_INT8:
        return -128
    if t == DT_INT16:
        return -32768
    if t == DT_INT32:
        return -2147483648
    if t == DT_INT64:
        return -9223372036854775807 - 1
    return 0


@njit(**_INLINE)
def _int_hi(t):
    if t == DT_INT4:
        return 7
    if t == DT_INT8:
        return 127
    if t == DT_UINT8:
        return 255
    if t == DT_INT16:
        return 32767
    if t == DT_UINT16:
        return 65535
    if t == DT_INT32:
        return 2147483647
    if t == DT_UINT32:
        return 4294967295
    return 9223372036854775807


@njit(**_INLINE)
def _sat_int(v, t):
    """Integer -> integer: saturate to the destination range (Reg Cast.md 表4 saturating mode; the Memory-level
    examples: int32 2^31-1 -> int16 2^15-1, int16 -> uint32 negative -> 0)."""
    lo = _int_lo(t)
    hi = _int_hi(t)
    return lo if v < lo else (hi if v > hi else v)


@njit(**_INLINE)
def _float_to_int(x, rmode, t):
    """Float -> integer: round to integral (codec), then saturate; NaN -> 0, +-Inf -> the range ends
    (Reg Cast.md 表4: "输入为nan时，返回0")."""
    if x != x:
        return np.int64(0)
    r = round_to_integral(np.float64(x), rmode)
    lo = _int_lo(t)
    hi = _int_hi(t)
    if r <= np.float64(lo):
        return np.int64(lo)
    if r >= np.float64(hi):
        return np.int64(hi)
    return np.int64(r)


@njit(**_INLINE)
def _bit_length(a):
    n = 0
    while a != 0:
        a >>= np.uint64(1)
        n += 1
    return n


@njit(**_INLINE)
def _int_to_f32(v, rmode):
    """Integer -> float32 with the mode. Exact below 2^24; above, the value scaled by a power of two (kept exact,
    with a sticky bit for int64) is rounded to an integer by the codec's ``round_to_integral``."""
    a = np.uint64(-v) if v < 0 else np.uint64(v)
    nbits = _bit_length(a)
    if nbits <= 24:
        return np.float32(v)
    s = nbits - 24
    if s > 2:
        # keep 24 + 2 bits and a sticky bit: the rounding decision of every mode is unchanged
        sticky = np.uint64(1) if (a & ((np.uint64(1) << np.uint64(s - 2)) - np.uint64(1))) != 0 else np.uint64(0)
        w = np.float64((a >> np.uint64(s - 2)) | sticky) * np.float64(0.25)
    else:
        w = np.float64(a) / np.float64(1 << s)
    q = round_to_integral(-w if v < 0 else w, rmode)
    return np.float32(q * np.float64(2.0) ** s)


@njit(**_INLINE)
def _nibble(src, i, flags):
    """Code of element i of a packed fp4x2 / int4 source."""
    b = np.uint8(src[i >> 1])
    high = ((i & 1) == 1) != ((flags & CAST_FLAG_FP4_HIGH_FIRST) != 0)
    return np.uint8((b >> np.uint8(4)) if high else (b & np.uint8(0xF)))


@njit(**_INLINE)
def _src_int(src, i, st, flags):
    """Integer value of source element i (int4: sign-extended nibble)."""
    if st == DT_INT4:
        v = np.int64(_nibble(src, i, flags))
        return v - 16 if v >= 8 else v
    return np.int64(src[i])


def _src_f32(src, i, st, flags):
    """Exact float32 value of source element i (njit only; resolved at typing time from the literal ``st``)."""
    raise NotImplementedError("_src_f32 is only callable from njit code")


@njit(**_INLINE)
def _src_int_f32(src, i, st, flags):
    # integers are rounded to odd first: exact below 2^24, and one correct rounding to any narrower float after
    return f64_to_f32_odd(np.float64(_src_int(src, i, st, flags)))


_SRC_DECODERS = {
    DT_FLOAT16: lambda src, i, st, flags: f16_to_f32(np.uint16(src[i])),
    DT_BF16: lambda src, i, st, flags: bf16_to_f32(np.uint16(src[i])),
    DT_HIFLOAT8: lambda src, i, st, flags: decode_hif8(np.uint8(src[i])),
    DT_FLOAT8_E4M3FN: lambda src, i, st, flags: decode_e4m3fn(np.uint8(src[i])),
    DT_FLOAT8_E5M2: lambda src, i, st, flags: decode_e5m2(np.uint8(src[i])),
    DT_FLOAT8_E8M0: lambda src, i, st, flags: decode_e8m0(np.uint8(src[i]), (flags & CAST_FLAG_E8M0_ZERO) != 0),
    DT_FLOAT4_E2M1: lambda src, i, st, flags: decode_fp4_e2m1(_nibble(src, i, flags)),
    DT_FLOAT4_E1M2: lambda src, i, st, flags: decode_fp4_e1m2(_nibble(src, i, flags)),
    DT_FLOAT: lambda src, i, st, flags: np.float32(src[i]),
}
_INT_TAGS = (DT_INT8, DT_UINT8, DT_INT16, DT_UINT16, DT_INT32, DT_UINT32, DT_INT64, DT_INT4)


@overload(_src_f32, inline="never", prefer_literal=True)
def _src_f32_ol(src, i, st, flags):
    # inline="never": inlining this overload (whose decoders inline the multi-return codecs) into a caller's loop
    # made numba's SSA pass warn "variable '..._call_9_2.1' is not in scope" (NumbaIRAssumptionWarning) at every
    # call site of Cast from float16; LLVM still inlines the call (same speed, measured), the bits are the same.
    # A branch inside an inlined helper is not pruned for a literal argument of the caller (only for a global
    # constant), so the source format is chosen here, at typing time: one decoder per (dst, src) loop.
    tag = getattr(st, "literal_value", None)
    if tag in _INT_TAGS:
        return lambda src, i, st, flags: _src_int_f32(src, i, st, flags)
    if tag in _SRC_DECODERS:
        return _SRC_DECODERS[tag]
    if tag is not None:
        raise TypingError(f"Cast: unsupported source format tag {tag}")

    def generic(src, i, st, flags):
        if _is_int(st):
            return _src_int_f32(src, i, st, flags)
        if st == DT_FLOAT16:
            return f16_to_f32(np.uint16(src[i]))
        if st == DT_BF16:
            return bf16_to_f32(np.uint16(src[i]))
        if st == DT_HIFLOAT8:
            return decode_hif8(np.uint8(src[i]))
        if st == DT_FLOAT8_E4M3FN:
            return decode_e4m3fn(np.uint8(src[i]))
        if st == DT_FLOAT8_E5M2:
            return decode_e5m2(np.uint8(src[i]))
        if st == DT_FLOAT8_E8M0:
            return decode_e8m0(np.uint8(src[i]), (flags & CAST_FLAG_E8M0_ZERO) != 0)
        if st == DT_FLOAT4_E2M1:
            return decode_fp4_e2m1(_nibble(src, i, flags))
        if st == DT_FLOAT4_E1M2:
            return decode_fp4_e1m2(_nibble(src, i, flags))
        return np.float32(src[i])

    return generic


# ---- one loop per destination family, compiled once per signature and cached. The format tags are literals at
# typing time (literal_args), so each (dst, src) pair compiles only its own decoder / encoder branch.


@literal_args(**_LOOP)
def _cast_to_f32(dst, src, n, rmode, st, flags):
    for i in range(n):
        if st == DT_FLOAT:
            # float -> float rounds to an integral value (precision_conversion.md "float → float": 0.5 RINT -> 0)
            x = np.float32(src[i])
            dst[i] = np.float32(round_to_integral(np.float64(x), rmode)) if x - x == 0 else x
        else:
            dst[i] = _src_f32(src, i, st, flags)


@literal_args(**_LOOP)
def _cast_int_to_f32(dst, src, n, rmode, st, flags):
    for i in range(n):
        dst[i] = _int_to_f32(_src_int(src, i, st, flags), rmode)


@literal_args(**_LOOP)
def _cast_float_to_int(dst, src, n, rmode, dt, st, flags):
    for i in range(n):
        dst[i] = _float_to_int(_src_f32(src, i, st, flags), rmode, dt)


@literal_args(**_LOOP)
def _cast_int_to_int(dst, src, n, dt, st, flags):
    for i in range(n):
        dst[i] = _sat_int(_src_int(src, i, st, flags), dt)


@literal_args(**_LOOP)
def _cast_to_f16(dst, src, n, rmode, st, flags):
    sat = (flags & CAST_FLAG_SAT) != 0
    for i in range(n):
        dst[i] = f32_to_f16(_src_f32(src, i, st, flags), rmode, sat)


@literal_args(**_LOOP)
def _cast_to_bf16(dst, src, n, rmode, st, flags):
    sat = (flags & CAST_FLAG_SAT) != 0
    for i in range(n):
        dst[i] = f32_to_bf16(_src_f32(src, i, st, flags), rmode, sat)


@literal_args(**_LOOP)
def _cast_to_fp8(dst, src, n, dt, st, flags):
    sat = (flags & CAST_FLAG_SAT) != 0
    keep_nan = (flags & CAST_FLAG_KEEP_NAN) != 0
    for i in range(n):
        if dt == DT_FLOAT8_E4M3FN:
            dst[i] = encode_e4m3fn(_src_f32(src, i, st, flags), sat, keep_nan)
        else:
            dst[i] = encode_e5m2(_src_f32(src, i, st, flags), sat, keep_nan)


@literal_args(**_LOOP)
def _cast_to_hif8(dst, src, n, rmode, st, flags):
    sat = (flags & CAST_FLAG_SAT) != 0
    script = (flags & CAST_FLAG_HYBRID_SCRIPT) != 0
    for i in range(n):
        dst[i] = encode_hif8(_src_f32(src, i, st, flags), rmode, sat, script)


@njit(**_LOOP)
def _cast_f16_to_hif8(dst, src, n, rmode, flags):
    sat = (flags & CAST_FLAG_SAT) != 0
    script = (flags & CAST_FLAG_HYBRID_SCRIPT) != 0
    sub_raw = (flags & CAST_FLAG_F16_SUB_RAW) != 0
    for i in range(n):
        dst[i] = encode_hif8_f16(np.uint16(src[i]), rmode, sat, script, sub_raw)


@literal_args(**_LOOP)
def _cast_to_e8m0(dst, src, n, st, flags):
    for i in range(n):
        if st == DT_BF16:
            dst[i] = encode_e8m0_bf16(np.uint16(src[i]))
        else:
            dst[i] = encode_e8m0_f32(_src_f32(src, i, st, flags))


@njit(**_INLINE)
def _put_nibble(dst, i, c, hi_first):
    old = np.int64(dst[i >> 1])
    if ((i & 1) == 1) != hi_first:
        dst[i >> 1] = (old & 0x0F) | (c << 4)
    else:
        dst[i >> 1] = (old & 0xF0) | c


@literal_args(**_LOOP)
def _cast_to_packed(dst, src, n, rmode, dt, st, flags):
    """fp4x2 / int4 destination: element 2j in the low nibble of byte j (high with CAST_FLAG_FP4_HIGH_FIRST); an
    odd n leaves the other nibble of the last byte unchanged."""
    hi_first = (flags & CAST_FLAG_FP4_HIGH_FIRST) != 0
    nan_sign = (flags & CAST_FLAG_FP4_NAN_SIGN) != 0
    for i in range(n):
        if dt == DT_INT4:
            if _is_int(st):
                c = _sat_int(_src_int(src, i, st, flags), DT_INT4) & 0xF
            else:
                c = _float_to_int(_src_f32(src, i, st, flags), rmode, DT_INT4) & 0xF
        elif dt == DT_FLOAT4_E2M1:
            c = np.int64(encode_fp4_e2m1(_src_f32(src, i, st, flags), rmode, nan_sign)) & 0xF
        else:
            c = np.int64(encode_fp4_e1m2(_src_f32(src, i, st, flags), rmode, nan_sign)) & 0xF
        _put_nibble(dst, i, c, hi_first)


@njit(**_INLINE)
def _mode_for(dt, round_mode):
    if round_mode != CAST_NONE:
        return round_mode
    # CAST_NONE: no rounding when exact, otherwise RINT (RoundMode.md); HiF8 has no RINT, aclnnCast uses ROUND
    return CAST_ROUND if dt == DT_HIFLOAT8 else CAST_RINT


@njit(**_INLINE)
def Cast(dst, src, round_mode, count, dst_type, src_type, flags=0):
    """AscendC::Cast<T, U>(dst, src, roundMode, count); ``dst_type`` = T, ``src_type`` = U as ``DT_*`` tags
    (always given: a uint16 / uint8 view does not say which format it holds).

    Semantics per destination class (count elements; FP4 / INT4 are packed two per byte, element 2i in the low
    nibble unless CAST_FLAG_FP4_HIGH_FIRST; an odd count leaves the other nibble of the last byte unchanged):

    * float -> float32: exact widening (half, bf16, HiF8, FP8, E8M0, FP4); float32 -> float32 rounds to an
      integral value in the given mode (precision_conversion.md example: 0.5, CAST_RINT -> 0.0); NaN/Inf kept.
    * -> half / bf16 / HiF8 / FP8 / E8M0 / FP4: one rounding of the exact source value by the codec. Flags
      (``CAST_FLAG_*``): SAT = saturating mode (Inf and overflow -> +-max, NaN -> 0; default Inf/NaN mode,
      docs/codecs.md §9), KEEP_NAN (FP8 with SAT), HYBRID_SCRIPT / F16_SUB_RAW (HiF8 HYBRID switches), FP4_NAN_SIGN,
      E8M0_ZERO (decoding). FP8 is RINT only and FP4 is always saturating (the mode / flag is ignored where the
      hardware has none). half -> HiF8 uses the half bits (HYBRID reads the fp16 LSB). bf16 / float32 -> E8M0 is
      the exponent truncation.
    * -> integer: round to integral (codec ``round_to_integral``), then saturate to the destination range; NaN -> 0
      (precision_conversion.md: "溢出默认按照饱和模式处理"; Reg Cast.md 表4). Integer -> integer saturates.
    * integer -> float32: exact below 2^24, otherwise rounded in the given mode; integer -> half / bf16 / ...: one
      rounding of the exact integer.

    CAST_NONE means RINT where the conversion is inexact (ROUND for HiF8, which has no RINT). Which (T, U, mode)
    combinations a SoC supports is the caller's business (Cast.md tables): this function computes any pair.
    Tags must be compile-time constants in kernels: each (T, U) pair then compiles one loop.
    """
    rmode = _mode_for(dst_type, round_mode)
    src_len = 2 * len(src) if (src_type == DT_FLOAT4_E2M1 or src_type == DT_FLOAT4_E1M2 or src_type == DT_INT4) \
        else len(src)
    if dst_type == DT_FLOAT4_E2M1 or dst_type == DT_FLOAT4_E1M2 or dst_type == DT_INT4:
        _cast_to_packed(dst, src, min(count, src_len, 2 * len(dst)), rmode, dst_type, src_type, flags)
        return
    n = min(count, src_len, len(dst))
    # (the tag tests are spelled out so that numba prunes them for constant tags)
    if (dst_type == DT_INT8 or dst_type == DT_UINT8 or dst_type == DT_INT16 or dst_type == DT_UINT16
            or dst_type == DT_INT32 or dst_type == DT_UINT32 or dst_type == DT_INT64):
        if (src_type == DT_INT8 or src_type == DT_UINT8 or src_type == DT_INT16 or src_type == DT_UINT16
                or src_type == DT_INT32 or src_type == DT_UINT32 or src_type == DT_INT64 or src_type == DT_INT4):
            _cast_int_to_int(dst, src, n, dst_type, src_type, flags)
        else:
            _cast_float_to_int(dst, src, n, rmode, dst_type, src_type, flags)
    elif dst_type == DT_FLOAT:
        if (src_type == DT_INT8 or src_type == DT_UINT8 or src_type == DT_INT16 or src_type == DT_UINT16
                or src_type == DT_INT32 or src_type == DT_UINT32 or src_type == DT_INT64 or src_type == DT_INT4):
            _cast_int_to_f32(dst, src, n, rmode, src_type, flags)
        else:
            _cast_to_f32(dst, src, n, rmode, src_type, flags)
    elif dst_type == DT_FLOAT16:
        _cast_to_f16(dst, src, n, rmode, src_type, flags)
    elif dst_type == DT_BF16:
        _cast_to_bf16(dst, src, n, rmode, src_type, flags)
    elif dst_type == DT_HIFLOAT8:
        if src_type == DT_FLOAT16:
            _cast_f16_to_hif8(dst, src, n, rmode, flags)
        else:
            _cast_to_hif8(dst, src, n, rmode, src_type, flags)
    elif dst_type == DT_FLOAT8_E4M3FN or dst_type == DT_FLOAT8_E5M2:
        _cast_to_fp8(dst, src, n, dst_type, src_type, flags)
    elif dst_type == DT_FLOAT8_E8M0:
        _cast_to_e8m0(dst, src, n, src_type, flags)
    else:
        raise ValueError("Cast: unsupported dst_type")
