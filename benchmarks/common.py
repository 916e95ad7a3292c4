"""Shared pieces of the asv suite: fixed-seed input builders, thread selection and the two roofline metrics
(docs/contributing/numba_rules.md §5.2, §6.3; docs/device/platforms.md §4).

Every tracker returns a "lower is better" number, because asv treats lower as better for every benchmark type.
"""

import timeit

import numba
import numpy as np

# Host memory roofline: copy rate (read + write) of one thread on the reference 2-core box
# (docs/contributing/numba_rules.md §5.2).
HOST_COPY_BPS_PER_THREAD = 25e9

# Device rooflines are the HBM bandwidths of npu_emu.device.platforms (docs/device/platforms.md §4): 910B2 1.6e12 B/s,
# 950PR 1.6e12 B/s, 950DT 4.0e12 B/s. Benchmarks name the devices by these short keys.
DEVICES = {"910B2": "ascend910b2", "950PR": "ascend950pr", "950DT": "ascend950dt"}

THREADS = [1, 2]


def use_threads(threads):
    """Set the numba thread count for this benchmark; a count above NUMBA_NUM_THREADS skips the combination
    (asv treats NotImplementedError raised in setup as "skipped")."""
    if threads > numba.config.NUMBA_NUM_THREADS:
        raise NotImplementedError(f"NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS} < {threads}")
    numba.set_num_threads(threads)


def normal_f32(n, scale=64.0, seed=0):
    """N(0, 1)·scale float32 values with the special cases of docs/contributing/numba_rules.md §5.4 at the front
    (0, -0, ±Inf, NaN, 448, 464, 465)."""
    x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32)
    x *= np.float32(scale)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 465.0], np.float32)
    x[: specials.size] = specials[: min(n, specials.size)]
    return x


def random_codes(n, bits=8, seed=1):
    """Uniformly random codes of a ``bits``-bit format, one per byte."""
    return np.random.default_rng(seed).integers(0, 1 << bits, n, dtype=np.uint8)


def best_seconds(fn, repeat=5):
    """Best wall-clock time of ``repeat`` single calls (wall clock, not process time: numba runs threads)."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def interleaved_best(fn_a, fn_b, repeat):
    """(best seconds of fn_a, best seconds of fn_b) over ``repeat`` alternating single calls: a load change on the
    shared box hits both sides alike."""
    a, b = [], []
    for _ in range(repeat):
        a.append(timeit.timeit(fn_a, number=1))
        b.append(timeit.timeit(fn_b, number=1))
    return min(a), min(b)


def host_roofline_seconds(bytes_moved, threads):
    return bytes_moved / (HOST_COPY_BPS_PER_THREAD * threads)


def device_roofline_seconds(bytes_moved, device, flops=0):
    from npu_emu.device import platforms

    return platforms.get(DEVICES[device]).device_seconds(bytes_moved, flops)
