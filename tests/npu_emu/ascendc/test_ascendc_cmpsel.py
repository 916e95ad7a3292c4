"""Select / Compare / CompareScalar: the Ascend C doc examples, the SignBits vectors of docs/ops/sign_bits.md §6, the
bit order (LSB first), partial mask bytes and words, the whole-repeat rule of Compare, NaN / -0 / Inf / subnormals."""

import json
import pathlib

import numpy as np
import pytest
from numba import njit

from npu_emu.ascendc import (
    DT_FLOAT16,
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    VSEL_CMPMASK_SPR,
    VSEL_TENSOR_SCALAR_MODE,
    VSEL_TENSOR_TENSOR_MODE,
    Compare,
    CompareScalar,
    DataCopyPad,
    Duplicate,
    Select,
)

DOC = json.loads((pathlib.Path(__file__).parent / "select_doc_examples.json").read_text())["examples"]


@njit(cache=True)
def cmps_f16(dst, x, scalar, mode, n, ftz):
    CompareScalar(dst, x, scalar, mode, n, DT_FLOAT16, ftz)


@njit(cache=True)
def unpack_tile_f32(out, bits, n_out):
    # SignBitsUnpack f32 compute stage (docs/ops/sign_bits.md §2.6): Duplicate(+1) then Select mode 1 with scalar -1
    Duplicate(out, np.float32(1.0), n_out)
    Select(out, bits, out, np.float32(-1.0), VSEL_TENSOR_SCALAR_MODE, n_out)


@njit(cache=True)
def unpack_tile_f16(out, bits, n_out):
    # f16 path: Duplicate(1.0h), a no-op Select with +1.0h, then Select with -1.0h
    Duplicate(out, np.uint16(0x3C00), n_out)
    Select(out, bits, out, np.uint16(0x3C00), VSEL_TENSOR_SCALAR_MODE, n_out)
    Select(out, bits, out, np.uint16(0xBC00), VSEL_TENSOR_SCALAR_MODE, n_out)


@njit(cache=True)
def pack_last_tile_f32(y, x, ub, mask, copy_len, pad, calc_len):
    # SignBitsPack last tile (§3.5): DataCopyPad with isPad, rightPadding, value -1; compare; keep bytes
    DataCopyPad(ub, x, 1, copy_len * 4, 0, 0, True, 0, pad, np.float32(-1.0))
    CompareScalar(mask, ub, np.float32(0.0), GE, calc_len)
    for j in range(len(y)):
        y[j] = mask[j]


def doc_arrays(mode):
    e = DOC[mode]
    f = {k: np.array(v.split(), dtype=np.float32) for k, v in e.items() if k != "maskLocal"}
    return f, np.array(e["maskLocal"].split(), dtype=np.uint8)


@pytest.mark.parametrize("mode", [VSEL_CMPMASK_SPR, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE])
def test_select_doc_examples(mode):
    # Select.md 结果示例: 256 floats; mode 0 reuses the first 64 mask bits in every repeat (the mask there has
    # data in bytes 0-7 and 32-39: only bytes 0-7 matter); mode 1 selects against the scalar 0; mode 2 consumes
    # the 32 mask bytes continuously. The decimal strings are parsed the same way for inputs and outputs, so a
    # selected element equals its source bit for bit.
    f, mask = doc_arrays(str(mode))
    src1 = f["src1Local"] if mode != VSEL_TENSOR_SCALAR_MODE else np.float32(0)
    dst = np.full(256, np.nan, np.float32)
    Select(dst, mask, f["src0Local"], src1, mode, 256)
    assert np.array_equal(dst.view(np.uint32), f["dstLocal"].view(np.uint32))


def test_select_partial_byte_and_lsb_first():
    src0 = np.arange(1, 13, dtype=np.float32)
    mask = np.array([0b10100101, 0b00001001], np.uint8)    # elements 0,2,5,7 then 8,11
    dst = np.full(16, 99.0, np.float32)
    Select(dst, mask, src0, np.float32(-1), VSEL_TENSOR_SCALAR_MODE, 12)
    assert dst.tolist() == [1, -1, 3, -1, -1, 6, -1, 8, 9, -1, -1, 12, 99, 99, 99, 99]


def test_select_mask_words_are_little_endian_streams():
    rng = np.random.default_rng(4)
    mask8 = rng.integers(0, 256, 16, dtype=np.uint8)
    src0 = np.arange(100, dtype=np.float32)
    src1 = -src0
    want = np.full(100, 7.0, np.float32)
    Select(want, mask8, src0, src1, VSEL_TENSOR_TENSOR_MODE, 100)
    for words in (mask8.view(np.uint16), mask8.view(np.uint32), mask8.view(np.uint64)):
        got = np.full(100, 7.0, np.float32)
        Select(got, words, src0, src1, VSEL_TENSOR_TENSOR_MODE, 100)
        assert np.array_equal(got, want)
    bits = np.unpackbits(mask8, bitorder="little")[:100].astype(bool)
    assert np.array_equal(want, np.where(bits, src0, src1))


def test_select_mode0_reuses_first_repeat_bits_for_half():
    # half: 128 elements per repeat, so bits 0..127 (16 mask bytes) serve every repeat
    rng = np.random.default_rng(5)
    mask = rng.integers(0, 256, 32, dtype=np.uint8)
    src0 = np.arange(300, dtype=np.uint16)
    src1 = np.full(300, 0xFFFF, np.uint16)
    dst = np.zeros(300, np.uint16)
    Select(dst, mask, src0, src1, VSEL_CMPMASK_SPR, 300)
    bit = np.unpackbits(mask[:16], bitorder="little").astype(bool)
    want = np.where(bit[np.arange(300) % 128], src0, src1)
    assert np.array_equal(dst, want)


@pytest.mark.parametrize("x,size_bytes,want", [
    ([159, 15], 2, [[1, 1, 1, 1, 1, -1, -1, 1], [1, 1, 1, 1, -1, -1, -1, -1]]),   # U1
    ([128, 128], 2, [[-1] * 7 + [1]] * 2),                                         # U3
])
def test_sign_bits_unpack_vectors_f32(x, size_bytes, want):
    bits = np.array(x, np.uint8)
    out = np.zeros(8 * len(x), np.float32)
    unpack_tile_f32(out, bits, 8 * len(x))
    assert np.array_equal(out.view(np.uint32), np.array(want, np.float32).reshape(-1).view(np.uint32))


def test_sign_bits_unpack_vectors_f16():
    # U4 [0xAA, 0x55] and U5 [0x00, 0xFF] (docs/ops/sign_bits.md §6)
    out = np.zeros(16, np.uint16)
    unpack_tile_f16(out, np.array([0xAA, 0x55], np.uint8), 16)
    assert out.tolist() == [0xBC00, 0x3C00] * 4 + [0x3C00, 0xBC00] * 4
    unpack_tile_f16(out, np.array([0x00, 0xFF], np.uint8), 16)
    assert out.tolist() == [0xBC00] * 8 + [0x3C00] * 8


def test_sign_bits_pack_vectors_through_the_last_tile():
    # P1/P2: x = [5,4,3,2,0,-1,-2,4, 3,2,1,0,-1,-2] -> [159, 15]; T5 tiling: lastCopy 14, pad 2, lastCalc 64
    x = np.array([5, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2], np.float32)
    ub = np.full(64, 5.0, np.float32)       # elements past the padding are stale UB data (compared, not kept)
    mask = np.zeros(8, np.uint8)
    y = np.zeros(2, np.uint8)
    pack_last_tile_f32(y, x, ub, mask, 14, 2, 64)
    assert y.tolist() == [159, 15]
    # P4: [-0, +0, +Inf, -Inf, 1, -1, 0.5, -0.5] -> 0x57 ; P5: [1, -1, 1] -> 0x05 (pad bits 0)
    for x, want in (([-0.0, 0.0, np.inf, -np.inf, 1, -1, 0.5, -0.5], 0x57), ([1, -1, 1], 0x05)):
        x = np.array(x, np.float32)
        pad = (8 - len(x) % 8) % 8
        pack_last_tile_f32(y[:1], x, ub, mask, len(x), pad, 64)
        assert y[0] == want


@pytest.mark.parametrize("mode,want", [(GT, 240), (GE, 241), (LE, 15), (EQ, 1), (NE, 254), (LT, 14)])
def test_compare_doc_examples(mode, want):
    # Compare.md: src0 [2 3 5 7 11 13 17 19 ...], src1 [2 4 6 8 10 12 14 16 ...]: GT 0b11110000, GE 0b11110001,
    # LE 0b00001111, EQ 1, NE 0b11111110 (LSB = element 0). Two doc slips: NE prints "126(0b11111110)" (the
    # binary, 254, is right) and the LT listing does not follow from its inputs; LT here is derived: 3<4, 5<6,
    # 7<8 -> 0b00001110.
    src0 = np.tile(np.array([2, 3, 5, 7, 11, 13, 17, 19], np.float32), 8)
    src1 = np.tile(np.array([2, 4, 6, 8, 10, 12, 14, 16], np.float32), 8)
    dst = np.zeros(8, np.uint8)
    Compare(dst, src0, src1, mode, 64)
    assert np.all(dst == want)


def test_compare_ieee_specials():
    a = np.array([np.nan, np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, 1e-45], np.float32)
    b = np.array([1.0, np.nan, 0.0, -0.0, np.inf, 3.0, np.nan, 0.0], np.float32)
    a = np.tile(a, 8)
    b = np.tile(b, 8)
    dst = np.zeros(8, np.uint8)
    expect = {LT: [0, 0, 0, 0, 0, 1, 0, 0], GT: [0, 0, 0, 0, 0, 0, 0, 1], EQ: [0, 0, 1, 1, 1, 0, 0, 0],
              LE: [0, 0, 1, 1, 1, 1, 0, 0], GE: [0, 0, 1, 1, 1, 0, 0, 1], NE: [1, 1, 0, 0, 0, 1, 1, 1]}
    for mode, bits in expect.items():
        Compare(dst, a, b, mode, 64)
        assert dst[0] == np.packbits(np.array(bits, np.uint8), bitorder="little")[0], mode
    # ftz: the subnormal 1e-45 compares equal to 0 (docs/ops/sign_bits.md switch denormal_compare="ftz")
    Compare(dst, a, b, GT, 64, ftz=True)
    assert dst[0] == 0


def test_compare_counts_whole_repeats_only():
    # float: 64 elements per 256-byte repeat; count 100 -> only the first 64 elements are compared
    x = np.ones(128, np.float32)
    dst = np.full(16, 0xEE, np.uint8)
    CompareScalar(dst, x, np.float32(0), GT, 100)
    assert dst[:8].tolist() == [255] * 8 and dst[8:].tolist() == [0xEE] * 8
    CompareScalar(dst, x, np.float32(0), GT, 128)
    assert np.all(dst == 255)
    CompareScalar(dst[:4], x, np.float32(0), LT, 64)           # a mask view shorter than the result: cut
    assert dst[:4].tolist() == [0] * 4 and dst[4:].tolist() == [255] * 12


def test_compare_scalar_half_with_specials_and_ftz():
    # half: 128 elements per repeat; bit = x >= 0 (SignBitsPack predicate): -0 -> 1, NaN -> 0, -subnormal -> 0
    vals = np.array([0x8000, 0x0000, 0x7C00, 0xFC00, 0x7E00, 0x8001, 0x0001, 0xBC00], np.uint16)
    x = np.tile(vals, 16)
    dst = np.zeros(16, np.uint8)
    cmps_f16(dst, x, np.uint16(0), GE, 128, False)
    assert np.all(dst == 0b01000111)
    cmps_f16(dst, x, np.uint16(0), GE, 128, True)              # -subnormal reads as -0 -> bit 1
    assert np.all(dst == 0b01100111)
