"""User arrays -> the operands the cube sees: dtype relabelling, sub-byte unpacking, exact values, transposes.

* Transposed views (aclnn ``TensorContiguousProcess`` / torch_npu ``is_transpose_last_two_dims``), judged by strides
  as the source does: an x1/x2 whose last two dims view a transposed dense block is taken as that block with the
  transpose flag flipped; a scale, bias or offset is read as its block without a flag (an MX scale by dims -3 / -2,
  ``MxScaleContiguousProcess``).
* INT4 (docs/codecs.md §8): two's-complement nibbles, element 2i in the low nibble; INT32 carries 8 nibbles LSB first
  (on little-endian memory the same bytes). FP4 E2M1 (docs/codecs.md §7.2): two codes per byte, element order per
  ``fp4_nibble_order``; FLOAT32 carries 8 codes (the A8W4 "C0_4" weights). ml_dtypes int4 / float4_e2m1fn
  arrays hold one element per byte and need no unpacking.
* Float formats decode through ``npu_emu.dtypes.scalar.DECODE_TABLES`` (exact float32 values), widened to float64.
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.dtypes import scalar
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import as_array, is_torch_tensor, resolve_dtype
from npu_emu.kernels.quant_matmul.routing import TensorDesc
from npu_emu.kernels.quant_matmul.switches import CHOICES

FP4_ORDERS = CHOICES["fp4_nibble_order"]
E8M0_ZERO = CHOICES["e8m0_zero"]

# significant bits of each float format (bounds the exactness of the float64 GEMMs in accum.py)
SIG_BITS = {"float8_e4m3fn": 4, "float8_e5m2": 3, "hifloat8": 4, "float4_e2m1": 2, "float4_e1m2": 3}
_ONE_PER_BYTE = (np.dtype("uint8"), np.dtype("int8"))


@dataclass
class Operand:
    """A tensor argument after normalisation.

    ``data``: C-contiguous storage (the caller's bytes, transposed views undone); ``dtype``: canonical name
    after relabelling; ``desc``: the aclnn view (shape with packed dims expanded); ``flipped``: the caller's
    array was a transposed view, so the aclnn layer flips the transpose flag.
    """

    name: str
    data: np.ndarray
    dtype: str
    desc: TensorDesc
    flipped: bool = False


def geometry(x):
    """(shape, strides in elements) of a torch tensor or numpy array: the aclnn view the checks below read. numpy
    gives size-1 dims of a contiguous array arbitrary strides, so a C-contiguous numpy array reports its canonical
    strides (it is never a transposed view)."""
    if is_torch_tensor(x):
        return tuple(x.shape), tuple(x.stride())
    if x.flags.c_contiguous:
        st, span = [], 1
        for d in reversed(x.shape):
            st.append(span)
            span *= d
        return x.shape, tuple(reversed(st))
    return x.shape, tuple(st // x.itemsize for st in x.strides)


def batch_dense(shape, st, first, span):
    for bd in range(first, -1, -1):
        if st[bd] != span:
            return False
        span *= shape[bd]
    return True


def _transposed_last_two(x):
    """aclnn ``IsTransposeLastTwoDims`` / op-plugin ``is_transpose_last_two_dims``: the last two dims view a
    transposed dense block (batch dims dense above it), and not both of size 1."""
    if isinstance(x, np.ndarray) and x.flags.c_contiguous:
        return False         # canonical strides: st[-2] == 1 and st[-1] == shape[-2] only when both dims are 1
    shape, st = geometry(x)
    n = len(shape)
    if n < 2 or n > 6 or not (st[-2] == 1 and st[-1] == shape[-2]):
        return False
    return batch_dense(shape, st, n - 3, shape[-1] * shape[-2]) and not (shape[-1] == 1 and shape[-2] == 1)


def _mx_transposed(x):
    """aclnn ``MxScaleContiguousProcess`` (aclnn_quant_matmul_v5.cpp): an MX scale (…, a, b, 2) whose dims -3 / -2
    view a (…, b, a, 2) block."""
    shape, st = geometry(x)
    n = len(shape)
    if n < 3 or not (st[-3] == shape[-1] and st[-2] == shape[-1] * shape[-3]):
        return False
    return batch_dense(shape, st, n - 4, shape[-1] * shape[-2] * shape[-3]) and not (shape[-2] == 1
                                                                                      and shape[-3] == 1)


def _storage_view(x, mx):
    """A scale / bias / offset as aclnn's contiguous processing sees it: a view transposed in its last two dims (or,
    for an MX scale, in dims -3 / -2) is read as the block it views, without the transpose flag (V5
    ``TensorContiguousProcess`` with a temporary flag). Anything else is made contiguous as it is."""
    if not (is_torch_tensor(x) or isinstance(x, np.ndarray)) or len(x.shape) < 2:
        return x
    swap = x.transpose if is_torch_tensor(x) else (lambda a, b: np.swapaxes(x, a, b))
    if mx and _mx_transposed(x):
        return swap(-3, -2)
    return swap(-1, -2) if _transposed_last_two(x) else x


def transposed_pair(x, dim):
    """op-plugin ``is_transpose_certain_two_dims``: stride(dim + 1) == stride(dim) * size(dim), in elements."""
    shape, st = geometry(x if is_torch_tensor(x) else np.asarray(x))
    return st[dim + 1] == st[dim] * shape[dim]


def storage_dtype_name(arr):
    return resolve_dtype(arr.dtype, "array dtype")


def packing(dtype, arr):
    """Elements per stored item along the last dim: 2 (bytes), 8 (int32/float32 words) or 1."""
    if dtype not in ("int4", "float4_e2m1", "float4_e1m2"):
        return 1
    if arr.dtype in _ONE_PER_BYTE:
        return 2
    if arr.dtype.itemsize == 4:
        return 8
    return 1


def operand(x, name, dtype=None, *, origin=None, detect_transpose=False, int32_is_int4=False, storage=False):
    """Normalise an argument (None stays None). ``dtype`` relabels the caller's bits (torch_npu ``x1_dtype``...).

    ``int32_is_int4``: x1/x2 of this op, where an INT32 tensor carries 8 INT4 values (its view counts them).
    ``storage``: a scale / bias / offset; a transposed view is read as the block it views (``_storage_view``)."""
    if x is None:
        return None
    flipped = False
    if storage:
        mx = dtype is not None and resolve_dtype(dtype, f"{name} dtype") == "float8_e8m0"
        if not mx and not isinstance(x, (list, tuple)):
            own = getattr(x, "dtype", None)
            try:
                mx = own is not None and resolve_dtype(own, f"{name} dtype") == "float8_e8m0"
            except AclnnError:
                mx = False
        x = _storage_view(x, mx)
    if detect_transpose and (is_torch_tensor(x) or isinstance(x, np.ndarray)) and _transposed_last_two(x):
        x, flipped = (x.transpose(-1, -2) if is_torch_tensor(x) else np.swapaxes(x, -1, -2)), True
    arr = as_array(x, name, origin=origin)
    own = storage_dtype_name(arr)
    name_dt = own if dtype is None else resolve_dtype(dtype, f"{name} dtype")
    if dtype is not None and name_dt != own:
        _check_relabel(arr, own, name_dt, name)
    per = 8 if (int32_is_int4 and name_dt == "int32") else packing(name_dt, arr)
    shape = arr.shape
    if per > 1 and arr.ndim >= 1:
        shape = shape[:-1] + (shape[-1] * per,)
    return Operand(name, arr, name_dt, TensorDesc(name_dt, tuple(shape)), flipped)


def _check_relabel(arr, own, new, name):
    """A relabel reinterprets bits: the storage item size must fit the new dtype (torch_npu make_wrapper)."""
    ok = {
        1: ("int8", "uint8", "hifloat8", "float8_e4m3fn", "float8_e5m2", "float8_e8m0", "float4_e2m1", "int4",
            "float4_e1m2"),
        2: ("float16", "bfloat16", "int16", "uint16"),
        4: ("int32", "float32", "int4", "float4_e2m1", "uint32"),
        8: ("int64", "uint64"),
    }.get(arr.dtype.itemsize, ())
    if new not in ok:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{name}: cannot relabel a {own} array as {new} (element size {arr.dtype.itemsize} byte(s));"
                         f" pass the raw bits in a matching container (uint8 for 8-bit and packed 4-bit formats)")


# --------------------------------------------------------------------------------------------------------------
# unpacking and exact values
# --------------------------------------------------------------------------------------------------------------

def nibbles(data, order="low_first"):
    """Packed bytes (or int32/float32 words, little-endian) -> one 4-bit code per element along the last dim."""
    b = np.ascontiguousarray(data).view(np.uint8).reshape(data.shape[:-1] + (-1,))
    lo = b & np.uint8(0x0F)
    hi = b >> np.uint8(4)
    first, second = (lo, hi) if order == "low_first" else (hi, lo)
    return np.stack([first, second], axis=-1).reshape(b.shape[:-1] + (b.shape[-1] * 2,))


def int_values(op):
    """Integer operand -> int8 values in storage layout (INT4 sign-extended)."""
    d = op.data
    if op.dtype == "int8":
        return d.view(np.int8) if d.dtype != np.int8 else d
    if op.dtype in ("int4", "int32"):
        if packing("int4", d) == 1:
            return d.astype(np.int8)                      # ml_dtypes.int4: one value per byte
        b = np.ascontiguousarray(d).view(np.int8).reshape(d.shape[:-1] + (-1,))
        out = np.empty(b.shape[:-1] + (2 * b.shape[-1],), np.int8)
        np.right_shift(np.left_shift(b, 4), 4, out=out[..., 0::2])   # int8 shifts sign-extend the nibble
        np.right_shift(b, 4, out=out[..., 1::2])
        return out
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.name}: {op.dtype} is not an integer matmul input")


_F64_TABLES = {}


def _f64_table(name):
    """DECODE_TABLES[name] widened to float64 once (exact), so that a decode is one lookup instead of two passes."""
    table = _F64_TABLES.get(name)
    if table is None:
        table = scalar.DECODE_TABLES[name].astype(np.float64)
        table.flags.writeable = False
        _F64_TABLES[name] = table
    return table


def float_values(op, fp4_nibble_order="low_first"):
    """Float operand -> exact float64 values in storage layout."""
    d = op.data
    if op.dtype in ("float8_e4m3fn", "float8_e5m2", "hifloat8"):
        return _f64_table(op.dtype)[d.view(np.uint8)]
    if op.dtype == "float4_e2m1":
        if packing("float4_e2m1", d) == 1:
            codes = d.view(np.uint8) & np.uint8(0x0F)
        else:
            codes = nibbles(d, fp4_nibble_order)
        return _f64_table("float4_e2m1")[codes]
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op.name}: {op.dtype} is not a float matmul input")


def e8m0_values(op, e8m0_zero="pow2"):
    """E8M0 scale codes -> float64 powers of two (0xFF NaN; 0x00 per ``e8m0_zero``)."""
    return _f64_table("float8_e8m0_zero" if e8m0_zero == "zero" else "float8_e8m0")[op.data.view(np.uint8)]


def scale_values(op):
    """float32 / bfloat16 / float16 scale or bias -> float32 (exact widening)."""
    d = op.data
    if d.dtype == np.float32:
        return d
    return d.astype(np.float32)


def logical(x, transposed):
    """Storage layout -> the logical (..., rows, cols) matrix view (no copy)."""
    return np.swapaxes(x, -1, -2) if transposed else x
