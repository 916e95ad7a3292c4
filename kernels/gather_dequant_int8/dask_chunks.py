"""The Dask front end of GatherDequantInt8 (``npu_emu.dask``, declared in op.py): how a dask array is split so that
every chunk's call gives the bits of one whole call (docs/integrations/dask.md)."""

import dask.array as da
import numpy as np

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _shared, _where


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
