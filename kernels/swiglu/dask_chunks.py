"""The Dask front end of SwiGlu (``npu_emu.dask``, declared in op.py): how a dask array is split so that every
chunk's call gives the bits of one whole call (docs/integrations/dask.md).

Every output element reads one element of each half of its own row (the product of the dims before ``dim``), so
the axes before ``dim`` split freely; ``dim`` and the axes after it are halved together and stay whole.
"""

import dask.array as da
import numpy as np

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _fix_axis, _where


def swiglu(x, dim=-1, *, rechunk=True, **kwargs):
    """``npu_swiglu`` over a dask array -> y dask array, bit-identical to one call. Chunks along ``dim`` and the
    axes after it must be whole (one chunk each; rechunked with a warning, or refused with ``rechunk=False``)."""
    x = _as_dask(x, "x")
    kwargs = _chunk_kwargs("swiglu", kwargs)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or not -x.ndim <= dim < max(x.ndim, 1):
        raise _bad(f"npu_emu.dask.swiglu: dim={dim!r} is out of range for a {x.ndim}-D input")
    split = int(dim) % x.ndim
    if x.shape[split] % 2:
        raise _bad(f"npu_emu.dask.swiglu: axis {split} of x (length {x.shape[split]}) must be even")
    for ax in range(split, x.ndim):
        x = _fix_axis(x, ax, lambda sizes: len(sizes) == 1, lambda sizes: [sum(sizes)], rechunk,
                      f"npu_emu.dask.swiglu (axis {ax} is halved: one chunk)")
    local_dim = split - x.ndim                  # the same axis counted from the end: valid in every chunk
    chunks = list(x.chunks)
    chunks[split] = (x.shape[split] // 2,)

    def run(block, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        return np.asarray(_call("swiglu", "npu_swiglu", _where("swiglu", idx, starts, sizes), block, local_dim,
                                **kwargs))

    return da.map_blocks(run, x, chunks=tuple(chunks), dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))
