"""The Dask front end of GroupedMatmul (``npu_emu.dask.grouped_matmul``, declared in op.py): split by rows of x, a row
chunk cutting through groups freely (docs/ops/grouped_matmul.md §2.2). Output row i depends on x row i, its
per-token scale and its group's weight only (K is never split), so each chunk's call with the group sizes cut to its
rows gives the bits of the whole call."""

import dask.array as da
import numpy as np

from npu_emu.frontend.core import resolve_dtype, storage_dtype
from npu_emu.kernels.grouped_matmul import antiquant as aq

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _fix_axis, _shared, _where


def _one(v, name):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise _bad(f"npu_emu.dask.grouped_matmul: {name} must be one tensor (the single-tensor form), got a list "
                       f"of {len(v)}")
        v = v[0]
    return v


def _rows_decide_kernel(x_name, weight):
    """Why the rows of x must stay in one chunk, or None: where the host tiling picks the kernel from M (and the
    kernel's values then depend on the group sizes), a chunk of rows can run another kernel than the whole call."""
    w = getattr(weight, "dtype", None) if not hasattr(weight, "storage") else (weight.dtype or weight.storage.dtype)
    w_name = resolve_dtype(w) if w is not None else None
    if x_name == "int8" and w_name in ("int4", "int32"):
        return "A8W4: the template follows M / E, and the MSD templates' row walk the group sizes"
    if x_name in ("bfloat16", "float16") and w_name == "int8" and len(weight.shape) == 3:
        _, k, n = (int(d) for d in weight.shape)
        if (k % aq.A16W8_MSD_KN_BASE_BLOCK == 0 and n % aq.A16W8_MSD_KN_BASE_BLOCK == 0 and k <= aq.A16W8_MSD_MAX_K
                and n >= aq.A16W8_MSD_MIN_N):
            return "W8A16: the A16W8-MSD kernel is picked by M <= 64 x E and its row sums follow the group sizes"
    return None


def grouped_matmul(x, weight, *, group_list, group_list_type=0, per_token_scale=None, rechunk=True, **kwargs):
    """``npu_grouped_matmul`` (group_type 0, one x, one (E, K, N) weight, one y) over a 2-D dask x [M, K] split by
    rows -> dask y [M, N], bit-identical to one call. ``weight``, ``group_list`` (types 0 / 1), ``scale`` and
    ``bias`` (and ``antiquant_scale`` / ``antiquant_offset``) are numpy, sent once; ``per_token_scale`` (M,), or the
    MX (M, ceil(K/64), 2), is split with x. K is rechunked to one chunk; with
    ``float_accum="numpy"`` (BLAS, whose blocking may depend on M) rows are one chunk too."""
    x = _as_dask(_one(x, "x"), "x")
    weight = _one(weight, "weight")
    kwargs = _chunk_kwargs("grouped_matmul", kwargs)
    for key in ("split_item", "group_type"):
        kwargs.pop(key, None)
    if x.ndim != 2:
        raise _bad(f"npu_emu.dask.grouped_matmul: x must be 2-D [M, K] (split by rows), got shape {x.shape}")
    if group_list_type not in (0, 1):
        raise _bad(f"npu_emu.dask.grouped_matmul: group_list_type {group_list_type}: use 0 (cumulative) or 1 "
                   f"(counts); a sparse [e, 2] list is not split here")
    m = x.shape[0]
    gl = np.asarray(group_list, np.int64)
    sizes = np.diff(gl, prepend=0) if group_list_type == 0 else gl
    if gl.ndim != 1 or np.any(sizes < 0) or sizes.sum() > m:
        # the whole call's checks say what is wrong (CANN's message and status)
        _call("grouped_matmul", "npu_grouped_matmul", "npu_emu.dask.grouped_matmul", [np.zeros((m, x.shape[1]),
              storage_dtype(resolve_dtype(x.dtype)))], [weight], group_list=group_list,
              group_list_type=group_list_type, split_item=3, group_type=0, **kwargs)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    x = _fix_axis(x, 1, lambda s: len(s) == 1, lambda s: [sum(s)], rechunk, "npu_emu.dask.grouped_matmul (K whole)")
    if kwargs.get("float_accum") == "numpy":
        x = _fix_axis(x, 0, lambda s: len(s) == 1, lambda s: [sum(s)], rechunk,
                      "npu_emu.dask.grouped_matmul (float_accum='numpy': BLAS blocking may depend on M)")
    why = _rows_decide_kernel(resolve_dtype(x.dtype), weight)
    if why:
        x = _fix_axis(x, 0, lambda s: len(s) == 1, lambda s: [sum(s)], rechunk, f"npu_emu.dask.grouped_matmul ({why})")
    n = int(weight.shape[-1]) if not hasattr(weight, "from_nd") else int(weight.shape[-1])
    x_name = resolve_dtype(x.dtype)
    out_name = x_name if kwargs.get("output_dtype") is None else resolve_dtype(kwargs["output_dtype"], "output_dtype")
    out = storage_dtype(out_name)
    lists = {k: _one(kwargs.pop(k), k) for k in ("scale", "bias", "offset", "antiquant_scale", "antiquant_offset")
             if kwargs.get(k) is not None}
    shared = {k: _shared(v) for k, v in lists.items()}
    wd = _shared(weight)
    per_row = per_token_scale is not None
    if per_row:
        pts = np.asarray(_one(per_token_scale, "per_token_scale"))
        if pts.ndim < 1 or pts.shape[0] != m:
            raise _bad(f"npu_emu.dask.grouped_matmul: per_token_scale must have {m} rows ((M,), or (M, ceil(K/64), 2) "
                       f"E8M0 for MX), got {pts.shape}")
        pt_tail = pts.shape[1:]                   # the MX per-token scale's (ceil(K/64), 2) rows travel with x's
        width = int(np.prod(pt_tail)) if pt_tail else 1
        pa = da.from_array(pts.reshape(m, width), chunks=(x.chunks[0], (width,)), name=False)

    def run(block, *rest, block_info=None):
        idx, st, sz = _block_info(block_info)
        r0, r1 = st[0], st[0] + sz[0]
        counts = np.clip(np.minimum(ends, r1) - np.maximum(starts, r0), 0, None).astype(np.int64)
        if per_row:
            p, rest = [rest[0].reshape((-1,) + pt_tail)], rest[1:]
        else:
            p = None
        w, *vals = rest
        kw = dict(kwargs, **{k: [v] for k, v in zip(shared, vals)})
        where = _where("grouped_matmul", idx, st, sz) + f", group rows {counts.tolist()}"
        return _call("grouped_matmul", "npu_grouped_matmul", where, [block], [w], group_list=counts,
                     group_list_type=1, per_token_scale=p, split_item=3, group_type=0, **kw)[0]

    extra = [wd, *shared.values()]
    meta = np.empty((0, 0), out)
    if per_row:
        return da.map_blocks(run, x, pa, *extra, chunks=(x.chunks[0], (n,)), dtype=out, meta=meta)
    return da.map_blocks(run, x, *extra, chunks=(x.chunks[0], (n,)), dtype=out, meta=meta)
