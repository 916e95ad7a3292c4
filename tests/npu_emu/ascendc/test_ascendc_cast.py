"""Cast: every type pair the kernels in scope use, with every RoundMode where legal, saturation, and packing.

Oracles: numpy float16 / ml_dtypes (bfloat16, float8, float4_e2m1fn) / en_dtypes (hifloat8) for the round-to-nearest
conversions (docs/codecs.md §12), the examples of the Ascend C docs (Memory ``Cast.md``, ``precision_conversion.md``)
and hand-derived vectors for the directed modes. The wrappers pass constant format tags, as kernels do.
"""

import en_dtypes
import ml_dtypes
import numpy as np
import pytest
from numba import njit

from npu_emu.ascendc import (
    CAST_CEIL,
    CAST_FLAG_E8M0_ZERO,
    CAST_FLAG_FP4_HIGH_FIRST,
    CAST_FLAG_SAT,
    CAST_FLOOR,
    CAST_NONE,
    CAST_ODD,
    CAST_RINT,
    CAST_ROUND,
    CAST_TRUNC,
    DT_BF16,
    DT_FLOAT,
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
    DT_UINT8,
    DT_UINT32,
    Cast,
)

ALL_MODES = (CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC)


@njit(cache=True)
def f16_to_i32(d, s, r, n):
    Cast(d, s, r, n, DT_INT32, DT_FLOAT16)


@njit(cache=True)
def f32_to_f16(d, s, r, n, flags):
    Cast(d, s, r, n, DT_FLOAT16, DT_FLOAT, flags)


@njit(cache=True)
def f32_to_bf16(d, s, r, n):
    Cast(d, s, r, n, DT_BF16, DT_FLOAT)


@njit(cache=True)
def f16_to_f32(d, s, n):
    Cast(d, s, CAST_NONE, n, DT_FLOAT, DT_FLOAT16)


@njit(cache=True)
def bf16_to_f32(d, s, n):
    Cast(d, s, CAST_NONE, n, DT_FLOAT, DT_BF16)


@njit(cache=True)
def f16_bf16(d_bf, s_f16, d_f16, s_bf, r, n):
    Cast(d_bf, s_f16, r, n, DT_BF16, DT_FLOAT16)
    Cast(d_f16, s_bf, r, n, DT_FLOAT16, DT_BF16)


@njit(cache=True)
def f32_to_ints(d8, d16, d32, s, r, n):
    Cast(d8, s, r, n, DT_INT8, DT_FLOAT)
    Cast(d16, s, r, n, DT_INT16, DT_FLOAT)
    Cast(d32, s, r, n, DT_INT32, DT_FLOAT)


@njit(cache=True)
def f32_to_f32(d, s, r, n):
    Cast(d, s, r, n, DT_FLOAT, DT_FLOAT)


@njit(cache=True)
def i32_to_f32(d, s, r, n):
    Cast(d, s, r, n, DT_FLOAT, DT_INT32)


@njit(cache=True)
def i64_to_f32(d, s, r, n):
    Cast(d, s, r, n, DT_FLOAT, 9)     # DT_INT64


@njit(cache=True)
def u8_to_f16(d, s, n):
    Cast(d, s, CAST_NONE, n, DT_FLOAT16, DT_UINT8)


@njit(cache=True)
def i16_to_f16(d, s, r, n):
    Cast(d, s, r, n, DT_FLOAT16, DT_INT16)


@njit(cache=True)
def int_to_int(d16, s32, du8, s16, du32, n):
    Cast(d16, s32, CAST_NONE, n, DT_INT16, DT_INT32)
    Cast(du8, s16, CAST_NONE, n, DT_UINT8, DT_INT16)
    Cast(du32, s16, CAST_NONE, n, DT_UINT32, DT_INT16)


@njit(cache=True)
def f32_to_fp8(d43, d52, s, n, flags):
    Cast(d43, s, CAST_RINT, n, DT_FLOAT8_E4M3FN, DT_FLOAT, flags)
    Cast(d52, s, CAST_RINT, n, DT_FLOAT8_E5M2, DT_FLOAT, flags)


@njit(cache=True)
def code8_to_f32(d_hif8, d_e4m3, d_e5m2, d_e8m0, codes, n, flags):
    Cast(d_hif8, codes, CAST_NONE, n, DT_FLOAT, DT_HIFLOAT8)
    Cast(d_e4m3, codes, CAST_NONE, n, DT_FLOAT, DT_FLOAT8_E4M3FN)
    Cast(d_e5m2, codes, CAST_NONE, n, DT_FLOAT, DT_FLOAT8_E5M2)
    Cast(d_e8m0, codes, CAST_NONE, n, DT_FLOAT, DT_FLOAT8_E8M0, flags)


@njit(cache=True)
def to_hif8(d_from_f32, s_f32, d_from_f16, s_f16, r, n):
    Cast(d_from_f32, s_f32, r, n, DT_HIFLOAT8, DT_FLOAT)
    Cast(d_from_f16, s_f16, r, n, DT_HIFLOAT8, DT_FLOAT16)


@njit(cache=True)
def bf16_to_fp4(d, s, r, n, flags):
    Cast(d, s, r, n, DT_FLOAT4_E2M1, DT_BF16, flags)


@njit(cache=True)
def fp4_to_bf16(d, s, n, flags):
    Cast(d, s, CAST_NONE, n, DT_BF16, DT_FLOAT4_E2M1, flags)


@njit(cache=True)
def bf16_to_e8m0(d, s, n):
    Cast(d, s, CAST_NONE, n, DT_FLOAT8_E8M0, DT_BF16)


@njit(cache=True)
def int4_round_trip(packed, s_f16, back, r, n):
    Cast(packed, s_f16, r, n, DT_INT4, DT_FLOAT16)
    Cast(back, packed, CAST_NONE, n, DT_FLOAT16, DT_INT4)


def h(values):
    return np.asarray(values, np.float16).view(np.uint16)


@pytest.mark.parametrize("mode,want", [
    (CAST_CEIL, [2, 2, 2, 3, 3, 3]), (CAST_NONE, [1, 2, 2, 2, 2, 3]), (CAST_RINT, [1, 2, 2, 2, 2, 3]),
    (CAST_FLOOR, [1, 1, 1, 2, 2, 2]), (CAST_ROUND, [1, 2, 2, 2, 3, 3]), (CAST_TRUNC, [1, 1, 1, 2, 2, 2]),
])
def test_half_to_int32_doc_example(mode, want):
    # Memory Cast.md 调用示例: half [1.4, 1.5, 1.6, 2.4, 2.5, 2.6] -> int32 per mode
    x = h([1.4, 1.5, 1.6, 2.4, 2.5, 2.6])
    d = np.zeros(6, np.int32)
    f16_to_i32(d, x, mode, 6)
    assert d.tolist() == want
    neg = np.zeros(6, np.int32)
    f16_to_i32(neg, h(-np.array([1.4, 1.5, 1.6, 2.4, 2.5, 2.6])), mode, 6)
    mirror = {CAST_CEIL: CAST_FLOOR, CAST_FLOOR: CAST_CEIL}.get(mode, mode)   # -x rounds like x mirrored
    pos = np.zeros(6, np.int32)
    f16_to_i32(pos, x, mirror, 6)
    assert neg.tolist() == [-v for v in pos.tolist()]


def test_half_to_int32_specials():
    d = np.zeros(4, np.int32)
    f16_to_i32(d, h([np.nan, np.inf, -np.inf, 65504]), CAST_RINT, 4)
    assert d.tolist() == [0, 2**31 - 1, -2**31, 65504]       # NaN -> 0, +-Inf saturate (Reg Cast.md 表4)


def test_float_to_half_rint_matches_numpy():
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        np.array([65519.996, 65520.0, 2**-25, 1.5 * 2**-24, 2049, 2051, -0.0], np.float32)])
    d = np.zeros(len(x), np.uint16)
    f32_to_f16(d, x, CAST_RINT, len(x), 0)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    nan = np.isnan(want)
    assert np.array_equal(d[~nan], want.view(np.uint16)[~nan]) and np.all(np.isnan(d[nan].view(np.float16)))
    f32_to_f16(d, x, CAST_NONE, len(x), 0)                      # NONE = RINT when inexact
    assert np.array_equal(d[~nan], want.view(np.uint16)[~nan])


def test_float_to_half_directed_modes_and_saturation():
    # precision_conversion.md "float → half": 0.5 + 2^-12: RINT -> 0.5 (0x3800), ODD -> 0.5 + 2^-11 (0x3801)
    x = np.array([0.5 + 2**-12], np.float32)
    d = np.zeros(1, np.uint16)
    f32_to_f16(d, x, CAST_RINT, 1, 0)
    assert d[0] == 0x3800
    f32_to_f16(d, x, CAST_ODD, 1, 0)
    assert d[0] == 0x3801
    # 1 + 3*2^-12 lies between 0x3C00 and 0x3C01 (quantum 2^-10), 3/4 of the way up; and its negative
    y = np.array([1 + 3 * 2**-12, -(1 + 3 * 2**-12), 1 + 2**-11], np.float32)
    d = np.zeros(3, np.uint16)
    expect = {CAST_FLOOR: [0x3C00, 0xBC01, 0x3C00], CAST_CEIL: [0x3C01, 0xBC00, 0x3C01],
              CAST_TRUNC: [0x3C00, 0xBC00, 0x3C00], CAST_ROUND: [0x3C01, 0xBC01, 0x3C01],
              CAST_RINT: [0x3C01, 0xBC01, 0x3C00]}               # the tie 1 + 2^-11 goes to even under RINT
    for mode, want in expect.items():
        f32_to_f16(d, y, mode, 3, 0)
        assert d.tolist() == want, mode
    big = np.array([65520.0, np.inf, np.nan, -1e30], np.float32)
    d = np.zeros(4, np.uint16)
    f32_to_f16(d, big, CAST_RINT, 4, 0)
    assert d[0] == 0x7C00 and d[1] == 0x7C00 and np.isnan(d[2:3].view(np.float16))[0] and d[3] == 0xFC00
    f32_to_f16(d, big, CAST_RINT, 4, CAST_FLAG_SAT)           # saturating: +-65504, NaN -> 0
    assert d.tolist() == [0x7BFF, 0x7BFF, 0x0000, 0xFBFF]


def test_float_to_bf16():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    d = np.zeros(len(x), np.uint16)
    f32_to_bf16(d, x, CAST_RINT, len(x))
    want = x.astype(ml_dtypes.bfloat16)
    nan = np.isnan(x)
    assert np.array_equal(d[~nan], want.view(np.uint16)[~nan])
    # precision_conversion.md "float → bfloat16_t": 0.5 + 2^-9 + 2^-11, RINT -> 0.5 + 2^-8 (0x3F01)
    f32_to_bf16(d[:1], np.array([0.5 + 2**-9 + 2**-11], np.float32), CAST_RINT, 1)
    assert d[0] == 0x3F01
    f32_to_bf16(d[:1], np.array([0.5 + 2**-9 + 2**-11], np.float32), CAST_TRUNC, 1)
    assert d[0] == 0x3F00


def test_half_and_bf16_widen_exactly():
    codes = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    d = np.zeros(65536, np.float32)
    f16_to_f32(d, codes, 65536)
    want = codes.view(np.float16).astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(d.view(np.uint32)[~nan], want.view(np.uint32)[~nan]) and np.all(np.isnan(d[nan]))
    bf16_to_f32(d, codes, 65536)
    assert np.array_equal(d.view(np.uint32), codes.astype(np.uint32) << 16)


def test_half_bf16_single_rounding():
    rng = np.random.default_rng(8)
    a = rng.integers(0, 0x7C00, 5000, dtype=np.uint16)
    b = rng.integers(0, 0x7F80, 5000, dtype=np.uint16)
    d_bf = np.zeros(5000, np.uint16)
    d_f16 = np.zeros(5000, np.uint16)
    f16_bf16(d_bf, a, d_f16, b, CAST_RINT, 5000)
    assert np.array_equal(d_bf, a.view(np.float16).astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16))
    with np.errstate(all="ignore"):
        want = b.view(ml_dtypes.bfloat16).astype(np.float32).astype(np.float16)   # one rounding of an exact value
    assert np.array_equal(d_f16, want.view(np.uint16))


def test_float_to_integers_round_and_saturate():
    x = np.array([2**22 + 0.5, -1.5, 2.5, 127.5, -128.6, np.nan, np.inf, -3e9, 40000.0], np.float32)
    d8, d16, d32 = np.zeros(9, np.int8), np.zeros(9, np.int16), np.zeros(9, np.int32)
    f32_to_ints(d8, d16, d32, x, CAST_RINT, 9)
    # precision_conversion.md: float -> int16 2^22 + 0.5 RINT -> 2^15 - 1; float -> int32 2^22 + 0.5 RINT -> 2^22
    assert d16[0] == 32767 and d32[0] == 2**22
    assert d8.tolist() == [127, -2, 2, 127, -128, 0, 127, -128, 127]
    assert d16.tolist() == [32767, -2, 2, 128, -129, 0, 32767, -32768, 32767]
    assert d32.tolist() == [2**22, -2, 2, 128, -129, 0, 2**31 - 1, -2**31, 40000]
    f32_to_ints(d8, d16, d32, x, CAST_ROUND, 9)
    assert d32.tolist()[1:5] == [-2, 3, 128, -129]
    f32_to_ints(d8, d16, d32, x, CAST_TRUNC, 9)
    assert d32.tolist()[1:5] == [-1, 2, 127, -128]


def test_float_to_float_rounds_to_integral():
    x = np.array([0.5, 1.5, -2.5, 2.7, np.nan, -np.inf, 3e38, -0.2], np.float32)
    d = np.zeros(8, np.float32)
    f32_to_f32(d, x, CAST_RINT, 8)                 # precision_conversion.md "float → float": 0.5 RINT -> 0.0
    assert d[0] == 0.0 and d[1] == 2.0 and d[2] == -2.0 and d[3] == 3.0 and np.isnan(d[4]) and d[5] == -np.inf
    assert d[6] == np.float32(3e38) and d.view(np.uint32)[7] == 0x80000000   # -0.2 -> -0.0
    f32_to_f32(d, x, CAST_ROUND, 8)
    assert d[:4].tolist() == [1.0, 2.0, -3.0, 3.0]
    f32_to_f32(d, x, CAST_FLOOR, 8)
    assert d[:4].tolist() == [0.0, 1.0, -3.0, 2.0] and d[7] == -1.0


def test_int_to_float_modes():
    # precision_conversion.md "int32_t → float": 2^25 + 3 RINT -> 2^25 + 4 (quantum 4, 3 is above the half)
    v = np.array([2**25 + 3, -(2**25 + 3), 2**25 + 2, 2**31 - 1, 7], np.int32)
    d = np.zeros(5, np.float32)
    expect = {CAST_RINT: [2**25 + 4, -(2**25 + 4), 2**25, 2**31, 7], CAST_FLOOR: [2**25, -(2**25 + 4), 2**25, 2**31 - 128, 7],
              CAST_CEIL: [2**25 + 4, -2**25, 2**25 + 4, 2**31, 7], CAST_TRUNC: [2**25, -2**25, 2**25, 2**31 - 128, 7],
              CAST_ROUND: [2**25 + 4, -(2**25 + 4), 2**25 + 4, 2**31, 7]}
    for mode, want in expect.items():
        i32_to_f32(d, v, mode, 5)
        assert d.tolist() == want, mode
    # "int64_t → float": 2^35 + 2^12 + 2^11 RINT -> 2^35 + 2^13 (a tie between 2^35 + 2^12 and 2^35 + 2^13, to even)
    d1 = np.zeros(2, np.float32)
    i64_to_f32(d1, np.array([2**35 + 2**12 + 2**11, -(2**62 + 1)], np.int64), CAST_RINT, 2)
    assert d1[0] == 2**35 + 2**13 and d1[1] == -(2.0 ** 62)


def test_small_ints_to_half():
    u8 = np.arange(256, dtype=np.uint8)
    d = np.zeros(256, np.uint16)
    u8_to_f16(d, u8, 256)                          # GatherDequantInt8 Cast(calc, rowU8, CAST_NONE, E): exact
    assert np.array_equal(d, u8.astype(np.float16).view(np.uint16))
    # precision_conversion.md "int16_t → half": 2^12 + 2: RINT/FLOOR/TRUNC -> 2^12, CEIL/ROUND -> 2^12 + 4
    x = np.array([2**12 + 2, -(2**12 + 2)], np.int16)
    d = np.zeros(2, np.uint16)
    for mode, want in ((CAST_RINT, 4096), (CAST_FLOOR, 4096), (CAST_TRUNC, 4096), (CAST_CEIL, 4100), (CAST_ROUND, 4100)):
        i16_to_f16(d, x, mode, 2)
        assert float(d[:1].view(np.float16)[0]) == want, mode
    i16_to_f16(d, x, CAST_FLOOR, 2)
    assert float(d[1:].view(np.float16)[0]) == -4100


def test_int_to_int_saturates():
    d16, du8, du32 = np.zeros(3, np.int16), np.zeros(3, np.uint8), np.zeros(3, np.uint32)
    int_to_int(d16, np.array([2**31 - 1, -2**31, -5], np.int32), du8, np.array([32767, -1, 200], np.int16), du32, 3)
    assert d16.tolist() == [32767, -32768, -5]      # precision_conversion.md: int32 2^31-1 -> int16 2^15-1
    assert du8.tolist() == [255, 0, 200]            # int16 -> uint8: 2^15-1 -> 2^8-1; negative -> 0
    assert du32.tolist() == [32767, 0, 200]         # int16 -> uint32: negative -> 0


def fp8_inputs():
    rng = np.random.default_rng(9)
    return np.concatenate([rng.standard_normal(4000).astype(np.float32) * np.float32(200),
                           np.array([0.0, -0.0, 448, 464, 465, 57344, 61440, -1e6, 2**-10, np.inf, -np.inf, np.nan],
                                    np.float32)])


def test_float_to_fp8_saturating_and_not():
    x = fp8_inputs()
    n = len(x)
    d43, d52 = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    f32_to_fp8(d43, d52, x, n, 0)                  # Inf/NaN mode = ml_dtypes astype
    for d, t in ((d43, ml_dtypes.float8_e4m3fn), (d52, ml_dtypes.float8_e5m2)):
        want = x.astype(t)
        nan = np.isnan(want.astype(np.float32))
        assert np.array_equal(d[~nan], want.view(np.uint8)[~nan]) and np.all(np.isnan(d[nan].view(t).astype(np.float32)))
    f32_to_fp8(d43, d52, x, n, CAST_FLAG_SAT)      # MX kernels: RINT + SAT, NaN -> +0 (docs/ops/mx_quant.md §3.5)
    clean = np.where(np.isnan(x), np.float32(0), x)
    for d, t, m in ((d43, ml_dtypes.float8_e4m3fn, 448.0), (d52, ml_dtypes.float8_e5m2, 57344.0)):
        assert np.array_equal(d, np.clip(clean, -m, m).astype(t).view(np.uint8))


def test_8bit_codes_decode_exactly():
    codes = np.arange(256, dtype=np.uint8)
    dh, d43, d52, de = (np.zeros(256, np.float32) for _ in range(4))
    code8_to_f32(dh, d43, d52, de, codes, 256, 0)
    for d, want in ((dh, codes.view(en_dtypes.hifloat8).astype(np.float32)),
                    (d43, codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)),
                    (d52, codes.view(ml_dtypes.float8_e5m2).astype(np.float32)),
                    (de, codes.view(ml_dtypes.float8_e8m0fnu).astype(np.float32))):
        nan = np.isnan(want)
        assert np.array_equal(d.view(np.uint32)[~nan], want.view(np.uint32)[~nan]) and np.all(np.isnan(d[nan]))
    assert de.view(np.uint32)[0] == 0x00400000      # E8M0 0x00 = 2^-127 (default e8m0_zero="pow2")
    code8_to_f32(dh, d43, d52, de, codes, 256, CAST_FLAG_E8M0_ZERO)
    assert de[0] == 0.0 and de[127] == 1.0


def test_to_hif8_round_matches_en_dtypes():
    rng = np.random.default_rng(10)
    x = np.concatenate([(rng.standard_normal(4000) * np.exp(rng.uniform(-20, 12, 4000))).astype(np.float32),
                        np.array([1.75, 40960.0, 1e9, -0.0, 2**-23, np.inf, np.nan], np.float32)])
    xh = rng.integers(0, 0x10000, 4000, dtype=np.uint32).astype(np.uint16)
    n = len(x)
    d32, d16 = np.zeros(n, np.uint8), np.zeros(4000, np.uint8)
    to_hif8(d32, x, d16[:0], xh[:0], CAST_ROUND, n)
    assert np.array_equal(d32, x.astype(en_dtypes.hifloat8).view(np.uint8))
    to_hif8(d32[:0], x[:0], d16, xh, CAST_ROUND, 4000)
    assert np.array_equal(d16, xh.view(np.float16).astype(en_dtypes.hifloat8).view(np.uint8))
    to_hif8(d32, x, d16[:0], xh[:0], CAST_NONE, n)   # CAST_NONE on HiF8 = ROUND (the aclnnCast mode)
    assert np.array_equal(d32, x.astype(en_dtypes.hifloat8).view(np.uint8))


def test_bf16_to_fp4_packing():
    x = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0, -0.2, -6.0, 100.0, -0.75, 0.25], np.float32)
    b = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    codes = x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF     # RNE, saturating (docs/codecs.md §12)
    d = np.full(7, 0xAA, np.uint8)
    bf16_to_fp4(d, b, CAST_RINT, 13, 0)
    want = np.array([codes[i] | (codes[i + 1] << 4) for i in range(0, 12, 2)] + [0xA0 | codes[12]], np.uint8)
    assert np.array_equal(d, want)                   # element 2i low nibble; odd count keeps the other nibble
    d2 = np.full(7, 0xAA, np.uint8)
    bf16_to_fp4(d2, b, CAST_RINT, 13, CAST_FLAG_FP4_HIGH_FIRST)
    assert np.array_equal(d2[:6], ((want[:6] & 0xF) << 4) | (want[:6] >> 4)) and d2[6] == ((codes[12] << 4) | 0xA)
    back = np.zeros(13, np.uint16)
    fp4_to_bf16(back, d, 13, 0)
    assert np.array_equal(back, codes.view(ml_dtypes.float4_e2m1fn).astype(ml_dtypes.bfloat16).view(np.uint16))
    # FLOOR acts on the signed value: -0.2 -> -0.5 (docs/ops/mx_quant.md §4.5)
    bf16_to_fp4(d, b, CAST_FLOOR, 13, 0)
    assert (d[4] & 0xF) == 0x9


def test_bf16_to_e8m0_truncates_the_exponent():
    x = np.array([1.0, 1.5, 3.0, 0.0, -4.0, np.inf, np.nan, 2**-130], np.float32)
    d = np.zeros(8, np.uint8)
    bf16_to_e8m0(d, x.astype(ml_dtypes.bfloat16).view(np.uint16), 8)
    assert d.tolist() == [0x7F, 0x7F, 0x80, 0x00, 0x81, 0xFE, 0xFF, 0x00]   # docs/codecs.md §6.2 hardware row


def test_int4_pack_round_trip():
    x = h([0.0, 1.5, -1.5, 7.4, 9.0, -8.6, -100.0, 2.5, 3.0])
    packed = np.zeros(5, np.uint8)
    back = np.zeros(9, np.uint16)
    int4_round_trip(packed, x, back, CAST_RINT, 9)
    assert [float(v) for v in back.view(np.float16)] == [0, 2, -2, 7, 7, -8, -8, 2, 3]
    assert packed[0] == (0x2 << 4 | 0x0) and packed[1] == (0x7 << 4 | 0xE)   # even element in the low nibble
