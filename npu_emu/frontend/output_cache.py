"""Large op outputs from memory freed by earlier outputs, as the device's caching allocator reuses freed memory.

The first write to a page the process has just been given costs a page fault in which the OS zeroes the page, so
an op writing a fresh output writes every byte twice. SignBitsUnpack of 64 MiB of signs into 2 GiB of float32 on
the 2-core reference box (2026-12-06): the kernel takes 86–91 ms into pages written before and 174–181 ms into a
fresh ``np.empty``; touching the fresh pages first with the writing threads takes 91 ms by itself and changes
nothing (numpy already asks for transparent huge pages for large arrays, so the cost is the zeroing, not the
number of faults).

Below 32 MiB glibc's malloc already keeps freed memory for the next allocation (its mmap threshold rises with the
sizes freed, up to 32 MiB): a fresh 24 MiB array plus a fill took 1.11 ms against 1.07 ms for the fill of written
pages, 64 MiB 8.8 against 4.1 ms. Larger arrays are fresh pages every time.

torch_npu keeps the device memory a freed tensor held and hands it to the next allocation that fits (its caching
allocator; ``torch_npu.npu.empty_cache()`` gives it back). The front ends do the same with :func:`empty` for
outputs of :data:`MIN_BYTES` or more: the output is a view of a cached block, and the block returns to the cache
when the last array or torch tensor using its memory is gone, never before (a lease object is the base of every
view of the output). The bits an op writes do not depend on where its output lives.

What the cache may hold: ``NPU_EMU_OUTPUT_CACHE`` bytes ("0" turns it off, a size such as "512M"; default
:data:`DEFAULT_LIMIT`), and never more than half of what the machine still has available beside it, so that other
allocations keep most of it. :func:`release` (also ``torch_npu.npu.empty_cache()`` of the emulated module) frees
it all, and the memory guard frees it before it refuses a call for lack of memory. In a task of a Dask worker there
is no cache: Dask manages a worker's memory by its resident size (it spills, pauses and restarts workers), and
memory kept for reuse would count against it.
"""

import collections
import os
import sys
import threading

import numpy as np

from npu_emu.frontend import core

MIN_BYTES = 32 << 20
DEFAULT_LIMIT = 4 << 30
_GRAIN = 2 << 20          # blocks are whole huge pages, so outputs a little apart in size share a block

_lock = threading.Lock()
_free = []                             # cached blocks (uint8 arrays), the most recently freed last
_returned = collections.deque()        # blocks whose last user went away, not yet in _free
_state = {"cached": 0}                 # bytes held by _free


class _Lease:
    """The base of an output's arrays: alive while any of them is, then its block goes back to the cache."""

    __slots__ = ("block", "__array_interface__")

    def __init__(self, block, nbytes):
        self.block = block
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (block.ctypes.data, False),
                                    "version": 3}

    def __del__(self):
        # Runs wherever the last reference drops, possibly inside empty() on this thread: append (atomic), and
        # file the block only if the lock is free.
        try:
            _returned.append(self.block)
            if _lock.acquire(blocking=False):
                try:
                    _file_returned()
                finally:
                    _lock.release()
        except Exception:        # at interpreter exit the module's globals may be gone; the memory is freed anyway
            pass


def limit():
    """Bytes the cache may hold (NPU_EMU_OUTPUT_CACHE, default DEFAULT_LIMIT; 0: no cache)."""
    env = os.environ.get("NPU_EMU_OUTPUT_CACHE", "").strip()
    return core._parse_bytes(env, "NPU_EMU_OUTPUT_CACHE") if env else DEFAULT_LIMIT


def _in_dask_worker():
    dist = sys.modules.get("distributed")
    if dist is None:
        return False
    try:
        dist.get_worker()
    except ValueError:
        return False
    return True


def _file_returned():
    """Move returned blocks into the cache, dropping the oldest beyond the limit. Holds _lock."""
    if not _returned:
        return
    cap = limit()
    while _returned:
        block = _returned.popleft()
        _free.append(block)
        _state["cached"] += block.nbytes
    avail = core.available_memory()
    if avail is not None:
        cap = min(cap, avail // 2)
    while _free and _state["cached"] > cap:
        _state["cached"] -= _free.pop(0).nbytes


def _take(nbytes):
    """The smallest cached block that holds nbytes without wasting more than an eighth of it, or None. Holds _lock."""
    most = max(-(-nbytes // _GRAIN) * _GRAIN, nbytes + nbytes // 8)
    best = None
    for i, block in enumerate(_free):
        if nbytes <= block.nbytes <= most and (best is None or block.nbytes < _free[best].nbytes):
            best = i
    if best is None:
        return None
    block = _free.pop(best)
    _state["cached"] -= block.nbytes
    return block


def empty(shape, dtype):
    """np.empty(shape, dtype), from the cache when the array is MIN_BYTES or more (C order)."""
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if nbytes < MIN_BYTES or limit() == 0 or _in_dask_worker():
        return np.empty(shape, dtype)
    with _lock:
        _file_returned()
        block = _take(nbytes)
    if block is None:
        block = np.empty(-(-nbytes // _GRAIN) * _GRAIN, np.uint8)
    return np.asarray(_Lease(block, nbytes)).view(dtype).reshape(shape)


def cached_bytes():
    """Bytes the cache holds now (freed outputs waiting for reuse)."""
    with _lock:
        _file_returned()
        return _state["cached"]


def release():
    """Free every cached block; returns the bytes freed. Outputs still in use keep their memory."""
    with _lock:
        _file_returned()
        freed = _state["cached"]
        _free.clear()
        _state["cached"] = 0
    return freed
