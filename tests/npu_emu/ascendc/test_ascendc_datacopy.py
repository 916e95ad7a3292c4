"""DataCopy / DataCopyPad: semantics of the Ascend C docs (GM与UB数据搬运/*.md), expected values derived by hand."""

import numpy as np
import pytest

from npu_emu.ascendc import (
    DataCopy,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    DataCopyParams,
    data_copy,
    data_copy_pad,
)
from npu_emu.errors import AclnnError

STALE = -7.0  # marks UB bytes the instruction must not touch


def test_count_form_copies_whole_32_byte_blocks():
    src = np.arange(40, dtype=np.float32)
    dst = np.full(40, STALE, np.float32)
    DataCopy(dst, src, 32)
    assert np.array_equal(dst[:32], src[:32]) and np.all(dst[32:] == STALE)


def test_count_form_rounds_down_to_32_bytes():
    # 13 floats = 52 bytes -> the device moves 32 bytes = 8 floats ("向下取整到32字节对齐")
    src = np.arange(16, dtype=np.float32)
    dst = np.full(16, STALE, np.float32)
    DataCopy(dst, src, 13)
    assert np.array_equal(dst[:8], src[:8]) and np.all(dst[8:] == STALE)
    # uint8: 70 bytes -> 64
    s8 = np.arange(80, dtype=np.uint8)
    d8 = np.zeros(80, np.uint8)
    DataCopy(d8, s8, 70)
    assert np.array_equal(d8[:64], s8[:64]) and not d8[64:].any()


def test_count_form_never_leaves_the_views():
    src = np.arange(16, dtype=np.float32)      # a GM tensor shorter than the requested copy
    dst = np.full(24, STALE, np.float32)
    DataCopy(dst, src, 24)
    assert np.array_equal(dst[:16], src) and np.all(dst[16:] == STALE)
    big = np.full(64, STALE, np.float32)
    DataCopy(big[:8], np.arange(64, dtype=np.float32), 64)
    assert np.array_equal(big[:8], np.arange(8)) and np.all(big[8:] == STALE)


def test_params_form_strides_in_blocks():
    # 3 bursts of 1 block (8 floats); src gap 1 block, dst gap 2 blocks:
    # burst b reads src[16b : 16b+8] and writes dst[24b : 24b+8]
    src = np.arange(48, dtype=np.float32)
    dst = np.full(72, STALE, np.float32)
    DataCopy(dst, src, 3, 1, 1, 2)
    want = np.full(72, STALE, np.float32)
    for b in range(3):
        want[24 * b:24 * b + 8] = src[16 * b:16 * b + 8]
    assert np.array_equal(dst, want)


def test_params_form_zero_is_a_noop_and_python_level_struct():
    src = np.arange(32, dtype=np.int16)
    dst = np.zeros(32, np.int16)
    DataCopy(dst, src, 0, 1, 0, 0)
    DataCopy(dst, src, 2, 0, 0, 0)
    assert not dst.any()
    data_copy(dst, src, DataCopyParams(blockCount=2, blockLen=1, srcStride=0, dstStride=0))
    assert np.array_equal(dst, src)
    with pytest.raises(AclnnError) as e:
        data_copy(dst, src.astype(np.int32), 16)
    assert e.value.status == 161002


def test_pad_gm_to_ub_right_padding_with_value():
    # SignBitsPack last tile: 14 floats (56 B), rightPadding 2 -> 64 B, padding value -1 (docs/ops/sign_bits.md §3.5)
    x = np.arange(1, 15, dtype=np.float32)
    ub = np.full(24, STALE, np.float32)
    DataCopyPad(ub, x, 1, 56, 0, 0, True, 0, 2, np.float32(-1.0))
    assert np.array_equal(ub[:14], x) and np.all(ub[14:16] == -1.0) and np.all(ub[16:] == STALE)


def test_pad_gm_to_ub_dummy_repeats_first_element():
    # GatherDequantInt8 index load: 30 int32 = 120 B, no padding -> 128 B burst; with leftPadding = rightPadding = 0
    # the dummy elements repeat the block's first element (DataCopyPad.md 参数解释)
    idx = np.arange(100, 130, dtype=np.int32)
    ub = np.full(40, -5, np.int32)
    DataCopyPad(ub, idx, 1, 120, 0, 0, False, 0, 0, 0)
    assert np.array_equal(ub[:30], idx) and np.all(ub[30:32] == 100) and np.all(ub[32:] == -5)


def test_pad_gm_to_ub_multi_block_strides_and_left_padding():
    # 2 bursts of 3 halves (6 B) with leftPadding 1, rightPadding 2 (uint16 bits); each burst occupies
    # ceil32(2 + 6 + 4) = 32 B = 16 elements, plus dstStride 1 block (16 elements); GM srcStride 4 B = 2 elements.
    src = np.arange(1, 20, dtype=np.uint16)
    ub = np.full(64, 0xEEEE, np.uint16)
    DataCopyPad(ub, src, 2, 6, 4, 1, True, 1, 2, np.uint16(0xAAAA))
    want = np.full(64, 0xEEEE, np.uint16)
    for b, s0 in ((0, 0), (1, 5)):             # burst 1 starts at (6 + 4) B = element 5
        d0 = 32 * b
        want[d0:d0 + 16] = 0xAAAA
        want[d0 + 1:d0 + 4] = src[s0:s0 + 3]
    assert np.array_equal(ub, want)


def test_pad_ub_to_gm_drops_dummy_bytes():
    # UB -> GM: 2 bursts of 47 bytes; UB bursts start every ceil32(47) + 32*srcStride(1) = 96 bytes; GM bursts
    # every 47 + dstStride(1) = 48 bytes (UBToGM非对齐数据搬运(DataCopyPad).md, 图2 parameters)
    ub = np.arange(192, dtype=np.uint8)
    gm = np.full(100, 0xEE, np.uint8)
    DataCopyPad(gm, ub, 2, 47, 1, 1)
    want = np.full(100, 0xEE, np.uint8)
    want[0:47] = ub[0:47]
    want[48:95] = ub[96:143]
    assert np.array_equal(gm, want)


def test_python_level_pad_structs_and_checks():
    x = np.arange(1, 15, dtype=np.float32)
    ub = np.full(16, STALE, np.float32)
    data_copy_pad(ub, x, DataCopyExtParams(1, 56, 0, 0, 0), DataCopyPadExtParams(True, 0, 2, -1.0))
    assert np.all(ub[14:] == -1.0)
    gm = np.zeros(14, np.float32)
    data_copy_pad(gm, ub, DataCopyExtParams(1, 56, 0, 0, 0))
    assert np.array_equal(gm, x)
    with pytest.raises(AclnnError):
        data_copy_pad(ub, x, DataCopyExtParams(1, 54, 0, 0, 0), DataCopyPadExtParams())   # not a multiple of 4
    with pytest.raises(AclnnError):
        data_copy_pad(ub, x, DataCopyExtParams(1, 56, 0, 0, 0), DataCopyPadExtParams(True, 0, 9, 0))  # 36 B pad
    with pytest.raises(AclnnError):
        DataCopyExtParams(blockCount=4096)


def test_python_datacopy_forms_match_the_instruction():
    # From Python, DataCopy takes a count, the unpacked DataCopyParams or the struct, validated before numba
    from numba import njit

    from npu_emu.ascendc import DataCopy

    @njit
    def in_kernel(dst, src):
        DataCopy(dst, src, 2, 1, 1, 0)  # the njit overload: two 32-byte bursts, a 1-block gap on the src side

    src = np.arange(128, dtype=np.uint8)
    ref = np.zeros(64, np.uint8)
    in_kernel(ref, src)
    assert ref[:32].tolist() == list(range(32)) and ref[32:].tolist() == list(range(64, 96))
    for call in (lambda d: DataCopy(d, src, 2, 1, 1, 0), lambda d: DataCopy(d, src, DataCopyParams(2, 1, 1, 0))):
        d = np.zeros(64, np.uint8)
        call(d)
        np.testing.assert_array_equal(d, ref)
    d = np.zeros(64, np.uint8)
    DataCopy(d, src, 40)  # 40 bytes round down to one 32-byte block, as the device does
    assert d[:32].tolist() == list(range(32)) and not d[32:].any()
    with pytest.raises(AclnnError) as e:
        DataCopy(d, src.astype(np.int32), 16)
    assert e.value.status == 161002
