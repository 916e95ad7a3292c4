"""The Dask front end of DynamicMxQuantWithDualAxis (``npu_emu.dask``, declared in op.py): how a dask array is split
so that every chunk's call gives the bits of one whole call (docs/integrations/dask.md)."""

import numpy as np

from npu_emu.dask.chunking import _as_dask, _bad, _block_info, _call, _chunk_kwargs, _fix_axis, _multiple_rule, \
    _two_outputs, _where

_FP4 = ("float4_e2m1", "float4_e1m2")
# a pair of 32-element blocks: mxscale1 stores blocks 2p and 2p + 1 of a row side by side, mxscale2 those of a
# column, so a chunk of the last two axes must hold whole pairs (an odd block at a chunk's end would get the 0x00 pad
# the whole call does not write there)
PAIR = 64


def dynamic_mx_quant_with_dual_axis(x, *, dst_type=296, rechunk=True, **kwargs):
    """``npu_dynamic_mx_quant_with_dual_axis`` over a dask array of rank >= 2 -> (y1, mxscale1, y2, mxscale2) dask
    arrays, bit-identical to one call.

    Chunks along the last two axes must be multiples of 64 (whole pairs of 32-element blocks; the last chunk
    excepted); leading (batch) axes split freely. Every block is formed from its own 32 elements alone and the
    kernel's pad bytes (an odd block count's last pair slot) fall only in the last chunk, so the chunks' calls give
    the whole call's bits (the 256-column task blocks of the device tiling do not change a value). ``kwargs`` go to
    ``npu_dynamic_mx_quant_with_dual_axis`` unchanged.
    """
    from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import checks

    x = _as_dask(x, "input")
    if x.ndim < 2:
        raise _bad(f"npu_emu.dask.dynamic_mx_quant_with_dual_axis: input must have at least 2 dimensions, got shape "
                   f"{x.shape}")
    kwargs = _chunk_kwargs("dynamic_mx_quant_with_dual_axis", kwargs)
    dst = checks.torch_dst_type(dst_type)
    ok, rule = _multiple_rule(PAIR)
    for ax in (x.ndim - 2, x.ndim - 1):
        x = _fix_axis(x, ax, ok, rule, rechunk, "npu_emu.dask.dynamic_mx_quant_with_dual_axis (whole pairs of blocks)")
    rows, cols = x.chunks[-2], x.chunks[-1]
    y_chunks = x.chunks[:-1] + ((tuple(c // 2 for c in cols),) if dst in _FP4 else (cols,))
    pairs = lambda sizes: tuple(-(-c // PAIR) for c in sizes)      # noqa: E731
    s1_chunks = x.chunks[:-1] + (pairs(cols), (2,))
    s2_chunks = x.chunks[:-2] + (pairs(rows), cols, (2,))
    call_kw = dict(kwargs, dst_type=dst_type)

    def run(block, block_info=None):
        idx, starts, sizes = _block_info(block_info)
        return _call("dynamic_mx_quant_with_dual_axis", "npu_dynamic_mx_quant_with_dual_axis",
                     _where("dynamic_mx_quant_with_dual_axis", idx, starts, sizes), block, **call_kw)

    y_dtype = _y_dtype(dst)
    return _two_outputs(x.chunks, run, (x,), {}, (y_chunks, s1_chunks, y_chunks, s2_chunks),
                        (y_dtype, np.dtype(np.uint8), y_dtype, np.dtype(np.uint8)), "dynamic-mx-quant-with-dual-axis")


def _y_dtype(dst):
    import ml_dtypes

    return np.dtype(np.uint8) if dst in _FP4 else np.dtype(getattr(ml_dtypes, dst))
