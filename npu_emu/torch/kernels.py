"""CPU kernels behind the registered schemas: each hands its arguments to the npu_emu.ops function of the same name.

What is done here is only what the schema forces: dtype arguments arrive in ``int?`` slots as integers (torch
dtypes become c10::ScalarType codes on the way in, torch_npu's own constants are 285-297) and go back to the
torch dtype or npu-emu name the ops take; ``None`` in an optional slot becomes the value op-plugin's C++ uses.
"""

import os

import torch

from npu_emu import ops
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend import TORCH_NPU_DTYPES
from npu_emu.torch_npu_shim import DTYPES

# torch_npu's dtype constants above torch's range; int4 (285) is not in frontend.TORCH_NPU_DTYPES because no MX
# argument takes it, but npu_quant_matmul's x2_dtype does (op-plugin _meta_registrations.py: 285 torch_npu.int4).
_NPU_CODES = {**{c: n for c, n in TORCH_NPU_DTYPES.items() if c >= 256}, 285: "int4"}

# torch_npu's constants for formats torch has too (aclDataType + 256: float16 257, int8 258, bfloat16 283, ...)
_PLAIN_NPU_CODES = {code: name for name, code in DTYPES.items()
                    if code not in _NPU_CODES and isinstance(getattr(torch, name, None), torch.dtype)}

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


# ---------------------------------------------------------------------------------------------------------------
# kernels (argument names and defaults are the schemas')
# ---------------------------------------------------------------------------------------------------------------

# The emulated device: one SoC for every op, as a real machine has (npu_emu.torch.set_soc or NPU_EMU_SOC). None:
# each op's own default (the A2 910B2 for sign bits and quant matmul, the 950PR for the MX ops), so that a script
# that mixes MX quantisation with an MX matmul needs the 950 named (docs/integrations/torch.md §3).
SOC = os.environ.get("NPU_EMU_SOC") or None


def _soc():
    return {} if SOC is None else {"soc": SOC}

def npu_sign_bits_pack(input, size):
    return ops.npu_sign_bits_pack(input, size, **_soc())


def npu_sign_bits_unpack(input, size, dtype):
    return ops.npu_sign_bits_unpack(input, size, dtype, **_soc())


def npu_dynamic_mx_quant(input, *, axis=-1, round_mode="rint", dst_type=296, block_size=32, scale_alg=0,
                         dst_type_max=0.0, max_low_bound=0.0):
    # dst_type goes through as the int it is: the mx ops read integers as torch / torch_npu codes themselves
    return ops.npu_dynamic_mx_quant(input, axis=axis, round_mode=round_mode, dst_type=dst_type,
                                    block_size=block_size, scale_alg=0 if scale_alg is None else scale_alg,
                                    dst_type_max=dst_type_max, max_low_bound=max_low_bound, **_soc())


def npu_grouped_dynamic_mx_quant(x, group_index, *, round_mode="rint", dst_type=23, blocksize=32, scale_alg=0,
                                 dst_type_max=0.0):
    return ops.npu_grouped_dynamic_mx_quant(x, group_index, round_mode=round_mode, dst_type=dst_type,
                                            blocksize=blocksize, scale_alg=0 if scale_alg is None else scale_alg,
                                            dst_type_max=0.0 if dst_type_max is None else dst_type_max, **_soc())


def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None,
                     x1_dtype=None, x2_dtype=None, pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None,
                     y_scale=None):
    # a weight npu_format_cast recorded as FRACTAL_NZ goes in as an NzWeight (the WeightNz path)
    from npu_emu.torch import formats

    nz = formats.nz_operand(x2, x2_dtype) if isinstance(x2, torch.Tensor) else None
    if nz is not None:
        x2, x2_dtype = nz, None
    # integers in the ops' *_dtype keywords are aclDataType values: only torch dtypes and names cross over
    return ops.npu_quant_matmul(x1, x2, scale, offset=offset, pertoken_scale=pertoken_scale, bias=bias,
                                output_dtype=dtype_arg(output_dtype, "output_dtype"),
                                x1_dtype=dtype_arg(x1_dtype, "x1_dtype"), x2_dtype=dtype_arg(x2_dtype, "x2_dtype"),
                                pertoken_scale_dtype=dtype_arg(pertoken_scale_dtype, "pertoken_scale_dtype"),
                                scale_dtype=dtype_arg(scale_dtype, "scale_dtype"),
                                group_sizes=None if group_sizes is None else list(group_sizes), y_scale=y_scale,
                                **_soc())


def npu_trans_quant_param(scale, offset=None, round_mode=0):
    return ops.npu_trans_quant_param(scale, offset, round_mode)


def npu_anti_mx_quant(x, mxscale, *, axis=-1, dst_type=15, src_type=292):
    # None in the optional slots: op-plugin's C++ defaults (axis -1, bfloat16 out, src_type 296 = float4_e2m1)
    return ops.npu_anti_mx_quant(x, mxscale, axis=-1 if axis is None else axis,
                                 dst_type=torch.bfloat16 if dst_type is None else dtype_arg(dst_type, "dst_type"),
                                 src_type=296 if src_type is None else src_type)


def npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True):
    from npu_emu.kernels.ascend_quant import api

    return api.npu_quantize(input, scales, zero_points, int(dtype), axis, div_mode, **_soc_a2())


def _soc_a2():
    # AscendQuantV2 is emulated for the A2 / A3 kernel only: under an Ascend 950 session (MX layers) npu_quantize
    # runs the A2 kernel (docs/ops/ascend_quant.md §1)
    return {} if SOC is None or SOC.startswith("ascend950") else {"soc": SOC}


def gather_dequant_int8(table, indices, scale, zero_point):
    return ops.gather_dequant_int8(table, indices, scale, zero_point, **_soc())


def data_copy_dequant(acc, deq_value, *, mode="DEQ8", is_relu=False):
    return ops.data_copy_dequant(acc, deq_value, mode=mode, is_relu=is_relu)


KERNELS = {name: globals()[name] for name in ("npu_quantize", 
    "npu_sign_bits_pack", "npu_sign_bits_unpack", "npu_dynamic_mx_quant", "npu_grouped_dynamic_mx_quant",
    "npu_quant_matmul", "npu_trans_quant_param", "npu_anti_mx_quant", "gather_dequant_int8", "data_copy_dequant")}
