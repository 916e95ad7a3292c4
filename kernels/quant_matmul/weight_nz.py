"""Weights in FRACTAL_NZ (aclnnQuantMatmulWeightNz, docs/ops/quant_matmul.md §3.4): :class:`NzWeight` (the storage plus
the ND view shape an aclnn tensor carries), its Operand, and the read-back to the ND storage layout that the V3 and V4
cubes take (the layout changes where the cube finds an element, not its value).
"""

from dataclasses import replace

import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import as_array, resolve_dtype
from npu_emu.kernels.quant_matmul import operands
from npu_emu.kernels.quant_matmul.operands import Operand
from npu_emu.kernels.quant_matmul.routing import TensorDesc

SUB_BYTE_NZ = ("float4_e2m1", "float4_e1m2", "int4", "int32")  # 4-bit elements (int32: 8 packed int4 a word)


class NzWeight:
    """An x2 in FRACTAL_NZ: ``storage`` (..., N1, M1, 16, c0) plus the ND ``shape`` of its view
    (docs/ops/quant_matmul.md §3.4).

    numpy arrays carry no storage format, so WeightNz callers wrap their NZ bytes in this. ``from_nd(x2, dtype)``
    builds it from an ND weight the way aclnnTransMatmulWeight lays it out (8-bit formats, c0 = 32 elements).
    4-bit weights (fp4 E2M1 / E1M2, int4, int32-packed int4): ``shape`` counts 4-bit elements, the storage holds
    c0 = 32 (A8W4 fp4) or 64 elements per fractal row, packed two per byte (even element in the low nibble) or eight
    per int32 word; ``from_nd(values, dtype, c0=...)`` packs one-value-per-byte codes that way.
    """

    def __init__(self, storage, shape, dtype=None, transposed=False):
        self.storage = storage
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        # the caller's x2 is the transpose of this weight, as torch_npu's .transpose(-1, -2) of an NZ tensor: the
        # aclnn layer gets transposeX2 = true (the torch front end's NZ records, docs/integrations/torch.md §3.4)
        self.transposed = bool(transposed)

    @classmethod
    def from_nd(cls, x2, dtype=None, c0=None, transposed=False):
        nz = cls._from_nd(x2, dtype, c0)
        nz.transposed = bool(transposed)
        return nz

    @classmethod
    def _from_nd(cls, x2, dtype=None, c0=None):
        from npu_emu.ascendc.nz import nd_to_nz

        arr = np.asarray(x2)
        name = None if dtype is None else resolve_dtype(dtype, "dtype")
        if name in SUB_BYTE_NZ:
            if arr.dtype.itemsize != 1:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, "NzWeight.from_nd of a 4-bit weight takes one code or value "
                                                          "per byte (uint8 codes or ml_dtypes int4/float4_e2m1fn)")
            c0 = int(c0 or (32 if name in ("float4_e2m1", "float4_e1m2") else 64))
            codes = nd_to_nz(arr.view(np.uint8) & np.uint8(0x0F), c0=c0)
            packed = codes[..., 0::2] | (codes[..., 1::2] << np.uint8(4))
            if name == "int32":
                packed = np.ascontiguousarray(packed).view(np.int32)
            return cls(np.ascontiguousarray(packed), arr.shape, name)
        if arr.dtype.itemsize != 1:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "NzWeight.from_nd supports 8-bit weights (int8, fp8, hifloat8) "
                                                      "and 4-bit ones with dtype= (float4_e2m1, int4, int32)")
        return cls(nd_to_nz(arr, c0=32), arr.shape, dtype)


def nz_operand(w, name, dtype, origin):
    """An NzWeight as the x2 Operand: its storage, dtype and the TensorDesc of an NZ tensor with the view shape."""
    store = as_array(w.storage, name, origin=origin)
    dt = resolve_dtype(dtype if dtype is not None else (w.dtype if w.dtype is not None else store.dtype),
                       f"{name} dtype")
    if dt in SUB_BYTE_NZ:
        per = 8 if store.dtype.itemsize == 4 else (2 if store.dtype in (np.uint8, np.int8) else 1)
        c0 = store.shape[-1] * per if store.ndim else 0
        if store.ndim < 4 or store.shape[-2] != 16 or c0 not in (32, 64):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: a 4-bit FRACTAL_NZ storage must be (..., N1, M1, 16, "
                                                      f"c0) with c0 = 32 or 64 elements, got {store.shape} "
                                                      f"({per} element(s) per item)")
        desc = TensorDesc(dt, w.shape, "NZ", tuple(store.shape[:-1]) + (c0,))
        return Operand(name, store, dt, desc, getattr(w, "transposed", False))
    if store.dtype.itemsize != 1 or dt not in ("int8", "float8_e4m3fn", "float8_e5m2", "hifloat8"):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: npu-emu supports FRACTAL_NZ weights of 8-bit formats "
                                                  f"(int8, fp8, hifloat8) and 4-bit ones (fp4, int4), got {dt}")
    if store.ndim < 4 or store.shape[-2:] != (16, 32):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: FRACTAL_NZ storage must be (..., N1, M1, 16, 32), got "
                                                  f"{store.shape}")
    desc = TensorDesc(dt, w.shape, "NZ", tuple(store.shape))
    return Operand(name, store, dt, desc, getattr(w, "transposed", False))


def nz_to_storage_nd(op, transposed, fp4_nibble_order="low_first"):
    """NZ storage -> the ND storage layout ((k, n), or (n, k) when transposed). 4-bit formats come back one
    value per byte (ml_dtypes int4 / float4_e2m1fn), which operands.int_values / float_values read directly."""
    from npu_emu.ascendc.nz import nz_to_nd

    rows, cols = op.desc.shape[-2:]
    data = op.data
    if op.dtype in SUB_BYTE_NZ:
        import ml_dtypes

        per = 1 if op.desc.storage_shape[-1] == data.shape[-1] else 0
        codes = (data.view(np.uint8) & np.uint8(0x0F)) if per else \
            operands.nibbles(data, fp4_nibble_order if op.dtype == "float4_e2m1" else "low_first")
        codes = codes.reshape(op.desc.storage_shape)
        nd = np.ascontiguousarray(nz_to_nd(codes, rows, cols))
        # float4_e1m2 has no ml_dtypes type: its codes stay uint8 (one a byte), which the caller decodes
        data = nd if op.dtype == "float4_e1m2" else nd.view(ml_dtypes.float4_e2m1fn if op.dtype == "float4_e2m1"
                                                             else ml_dtypes.int4)
        return Operand(op.name, data, op.dtype, replace(op.desc, fmt="ND", storage_shape=None))
    nd = nz_to_nd(data, rows, cols)
    return Operand(op.name, np.ascontiguousarray(nd), op.dtype, replace(op.desc, fmt="ND", storage_shape=None))
