"""What the torch bindings of every op (``kernels/<op>/torch_ops.py``, declared in op.py) share: dtype arguments
as the schemas deliver them, the emulated SoC, and the fake kernels' refusal of what they do not model.

Dtype arguments arrive in ``int?`` slots as integers (torch dtypes become c10::ScalarType codes on the way in,
torch_npu's own constants are 285-297, from the dtype table) and go back to the torch dtype or npu-emu name the ops
take; ``None`` in an optional slot becomes the value op-plugin's C++ uses. Imported only where torch is.
"""

import os

import torch

from npu_emu import dtype_table
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

# torch_npu's constants and torch's float8 codes for npu-emu's own formats (hifloat8 290, float4_e2m1fn_x2 296,
# int4 285: op-plugin _meta_registrations.py; 23 / 24 torch's float8_e5m2 / e4m3fn)
_NPU_CODES = {c: n for c, n in dtype_table.TORCH_NPU_CODES.items() if c >= dtype_table.TORCH_NPU_OFFSET}

# torch_npu's constants for formats torch has too (aclDataType + 256: float16 257, int8 258, bfloat16 283, ...)
_PLAIN_NPU_CODES = {d.torch_npu_code: d.torch for d in dtype_table.TABLE
                    if d.torch_npu and d.torch_npu_code not in _NPU_CODES
                    and isinstance(getattr(torch, d.torch or "", None), torch.dtype)}

_CODES = {}      # c10::ScalarType code -> torch dtype, filled once by scalar_types()
_MAX_CODE = 256  # c10::ScalarType is an int8_t enum


def scalar_type_code(dtype):
    """The c10::ScalarType code torch puts into an ``int`` schema slot for ``dtype`` (torch.bfloat16 -> 15).

    torch has no Python API for the code itself; its argument parser makes it whenever a dtype meets an ``int``
    slot. aten::diagonal's ``int offset`` is such a slot, and the diagonal of a 1 x N arange at offset k is [k].
    (The reverse, a code in a ``ScalarType`` slot, is not safe: c10 does not range-check it.)
    """
    row = torch.ops.aten.diagonal.default(torch.arange(_MAX_CODE).reshape(1, _MAX_CODE), dtype)
    if row.numel() != 1:
        raise RuntimeError(f"the ScalarType code of {dtype} is not below {_MAX_CODE}")
    return int(row[0])


def scalar_types():
    """{ScalarType code: torch dtype} for every dtype the torch module names (computed once)."""
    if not _CODES:
        found = {}
        for value in vars(torch).values():
            if isinstance(value, torch.dtype) and value not in found.values():
                found[scalar_type_code(value)] = value
        _CODES.update(found)
    return _CODES


def dtype_arg(code, what):
    """A dtype argument as the npu_emu.ops functions take it: a torch dtype, an npu-emu name (torch_npu's own
    types, which have no torch dtype) or None."""
    if code is None or isinstance(code, torch.dtype):
        return code
    code = int(code)
    if code in _NPU_CODES:
        return _NPU_CODES[code]
    if code in _PLAIN_NPU_CODES:                      # torch_npu.bfloat16 (283), torch_npu.float16 (257), ...
        return getattr(torch, _PLAIN_NPU_CODES[code])
    dtype = scalar_types().get(code)
    if dtype is None:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{what}={code} is neither a torch ScalarType code nor a torch_npu dtype constant "
                         f"({sorted(_NPU_CODES)}); pass a torch dtype such as torch.bfloat16")
    return dtype


def torch_dtype_of(name_or_dtype):
    """torch dtype of a result whose format is ``name_or_dtype``: torch_npu's own formats travel as uint8."""
    if isinstance(name_or_dtype, torch.dtype):
        return name_or_dtype
    value = getattr(torch, name_or_dtype, None)
    return value if isinstance(value, torch.dtype) else torch.uint8


# The emulated device: one SoC for every op, as a real machine has (npu_emu.torch.set_soc or NPU_EMU_SOC). None:
# each op's own default (the A2 910B2 for sign bits and quant matmul, the 950PR for the MX ops), so that a script
# that mixes MX quantisation with an MX matmul needs the 950 named (docs/integrations/torch.md §3).
SOC = os.environ.get("NPU_EMU_SOC") or None




def soc_kw():
    """The ``soc=`` keyword of every op call (empty: each op's own default)."""
    return {} if SOC is None else {"soc": SOC}


def unmodelled(op, what):
    return NotImplementedError(f"npu_emu.torch: the fake kernel of {op} does not model {what}; run it eagerly "
                               f"(outside torch.compile / export) or open an issue")
