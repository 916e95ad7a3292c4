"""A file lock around numba's on-disk cache index, so that processes compiling at the same time cannot corrupt it.

numba keeps one index file per cached function (``<function>.nbi``: signature -> data file name) next to numbered
data files (``<function>.N.nbc``: the machine code). ``IndexDataCacheFile.save`` reads the index, picks the first
number no entry uses, writes the index, then writes the data file; each write is an atomic rename, but nothing
makes the read-pick-write sequence atomic. Two processes saving different signatures of one function at the same
time both read the same index, both pick ``.1.nbc``, and if one process's index write lands last while the
other's data write lands last, the index maps one signature to the machine code of the other: a later process
loads it and computes a wrong answer without any error (numba issues #4807, #10128; reproduced in
tests/npu_emu/test_cache_lock.py). pytest-xdist workers, Dask workers and ``npu-emu compile --jobs`` all compile
npu_emu's kernels in parallel into one cache.

:func:`install` wraps ``save`` and ``flush`` in an exclusive ``flock`` and ``load`` in a shared one, on a lock file
next to the index (``<function>.nbi.lock``): the index is read, the data file chosen and both files written
while no other process can read or write that function's cache. Loads still run side by side. The lock is taken
per function and released before numba rebuilds the loaded code, so no process ever holds two of these locks
(no lock-order deadlock). It is installed once per process by :mod:`npu_emu.device.jit_options`, which every module with
cached kernels imports; it covers every numba cache of the process (other projects' functions too, harmlessly).
Where no lock file can be opened (a read-only or missing cache folder, which no process can be writing to) the
original unlocked code runs. Without ``fcntl`` (Windows) nothing is installed.
"""

import contextlib
import os

from npu_emu.device import method_hooks

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

LOCK_SUFFIX = ".lock"
_MARK = "_npu_emu_cache_lock"


@contextlib.contextmanager
def _flocked(index_path, exclusive):
    path = index_path + LOCK_SUFFIX
    fd = None
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):   # flock works on a read-only descriptor too
        try:
            fd = os.open(path, flags, 0o666)
            break
        except OSError:
            continue
    if fd is None:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        except OSError:   # a file system without flock (ENOLCK): numba's own behaviour, unlocked
            pass
        yield
    finally:
        os.close(fd)   # closing the last descriptor of the open file releases the lock


def install():
    """Wrap numba's ``IndexDataCacheFile.save/flush`` (exclusive) and ``load`` (shared) in the lock; idempotent.
    Returns True when the lock is in place."""
    if fcntl is None:
        return False
    from numba.core import caching

    def locked_save(save):
        def save_locked(self, key, data):
            with _flocked(self._index_path, True):
                return save(self, key, data)
        return save_locked

    def locked_load(load):
        def load_locked(self, key):
            with _flocked(self._index_path, False):
                return load(self, key)
        return load_locked

    def locked_flush(flush):
        def flush_locked(self):
            with _flocked(self._index_path, True):
                return flush(self)
        return flush_locked

    return method_hooks.wrap(caching.IndexDataCacheFile, _MARK, save=locked_save, load=locked_load,
                             flush=locked_flush)


def uninstall():
    """Put numba's unlocked methods back (the race test uses it to show what the lock prevents)."""
    from numba.core import caching

    method_hooks.unwrap(caching.IndexDataCacheFile, _MARK, "save", "load", "flush")


def installed():
    from numba.core import caching

    return method_hooks.wrapped(caching.IndexDataCacheFile, _MARK)
