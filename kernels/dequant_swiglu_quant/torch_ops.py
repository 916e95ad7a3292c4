"""torch.library binding of DequantSwigluQuant (declared in op.py)."""

import torch

from npu_emu import ops
from npu_emu.frontend.torch_args import soc_kw


def npu_dequant_swiglu_quant(x, *, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                             quant_offset=None, group_index=None, activate_left=False, quant_mode=0, dst_type=None,
                             round_mode=None, activate_dim=None, swiglu_mode=0, clamp_limit=7.0, glu_alpha=1.702,
                             glu_bias=1.0):
    return ops.npu_dequant_swiglu_quant(
        x, weight_scale=weight_scale, activation_scale=activation_scale, bias=bias, quant_scale=quant_scale,
        quant_offset=quant_offset, group_index=group_index, activate_left=activate_left, quant_mode=quant_mode,
        dst_type=dst_type, round_mode=None if round_mode is None else "rint", activate_dim=activate_dim,
        swiglu_mode=swiglu_mode, clamp_limit=clamp_limit, glu_alpha=glu_alpha, glu_bias=glu_bias, **soc_kw())


def npu_dequant_swiglu_quant_fake(x, *, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                                  quant_offset=None, group_index=None, activate_left=False, quant_mode=0,
                                  dst_type=None, round_mode=None, activate_dim=None, swiglu_mode=0, clamp_limit=7.0,
                                  glu_alpha=1.702, glu_bias=1.0):
    shape = list(x.shape)
    shape[-1] = shape[-1] // 2
    return x.new_empty(shape, dtype=torch.int8), x.new_empty(list(x.shape[:-1]), dtype=torch.float32)
