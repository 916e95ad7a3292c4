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
import threading
import warnings

import dask
import dask.array as da
import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import resolve_dtype

__all__ = ["RechunkWarning", "dynamic_mx_quant", "grouped_dynamic_mx_quant", "sign_bits_unpack", "sign_bits_pack",
           "gather_dequant_int8", "quant_matmul", "data_copy_dequant", "worker_environ", "local_cluster"]


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


# ---------------------------------------------------------------------------------------------------------------
# MX quantisation
# ---------------------------------------------------------------------------------------------------------------

_FP4 = ("float4_e2m1", "float4_e1m2")


def _mx_dst(dst_type):
    from npu_emu.kernels.mx_quant import checks

    return checks.torch_dst_type(dst_type)


def _y_dtype(dst):
    import ml_dtypes

    return np.dtype(np.uint8) if dst in _FP4 else np.dtype(getattr(ml_dtypes, {"float8_e4m3fn": "float8_e4m3fn",
                                                                                 "float8_e5m2": "float8_e5m2"}[dst]))


def dynamic_mx_quant(x, *, axis=-1, dst_type=296, block_size=32, rechunk=True, **kwargs):
    """``npu_dynamic_mx_quant`` over a dask array -> (y, mxscale) dask arrays, bit-identical to one call.

    Chunks along ``axis`` must hold whole pairs of blocks (multiples of ``2 * block_size``, the last excepted):
    mxscale stores the scales of blocks 2p and 2p + 1 side by side, so a chunk ending on an odd block would pad a
    pair the whole call fills. For FP4 (y packed two codes per byte along the last axis) the chunks along the last
    axis must be even. Other axes split freely. ``kwargs`` go to ``npu_dynamic_mx_quant`` unchanged.
    """
    x = _as_dask(x, "x")
    if x.ndim == 0:
        raise _bad("npu_emu.dask.dynamic_mx_quant: input must have at least one dimension")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise _bad(f"npu_emu.dask.dynamic_mx_quant: axis={axis!r} is out of range for a {x.ndim}-D input")
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size <= 0:
        raise _bad(f"npu_emu.dask.dynamic_mx_quant: block_size={block_size!r} must be a positive integer")
    ax = int(axis) % x.ndim
    kwargs = _chunk_kwargs("dynamic_mx_quant", kwargs)
    dst = _mx_dst(dst_type)
    ok, rule = _multiple_rule(2 * int(block_size))
    x = _fix_axis(x, ax, ok, rule, rechunk, "npu_emu.dask.dynamic_mx_quant")
    if dst in _FP4 and ax != x.ndim - 1:
        ok2, rule2 = _multiple_rule(2)
        x = _fix_axis(x, x.ndim - 1, ok2, rule2, rechunk, "npu_emu.dask.dynamic_mx_quant (FP4 packs pairs)")
    bs = int(block_size)
    y_chunks = list(x.chunks)
    if dst in _FP4:
        y_chunks[-1] = tuple(c // 2 for c in x.chunks[-1])
    s_chunks = list(x.chunks)
    s_chunks[ax] = tuple(-(-(-(-c // bs)) // 2) for c in x.chunks[ax])
    s_chunks.append((2,))
    call_kw = dict(kwargs, axis=ax, dst_type=dst_type, block_size=bs)

    def run(block, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        return _call("dynamic_mx_quant", "npu_dynamic_mx_quant", _where("dynamic_mx_quant", idx, starts, sizes),
                     block, **call_kw)

    return _two_outputs(x.chunks, run, (x,), {}, (tuple(y_chunks), tuple(s_chunks)),
                        (_y_dtype(dst), np.dtype(np.uint8)), "dynamic-mx-quant")


def _group_ends(group_index, m):
    gi = np.asarray(group_index)
    if gi.ndim != 1 or gi.dtype.kind not in "iu":
        raise _bad(f"npu_emu.dask.grouped_dynamic_mx_quant: group_index must be a 1-D integer array (numpy, not "
                   f"dask: the chunk boundaries are computed from it), got shape {gi.shape} dtype {gi.dtype}")
    ends = gi.astype(np.int64).tolist()
    if not ends or ends[-1] != m or any(b < a for a, b in zip([0] + ends, ends)) or ends[0] < 0:
        raise _bad(f"npu_emu.dask.grouped_dynamic_mx_quant: group_index must be non-decreasing cumulative ends with "
                   f"the last equal to x.shape[0] = {m}, got {ends[:8]}{'...' if len(ends) > 8 else ''}")
    return ends


def grouped_dynamic_mx_quant(x, group_index, *, dst_type=23, rechunk=True, gap_fill=0, **kwargs):
    """``npu_grouped_dynamic_mx_quant`` over a 2-D dask array -> (y, mxscale), bit-identical to one call.

    Row chunks must end at group ends (each chunk holds whole groups; a chunk boundary elsewhere is moved to the
    next group end). The scale rows of the groups of a chunk are scattered to their rows in the whole call's
    mxscale [m // 64 + g, n, 2]: group k starting at row s owns rows s // 64 + k onwards, so the chunk from row c0
    (first group k0) to c1 (groups up to k1) owns exactly rows [c0 // 64 + k0, c1 // 64 + k1), rows no group owns
    getting ``gap_fill``. Column chunks split freely (even widths for FP4). ``group_index`` is a numpy array.
    """
    x = _as_dask(x, "x")
    if x.ndim != 2:
        raise _bad(f"npu_emu.dask.grouped_dynamic_mx_quant: x must be 2-D [m, n], got shape {x.shape}")
    m = x.shape[0]
    kwargs = _chunk_kwargs("grouped_dynamic_mx_quant", kwargs)
    ends = _group_ends(group_index, m)
    bounds = sorted(set([0] + ends))
    dst = _mx_dst(dst_type)

    def ok(sizes):
        return all(b in set(bounds) for b in np.cumsum(sizes).tolist()) and (m == 0 or min(sizes) > 0)

    def rule(sizes):
        out, prev = [], 0
        for b in np.cumsum(sizes).tolist():
            nxt = next(e for e in bounds if e >= b)
            if nxt > prev:
                out.append(nxt - prev)
                prev = nxt
        return out or [m]

    x = _fix_axis(x, 0, ok, rule, rechunk, "npu_emu.dask.grouped_dynamic_mx_quant (chunks hold whole groups)")
    if dst in _FP4:
        ok2, rule2 = _multiple_rule(2)
        x = _fix_axis(x, 1, ok2, rule2, rechunk, "npu_emu.dask.grouped_dynamic_mx_quant (FP4 packs pairs)")
    row_ends = np.cumsum(x.chunks[0]).tolist()
    # groups of each row chunk: [k0, k1); an empty group at a chunk boundary goes to the later chunk
    plan, k = [], 0
    for c0, c1 in zip([0] + row_ends[:-1], row_ends):
        k0 = k
        while k < len(ends) and ends[k] <= c1 and not (ends[k] == c1 and c1 != m and k > k0 and ends[k - 1] == c1):
            k += 1
        if c1 == m:
            k = len(ends)
        plan.append((c0, c1, k0, k))
    s_rows = tuple((c1 // 64 + k1) - (c0 // 64 + k0) for c0, c1, k0, k1 in plan)
    y_chunks = (x.chunks[0], tuple(c // 2 for c in x.chunks[1]) if dst in _FP4 else x.chunks[1])
    s_chunks = (s_rows, x.chunks[1], (2,))
    call_kw = dict(kwargs, dst_type=dst_type, gap_fill=gap_fill)
    fill = 0 if gap_fill is None else int(gap_fill)

    def run(block, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        c0, c1, k0, k1 = plan[idx[0]]
        local = np.asarray([e - c0 for e in ends[k0:k1]], np.int32)
        where = _where("grouped_dynamic_mx_quant", idx, starts, sizes) + f", groups {k0}:{k1}"
        y, s = _call("grouped_dynamic_mx_quant", "npu_grouped_dynamic_mx_quant", where, block, local, **call_kw)
        base = c0 // 64 + k0
        out = np.full(((c1 // 64 + k1) - base,) + s.shape[1:], fill, np.uint8)
        start = c0
        for j, kk in enumerate(range(k0, k1)):
            end = ends[kk]
            tiles = -(-(end - start) // 64)
            if tiles:
                r_local = (start - c0) // 64 + j
                r_glob = start // 64 + kk - base
                out[r_glob:r_glob + tiles] = np.asarray(s)[r_local:r_local + tiles]
            start = end
        return y, out

    return _two_outputs(x.chunks, run, (x,), {}, (y_chunks, s_chunks), (_y_dtype(dst), np.dtype(np.uint8)),
                        "grouped-dynamic-mx-quant")


# ---------------------------------------------------------------------------------------------------------------
# SignBits
# ---------------------------------------------------------------------------------------------------------------

def _positive_int(v, name, op):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise _bad(f"npu_emu.dask.{op}: {name}={v!r} must be an integer")
    return int(v)


def sign_bits_unpack(x, size, dtype, *, rechunk=True, **kwargs):
    """``npu_sign_bits_unpack`` over a 1-D uint8 dask array -> (size, 8N / size). Any chunking: each byte gives its
    own 8 values; each chunk is unpacked with size 1 and the whole result reshaped to (size, 8N / size)."""
    x = _as_dask(x, "x")
    kwargs = _chunk_kwargs("sign_bits_unpack", kwargs)
    size = _positive_int(size, "size", "sign_bits_unpack")
    if x.ndim != 1:
        raise _bad(f"npu_emu.dask.sign_bits_unpack: input value should be a 1-dimensional array (got shape "
                   f"{x.shape})")
    if size <= 0 or (x.shape[0] * 8) % size:
        raise _bad(f"npu_emu.dask.sign_bits_unpack: input length*8 must be a positive multiple of size "
                   f"({x.shape[0]}*8, size={size})")
    from npu_emu.kernels.sign_bits import checks

    out = np.dtype(checks.check_unpack_torch(np.zeros(1, np.uint8), 1, dtype))

    def run(block, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        y = _call("sign_bits_unpack", "npu_sign_bits_unpack", _where("sign_bits_unpack", idx, starts, sizes),
                  block, 1, dtype, **kwargs)
        return np.asarray(y).reshape(-1)

    flat = da.map_blocks(run, x, chunks=(tuple(8 * c for c in x.chunks[0]),), dtype=out, meta=np.empty(0, out))
    return flat.reshape(size, -1) if size > 1 else flat.reshape(1, -1)


def sign_bits_pack(x, size, *, rechunk=True, **kwargs):
    """``npu_sign_bits_pack`` over a 1-D float32/float16 dask array -> (size, ceil(N / 8) / size) uint8.
    Chunks hold whole bytes: multiples of 8 elements, the last excepted (only the last byte is padded)."""
    x = _as_dask(x, "x")
    kwargs = _chunk_kwargs("sign_bits_pack", kwargs)
    size = _positive_int(size, "size", "sign_bits_pack")
    if x.ndim != 1:
        raise _bad(f"npu_emu.dask.sign_bits_pack: input must be one-dimensional (got shape {x.shape})")
    nbytes = -(-x.shape[0] // 8)
    if size <= 0 or nbytes % size:
        raise _bad(f"npu_emu.dask.sign_bits_pack: ceil(N/8) must be a positive multiple of size (ceil({x.shape[0]}/8) "
                   f"= {nbytes}, size={size})")
    ok, rule = _multiple_rule(8)
    x = _fix_axis(x, 0, ok, rule, rechunk, "npu_emu.dask.sign_bits_pack (chunks hold whole bytes)")

    def run(block, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        y = _call("sign_bits_pack", "npu_sign_bits_pack", _where("sign_bits_pack", idx, starts, sizes), block, 1,
                  **kwargs)
        return np.asarray(y).reshape(-1)

    flat = da.map_blocks(run, x, chunks=(tuple(-(-c // 8) for c in x.chunks[0]),), dtype=np.uint8,
                         meta=np.empty(0, np.uint8))
    return flat.reshape(size, -1)


# ---------------------------------------------------------------------------------------------------------------
# GatherDequantInt8, QuantMatmul, data_copy_dequant
# ---------------------------------------------------------------------------------------------------------------

def _shared(a):
    """A whole argument every chunk reads: one graph key (moved to each worker once)."""
    return None if a is None else dask.delayed(np.asarray(a) if not hasattr(a, "from_nd") else a, pure=True)


def gather_dequant_int8(table, indices, scale, zero_point, **kwargs):
    """``gather_dequant_int8`` over a dask array of indices (any shape, any chunking) -> float16 indices.shape +
    (E,). Each token's row depends on its index only; table, scale and zero_point are numpy arrays, sent once."""
    indices = _as_dask(indices, "indices")
    kwargs = _chunk_kwargs("gather_dequant_int8", kwargs)
    t = np.asarray(table)
    if t.ndim != 2:
        raise _bad(f"npu_emu.dask.gather_dequant_int8: table must be 2-D [V, E], got shape {t.shape}")
    emb = t.shape[1]

    def run(block, tab, sc, zp, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        return _call("gather_dequant_int8", "gather_dequant_int8", _where("gather_dequant_int8", idx, starts, sizes),
                     tab, block, sc, zp, **kwargs)

    return da.map_blocks(run, indices, _shared(t), _shared(scale), _shared(zero_point),
                         chunks=indices.chunks + ((emb,),), new_axis=indices.ndim, dtype=np.float16,
                         meta=np.empty((0,) * (indices.ndim + 1), np.float16))


def _np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def quant_matmul(x1, x2, scale, *, pertoken_scale=None, n=None, rechunk=True, **kwargs):
    """``npu_quant_matmul`` split by rows of a 2-D dask x1 [m, k] -> dask [m, n]: output row i depends on x1 row i
    (and pertoken_scale row i) only. x2, scale and the other arguments are numpy (or an NzWeight), sent once; a
    pertoken_scale with m rows (m > 1) is split with x1. K is never split (x1 is rechunked to one chunk along k).
    ``float_accum="kchunk"`` sums in chunks of the tiling's baseK, which depends on M: rows are then one chunk.
    ``n``: the output columns, read from x2's shape and dtype labels when not given (int4 / FP4 packed two per byte
    and int32-packed int4 words hide them); a chunk whose result has other columns raises."""
    x1 = _as_dask(x1, "x1")
    kwargs = _chunk_kwargs("quant_matmul", kwargs)
    if x1.ndim != 2:
        raise _bad(f"npu_emu.dask.quant_matmul: x1 must be 2-D [m, k] (split by rows), got shape {x1.shape}")
    m = x1.shape[0]
    x1 = _fix_axis(x1, 1, lambda s: len(s) == 1, lambda s: [sum(s)], rechunk, "npu_emu.dask.quant_matmul (K whole)")
    if kwargs.get("float_accum") == "kchunk":
        x1 = _fix_axis(x1, 0, lambda s: len(s) == 1, lambda s: [sum(s)], rechunk,
                       "npu_emu.dask.quant_matmul (float_accum='kchunk': baseK depends on M)")
    out_name = "int8" if kwargs.get("output_dtype") is None else resolve_dtype(kwargs["output_dtype"],
                                                                                 "output_dtype")
    out = _np_dtype(out_name)
    x2_shape = x2.shape if hasattr(x2, "shape") else None
    if x2_shape is None or len(x2_shape) != 2:
        raise _bad("npu_emu.dask.quant_matmul: x2 must be a 2-D numpy array or an NzWeight")
    n = int(n) if n is not None else _matmul_n(x2, kwargs)
    per_row = pertoken_scale is not None and m > 1 and np.shape(pertoken_scale)[:1] == (m,)
    if per_row:
        ps = np.asarray(pertoken_scale)
        tail = ps.shape[1:]
        # 2-D (m, rest) so that map_blocks pairs its row chunks with x1's (a 1-D array would align with k)
        flat = ps.reshape(m, -1)
        pa = da.from_array(flat, chunks=(x1.chunks[0], (flat.shape[1],)), name=False)
    shared = {k: _shared(v) for k, v in kwargs.items() if isinstance(v, np.ndarray) or hasattr(v, "from_nd")}
    plain = {k: v for k, v in kwargs.items() if k not in shared}
    x2d, sd = _shared(x2), _shared(scale)
    pts = None if per_row else _shared(pertoken_scale)

    def run(block, *rest, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        if per_row:
            p, rest = rest[0].reshape((-1,) + tail), rest[1:]
        else:
            p = None
        w, s, pt, *vals = rest
        kw = dict(plain, **dict(zip(shared, vals)))
        where = _where("quant_matmul", idx, starts, sizes)
        y = _call("quant_matmul", "npu_quant_matmul", where, block, w, s, pertoken_scale=p if per_row else pt, **kw)
        if y.shape != (block.shape[0], n):
            raise _bad(f"{where}: the op returned shape {y.shape}, not ({block.shape[0]}, {n}); pass n= (the output "
                       f"columns) when x2's layout hides them")
        return y

    extra = [x2d, sd, pts, *shared.values()]
    if per_row:
        # blockwise pairs the row chunks of x1 and pertoken_scale (their other axes are single chunks)
        return da.map_blocks(run, x1, pa, *extra, chunks=(x1.chunks[0], (n,)), dtype=out,
                             meta=np.empty((0, 0), out))
    return da.map_blocks(run, x1, *extra, chunks=(x1.chunks[0], (n,)), dtype=out, meta=np.empty((0, 0), out))


def _matmul_n(x2, kwargs):
    """Output columns from x2's shape and its dtype label (int4 / fp4 packed two per byte along n, int32-packed
    int4 eight per word); an NzWeight knows its logical shape."""
    if hasattr(x2, "from_nd"):
        return int(getattr(x2, "n", x2.shape[-1]))
    n = x2.shape[1]
    label = kwargs.get("x2_dtype")
    name = None if label is None else resolve_dtype(label, "x2_dtype")
    transposed = not x2.flags.c_contiguous and x2.flags.f_contiguous
    if name in ("int4", "float4_e2m1", "float4_e1m2") and not transposed:
        return 2 * n
    if x2.dtype == np.int32 and name is None and not transposed:
        return 8 * n
    return n


def data_copy_dequant(acc, deq_value, *, mode="DEQ8", rechunk=True, **kwargs):
    """``data_copy_dequant`` over a dask int32 accumulator (..., N) split along the leading axes (each element
    depends on its own value and its column's deq entry); the last axis is one chunk."""
    acc = _as_dask(acc, "acc")
    kwargs = _chunk_kwargs("data_copy_dequant", kwargs)
    if acc.ndim < 1:
        raise _bad("npu_emu.dask.data_copy_dequant: acc must have at least one dimension (..., N)")
    acc = _fix_axis(acc, acc.ndim - 1, lambda s: len(s) == 1, lambda s: [sum(s)], rechunk,
                    "npu_emu.dask.data_copy_dequant (the last axis whole)")
    from npu_emu.kernels.data_copy_dequant.checks import check_call

    probe = np.zeros((1, acc.shape[-1]), np.int32)     # the checks read dtype and N only
    switches = {k: v for k, v in kwargs.items() if k not in ("is_relu", "soc")}
    call = check_call(probe, deq_value, mode, kwargs.get("is_relu", False), kwargs.get("soc", "ascend310p"),
                      switches)
    out = np.dtype(call.out_dtype)
    deq = _shared(deq_value) if isinstance(deq_value, np.ndarray) else deq_value

    def run(block, d, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        return _call("data_copy_dequant", "data_copy_dequant", _where("data_copy_dequant", idx, starts, sizes),
                     block, d, mode=mode, **kwargs)

    return da.map_blocks(run, acc, deq, dtype=out, meta=np.empty((0,) * acc.ndim, out))


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
