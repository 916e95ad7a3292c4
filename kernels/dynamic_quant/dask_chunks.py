"""The Dask front end of DynamicQuant (``npu_emu.dask``, declared in op.py): ``npu_dynamic_quant`` /
``npu_dynamic_quant_asymmetric`` over a dask array, split by rows, bit-identical to one call
(docs/ops/dynamic_quant.md §8, docs/integrations/dask.md).

Every row is quantized on its own, but how is decided by the tiling key, and op_host picks key 100 (single row)
only for 4 <= rows <= 384 of the whole call: a chunk alone could pick another key than the call. So the whole
call's key is computed first (every check of the whole call runs then, before any task), and each chunk runs
with the tiling of its own rows under that key (``tiling.tiling(..., key=)``), passed as a user tiling, which
the op validates. With group_index (MoE keys 7 / 8) each chunk gets the group ends rebased to its first row
(``max(end - c0, 0)``), so that every row reads the same smooth row as in the whole call.
"""

import numpy as np

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _fix_axis, _where

_SWITCHES = ("soc", "core_num", "ub_size", "div_model")


def _whole_rule(total):
    return (lambda sizes: len(sizes) == 1), (lambda sizes: [total])


def _run(op, fn_name, x, smooth_scales, group_index, dst_type, quant_mode, dst_type_max, symmetrical, rechunk,
         kwargs):
    import dask.array as da

    from npu_emu.kernels.dynamic_quant import api

    x = _as_dask(x, "x")
    kwargs = _chunk_kwargs(op, kwargs)
    if x.ndim <= 1:
        raise _bad(f"npu_emu.dask.{op}: Input shape dim should be greater than 1, got {x.ndim}")
    if api._regbase(kwargs.get("soc", api.DEFAULT_SOC)):
        raise _bad(f"npu_emu.dask.{op}: the Dask front end runs the Atlas A2/A3 kernels only; on Ascend 950 call "
                   f"npu_emu.ops.npu_dynamic_quant on the whole array (pertensor / perchannel reduce across chunks)")
    sm = None if smooth_scales is None else np.asarray(smooth_scales)
    gr = None if group_index is None else np.asarray(group_index)
    if any(isinstance(a, da.Array) for a in (smooth_scales, group_index)):
        raise _bad(f"npu_emu.dask.{op}: smooth_scales and group_index are numpy arrays (every chunk reads them whole)")
    sw = {k: kwargs[k] for k in _SWITCHES if k in kwargs}
    common = dict(smooth_scales=sm, dst_type=dst_type, quant_mode=quant_mode, dst_type_max=dst_type_max,
                  symmetrical=symmetrical, **sw)
    try:   # the whole call's checks and key, before any task runs
        whole = api.torch_call_tiling(x.dtype, x.shape, group_index=gr, **common)
    except Exception as e:
        if hasattr(e, "status"):
            raise type(e)(e.status, f"npu_emu.dask.{op} (the whole call): {e.message}") from e
        raise
    key = None if whole is None else whole.tiling_key
    L = x.shape[-1]
    x = _fix_axis(x, x.ndim - 1, *_whole_rule(L), rechunk, f"npu_emu.dask.{op} (rows are quantized whole)")
    if gr is not None:   # chunks along the first axis only: each chunk is one run of consecutive rows
        for ax in range(1, x.ndim - 1):
            x = _fix_axis(x, ax, *_whole_rule(x.shape[ax]), rechunk,
                          f"npu_emu.dask.{op} (with group_index a chunk holds consecutive rows)")
    inner = int(np.prod(x.shape[1:-1], dtype=np.int64))
    int4 = api._dst_kind(dst_type) == "int32"
    y_dtype = np.dtype(np.int32) if int4 else np.dtype(np.int8)
    y_chunks = x.chunks[:-1] + (((L // 8) if int4 else L,),)
    s_chunks = x.chunks[:-1] + ((1,),)
    n_out = 2 if symmetrical else 3
    call_kw = dict(kwargs, smooth_scales=sm, dst_type=dst_type, quant_mode=quant_mode, dst_type_max=dst_type_max)

    def run(block, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        where = _where(op, idx, starts, sizes)
        g = None
        if gr is not None:
            c0 = starts[0] * inner
            g = np.maximum(gr.astype(np.int64) - c0, 0).astype(gr.dtype)
        tiling = None
        if key is not None and block.size:
            try:
                tiling = api.torch_call_tiling(block.dtype, block.shape, group_index=g, key=key, **common)
            except Exception as e:
                if hasattr(e, "status"):
                    raise type(e)(e.status, f"{where}: {e.message}") from e
                raise
        res = _call(op, fn_name, where, block, group_index=g, tiling=tiling, **call_kw)
        box = np.empty((1,) * block.ndim, object)
        box.reshape(-1)[0] = tuple(np.asarray(r) for r in res)
        return box

    onechunks = tuple((1,) * len(c) for c in x.chunks)
    boxed = da.map_blocks(run, x, chunks=onechunks, dtype=object, meta=np.empty((0,) * x.ndim, object))
    outs = [boxed.map_blocks(lambda b: b.reshape(-1)[0][0], chunks=y_chunks, dtype=y_dtype,
                             meta=np.empty((0,) * x.ndim, y_dtype))]
    for k in range(1, n_out):
        s = boxed.map_blocks(lambda b, k=k: b.reshape(-1)[0][k][..., None], chunks=s_chunks, dtype=np.float32,
                             meta=np.empty((0,) * x.ndim, np.float32))
        outs.append(s[..., 0])
    return tuple(outs)


def dynamic_quant(x, *, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                  dst_type_max=0.0, rechunk=True, **kwargs):
    """``npu_dynamic_quant`` over a dask array [..., n] -> (y, scale) dask arrays, bit-identical to one call.

    Rows split freely along the leading axes (with ``group_index``: along the first axis only); the last axis is
    one chunk (a row is quantized whole). Every chunk runs under the tiling key of the whole call (see the module
    docstring). ``smooth_scales`` / ``group_index``: numpy arrays; ``kwargs`` (soc, core_num, ub_size, div_model,
    faithful, validate) go to ``npu_dynamic_quant`` unchanged.
    """
    return _run("dynamic_quant", "npu_dynamic_quant", x, smooth_scales, group_index, dst_type, quant_mode,
                dst_type_max, True, rechunk, kwargs)


def dynamic_quant_asymmetric(x, *, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                             dst_type_max=0.0, rechunk=True, **kwargs):
    """``npu_dynamic_quant_asymmetric`` over a dask array -> (y, scale, offset), bit-identical to one call (the
    split rules of :func:`dynamic_quant`)."""
    return _run("dynamic_quant_asymmetric", "npu_dynamic_quant_asymmetric", x, smooth_scales, group_index, dst_type,
                quant_mode, dst_type_max, False, rechunk, kwargs)
