"""What the C ABI's runtime calls in the embedded interpreter: aclTensor descriptions -> numpy views of the
program's memory -> :mod:`npu_emu.aclnn`.

Every function returns a tuple whose first item is the aclnn status and whose last is the message (empty on
success); nothing raises into C. A tensor arrives as ``(address, view shape, strides, offset, aclDataType,
aclFormat, storage shape, extent)`` with strides and offset in elements (CANN's aclCreateTensor convention) and
``extent`` the bytes from the address to the end of its aclrtMalloc allocation (-1: not aclrtMalloc memory; then
the storage shape is trusted). A view that would reach outside its allocation is refused with 161002 before any
numpy array exists, so a wrong shape in a C program is a status, not a stray read or write.
"""

import ctypes
import inspect
import os
import threading

import numpy as np

import npu_emu.aclnn as aclnn
from npu_emu.cabi.signatures import BY_NAME
from npu_emu.errors import ACLNN_ERR_INNER, ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from npu_emu.frontend.core import ACL_DTYPES, storage_dtype

# aclFormat values read as plain (row-major) layouts; FRACTAL_NZ (29) only where the table allows it
_PLAIN_FORMATS = {0, 1, 2, 27, 30, 35, 47}
FORMAT_ND, FORMAT_FRACTAL_NZ = 2, 29
# dtypes whose numpy storage is a uint8 carrier: the op is told the real type through the parameter's dtype_kw
_CARRIERS = {"hifloat8", "float8_e8m0", "float4_e2m1", "float4_e1m2", "int4"}
_PACKED = {"float4_e2m1", "float4_e1m2", "int4"}     # two elements per byte

# npu_emu's recent-error slot is process-wide; C keeps one message per thread, so a call and the read of its
# message must not interleave with another thread's call (the GIL alone does not hold across them)
_lock = threading.Lock()


def _bad(message):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, message)


def _prod(dims):
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _raw(addr, nbytes):
    """A writeable uint8 array over nbytes of the program's memory at addr (no copy)."""
    if nbytes == 0:
        return np.zeros(0, np.uint8)
    return np.frombuffer((ctypes.c_char * nbytes).from_address(addr), dtype=np.uint8)


def tensor_view(desc, param, op):
    """numpy view (or NzWeight) of one aclTensor; None for a null tensor. Raises AclnnError."""
    if desc is None:
        return None
    addr, shape, strides, offset, code, fmt, storage, extent = desc
    name = f"{op}: {param.name}"
    if code not in ACL_DTYPES:
        raise _bad(f"{name} has aclDataType {code}, which npu-emu does not know; use one of {sorted(ACL_DTYPES)}")
    dtname = ACL_DTYPES[code]
    if any(d < 0 for d in shape) or any(d < 0 for d in storage):
        raise _bad(f"{name} has a negative dimension (view {list(shape)}, storage {list(storage)})")
    if len(strides) != len(shape):
        raise _bad(f"{name}: {len(strides)} strides for {len(shape)} view dims")
    n = _prod(shape)
    if addr == 0 and n > 0:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} has a null data pointer")
    if param.storage:
        return _storage_view(addr, shape, storage, extent, dtname, name)
    if fmt == FORMAT_FRACTAL_NZ:
        if not param.nz:
            raise _bad(f"{name} is in FRACTAL_NZ (aclFormat 29), which this parameter does not take; pass ND (2)")
        return _nz_view(addr, shape, storage, extent, dtname, name)
    if fmt not in _PLAIN_FORMATS:
        raise _bad(f"{name} has aclFormat {fmt}; npu-emu reads ND-like formats {sorted(_PLAIN_FORMATS)}"
                   f"{' and FRACTAL_NZ (29)' if param.nz else ''}")
    np_dtype = storage_dtype(dtname)
    if dtname in _PACKED:
        return _packed_view(addr, shape, strides, offset, storage, extent, name)
    item = np_dtype.itemsize
    if n == 0:
        return np.zeros(shape, np_dtype)
    if any(s < 0 for s in strides):
        raise _bad(f"{name} has a negative stride {list(strides)}")
    last = offset + sum((d - 1) * s for d, s in zip(shape, strides))     # element index of the farthest element
    need = (last + 1) * item
    if storage and (last + 1) > _prod(storage):
        raise _bad(f"{name}: the view (shape {list(shape)}, strides {list(strides)}, offset {offset}) reaches "
                   f"element {last}, past its storage {list(storage)}")
    if extent >= 0 and need > extent:
        raise _bad(f"{name}: the view needs {need} bytes from its data pointer but its aclrtMalloc allocation "
                   f"has {extent}; aclrtMalloc GetShapeSize(shape) * element size bytes")
    base = _raw(addr, need).view(np_dtype)
    contiguous = all(strides[i] == _prod(shape[i + 1:]) for i in range(len(shape)) if shape[i] > 1)
    if contiguous:
        return base[offset:offset + n].reshape(shape)
    return np.lib.stride_tricks.as_strided(base[offset:], shape=tuple(shape),
                                           strides=tuple(s * item for s in strides))


def _packed_view(addr, shape, strides, offset, storage, extent, name):
    """Two 4-bit elements per byte: the contiguous bytes as uint8 [..., last // 2], as npu_emu takes them."""
    if not shape or shape[-1] % 2:
        raise _bad(f"{name} is a 4-bit type: its last dim ({list(shape)}) must be even")
    if any(strides[i] != _prod(shape[i + 1:]) for i in range(len(shape)) if shape[i] > 1) or offset % 2:
        raise _bad(f"{name} is a 4-bit type: npu-emu reads it contiguous (standard strides, even offset)")
    n = _prod(shape)
    need = (offset + n) // 2
    if extent >= 0 and need > extent:
        raise _bad(f"{name}: the view needs {need} bytes but its aclrtMalloc allocation has {extent}")
    return _raw(addr, need)[offset // 2:].reshape(tuple(shape[:-1]) + (shape[-1] // 2,))


def _storage_view(addr, shape, storage, extent, dtname, name):
    """The whole storage as a contiguous array of the storage shape (the view shape when none was given)."""
    dims = tuple(storage) if storage else tuple(shape)
    np_dtype = storage_dtype(dtname)
    need = _prod(dims) * np_dtype.itemsize
    if extent >= 0 and need > extent:
        raise _bad(f"{name}: the storage {list(dims)} needs {need} bytes but its aclrtMalloc allocation has {extent}")
    return _raw(addr, need).view(np_dtype).reshape(dims)


def _nz_view(addr, shape, storage, extent, dtname, name):
    from npu_emu.kernels.quant_matmul.api import NzWeight

    if len(storage) < 4:
        raise _bad(f"{name}: a FRACTAL_NZ tensor needs its storage shape [..., n1, k1, 16, c0]; got {list(storage)}")
    if dtname in _PACKED:
        if storage[-1] % 2:
            raise _bad(f"{name}: 4-bit FRACTAL_NZ storage needs an even c0; got {list(storage)}")
        dims = tuple(storage[:-1]) + (storage[-1] // 2,)
        np_dtype = np.dtype(np.uint8)
    else:
        dims = tuple(storage)
        np_dtype = storage_dtype(dtname)
    need = _prod(dims) * np_dtype.itemsize
    if extent >= 0 and need > extent:
        raise _bad(f"{name}: the FRACTAL_NZ storage {list(storage)} needs {need} bytes but its aclrtMalloc "
                   f"allocation has {extent}")
    arr = _raw(addr, need).view(np_dtype).reshape(dims)
    return NzWeight(arr, tuple(shape), dtname)


# NPU_EMU_SOC picks the emulated SoC for every op that has a choice (as for torch_npu code), e.g. ascend950pr for
# the arch35 examples; unset: each op's own default
_SOC = os.environ.get("NPU_EMU_SOC") or None


def _takes_soc(fn):
    try:
        return "soc" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _arguments(op, args):
    spec = BY_NAME[op]
    if len(args) != len(spec.params):
        raise AclnnError(ACLNN_ERR_INNER, f"{op}: {len(args)} arguments for {len(spec.params)} parameters")
    values, kwargs = [], {}
    for param, value in zip(spec.params, args):
        if param.kind in ("tensor", "out", "outm"):
            v = tensor_view(value, param, op)
            if value is not None and param.dtype_kw and ACL_DTYPES[value[4]] in _CARRIERS:
                kwargs[param.dtype_kw] = value[4]
            values.append(v)
        elif param.kind in ("tlist", "tlistm"):
            values.append(None if value is None else [_list_item(tensor_view(d, param, op), d) for d in value])
        else:
            values.append(value)
    return values, kwargs


def _list_item(view, desc):
    """A tensor-list element: a list has no dtype keyword to carry the real type of a uint8 carrier, so FLOAT8_E8M0
    elements (one code a byte) come as ml_dtypes float8_e8m0fnu arrays (GroupedMatmul's MX scales)."""
    if desc is not None and isinstance(view, np.ndarray) and ACL_DTYPES.get(desc[4]) == "float8_e8m0":
        import ml_dtypes

        return view.view(ml_dtypes.float8_e8m0fnu)
    return view


class Launch:
    """What the C executor holds: the op's first-phase call, made again at launch.

    npu_emu's first phase reads data values for some checks (index ranges, group ends); a device reads them only
    when the kernel runs, and a program may fill its inputs between the two phases. So the second phase repeats
    the first with the memory as it is then (a failure now is a launch failure) and runs that executor.
    """

    def __init__(self, op, fn, values, kwargs):
        self.op, self.fn, self.values, self.kwargs = op, fn, values, kwargs


def workspace(op, args):
    """First phase: -> (status, workspace_size, Launch, message) or (status, message)."""
    with _lock:
        try:
            values, kwargs = _arguments(op, args)
            fn = getattr(aclnn, op + "GetWorkspaceSize")
            if _SOC is not None and _takes_soc(fn):
                kwargs["soc"] = _SOC
            status, size, _ = fn(*values, **kwargs)
        except AclnnError as e:
            return e.status, e.message
        except Exception as e:  # a bug of npu-emu must still come back as a status, not kill the C program
            return ACLNN_ERR_INNER, f"{op}GetWorkspaceSize: npu-emu internal error: {type(e).__name__}: {e}"
        if status != 0:
            return status, aclnn.aclGetRecentErrMsg()
        return 0, int(size), Launch(op, fn, values, kwargs), ""


def run(op, launch, workspace_size):
    """Second phase: -> (status, message)."""
    with _lock:
        try:
            status, _, executor = launch.fn(*launch.values, **launch.kwargs)
            if status != 0:
                return status, f"{op} at launch: {aclnn.aclGetRecentErrMsg()}"
            status = getattr(aclnn, op)(None, workspace_size, executor)
        except Exception as e:
            return ACLNN_ERR_INNER, f"{op}: npu-emu internal error: {type(e).__name__}: {e}"
        return status, (aclnn.aclGetRecentErrMsg() if status else "")


def trans_sparse4to2(addr, dims, extent):
    """aclnnTransSparse4to2Para on host memory: -> (0, sparse bytes, sparse dims, index bytes, index dims, "")."""
    with _lock:
        try:
            if len(dims) != 2 or any(d <= 0 for d in dims):
                raise _bad(f"shape must be [n, k] with positive dims; got {list(dims)}")
            n = _prod(dims)
            if 0 <= extent < n:
                raise _bad(f"weight holds {extent} bytes, shape {list(dims)} needs {n}")
            weight = _raw(addr, n).view(np.int8).reshape(dims)
            from npu_emu.ops import trans_sparse4to2_para   # raises with the message aclnn's form drops

            sw, index = trans_sparse4to2_para(weight)
        except AclnnError as e:
            return e.status, f"aclnnTransSparse4to2Para: {e.message}"
        except Exception as e:
            return ACLNN_ERR_INNER, f"aclnnTransSparse4to2Para: npu-emu internal error: {type(e).__name__}: {e}"
        sw = np.ascontiguousarray(sw)
        index = np.ascontiguousarray(index)
        return 0, sw.tobytes(), tuple(sw.shape), index.tobytes(), tuple(index.shape), ""
