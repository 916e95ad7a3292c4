"""Per-core kernel launch and the UB view (docs/device/launch.md; docs/contributing/numba_rules.md §2.3, §3).

A kernel is an ``@njit(parallel=PARALLEL, cache=True, error_model='numpy')`` function (``npu_emu.device.jit_options``)
``kernel(block_dim, td, ub_size, *gm_buffers)`` whose body is ``for block_idx in prange(block_dim):`` - one
iteration per AI Core / vector core, each with its own UB scratch ``np.empty(ub_size, np.uint8)`` and typed
LocalTensor views of it from :func:`ub_view`. Cores write disjoint GM ranges (the validator proves it from the
op's access pattern), so results do not depend on the host thread count.

:func:`launch` checks the arguments, validates the tiling against the op's :class:`AccessPattern` (on by
default) and calls the kernel. Nothing here compiles at import time.
"""

import threading
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.extending import overload

from npu_emu.device import jit_options  # (importing it installs the numba cache lock before any njit below compiles)
from npu_emu.device import memo
from npu_emu.device.jit_options import (PARALLEL_MIN_BYTES, is_contended, note_blas_threads, parallel_min_bytes,
                                        serial_below)
from npu_emu.errors import ACLNN_ERR_INNER, ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.device.tiling_data import TilingData
from npu_emu.device.validate import MAX_BLOCK_DIM, AccessPattern, GmOverrun, ValidationReport, validate as validate_access

# GmOverrun (defined with the access patterns it is computed from) is re-exported: the trace record of the launch.
__all__ = ["ub_view", "launch", "UbViewError", "CheckedAccess", "check_access", "checked_access", "GmOverrun",
           "host_matmul", "single_blas_thread", "BLAS_THREADED_MACS", "serial_below", "PARALLEL_MIN_BYTES",
           "parallel_min_bytes", "host_column_split", "run_host_parts"]


def _itemsize(dtype):
    """Bytes per element of a numpy scalar type or dtype (Python path, used when NUMBA_DISABLE_JIT=1)."""
    return np.dtype(dtype).itemsize


@overload(_itemsize, inline="always")
def _itemsize_nb(dtype):
    # Resolved at typing time: the element size is a compile-time constant of the view's dtype argument.
    ty = getattr(dtype, "dtype", None)
    bits = getattr(ty, "bitwidth", None)
    if bits is None or bits % 8:
        return None
    size = bits // 8
    return lambda dtype: size


class UbViewError(IndexError):
    """A LocalTensor view that does not fit the core's UB (args: byte_offset, nbytes, itemsize, ub_size)."""

    def __str__(self):
        if len(self.args) != 4:
            return super().__str__()
        offset, nbytes, itemsize, ub_size = self.args
        return (f"ub_view: bytes [{offset}, {offset + nbytes}) with element size {itemsize} do not fit this "
                f"core's UB of {ub_size} bytes at a multiple of the element size; the kernel's buffer offsets "
                f"disagree with its tiling (run with validate=True and an access pattern)")


@njit(inline="never", cache=True)
def _ub_view_error(byte_offset, nbytes, itemsize, ub_size):
    # Kept out of line: a `raise` inlined into a prange body stops numba from parallelising the loop
    # ("more than one entry to or exit from the loop"); a call that may raise does not. The message is
    # formatted in Python by UbViewError: building strings in njit costs seconds of compile time.
    raise UbViewError(byte_offset, nbytes, itemsize, ub_size)


@njit(inline="always", cache=True)
def ub_view(ub, byte_offset, dtype, count):
    """LocalTensor<dtype> of ``count`` elements at ``byte_offset`` of a core's UB byte buffer.

    A view, not a copy: writes through it land in ``ub``. The offset must be a multiple of the element size
    (as the C compiler aligns LocalTensor data); out-of-range views raise UbViewError (an IndexError) instead of
    silently shortening (numba does not bounds-check indexing, so a short view would corrupt memory).

    Note for kernels: numba's cache tracks only the kernel's own file, so after editing this function clear
    the numba cache of the kernels that inline it.
    """
    size = _itemsize(dtype)
    nbytes = count * size
    if byte_offset < 0 or count < 0 or byte_offset + nbytes > ub.size or byte_offset % size != 0:
        # int64 arguments: one compiled signature for every caller (each mix of int types compiled its own)
        _ub_view_error(np.int64(byte_offset), np.int64(nbytes), np.int64(size), np.int64(ub.size))
    return ub[byte_offset:byte_offset + nbytes].view(dtype)


def _positive_int(value, name, hi=None):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1 or (
            hi is not None and value > hi):
        upper = f", <= {hi}" if hi is not None else ""
        raise AclnnError(ACLNN_ERR_INNER, f"launch: {name}={value!r}; use an int >= 1{upper}")
    return int(value)


@dataclass(frozen=True)
class CheckedAccess:
    """What a launch still needs of an :class:`AccessPattern` once it has been checked: the GM buffer
    declarations, the indices of the buffers the kernel writes and the tolerated over-runs (None: not validated).
    Small and immutable, so that it is computed once per tiling (:func:`checked_access`) and shared by repeats."""

    block_dim: int
    buffers: tuple
    written: frozenset
    overruns: tuple = None

    @property
    def validated(self):
        return self.overruns is not None


def check_access(access, *, ub_size, validate=True, what="kernel tiling", problems=()):
    """Validate ``access`` (when ``validate``) and summarise it as a :class:`CheckedAccess`.

    ``problems``: sentences about tiling fields the access pattern cannot show (an op's own checks); they are
    reported first, together with the pattern's failures, as one AclnnError 561002 naming ``what``.
    """
    overruns = None
    if validate:
        report = validate_access(access, ub_size=ub_size)
        if problems:
            report.errors[:0] = [f"tiling data: {p}" for p in problems]
            report.counts["tiling data"] = len(problems)
        report.raise_if_failed(what)
        overruns = tuple(report.overruns)
    return CheckedAccess(access.block_dim, access.buffers, access.written_buffers(), overruns)


def checked_access(key, build, *, ub_size, validate=True, what="kernel tiling", problems=None):
    """:func:`check_access` of ``build()`` (an AccessPattern) with ``problems()`` (a list of sentences, or None),
    computed once per ``key`` (npu_emu.device.memo). ``key`` must hold everything ``build`` and ``problems`` read: the
    op, its TilingResult (struct bytes, block_dim), the GM sizes and dtypes, every switch that changes an access,
    and input values that do (e.g. a gather's indices). A rejected tiling is not stored: it is built, validated
    and rejected again on every call."""

    def compute():
        extra = problems() if (validate and problems is not None) else ()
        return check_access(build(), ub_size=ub_size, validate=validate, what=what, problems=extra)

    return memo.cached(("checked_access", key, ub_size, bool(validate), what), compute)


_FLOAT16 = np.dtype(np.float16)


def _check_buffers(gm_buffers, access):
    for i, buf in enumerate(gm_buffers):
        dt = buf.dtype if type(buf) is np.ndarray else None
        if dt is not None and buf.flags.c_contiguous and (dt.kind in "iub" or (dt.kind == "f" and dt.itemsize > 2)):
            continue                                   # the common case in few steps (9 buffers: 10 -> 5 us)
        label = access.buffers[i].name if access is not None and i < len(access.buffers) else f"#{i}"
        if not isinstance(buf, np.ndarray):
            raise AclnnError(ACLNN_ERR_INNER, f"launch: GM buffer {label} is a {type(buf).__name__}; pass a "
                                              f"numpy array")
        if not buf.flags.c_contiguous:
            raise AclnnError(ACLNN_ERR_INNER, f"launch: GM buffer {label} is not C-contiguous; pass "
                                              f"np.ascontiguousarray(...) (kernels index GM flat)")
        if buf.dtype.kind not in "biuf" or buf.dtype == _FLOAT16:
            raise AclnnError(ACLNN_ERR_INNER, f"launch: GM buffer {label} has dtype {buf.dtype}, which numba "
                                              f"kernels cannot take; pass its bits (.view(np.uint16) for "
                                              f"16-bit floats, .view(np.uint8) for 8-bit and packed formats)")
    if access is None:
        return
    if len(gm_buffers) != len(access.buffers):
        names = ", ".join(b.name for b in access.buffers)
        raise AclnnError(ACLNN_ERR_INNER, f"launch: {len(gm_buffers)} GM buffers passed but the access pattern "
                                          f"declares {len(access.buffers)} ({names}), in kernel argument order")
    written = access.written if isinstance(access, CheckedAccess) else access.written_buffers()
    for i, (arr, decl) in enumerate(zip(gm_buffers, access.buffers)):
        if arr.dtype != decl.dtype or arr.size != decl.size:
            raise AclnnError(ACLNN_ERR_INNER, f"launch: GM buffer {decl.name} is {arr.dtype}[{arr.size}] but the "
                                              f"access pattern declares {decl.dtype}[{decl.size}]")
        if i in written and not arr.flags.writeable:
            raise AclnnError(ACLNN_ERR_INNER, f"launch: GM buffer {decl.name} is written by the kernel but the "
                                              f"array is read-only; pass a writeable array")
        if i not in written and not decl.output and arr.flags.writeable:
            # an error of the launching code, not the user's: the same launch without an access pattern
            # (validate=False) must hand the kernel the same types
            raise AclnnError(ACLNN_ERR_INNER, f"launch: GM buffer {decl.name} is only read by the kernel but was "
                                              f"passed writeable; pass read_only({decl.name}) "
                                              f"(npu_emu.device.read_only), so that every call shares one kernel")


def launch(kernel, block_dim, tiling, *gm_buffers, ub_size, access=None, validate=True, work=None):
    """Run ``kernel(block_dim, tiling.to_numba(), ub_size, *gm_buffers)`` on ``block_dim`` emulated cores.

    ``access`` (an :class:`~npu_emu.device.validate.AccessPattern`) declares the GM buffers in argument order and
    the kernel's per-core/per-tile GM ranges and UB bytes. With ``validate=True`` (default) a tiling that
    reads or writes outside a buffer, writes an element twice, leaves output elements unwritten or
    overflows ``ub_size`` raises AclnnError 561002 naming core, tile, buffer and range, and the kernel does
    not run. Buffer counts, dtypes and sizes are checked against ``access`` even with ``validate=False``.
    ``access`` may also be a :class:`CheckedAccess` (the pattern already checked, e.g. by :func:`checked_access`);
    with ``validate=True`` it must be a validated one. Every buffer the kernel only reads is passed as a read-only
    view (:func:`npu_emu.device.read_only.read_only`), with or without ``access``; with it, a writeable one that
    ``access`` neither declares an output nor writes raises AclnnError 561000.

    The kernel runs on numba's thread pool when its GM buffers total at least
    :func:`~npu_emu.device.jit_options.parallel_min_bytes` (1 MiB; 64 MiB while the box is oversubscribed), on
    the calling thread otherwise (:func:`serial_below`; same results either way). ``work``: the bytes to weigh
    instead, for a kernel whose work is not proportional to its GM traffic (e.g. a cube computed from its
    operands: 4·m·k·n).

    Returns the :class:`~npu_emu.device.validate.ValidationReport` (its ``overruns`` are the trace's ``gm_overrun``),
    or None when nothing was validated. Kernels write their outputs in place; their return value is unused.
    """
    block_dim = _positive_int(block_dim, "block_dim", MAX_BLOCK_DIM)
    ub_size = _positive_int(ub_size, "ub_size")
    if not isinstance(tiling, TilingData):
        raise AclnnError(ACLNN_ERR_INNER, f"launch: tiling is a {type(tiling).__name__}; pass the op's "
                                          f"TilingData instance")
    if access is not None:
        if not isinstance(access, (AccessPattern, CheckedAccess)):
            raise AclnnError(ACLNN_ERR_INNER, f"launch: access is a {type(access).__name__}; pass an "
                                              f"AccessPattern or a CheckedAccess (or None)")
        if validate and isinstance(access, CheckedAccess) and not access.validated:
            raise AclnnError(ACLNN_ERR_INNER, "launch: validate=True with a CheckedAccess that was not validated; "
                                              "check it with validate=True first")
        if access.block_dim != block_dim:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                             f"launch: block_dim={block_dim} but the access pattern describes "
                             f"{access.block_dim} cores; both must come from the same tiling")
    _check_buffers(gm_buffers, access)

    report = None
    if validate and isinstance(access, CheckedAccess):
        report = ValidationReport(overruns=list(access.overruns))
    elif validate and access is not None:
        report = validate_access(access, ub_size=ub_size)
        report.raise_if_failed(f"{getattr(kernel, '__name__', 'kernel')} tiling")

    td = tiling.to_numba()
    try:
        with serial_below(sum(b.nbytes for b in gm_buffers) if work is None else work):
            kernel(block_dim, td, ub_size, *gm_buffers)
    except SystemError as exc:
        # An exception raised inside a prange body surfaces as SystemError with the real error as its cause.
        if exc.__cause__ is None:
            raise
        cause = exc.__cause__
    except IndexError as exc:
        # Serial kernels (NPU_EMU_SERIAL_KERNELS=1, the bounds-checked run) raise the kernel's own error.
        cause = exc
    else:
        return report
    raise AclnnError(ACLNN_ERR_INNER, f"kernel {getattr(kernel, '__name__', kernel)!s} failed: {cause}") from cause


# --------------------------------------------------------------------------------------------------------------
# The host-side cube stage: BLAS without a second thread pool (docs/device/launch.md, "Host GEMMs and thread pools")
# --------------------------------------------------------------------------------------------------------------

# A GEMM of at least this many multiply-adds keeps BLAS's own threads: their start-up and the spinning they leave
# behind are then small against the GEMM they halve. Below it the GEMM runs on the calling thread only. While other
# processes hold the cores (jit_options.is_contended), BLAS's workers wait for time slices as numba's do: only a GEMM
# of 16 times as much work keeps them.
BLAS_THREADED_MACS = 1 << 27
BLAS_THREADED_MACS_LOADED = 1 << 31

_blas_lock = threading.Lock()
_blas_state = {"libs": None, "depth": 0, "saved": ()}


def _blas_libs():
    """threadpoolctl's controllers of the BLAS libraries loaded in this process (found once; [] without
    threadpoolctl or without a BLAS it knows)."""
    libs = _blas_state["libs"]
    if libs is None:
        try:
            from threadpoolctl import ThreadpoolController

            libs = list(ThreadpoolController().select(user_api="blas").lib_controllers)
        except Exception:  # noqa: BLE001  (no threadpoolctl, or a BLAS it cannot drive: nothing to scope)
            libs = []
        _blas_state["libs"] = libs
    return libs


class _SingleBlasThread:
    """The context manager :func:`single_blas_thread` returns (a class, not a generator: a small GEMM pays about
    half the entry and exit time)."""

    __slots__ = ("libs",)

    def __enter__(self):
        libs = _blas_libs()
        if not libs or threading.get_ident() != threading.main_thread().ident:
            self.libs = None
            return self
        self.libs = libs
        with _blas_lock:
            if _blas_state["depth"] == 0:
                saved = []
                for lib in libs:
                    n = lib.get_num_threads()
                    saved.append(n)
                    if n != 1:
                        lib.set_num_threads(1)
                _blas_state["saved"] = tuple(saved)
            _blas_state["depth"] += 1
        return self

    def __exit__(self, *exc):
        if self.libs is None:
            return False
        with _blas_lock:
            _blas_state["depth"] -= 1
            if _blas_state["depth"] == 0:
                for lib, n in zip(self.libs, _blas_state["saved"]):
                    if n != 1:
                        lib.set_num_threads(n)
        return False


def single_blas_thread():
    """Inside: the process's BLAS libraries run each call on the calling thread only; on exit their thread
    counts are what they were (the user's setting, whatever it is, is restored).

    Why: numba's parallel loops run on numba's OpenMP pool and numpy's GEMMs on OpenBLAS's pthread pool; each
    pool's workers spin for a while after their work, so a host path that alternates a GEMM and a ``prange``
    makes the two pools take turns on the cores (on two cores a 64x128x64 int8 matmul took 8 ms instead of
    0.4 ms). Re-entrant. Acts in the main thread only: OpenBLAS ignores ``openblas_set_num_threads`` from other
    threads once the main thread has set a count (measured with OpenBLAS 0.3.31), so a scope there could neither
    be relied on nor restore the user's count; calls from other threads run BLAS as before. Costs a few us.
    """
    return _SingleBlasThread()


def host_matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)`` for a kernel's host-side cube stage (exact float GEMMs standing in for the
    Mmad of every base block, e.g. kernels/quant_matmul/accum.py).

    A GEMM below :data:`BLAS_THREADED_MACS` multiply-adds runs inside :func:`single_blas_thread`, so that the
    op's parallel loops before and after it find the cores free; a larger one keeps BLAS's threads. Results are
    those of np.matmul (the callers use BLAS only where every summation order gives the same value).
    """
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    batch = 1
    if a.ndim > 2 or b.ndim > 2:                      # (np.broadcast_shapes costs 5 us)
        for d in np.broadcast_shapes(a.shape[:-2], b.shape[:-2]):
            batch *= d
    macs = batch * m * k * n
    if macs >= BLAS_THREADED_MACS and (macs >= BLAS_THREADED_MACS_LOADED or not is_contended()):
        try:
            return np.matmul(a, b, out=out)
        finally:
            note_blas_threads()
    with single_blas_thread():
        return np.matmul(a, b, out=out)


# --------------------------------------------------------------------------------------------------------------
# A host GEMM stage split by columns over host threads, each GEMM on one BLAS thread
# --------------------------------------------------------------------------------------------------------------

# Why not BLAS's own threads for a long run of GEMMs (accum.int_matmul_groups' exact k-chunks of every expert
# group): OpenBLAS's workers synchronise inside every GEMM, so on a loaded box each call waits for the slowest
# worker's time slice. Measured on the 2-core box at load average 6, 8 groups of 512 x 7168 x 2048 in 1024-long
# k-chunks: BLAS's 2 threads 1.8x one float32 GEMM of the same FLOPs, one BLAS thread 1.1x. Two host threads, each
# running whole GEMMs on one BLAS thread through all groups (one join per call), keep both cores busy on an idle
# box; on the loaded box (load average 7) they took 1.22x the float32 GEMM's CPU time against 1.14x for one thread
# at no gain in wall time, so while other processes hold the cores the calling thread runs alone. Column ranges:
# every part has the same work whatever the group sizes. Below HOST_SPLIT_MACS the split loses to BLAS's own threads
# on an idle box (two cores, medians of 31 int8 quant-matmul calls: 1024 x 1024 x 512 took 13.1-15.3 ms split
# against 11.5 ms, 512 x 1024 x 1024 12.4-12.6 against 10.3-10.4, 1024 x 1024 x 128 4.0-5.1 against 3.4-3.5; from
# 2^30 on they are even or the split is ahead: 2048 x 512 x 2048 44-46 against 48 ms).
HOST_SPLIT_ALIGN = 64
HOST_SPLIT_MACS = 1 << 30
_host_pool = {"pool": None, "workers": 0}
_host_pool_lock = threading.Lock()


def host_column_split(n, macs, align=HOST_SPLIT_ALIGN):
    """Column ranges ``[(n0, n1), ...]`` of ``n`` columns for :func:`run_host_parts`: one range (the calling thread,
    :func:`host_matmul`'s rules) below :data:`HOST_SPLIT_MACS` multiply-adds, while other processes hold the
    cores (``jit_options.is_contended``), outside the main thread (the BLAS
    thread count cannot be scoped there), without threadpoolctl, or with one numba thread (the user's thread
    knob); else numba's thread count (at most the cores) ranges of multiples of ``align`` columns."""
    if macs < HOST_SPLIT_MACS or n < 2 * align or threading.current_thread() is not threading.main_thread():
        return [(0, n)]
    if is_contended():              # measured: one thread's GEMMs then take less CPU time and no more wall time
        return [(0, n)]
    get = jit_options._numba_threads()[0]
    threads = min(get() if get is not None else 1, jit_options._cores(), n // align)
    if threads < 2 or not _blas_libs():
        return [(0, n)]
    step = -(-(n // align) // threads) * align
    return [(n0, min(n, n0 + step)) for n0 in range(0, n, step)]


def _pool(workers):
    from concurrent.futures import ThreadPoolExecutor

    with _host_pool_lock:
        if _host_pool["workers"] < workers:
            if _host_pool["pool"] is not None:
                _host_pool["pool"].shutdown(wait=True)
            _host_pool["pool"] = ThreadPoolExecutor(workers, thread_name_prefix="npu_emu_host")
            _host_pool["workers"] = workers
        return _host_pool["pool"]


def run_host_parts(fn, parts):
    """``[fn(*part) for part in parts]``; with more than one part the first runs on the calling thread and the
    others on a host thread pool, all inside :func:`single_blas_thread` (each GEMM of ``fn`` on its own thread: fn
    calls ``np.matmul``, not :func:`host_matmul`). Every part has finished when this returns, also on an error."""
    if len(parts) == 1:
        return [fn(*parts[0])]
    pool = _pool(len(parts) - 1)
    with single_blas_thread():
        futures = [pool.submit(fn, *p) for p in parts[1:]]
        try:
            first = fn(*parts[0])
        finally:
            rest = [f.result() for f in futures]         # waits for all (re-raises the first error)
    return [first] + rest
