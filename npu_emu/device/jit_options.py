"""The numba switch every parallel kernel reads, in one place so that a test mode can flip it, and the rule that
keeps small parallel regions on the calling thread (:func:`serial_below`).

``NPU_EMU_SERIAL_KERNELS=1`` compiles the per-core ``prange`` loops as plain loops (``parallel=False``). It exists
for the bounds-checked test job (docs/contributing/reliability.md): numba 0.68 does not apply
``NUMBA_BOUNDSCHECK=1`` inside parallel prange bodies (tests/reliability/test_bounds_mode.py), so an out-of-range
index in a kernel is only caught when the kernels run serially. Results are the same either way (cores write
disjoint ranges; determinism tests compare thread counts). numba's cache is keyed neither by this switch nor by
the bounds check, so such a run needs its own ``NUMBA_CACHE_DIR``.
"""

import os
import time
from contextlib import contextmanager

SERIAL_KERNELS = os.environ.get("NPU_EMU_SERIAL_KERNELS", "0").strip() not in ("", "0")
PARALLEL = not SERIAL_KERNELS

# Every module with cached kernels imports this one before it compiles anything: the place to make numba's cache
# index safe for processes that compile at the same time (npu_emu/device/cache_lock.py says why).
from npu_emu.device import cache_lock  # noqa: E402

cache_lock.install()

# ... and to make numba's inliner copy a callee's scope once per inlining, not once per block (a compile-time
# saving: npu_emu/device/inline_copy.py)
from npu_emu.device import inline_copy  # noqa: E402

inline_copy.install()

# ... and to run numba's untyped passes over an inlined function once, not at every call site
# (npu_emu/device/inline_reuse.py)
from npu_emu.device import inline_reuse  # noqa: E402

inline_reuse.install()

# ... and to spare numba's two gufunc wrapper libraries of each parallel kernel a whole-module re-optimisation of the
# body they wrap and machine code that never runs, and npu-emu's own kernels a re-optimisation of the body that
# arrives optimised (npu_emu/device/wrapper_passes.py)
from npu_emu.device import wrapper_passes  # noqa: E402

wrapper_passes.install()

# ... and to compile an @overload implementation once for callers whose flags differ only where it does not inherit
# them, as a parallel kernel and its prange body do (npu_emu/device/overload_reuse.py)
from npu_emu.device import overload_reuse  # noqa: E402

overload_reuse.install()

# ... and to let npu_emu's own functions load the kernels a wheel built with NPU_EMU_BUILD_KERNELS=1 ships
# (npu_emu/device/shipped_kernels.py; other functions' cache loads are untouched)
from npu_emu.device import shipped_kernels  # noqa: E402

shipped_kernels.install()

# ... and to pause Python's cyclic garbage collector while npu_emu's functions compile (npu_emu/device/gc_pause.py;
# before lean_compile, which wraps the same numba method and unwraps it again in its tests)
from npu_emu.device import gc_pause  # noqa: E402

gc_pause.install()

# ... and to compile npu_emu's own functions without the C-callable wrapper they never use, and cache them without
# the annotated source text (npu_emu/device/lean_compile.py)
from npu_emu.device import lean_compile  # noqa: E402

lean_compile.install()

# --------------------------------------------------------------------------------------------------------------
# Small work on the calling thread (docs/device/launch.md, "Host GEMMs and thread pools")
# --------------------------------------------------------------------------------------------------------------

# Every parallel region wakes the pool's workers and waits for the last of them. With cores free that costs ~10 us;
# when another process keeps a core busy, the woken worker waits for a time slice of that core: measured on the
# 2-core box, a 1 MiB region took 16 ms on the pool against 0.22 ms on the calling thread with one other CPU-bound
# process running, 24 ms with two (the same region: 0.2 ms either way on an idle box). So a region that moves fewer
# bytes than the threshold below runs on the calling thread, and the threshold is higher while other processes keep
# the cores our pool would need busy.
PARALLEL_MIN_BYTES = 1 << 20            # cores free: ~0.1-1 ms of emulated work on one thread
PARALLEL_MIN_BYTES_LOADED = 64 << 20    # cores taken by others: ~10-50 ms of work, against a time slice per region
CONTENTION_WINDOW = 0.1                 # seconds: how often the machine's CPU use is read, at most
CONTENTION_STALE = 3.0                  # seconds: an older reading says nothing about now

# After a GEMM on its own threads, OpenBLAS's workers keep spinning (with sched_yield) for about 0.1 s (measured:
# 100 ms of CPU time after a 1024^3 float32 GEMM, OpenBLAS 0.3.31). A numba pool woken meanwhile shares the cores
# with them, and its workers in turn spin ~4 ms after the region, into the next GEMM: 512 x 1024 x 512 int8 quant
# matmul calls took 8.0 ms each with both pools against 4.6 ms with one numba thread. So for that long after such a
# GEMM (launch.host_matmul notes it) the threshold is the loaded one, as if another process held the cores.
BLAS_SPIN_SECONDS = 0.1
_load = {"t": -1.0, "loaded": False, "sample": None, "blas_threads": -1.0}
_numba_thread_fns = []


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _affinity():
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None


def _cpu_sample():
    """(monotonic seconds, CPU-seconds the whole machine has been busy, CPU-seconds of this process), or None where
    /proc/stat is not readable. This process's own threads (numba's pool, BLAS, the user's) are not contention."""
    try:
        mine = _affinity()
        busy = 0
        with open("/proc/stat", "rb") as f:
            for line in f:
                if not line.startswith(b"cpu"):
                    break
                name, *fields = line.split()
                # the per-CPU lines of the cores this process may use (a container may see the host's others)
                if name == b"cpu" or (mine is not None and int(name[3:]) not in mine):
                    continue
                ticks = [int(v) for v in fields[:8]]     # user nice system idle iowait irq softirq steal
                busy += sum(ticks) - ticks[3] - ticks[4]
        hz = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    t = os.times()
    return time.monotonic(), busy / hz, t.user + t.system


def _running_others():
    """Tasks of other processes runnable right now (/proc/loadavg's running count less this process's running
    threads), or None."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
        if running <= 1:                                 # the calling thread alone
            return 0
        ours = 0
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                    ours += f.read().rsplit(b")", 1)[1].split()[0] == b"R"
            except OSError:                             # the thread ended meanwhile
                pass
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - max(ours, 1))


def others_busy_cores():
    """How many cores other processes keep busy: the larger of (a) the machine's busy CPU time less this process's,
    over the time since the previous reading (when that is at most :data:`CONTENTION_STALE` old) and (b) the tasks
    of other processes runnable at this instant (a compile that starts between two readings). ``None`` off Linux."""
    now = _cpu_sample()
    if now is None:
        return None
    prev = _load["sample"]
    _load["sample"] = now
    instant = _running_others() or 0
    if prev is None or now[0] - prev[0] > CONTENTION_STALE:
        return instant
    wall = now[0] - prev[0]
    window = max(0.0, ((now[1] - prev[1]) - (now[2] - prev[2])) / wall) if wall > 0 else 0.0
    return max(window, instant)


def _contended(others, cores, threads):
    """Whether the pool's workers would wait for cores other processes hold: fewer than ``threads`` cores free,
    half a core of slack for sampling noise."""
    return others is not None and cores - others < threads - 0.5


def parallel_min_bytes():
    """The work (bytes moved) from which a parallel region runs on the pool: :data:`PARALLEL_MIN_BYTES`, or
    :data:`PARALLEL_MIN_BYTES_LOADED` while other processes keep busy the cores the pool needs (read at most every
    :data:`CONTENTION_WINDOW` seconds; off Linux, the 1-minute load average against the cores + 1) and for
    :data:`BLAS_SPIN_SECONDS` after a GEMM on BLAS's own threads."""
    now = time.monotonic()
    if now - _load["blas_threads"] < BLAS_SPIN_SECONDS or _others_contended(now):
        return PARALLEL_MIN_BYTES_LOADED
    return PARALLEL_MIN_BYTES


def _others_contended(now):
    """Whether other processes keep busy the cores our pool would need (read at most every CONTENTION_WINDOW)."""
    if now - _load["t"] > CONTENTION_WINDOW:
        cores = _cores()
        others = others_busy_cores()
        if others is not None:
            get = _numba_threads()[0]
            threads = get() if get is not None else cores
            _load["loaded"] = _contended(others, cores, min(threads, cores))
        else:
            try:
                _load["loaded"] = os.getloadavg()[0] > cores + 1
            except (AttributeError, OSError):
                _load["loaded"] = False
        _load["t"] = now
    return _load["loaded"]


def note_blas_threads():
    """Record that a GEMM just ran on BLAS's own threads (see :data:`BLAS_SPIN_SECONDS`)."""
    _load["blas_threads"] = time.monotonic()


def is_contended():
    """True while other processes hold the cores a thread pool would need (the reading parallel_min_bytes uses)."""
    return _others_contended(time.monotonic())


def _numba_threads():
    """(get, set) of the calling thread's numba thread count, or (None, None) without a threading layer.

    The threading layer's own C entry points once it runs (3 us a call on a loaded box, against 11-15 us for
    numba.get_num_threads / set_num_threads, which re-check the layer and the argument every time)."""
    if not _numba_thread_fns:
        fns = (None, None)
        try:
            import numba
            from numba.np.ufunc import parallel

            numba.get_num_threads()                      # starts the threading layer
            fns = (parallel._get_num_threads, parallel._set_num_threads)
            if not (callable(fns[0]) and callable(fns[1])):
                fns = (numba.get_num_threads, numba.set_num_threads)
        except Exception:  # noqa: BLE001  (e.g. NUMBA_DISABLE_JIT: nothing to limit)
            fns = (None, None)
        _numba_thread_fns[:] = fns
    return _numba_thread_fns[0], _numba_thread_fns[1]


@contextmanager
def serial_below(work_bytes):
    """Inside: numba parallel loops started by this thread run on this thread alone when ``work_bytes`` (the
    bytes the loop reads and writes, or an equivalent measure of its work) is below :func:`parallel_min_bytes`;
    otherwise on the whole pool as usual. ``numba.set_num_threads`` is per thread in numba, so the limit stays
    with this call: other threads and the user's own parallel code keep their setting, restored on exit."""
    if not PARALLEL or work_bytes >= parallel_min_bytes():
        yield
        return
    get, set_ = _numba_threads()
    prev = get() if get is not None else 1
    if prev == 1:
        yield
        return
    set_(1)
    try:
        yield
    finally:
        set_(prev)
