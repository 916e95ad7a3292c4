"""The Dask front end of DequantSwigluQuant (``npu_emu.dask``, declared in op.py): how a dask array is split so that
every chunk's call gives the bits of one whole call (docs/integrations/dask.md).

Each row is dequantised, activated and quantised on its own (its scale is its own max), so rows split freely; the
last axis stays whole. With group_index (counts [G] or (index, count) pairs [G, 2]) a row chunk holds whole groups
(boundaries moved to the next group end), and its call gets the counts of its groups only (the others 0: skipped by
the kernel), or its own pairs; rows after the last group stay 0 as in one call.
"""

import numpy as np

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _fix_axis, _two_outputs, _where

_OP = "dequant_swiglu_quant"


def _group_ends(gi, m):
    """(row ends, counts) of the groups the kernel walks (pairs: up to the first count <= 0)."""
    counts = []
    if gi.ndim == 2:
        for c in gi[:, 1].tolist():
            if c <= 0:
                break
            counts.append(int(c))
    else:
        counts = [max(int(c), 0) for c in gi.tolist()]
    ends, total = [], 0
    for c in counts:
        total += c
        ends.append(min(total, m))
    return ends


def dequant_swiglu_quant(x, *, activation_scale=None, group_index=None, rechunk=True, **kwargs):
    """``npu_dequant_swiglu_quant`` over a 2-D int32 dask array [T, 2H] -> (y [T, H] int8, scale [T] float32),
    bit-identical to one call. ``activation_scale`` (per row) and ``group_index`` are numpy arrays; the other
    keywords (weight_scale, bias, quant_scale, ...) go to every chunk's call unchanged."""
    x = _as_dask(x, "x")
    if x.ndim != 2:
        raise _bad(f"npu_emu.dask.{_OP}: x must be 2-D [tokens, 2H], got shape {x.shape}")
    kwargs = _chunk_kwargs(_OP, kwargs)
    m = x.shape[0]
    gi = None if group_index is None else np.asarray(group_index)
    if gi is not None and (gi.ndim not in (1, 2) or gi.dtype.kind not in "iu"):
        raise _bad(f"npu_emu.dask.{_OP}: group_index must be a numpy integer array [G] or [G, 2] (not dask: the "
                   f"chunk boundaries are computed from it), got shape {gi.shape} dtype {gi.dtype}")
    asc = None if activation_scale is None else np.asarray(activation_scale).reshape(-1)
    x = _fix_axis(x, 1, lambda sizes: len(sizes) == 1, lambda sizes: [sum(sizes)], rechunk,
                  f"npu_emu.dask.{_OP} (the last axis is halved: one chunk)")
    plan = None
    if gi is not None:
        ends = _group_ends(gi, m)
        bounds = sorted(set([0, m] + ends))

        def ok(sizes):
            return all(b in bounds for b in np.cumsum(sizes).tolist())

        def rule(sizes):
            out, prev = [], 0
            for b in np.cumsum(sizes).tolist():
                nxt = next(e for e in bounds if e >= b)
                if nxt > prev:
                    out.append(nxt - prev)
                    prev = nxt
            return out or [m]

        x = _fix_axis(x, 0, ok, rule, rechunk, f"npu_emu.dask.{_OP} (chunks hold whole groups)")
        starts = [0] + ends[:-1]
        plan = []
        for c0, c1 in zip(np.cumsum((0,) + x.chunks[0][:-1]).tolist(), np.cumsum(x.chunks[0]).tolist()):
            plan.append([k for k, (s, e) in enumerate(zip(starts, ends)) if c0 <= s and e <= c1 and e > s])

    def run(block, block_info=None):
        idx, st, sizes = _block_info(block_info)
        r0, r1 = st[0], st[0] + sizes[0]
        kw = dict(kwargs)
        if asc is not None:
            kw["activation_scale"] = asc[r0:r1]
        where = _where(_OP, idx, st, sizes)
        if gi is not None:
            ks = plan[idx[0]]
            if gi.ndim == 2:
                local = np.zeros_like(gi)            # its pairs first; the walk ends at the padding's count 0
                local[:len(ks)] = gi[ks]
            else:
                local = np.zeros_like(gi)
                local[ks] = gi[ks]
            kw["group_index"] = local
            where += f", groups {ks[0]}:{ks[-1] + 1}" if ks else ", no group"
        y, s = _call(_OP, "npu_dequant_swiglu_quant", where, block, **kw)
        return y, np.asarray(s).reshape(-1, 1)           # a 2-D block like x's; the axis is dropped below

    y, s = _two_outputs(x.chunks, run, (x,), {}, ((x.chunks[0], (x.shape[1] // 2,)), (x.chunks[0], (1,))),
                        (np.dtype(np.int8), np.dtype(np.float32)), "dequant-swiglu-quant")
    return y, s[:, 0]
