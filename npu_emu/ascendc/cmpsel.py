"""Compare, CompareScalar (Compares) and Select: bit masks in UB.

Bit layout (both directions): the mask is a byte stream; element i is bit ``i % 8`` of byte ``i // 8``
(LSB-first, ``np.packbits(..., bitorder='little')``). Compare: "dst按照小端顺序排序成二进制结果";
docs/ops/sign_bits.md §1a. A selMask of uint16 / uint32 / uint64 words is the same little-endian stream read word by
word.

Sources: ``cannmirror/asc-devkit: docs/zh/api/SIMD-API/基础API/Memory矢量计算/比较与选择/Select.md``,
``Compare.md``, ``Compares.md``; ``impl/basic_api/dav_c220/kernel_operator_vec_cmp_impl.h`` (CompareCompute /
CompareScalarCompute: count is cut to whole 256-byte repeats), ``kernel_operator_vec_cmpsel_impl.h`` (VselImpl:
count mode, so Select takes any count).
"""

import numpy as np
from numba import njit

from npu_emu.ascendc._elem import (
    as_elem,
    bitmask,
    flush_f32,
    flush_u16,
    from_ubits,
    is_float,
    itemsize,
    pick,
    u16_to_f32,
    ubits,
)
from npu_emu.ascendc.constants import DT_AUTO, DT_BF16, DT_FLOAT16, EQ, GE, GT, LE, LT, REPEAT_BYTES, VSEL_CMPMASK_SPR
from npu_emu.device.specialize import literal_args

_JIT = dict(inline="always", cache=True, error_model="numpy")


@njit(**_JIT)
def _cmp(a, b, cmpMode):
    if cmpMode == LT:
        return a < b
    if cmpMode == GT:
        return a > b
    if cmpMode == EQ:
        return a == b
    if cmpMode == LE:
        return a <= b
    if cmpMode == GE:
        return a >= b
    return a != b


@njit(**_JIT)
def _cmp_elem(a, b, cmpMode, dtype, ftz):
    """IEEE comparison in the format ``dtype``: ordered for LT..GE and EQ (NaN gives 0), unordered NE (NaN gives
    1), -0 == +0. ``ftz`` compares subnormals as zeros of the same sign (docs/ops/sign_bits.md switch
    denormal_compare). The format test is spelled out so that numba prunes it where dtype is a constant."""
    if dtype == DT_FLOAT16 or dtype == DT_BF16:
        ha = np.uint16(a)
        hb = np.uint16(b)
        if ftz:
            ha = flush_u16(ha, dtype)
            hb = flush_u16(hb, dtype)
        return _cmp(u16_to_f32(ha, dtype), u16_to_f32(hb, dtype), cmpMode)
    if is_float(a):
        fa = np.float32(a)
        fb = np.float32(b)
        if ftz:
            fa = flush_f32(fa)
            fb = flush_f32(fb)
        return _cmp(fa, fb, cmpMode)
    return _cmp(a, b, cmpMode)


@njit(**_JIT)
def _full_repeats(count, size):
    per_repeat = REPEAT_BYTES // size
    return count // per_repeat * per_repeat


@literal_args(cache=True, error_model="numpy")
def _compare_loop(dst, src0, src1, cmpMode, n, dtype, ftz):
    """Mask bytes for the first n elements (n a multiple of 8); src1 is a tensor or a scalar. Constant cmpMode /
    dtype / ftz (the usual kernel call) compile one comparison; run-time ones compile them all."""
    for j in range(n // 8):
        byte = 0
        for k in range(8):
            i = 8 * j + k
            if _cmp_elem(src0[i], pick(src1, i), cmpMode, dtype, ftz):
                byte |= 1 << k
        dst[j] = byte


@njit(**_JIT)
def Compare(dst, src0, src1, cmpMode, count, dtype=DT_AUTO, ftz=False):
    """AscendC::Compare(dst, src0, src1, cmpMode, count): bit i of dst = (src0[i] cmpMode src1[i]).

    ``dst`` is a uint8 / int8 view. ``count * sizeof(T)`` must be a multiple of 256 bytes: the device computes only
    whole 256-byte repeats ("未对齐部分元素不参与计算，仅完整对齐块有效", ``Compare.md``; CompareCompute takes
    ``count * sizeof(T) / 256`` repeats), so the emulator leaves the mask bytes of a partial repeat untouched.
    cmpMode: LT, GT, EQ, LE, GE, NE (``npu_emu.ascendc.constants``).
    """
    n = min(_full_repeats(count, itemsize(src0)), len(src0), len(src1), 8 * len(dst))
    _compare_loop(dst, src0, src1, cmpMode, n - n % 8, dtype, ftz)


@njit(**_JIT)
def CompareScalar(dst, src0, src1Scalar, cmpMode, count, dtype=DT_AUTO, ftz=False):
    """AscendC::CompareScalar / Compares(dst, src0, src1Scalar, cmpMode, count): bit i of dst =
    (src0[i] cmpMode src1Scalar) (``Compares.md``; "CompareScalar" is the older name used by the SignBitsPack
    kernel: ``CompareScalar(y, x, 0, GE, n)``, docs/ops/sign_bits.md §3.5).

    Same whole-repeat rule as Compare (CompareScalarCompute). The scalar has the element type (half: uint16 bits).
    """
    n = min(_full_repeats(count, itemsize(src0)), len(src0), 8 * len(dst))
    _compare_loop(dst, src0, as_elem(src0, src1Scalar), cmpMode, n - n % 8, dtype, ftz)


Compares = CompareScalar


# _BITS[b, k] = bit k of the byte b: the loop reads a row per mask byte instead of shifting by a per-lane amount.
_BITS = ((np.arange(256)[:, None] >> np.arange(8)[None, :]) & 1).astype(np.uint8)


@njit(**_JIT)
def _mask_byte(selMask, jb):
    """Byte jb of the mask stream (little-endian words of any width)."""
    per_word = itemsize(selMask)
    w = np.uint64(selMask[jb // per_word])
    return np.int64((w >> np.uint64(8 * (jb % per_word))) & np.uint64(0xFF))


@njit(**_JIT)
def _select_byte(dst, byte, base, nbits, src0, src1):
    """Elements base .. base+nbits-1 (nbits <= 8) from the bits of one mask byte (1 -> src0, 0 -> src1).

    The choice is a bit blend on the element bits, stored unconditionally: written as ``src0[i] if bit else s``,
    LLVM turns the in-place call of the kernels (``Select(out, mask, out, -1)``) into a data-dependent branch
    (3x slower on random masks), and a per-lane shift of the mask byte does not vectorise."""
    row = _BITS[byte]
    for k in range(nbits):
        i = base + k
        a = ubits(src0[i])
        mk = bitmask(a, row[k])
        b = ubits(as_elem(dst, pick(src1, i)))
        dst[i] = from_ubits(dst, (a & mk) | (b & ~mk))


@njit(**_JIT)
def _select_stream(dst, selMask, src0, src1, nbytes, base):
    """Full mask bytes 0 .. nbytes-1 of the stream -> elements base .. base+8*nbytes-1."""
    for jb in range(nbytes):
        row = _BITS[_mask_byte(selMask, jb)]
        for k in range(8):
            i = base + 8 * jb + k
            a = ubits(src0[i])
            mk = bitmask(a, row[k])
            b = ubits(as_elem(dst, pick(src1, i)))
            dst[i] = from_ubits(dst, (a & mk) | (b & ~mk))


# The byte loops are separate (not inlined) functions: inlined into a kernel whose LocalTensors are views of the UB
# byte buffer (``ub[a:b].view(np.float32)``), LLVM does not vectorise them (measured 2.8x slower).


@njit(cache=True, error_model="numpy")
def _select_in_place(dst, selMask, src1, nbytes, base):
    # dst is also src0 (the kernels' call): one array, so LLVM needs no overlap check to vectorise
    _select_stream(dst, selMask, dst, src1, nbytes, base)


@njit(cache=True, error_model="numpy")
def _select_two(dst, selMask, src0, src1, nbytes, base):
    _select_stream(dst, selMask, src0, src1, nbytes, base)


@njit(**_JIT)
def _select_bytes(dst, selMask, src0, src1, nbytes, base):
    if dst.ctypes.data == src0.ctypes.data:
        _select_in_place(dst, selMask, src1, nbytes, base)
    else:
        _select_two(dst, selMask, src0, src1, nbytes, base)


@njit(**_JIT)
def Select(dst, selMask, src0, src1, selMode, count):
    """AscendC::Select(dst, selMask, src0, src1, selMode, count) in count mode (``Select.md``).

    dst[i] = src0[i] where the mask bit is 1, else src1[i] (a LocalTensor) or src1 (a scalar of the element type,
    VSEL_TENSOR_SCALAR_MODE). Which mask bit element i uses:

    * VSEL_CMPMASK_SPR (mode 0): only the first 256/sizeof(T) bits are used, again for every 256-byte repeat
      ("多轮迭代均使用相同的selMask有效数值"): bit ``i % (256 / sizeof(T))``;
    * VSEL_TENSOR_SCALAR_MODE (1) and VSEL_TENSOR_TENSOR_MODE (2): the mask is consumed continuously across
      repeats ("多轮迭代连续消耗selMask的不同部分"): bit i.

    The data is copied bit-exactly whatever its format, so Select needs no format tag. The loop walks mask words,
    then their bits (a per-element byte index is 6x slower, docs/contributing/numba_rules.md §3.1).
    """
    n = min(count, len(dst), len(src0))
    if selMode == VSEL_CMPMASK_SPR:
        per_repeat = REPEAT_BYTES // itemsize(dst)                     # elements (= mask bits) per repeat
        used = min(per_repeat, 8 * itemsize(selMask) * len(selMask))
        for r0 in range(0, n, per_repeat):
            m = min(used, n - r0)
            _select_bytes(dst, selMask, src0, src1, m // 8, r0)
            if m % 8:
                _select_byte(dst, _mask_byte(selMask, m // 8), r0 + m - m % 8, m % 8, src0, src1)
    else:
        n = min(n, 8 * itemsize(selMask) * len(selMask))
        _select_bytes(dst, selMask, src0, src1, n // 8, 0)
        if n % 8:
            _select_byte(dst, _mask_byte(selMask, n // 8), n - n % 8, n % 8, src0, src1)
