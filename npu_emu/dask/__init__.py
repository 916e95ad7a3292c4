"""dask.array front ends: npu-emu ops over arrays larger than memory, on one machine or a dask.distributed cluster.

Each front end splits the work where the op's result does not depend on the split (rows, MX block pairs, groups,
tokens, whole sign-bit bytes) and calls the ``npu_emu.ops`` function on every chunk, so every chunk goes through
CANN's checks and the result is bit-identical to one call on the whole array (tests/dask/ prove it per op). A
chunking that would change the result is rechunked with a :class:`RechunkWarning` (``rechunk=True``, the default)
or rejected with ``AclnnError`` 161002 (``rechunk=False``). An error in a chunk names the chunk: its block index
and its index range in the whole array. Rules per op and the cluster set-up: docs/integrations/dask.md.

Arguments that every chunk needs whole (the gather table, the matmul weight and its scales) enter the graph once as
one key, so a distributed scheduler moves them to each worker once, not once per task.
"""

import os

import dask

from npu_emu.dask.chunking import RechunkWarning  # noqa: F401 (in __all__)
from npu_emu.frontend import registry

# the op front ends come from the op declarations (kernels/<op>/op.py: dask = {name: "module:attribute"})
__all__ = sorted(["RechunkWarning", "worker_environ", "local_cluster", *registry.index("dask")])


def __getattr__(name):
    ref = registry.index("dask").get(name)
    if ref is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = registry.load(ref)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


# ---------------------------------------------------------------------------------------------------------------
# cluster set-up
# ---------------------------------------------------------------------------------------------------------------

def worker_environ(n_workers=None, threads_per_worker=1, numba_threads=None):
    """Environment for Dask worker processes so that workers x threads x numba threads fit the cores.

    numba threads per worker default to cores // (n_workers * threads_per_worker), at least 1. The nanny sets
    OMP_NUM_THREADS but not NUMBA_NUM_THREADS, so this goes through ``distributed.nanny.environ``, which the worker
    process applies first thing, before numba is imported there. (Not ``pre-spawn-environ``: the nanny writes that
    into its own process's os.environ, here the client's, and numba then refuses to compile in the client: "Cannot
    set NUMBA_NUM_THREADS to a different value once the threads have been launched".) More than one Dask thread per
    worker calls numba's parallel kernels from several threads at once, which numba's ``workqueue`` layer does not
    survive: on that layer the chunks of one process take turns (see ``_call``), so real concurrency needs tbb or
    omp (numba picks them first when installed).
    """
    cores = os.cpu_count() or 1
    n_workers = n_workers or cores
    if numba_threads is None:
        numba_threads = max(1, cores // max(1, n_workers * threads_per_worker))
    env = {"NUMBA_NUM_THREADS": str(int(numba_threads)), "OMP_NUM_THREADS": str(int(numba_threads))}
    for key in ("NUMBA_CACHE_DIR",):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def local_cluster(n_workers=None, threads_per_worker=1, numba_threads=None, **kwargs):
    """A ``dask.distributed.LocalCluster`` of worker processes (default: one per core, one thread each, numba
    threads from :func:`worker_environ`)."""
    from distributed import LocalCluster

    n_workers = n_workers or (os.cpu_count() or 1)
    env = worker_environ(n_workers, threads_per_worker, numba_threads)
    with dask.config.set({"distributed.nanny.environ": env}):
        return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True, **kwargs)
