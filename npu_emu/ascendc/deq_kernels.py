"""njit core of the enhanced DataCopy CO1 -> CO2 (docs/ops/data_copy_dequant.md §3-§5).

The per-element DEQ8 / DEQ16 / DEQS16 pipelines are written once here as inline scalar functions and used by both
the instruction-level copy (``l0c_to_ub_kernel``: one call = one DataCopy on one AI Core) and the op
``data_copy_dequant``, whose whole-matrix kernels (npu_emu.kernels.data_copy_dequant.kernel) run them row by row.
As for every kernel that calls the instruction layer, numba's cache watches only the file that defines the entry
function (docs/contributing/numba_rules.md §2.4): after editing an element function here, use a fresh
NUMBA_CACHE_DIR (CI keys its cache by every source file).

Datapath width: the element functions are typed by the scale ``m`` they receive. A float32 ``m`` gives the fp32
datapath (``deq_mul="f32"``: f32(f32(t)·M')); a float64 ``m`` gives the exact product (``deq_mul="exact"``:
f32(t)·M' has at most 24 + 11 significant bits, exact in float64), rounded once at the next stage. Integers stay
32-bit and floats 32-bit wherever that is exact, so the default path vectorises on AVX2 as well as AVX-512.

Nothing here validates: npu_emu.ascendc.deq and npu_emu.kernels.data_copy_dequant.checks check every argument
before calling in.
"""

from collections import namedtuple

import numpy as np
from numba import njit, prange

from npu_emu.dtypes.scalar import CAST_RINT, f32_to_f16, f64_to_f32_odd, round_to_integral, u32_as_f32
from npu_emu.dtypes.scalar import _rne_mag  # the RNE rule of f32_to_f16, without its NaN / Inf / overflow cases
from npu_emu.device.jit_options import PARALLEL

# The data_copy_deq switches as plain ints, resolved once in Python (npu_emu.ascendc.deq.resolve_switches).
DeqSwitches = namedtuple("DeqSwitches", [
    "mcb_shift_plus1",   # 1: shift = N + 1 (default); 0: shift = N
    "mcb_trunc",         # 1: the MCB shift rounds toward zero; 0: arithmetic (floor)
    "mcb_wrap",          # 1: keep the low 16 bits after the MCB shift; 0: saturate to int16
    "clamp9",            # 1: clamp to [-256, 255], round, then add the offset; 0: round(p + offset)
    "relu_mode",         # RELU_INPUT_SIGN / RELU_SCALED / RELU_FINAL
    "offset_signed",     # 1: 9-bit two's complement offset; 0: 0..511
    "m_truncate",        # 1: M' = bits & 0xFFFFE000; 0: the full fp32
    "mul_exact",         # 1: exact product; read by the caller, which passes a float64 scale array
    "deq8_rmode",        # CAST_RINT or CAST_ROUND (Ascend C RoundMode) for the DEQ8 integer rounding
    "deq16_sat",         # 1: clamp to +-65504 before the half conversion; 0: IEEE overflow to +-Inf
])

RELU_INPUT_SIGN = 0
RELU_SCALED = 1
RELU_FINAL = 2

# Element kinds of the instruction-level copy (ConvRelu_t crModes, split by element width).
K_COPY = 0            # CRMODE_NONE: bit copy of 16- or 32-bit elements
K_RELU_S32 = 1        # CRMODE_NONE_RELU on int32
K_RELU_F32 = 2        # CRMODE_NONE_RELU on float
K_RELU_F16 = 3        # CRMODE_NONE_RELU on half
K_F32_TO_F16 = 4      # CRMODE_F32toF16_NONE / _RELU
K_DEQ8 = 5            # CRMODE_DEQSCALE_DEQ8 / VDEQ8
K_DEQ16 = 6           # CRMODE_DEQSCALE_DEQ16 / VDEQ16
K_DEQS16 = 7          # CRMODE_DEQSCALE_DEQS16 / VDEQS16

_JIT = dict(cache=True, error_model="numpy")
_INLINE = dict(inline="always", cache=True, error_model="numpy")


# ---- the 64-bit deq word (§3.1) --------------------------------------------------------------------------------

@njit(**_INLINE)
def deq_word_scale(word, m_truncate):
    """M' as float32: bits 0..31, of which the hardware reads only 31..13 (a (1, 8, 10) float)."""
    bits = np.uint32(word & np.uint64(0xFFFFFFFF))
    if m_truncate:
        bits = np.uint32(bits & np.uint32(0xFFFFE000))
    return u32_as_f32(bits)


@njit(**_INLINE)
def deq_word_n(word):
    """The raw 4-bit N field (bits 32..35)."""
    return np.int32((word >> np.uint64(32)) & np.uint64(0xF))


@njit(**_INLINE)
def deq_word_offset(word, offset_signed):
    """The 9-bit offset (bits 37..45), two's complement unless ``offset_signed`` is false."""
    off = np.int32((word >> np.uint64(37)) & np.uint64(0x1FF))
    if offset_signed and off >= 256:
        off = np.int32(off - 512)
    return off


@njit(**_INLINE)
def deq_word_bit(word, bit):
    return ((word >> np.uint64(bit)) & np.uint64(1)) != np.uint64(0)


@njit(**_INLINE)
def decode_column(word, sw, m, shift, off, c):
    """Store the scale, the MCB-path shift and the offset of one deq word at index c of the parameter arrays."""
    m[c] = deq_word_scale(word, sw.m_truncate)
    shift[c] = np.int32(deq_word_n(word) + sw.mcb_shift_plus1)
    off[c] = deq_word_offset(word, sw.offset_signed)


# ---- per-element arithmetic (§4) -------------------------------------------------------------------------------

@njit(**_INLINE)
def mcb_stage(x, shift, sw):
    """MCB = 1: int32 x >> shift (floor, or toward zero), narrowed to int16 (saturating, or keeping 16 bits)."""
    s = shift & np.int32(31)  # shift <= 17; the mask lets LLVM keep the shifts 32-bit
    t = x
    if sw.mcb_trunc and x < 0:
        t = np.int32(x + np.int32(np.int32(np.int32(1) << s) - np.int32(1)))
    t = np.int32(t >> s)
    if sw.mcb_wrap:
        return np.int32(np.int16(t))
    return np.int32(min(max(t, np.int32(-32768)), np.int32(32767)))


@njit(**_INLINE)
def deq_product(x, m, shift, mcb, relu, sw):
    """p = f32(t)·M' in the type of m, with the ReLU variants that act before the offset."""
    t = mcb_stage(x, shift, sw) if mcb else x
    p = np.float32(t) * m
    zero = m - m  # +0.0 in the type of m (m is finite: checked before the call)
    if relu:
        if sw.relu_mode == RELU_INPUT_SIGN:
            if x < 0:
                p = zero
        elif sw.relu_mode == RELU_SCALED:
            if p < zero:
                p = zero
    return p


@njit(**_INLINE)
def deq8_element(x, m, shift, mcb, off, signed, relu, sw):
    """DEQ8 / VDEQ8: int32 x -> the int8 (signed) or uint8 value, as int32."""
    p = deq_product(x, m, shift, mcb, relu, sw)
    if sw.clamp9:
        s = min(max(p, np.float32(-256.0)), np.float32(255.0))
        post = off
    else:
        s = p + np.float32(off)  # fp32 datapath: a float add (C++ float + int); exact datapath: exact
        post = np.int32(0)
    # r is integral and exact in float32 up to 2^24; beyond +-512 only its side matters for the final clamp (the
    # float32 narrowing lets LLVM round in float32 lanes)
    r = np.float32(round_to_integral(np.float64(s), sw.deq8_rmode))
    q = np.int32(np.int32(min(max(r, np.float32(-512.0)), np.float32(511.0))) + post)
    if signed:
        y = min(max(q, np.int32(-128)), np.int32(127))
    else:
        y = min(max(q, np.int32(0)), np.int32(255))
    if relu and sw.relu_mode == RELU_FINAL and y < 0:
        y = np.int32(0)
    return np.int32(y)


@njit(**_INLINE)
def deq16_element(x, m, shift, mcb, relu, sw):
    """DEQ16 / VDEQ16: int32 x -> half bits (uint16)."""
    p = deq_product(x, m, shift, mcb, relu, sw)
    if sw.deq16_sat:
        p = min(max(p, np.float32(-65504.0)), np.float32(65504.0))
    # an fp32 p passes the odd rounding unchanged; an exact (float64) p gets its single correct rounding to half
    h = f32_to_f16(f64_to_f32_odd(np.float64(p)), CAST_RINT, False)
    if relu and sw.relu_mode == RELU_FINAL and (h & np.uint16(0x8000)) != 0:
        h = np.uint16(0)
    return h


@njit(**_INLINE)
def deq16_default_element(x, m, shift, mcb, relu):
    """deq16_element with DEFAULT_SWITCHES and a float32 m, in fewer vector instructions.

    With the defaults p is float32 (so the odd rounding is the identity), finite (t and M' are finite; an
    overflowing product is +-Inf and the clamp makes it +-65504) and clamped to +-65504, so f32_to_f16(p, RINT,
    no saturation) never meets NaN, Inf or overflow and reduces to sign | _rne_mag; RELU_FINAL is not the default
    ReLU. Kept bit-identical to deq16_element by tests/npu_emu/ascendc/test_deq_copy.py."""
    p = deq_product(x, m, shift, mcb, relu, DEFAULT_SWITCHES)
    p = min(max(p, np.float32(-65504.0)), np.float32(65504.0))
    u = np.float32(p).view(np.uint32)
    return np.uint16(((u >> np.uint32(16)) & np.uint32(0x8000)) | _rne_mag(u & np.uint32(0x7FFFFFFF), 10, -14))


@njit(**_INLINE)
def deqs16_element(x, shift, relu):
    """DEQS16 / VDEQS16: int32 x -> int16 value (as int32): arithmetic shift by N + 1, saturate; M/MCB/offset
    unused."""
    y = np.int32(min(max(np.int32(x >> (shift & np.int32(31))), np.int32(-32768)), np.int32(32767)))
    if relu and y < 0:
        y = np.int32(0)
    return y


@njit(**_INLINE)
def relu_f32_bits(u):
    """max(x, 0) on float bits: negative numbers (not -0, not NaN) become +0."""
    if (u & np.uint32(0x80000000)) != 0 and np.uint32(0) < (u & np.uint32(0x7FFFFFFF)) <= np.uint32(0x7F800000):
        return np.uint32(0)
    return u


@njit(**_INLINE)
def relu_f16_bits(h):
    if (h & np.uint16(0x8000)) != 0 and np.uint16(0) < (h & np.uint16(0x7FFF)) <= np.uint16(0x7C00):
        return np.uint16(0)
    return h


# ---- the instruction: one DataCopy CO1 -> CO2 (docs/ops/data_copy_dequant.md §5, §7) ------------------------------

@njit(**_JIT)
def l0c_to_ub_kernel(dst8, dst16, dst32, src16, src32, words, burst_words, m, kind, relu, block_count, block_len,
                     src_stride, slot_elems, rows, dst_burst, dst_frac, dst_row, dst_half, sw):
    """Walk bursts b -> fractals/slots f -> rows r -> columns c as the copy engine does.

    src16/src32: the source region (element views starting at the src address; the unused one is empty); slot
    (b, f) starts at element ``(b*(block_len+src_stride)+f) * slot_elems``. dst8/16/32: views of the destination
    region; element (b, f, r, c) lands at byte ``b*dst_burst + f*dst_frac + r*dst_row + dst_half + c*D``.
    words: the deq word of each column, 16 per burst (``burst_words`` = 16) or one word repeated
    (``burst_words`` = 0). m: 16-entry scale scratch whose dtype selects the datapath (float32 or float64).
    """
    shift = np.empty(16, np.int32)
    off = np.empty(16, np.int32)
    mcb = np.empty(16, np.bool_)
    sign = np.empty(16, np.bool_)
    s16_shift = np.empty(16, np.int32)
    for b in range(block_count):
        if kind == K_DEQ8 or kind == K_DEQ16 or kind == K_DEQS16:
            for c in range(16):
                w = words[b * burst_words + c]
                decode_column(w, sw, m, shift, off, c)
                mcb[c] = deq_word_bit(w, 36)
                sign[c] = deq_word_bit(w, 46)
                s16_shift[c] = np.int32(deq_word_n(w) + 1)  # DEQS16 always shifts by N + 1
        for f in range(block_len):
            sbase = (b * (block_len + src_stride) + f) * slot_elems
            dbase = b * dst_burst + f * dst_frac + dst_half
            for r in range(rows):
                s0 = sbase + 16 * r
                d0 = dbase + r * dst_row  # byte offset of column 0
                if kind == K_DEQ8:
                    for c in range(16):
                        x = np.int32(src32[s0 + c])
                        dst8[d0 + c] = np.uint8(deq8_element(x, m[c], shift[c], mcb[c], off[c], sign[c], relu, sw))
                elif kind == K_DEQ16:
                    for c in range(16):
                        x = np.int32(src32[s0 + c])
                        dst16[(d0 >> 1) + c] = deq16_element(x, m[c], shift[c], mcb[c], relu, sw)
                elif kind == K_DEQS16:
                    for c in range(16):
                        x = np.int32(src32[s0 + c])
                        dst16[(d0 >> 1) + c] = np.uint16(deqs16_element(x, s16_shift[c], relu))
                elif kind == K_F32_TO_F16:
                    for c in range(16):
                        u = src32[s0 + c]
                        if relu:
                            u = relu_f32_bits(u)
                        dst16[(d0 >> 1) + c] = f32_to_f16(u32_as_f32(u), CAST_RINT, False)
                elif kind == K_RELU_S32:
                    for c in range(16):
                        v = np.int32(src32[s0 + c])
                        dst32[(d0 >> 2) + c] = np.uint32(v) if v > 0 else np.uint32(0)
                elif kind == K_RELU_F32:
                    for c in range(16):
                        dst32[(d0 >> 2) + c] = relu_f32_bits(src32[s0 + c])
                elif kind == K_RELU_F16:
                    for c in range(16):
                        dst16[(d0 >> 1) + c] = relu_f16_bits(src16[s0 + c])
                elif src32.size > 0:  # K_COPY, 32-bit elements
                    for c in range(16):   # (element loops: a slice assignment compiles numba's shape-error text)
                        dst32[(d0 >> 2) + c] = src32[s0 + c]
                else:                 # K_COPY, 16-bit elements
                    for c in range(16):
                        dst16[(d0 >> 1) + c] = src16[s0 + c]


DEFAULT_SWITCHES = DeqSwitches(mcb_shift_plus1=1, mcb_trunc=0, mcb_wrap=0, clamp9=1, relu_mode=RELU_INPUT_SIGN,
                               offset_signed=1, m_truncate=1, mul_exact=0, deq8_rmode=CAST_RINT, deq16_sat=1)
