"""GroupedMatmul's A16W8-MSD antiquant kernel (docs/ops/grouped_matmul.md §11.5) against the independent plain-numpy
golden (golden_msd.py), bits compared as uint16; the boundary of ``antiquant.picks_msd`` against the
cast-then-float-cube golden of test_antiquant.py."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import antiquant, antiquant_msd, api, golden, golden_msd, golden_modes

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(1957)


def _case(dt, e, m, k, n, scale_x=1.0):
    x = (RNG.standard_normal((m, k)) * scale_x).astype(dt)
    w = RNG.integers(-128, 128, (e, k, n)).astype(np.int8)
    s = RNG.uniform(0.001, 0.05, (e, n)).astype(dt)
    o = RNG.uniform(-3, 3, (e, n)).astype(dt)
    return x, w, s, o


def gmm(x, w, s, o, gl, **kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    return api.npu_grouped_matmul([x], [w], antiquant_scale=[s], antiquant_offset=[o], group_list=gl, **kw)[0]


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize == 2
    ua, ub = a.view(np.uint16), b.view(np.uint16)
    assert np.array_equal(ua, ub), f"{int((ua != ub).sum())} of {ua.size} differ"


@pytest.mark.parametrize("dt", [BF16, np.float16])
@pytest.mark.parametrize("e,m,k,n,gl,glt", [
    (4, 40, 256, 1024, [10, 10, 33, 40], 0),            # an empty group, M not a multiple of any tile
    (3, 7, 1024, 1024, [0, 7, 0], 1),                    # few rows: every piece splits K over cores
    (2, 100, 384, 2048, [1, 99], 1),                     # baseN 512 (N >= 2048), a group cut into baseM / 2 pieces
    (16, 50, 128, 1024, [3] * 16, 1),                    # more than 12 groups: two pre-processing rounds
])
def test_bits_against_golden(dt, e, m, k, n, gl, glt):
    x, w, s, o = _case(dt, e, m, k, n)
    gl = np.array(gl, np.int64)
    assert antiquant.picks_msd([x], [w], 1, 0, "int8")
    y = gmm(x, w, s, o, gl, group_list_type=glt)
    cum = gl if glt == 0 else np.cumsum(gl)
    same_bits(y, golden_msd.grouped_matmul_msd(x, w, s, o, cum))
    # rows after the last group stay 0; the values approximate x @ ((w + o) * s) (not the cast kernel's)
    assert not np.asarray(y, np.float32)[int(cum[-1]):].any()


@pytest.mark.parametrize("dt,bias_dt", [(BF16, np.float32), (np.float16, np.float16)])
def test_bias_and_core_num(dt, bias_dt):
    e, m, k, n = 2, 9, 2048, 1024
    x, w, s, o = _case(dt, e, m, k, n)
    bias = RNG.uniform(-4, 4, (e, n)).astype(bias_dt)
    gl = np.array([4, 9], np.int64)
    for cores in (20, 24, 8):         # 20: slots padded with zeros to 24 before the row's ReduceSum
        y = gmm(x, w, s, o, gl, bias=[bias], core_num=cores)
        same_bits(y, golden_msd.grouped_matmul_msd(x, w, s, o, gl, bias=bias, core_num=cores))


def test_row_sum_follows_the_core_split():
    # the offset term o * rowsum(x) is the only value that depends on who sums which K chunk. Rows of ones between
    # +2^30 (first) and -2^30 (last): each chunk holding a +-2^30 loses its ones below half an ulp (64). 24 cores
    # cut K = 4096 into 16 chunks of 256 (AlignUp(4096 / 24, 128)): 255 + 63 ones lost, sum 3776; 8 cores into 8
    # of 512: 511 + 63 lost, sum 3520. Zero weights, offset and scale 1: y is that sum.
    e, m, k, n = 1, 3, 4096, 1024
    x = np.ones((m, k), np.float32)
    x[:, 0], x[:, -1] = 2.0**30, -2.0**30
    x = x.astype(BF16)
    w = np.zeros((e, k, n), np.int8)
    s = o = np.ones((e, n), BF16)
    gl = np.array([m], np.int64)
    for cores, total in ((24, 3776), (8, 3520)):
        g = golden_msd.grouped_matmul_msd(x, w, s, o, gl, core_num=cores)
        assert np.all(g.astype(np.float32) == total)
        same_bits(gmm(x, w, s, o, gl, core_num=cores), g)
    x, w, s, o = _case(BF16, e, m, k, n, scale_x=30.0)
    same_bits(gmm(x, w, s, o, gl, core_num=8), golden_msd.grouped_matmul_msd(x, w, s, o, gl, core_num=8))


@pytest.mark.parametrize("dt", [BF16, np.float16])
def test_zero_rows_and_large_values(dt):
    e, m, k, n = 2, 6, 256, 1024
    x, w, s, o = _case(dt, e, m, k, n)
    big = float(ml_dtypes.finfo(BF16).max) if dt == BF16 else 65504.0
    x[0] = 0                                   # amax 0: 127 / 0 = inf, 0 * inf = NaN parts cast to int8 0
    x[1] = -0.0
    x[2, ::3] = dt(big)                        # the largest finite magnitude
    x[3, 5] = dt(-big)
    gl = np.array([3, 6], np.int64)
    y = gmm(x, w, s, o, gl)
    g = golden_msd.grouped_matmul_msd(x, w, s, o, gl)
    same_bits(y, g)
    assert not np.asarray(y, np.float32)[:2].any()      # zero rows give (+-)0 without bias


def test_picks_msd_boundary():
    # M = 64 x E is the MSD kernel; one row more goes to the cast-then-float-cube kernel
    e, k, n = 2, 128, 1024
    x, w, s, o = _case(BF16, e, 64 * e + 1, k, n)
    gl = np.array([60, 64 * e], np.int64)
    assert antiquant.picks_msd([x[:-1]], [w], 1, 0, "int8")
    assert not antiquant.picks_msd([x], [w], 1, 0, "int8")
    same_bits(gmm(x[:-1], w, s, o, gl), golden_msd.grouped_matmul_msd(x[:-1], w, s, o, gl))
    gl2 = np.array([60, 64 * e + 1], np.int64)
    # the cast kernel's golden sums exactly with fractions: its first 16 columns (each column is its own sum) suffice
    wq = golden_modes.antiquant_weight(w, s, o, "bfloat16")[..., :16]
    same_bits(np.asarray(gmm(x, w, s, o, gl2))[:, :16], golden.grouped_matmul_float(x, wq, gl2))
    # and the two kernels do give other bits on the same rows
    y_msd = np.asarray(gmm(x[:-1], w, s, o, gl))[:, :16]
    y_cast = np.asarray(golden.grouped_matmul_float(x[:-1], wq, gl))
    assert not np.array_equal(y_msd.view(np.uint16), y_cast.view(np.uint16))


def test_close_to_the_exact_product():
    # the two int8 parts carry about 15 bits of x: a sanity check of the formula, not of bits
    e, m, k, n = 2, 16, 512, 1024
    x, w, s, o = _case(np.float16, e, m, k, n)
    gl = np.array([8, 16], np.int64)
    y = np.asarray(gmm(x, w, s, o, gl), np.float64)
    wd = (w.astype(np.float64) + o.astype(np.float64)[:, None, :]) * s.astype(np.float64)[:, None, :]
    ref = np.concatenate([x[:8].astype(np.float64) @ wd[0], x[8:].astype(np.float64) @ wd[1]])
    assert np.abs(y - ref).max() <= 2e-3 * np.abs(ref).max()


def test_pieces_of_the_walk():
    # 3 rows on 24 cores: one piece of 3 rows, 24 cores -> baseK AlignUp(4096 / 24, 128) = 256, 16 K chunks,
    # 24 // 16 = 1 core row -> singleM 3
    t = antiquant_msd.msd_tiling(3, 4096, 1024)
    assert (t["coreNum"], t["baseM"]) == (24, 16)
    ent = (np.array([0]), np.array([0]), np.array([3]))
    assert antiquant_msd.preprocess_pieces(ent, 4096, 1024, t).tolist() == [[0, 3, 256, 16, 1, 3]]


def test_sparse_group_list_refused():
    e, m, k, n = 2, 8, 128, 1024
    x, w, s, o = _case(BF16, e, m, k, n)
    with pytest.raises(AclnnError) as ei:
        gmm(x, w, s, o, np.array([[0, 4], [1, 4]], np.int64), group_list_type=2)
    assert ei.value.status == 161002 and "A16W8-MSD" in str(ei.value)


def test_group_checks_still_apply():
    e, m, k, n = 2, 8, 128, 1024
    x, w, s, o = _case(BF16, e, m, k, n)
    with pytest.raises(AclnnError) as ei:
        gmm(x, w, s, o, np.array([4, 9], np.int64))
    assert ei.value.status == 161002 and "cover 9 rows" in str(ei.value)


def test_aclnn_v4_keeps_rows_after_the_groups():
    # the two-phase entry into a caller's y: the groups' rows from the kernel, the rows after them as y held them
    e, m, k, n = 2, 10, 256, 1024
    x, w, s, o = _case(np.float16, e, m, k, n)
    gl = np.array([3, 7], np.int64)
    out = np.full((m, n), 5.0, np.float16)
    st, ws, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize([x], [w], None, None, None, [s], [o], None, gl, None,
                                                          None, None, 3, 0, 0, 0, [out])
    assert st == 0 and api.aclnnGroupedMatmulV4(None, ws, ex) == 0
    g = golden_msd.grouped_matmul_msd(x, w, s, o, gl)
    same_bits(out[:7], g[:7])
    assert np.all(out[7:] == 5.0)


def test_dask_keeps_msd_shaped_rows_in_one_chunk():
    """Chunks of a W8A16 call with MSD-eligible K / N could each fall into the A16W8-MSD kernel with other group sizes
    (other row sums): npu_emu.dask keeps x's rows in one chunk, so the result is the whole call's bits."""
    da = pytest.importorskip("dask.array")
    import npu_emu.dask as nd

    x, w, s, o = _case(BF16, 2, 40, 128, 1024)
    gl = np.array([15, 40], np.int64)
    with pytest.warns(Warning, match="A16W8-MSD"):
        got = nd.grouped_matmul(da.from_array(x, chunks=(8, 128)), [w], group_list=gl, antiquant_scale=[s],
                                antiquant_offset=[o])
    assert len(got.chunks[0]) == 1
    same_bits(got.compute(scheduler="sync"), gmm(x, w, s, o, gl))
