"""The Dask front end of DynamicMxQuant and GroupedDynamicMxQuant (``npu_emu.dask``, declared in op.py): how a dask array is split so that
every chunk's call gives the bits of one whole call (docs/integrations/dask.md)."""

import numpy as np

from npu_emu.dask.chunking import (
    _as_dask,
    _bad,
    _block_info,
    _call,
    _chunk_kwargs,
    _fix_axis,
    _multiple_rule,
    _two_outputs,
    _where,
)


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
