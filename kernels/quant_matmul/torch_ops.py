"""torch.library bindings of npu_quant_matmul and npu_trans_quant_param (declared in op.py): the CPU kernels hand
the schema's arguments to npu_emu.ops (integers in the ops' *_dtype keywords are aclDataType values, so only torch
dtypes and names cross over); the fakes give the result's shape and dtype from sizes alone."""

import torch

from npu_emu import ops
from npu_emu.frontend.torch_args import dtype_arg, soc_kw, torch_dtype_of, unmodelled


def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None,
                     x1_dtype=None, x2_dtype=None, pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None,
                     y_scale=None):
    # a weight torch_npu.npu_format_cast recorded as FRACTAL_NZ goes in as an NzWeight (the WeightNz path)
    from npu_emu.torch import formats

    nz = formats.nz_operand(x2, x2_dtype)
    if nz is not None:
        x2, x2_dtype = nz, None
    return ops.npu_quant_matmul(x1, x2, scale, offset=offset, pertoken_scale=pertoken_scale, bias=bias,
                                output_dtype=dtype_arg(output_dtype, "output_dtype"),
                                x1_dtype=dtype_arg(x1_dtype, "x1_dtype"), x2_dtype=dtype_arg(x2_dtype, "x2_dtype"),
                                pertoken_scale_dtype=dtype_arg(pertoken_scale_dtype, "pertoken_scale_dtype"),
                                scale_dtype=dtype_arg(scale_dtype, "scale_dtype"),
                                group_sizes=None if group_sizes is None else list(group_sizes), y_scale=y_scale,
                                **soc_kw())


def npu_trans_quant_param(scale, offset=None, round_mode=0):
    return ops.npu_trans_quant_param(scale, offset, round_mode)


def npu_quant_matmul_fake(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None,
                          x1_dtype=None, x2_dtype=None, pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None,
                          y_scale=None):
    # 4-bit operands travel packed (int32 words, or uint8 / float32 pairs): their n is not x2's last dim
    packed = {dtype_arg(d, "x_dtype") for d in (x1_dtype, x2_dtype)} & {"int4", "float4_e2m1", "float4_e1m2"}
    if packed or x1.dtype == torch.int32 or x2.dtype in (torch.int32, torch.float32):
        raise unmodelled("npu_quant_matmul", "packed 4-bit operands (int4 / FP4)")
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    out = torch.int8 if output_dtype is None else torch_dtype_of(dtype_arg(output_dtype, "output_dtype"))
    return x1.new_empty((*batch, x1.shape[-2], x2.shape[-1]), dtype=out)


def npu_trans_quant_param_fake(scale, offset=None, round_mode=0):
    if offset is None or scale.dim() != 1:
        return scale.new_empty(scale.shape, dtype=torch.int64)
    return scale.new_empty((torch.sym_max(scale.numel(), offset.numel()),), dtype=torch.int64)
