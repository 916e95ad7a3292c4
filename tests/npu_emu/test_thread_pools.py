"""The launch layer keeps small work off the thread pools, scoped to our call (docs/device/launch.md, "Host GEMMs and
thread pools"): serial_below, launch's thread choice, single_blas_thread and host_matmul."""

import threading

import numba
import numpy as np
import pytest

from npu_emu.device import jit_options as J
from npu_emu.device import launch as L
from npu_emu.device.read_only import read_only
from npu_emu.kernels.example.kernel import add_one_access
from npu_emu.kernels.example.tiling import add_one_tiling

threadpoolctl = pytest.importorskip("threadpoolctl")

needs_two = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs NUMBA_NUM_THREADS >= 2")
LIMIT = 1 << 20


@pytest.fixture(autouse=True)
def fixed_threshold(monkeypatch):
    """The threshold and the contention reading as on an idle box, whatever the load of the machine running the
    tests."""
    monkeypatch.setattr(J, "parallel_min_bytes", lambda: LIMIT)
    monkeypatch.setattr(J, "_others_contended", lambda now: False)


def _feed(monkeypatch, samples, running=0):
    """Make the contention reading see ``samples`` ((wall, machine busy CPU-s, our CPU-s), one per reading)."""
    it = iter(samples)
    monkeypatch.setattr(J, "_cpu_sample", lambda: next(it))
    monkeypatch.setattr(J, "_running_others", lambda: running)
    J._load.update(t=-1e9, sample=None, blas_threads=-1e9)


def test_the_threshold_follows_other_processes(monkeypatch):
    monkeypatch.undo()
    cores = J._cores()
    threads = min(numba.get_num_threads(), cores)
    if threads < 2:
        pytest.skip("one core or one numba thread: the pool never waits for another core")
    # first reading: nothing to compare with, so the tasks running at this instant decide
    _feed(monkeypatch, [(0.0, 0.0, 0.0)], running=0)
    assert J.parallel_min_bytes() == J.PARALLEL_MIN_BYTES
    _feed(monkeypatch, [(0.0, 0.0, 0.0)], running=cores)
    assert J.parallel_min_bytes() == J.PARALLEL_MIN_BYTES_LOADED
    # then the machine's busy time less ours over the window: our own threads busy on every core are no contention,
    # another process holding one core is
    for ours, machine, want in ((cores * 1.0, cores * 1.0, J.PARALLEL_MIN_BYTES),
                                (0.0, 1.0, J.PARALLEL_MIN_BYTES_LOADED),
                                (1.0, 1.2, J.PARALLEL_MIN_BYTES)):
        _feed(monkeypatch, [(0.0, 0.0, 0.0), (1.0, machine, ours)], running=0)
        assert J.others_busy_cores() == 0                 # the first reading (running=0)
        J._load["t"] = -1e9
        assert J.parallel_min_bytes() == want, (ours, machine)
    # a reading older than CONTENTION_STALE says nothing: the instant decides again
    _feed(monkeypatch, [(0.0, 0.0, 0.0), (J.CONTENTION_STALE + 1, 0.0, 0.0)], running=cores)
    J.others_busy_cores()
    J._load["t"] = -1e9
    assert J.parallel_min_bytes() == J.PARALLEL_MIN_BYTES_LOADED
    J._load.update(t=-1e9, sample=None)


def test_the_threshold_is_the_loaded_one_while_blas_workers_spin(monkeypatch):
    """After a GEMM on BLAS's threads (host_matmul notes it) the pool waits BLAS_SPIN_SECONDS as if the cores were
    held; other processes' contention (is_contended, which decides BLAS's own threads) is a separate reading."""
    monkeypatch.undo()
    _feed(monkeypatch, [(0.0, 0.0, 0.0)] * 3, running=0)
    clock = [100.0]
    monkeypatch.setattr(J.time, "monotonic", lambda: clock[0])
    assert J.parallel_min_bytes() == J.PARALLEL_MIN_BYTES
    a = np.ones((512, 512), np.float32)
    big = np.ones((L.BLAS_THREADED_MACS // (512 * 512), 512), np.float32)
    L.host_matmul(a[:, :8], a[:8])                           # below BLAS_THREADED_MACS: one BLAS thread
    assert J.parallel_min_bytes() == J.PARALLEL_MIN_BYTES
    L.host_matmul(a, big)                                    # 2^27 multiply-adds: BLAS's own threads
    assert J.parallel_min_bytes() == J.PARALLEL_MIN_BYTES_LOADED and not J.is_contended()
    clock[0] += J.BLAS_SPIN_SECONDS + 1e-3
    assert J.parallel_min_bytes() == J.PARALLEL_MIN_BYTES
    J._load.update(t=-1e9, sample=None, blas_threads=-1e9)


@pytest.mark.skipif(J._cpu_sample() is None, reason="no /proc/stat: the load average decides")
def test_a_busy_process_is_seen():
    """A real CPU-bound process next to us shows up as (about) one busy core; this process's own work does not."""
    import subprocess
    import sys
    import time

    J.others_busy_cores()
    burner = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 3: pass"])
    try:
        time.sleep(0.3)
        J.others_busy_cores()
        time.sleep(0.8)
        seen = J.others_busy_cores()
    finally:
        burner.kill()
        burner.wait()
    assert seen >= 0.5, seen
    J._load.update(t=-1e9, sample=None)


def _blas():
    libs = threadpoolctl.ThreadpoolController().select(user_api="blas").lib_controllers
    if not libs:
        pytest.skip("threadpoolctl finds no BLAS library in this process")
    return libs


@needs_two
@pytest.mark.parametrize("work,expect_serial", [(0, True), (LIMIT - 1, True), (LIMIT, False)])
def test_serial_below_limits_this_call_only(work, expect_serial):
    before = numba.get_num_threads()
    seen = {}
    with L.serial_below(work):
        seen["inside"] = numba.get_num_threads()

        def other():
            seen["other thread"] = numba.get_num_threads()

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen["inside"] == (1 if expect_serial else before)
    assert seen["other thread"] == numba.config.NUMBA_NUM_THREADS   # numba's count is per thread
    assert numba.get_num_threads() == before                        # restored


@needs_two
def test_serial_below_restores_on_error_and_keeps_a_users_own_limit():
    numba.set_num_threads(1)
    try:
        with L.serial_below(0):
            assert numba.get_num_threads() == 1
        assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    with pytest.raises(RuntimeError):
        with L.serial_below(0):
            raise RuntimeError("boom")
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def _recording_kernel(seen):
    def kernel(block_dim, td, ub_size, *bufs):
        seen.append(numba.get_num_threads())
    return kernel


@needs_two
@pytest.mark.parametrize("n,work,threads", [
    (1024, None, 1),                                   # 8 KiB of GM: the calling thread
    (LIMIT // 8, None, None),                          # x and y of 1 MiB together: the pool
    (1024, LIMIT, None),                               # an op's own measure of its work decides
])
def test_launch_chooses_the_threads_from_the_work(n, work, threads):
    x = np.zeros(n, np.float32)
    y = np.empty_like(x)
    tr = add_one_tiling(n)
    seen = []
    L.launch(_recording_kernel(seen), tr.block_dim, tr.tiling, read_only(x), y, ub_size=tr.ub_size,
             access=add_one_access(tr.tiling, tr.block_dim, n), validate=False, work=work)
    assert seen == [threads or numba.config.NUMBA_NUM_THREADS]
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_single_blas_thread_is_scoped_nested_and_restored():
    libs = _blas()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        users = [lib.get_num_threads() for lib in libs]
        with L.single_blas_thread():
            assert [lib.get_num_threads() for lib in libs] == [1] * len(libs)
            with L.single_blas_thread():
                assert [lib.get_num_threads() for lib in libs] == [1] * len(libs)
            assert [lib.get_num_threads() for lib in libs] == [1] * len(libs)   # the outer scope still holds
        assert [lib.get_num_threads() for lib in libs] == users
        with pytest.raises(ValueError):
            with L.single_blas_thread():
                raise ValueError("boom")
        assert [lib.get_num_threads() for lib in libs] == users


def test_single_blas_thread_leaves_other_threads_alone():
    """OpenBLAS ignores set_num_threads from a thread other than the main one once the main thread has set a
    count, so the scope acts in the main thread only: in another thread it changes nothing."""
    libs = _blas()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        users = [lib.get_num_threads() for lib in libs]
        seen = []

        def worker():
            with L.single_blas_thread():
                seen.append((L._blas_state["depth"], [lib.get_num_threads() for lib in libs]))

        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert seen == [(0, users)]
        assert [lib.get_num_threads() for lib in libs] == users


@pytest.mark.parametrize("shape_a,shape_b", [((3, 5), (5, 4)), ((2, 3, 5), (5, 4)), ((64, 128), (128, 64))])
def test_host_matmul_is_np_matmul(shape_a, shape_b):
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, shape_a).astype(np.float32)
    b = rng.integers(-128, 128, shape_b).astype(np.float32)
    want = np.matmul(a, b)
    assert np.array_equal(L.host_matmul(a, b).view(np.uint32), want.view(np.uint32))
    out = np.empty_like(want)
    assert L.host_matmul(a, b, out=out) is out
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))


def test_host_matmul_keeps_blas_threads_only_for_large_gemms(monkeypatch):
    libs = _blas()
    seen = []
    real = np.matmul

    def spy(a, b, out=None):
        seen.append([lib.get_num_threads() for lib in libs])
        return real(a, b, out=out)

    monkeypatch.setattr(L.np, "matmul", spy)
    monkeypatch.setattr(L, "BLAS_THREADED_MACS", 16 * 16 * 16)
    a = np.ones((16, 16), np.float32)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        users = [lib.get_num_threads() for lib in libs]
        L.host_matmul(a[:15], a)                      # 15*16*16 < 16^3: one thread
        L.host_matmul(a, a)                           # at the threshold: BLAS's own threads
    assert seen == [[1] * len(libs), users]


def test_quant_matmul_small_call_uses_no_second_pool(monkeypatch):
    """The issue's case, int8 64x128x64 K-C bf16: its GEMM runs with one BLAS thread (the exact int32 cube is numpy
    only: float32 GEMMs and their exact sums, no numba loop between two GEMMs)."""
    pytest.importorskip("ml_dtypes")
    from npu_emu.kernels.quant_matmul.api import npu_quant_matmul

    libs = _blas()
    record = []
    real_mm = np.matmul
    real_launch_threads = L.serial_below

    def mm(a, b, out=None):
        record.append(("gemm", [lib.get_num_threads() for lib in libs]))
        return real_mm(a, b, out=out)

    monkeypatch.setattr(L.np, "matmul", mm)
    rng = np.random.default_rng(0)
    x1 = rng.integers(-128, 128, (64, 128), dtype=np.int8)
    x2 = rng.integers(-128, 128, (128, 64), dtype=np.int8)
    s = rng.uniform(0.0005, 0.005, 64).astype(np.float32)
    p1 = rng.uniform(0.5, 2, 64).astype(np.float32)
    y = npu_quant_matmul(x1, x2, s, pertoken_scale=p1, output_dtype="bfloat16")
    assert y.shape == (64, 64)
    assert ("gemm", [1] * len(libs)) in record
    assert all(r[1] in (1, [1] * len(libs)) for r in record), record
    assert real_launch_threads is L.serial_below


@needs_two
def test_host_column_split_rules(monkeypatch):
    """Column ranges for the host threads of an exact GEMM run: only for large work, free cores, two numba
    threads, in the main thread; ranges of multiples of 64 columns covering n."""
    if J._cores() < 2 or not L._blas_libs():
        pytest.skip("one core, or no BLAS threadpoolctl can scope: never split")
    monkeypatch.setattr(L, "is_contended", lambda: False)
    big = L.HOST_SPLIT_MACS
    old = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        assert L.host_column_split(2048, big) == [(0, 1024), (1024, 2048)]
        assert L.host_column_split(200, big) == [(0, 128), (128, 200)]
        assert L.host_column_split(2048, big - 1) == [(0, 2048)]           # small work: the calling thread
        assert L.host_column_split(127, big) == [(0, 127)]                 # not two 64-column ranges
        seen = []
        t = threading.Thread(target=lambda: seen.append(L.host_column_split(2048, big)))
        t.start()
        t.join()
        assert seen == [[(0, 2048)]]                                        # the BLAS count is not ours there
        monkeypatch.setattr(L, "is_contended", lambda: True)
        assert L.host_column_split(2048, big) == [(0, 2048)]               # other processes hold the cores
        monkeypatch.setattr(L, "is_contended", lambda: False)
        numba.set_num_threads(1)
        assert L.host_column_split(2048, big) == [(0, 2048)]               # the user's one thread
    finally:
        numba.set_num_threads(old)


def test_run_host_parts_runs_every_part_on_one_blas_thread():
    libs = _blas()
    seen = []

    def part(n0, n1):
        seen.append((n0, [lib.get_num_threads() for lib in libs]))
        return n1 - n0

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        users = [lib.get_num_threads() for lib in libs]
        assert L.run_host_parts(part, [(0, 64), (64, 100), (100, 300)]) == [64, 36, 200]
        assert sorted(seen) == [(0, [1] * len(libs)), (64, [1] * len(libs)), (100, [1] * len(libs))]
        assert [lib.get_num_threads() for lib in libs] == users

        def bad(n0, n1):
            if n0:
                raise ValueError("boom")

        with pytest.raises(ValueError):
            L.run_host_parts(bad, [(0, 64), (64, 128)])
        assert [lib.get_num_threads() for lib in libs] == users
