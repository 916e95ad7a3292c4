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

# ... and to let npu_emu's own functions load the kernels a wheel built with NPU_EMU_BUILD_KERNELS=1 ships
# (npu_emu/device/shipped_kernels.py; other functions' cache loads are untouched)
from npu_emu.device import shipped_kernels  # noqa: E402

shipped_kernels.install()

# --------------------------------------------------------------------------------------------------------------
# Small work on the calling thread (docs/device/launch.md, "Host GEMMs and thread pools")
# --------------------------------------------------------------------------------------------------------------

# Every parallel region wakes the pool's workers and waits for the last of them. With cores free that costs ~10 us;
# on an oversubscribed box a woken worker waits for a time slice: median 22-31 ms per region measured on the 2-core
# box at load 10-15 (the DEQ8 kernel at 1024x1024: 32 ms on the pool, 0.7 ms on the calling thread). So a region
# that moves fewer bytes than the threshold below runs on the calling thread; the threshold is higher while the
# box has more runnable tasks than cores (the 1-minute load average, read at most once a second).
PARALLEL_MIN_BYTES = 1 << 20            # cores free: ~0.1-1 ms of emulated work on one thread
PARALLEL_MIN_BYTES_LOADED = 64 << 20    # load average > cores + 1: ~10-50 ms, against a time slice per region

_load = {"t": -1.0, "loaded": False}
_numba_thread_fns = []


def _cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parallel_min_bytes():
    """The work (bytes moved) from which a parallel region runs on the pool: :data:`PARALLEL_MIN_BYTES`, or
    :data:`PARALLEL_MIN_BYTES_LOADED` while the 1-minute load average exceeds the usable cores + 1 (our own
    threads alone never get there)."""
    now = time.monotonic()
    if now - _load["t"] > 1.0:
        try:
            _load["loaded"] = os.getloadavg()[0] > _cores() + 1
        except (AttributeError, OSError):
            _load["loaded"] = False
        _load["t"] = now
    return PARALLEL_MIN_BYTES_LOADED if _load["loaded"] else PARALLEL_MIN_BYTES


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
