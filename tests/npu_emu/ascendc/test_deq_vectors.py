"""The vectors of docs/ops/data_copy_dequant.md §8.1-§8.3, with every switch alternative, through three
implementations: the numpy golden, the whole-matrix fast path (data_copy_dequant) and the instruction
(data_copy_enhanced)."""

import numpy as np
import pytest

from npu_emu.ascendc import deq
from npu_emu.ascendc.params import DataCopyParams
from npu_emu.kernels.data_copy_dequant import golden as golden
from npu_emu.kernels.data_copy_dequant.api import data_copy_dequant

# (id, mode, final register word, x values, switches, expected); DEQ16 expectations are half bit patterns.
CASES = [
    # §8.1 row 1: M = 1, sign -> int8 saturation; = the doc example "dst = src"
    ("r1", "DEQ8", 0x00004000_3F800000, [100, 127, 128, -129, -5], {}, [100, 127, 127, -128, -5]),
    # row 2: M = 0.5 uint8: 1.5 -> 2, 2.5 -> 2 (RNE), 3.5 -> 4, 0.5 -> 0, -2 -> 0, 300 -> 255
    ("r2", "DEQ8", 0x00000000_3F000000, [3, 5, 7, 1, -4, 600], {}, [2, 2, 4, 0, 0, 255]),
    # ... ties away: 2.5 -> 3 (the table) and 0.5 -> 1 (same rule)
    ("r2-half_away", "DEQ8", 0x00000000_3F000000, [3, 5, 7, 1, -4, 600], {"deq8_round": "half_away"},
     [2, 3, 4, 1, 0, 255]),
    # row 3: offset -128, ReLU on the input sign before the offset
    ("r3", "DEQ8", 0x0000F000_3F800000, [-50, 0, 50, 127, 200, 300], {}, [-128, -128, -78, -1, 72, 127]),
    ("r3-final", "DEQ8", 0x0000F000_3F800000, [-50, 0, 50, 127, 200, 300], {"relu_mode": "final"},
     [0, 0, 0, 0, 72, 127]),
    # M >= 0: "scaled" agrees with "input_sign" (docs/ops/data_copy_dequant.md §0)
    ("r3-scaled", "DEQ8", 0x0000F000_3F800000, [-50, 0, 50, 127, 200, 300], {"relu_mode": "scaled"},
     [-128, -128, -78, -1, 72, 127]),
    # row 4: uint8, offset -100 added after the 9-bit clamp: 300 -> 255 - 100 = 155
    ("r4", "DEQ8", 0x00003380_3F800000, [150, 90, 300], {}, [50, 0, 155]),
    ("r4-no-clamp9", "DEQ8", 0x00003380_3F800000, [150, 90, 300], {"clamp9": False}, [50, 0, 200]),
    # offset bits 0x19C read unsigned = +412: every value saturates at 255 (derived from §3.1 / §4)
    ("r4-unsigned-offset", "DEQ8", 0x00003380_3F800000, [150, 90, 300], {"offset_signed": False}, [255, 255, 255]),
    # row 5: rne(2.5) = 2, + 1 = 3; without the clamp stage rne(3.5) = 4
    ("r5", "DEQ8", 0x00004020_3F000000, [5], {}, [3]),
    ("r5-no-clamp9", "DEQ8", 0x00004020_3F000000, [5], {"clamp9": False}, [4]),
    # row 6: MCB, N = 3 -> shift 4 (floor), saturate to int16
    ("r6", "DEQ8", 0x00004013_3F800000, [1000, -1000, -1, 16, 1048576], {}, [62, -63, -1, 1, 127]),
    ("r6-shift-n", "DEQ8", 0x00004013_3F800000, [1000, -1000, -1, 16, 1048576], {"mcb_shift": "n"},
     [125, -125, -1, 2, 127]),
    ("r6-trunc", "DEQ8", 0x00004013_3F800000, [1000, -1000, -1, 16, 1048576], {"mcb_shift_rounding": "trunc"},
     [62, -62, 0, 1, 127]),
    # 1048576 >> 4 = 65536 keeps the low 16 bits = 0 (derived from §4 mcb_saturate="wrap")
    ("r6-wrap", "DEQ8", 0x00004013_3F800000, [1000, -1000, -1, 16, 1048576], {"mcb_saturate": "wrap"},
     [62, -63, -1, 1, 0]),
    # row 7: M = 0.25 -> 250.0 (0x5BD0), -0.75 (0xBA00), 262144.25 saturated to 65504 (0x7BFF) or Inf (0x7C00)
    ("r7", "DEQ16", 0x00000000_3E800000, [1000, -3, 1048577], {}, [0x5BD0, 0xBA00, 0x7BFF]),
    ("r7-inf", "DEQ16", 0x00000000_3E800000, [1000, -3, 1048577], {"deq16_overflow": "inf"},
     [0x5BD0, 0xBA00, 0x7C00]),
    # row 8: RNE ties 2049 -> 2048, 2051 -> 2052; 65519 rounds down to 65504; 70000 saturates (or is Inf)
    ("r8", "DEQ16", 0x00000000_3F800000, [2049, 2051, -2049, 65519, 70000], {},
     [0x6800, 0x6802, 0xE800, 0x7BFF, 0x7BFF]),
    ("r8-inf", "DEQ16", 0x00000000_3F800000, [2049, 2051, -2049, 65519, 70000], {"deq16_overflow": "inf"},
     [0x6800, 0x6802, 0xE800, 0x7BFF, 0x7C00]),
    # row 9: M' = 0x3FFFE000 = 1.9990234375 -> 1999.0; the full 0x3FFFFFFF -> 2000.0
    ("r9", "DEQ16", 0x00000000_3FFFFFFF, [1000], {}, [0x67CF]),
    ("r9-full-m", "DEQ16", 0x00000000_3FFFFFFF, [1000], {"m_truncate": False}, [0x67D0]),
    # rows 10/11: DEQS16, shift N + 1 = 8 (floor), saturate; mcb_shift does not apply; ReLU clamps at 0
    ("r10", "DEQS16", 0x00000007_00000000, [100000, -100000, 255, 256, -1, 16777216], {},
     [390, -391, 0, 1, -1, 32767]),
    ("r10-shift-n", "DEQS16", 0x00000007_00000000, [100000, -100000, 255, 256, -1, 16777216], {"mcb_shift": "n"},
     [390, -391, 0, 1, -1, 32767]),
    ("r11", "DEQS16", 0x00008007_00000000, [100000, -100000], {}, [390, 0]),
    # M = -1, int8, ReLU (word sign | relu | 0xBF800000): input_sign zeroes x < 0 -> [-5, 0]; scaled zeroes p < 0
    # -> [0, 5]; final zeroes y < 0 -> [0, 5] (derived from §4 for M < 0, where the ReLU variants differ)
    ("neg-m-input_sign", "DEQ8", 0x0000C000_BF800000, [5, -5], {}, [-5, 0]),
    ("neg-m-scaled", "DEQ8", 0x0000C000_BF800000, [5, -5], {"relu_mode": "scaled"}, [0, 5]),
    ("neg-m-final", "DEQ8", 0x0000C000_BF800000, [5, -5], {"relu_mode": "final"}, [0, 5]),
    # deq_mul: M' = 0x3B81E000 = 1039/2^18, x = 27375: exact p = 108.5 + 2^-18, whose fp32 product is the tie
    # 108.5 -> RNE 108; the exact product rounds to 109 (found by solving x*1039 = 2^17 + 1 mod 2^18)
    ("mul-f32-deq8", "DEQ8", 0x00004000_3B81E000, [27375], {}, [108]),
    ("mul-exact-deq8", "DEQ8", 0x00004000_3B81E000, [27375], {"deq_mul": "exact"}, [109]),
    # M' = 0x3A72C000 = 971/2^20, x = 7725554: exact p = 7154 + 115/2^19 (above the half tie 7154 between
    # 7152 = 0x6EFC and 7156 = 0x6EFD); the fp32 product is exactly 7154 -> RNE to the even 0x6EFC
    ("mul-f32-deq16", "DEQ16", 0x00000000_3A72C000, [7725554], {}, [0x6EFC]),
    ("mul-exact-deq16", "DEQ16", 0x00000000_3A72C000, [7725554], {"deq_mul": "exact"}, [0x6EFD]),
]

IDS = [c[0] for c in CASES]


def _as_bits(y, mode):
    return np.asarray(y).view(np.uint16).astype(np.int64) if mode == "DEQ16" else np.asarray(y).astype(np.int64)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_golden(case):
    _, mode, word, xs, switches, expected = case
    y = golden.data_copy_dequant(np.array([xs], np.int32), np.uint64(word), mode=mode, **switches)
    assert _as_bits(y, mode)[0].tolist() == expected


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_whole_matrix(case):
    _, mode, word, xs, switches, expected = case
    y = data_copy_dequant(np.array([xs], np.int32), word, mode=mode, **switches)
    assert y.dtype == {"DEQ8": np.int8 if (word >> 46) & 1 else np.uint8, "DEQ16": np.float16,
                       "DEQS16": np.int16}[mode]
    assert _as_bits(y, mode)[0].tolist() == expected


def tile_copy_row(xs, mode, word, **switches):
    """Put xs into row 0 of one 16x16 int32 fractal, run one DataCopy CO1 -> CO2 and read row 0 back."""
    xs = np.asarray(xs, np.int32)
    frac = np.zeros(256, np.int32)
    frac[:xs.size] = xs
    l0c = frac.view(np.uint8).copy()
    dst = {"DEQ8": np.int8 if (word >> 46) & 1 else np.uint8, "DEQ16": np.float16, "DEQS16": np.int16}[mode]
    ub = np.zeros(1024, np.uint8)
    e = deq.DataCopyEnhancedParams(deq.BLOCK_MODE_MATRIX, deq.DEQ8 if mode == "DEQ8" else deq.DEQ16, word, 2)
    deq.data_copy_enhanced(ub, 0, l0c, 0, np.int32, dst, DataCopyParams(1, 1, 0, 0), e, **switches)
    return ub[:256 * np.dtype(dst).itemsize].view(dst)[:xs.size]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_instruction(case):
    _, mode, word, xs, switches, expected = case
    assert _as_bits(tile_copy_row(xs, mode, word, **switches), mode).tolist() == expected


# §8.2: VDEQ8 table sign | fp32((c+1)/4); all 256 elements = 10 -> every row 2, 5, 8, 10, ... (2.5 -> 2, 7.5 -> 8,
# 22.5 -> 22: RNE); x = -10 gives the negated row. A second burst reads its table at A + 128.
VDEQ8_ROW = [2, 5, 8, 10, 12, 15, 18, 20, 22, 25, 28, 30, 32, 35, 38, 40]
VDEQ8_TABLE = deq.DeqVector.build((np.arange(16) + 1) * 0.25, sign=True)


@pytest.mark.parametrize("x", [10, -10])
def test_vdeq8_table_instruction(x):
    l0c = np.full(512, x, np.int32).view(np.uint8).copy()      # two fractals
    ub = np.zeros(2048, np.uint8)
    table_addr = 1024
    VDEQ8_TABLE.write(ub, table_addr)
    # the second burst's table: all entries M = 1 (its own 128 B at A + 128)
    deq.DeqVector.build(np.ones(16), sign=True).write(ub, table_addr + 128)
    e = deq.DataCopyEnhancedParams(deq.BLOCK_MODE_MATRIX, deq.VDEQ8, 0, 2)
    e.deqTensorAddr = table_addr
    deq.data_copy_enhanced(ub, 0, l0c, 0, np.int32, np.int8, DataCopyParams(2, 1, 0, 0), e)
    out = ub[:512].view(np.int8).reshape(2, 16, 16)
    sign = 1 if x > 0 else -1
    assert (out[0] == sign * np.array(VDEQ8_ROW)).all()
    assert (out[1] == x).all()


def test_vdeq8_table_whole_matrix_and_golden():
    acc = np.full((3, 16), 10, np.int32)
    acc[1] = -10
    table = VDEQ8_TABLE.words
    for impl in (data_copy_dequant, golden.data_copy_dequant):
        y = impl(acc, table, mode="DEQ8")
        assert y.dtype == np.int8
        assert y[0].tolist() == VDEQ8_ROW and y[1].tolist() == [-v for v in VDEQ8_ROW]


# §8.3: VDEQ16, x = 7, entry c = fp32((c+1)/2) -> 3.5 ... 56.0
VDEQ16_BITS = [0x4300, 0x4700, 0x4940, 0x4B00, 0x4C60, 0x4D40, 0x4E20, 0x4F00, 0x4FE0, 0x5060, 0x50D0, 0x5140,
               0x51B0, 0x5220, 0x5290, 0x5300]


def test_vdeq16_table():
    vec = deq.DeqVector.build((np.arange(16) + 1) * 0.5)
    assert [int(w) for w in vec.words] == [0x3F000000, 0x3F800000, 0x3FC00000, 0x40000000, 0x40200000, 0x40400000,
                                           0x40600000, 0x40800000, 0x40900000, 0x40A00000, 0x40B00000, 0x40C00000,
                                           0x40D00000, 0x40E00000, 0x40F00000, 0x41000000]
    l0c = np.full(256, 7, np.int32).view(np.uint8).copy()
    ub = np.zeros(1024, np.uint8)
    vec.write(ub, 512)
    e = deq.DataCopyEnhancedParams(deq.BLOCK_MODE_MATRIX, deq.VDEQ16)
    e.deqTensorAddr = 512
    deq.data_copy_enhanced(ub, 0, l0c, 0, np.int32, np.float16, DataCopyParams(1, 1, 0, 0), e)
    assert (ub[:512].view(np.uint16).reshape(16, 16) == np.array(VDEQ16_BITS, np.uint16)).all()
    acc = np.full((2, 16), 7, np.int32)
    for impl in (data_copy_dequant, golden.data_copy_dequant):
        assert impl(acc, vec.words, mode="DEQ16").view(np.uint16)[1].tolist() == VDEQ16_BITS


def test_vector_relu_comes_from_is_relu_not_entry_bit():
    # §3.1 bit 47: in VDEQ modes the entries' ReLU bit is ignored, DEQSCALE bit 15 (isRelu) decides
    words = deq.DeqValue.build_array(np.ones(16), relu=True, sign=True)
    acc = np.full((1, 16), -3, np.int32)
    assert (data_copy_dequant(acc, words) == -3).all()
    assert (data_copy_dequant(acc, words, is_relu=True) == 0).all()
    # scalar mode: is_relu sets bit 47 of the register word, an already-set bit 47 stays
    assert (data_copy_dequant(acc, int(words[0])) == 0).all()
    assert (data_copy_dequant(acc, int(words[0]) & ~(1 << 47), is_relu=True) == 0).all()
