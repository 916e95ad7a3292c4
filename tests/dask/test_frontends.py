"""npu_emu.dask front ends: bit-identical to one npu_emu.ops call for every chunking they accept, rechunk (with a
warning) or reject the chunkings that would change the result, and name the chunk in an error.

Runs on dask's synchronous scheduler (the split and the reassembly are the same whatever the scheduler; the
distributed path is tests/dask/test_checkpoint.py's). Inputs use the op configurations `npu-emu compile`
precompiles (npu_emu/cli/op_configs.py), so a warm numba cache compiles nothing here.
"""

import re

import dask
import dask.array as da
import ml_dtypes
import numpy as np
import pytest

import npu_emu.ops as ops
from npu_emu import dask as nd
from npu_emu.errors import AclnnError


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="synchronous"):
        yield


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same(got, want):
    got = np.asarray(got)
    assert got.shape == np.asarray(want).shape
    assert got.dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(bits(got), bits(want))


def bf16(rng, shape, scale=4.0):
    x = rng.standard_normal(shape).astype(np.float32) * np.float32(scale)
    x.reshape(-1)[::97] *= np.float32(1e4)      # blocks with very different maxima: different scales per block
    return x.astype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------------------------------------------------------
# dynamic_mx_quant
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dst", [24, 296])
@pytest.mark.parametrize("axis,chunks", [(-1, (16, 128)), (-1, (40, (64, 128, 64, 32))), (-1, (-1, 320)),
                                         (0, (64, 96)), (0, ((128, 64, 56), 256))])
def test_dynamic_bit_identical(dst, axis, chunks):
    x = bf16(np.random.default_rng(1), (248, 288) if axis == -1 else (248, 256))
    want_y, want_s = ops.npu_dynamic_mx_quant(x, axis=axis, dst_type=dst)
    y, s = nd.dynamic_mx_quant(da.from_array(x, chunks=chunks), axis=axis, dst_type=dst)
    assert y.chunks[0] == da.from_array(x, chunks=chunks).chunks[0] or axis == 0
    got_y, got_s = dask.compute(y, s)
    same(got_y, want_y)
    same(got_s, want_s)


def test_dynamic_rechunks_odd_blocks_and_says_so():
    x = bf16(np.random.default_rng(2), (8, 320))
    want = ops.npu_dynamic_mx_quant(x, axis=-1, dst_type=24)
    # 96 = 3 blocks of 32: the chunk would end inside a scale pair
    with pytest.warns(nd.RechunkWarning, match=r"\(96, 96, 96, 32\).*rechunked to \(128, 128, 64\)"):
        y, s = nd.dynamic_mx_quant(da.from_array(x, chunks=(8, 96)), axis=-1, dst_type=24)
    assert y.chunks[1] == (128, 128, 64)
    for g, w in zip(dask.compute(y, s), want):
        same(g, w)
    with pytest.raises(AclnnError, match=r"161002.*chunks \(96, 96, 96, 32\) along axis 1"):
        nd.dynamic_mx_quant(da.from_array(x, chunks=(8, 96)), axis=-1, dst_type=24, rechunk=False)


def test_dynamic_fp4_axis0_needs_even_columns():
    x = bf16(np.random.default_rng(3), (64, 256))
    want = ops.npu_dynamic_mx_quant(x, axis=0, dst_type=296)
    with pytest.warns(nd.RechunkWarning, match="FP4"):
        y, s = nd.dynamic_mx_quant(da.from_array(x, chunks=(64, 33)), axis=0, dst_type=296)
    assert y.chunks[1] == (17,) * 7 + (9,)         # x columns rechunked to 34 (even): 17 packed bytes each
    for g, w in zip(dask.compute(y, s), want):
        same(g, w)


def test_dynamic_error_names_the_chunk():
    x = bf16(np.random.default_rng(4), (16, 128)).astype(np.float64)     # float64: the op rejects the dtype
    y, _ = nd.dynamic_mx_quant(da.from_array(x, chunks=(8, 64)), dst_type=24)
    with pytest.raises(AclnnError) as err:
        y.compute()
    # whichever chunk the scheduler ran first: its block index and its own index range
    found = re.search(r"161002.*dynamic_mx_quant: chunk \((\d), (\d)\) \(index range \[(\d+):(\d+), (\d+):(\d+)\]\): "
                      r"x dtype float64 is not supported", str(err.value))
    i, j, r0, r1, c0, c1 = map(int, found.groups())
    assert (r0, r1, c0, c1) == (8 * i, 8 * i + 8, 64 * j, 64 * j + 64) and err.value.status == 161002
    with pytest.raises(AclnnError, match="axis=2 is out of range"):
        nd.dynamic_mx_quant(da.zeros((4, 64), chunks=4), axis=2)


# ---------------------------------------------------------------------------------------------------------------
# grouped_dynamic_mx_quant
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dst", [24, 296])
@pytest.mark.parametrize("ends,row_chunks", [
    ([96, 256], (96, 160)),                 # a boundary off the 64-row grid: the scale rows are scattered
    ([64, 100, 100, 230, 256], (64, 36, 130, 26)),  # an empty group at a chunk boundary
    ([40, 140, 256], (140, 116)),           # two groups in one chunk
    ([128, 256], (128, 128)),
])
def test_grouped_bit_identical(dst, ends, row_chunks):
    x = bf16(np.random.default_rng(5), (256, 192))
    gi = np.array(ends, np.int32)
    want_y, want_s = ops.npu_grouped_dynamic_mx_quant(x, gi, dst_type=dst)
    y, s = nd.grouped_dynamic_mx_quant(da.from_array(x, chunks=(row_chunks, 64)), gi, dst_type=dst)
    assert y.chunks[0] == row_chunks
    got_y, got_s = dask.compute(y, s)
    same(got_y, want_y)
    same(got_s, want_s)


def test_grouped_moves_boundaries_to_group_ends():
    x = bf16(np.random.default_rng(6), (256, 64))
    gi = np.array([96, 200, 256], np.int32)
    want = ops.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24)
    with pytest.warns(nd.RechunkWarning, match=r"rechunked to \(96, 104, 56\)"):
        y, s = nd.grouped_dynamic_mx_quant(da.from_array(x, chunks=(64, 64)), gi, dst_type=24)
    for g, w in zip(dask.compute(y, s), want):
        same(g, w)
    with pytest.raises(AclnnError, match="do not fit the split rule"):
        nd.grouped_dynamic_mx_quant(da.from_array(x, chunks=(64, 64)), gi, dst_type=24, rechunk=False)
    with pytest.raises(AclnnError, match="last equal to x.shape"):
        nd.grouped_dynamic_mx_quant(da.from_array(x, chunks=(64, 64)), np.array([96, 250], np.int32))


# ---------------------------------------------------------------------------------------------------------------
# sign bits, gather, quant matmul, data_copy_dequant
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("chunks,size", [(37, 1), (100, 4), (500, 2)])
def test_sign_bits_unpack(chunks, size):
    x = np.random.default_rng(7).integers(0, 256, 500, dtype=np.uint8)
    same(nd.sign_bits_unpack(da.from_array(x, chunks=chunks), size, 0).compute(), ops.npu_sign_bits_unpack(x, size, 0))


@pytest.mark.parametrize("chunks,size", [(64, 1), ((800, 800, 397), 1), (400, 5)])
def test_sign_bits_pack(chunks, size):
    x = np.random.default_rng(8).standard_normal(1997).astype(np.float32)
    x[::13] = -0.0
    x = x[:1997 if size == 1 else 1993]
    same(nd.sign_bits_pack(da.from_array(x, chunks=chunks), size).compute(), ops.npu_sign_bits_pack(x, size))


def test_sign_bits_pack_rechunks_to_whole_bytes():
    x = np.random.default_rng(9).standard_normal(100).astype(np.float32)
    with pytest.warns(nd.RechunkWarning, match="whole bytes"):
        y = nd.sign_bits_pack(da.from_array(x, chunks=30), 1)
    same(y.compute(), ops.npu_sign_bits_pack(x, 1))
    with pytest.raises(AclnnError, match="multiple of size"):
        nd.sign_bits_pack(da.from_array(x, chunks=32), 3)


def _gather_inputs():
    rng = np.random.default_rng(10)
    table = rng.integers(0, 256, (64, 256), dtype=np.uint8)
    scale = (rng.random(64) * 0.01 + 1e-4).astype(np.float16)
    zp = (rng.random(64) * 255).astype(np.float16)
    idx = rng.integers(0, 64, (6, 10)).astype(np.int32)
    return table, idx, scale, zp


def test_gather_dequant_int8_per_token_chunks():
    table, idx, scale, zp = _gather_inputs()
    want = ops.gather_dequant_int8(table, idx, scale, zp)
    got = nd.gather_dequant_int8(table, da.from_array(idx, chunks=(4, 3)), scale, zp)
    # the table is one graph key shared by every chunk
    assert sum(1 for k in dict(got.dask) if isinstance(k, str) and k.startswith("ndarray-")) == 3
    same(got.compute(), want)


def test_gather_error_names_the_chunk():
    table, idx, scale, zp = _gather_inputs()
    idx[5, 9] = 64                                         # out of the table, in the last chunk
    got = nd.gather_dequant_int8(table, da.from_array(idx, chunks=(4, 5)), scale, zp)
    with pytest.raises(AclnnError, match=r"chunk \(1, 1\) \(index range \[4:6, 5:10\]\)"):
        got.compute()


def test_quant_matmul_int8_rows():
    rng = np.random.default_rng(11)
    m, k, n = 40, 64, 32
    x1 = rng.integers(-128, 128, (m, k), dtype=np.int16).astype(np.int8)
    x2 = rng.integers(-128, 128, (k, n), dtype=np.int16).astype(np.int8)
    s = rng.uniform(0.0005, 0.005, n).astype(np.float32)
    p = rng.uniform(0.5, 2.0, m).astype(np.float32)
    want = ops.npu_quant_matmul(x1, x2, s, pertoken_scale=p, output_dtype="bfloat16")
    got = nd.quant_matmul(da.from_array(x1, chunks=(16, 64)), x2, s, pertoken_scale=p, output_dtype="bfloat16")
    same(got.compute(), want)
    with pytest.warns(nd.RechunkWarning, match="K whole"):
        got = nd.quant_matmul(da.from_array(x1, chunks=(16, 32)), x2, s, pertoken_scale=p, output_dtype="bfloat16")
    same(got.compute(), want)


def test_quant_matmul_mxfp8_rows():
    rng = np.random.default_rng(12)
    m, k, n = 24, 128, 16
    x1 = rng.uniform(-40, 40, (m, k)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    x2t = rng.uniform(-40, 40, (n, k)).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)
    s1 = rng.integers(120, 130, (m, k // 64, 2)).astype(np.uint8)
    s2 = rng.integers(120, 130, (n, k // 64, 2)).astype(np.uint8)
    kw = dict(scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0", group_sizes=[1, 1, 32],
              output_dtype="bfloat16", soc="ascend950pr")
    want = ops.npu_quant_matmul(x1, x2t.T, s2, pertoken_scale=s1, **kw)
    got = nd.quant_matmul(da.from_array(x1, chunks=(8, k)), x2t.T, s2, pertoken_scale=s1, **kw)
    same(got.compute(), want)


@pytest.mark.parametrize("mode", ["DEQ16", "VDEQ16"])
def test_data_copy_dequant_rows(mode):
    rng = np.random.default_rng(13)
    acc = rng.integers(-(1 << 15), 1 << 15, (48, 64), dtype=np.int32)
    count = 64 if mode.startswith("V") else 1
    words = (rng.uniform(2.0 ** -8, 2.0 ** -6, count).astype(np.float32).view(np.uint32)
             & np.uint32(0xFFFFE000)).astype(np.uint64)
    deq = words if mode.startswith("V") else int(words[0])
    want = ops.data_copy_dequant(acc, deq, mode=mode)
    with pytest.warns(nd.RechunkWarning, match="last axis whole"):
        got = nd.data_copy_dequant(da.from_array(acc, chunks=(20, 32)), deq, mode=mode)
    same(got.compute(), want)
    with pytest.raises(AclnnError, match="161002"):
        nd.data_copy_dequant(da.from_array(acc, chunks=(20, 64)), deq, mode="NOPE")


def test_quant_matmul_int4_packed_columns():
    rng = np.random.default_rng(14)
    m, k, n = 24, 64, 32
    x1 = rng.integers(-128, 128, (m, k // 2), dtype=np.int16).astype(np.int8)      # two int4 per byte
    x2 = rng.integers(-128, 128, (k, n // 2), dtype=np.int16).astype(np.int8)
    s = rng.uniform(0.001, 0.01, n).astype(np.float32)
    kw = dict(x1_dtype="int4", x2_dtype="int4", output_dtype="float16")
    want = ops.npu_quant_matmul(x1, x2, s, **kw)
    got = nd.quant_matmul(da.from_array(x1, chunks=(8, k // 2)), x2, s, **kw)
    assert got.shape == (m, n)                      # n read through the int4 label of x2
    same(got.compute(), want)
    with pytest.raises(AclnnError, match=r"chunk \(\d, 0\) .*returned shape \(8, 32\), not \(8, 16\); pass n="):
        nd.quant_matmul(da.from_array(x1, chunks=(8, k // 2)), x2, s, n=16, **kw).compute()


def test_two_calls_in_one_graph_keep_their_keywords():
    # the same input through two configurations, computed together: the graphs must not share keys
    x = bf16(np.random.default_rng(15), (64, 256))
    xd = da.from_array(x, chunks=(32, 128))
    a = nd.dynamic_mx_quant(xd, dst_type=24)
    b = nd.dynamic_mx_quant(xd, dst_type=24, scale_alg=1)
    got = dask.compute(a, b)
    for g, w in zip(got[0] + got[1], ops.npu_dynamic_mx_quant(x, dst_type=24) +
                    ops.npu_dynamic_mx_quant(x, dst_type=24, scale_alg=1)):
        same(g, w)
    assert not np.array_equal(got[0][1], got[1][1])         # the two scale algorithms differ on this input


def test_building_the_graph_calls_no_op(monkeypatch):
    # dtype= / meta= are given: dask must not probe an op with empty inputs while the graph is built
    def refuse(name):
        raise AssertionError(f"{name} called while building the graph")

    from npu_emu.dask import chunking

    monkeypatch.setattr(chunking, "_ops", refuse)      # every op front end calls its ops through chunking._call
    x = da.from_array(bf16(np.random.default_rng(16), (128, 256)), chunks=(64, 128))
    y, s = nd.dynamic_mx_quant(x, dst_type=24)
    yg, sg = nd.grouped_dynamic_mx_quant(x, np.array([64, 128], np.int32), dst_type=24)
    u = nd.sign_bits_unpack(da.zeros(64, np.uint8, chunks=16), 2, 0)
    p = nd.sign_bits_pack(da.zeros(64, np.float32, chunks=16), 1)
    table, idx, scale, zp = _gather_inputs()
    g = nd.gather_dequant_int8(table, da.from_array(idx, chunks=3), scale, zp)
    assert (y.dtype, y.shape, s.shape) == (np.dtype(ml_dtypes.float8_e4m3fn), (128, 256), (128, 4, 2))
    assert (yg.shape, sg.shape, u.shape, p.shape, g.shape) == ((128, 256), (4, 256, 2), (2, 256), (1, 8),
                                                                (6, 10, 256))
    with pytest.raises(AssertionError, match="called while building"):
        y.compute()


def test_whole_call_keywords_are_refused():
    x = da.zeros((64, 64), ml_dtypes.bfloat16, chunks=32)
    with pytest.raises(AclnnError, match=r"161002.*tiling= is not taken here \(a user tiling describes one whole"):
        nd.grouped_dynamic_mx_quant(x, np.array([64], np.int32), tiling={"usedCoreNum": 1})
    with pytest.raises(AclnnError, match="trace= is not taken here"):
        nd.dynamic_mx_quant(x, trace=True)
    with pytest.raises(AclnnError, match="out= is not taken here"):
        nd.data_copy_dequant(da.zeros((4, 16), np.int32, chunks=2), 1, mode="DEQ16", out=np.empty((4, 16)))
