"""``torch_npu.npu_format_cast`` / ``get_npu_format`` on CPU tensors (docs/integrations/torch.md §3.4).

A CPU tensor has no storage format. npu-emu keeps the format beside the tensor: ``npu_format_cast(w, 29)``
(ACL_FORMAT_FRACTAL_NZ) returns ``w``'s own data, unchanged and in its ND layout, and records that its storage is
FRACTAL_NZ, keyed by the storage (the record holds the storage, so its address cannot be reused while recorded).
Views of it - ``layer.weight.data = npu_format_cast(...)`` makes the Parameter share the storage, a later
``.transpose(-1, -2)`` is a view of it - are recognised by address, so when the weight reaches
``torch_npu.npu_quant_matmul`` the op gets an :class:`~npu_emu.kernels.quant_matmul.api.NzWeight` built from the
weight's logical values (aclnnTransMatmulWeight's layout) and runs the WeightNz path. Any other format code
(2 = ND, ...) is recorded as well and changes nothing.
"""

import numpy as np

ACL_FORMAT_ND = 2
ACL_FORMAT_FRACTAL_NZ = 29

_FORMATS = {}        # data_ptr -> (storage, format, shape, stride, dtype, input_dtype)


def _key(t):
    return t.untyped_storage().data_ptr() if t.numel() else None


def npu_format_cast(tensor, acl_format, customize_dtype=None, input_dtype=None):
    """The tensor itself, its storage recorded as format ``acl_format`` (29: FRACTAL_NZ)."""
    fmt = int(getattr(acl_format, "value", acl_format))
    key = _key(tensor)
    if key is not None:
        _FORMATS[key] = (tensor.untyped_storage(), fmt, tuple(tensor.shape), tuple(tensor.stride()),
                         tensor.dtype, input_dtype)
    return tensor


def get_npu_format(tensor):
    """The format recorded for ``tensor``'s storage by npu_format_cast (2, ND, when none was)."""
    rec = _FORMATS.get(_key(tensor)) if tensor.numel() else None
    return ACL_FORMAT_ND if rec is None else rec[1]


def _fp4_codes(packed):
    """(…, n, k/2) uint8 fp4x2 bytes -> (…, n, k) one code per byte (even element in the low nibble)."""
    lo = packed & np.uint8(0x0F)
    hi = packed >> np.uint8(4)
    return np.stack((lo, hi), axis=-1).reshape(packed.shape[:-1] + (2 * packed.shape[-1],))


def nz_operand(t, x2_dtype=None):
    """For npu_quant_matmul's x2: an NzWeight when ``t``'s storage was cast to FRACTAL_NZ, else None.

    ``t`` is the recorded tensor or its transpose (the last two dims swapped). The NzWeight holds the logical
    (k, n) operand; a fp4x2 weight (torch_npu.float4_e2m1fn_x2 as ``input_dtype`` or ``x2_dtype``) is unpacked to
    one code per element first."""
    if not t.numel():
        return None
    rec = _FORMATS.get(_key(t))
    if rec is None or rec[1] != ACL_FORMAT_FRACTAL_NZ:
        return None
    from npu_emu.frontend.core import as_array
    from npu_emu.kernels.quant_matmul.api import NzWeight
    from npu_emu.frontend.torch_args import dtype_arg

    _, _, shape, stride, _, input_dtype = rec
    fp4 = "float4_e2m1" in (dtype_arg(input_dtype, "input_dtype") if input_dtype is not None else "",
                            dtype_arg(x2_dtype, "x2_dtype") if x2_dtype is not None else "")
    base = as_array(t, "x2")           # contiguous values of the view as passed
    transposed = tuple(t.shape) != shape and tuple(t.shape[-2:]) == shape[-2:][::-1]
    if fp4:
        # the recorded (…, n, k/2) fp4x2 bytes -> (…, n, k) codes; a transposed view is x2 = (n, k)^T (transposeX2)
        src = t.transpose(-1, -2) if transposed else t
        codes = _fp4_codes(as_array(src, "x2").view(np.uint8))
        nz = NzWeight.from_nd(np.ascontiguousarray(codes), "float4_e2m1")
        nz.transposed = transposed
        return nz
    if transposed:
        nz = NzWeight.from_nd(np.ascontiguousarray(as_array(t.transpose(-1, -2), "x2")),
                              "int8" if base.dtype == np.int8 else None)
        nz.transposed = True
        return nz
    return NzWeight.from_nd(np.ascontiguousarray(base), None if base.dtype != np.int8 else "int8")
