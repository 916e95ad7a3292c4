"""Thread pools (issue 35, part 1): an op's time with numba's default thread count against one numba thread, for a
sweep of int8 quant-matmul shapes (each of m, k, n in 16 ... 1024) and for every demo case at its --small shape.

An op alternating numpy's BLAS and numba's parallel loops used to make the two pools take turns on the cores
(64x128x64 int8: 8 ms by default, 0.47 ms with NUMBA_NUM_THREADS=1). npu_emu.device.launch now keeps small GEMMs
on the calling thread (host_matmul) and small parallel regions on the calling thread (serial_below); the trackers
below hold it: default / one-thread median (goal <= 1.1), lower is better. The two settings are timed in one process,
interleaved (default, one thread, default, ...), medians of each, so that a load change on a shared box hits both;
"one thread" is ``numba.set_num_threads(1)`` for the calling thread, what NUMBA_NUM_THREADS=1 gives the pool.
"""

import time

import numba
import numpy as np

from npu_emu.kernels.quant_matmul.api import npu_quant_matmul

SWEEP = [16, 128, 1024]


def interleaved_medians(fn, repeats):
    """(median seconds with the default numba threads, median with one numba thread), timed alternately."""
    default, one = [], []
    full = numba.get_num_threads()
    for _ in range(repeats):
        for threads, into in ((full, default), (1, one)):
            numba.set_num_threads(threads)
            try:
                t0 = time.perf_counter()
                fn()
                into.append(time.perf_counter() - t0)
            finally:
                numba.set_num_threads(full)
    return float(np.median(default)), float(np.median(one))


def _repeats(seconds_per_call):
    return int(min(41, max(5, 1.0 / max(seconds_per_call, 1e-6))))


class QuantMatmulSweep:
    """int8 x int8 -> bf16 with per-token and per-channel float32 scales (the issue's measurement)."""

    params = (SWEEP, SWEEP, SWEEP)
    param_names = ["m", "k", "n"]
    timeout = 300
    number = 1
    repeat = (3, 21, 20.0)

    def setup(self, m, k, n):
        rng = np.random.default_rng(0)
        x1 = rng.integers(-128, 128, (m, k), dtype=np.int8)
        x2 = rng.integers(-128, 128, (k, n), dtype=np.int8)
        scale = rng.uniform(0.0005, 0.005, n).astype(np.float32)
        p1 = rng.uniform(0.5, 2.0, m).astype(np.float32)
        self.call = lambda: npu_quant_matmul(x1, x2, scale, pertoken_scale=p1, output_dtype="bfloat16")
        for _ in range(3):                               # compile / load the cache, warm the memo
            self.call()
        t0 = time.perf_counter()
        self.call()
        self.reps = _repeats(time.perf_counter() - t0)

    def time_default_threads(self, m, k, n):
        self.call()

    def track_default_over_one_thread(self, m, k, n):
        default, one = interleaved_medians(self.call, self.reps)
        return default / one
    track_default_over_one_thread.unit = "x one numba thread"


class WarmCall:
    """The part's single figure: one warm int8 64x128x64 call (per-token and per-channel float32 scales, bf16 out),
    with the default threads; goal <= 300 us on the 2-core box (docs/device/launch.md, "What a warm call costs")."""

    number = 50
    repeat = (3, 21, 20.0)

    def setup(self):
        rng = np.random.default_rng(0)
        x1 = rng.integers(-128, 128, (64, 128), dtype=np.int8)
        x2 = rng.integers(-128, 128, (128, 64), dtype=np.int8)
        scale = rng.uniform(0.0005, 0.005, 64).astype(np.float32)
        p1 = rng.uniform(0.5, 2.0, 64).astype(np.float32)
        self.call = lambda: npu_quant_matmul(x1, x2, scale, pertoken_scale=p1, output_dtype="bfloat16")
        for _ in range(3):                               # compile / load the cache, warm the memo
            self.call()

    def time_quant_matmul_64x128x64(self):
        self.call()


def _demo_keys():
    from npu_emu.cli import demo

    return list(demo.BUILDERS)


class DemoSmall:
    """Every demo case at its --small shape (the op call alone, not its golden)."""

    params = (_demo_keys(),)
    param_names = ["case"]
    timeout = 600
    number = 1
    repeat = (3, 11, 30.0)

    def setup(self, key):
        from npu_emu.cli import demo

        b = demo.BUILDERS[key]
        try:
            case = b.build(b.small, np.random.default_rng(0))
        except demo.Unavailable as exc:
            raise NotImplementedError(str(exc)) from None
        self.call = case.run
        self.call()
        t0 = time.perf_counter()
        self.call()
        self.reps = _repeats(time.perf_counter() - t0)

    def time_default_threads(self, key):
        self.call()

    def track_default_over_one_thread(self, key):
        default, one = interleaved_medians(self.call, self.reps)
        return default / one
    track_default_over_one_thread.unit = "x one numba thread"
