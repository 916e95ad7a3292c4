"""The Dask front end of SignBitsUnpack / SignBitsPack (``npu_emu.dask``, declared in op.py): how a dask array is split so that
every chunk's call gives the bits of one whole call (docs/integrations/dask.md)."""

import dask.array as da
import numpy as np

from npu_emu.dask.chunking import (
    _as_dask,
    _bad,
    _block_info,
    _call,
    _chunk_kwargs,
    _fix_axis,
    _multiple_rule,
    _positive_int,
    _where,
)


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
