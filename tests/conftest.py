"""Suite-wide pytest settings."""

import os


def pytest_configure(config):
    # Each xdist worker has its own numba OpenMP pool as wide as the machine. With libgomp's default wait policy a
    # pool's threads spin for a while after every parallel kernel, on CPU the other worker is compiling or running
    # on; passive threads sleep at once. The bits do not depend on it. Whole suite with a warm cache on the 2-core
    # box, 2026-12-05: 211.8 / 211.4 s by default, 201.4 s passive. Runs in the controller before the workers
    # start (they inherit it) and before any OpenMP runtime is loaded; an OMP_WAIT_POLICY you set wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml's addopts): one worker per core this process may use, at most 4; each worker
    holds numba, numpy and the compiled kernels (about 1 GB), and a box with many cores gains little past four."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))
