"""launch() and ub_view with the example op add_one: bit-exact results, thread-count invariance, no writes
outside the caller's buffers, argument checks, the numba cache and lazy compilation."""

import dataclasses
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.example.api import add_one
from npu_emu.kernels.example.kernel import add_one_access, add_one_kernel
from npu_emu.kernels.example.tiling import AddOneTilingData, add_one_tiling
from npu_emu.device.launch import launch, ub_view
from npu_emu.device.read_only import read_only


def golden_add_one(x):
    # numpy float32 + float32 is one correctly rounded IEEE add, as the vector Adds is
    # (docs/contributing/numba_rules.md §2.2).
    return x + np.float32(1.0)


def sample(n, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 1e3).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1.0, 16777216.0, 3.4028235e38],
                        np.float32)
    k = min(n, specials.size)
    x[:k] = specials[:k]
    return x


# ---- ub_view ------------------------------------------------------------------------------------------
def test_ub_view_is_a_typed_window_on_the_ub_bytes():
    ub = np.zeros(64, np.uint8)
    v = ub_view(ub, 8, np.float32, 2)
    assert v.dtype == np.float32 and v.size == 2
    v[0] = 1.0                                          # 0x3F800000 little-endian
    assert ub[8:12].tolist() == [0x00, 0x00, 0x80, 0x3F]
    h = ub_view(ub, 62, np.dtype(np.uint16), 1)
    h[0] = 0xABCD
    assert ub[62:].tolist() == [0xCD, 0xAB]


@pytest.mark.parametrize("offset,count", [(0, 17), (60, 2), (-4, 1), (2, 1)])
def test_ub_view_rejects_out_of_range_or_misaligned(offset, count):
    with pytest.raises(IndexError, match="do not fit this core's UB of 64 bytes"):
        ub_view(np.zeros(64, np.uint8), offset, np.float32, count)


# ---- launch with the example op ---------------------------------------------------------------------------
@pytest.mark.parametrize("n,core_num,ub_size", [
    (1, None, None), (8, None, None), (1001, None, None), (1001, 3, 1024), (4099, 5, 512),
    (100_003, 7, 2048), (65, 1, 64)])
def test_add_one_bit_exact(n, core_num, ub_size):
    x = sample(n, seed=n)
    y = add_one(x, core_num=core_num, ub_size=ub_size)
    assert np.array_equal(y.view(np.uint32), golden_add_one(x).view(np.uint32))


def test_add_one_keeps_the_shape():
    x = sample(3 * 37).reshape(3, 37)
    y = add_one(x, ub_size=256)
    assert y.shape == (3, 37)
    assert np.array_equal(y.view(np.uint32), golden_add_one(x).view(np.uint32))


def test_trace_reports_the_device_overrun():
    # n = 1001 on 910B2 (48 AIV): 126 blocks -> 48 cores, 30 big cores of 3 blocks, 18 small of 2; the last
    # core ends at ceil8(1001) = 1008, so it reads/writes floats [1001, 1008) = bytes [4004, 4032) past the end.
    _, trace = add_one(sample(1001), trace=True)
    assert trace.block_dim == 48 and trace.tiling_data["tailBlockNum"] == 30
    assert trace.gm_overrun == [("x", "read", 4004, 4032, 47), ("y", "write", 4004, 4032, 47)]
    assert len(trace.tiling_data_bytes) == AddOneTilingData.nbytes() == 72
    assert trace.workspace_size == 16 * 2**20 and trace.ub_bytes_per_core == 196352


def test_kernel_never_writes_outside_the_callers_buffer():
    n = 1001                                            # the device would write 7 floats past y's end
    x = sample(n)
    tr = add_one_tiling(n, core_num=3, ub_size=1024)
    td, block_dim, ub = tr.tiling, tr.block_dim, tr.ub_size
    backing = np.full(n + 16, np.float32(-7.0))
    y = backing[:n]
    report = launch(add_one_kernel, block_dim, td, read_only(x), y, ub_size=ub,
                    access=add_one_access(td, block_dim, n))
    assert report.ok and len(report.overruns) == 2
    assert np.all(backing[n:] == np.float32(-7.0))
    assert np.array_equal(y.view(np.uint32), golden_add_one(x).view(np.uint32))


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs NUMBA_NUM_THREADS >= 2")
def test_results_do_not_depend_on_the_thread_count():
    n = 50_001
    x = sample(n, seed=3)
    before = numba.get_num_threads()
    outs = []
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            outs.append(add_one(x, core_num=48, ub_size=512).view(np.uint32).copy())
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(outs[0], outs[1])
    assert np.array_equal(outs[0], golden_add_one(x).view(np.uint32))


# ---- validation through launch -------------------------------------------------------------------------------
def gap_tiling(n=1001):
    tr = add_one_tiling(n, core_num=3, ub_size=1024)
    td, block_dim, ub = tr.tiling, tr.block_dim, tr.ub_size
    return dataclasses.replace(td, finalSmallTileNum=td.finalSmallTileNum - 1), block_dim, ub


def test_bad_tiling_raises_before_the_kernel_runs():
    n = 1001
    td, block_dim, ub = gap_tiling(n)
    x, y = sample(n), np.full(n, np.float32(-7.0))
    with pytest.raises(AclnnError) as e:
        launch(add_one_kernel, block_dim, td, read_only(x), y, ub_size=ub, access=add_one_access(td, block_dim, n))
    assert e.value.status == 561002
    assert "add_one_kernel tiling validation failed" in e.value.message
    assert "y[272, 336) is written by no core" in e.value.message
    assert np.all(y == np.float32(-7.0))                 # the kernel did not run


def test_validate_false_runs_the_bad_tiling():
    # With validation off the kernel runs as the device would: the gap [272, 336) of core 0 keeps old contents.
    n = 1001
    td, block_dim, ub = gap_tiling(n)
    x, y = sample(n), np.full(n, np.float32(-7.0))
    assert launch(add_one_kernel, block_dim, td, read_only(x), y, ub_size=ub, access=add_one_access(td, block_dim, n),
                  validate=False) is None
    assert np.all(y[272:336] == np.float32(-7.0))
    assert np.array_equal(y[:272].view(np.uint32), golden_add_one(x[:272]).view(np.uint32))


def test_kernel_error_inside_prange_becomes_an_aclnn_error():
    # A tiling whose tiles exceed the UB: validation would catch it; without, ub_view raises inside prange.
    n = 1001
    tr = add_one_tiling(n, core_num=3, ub_size=1024)
    with pytest.raises(AclnnError) as e:
        launch(add_one_kernel, tr.block_dim, tr.tiling, read_only(sample(n)), np.empty(n, np.float32), ub_size=256,
               validate=False)
    assert e.value.status == 561000
    assert "do not fit this core's UB of 256 bytes" in e.value.message
    assert isinstance(e.value.__cause__, IndexError)


# ---- argument checks ---------------------------------------------------------------------------------------
def _args(n=64):
    tr = add_one_tiling(n, core_num=2, ub_size=1024)
    td, block_dim, ub = tr.tiling, tr.block_dim, tr.ub_size
    return td, block_dim, ub, add_one_access(td, block_dim, n), read_only(sample(n)), np.empty(n, np.float32)


@pytest.mark.parametrize("mutate,match", [
    (lambda a: a.update(block_dim=0), "block_dim=0"),
    (lambda a: a.update(block_dim=65536), "block_dim=65536"),
    (lambda a: a.update(ub_size=0), "ub_size=0"),
    (lambda a: a.update(tiling={"tileDataNum": 8}), "TilingData instance"),
    (lambda a: a.update(access="x"), "pass an AccessPattern"),
    (lambda a: a.update(block_dim=1), "block_dim=1 but the access pattern describes 2 cores"),
    (lambda a: a.update(bufs=(a["bufs"][0],)), "1 GM buffers passed but the access pattern declares 2"),
    (lambda a: a.update(bufs=(a["bufs"][0], np.empty(65, np.float32))), r"float32\[65\] but the access"),
    (lambda a: a.update(bufs=(a["bufs"][0], np.empty(64, np.int32))), r"int32\[64\] but the access"),
    (lambda a: a.update(bufs=(a["bufs"][0], np.empty(128, np.float32)[::2])), "not C-contiguous"),
    (lambda a: a.update(bufs=(a["bufs"][0], np.empty(64, np.float16))), r"\.view\(np\.uint16\)"),
    (lambda a: a.update(bufs=(a["bufs"][0], [0.0] * 64)), "pass a numpy array"),
    # an input handed over writeable: the same launch without an access pattern would compile another kernel
    (lambda a: a.update(bufs=(sample(64), a["bufs"][1])), r"x is only read by the kernel but was passed writeable"),
])
def test_launch_argument_errors(mutate, match):
    td, block_dim, ub, access, x, y = _args()
    a = {"block_dim": block_dim, "tiling": td, "ub_size": ub, "access": access, "bufs": (x, y)}
    mutate(a)
    with pytest.raises(AclnnError, match=match):
        launch(add_one_kernel, a["block_dim"], a["tiling"], *a["bufs"], ub_size=a["ub_size"], access=a["access"])


def test_read_only_output_is_rejected():
    td, block_dim, ub, access, x, y = _args()
    y.flags.writeable = False
    with pytest.raises(AclnnError, match="y is written by the kernel but the array is read-only"):
        launch(add_one_kernel, block_dim, td, x, y, ub_size=ub, access=access)


# ---- compilation: lazy at import, cached on disk -----------------------------------------------------------
_CACHE_PROBE = textwrap.dedent('''
    import warnings
    from dataclasses import dataclass
    import numpy as np
    from numba import NumbaPerformanceWarning, njit, prange
    import npu_emu.device.launch as L
    from npu_emu.device.tiling_data import TilingData
    import npu_emu.kernels.example.kernel as ex

    @dataclass(frozen=True)
    class ProbeTilingData(TilingData):
        _ctypes = ("uint32", "uint64")
        count: int
        offset: int

    @njit(parallel=True, cache=True, error_model="numpy")
    def probe_kernel(block_dim, td, ub_size, y_gm):
        for block_idx in prange(block_dim):
            ub = np.empty(ub_size, np.uint8)
            v = L.ub_view(ub, td.offset, np.float32, td.count)
            for i in range(td.count):
                v[i] = np.float32(block_idx)
            for i in range(td.count):
                y_gm[block_idx * td.count + i] = v[i]

    def main():
        # nothing compiled by importing the package, the launch module or an op's kernel module
        assert L.ub_view.signatures == [] and L._ub_view_error.signatures == []
        assert ex.add_one_kernel.signatures == []
        # a prange body that numba cannot parallelise (e.g. an inlined `raise`) only warns: make it fail
        warnings.simplefilter("error", NumbaPerformanceWarning)
        y = np.empty(6, np.float32)
        L.launch(probe_kernel, 3, ProbeTilingData(2, 32), y, ub_size=64)
        assert y.tolist() == [0, 0, 1, 1, 2, 2], y
        print(sum(probe_kernel.stats.cache_hits.values()), sum(probe_kernel.stats.cache_misses.values()))
''')


def test_lazy_compile_parallel_and_disk_cache(tmp_path):
    # The probe is an imported module, as kernels are: numba pickles classes defined in __main__ by value, so
    # a kernel taking a TilingData declared in a script never hits its cache.
    (tmp_path / "cache_probe.py").write_text(_CACHE_PROBE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba_cache"))
    cmd = [sys.executable, "-c", "import cache_probe; cache_probe.main()"]
    runs = [subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["0", "1"]          # cold: compiled and written
    assert runs[1].stdout.split() == ["1", "0"]          # warm: loaded, TilingData namedtuple type resolved
