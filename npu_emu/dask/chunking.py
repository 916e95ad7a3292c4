"""What every Dask front end of an op (``kernels/<op>/dask_chunks.py``, declared in op.py) is built from: the
chunk -> ``npu_emu.ops`` call with the chunk named in errors, rechunking to an op's split rule, two-output blocks,
whole arguments sent once. The rules themselves: docs/integrations/dask.md."""

import threading
import warnings

import dask
import dask.array as da
import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

class RechunkWarning(UserWarning):
    """An input's chunks did not fit the op's split rule and were changed (the message says how)."""


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def _ops(name):
    import npu_emu.ops

    return getattr(npu_emu.ops, name)


def _where(op, block, starts, sizes):
    rng = ", ".join(f"{s}:{s + n}" for s, n in zip(starts, sizes))
    return f"npu_emu.dask.{op}: chunk {tuple(block)} (index range [{rng}])"


_LAYER = {}
_SERIAL = threading.Lock()


def _workqueue():
    """True when this process's numba kernels run on the ``workqueue`` threading layer: it aborts the process when
    two threads launch parallel kernels at once (dask's threaded scheduler, a worker with nthreads > 1). numba
    takes tbb, then omp, then workqueue, unless NUMBA_THREADING_LAYER names one."""
    if "wq" not in _LAYER:
        import importlib

        import numba

        layer = numba.config.THREADING_LAYER
        if layer == "workqueue":
            _LAYER["wq"] = True
        else:
            found = False
            for mod in ("numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"):
                try:
                    importlib.import_module(mod)
                    found = True
                    break
                except ImportError:
                    pass
            _LAYER["wq"] = not found
    return _LAYER["wq"]


def _call(op, fn_name, where, *args, **kwargs):
    """One chunk's call through npu_emu.ops; its error keeps the CANN status and names the chunk. On the
    workqueue layer, calls from several threads of one process take turns (each still uses every numba thread)."""
    fn = _ops(fn_name)
    try:
        if threading.active_count() > 1 and _workqueue():
            with _SERIAL:
                return fn(*args, **kwargs)
        return fn(*args, **kwargs)
    except AclnnError as e:
        raise AclnnError(e.status, f"{where}: {e.message}") from e


def _chunk_kwargs(op, kwargs):
    """The keywords each chunk's call gets. Those that describe or return one whole call have no per-chunk
    meaning and are refused."""
    whole = {"tiling": "a user tiling describes one whole call; each chunk gets the host tiling of its own shape",
             "block_dim": "it goes with a user tiling, which describes one whole call",
             "trace": "a trace describes one call; run npu_emu.ops on a chunk to see one",
             "out": "the result is a dask array; store it with dask.array.store"}
    for key, why in whole.items():
        if kwargs.get(key) is not None and kwargs.get(key) is not False:
            raise _bad(f"npu_emu.dask.{op}: {key}= is not taken here ({why})")
    return {k: v for k, v in kwargs.items() if k not in whole}


def _starts(chunks):
    return [tuple(np.cumsum((0,) + c[:-1]).tolist()) for c in chunks]


def _block_info(block_info):
    """(block index, starts, sizes) of the first input from map_blocks' block_info."""
    info = block_info[0]
    loc = info["array-location"]
    return info["chunk-location"], [a for a, _ in loc], [b - a for a, b in loc]


def _as_dask(x, name):
    if isinstance(x, da.Array):
        return x
    if isinstance(x, np.ndarray):
        return da.from_array(x, chunks=x.shape or (), name=False)
    raise _bad(f"{name} must be a dask.array.Array or a numpy array, not {type(x).__name__}")


def _fix_axis(x, ax, ok, rule, rechunk, what):
    """Chunks of ``x`` along ``ax`` accepted by ``ok(sizes)``, else ``rule(sizes) -> sizes`` (warning) or an error."""
    sizes = x.chunks[ax]
    if ok(sizes):
        return x
    new = tuple(rule(sizes))
    if not rechunk:
        raise _bad(f"{what}: chunks {sizes} along axis {ax} do not fit the split rule; rechunk to {new} "
                   f"(or pass rechunk=True)")
    warnings.warn(f"{what}: chunks {sizes} along axis {ax} rechunked to {new}", RechunkWarning, stacklevel=3)
    chunks = list(x.chunks)
    chunks[ax] = new
    return x.rechunk(tuple(chunks))


def _multiple_rule(unit):
    """Chunks that are multiples of ``unit`` except the last (sizes rounded up to the unit, at least one unit)."""
    def ok(sizes):
        return all(s % unit == 0 for s in sizes[:-1])

    def rule(sizes):
        total = sum(sizes)
        step = max(unit, -(-max(sizes) // unit) * unit)
        out = [step] * (total // step)
        if total % step or not out:
            out.append(total % step if total % step else total)
        return [s for s in out if s] or [0]

    return ok, rule


def _two_outputs(x_chunks, fn, args, kwargs, out_chunks, out_dtypes, name):
    """Run ``fn(*blocks, block_info=...)`` once per block and split its (a, b) result into two dask arrays."""
    ndim = len(x_chunks)
    onechunks = tuple((1,) * len(c) for c in x_chunks)

    def pair(*blocks, block_info=None, **kw):
        res = fn(*blocks, block_info=block_info, **kw)
        box = np.empty((1,) * ndim, object)
        box.reshape(-1)[0] = res
        return box

    boxed = da.map_blocks(pair, *args, chunks=onechunks, dtype=object, meta=np.empty((0,) * ndim, object),
                          name=f"npu-emu-{name}-" + dask.base.tokenize(fn, args, kwargs), **kwargs)
    outs = []
    for k, (chunks, dtype) in enumerate(zip(out_chunks, out_dtypes)):
        nd = len(chunks)
        extra = list(range(ndim, nd))
        outs.append(boxed.map_blocks(lambda b, k=k: b.reshape(-1)[0][k], chunks=chunks, dtype=dtype,
                                     meta=np.empty((0,) * nd, dtype), new_axis=extra or None,
                                     name=f"npu-emu-{name}-{k}-" + boxed.name.rsplit("-", 1)[-1]))
    return tuple(outs)


def _positive_int(v, name, op):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise _bad(f"npu_emu.dask.{op}: {name}={v!r} must be an integer")
    return int(v)


def _shared(a):
    """A whole argument every chunk reads: one graph key (moved to each worker once)."""
    return None if a is None else dask.delayed(np.asarray(a) if not hasattr(a, "from_nd") else a, pure=True)

