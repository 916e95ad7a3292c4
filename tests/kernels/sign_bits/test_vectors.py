"""Hand-derived vectors of docs/ops/sign_bits.md §6 and the golden comparisons (bit-exact on the integer views)."""

import numpy as np
import pytest

from npu_emu.kernels.sign_bits import golden as golden
from npu_emu.ops import npu_sign_bits_pack, npu_sign_bits_unpack

P = np.uint32(0x3F800000)   # +1.0f
M = np.uint32(0xBF800000)   # -1.0f


def bits(a):
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 1: np.uint8}[a.dtype.itemsize])


# --- unpack ---------------------------------------------------------------------------------------------------

def test_u1_doc_example():
    y = npu_sign_bits_unpack(np.array([159, 15], np.uint8), 2, 0)
    # 159 = 0b1001_1111 LSB first: 1,1,1,1,1,0,0,1 ; 15 = 0b0000_1111
    want = np.array([[P, P, P, P, P, M, M, P], [P, P, P, P, M, M, M, M]], np.uint32)
    assert y.dtype == np.float32 and y.shape == (2, 8)
    assert np.array_equal(bits(y), want)


def test_u2_size_one():
    y = npu_sign_bits_unpack(np.array([159, 15], np.uint8), 1, np.float32)
    assert y.shape == (1, 16)
    assert np.array_equal(bits(y)[0], np.array([P] * 5 + [M, M, P] + [P] * 4 + [M] * 4, np.uint32))


def test_u3_aclnn_sample_and_trace():
    y, tr = npu_sign_bits_unpack(np.array([128, 128], np.uint8), 2, 0, trace=True)
    assert np.array_equal(bits(y), np.array([[M] * 7 + [P]] * 2, np.uint32))
    assert tr.block_dim == 1 and tr.tiling_key == 0 and tr.workspace_size == 16777216
    assert list(tr.tiling_data.values()) == [64, 128, 1, 1, 3968, 64, 128, 0, 0]
    got = sorted((r.tensor, r.kind, r.start, r.end, r.core) for r in tr.gm_overrun)
    # self read bytes [2, 64); y write elements 16..511 = bytes [64, 2048)
    assert got == [("self", "read", 2, 64, 0), ("y", "write", 64, 2048, 0)]


def test_u4_f16_alternating():
    y = npu_sign_bits_unpack(np.array([0xAA, 0x55], np.uint8), 1, 1)
    assert y.dtype == np.float16
    want = np.array([0xBC00, 0x3C00] * 4 + [0x3C00, 0xBC00] * 4, np.uint16)
    assert np.array_equal(bits(y)[0], want)


def test_u5_f16_rows():
    y = npu_sign_bits_unpack(np.array([0x00, 0xFF], np.uint8), 2, np.float16)
    assert np.all(bits(y)[0] == 0xBC00) and np.all(bits(y)[1] == 0x3C00)


def test_u6_shape():
    y = npu_sign_bits_unpack(np.array([0], np.uint8), 8, 0)
    assert y.shape == (8, 1) and np.all(bits(y) == M)


def test_u7_empty():
    y = npu_sign_bits_unpack(np.zeros(0, np.uint8), 2, 1)
    assert y.shape == (2, 0) and y.dtype == np.float16


@pytest.mark.parametrize("n", [1, 63, 64, 65, 127, 3968, 3969, 8192, 190400, 190401, 400_001])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_unpack_matches_golden(n, dtype):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 256, n, dtype=np.uint8)
    y = npu_sign_bits_unpack(x, 1, dtype)
    assert np.array_equal(bits(y), bits(golden.sign_bits_unpack(x, 1, dtype)))


# --- pack -----------------------------------------------------------------------------------------------------

DOC = [5, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2]


def test_p1_p2_p3_doc_example():
    assert np.array_equal(npu_sign_bits_pack(np.array(DOC, np.float32), 2), [[159], [15]])
    assert np.array_equal(npu_sign_bits_pack(np.array(DOC, np.float32), 1), [[159, 15]])
    assert np.array_equal(npu_sign_bits_pack(np.array(DOC, np.float16), 2), [[159], [15]])


def test_p1_trace_overrun():
    _, tr = npu_sign_bits_pack(np.array(DOC, np.float32), 2, trace=True)
    assert tr.block_dim == 1
    assert [(r.tensor, r.kind, r.start, r.end) for r in tr.gm_overrun] == [("y", "write", 2, 8)]


def test_p4_specials():
    x = np.array([-0.0, 0.0, np.inf, -np.inf, 1, -1, 0.5, -0.5], np.float32)
    assert npu_sign_bits_pack(x, 1).tolist() == [[0x57]]


def test_p5_p6_p7_padding():
    assert npu_sign_bits_pack(np.array([1, -1, 1], np.float32), 1).tolist() == [[0x05]]
    assert npu_sign_bits_pack(np.ones(9, np.float32), 1).tolist() == [[0xFF, 0x01]]
    assert npu_sign_bits_pack(np.ones(9, np.float32), 2).tolist() == [[0xFF], [0x01]]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_p8_round_trip(dtype):
    rng = np.random.default_rng(8)
    x = rng.uniform(-3, 3, 1001).astype(dtype)
    y = npu_sign_bits_unpack(npu_sign_bits_pack(x, 1).ravel(), 1, 0)[0]
    want = np.concatenate([np.where(x >= 0, 1.0, -1.0), -np.ones(7)]).astype(np.float32)
    assert np.array_equal(bits(y), bits(want))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_p9_nan_bit_switch(dtype):
    x = np.array([np.nan, -np.nan, 1, 1, 1, 1, 1, 1], dtype)
    assert npu_sign_bits_pack(x, 1).tolist() == [[0xFC]]
    assert npu_sign_bits_pack(x, 1, nan_bit=1).tolist() == [[0xFF]]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_denormal_compare_switch(dtype):
    tiny = np.finfo(dtype).smallest_subnormal
    x = np.array([-tiny, tiny, -1, -1, -1, -1, -1, -1], dtype)
    assert npu_sign_bits_pack(x, 1).tolist() == [[0x02]]
    assert npu_sign_bits_pack(x, 1, denormal_compare="ftz").tolist() == [[0x03]]


def test_p10_ascend950_encoding():
    assert npu_sign_bits_pack(np.array(DOC, np.float32), 2, soc="ascend950pr").tolist() == [[6], [15]]


def test_950_pack_is_complement_of_bitreversed_910b():
    rng = np.random.default_rng(950)
    x = rng.uniform(-1, 1, 4096).astype(np.float32)
    b910 = npu_sign_bits_pack(x, 1).ravel()
    b950 = npu_sign_bits_pack(x, 1, soc="ascend950dt").ravel()
    rev = np.packbits(np.unpackbits(b910, bitorder="little"), bitorder="big")
    assert np.array_equal(b950, ~rev)


@pytest.mark.parametrize("soc", ["ascend950pr", "ascend910b2", "ascend910b4"])
@pytest.mark.parametrize("n", [1, 7, 8, 9, 127, 128, 129, 4608, 9215, 9216, 9217, 100_000, 1_000_003])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pack_matches_golden(soc, n, dtype):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    x[rng.integers(0, n, max(1, n // 50))] = -0.0
    size = 1
    got = npu_sign_bits_pack(x, size, soc=soc)
    assert np.array_equal(got, golden.sign_bits_pack(x, size, soc=soc))


@pytest.mark.parametrize("n", [16, 1000, 70_000])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_unpack_950_matches_golden(n, dtype):
    x = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    y = npu_sign_bits_unpack(x, 1, dtype, soc="ascend950pr")
    assert np.array_equal(bits(y), bits(golden.sign_bits_unpack(x, 1, dtype)))
