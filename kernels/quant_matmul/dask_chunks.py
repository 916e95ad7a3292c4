"""The Dask front end of the quantised matmul (``npu_emu.dask``, declared in op.py): how a dask array is split so that
every chunk's call gives the bits of one whole call (docs/integrations/dask.md)."""

import dask.array as da
import numpy as np

from npu_emu.frontend.core import resolve_dtype

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _fix_axis, _shared, _where


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
