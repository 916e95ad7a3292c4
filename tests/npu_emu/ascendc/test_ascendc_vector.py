"""Vector instructions: half / bf16 arithmetic against numpy float16 and ml_dtypes bfloat16 (both correctly rounded
single operations, docs/codecs.md §3.2), float32 against numpy, integer wrap-around, Max/Min signed zeros and NaN,
the Ascend C doc examples, and the GatherDequantInt8 vectors G1-G9 (docs/ops/gather_dequant_int8.md §6.1)."""

import ml_dtypes
import numpy as np
import pytest
from numba import njit

from npu_emu.ascendc import (
    DT_BF16,
    DT_FLOAT16,
    Abs,
    Add,
    Adds,
    And,
    Duplicate,
    Max,
    Maxs,
    Min,
    Mins,
    Mul,
    Muls,
    Not,
    Or,
    ReduceMax,
    ShiftLeft,
    ShiftRight,
    Sub,
)

# Wrappers with constant format tags, as a kernel calls the instructions (numba keeps only that format's loop).


@njit(cache=True)
def add_f16(d, a, b, n, ftz):
    Add(d, a, b, n, DT_FLOAT16, ftz)


@njit(cache=True)
def sub_f16(d, a, b, n):
    Sub(d, a, b, n, DT_FLOAT16)


@njit(cache=True)
def mul_f16(d, a, b, n):
    Mul(d, a, b, n, DT_FLOAT16)


@njit(cache=True)
def adds_muls_f16(d, q, negz, s, n, ftz):
    # GatherDequantInt8 compute stage (docs/ops/gather_dequant_int8.md §3.3 steps 5-6) after the uint8 -> half Cast
    Adds(d, q, negz, n, DT_FLOAT16, ftz)
    Muls(d, d, s, n, DT_FLOAT16, ftz)


@njit(cache=True)
def arith_bf16(d_add, d_mul, a, b, n):
    Add(d_add, a, b, n, DT_BF16)
    Mul(d_mul, a, b, n, DT_BF16)


@njit(cache=True)
def minmax_f16(dmax, dmin, a, b, n, nan_propagate):
    Max(dmax, a, b, n, DT_FLOAT16, nan_propagate)
    Min(dmin, a, b, n, DT_FLOAT16, nan_propagate)


@njit(cache=True)
def reduce_max_f16(d, s, n):
    ReduceMax(d, s, s, n, True, DT_FLOAT16)


@njit(cache=True)
def native_ops(d_add, d_sub, d_mul, a, b, n):
    # the native (float32 / integer) forms, called as a kernel does: numba prunes the half / bf16 loops only when
    # the defaults are inlined into njit code (a Python-level call compiles every format's loop)
    Add(d_add, a, b, n)
    Sub(d_sub, a, b, n)
    Mul(d_mul, a, b, n)


@njit(cache=True)
def native_scalar_ops(d_adds, d_muls, a, s_add, s_mul, n):
    Adds(d_adds, a, s_add, n)
    Muls(d_muls, a, s_mul, n)


@njit(cache=True)
def native_minmax(d_max, d_min, a, b, n, nan_propagate):
    Max(d_max, a, b, n, nan_propagate=nan_propagate)
    Min(d_min, a, b, n, nan_propagate=nan_propagate)


@njit(cache=True)
def native_minmax_scalar(d_max, d_min, a, s, n, nan_propagate):
    Maxs(d_max, a, s, n, nan_propagate=nan_propagate)
    Mins(d_min, a, s, n, nan_propagate=nan_propagate)


@njit(cache=True)
def minmax_scalar_f16(d_max, d_min, a, s, n):
    Maxs(d_max, a, s, n, DT_FLOAT16)
    Mins(d_min, a, s, n, DT_FLOAT16)


def f16(values):
    return np.asarray(values, np.float16).view(np.uint16)


def special_f16():
    """Zeros, subnormals, normals near the boundaries, max, Inf, NaN, and a random sample of every sign."""
    rng = np.random.default_rng(1)
    fixed = [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x7BFF, 0xFBFF, 0x7C00,
             0xFC00, 0x7E00, 0x3555, 0x5640, 0x57F8]
    return np.concatenate([np.array(fixed, np.uint16), rng.integers(0, 0x7C00, 3000, dtype=np.uint16),
                           rng.integers(0x8000, 0xFC00, 3000, dtype=np.uint16)])


def same_bits_or_both_nan(got_u16, want_f16):
    want = want_f16.view(np.uint16)
    nan = np.isnan(want_f16)
    return np.array_equal(got_u16[~nan], want[~nan]) and np.all(np.isnan(got_u16[nan].view(np.float16)))


@pytest.mark.parametrize("op,fn", [("add", None), ("sub", sub_f16), ("mul", mul_f16)])
def test_half_arithmetic_matches_numpy_float16(op, fn):
    a = special_f16()
    b = np.roll(a, 7)
    d = np.zeros_like(a)
    with np.errstate(all="ignore"):
        if op == "add":
            add_f16(d, a, b, len(a), False)
            want = a.view(np.float16) + b.view(np.float16)
        elif op == "sub":
            fn(d, a, b, len(a))
            want = a.view(np.float16) - b.view(np.float16)
        else:
            fn(d, a, b, len(a))
            want = a.view(np.float16) * b.view(np.float16)
    assert same_bits_or_both_nan(d, want)


def test_bf16_arithmetic_matches_ml_dtypes():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 0x10000, 5000, dtype=np.uint32).astype(np.uint16)
    b = rng.integers(0, 0x10000, 5000, dtype=np.uint32).astype(np.uint16)
    d_add = np.zeros_like(a)
    d_mul = np.zeros_like(a)
    arith_bf16(d_add, d_mul, a, b, len(a))
    with np.errstate(all="ignore"):
        wants = (a.view(ml_dtypes.bfloat16) + b.view(ml_dtypes.bfloat16),
                 a.view(ml_dtypes.bfloat16) * b.view(ml_dtypes.bfloat16))
    for got, want in zip((d_add, d_mul), wants):
        want_bits = want.view(np.uint16)
        nan = np.isnan(want.astype(np.float32))
        assert np.array_equal(got[~nan], want_bits[~nan])
        assert np.all(np.isnan(got[nan].view(ml_dtypes.bfloat16).astype(np.float32)))


# (q, zp bits, s bits, y with fp16_subnormal="keep", y with "flush"): docs/ops/gather_dequant_int8.md §6.1; the flush
# column equals keep where no operand or intermediate is subnormal (G1-G8), G9 flush is given by the op page
G_VECTORS = [
    ("G1", 0, 0x57F8, 0x211F, 0xBD1A, 0xBD1A),
    ("G2", 1, 0x57F8, 0x211F, 0xBD10, 0xBD10),
    ("G3", 128, 0x57F8, 0x211F, 0x1D1F, 0x1D1F),
    ("G4", 255, 0x57F8, 0x211F, 0x3D1A, 0x3D1A),
    ("G5", 100, 0x5640, 0x3800, 0x0000, 0x0000),
    ("G6", 100, 0x5640, 0xB800, 0x8000, 0x8000),
    ("G7", 200, 0x34CD, 0x211F, 0x3FFE, 0x3FFE),
    ("G8", 200, 0x399A, 0x3B33, 0x599A, 0x599A),
    ("G9", 10, 0x4901, 0x1419, 0x8083, 0x8000),
]


@pytest.mark.parametrize("name,q,zp,s,keep,flush", G_VECTORS)
def test_gather_dequant_vectors(name, q, zp, s, keep, flush):
    e = 32                                                     # one kernel row (E = 32)
    row = np.full(e, np.float16(q).view(np.uint16), np.uint16)  # uint8 -> half is exact for 0..255
    negz = np.uint16(zp ^ 0x8000)                              # the kernel negates zp exactly (§3.3 step 2)
    for ftz, want in ((False, keep), (True, flush)):
        d = np.zeros(e, np.uint16)
        adds_muls_f16(d, row, negz, np.uint16(s), e, ftz)
        assert np.all(d == want), (name, ftz, hex(d[0]))


def test_half_add_flush_subnormal_operands_and_results():
    a = np.array([0x0001, 0x8001, 0x0400, 0x0200], np.uint16)
    b = np.array([0x0000, 0x0000, 0x8001, 0x0000], np.uint16)
    d = np.zeros(4, np.uint16)
    add_f16(d, a, b, 4, True)
    # subnormal + 0 -> +0 / -0 (sign of the flushed operand, IEEE +0 + -0 = +0 ... -0 + +0 = +0)
    assert d.tolist() == [0x0000, 0x0000, 0x0400, 0x0000]
    add_f16(d, a, b, 4, False)
    assert d.tolist() == [0x0001, 0x8001, 0x03FF, 0x0200]


def test_float32_arithmetic_is_ieee_single():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(1000).astype(np.float32) * np.float32(1e3)
    b = rng.standard_normal(1000).astype(np.float32)
    d_add, d_sub, d_mul = (np.zeros_like(a) for _ in range(3))
    native_ops(d_add, d_sub, d_mul, a, b, 1000)
    for got, ref in ((d_add, np.add), (d_sub, np.subtract), (d_mul, np.multiply)):
        assert np.array_equal(got.view(np.uint32), ref(a, b).view(np.uint32))
    d_adds, d_muls = np.zeros_like(a), np.zeros_like(a)
    native_scalar_ops(d_adds, d_muls, a, np.float32(-2.5), 0.1, 1000)   # 0.1 becomes the float32 0.1f
    assert np.array_equal(d_muls.view(np.uint32), (a * np.float32(0.1)).view(np.uint32))
    assert np.array_equal(d_adds.view(np.uint32), (a + np.float32(-2.5)).view(np.uint32))


def test_integer_arithmetic_wraps():
    a = np.array([32767, -32768, 200, -3], np.int16)
    b = np.array([1, -1, 200, 7], np.int16)
    d_add, d_sub, d_mul = (np.zeros(4, np.int16) for _ in range(3))
    native_ops(d_add, d_sub, d_mul, a, b, 4)
    assert d_add.tolist() == [-32768, 32767, 400, 4]
    assert d_sub.tolist() == [32766, -32767, 0, -10]
    assert d_mul.tolist() == [32767, -32768, (200 * 200) - 65536, -21]
    d32, m32 = np.zeros(2, np.int32), np.zeros(2, np.int32)
    native_scalar_ops(d32, m32, np.array([2**31 - 1, 5], np.int32), 1, 3, 2)
    assert d32.tolist() == [-2**31, 6] and m32.tolist() == [2**31 - 3, 15]     # 3 (2^31 - 1) mod 2^32


def test_doc_examples_int16():
    src = np.arange(1, 513, dtype=np.int16)
    d, unused = np.zeros(512, np.int16), np.zeros(512, np.int16)
    native_scalar_ops(d, unused, src, 2, 1, 512)   # Adds.md: [1 2 3 ... 512] + 2 = [3 4 5 ... 514]
    assert np.array_equal(d, src + 2)
    native_minmax(d, unused, src, src[::-1].copy() + 1, 512, True)   # Max.md: [1..512] vs [513 ... 2] -> [513 512 ... 512]
    assert d[0] == 513 and d[-1] == 512 and np.array_equal(d, np.maximum(src, src[::-1] + 1))
    ShiftLeft(d, src, 2, 512)                 # ShiftLeft.md: [4 8 12 ... 2048]
    assert np.array_equal(d, src * 4)
    ShiftRight(d, src, 2, 512)                # ShiftRight.md: [0 0 0 1 1 1 1 ... 128]
    assert d[:7].tolist() == [0, 0, 0, 1, 1, 1, 1] and d[-1] == 128


def test_shift_semantics_signed_and_unsigned():
    # ShiftLeft.md / ShiftRight.md examples on 0b1010101010101010
    x = 0b1010101010101010
    s16 = np.array([x], np.uint16).view(np.int16)
    d = np.zeros(1, np.int16)
    ShiftLeft(d, s16, 1, 1)
    assert d.view(np.uint16)[0] == 0b1101010101010100
    ShiftLeft(d, s16, 3, 1)
    assert d.view(np.uint16)[0] == 0b1101010101010000
    ShiftRight(d, s16, 1, 1)
    assert d.view(np.uint16)[0] == 0b1101010101010101
    ShiftRight(d, s16, 3, 1)
    assert d.view(np.uint16)[0] == 0b1111010101010101
    u16 = np.array([x], np.uint16)
    du = np.zeros(1, np.uint16)
    ShiftLeft(du, u16, 1, 1)
    assert du[0] == 0b0101010101010100
    ShiftRight(du, u16, 1, 1)
    assert du[0] == 0b0101010101010101
    ShiftRight(du, u16, 16, 1)
    assert du[0] == 0


def test_logic_and_abs():
    a = np.array([0x00FF, 0xF0F0, 0x1234], np.uint16)
    b = np.array([0x0F0F, 0xFFFF, 0x0000], np.uint16)
    d = np.zeros(3, np.uint16)
    And(d, a, b, 3)
    assert d.tolist() == [0x000F, 0xF0F0, 0x0000]
    Or(d, a, b, 3)
    assert d.tolist() == [0x0FFF, 0xFFFF, 0x1234]
    Not(d, a, 3)
    assert d.tolist() == [0xFF00, 0x0F0F, 0xEDCB]
    i8 = np.array([-128, -5, 7], np.int8)
    d8 = np.zeros(3, np.int8)
    Abs(d8, i8, 3)
    assert d8.tolist() == [-128, 5, 7]                         # Reg Abs.md: -128 wraps
    f = np.array([-0.0, -np.inf, np.nan, -1.5], np.float32)
    df = np.zeros(4, np.float32)
    Abs(df, f, 4)
    assert df.view(np.uint32).tolist()[:2] == [0, 0x7F800000] and np.isnan(df[2]) and df[3] == 1.5
    h = f16([-0.0, -2.0])
    dh = np.zeros(2, np.uint16)
    Abs(dh, h, 2, DT_FLOAT16)
    assert dh.tolist() == [0x0000, 0x4000]


def test_max_min_signed_zero_and_nan_float32():
    a = np.array([-0.0, 0.0, np.nan, 1.0, np.nan, -np.inf], np.float32)
    b = np.array([0.0, -0.0, 1.0, np.nan, np.nan, 3.0], np.float32)
    dmax = np.zeros(6, np.float32)
    dmin = np.zeros(6, np.float32)
    native_minmax(dmax, dmin, a, b, 6, True)
    # Reg Max.md / Min.md: max(-0, +0) = +0, min(-0, +0) = -0; NaN propagates by default
    assert dmax.view(np.uint32)[:2].tolist() == [0, 0] and dmin.view(np.uint32)[:2].tolist() == [0x80000000] * 2
    assert np.all(np.isnan(dmax[2:5])) and np.all(np.isnan(dmin[2:5]))
    assert dmax[5] == 3.0 and dmin[5] == -np.inf
    native_minmax(dmax, dmin, a, b, 6, False)                # nan_in_max="ignore"
    assert dmax[2] == 1.0 and dmax[3] == 1.0 and np.isnan(dmax[4]) and dmin[2] == 1.0


def test_max_min_half_returns_operand_bits():
    a = f16([-0.0, 0.0, np.nan, 1.0, 65504.0])
    b = f16([0.0, -0.0, 1.0, np.nan, np.inf])
    dmax = np.zeros(5, np.uint16)
    dmin = np.zeros(5, np.uint16)
    minmax_f16(dmax, dmin, a, b, 5, True)
    assert dmax[:2].tolist() == [0x0000, 0x0000] and dmin[:2].tolist() == [0x8000, 0x8000]
    assert dmax[2] == a[2] and dmax[3] == b[3] and dmax[4] == 0x7C00 and dmin[4] == 0x7BFF
    minmax_f16(dmax, dmin, a, b, 5, False)
    assert dmax[2] == 0x3C00 and dmin[3] == 0x3C00


def test_mins_maxs_doc_example_int16_and_count():
    src = np.arange(1, 513, dtype=np.int16)
    dmax, dmin = np.zeros(512, np.int16), np.zeros(512, np.int16)
    native_minmax_scalar(dmax, dmin, src, np.int16(2), 512, True)   # Mins.md: [1 2 3 ... 512], 2 -> [1 2 2 ... 2]
    assert dmin.tolist() == [1] + [2] * 511
    assert dmax.tolist() == [2, 2] + list(range(3, 513))
    dmax[:], dmin[:] = -7, -7
    native_minmax_scalar(dmax, dmin, src, np.int16(2), 3, True)     # count: the first 3 elements only
    assert dmin[:4].tolist() == [1, 2, 2, -7] and dmax[:4].tolist() == [2, 2, 3, -7]


def test_mins_maxs_float32_take_the_max_min_rules():
    a = np.array([-0.0, 0.0, np.nan, 1.0, -3.0, np.inf], np.float32)
    dmax, dmin = np.zeros(6, np.float32), np.zeros(6, np.float32)
    native_minmax_scalar(dmax, dmin, a, np.float32(0.0), 6, True)
    # max(x, +0): +0 (for -0 and +0), NaN, 1, +0, Inf; min(x, +0): -0 (for -0), +0, NaN, +0, -3, +0
    assert dmax.view(np.uint32).tolist() == [0, 0, 0x7FC00000, 0x3F800000, 0, 0x7F800000]
    assert dmin.view(np.uint32).tolist() == [0x80000000, 0, 0x7FC00000, 0, 0xC0400000, 0]
    native_minmax_scalar(dmax, dmin, a, np.float32(-0.0), 6, True)   # max(-0, -0) = -0, max(+0, -0) = +0
    assert dmax.view(np.uint32)[:2].tolist() == [0x80000000, 0]
    assert dmin.view(np.uint32)[:2].tolist() == [0x80000000, 0x80000000]
    native_minmax_scalar(dmax, dmin, a, np.float32(2.5), 6, False)   # nan_in_max="ignore": the scalar
    assert dmax[2] == 2.5 and dmin[2] == 2.5 and dmax[3] == 2.5 and dmin[5] == 2.5


def test_mins_maxs_half_return_operand_bits():
    a = f16([-0.0, 0.0, np.nan, 1.0, -3.0, np.inf])
    dmax, dmin = np.zeros(6, np.uint16), np.zeros(6, np.uint16)
    minmax_scalar_f16(dmax, dmin, a, np.uint16(0x3800), 6)            # the scalar 0.5 as half bits
    assert dmax.tolist() == [0x3800, 0x3800, 0x7E00, 0x3C00, 0x3800, 0x7C00]
    assert dmin.tolist() == [0x8000, 0x0000, 0x7E00, 0x3800, 0xC200, 0x3800]


def test_duplicate_converts_the_scalar_once():
    d = np.zeros(10, np.float32)
    Duplicate(d, 0.1, 7)
    assert np.all(d[:7].view(np.uint32) == np.float32(0.1).view(np.uint32)) and not d[7:].any()
    h = np.zeros(4, np.uint16)
    Duplicate(h, 0x3C00, 4)
    assert np.all(h == 0x3C00)


def test_reduce_max_value_index_and_ties():
    x = np.array([1.0, 5.0, -2.0, 5.0, 3.0], np.float32)
    d = np.zeros(2, np.float32)
    ReduceMax(d, x, x, 5, True)
    assert d[0] == 5.0 and d.view(np.uint32)[1] == 1        # smallest index among equal maxima
    # ReduceMax.md: for half the index is stored as the bits of a half: index 232 reads as 1.38e-05
    h = f16(np.linspace(0, 1, 288))
    h[232] = 0x3C01                           # 1.0009765625, above every other element
    dh = np.zeros(2, np.uint16)
    reduce_max_f16(dh, h, 288)
    assert dh[0] == h[232] and dh[1] == 232
    assert abs(float(dh[1:2].view(np.float16)[0]) - 1.38e-05) < 1e-7
    y = np.array([-0.0, 0.0, np.nan, 7.0], np.float32)
    ReduceMax(d, y, y, 4, True)
    assert np.isnan(d[0]) and d.view(np.uint32)[1] == 2
    ReduceMax(d, y, y, 2, True)
    assert d.view(np.uint32)[0] == 0 and d.view(np.uint32)[1] == 1   # +0 above -0
