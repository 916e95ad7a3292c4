"""Suite-wide pytest settings."""

import os


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml's addopts): one worker per core this process may use, at most 4; each worker
    holds numba, numpy and the compiled kernels (about 1 GB), and a box with many cores gains little past four."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))
