"""Bit-exact scalar codecs, callable from any njit code (docs/codecs.md).

This module is the only place in npu-emu where a value is rounded to a low-precision format. Every public function
is ``@njit(inline='always', cache=True, error_model='numpy')`` and works on bit patterns: 16-bit values travel as
uint16, 8-bit and 4-bit codes as uint8 (numba has no float16/bfloat16, docs/contributing/numba_rules.md §2.1). Encoders
take the exact fp32 value apart with integer operations (never log2, docs/codecs.md §14); decoders read 256-entry
float32 tables (16 entries for FP4) built once at import from the field definitions of
docs/codecs.md §4.3, §5.1, §6.1, §7.1.

Round-mode ints are the Ascend C ``RoundMode`` enum (docs/codecs.md §2.1). Callers validate the mode before calling:
a mode a function does not implement behaves as RINT (scalar code cannot raise cheaply inside kernels).

Choices made here where docs/codecs.md is silent (all **[HW-unverified]**):

* Finite overflow of fp32 -> fp16/bf16 with a directed mode in non-saturating mode follows IEEE 754 §7.4:
  trunc -> ±max; floor -> +max / -Inf; ceil -> +Inf / -max; odd -> ±max (odd keeps the truncated value,
  whose mantissa is all ones); rint/round -> ±Inf.
* Saturating fp16/bf16 output maps NaN to +0, as the ISA table for float->float conversions says
  ("饱和模式：输入为nan时，输出为0",
  ``cannmirror/asc-devkit: docs/zh/api/SIMD-API/基础API/Reg矢量计算/类型转换/Cast.md`` 表4, and
  docs/codecs.md §9); docs/codecs.md §3.2 step 1 lists NaN before the saturation step and would keep it.
* ``hybrid_f16_subnormal="raw"`` (``f16_sub_raw=True``): the value (exponent, kept mantissa) of an fp16
  subnormal is taken exactly, but the HYBRID comparand ``frac`` is read from the raw fraction field at the bit
  positions of the ISA pseudo-code (g[9] for E = -23, g[9:8] in the denormal range, g[8:7] for E = -15)
  instead of from the normalised fraction.
"""

import math

import numpy as np
from numba import njit

CAST_NONE = 0
CAST_RINT = 1
CAST_FLOOR = 2
CAST_CEIL = 3
CAST_ROUND = 4
CAST_TRUNC = 5
CAST_ODD = 6
CAST_HYBRID = 7

_JIT = dict(inline="always", cache=True, error_model="numpy")


# --------------------------------------------------------------------------------------------------------------
# bit views


@njit(**_JIT)
def f32_as_u32(x):
    return np.float32(x).view(np.uint32)


@njit(**_JIT)
def u32_as_f32(u):
    return np.uint32(u).view(np.float32)


# --------------------------------------------------------------------------------------------------------------
# the one rounding rule (docs/codecs.md §2.2) and its binary-format wrapper


@njit(**_JIT)
def _rne_mag(a, mb, emin):
    """RNE magnitude code (uint32) of the finite fp32 magnitude bits ``a`` (uint32) in a binary format with ``mb``
    mantissa bits and smallest normal exponent ``emin`` (bias 1 - emin), gradual underflow, unbounded above.
    Written without data-dependent branches so that array loops vectorise (the hot path of every kernel that
    writes fp16/bf16/FP8)."""
    sh = 23 - mb
    # normal result: rounding the fp32 pattern to mb mantissa bits lets a carry ripple into the exponent field
    hi = np.uint32(np.uint32(np.uint32(a + np.uint32((1 << (sh - 1)) - 1)) + np.uint32((a >> sh) & 1)) >> sh)
    hi = np.uint32(hi - np.uint32((126 + emin) << mb))
    if emin <= -126:
        return hi  # bf16 shares fp32's exponent range: the pattern rounding covers fp32 subnormals as well
    small = a < np.uint32((emin + 127) << 23)
    # subnormal result: |x|·2^(mb - emin) is exact (a power-of-two scaling of a value below 2^emin) and
    # rint rounds half to even
    scale = np.uint32((127 + mb - emin) << 23).view(np.float32)
    lo = np.uint32(np.int32(np.rint(np.uint32(a if small else 0).view(np.float32) * scale)))
    return lo if small else hi


@njit(**_JIT)
def _binary_mag(a, neg, rmode, mb, emin):
    """``_rne_mag`` for every mode of docs/codecs.md §2.2 (int64 in and out): the rounded magnitude code, past the
    largest finite code on overflow."""
    if rmode == CAST_RINT or rmode == CAST_NONE:
        return np.int64(_rne_mag(np.uint32(a), mb, emin))
    # np.int64: a constant mode (a literal in numba's typing) would compile another copy of _any_mag per call site
    return _any_mag(a, neg, np.int64(rmode), mb, emin)


# Not inlined: numba's IR inlining makes every kernel that calls an fp16/bf16/FP4 encoder pay seconds of compile
# time for this branchy general case; as a plain call it compiles once per process (and is cached), and RINT,
# the mode of nearly every kernel, never reaches it.
@njit(cache=True, error_model="numpy")
def _any_mag(a, neg, rmode, mb, emin):
    eb = a >> 23
    if eb >= emin + 127:
        m = a
        sh = 23 - mb
        off = (126 + emin) << mb
    else:
        # fixed quantum 2^(emin - mb); the value is m·2^(eb - 150), an fp32 subnormal a·2^-149; m < 2^24, so a
        # shift of 25 or more gives i = 0 with a remainder below the half, like any larger shift
        m = a if eb == 0 else (a & 0x7FFFFF) | 0x800000
        sh = min(emin - mb + 150 - max(eb, 1), 25)
        off = 0
    i = m >> sh
    rem = m & ((1 << sh) - 1)
    half = 1 << (sh - 1)
    inc = 0
    if rem != 0:
        if rmode == CAST_ODD:
            i |= 1
        elif rmode == CAST_FLOOR:
            inc = 1 if neg else 0
        elif rmode == CAST_CEIL:
            inc = 0 if neg else 1
        elif rmode == CAST_ROUND:
            inc = 1 if rem >= half else 0
        elif rmode != CAST_TRUNC:  # RINT
            inc = 1 if (rem > half or (rem == half and (i & 1) == 1)) else 0
    return i + inc - off


@njit(**_JIT)
def _overflow_code(rmode, neg, sat, max_code, inf_code):
    """Code for a finite value beyond the largest finite code (IEEE 754 §7.4 for the directed modes)."""
    if sat or rmode == CAST_TRUNC or rmode == CAST_ODD or (rmode == CAST_FLOOR and not neg) \
            or (rmode == CAST_CEIL and neg):
        return max_code
    return inf_code


# --------------------------------------------------------------------------------------------------------------
# fp16 / bf16 / fp32 helpers (docs/codecs.md §3)


@njit(**_JIT)
def f16_to_f32(h):
    # Branch-free in uint32 (selects, no early return), so that a loop widening halves vectorises: 8 lanes of
    # 32 bits where the int64 form gave none (a fused quantization loop: 2.8 -> 1.0 ns per element, one thread)
    u = np.uint32(h)
    a = np.uint32(u & _U32_7FFF)
    e = np.uint32(a >> _U32_10)
    # normal: the exponent rebiased from 15 to 127; Inf / NaN (exponent 31): rebiased twice, to 255
    bits = np.uint32(np.uint32(a << _U32_13) + _U32_REBIAS)
    bits = np.uint32(bits + _U32_REBIAS) if e == _U32_31 else bits
    # subnormal or zero (exponent 0, so a is the fraction m): m·2^-24 is exact in fp32
    sub = np.float32(np.float32(a) * np.float32(5.9604644775390625e-08)).view(np.uint32)
    return np.uint32((sub if e == _U32_0 else bits) | np.uint32((u & _U32_8000) << _U32_16)).view(np.float32)


_U32_0, _U32_10, _U32_13, _U32_16, _U32_31 = (np.uint32(v) for v in (0, 10, 13, 16, 31))
_U32_7FFF, _U32_8000, _U32_REBIAS = np.uint32(0x7FFF), np.uint32(0x8000), np.uint32(112 << 23)


@njit(**_JIT)
def bf16_to_f32(b):
    # in uint32, like f16_to_f32: a widening loop vectorises on 32-bit lanes (int64 lanes were half as wide)
    return np.uint32(np.uint32(b) << _U32_16).view(np.float32)


@njit(**_JIT)
def _encode_16(x, rmode, sat, mb, emin, max_code):
    """fp32 -> fp16 (mb 10, emin -14) or bf16 (mb 7, emin -126) bits."""
    u = np.int64(np.float32(x).view(np.uint32))
    s = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    neg = s != 0
    if a > 0x7F800000:
        # NaN: +0 when saturating, else quiet NaN; fp16 canonical 0x7E00 (docs/codecs.md §3.2), bf16 keeps the top
        # payload bits, TRUNC only makes sure a fraction bit survives (docs/codecs.md §3.3)
        r = u >> 16
        if mb == 10:
            r = s | 0x7E00
        elif rmode != CAST_TRUNC or (r & 0x7F) == 0:
            r |= 0x40
        return np.uint16(0 if sat else r)
    if a == 0x7F800000:
        c = max_code if sat else max_code + 1
    else:
        c = _binary_mag(a, neg, rmode, mb, emin)
        if c > max_code:
            c = _overflow_code(rmode, neg, sat, max_code, max_code + 1)
    return np.uint16(s | c)


@njit(**_JIT)
def _f32_to_f16_rint(x, sat):
    """f32_to_f16 for RINT (and NONE), without data-dependent branches: the rounded magnitude, then overflow
    (Inf included: its rounded pattern lies past 0x7C00) clamped by a min and NaN chosen by a select, so a loop
    of conversions vectorises. Identical to the general path over all 2^32 inputs
    (tests/dtypes/test_f32_to_f16_rint.py)."""
    u = np.float32(x).view(np.uint32)
    s = (u >> np.uint32(16)) & np.uint32(0x8000)
    a = u & np.uint32(0x7FFFFFFF)
    c = min(_rne_mag(a, 10, -14), np.uint32(0x7BFF) if sat else np.uint32(0x7C00))
    nan = np.uint32(0) if sat else s | np.uint32(0x7E00)
    return np.uint16(nan if a > np.uint32(0x7F800000) else s | c)


# Not inlined, like _any_mag: a kernel holding several f32_to_f16 calls with a run-time mode would otherwise
# carry an inlined copy of the whole general encoder per call (minutes of compile time).
@njit(cache=True, error_model="numpy")
def _f32_to_f16_any(x, rmode, sat):
    return _encode_16(x, rmode, sat, 10, -14, 0x7BFF)


@njit(**_JIT)
def f32_to_f16(x, rmode, sat):
    """fp32 -> fp16 bits in any mode but HYBRID; ``sat``: overflow and ±Inf -> ±65504, NaN -> +0."""
    if rmode == CAST_RINT or rmode == CAST_NONE:
        return _f32_to_f16_rint(x, sat)
    return _f32_to_f16_any(x, np.int64(rmode), np.bool_(sat))     # one signature whatever the call site passes


@njit(**_JIT)
def f32_to_bf16(x, rmode, sat):
    """fp32 -> bf16 bits in any mode but HYBRID; ``sat``: overflow and ±Inf -> ±max (0x7F7F), NaN -> +0."""
    return _encode_16(x, rmode, sat, 7, -126, 0x7F7F)


@njit(**_JIT)
def f32_to_bf16_rint(x):
    """f32_to_bf16(x, CAST_RINT, False) without data-dependent branches (a loop of them vectorises): round to
    nearest even on the bits (Inf stays Inf, overflow carries into the Inf pattern), NaN keeps its top payload bits
    with the quiet bit set. Identical to the general path over all 2^32 inputs (tests/dtypes/test_f32_to_bf16_rint.py)."""
    u = np.float32(x).view(np.uint32)
    # numba types uint32 + uint32 as 64-bit: the np.uint32 wraps and the signed compare keep every step 32 bits
    # wide, so a loop of conversions runs eight lanes per AVX2 vector instead of four (2x on a conversion loop); the
    # 32-bit wrap of u + 0x8000 past 0xFFFFFFFF only touches bits that the uint16 result drops
    lsb = (u >> np.uint32(16)) & np.uint32(1)
    r = np.uint32(np.uint32(u + np.uint32(0x7FFF)) + lsb) >> np.uint32(16)
    nan = (u >> np.uint32(16)) | np.uint32(0x40)
    return np.uint16(nan if np.int32(u & np.uint32(0x7FFFFFFF)) > np.int32(0x7F800000) else r)


@njit(**_JIT)
def f64_to_f32_odd(x):
    """float64 -> float32 with round-to-odd (CAST_ODD). Rounding this result once more to any format with at most
    22 significand bits and quanta of at least 2^-147 equals rounding x directly, in every mode but HYBRID
    (Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd").
    Overflow gives ±FLT_MAX, underflow ±2^-149: both keep x's side of every boundary of those formats."""
    f = np.float32(x)
    if np.float64(f) == x or x != x:
        return f
    u = np.int64(f.view(np.uint32))
    if abs(np.float64(f)) > abs(x):
        u -= 1  # step toward zero: the truncation (from Inf this is FLT_MAX)
    return np.uint32(u | 1).view(np.float32)


@njit(**_JIT)
def round_to_integral(x, rmode):
    """float64 -> float64 integral value with the Ascend mode (the float->int step of Cast; the caller clamps and
    handles NaN/Inf, which pass through)."""
    if rmode == CAST_FLOOR:
        return np.floor(x)
    if rmode == CAST_CEIL:
        return np.ceil(x)
    if rmode == CAST_TRUNC:
        return np.trunc(x)
    if rmode == CAST_ROUND:
        # ties away; x - trunc(x) is exact, unlike floor(|x| + 0.5)
        t = np.trunc(x)
        if abs(x - t) >= 0.5:
            return t + np.copysign(1.0, x)
        return t
    if rmode == CAST_ODD:
        t = np.trunc(x)
        if x != t and np.fmod(t, 2.0) == 0.0:
            return t + np.copysign(1.0, x)
        return t
    return np.rint(x)


@njit(**_JIT)
def t19(u):
    """FP19 scale truncation: keep sign, exponent and the top 10 mantissa bits (docs/codecs.md §3.5)."""
    return np.uint32(np.int64(u) & 0xFFFFE000)


@njit(**_JIT)
def r19(u):
    """FP19 scale rounding of aclnnTransQuantParamV3 round_mode=1: RNE on the 13 dropped bits; exponent 0 gives
    signed zero; exponent 255 (Inf/NaN) is truncated (``hicann/ops-nn:
    quant/trans_quant_param_v2/op_kernel/trans_quant_param_v2.h`` ``CalQuantPreScaleValue``)."""
    u = np.int64(u)
    e = (u >> 23) & 0xFF
    if e == 0:
        return np.uint32(u & 0x80000000)
    if e == 0xFF:
        return np.uint32(u & 0xFFFFE000)
    # a carry out of exponent 254 lands on exponent 255, mantissa 0 (Inf), as in the kernel
    return np.uint32((u + 0xFFF + ((u >> 13) & 1)) & 0xFFFFE000)


# --------------------------------------------------------------------------------------------------------------
# FP8 E4M3FN / E5M2 (docs/codecs.md §5), hardware mode RINT only


@njit(**_JIT)
def _encode_fp8(x, sat, keep_nan, mb, emin, max_code, inf_code, nan_code):
    u = np.float32(x).view(np.uint32)
    s = np.uint32(u >> 24) & np.uint32(0x80)
    a = u & np.uint32(0x7FFFFFFF)
    c = _rne_mag(a, mb, emin)
    ovf = np.uint32(max_code) if sat else np.uint32(inf_code)
    c = ovf if (c > np.uint32(max_code) or a == np.uint32(0x7F800000)) else c
    r = s | c
    if a > np.uint32(0x7F800000):
        r = np.uint32(0) if (sat and not keep_nan) else (s | np.uint32(nan_code))
    return np.uint8(r)


@njit(**_JIT)
def encode_e4m3fn(x, sat, keep_nan):
    """fp32 -> E4M3FN, RNE. Non-saturating: overflow/Inf -> NaN (0x7F|sign). Saturating: ±448, NaN -> 0x00
    (``keep_nan``: NaN kept, CTRL[50] = 1)."""
    return _encode_fp8(x, sat, keep_nan, 3, -6, 0x7E, 0x7F, 0x7F)


@njit(**_JIT)
def encode_e5m2(x, sat, keep_nan):
    """fp32 -> E5M2, RNE. Non-saturating: overflow/Inf -> ±Inf, NaN -> 0x7E|sign. Saturating: ±57344,
    NaN -> 0x00 (``keep_nan``: NaN kept)."""
    return _encode_fp8(x, sat, keep_nan, 2, -14, 0x7B, 0x7C, 0x7E)


# --------------------------------------------------------------------------------------------------------------
# BF16 times a power of two -> FP8 / FP4 (RINT, saturating), in 16-bit lanes: the same codes as encode_e4m3fn,
# encode_e5m2 (sat, NaN -> 0) and encode_fp4_* (CAST_RINT) applied to the FP32 product, for the MX kernels' hot loop


@njit(**_JIT)
def pow2_shift_ok(recip_bits, mb, emin):
    """Whether the BF16 value with bits ``recip_bits`` is a reciprocal ``rint_code_bf16_pow2`` takes: a positive
    normal power of two 2^(e - 127) with e <= 252 + emin - mb."""
    b = np.int64(recip_bits)
    e = (b >> 7) & 0xFF
    return ((b & 0x807F) == 0) & (e >= 1) & (e <= 252 + emin - mb)      # no short circuit: loops over it vectorise


@njit(**_JIT)
def pow2_bias(recip_bits, emin):
    """The int16 ``dd`` that rint_code_bf16_pow2 (and its vector forms in npu_emu.dtypes.vector) take for the
    reciprocal 2^(e - 127) with BF16 bits ``recip_bits``: (e - 127) * 128, the product's exponent move, less
    (126 + emin) * 128, so that u = |h| + dd is >= 128 exactly when the product is a normal number of the format.
    One subtraction per block."""
    return np.int16(((((np.int64(recip_bits) >> 7) & 0xFF) - 253 - emin) << 7))


@njit(**_JIT)
def _pow2_normal(u, mb, max_code):
    """The normal code of u = |h| + dd: u's pattern rounded to mb mantissa bits (ties to even), clamped to
    [0, max_code]. dd is a multiple of 2^7, so u's low bits are h's and the tie parity is h's."""
    sh = 7 - mb
    v = np.int16(np.int16(np.int16(u + np.int16((1 << (sh - 1)) - 1)) + np.int16(np.int16(u >> sh) & 1)) >> sh)
    # selects as masks, m = -(condition): b ^ ((a ^ b) & m) is a where m is all ones. Conditional expressions and
    # min/max lower to branches, and a branch left in a fixed-length element loop stopped LLVM from vectorising it
    # for some format constants (in a 32-element loop E4M3 vectorised, E5M2 and both FP4 ran scalar, 3-5x slower;
    # test_mx_fast.py::test_fast_loops_vectorise checks each format). Written out, not as helper calls: each nested
    # inline call adds to numba's IR-inlining compile time
    mx = np.int16(max_code)
    v = np.int16(v ^ ((v ^ mx) & np.int16(-np.int16(v > mx))))
    return np.int16(v & ~np.int16(-np.int16(v < np.int16(0))))


@njit(**_JIT)
def rint_code_bf16_pow2(h, dd, mb, emin, max_code, sbit):
    """RINT, saturating code (mb mantissa bits, smallest normal exponent emin, largest finite code max_code, sign at
    bit ``sbit``; NaN -> 0) of the BF16 value h (uint16 bits) times a power-of-two reciprocal 2^(e - 127),
    1 <= e <= 252 + emin - mb (``pow2_shift_ok``), given as dd = pow2_bias(its bits, emin).

    The FP32 product of a BF16 value and a power of two is exact unless it leaves the normal range, so its BF16 bits
    are |h| + (e - 127) * 128: an integer add in place of the multiply. Here u = |h| + dd, the same add less a
    constant, which keeps every finite product in int16 (dd <= -(1 + mb) * 128) and turns the normal test into
    u >= 128. Products below 2^-126 and every subnormal h (whose products the bound on e keeps below half the
    smallest subnormal code) round to zero. The normal codes round u's pattern (the scaling moves only the exponent
    field), the subnormal ones count the midpoints the product passes. Equal to encode_e4m3fn / encode_e5m2 (sat)
    and encode_fp4_e2m1 / encode_fp4_e1m2 (CAST_RINT) of the FP32 product for every h and every such e
    (tests/dtypes/test_pow2_codes.py, exhaustive). Every step is a 16-bit operation without a branch, so a loop over
    it vectorises 16 lanes wide on AVX2.
    """
    a = np.int16(h & 0x7FFF)
    u = np.int16(a + np.int16(dd))              # NaN/Inf lanes are replaced below
    hi = _pow2_normal(u, mb, max_code)
    # subnormal: the count of midpoints (k + 1/2) * 2^(emin - mb) = o * 2^(emin - mb - 1), o = 2k + 1, between codes
    # k and k + 1 that the product has passed, or reached for odd k (ties to even). Midpoint k's BF16 bits are
    # exponent 126 + emin - mb + j, j = floor(log2 o), and mantissa (o - 2^j) << (7 - j) (o < 16: exact); less
    # (126 + emin) * 128 they are in u's terms. A constant-count loop, which LLVM unrolls and folds once mb is a
    # constant, rather than one inlined call per midpoint (numba's IR inlining of nested calls costs minutes of
    # compile time in the kernels)
    lo = np.int16(0)
    for k in range(1 << mb):
        o = 2 * k + 1
        j = (o >= 2) + (o >= 4) + (o >= 8)
        m = np.int16(((j - mb) << 7) + ((o - (1 << j)) << (7 - j)))
        lo = np.int16(lo + np.int16(u >= m if k % 2 == 1 else u > m))
    c = np.int16(lo ^ ((lo ^ hi) & np.int16(-np.int16(u >= np.int16(128)))))          # selects as in _pow2_normal
    c = np.int16(c ^ ((c ^ np.int16(max_code)) & np.int16(-np.int16(a >= np.int16(0x7F80)))))
    c = np.int16(c | np.int16(np.int16(h >> (15 - sbit)) & (1 << sbit)))
    return np.uint8(c & ~np.int16(-np.int16(a > np.int16(0x7F80))))


# --------------------------------------------------------------------------------------------------------------
# FP4 E2M1 / E1M2 (docs/codecs.md §7.3): always saturating, code in the low nibble


@njit(**_JIT)
def _encode_fp4(x, rmode, nan_sign, mb):
    u = np.int64(np.float32(x).view(np.uint32))
    s = (u >> 28) & 0x8
    a = u & 0x7FFFFFFF
    if a > 0x7F800000:
        return np.uint8(s if nan_sign else 0)
    c = 7 if a == 0x7F800000 else min(_binary_mag(a, s != 0, rmode, mb, 0), 7)
    return np.uint8(s | c)


@njit(**_JIT)
def encode_fp4_e2m1(x, rmode, nan_sign):
    """fp32 -> FP4 E2M1 (rint/round/floor/ceil/trunc), one rounding of the exact value, saturating to ±6.
    NaN -> 0x0, or a zero carrying the NaN's sign when ``nan_sign`` (``fp4_nan="nan_sign"``)."""
    return _encode_fp4(x, rmode, nan_sign, 1)


@njit(**_JIT)
def encode_fp4_e1m2(x, rmode, nan_sign):
    """fp32 -> FP4 E1M2 (uniform step 0.25 up to 1.75), same rules as ``encode_fp4_e2m1``."""
    return _encode_fp4(x, rmode, nan_sign, 2)


# --------------------------------------------------------------------------------------------------------------
# E8M0 (docs/codecs.md §6.2): hardware bf16 -> E8M0 keeps the exponent field


@njit(**_JIT)
def encode_e8m0_bf16(b):
    """bf16 bits -> E8M0: the exponent field (floor(log2|x|) + 127, sign dropped); zero/subnormal -> 0x00,
    ±Inf -> 0xFE, NaN -> 0xFF."""
    b = np.int64(b)
    e = (b >> 7) & 0xFF
    if e == 0xFF:
        e = 0xFF if (b & 0x7F) != 0 else 0xFE
    return np.uint8(e)


@njit(**_JIT)
def encode_e8m0_f32(x):
    """fp32 -> E8M0 by the same exponent truncation (= the bf16 rule applied to the exact value)."""
    u = np.int64(np.float32(x).view(np.uint32))
    e = (u >> 23) & 0xFF
    if e == 0xFF:
        e = 0xFF if (u & 0x7FFFFF) != 0 else 0xFE
    return np.uint8(e)


# --------------------------------------------------------------------------------------------------------------
# HiFloat8 (docs/codecs.md §4.5, §4.6)


@njit(**_JIT)
def _hif8_exponent_code(e):
    """Code of 2^e with mantissa 0 (docs/codecs.md §4.5 field assembly): denormal code e + 23 for e <= -16; the prefix
    of D = bit_length(abs(e)) exponent bits, then the sign-magnitude exponent field (implicit leading 1 dropped) shifted
    past the mb = 3, 3, 3, 2, 1 mantissa bits; e = 16 (a carry out of 2^15) is the Inf slot 0x6F. Computed, not
    looked up: a table gather keeps LLVM from vectorising the array loops."""
    ae = abs(e)
    d = np.int64(ae >= 1) + np.int64(ae >= 2) + np.int64(ae >= 4) + np.int64(ae >= 8)
    mb = 3 - np.int64(d >= 3) - np.int64(d >= 4)
    dm = max(d - 1, 0)
    field = ((np.int64(e < 0) << dm) | (ae - (1 << dm))) if d >= 1 else 0
    normal = (0x08 << min(d, 3)) | (0x20 if d == 4 else 0) | (field << mb)
    code = (e + 23) if e < -15 else normal
    return 0x6F if e > 15 else code


@njit(**_JIT)
def _hif8_core(u, rmode, sat, hybrid_script, width, thr, ffrac):
    """HiF8 code of the exact value with fp32 bits ``u`` (int64). ROUND: the first discarded bit decides (ties away
    on the magnitude). HYBRID (abs(e) >= 4 and below 2^-15): round up iff the ``width`` bits of the 23-bit fraction
    ``ffrac`` that start at the first discarded bit are >= ``thr`` (fp32 source: 14 bits vs u & 0x3FFF; fp16
    source: 2 bits vs {lsb, 1}). Every case is computed and then selected, without branches, so loops vectorise."""
    s7 = (u >> 31) << 7
    a = u & 0x7FFFFFFF
    e = (a >> 23) - 127
    ec = min(max(e, -23), 15)  # out-of-range exponents are replaced below
    ae = abs(ec)
    # kept mantissa bits: 3 for abs(e) <= 3, 2 up to 7, 1 up to 15, 0 for the denormals 2^-22 … 2^-16, and -1 for
    # the binade [2^-23, 2^-22) where even the leading 1 is discarded (docs/codecs.md §4.1)
    mb = 1 + np.int64(ae <= 7) + np.int64(ae <= 3) - np.int64(ec < -15) - np.int64(ec < -22)
    mbp = max(mb, 0)
    hybrid = rmode == CAST_HYBRID
    frac = ((ffrac | 0x800000) >> (23 - mb - width)) & ((1 << width) - 1)
    first_discarded = (((a & 0x7FFFFF) | 0x800000) >> (22 - mb)) & 1
    up = np.int64(frac >= thr) if (hybrid & (ae > 3)) else first_discarded
    mm = ((a >> (23 - mbp)) & ((1 << mbp) - 1)) + up
    e2 = ec + (mm >> mbp)  # a mantissa carry (or a denormal rounding up) moves to the next binade, mantissa 0
    code = s7 | _hif8_exponent_code(e2) | (mm & ((1 << mbp) - 1))  # at e = 15, mantissa 1 is the Inf code 0x6F
    code = 0 if ((e < -23) | ((mb < 0) & (up == 0))) else code  # the only zero: underflow loses the sign
    # scripts/ascriptor test |x| >= 40960 before rounding (hybrid_overflow="script")
    code = (s7 | 0x6F) if ((e > 15) | (hybrid & hybrid_script & (a >= 0x47200000))) else code
    code = 0x80 if a > 0x7F800000 else code
    sat_code = 0 if code == 0x80 else code - np.int64((code & 0x7F) == 0x6F)
    return sat_code if sat else code


@njit(**_JIT)
def encode_hif8(x, rmode, sat, hybrid_script):
    """fp32 -> HiF8 with CAST_ROUND (ties away) or CAST_HYBRID (thr = low 14 bits of the fp32 pattern).
    Non-saturating: overflow/Inf -> 0x6F/0xEF, NaN -> 0x80. ``sat``: ±Inf results -> ±32768, NaN -> 0x00.
    ``hybrid_script``: HYBRID returns Inf for every |x| >= 40960 (``hybrid_overflow="script"``)."""
    u = np.int64(np.float32(x).view(np.uint32))
    return np.uint8(_hif8_core(u, rmode, sat, hybrid_script, 14, u & 0x3FFF, u & 0x7FFFFF))


@njit(**_JIT)
def encode_hif8_f16(h, rmode, sat, hybrid_script, f16_sub_raw):
    """fp16 bits -> HiF8 (half->hifloat8 pseudo-code): ROUND equals ROUND of the widened value; HYBRID uses
    2-bit ``frac`` against thr = 2·lsb + 1. ``f16_sub_raw``: ``hybrid_f16_subnormal="raw"`` (module doc)."""
    h = np.int64(h)
    f = np.float32(f16_to_f32(h))
    u = np.int64(f.view(np.uint32))
    ffrac = (h & 0x3FF) << 13 if (f16_sub_raw and (h & 0x7C00) == 0) else u & 0x7FFFFF
    return np.uint8(_hif8_core(u, rmode, sat, hybrid_script, 2, 2 * (h & 1) + 1, ffrac))


# --------------------------------------------------------------------------------------------------------------
# decode tables (built once from the field definitions) and decoders


def _binary_value(code, ebits, mbits, bias):
    """Value of a sign/exponent/mantissa code without specials (subnormals at exponent field 0)."""
    s = -1.0 if (code >> (ebits + mbits)) & 1 else 1.0
    e = (code >> mbits) & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    if e == 0:
        return s * math.ldexp(m, 1 - bias - mbits)
    return s * math.ldexp((1 << mbits) | m, e - bias - mbits)


def _binary_table(ebits, mbits, bias):
    n = 1 << (1 + ebits + mbits)
    return np.array([_binary_value(c, ebits, mbits, bias) for c in range(n)], dtype=np.float32)


def _hif8_value(code):
    """docs/codecs.md §4.3."""
    if code == 0x80:
        return math.nan
    p = code & 0x7F
    sign = -1.0 if code & 0x80 else 1.0
    if p == 0:
        return 0.0
    if p == 0x6F:
        return sign * math.inf
    for d, mb, prefix_bits, prefix in ((4, 1, 2, 3), (3, 2, 2, 2), (2, 3, 2, 1), (1, 3, 3, 1), (0, 3, 4, 1)):
        if p >> (7 - prefix_bits) == prefix:
            m = p & ((1 << mb) - 1)
            if d == 0:
                e = 0
            else:
                f = (p >> mb) & ((1 << d) - 1)
                e = (1 << (d - 1)) | (f & ((1 << (d - 1)) - 1))
                if f >> (d - 1):
                    e = -e
            return sign * math.ldexp((1 << mb) + m, e - mb)
    return sign * math.ldexp(1.0, (p & 7) - 23)  # denormal, prefix 0000


def _tables():
    hif8 = np.array([_hif8_value(c) for c in range(256)], dtype=np.float32)
    # NaN codes decode to the quiet NaN 0x7FC00000 carrying the code's sign, as ml_dtypes does
    e4m3 = _binary_table(4, 3, 7)
    e4m3[0x7F], e4m3[0xFF] = np.nan, -np.nan
    e5m2 = _binary_table(5, 2, 15)
    for c in range(0x7C, 0x80):
        e5m2[c] = np.inf if c == 0x7C else np.nan
        e5m2[c | 0x80] = -np.inf if c == 0x7C else -np.nan
    e8m0 = np.array([math.ldexp(1.0, c - 127) for c in range(255)] + [math.nan], dtype=np.float32)
    e8m0_zero = e8m0.copy()
    e8m0_zero[0] = 0.0
    return dict(
        hifloat8=hif8, float8_e4m3fn=e4m3, float8_e5m2=e5m2, float8_e8m0=e8m0, float8_e8m0_zero=e8m0_zero,
        float4_e2m1=_binary_table(2, 1, 1), float4_e1m2=_binary_table(1, 2, 1),
        float6_e3m2=_binary_table(3, 2, 3), float6_e2m3=_binary_table(2, 3, 1),
    )


DECODE_TABLES = _tables()
for _t in DECODE_TABLES.values():
    _t.setflags(write=False)
_HIF8_LUT = DECODE_TABLES["hifloat8"]
_E4M3_LUT = DECODE_TABLES["float8_e4m3fn"]
_E5M2_LUT = DECODE_TABLES["float8_e5m2"]
_E8M0_LUT = DECODE_TABLES["float8_e8m0"]
_E2M1_LUT = DECODE_TABLES["float4_e2m1"]
_E1M2_LUT = DECODE_TABLES["float4_e1m2"]


@njit(**_JIT)
def decode_hif8(c):
    return _HIF8_LUT[np.uint8(c)]


@njit(**_JIT)
def decode_e4m3fn(c):
    return _E4M3_LUT[np.uint8(c)]


@njit(**_JIT)
def decode_e5m2(c):
    return _E5M2_LUT[np.uint8(c)]


@njit(**_JIT)
def decode_fp4_e2m1(c):
    """Low nibble of c (the high nibble is ignored, so a packed byte's element 2i can be passed as is)."""
    return _E2M1_LUT[np.uint8(c) & 0xF]


@njit(**_JIT)
def decode_fp4_e1m2(c):
    return _E1M2_LUT[np.uint8(c) & 0xF]


@njit(**_JIT)
def decode_e8m0(c, zero_is_zero):
    """2^(c - 127), 0xFF -> NaN; code 0x00 -> 2^-127, or 0.0 when ``zero_is_zero`` (``e8m0_zero="zero"``)."""
    if zero_is_zero and c == 0:
        return np.float32(0.0)
    return _E8M0_LUT[np.uint8(c)]
