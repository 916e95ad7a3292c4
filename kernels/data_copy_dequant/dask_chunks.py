"""The Dask front end of the DataCopy CO1 -> CO2 dequantisation (``npu_emu.dask``, declared in op.py): how a dask array is split so that
every chunk's call gives the bits of one whole call (docs/integrations/dask.md)."""

import dask.array as da
import numpy as np

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _fix_axis, _shared, _where


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
