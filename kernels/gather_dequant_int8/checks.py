"""Parameter checks of GatherDequantInt8 (docs/ops/gather_dequant_int8.md §0, §2.3, §4).

The device op validates nothing (op_host/gather_dequant_int8.cpp has no checks and there is no aclnn entry), so
every check here is emulator-added: it rejects what the device would run with undefined or silently truncated
results. Codes for uniformity with the other ops: 161001 for None, 161002 otherwise, 561003 for a SoC without a
kernel binary. Order = docs/ops/gather_dequant_int8.md §2.3, first failure wins.
"""

import numpy as np

from npu_emu.device import platforms
from npu_emu.errors import (
    ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    AclnnError,
)
from npu_emu.frontend.core import resolve_dtype

OP = "GatherDequantInt8"
INPUTS = ("table", "indices", "scale", "zero_point")
FP16_SUBNORMAL = ("keep", "flush")
_U32 = 1 << 32


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, f"{OP}: {msg}")


def null(name):
    return AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{OP}: {name} is None (a null tensor); pass an array")


def _fp16_like(a):
    """fp16 arrives as float16 or as its uint16 bit view (docs/ops/gather_dequant_int8.md §5)."""
    return a.dtype in (np.dtype(np.float16), np.dtype(np.uint16))


def check_switches(fp16_subnormal):
    if fp16_subnormal not in FP16_SUBNORMAL:
        raise _bad(f"fp16_subnormal={fp16_subnormal!r} is not valid; use one of {list(FP16_SUBNORMAL)}")


def require_kernel(soc):
    """The op is built only for kirin9020 (AICore().AddConfig("kirin9020")): elsewhere no kernel binary exists."""
    plat = platforms.get(soc)
    if plat.name != "kirin9020":
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                         f"{OP}: no kernel for {plat.name}: the sample registers only AddConfig(\"kirin9020\"); "
                         f"pass soc=\"kirin9020\"")


def check_inputs(table, indices, scale, zero_point, out=None):
    """Checks 1-5 of docs/ops/gather_dequant_int8.md §2.3 on arrays already normalised by npu_emu.frontend.core.as_array
    (None allowed here).

    ``out`` is the aclnn output tensor (None for the ops front end, which allocates it). Returns (V, E).
    """
    # 1. null inputs
    for name, a in zip(INPUTS, (table, indices, scale, zero_point)):
        if a is None:
            raise null(name)

    # 2. dtypes
    if table.dtype != np.uint8:
        raise _bad(f"table dtype must be uint8, got {resolve_dtype(table.dtype, 'table dtype')}; the op reads "
                   "the quantised table as unsigned bytes 0..255 with an asymmetric zero point")
    if indices.dtype != np.int32:
        raise _bad(f"indices dtype must be int32, got {indices.dtype}; convert with indices.astype(np.int32)")
    for name, a in (("scale", scale), ("zero_point", zero_point)):
        if not _fp16_like(a):
            raise _bad(f"{name} dtype must be float16 (or its uint16 bit view), got {a.dtype}; "
                       f"convert with {name}.astype(np.float16)")
    if out is not None and not _fp16_like(out):
        raise _bad(f"out dtype must be float16 (or its uint16 bit view), got {out.dtype}; the op's output is "
                   "always DT_FLOAT16")

    # 3. shapes
    if table.ndim != 2:
        raise _bad(f"table must be 2-D [V, E], got shape {table.shape}")
    vocab, emb = table.shape
    for name, a in (("scale", scale), ("zero_point", zero_point)):
        if a.shape not in ((vocab,), (vocab, 1)):
            raise _bad(f"{name} must have shape ({vocab},) or ({vocab}, 1), one value per table row, "
                       f"got {a.shape}")
    if out is not None and tuple(out.shape) != tuple(indices.shape) + (emb,):
        raise _bad(f"out must have shape indices.shape + (E,) = {tuple(indices.shape) + (emb,)}, "
                   f"got {tuple(out.shape)}")
    if indices.size >= _U32 or vocab >= _U32 or emb >= _U32:
        raise _bad(f"{indices.size} indices, vocab {vocab}, embedding dim {emb}: each must be below 2^32 "
                   "(emulator-added check: the uint32 tiling fields would wrap and the device would silently "
                   "process a different shape)")

    # 4. row length
    if emb % 32 != 0:
        raise _bad(f"embedding dim {emb} must be a multiple of 32 (emulator-added check: the device's unpadded "
                   f"DataCopy silently rounds each row transfer down to {emb // 32 * 32} bytes, leaving stale "
                   f"UB values in the tail and {emb - emb // 16 * 16} outputs per row unwritten); pad the table "
                   "rows to a multiple of 32")

    # 5. index range
    check_indices(indices, vocab)
    return vocab, emb


def check_indices(indices, vocab):
    """Every index in [0, V); the message names the first bad one (the device reads out of bounds instead)."""
    flat = indices.reshape(-1)
    if flat.size == 0:
        return
    bad = (flat < 0) | (flat >= vocab)
    if not bad.any():
        return
    pos = int(np.argmax(bad))
    where = "" if indices.ndim <= 1 else \
        f"indices[{', '.join(str(int(i)) for i in np.unravel_index(pos, indices.shape))}]; "
    raise _bad(f"index {int(flat[pos])} at position {pos} is outside [0, {vocab}) ({where}emulator-added check: "
               "the device does not check and reads outside scale/zero_point in UB and outside the table in GM); "
               "clamp or remap out-of-vocabulary tokens first")


def check_ub(footprint, ub_size):
    """Check 6: only when the caller gives a UB size (the Kirin 9020 figure is not public)."""
    if ub_size is not None and footprint > ub_size:
        raise _bad(f"the kernel needs {footprint} bytes of UB (indices, scale and zero_point stay whole in UB, "
                   f"plus the row buffers) but ub_size={ub_size}; fewer indices or a smaller vocabulary per call "
                   "would fit")
