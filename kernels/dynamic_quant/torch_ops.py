"""torch.library bindings of DynamicQuant (declared in op.py): the CPU kernels call npu_emu.ops; the fakes give
shapes and dtypes from sizes alone (op-plugin get_output_tensor_wrapper)."""

import torch

from npu_emu import ops
from npu_emu.frontend.torch_args import soc_kw

_QUINT4X2 = 16


def _kw(smooth_scales, group_index, dst_type, quant_mode, dst_type_max):
    return dict(smooth_scales=smooth_scales, group_index=group_index, dst_type=dst_type, quant_mode=quant_mode,
                dst_type_max=dst_type_max, **soc_kw())


def npu_dynamic_quant(input, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                      dst_type_max=0.0):
    return ops.npu_dynamic_quant(input, **_kw(smooth_scales, group_index, dst_type, quant_mode, dst_type_max))


def npu_dynamic_quant_asymmetric(input, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                                 dst_type_max=0.0):
    return ops.npu_dynamic_quant_asymmetric(input, **_kw(smooth_scales, group_index, dst_type, quant_mode,
                                                          dst_type_max))


def _y_fake(input, dst_type):
    if dst_type == _QUINT4X2:
        return input.new_empty(tuple(input.shape[:-1]) + (input.shape[-1] // 8,), dtype=torch.int32)
    return input.new_empty(tuple(input.shape), dtype=torch.int8)


def npu_dynamic_quant_fake(input, smooth_scales=None, group_index=None, dst_type=None, quant_mode="pertoken",
                           dst_type_max=0.0):
    return _y_fake(input, dst_type), input.new_empty(tuple(input.shape[:-1]), dtype=torch.float32)


def npu_dynamic_quant_asymmetric_fake(input, smooth_scales=None, group_index=None, dst_type=None,
                                      quant_mode="pertoken", dst_type_max=0.0):
    lead = tuple(input.shape[:-1])
    return (_y_fake(input, dst_type), input.new_empty(lead, dtype=torch.float32),
            input.new_empty(lead, dtype=torch.float32))
