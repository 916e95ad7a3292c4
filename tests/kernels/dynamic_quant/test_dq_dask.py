"""npu_emu.dask.dynamic_quant[_asymmetric]: by rows, on a real dask.distributed LocalCluster (in-process, small),
bit-identical to one npu_emu.ops call, with every chunk run under the whole call's tiling key, also where the
chunk alone would make op_host pick another key (key 100 needs 4 <= rows <= 384 of the whole call)."""

import ml_dtypes
import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from npu_emu import dask as nd, ops  # noqa: E402
from npu_emu.errors import AclnnError  # noqa: E402
from npu_emu.kernels.dynamic_quant import launch, tiling  # noqa: E402

BF16 = ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture
def keys_run(monkeypatch):
    """The tiling key of every kernel launch (the in-process workers share this module)."""
    seen = []
    orig = launch.run

    def spy(*a, **k):
        seen.append(a[4].tiling_key)
        return orig(*a, **k)

    monkeypatch.setattr(launch, "run", spy)
    return seen


def _x(shape, seed, dtype=BF16):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    x.reshape(-1, shape[-1])[1] = 0          # a zero row
    return x.astype(dtype)


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        u, v = np.asarray(u), np.asarray(v)
        assert u.shape == v.shape and u.dtype == v.dtype
        assert np.array_equal(u.view(np.uint8), v.view(np.uint8))


@pytest.mark.parametrize("shape, chunks, whole_key, chunk_key", [
    ((400, 4096), (100, 4096), 10, 100),      # whole call: 400 rows > 384 -> key 10; a 100-row chunk alone: 100
    ((12, 4096), (2, 4096), 100, 10),         # whole call: key 100; a 2-row chunk alone (rows < 4): key 10
    ((3, 4, 5120), (1, 2, 5120), 100, 10),    # 3-D, split along two leading axes
])
def test_by_rows_runs_the_whole_calls_key(client, keys_run, shape, chunks, whole_key, chunk_key):
    rows = int(np.prod(shape[:-1]))
    crow = int(np.prod(chunks[:-1]))
    assert tiling.tiling(rows, shape[-1]).tiling_key == whole_key
    assert tiling.tiling(crow, shape[-1]).tiling_key == chunk_key     # what each chunk alone would run
    x = _x(shape, rows)
    want = ops.npu_dynamic_quant(x)
    del keys_run[:]
    got = client.compute(nd.dynamic_quant(da.from_array(x, chunks=chunks)), sync=True)
    _same(got, want)
    assert keys_run and set(keys_run) == {whole_key}, keys_run
    assert len(keys_run) == rows // crow


def test_smooth_int4_asymmetric_and_rechunked_last_axis(client):
    x = _x((40, 256), 3)
    sm = (np.random.default_rng(4).random(256) + 0.5).astype(BF16)
    xd = da.from_array(x, chunks=(7, 128))                               # the last axis is made one chunk
    with pytest.warns(nd.RechunkWarning):
        y = nd.dynamic_quant(xd, smooth_scales=sm, dst_type=16)
    _same(client.compute(y, sync=True), ops.npu_dynamic_quant(x, smooth_scales=sm, dst_type=16))
    with pytest.warns(nd.RechunkWarning):
        y = nd.dynamic_quant_asymmetric(xd)
    _same(client.compute(y, sync=True), ops.npu_dynamic_quant_asymmetric(x))


def test_group_index_rebased_per_chunk(client, keys_run):
    """MoE (key 7): each chunk reads the smooth rows of its rows' groups, as in the whole call."""
    x = _x((30, 256), 5, np.float16)
    sm = (np.random.default_rng(6).random((4, 256)) + 0.5).astype(np.float16)
    g = np.array([5, 11, 11, 30], np.int32)
    want = ops.npu_dynamic_quant(x, smooth_scales=sm, group_index=g)
    del keys_run[:]
    got = client.compute(nd.dynamic_quant(da.from_array(x, chunks=(8, 256)), smooth_scales=sm, group_index=g),
                         sync=True)
    _same(got, want)
    assert set(keys_run) == {7}


def test_group_index_3d_splits_the_first_axis_only(client):
    x = _x((3, 10, 256), 8, np.float16)
    sm = (np.random.default_rng(9).random((3, 256)) + 0.5).astype(np.float16)
    g = np.array([4, 17, 30], np.int32)
    with pytest.warns(nd.RechunkWarning, match="consecutive rows"):
        r = nd.dynamic_quant(da.from_array(x, chunks=(1, 5, 256)), smooth_scales=sm, group_index=g)
    _same(client.compute(r, sync=True), ops.npu_dynamic_quant(x, smooth_scales=sm, group_index=g))


def test_errors_name_the_whole_call_and_refuse_a_tiling():
    x = da.from_array(_x((8, 256), 7), chunks=(4, 256))
    with pytest.raises(AclnnError) as e:
        nd.dynamic_quant(x, dst_type=5)
    assert e.value.status == 161002 and "the whole call" in e.value.message
    with pytest.raises(AclnnError) as e:
        nd.dynamic_quant(x, tiling=tiling.tiling(8, 256))
    assert e.value.status == 161002 and "tiling=" in e.value.message
    with pytest.raises(AclnnError) as e:
        nd.dynamic_quant(x, smooth_scales=np.ones((4, 256), np.float32).astype(BF16),
                         group_index=np.array([2, 4, 6, 7], np.int32))
    assert e.value.status == 161002 and "group_index ends at row 7" in e.value.message


def test_forced_key_that_cannot_run_the_shape_is_refused():
    with pytest.raises(AclnnError) as e:
        tiling.tiling(2, 130, key=10)
    assert e.value.status == 161002 and "op_host picks key 2" in e.value.message
    td = tiling.tiling(2, 4096, key=100)
    assert td.tiling_key == 100 and td.tiling.rowPerTailCore == 2
