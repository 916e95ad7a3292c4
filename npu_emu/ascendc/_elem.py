"""Element-level helpers shared by the instruction modules (private).

All are inlined. The ``@overload`` helpers decide from the argument *types* at typing time (element type of an
array, tensor vs scalar operand), so the loops that use them specialise per dtype without run-time tests; the
``@njit`` ones branch on a format tag, which numba prunes only where the tag is a global constant at the call.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload
from numba.np.numpy_support import as_dtype

from npu_emu.ascendc.constants import DT_BF16
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32, f32_as_u32, u32_as_f32

_JIT = dict(inline="always", cache=True, error_model="numpy")


def as_elem(arr, x):
    """``x`` converted to the element type of ``arr`` (the scalar operand of Adds/Duplicate/... is a T)."""
    raise NotImplementedError("as_elem is only callable from njit code")


@overload(as_elem, inline="always")
def _as_elem_ol(arr, x):
    elem = as_dtype(arr.dtype).type

    def impl(arr, x):
        return elem(x)

    return impl


def pick(x, i):
    """``x[i]`` for a tensor operand, ``x`` for a scalar operand (Select mode 1 vs mode 0/2)."""
    raise NotImplementedError("pick is only callable from njit code")


@overload(pick, inline="always")
def _pick_ol(x, i):
    if isinstance(x, types.Array):
        def impl(x, i):
            return x[i]
    else:
        def impl(x, i):
            return x
    return impl


def is_float(x):
    """Compile-time constant: True when the scalar ``x`` is a float (numba folds the branch away)."""
    raise NotImplementedError("is_float is only callable from njit code")


@overload(is_float, inline="always")
def _is_float_ol(x):
    if isinstance(x, types.Float):
        return lambda x: True
    return lambda x: False


def is_float_array(arr):
    """Compile-time constant: True when ``arr`` holds floats."""
    raise NotImplementedError("is_float_array is only callable from njit code")


@overload(is_float_array, inline="always")
def _is_float_array_ol(arr):
    if isinstance(arr.dtype, types.Float):
        return lambda arr: True
    return lambda arr: False


@njit(**_JIT)
def u16_to_f32(h, dtype):
    """Exact widening of a half / bf16 bit pattern to float32."""
    if dtype == DT_BF16:
        return bf16_to_f32(np.uint16(h))
    return f16_to_f32(np.uint16(h))


@njit(**_JIT)
def flush_u16(h, dtype):
    """Subnormal half / bf16 bit pattern -> zero of the same sign (the ``ftz`` switches)."""
    h = np.uint16(h)
    expmask = np.uint16(0x7F80) if dtype == DT_BF16 else np.uint16(0x7C00)
    if (h & expmask) == 0:
        return np.uint16(h & np.uint16(0x8000))
    return h


@njit(**_JIT)
def flush_f32(v):
    """Subnormal float32 -> zero of the same sign."""
    u = f32_as_u32(np.float32(v))
    if (u & np.uint32(0x7F800000)) == 0:
        return u32_as_f32(np.uint32(u & np.uint32(0x80000000)))
    return np.float32(v)


def ubits(x):
    """The bits of a scalar as the unsigned integer of the same width (float32 -> uint32, int16 -> uint16, ...)."""
    raise NotImplementedError("ubits is only callable from njit code")


@overload(ubits, inline="always")
def _ubits_ol(x):
    if isinstance(x, types.Float):
        if x.bitwidth == 32:
            return lambda x: np.float32(x).view(np.uint32)
        return lambda x: np.float64(x).view(np.uint64)
    if isinstance(x, (types.Integer, types.Boolean)):
        u = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[getattr(x, "bitwidth", 8)]
        return lambda x: u(x)
    return None


def from_ubits(arr, u):
    """The element of ``arr``'s type whose bits are the unsigned integer ``u`` (inverse of ``ubits``)."""
    raise NotImplementedError("from_ubits is only callable from njit code")


@overload(from_ubits, inline="always")
def _from_ubits_ol(arr, u):
    dt = arr.dtype
    if isinstance(dt, types.Float):
        if dt.bitwidth == 32:
            return lambda arr, u: np.uint32(u).view(np.float32)
        return lambda arr, u: np.uint64(u).view(np.float64)
    elem = as_dtype(dt).type
    return lambda arr, u: elem(u)


def bitmask(x, bit):
    """All ones (bit set) or all zeros, as the unsigned integer of the width of the scalar ``x``."""
    raise NotImplementedError("bitmask is only callable from njit code")


@overload(bitmask, inline="always")
def _bitmask_ol(x, bit):
    width = x.bitwidth if isinstance(x, (types.Integer, types.Float)) else 8
    u = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[width]
    return lambda x, bit: u(0) - u(bit & 1)


def itemsize(arr):
    """sizeof(T) of an array as a compile-time constant (``arr.itemsize`` is a run-time field of numba's array
    struct, which keeps LLVM from folding the divisions it feeds)."""
    raise NotImplementedError("itemsize is only callable from njit code")


@overload(itemsize, inline="always")
def _itemsize_ol(arr):
    size = as_dtype(arr.dtype).itemsize
    return lambda arr: size

