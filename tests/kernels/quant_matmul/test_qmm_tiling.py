"""Host tiling (struct layout, base-block calculator values) and the proof that results depend neither on the
tiling (base blocks, L2 serpentine, core count, block_dim) nor on the thread count nor on the cube primitive."""

import ml_dtypes
import numba
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.quant_matmul import tiling as T
from npu_emu.kernels.quant_matmul.api import npu_quant_matmul

E4M3 = ml_dtypes.float8_e4m3fn


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


def test_struct_layout():
    td = T.QuantBatchMatmulV3TilingData()
    assert td.nbytes() == 376                       # 32 x 4 + 50 x 4 + 6 x 4 + 6 x 4
    assert T.QuantBatchMatmulV3TilingData.offsets() == {"params": 0, "matmulTiling": 128, "tileL2cacheTiling": 328,
                                                         "adaptiveSlidingWin": 352}
    tr = T.quant_matmul_tiling(T.MatmulShape(100, 200, 300))
    raw = tr.tiling.to_bytes()
    assert len(raw) == 376 and T.QuantBatchMatmulV3TilingData.from_bytes(raw) == tr.tiling
    # matmulTiling.M sits at byte 128 + 4 (after usedCoreNum)
    assert int.from_bytes(raw[132:136], "little") == 100


@pytest.mark.parametrize("shape, soc, want, block_dim", [
    # DEFAULT: baseM = align(min(M, 256), 16), baseN = align(min(N, 256), 32 int8 elements), baseK = 128 bytes;
    # 16 x 16 blocks >= the cores: no adjustment
    (T.MatmulShape(4096, 4096, 4096), "ascend950pr", (256, 256, 128), 28),
    (T.MatmulShape(4096, 4096, 4096), "ascend910b2", (256, 256, 128), 24),
    # 1 block < 28 cores: AdjustBaseBlockDefault splits N (transB: 16 alignment) -> 16 x 16, 4 blocks
    (T.MatmulShape(16, 64, 128, trans_b=True), "ascend950pr", (16, 16, 128), 4),
    # per-block, gsM 128, M = 130 (not a multiple of 128): 128 x 128 blocks, baseK = gsK
    (T.MatmulShape(130, 140, 260, a_dtype="float8_e4m3fn", b_dtype="float8_e4m3fn", perblock=True, gs_m=128),
     "ascend950pr", (128, 128, 128), 4),
    # per-tile (gsM 1), M = 9: baseM = align(9, 16) = 16; baseN 128 cannot halve below the 128-element alignment
    (T.MatmulShape(9, 129, 260, a_dtype="float8_e4m3fn", b_dtype="float8_e4m3fn", perblock=True, gs_m=1),
     "ascend950pr", (16, 128, 128), 2),
])
def test_base_blocks(shape, soc, want, block_dim):
    tr = T.quant_matmul_tiling(shape, soc=soc)
    c = tr.tiling.matmulTiling
    assert (c.baseM, c.baseN, c.baseK) == want
    assert tr.block_dim == block_dim and c.usedCoreNum == block_dim


def test_block_coords_serpentine():
    # 3 x 4 blocks in 2 x 2 L2 tiles of 2 x 2 blocks: tile row 0 left to right, tile row 1 right to left
    order = [T.block_coords(i, 3, 4, 2, 2, 2, 2, 0) for i in range(12)]
    assert order[:4] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert order[4:8] == [(0, 2), (0, 3), (1, 2), (1, 3)]
    assert order[8:10] == [(2, 2), (2, 3)]                    # second tile row starts from the right
    assert order[10:] == [(2, 0), (2, 1)]
    assert sorted(order) == [(i, j) for i in range(3) for j in range(4)]
    col_major = [T.block_coords(i, 3, 4, 2, 2, 2, 2, 1) for i in range(4)]
    assert col_major == [(0, 0), (1, 0), (0, 1), (1, 1)]


# --- invariance ----------------------------------------------------------------------------------------------

def _case(rng, fp8=False):
    m, k, n = 45, 200, 70
    if fp8:
        x1 = rng.uniform(-8, 8, (2, m, k)).astype(E4M3)
        x2 = rng.uniform(-8, 8, (k, n)).astype(E4M3)
        kw = dict(pertoken_scale=rng.uniform(0.5, 2, m).astype(np.float32), bias=rng.uniform(-1, 1, n)
                  .astype(np.float32), output_dtype="bfloat16", soc="ascend950pr")
        scale = rng.uniform(0.01, 0.1, n).astype(np.float32)
    else:
        x1 = rng.integers(-128, 128, (2, m, k)).astype(np.int8)
        x2 = rng.integers(-128, 128, (k, n)).astype(np.int8)
        kw = dict(pertoken_scale=rng.uniform(0.5, 2, m).astype(np.float32), bias=rng.integers(-99, 99, n)
                  .astype(np.int32), output_dtype="float16")
        scale = rng.uniform(0.0001, 0.001, n).astype(np.float32)
    return x1, x2, scale, kw, T.MatmulShape(m, n, k, batch=2, a_dtype=str(x1.dtype), b_dtype=str(x2.dtype))


@pytest.mark.parametrize("fp8", [False, True])
def test_results_do_not_depend_on_the_tiling(fp8):
    rng = np.random.default_rng(11)
    x1, x2, s, kw, shape = _case(rng, fp8)
    ref, tr = npu_quant_matmul(x1, x2, s, trace=True, **kw)
    soc = kw.get("soc", "ascend910b2")
    variants = []
    for bm, bn, bk, l2 in [(16, 16, 32, None), (32, 64, 64, (2, 3, 0)), (48, 32, 128, (3, 2, 1)),
                           (64, 80, 256, (1, 2, 0))]:
        variants.append(T.quant_matmul_tiling(shape, soc=soc, base_m=bm, base_n=bn, base_k=bk, l2_tiles=l2).tiling)
    for td in variants:
        got = npu_quant_matmul(x1, x2, s, tiling=td, **kw)
        assert np.array_equal(bits(got), bits(ref))
    for cores in (1, 3, 7):
        assert np.array_equal(bits(npu_quant_matmul(x1, x2, s, core_num=cores, **kw)), bits(ref))
    assert np.array_equal(bits(npu_quant_matmul(x1, x2, s, block_dim=2, **kw)), bits(ref))


def test_results_do_not_depend_on_threads_or_the_cube_primitive():
    rng = np.random.default_rng(12)
    x1, x2, s, kw, shape = _case(rng)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = npu_quant_matmul(x1, x2, s, **kw)
        numba.set_num_threads(max(2, before) if numba.config.NUMBA_NUM_THREADS >= 2 else 1)
        two = npu_quant_matmul(x1, x2, s, **kw)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(bits(one), bits(two))
    faithful = npu_quant_matmul(x1, x2, s, faithful=True, **kw)
    assert np.array_equal(bits(faithful), bits(one))
    # the faithful cube with an odd split as well
    td = T.quant_matmul_tiling(shape, base_m=16, base_n=48, base_k=64, l2_tiles=(2, 2, 1)).tiling
    assert np.array_equal(bits(npu_quant_matmul(x1, x2, s, faithful=True, tiling=td, **kw)), bits(one))


def test_user_tiling_rejections():
    rng = np.random.default_rng(13)
    x1, x2, s, kw, shape = _case(rng)
    wrong_m = T.quant_matmul_tiling(T.MatmulShape(46, 70, 200, batch=2)).tiling
    with pytest.raises(AclnnError) as e:
        npu_quant_matmul(x1, x2, s, tiling=wrong_m, **kw)
    assert e.value.status == 561002
    td = T.quant_matmul_tiling(shape, base_m=16, base_n=16).tiling
    uncovered = T.QuantBatchMatmulV3TilingData(params=td.params, matmulTiling=td.matmulTiling,
                                               tileL2cacheTiling=T.L2cacheTileParam(1, 1, 1, 1, 0, 1))
    with pytest.raises(AclnnError) as e:
        npu_quant_matmul(x1, x2, s, tiling=uncovered, **kw)
    assert e.value.status == 561002 and "cover" in e.value.message
    from dataclasses import replace
    big_ub = replace(td, params=replace(td.params, ubCalcM=10_000, ubCalcN=16))
    with pytest.raises(AclnnError) as e:                      # the launch validator: UB overflow
        npu_quant_matmul(x1, x2, s, tiling=big_ub, **kw)
    assert e.value.status == 561002


def test_trace():
    rng = np.random.default_rng(14)
    x1, x2, s, kw, shape = _case(rng)
    y, tr = npu_quant_matmul(x1, x2, s, trace=True, **kw)
    assert tr.routed_op == "QuantBatchMatmulV3" and tr.quant_mode == "K-C"
    assert tr.tiling_data["matmulTiling"]["M"] == 45 and len(tr.tiling_data_bytes) == 376
    assert tr.block_dim == tr.tiling_data["matmulTiling"]["usedCoreNum"] and tr.gm_overrun == []
    assert any("not reproduced" in n for n in tr.notes)


@pytest.mark.parametrize("soc", ["ascend910b2", "ascend950pr"])      # L0A Zz (A2/A3) and Nz (950)
def test_faithful_mmad_cube_with_gemv_rows(soc):
    rng = np.random.default_rng(15)
    m, k, n = 17, 150, 40                                            # baseM 16: the last block has one row (GEMV)
    x1 = rng.integers(-128, 128, (m, k)).astype(np.int8)
    x2 = rng.integers(-128, 128, (k, n)).astype(np.int8)
    s = rng.uniform(0.0001, 0.001, n).astype(np.float32)
    td = T.quant_matmul_tiling(T.MatmulShape(m, n, k), soc=soc, base_m=16, base_n=32, base_k=64).tiling
    ref = npu_quant_matmul(x1, x2, s, output_dtype="bfloat16", soc=soc)
    got = npu_quant_matmul(x1, x2, s, output_dtype="bfloat16", soc=soc, tiling=td, faithful=True)
    assert np.array_equal(bits(got), bits(ref))
