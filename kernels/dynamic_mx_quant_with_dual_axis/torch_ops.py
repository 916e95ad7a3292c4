"""torch.library binding of npu_dynamic_mx_quant_with_dual_axis (declared in op.py): the CPU kernel hands the
schema's arguments to npu_emu.ops; the fake gives shapes and dtypes from sizes alone."""

from npu_emu import ops
from npu_emu.frontend.torch_args import soc_kw
from npu_emu.kernels.mx_quant.torch_ops import _mx_y


def npu_dynamic_mx_quant_with_dual_axis(input, *, round_mode="rint", dst_type=296, scale_alg=0, dst_type_max=0.0):
    return ops.npu_dynamic_mx_quant_with_dual_axis(input, round_mode=round_mode, dst_type=dst_type,
                                                   scale_alg=scale_alg,
                                                   dst_type_max=0.0 if dst_type_max is None else dst_type_max,
                                                   **soc_kw())


def npu_dynamic_mx_quant_with_dual_axis_fake(input, *, round_mode="rint", dst_type=296, scale_alg=0,
                                             dst_type_max=0.0):
    import torch

    op = "npu_dynamic_mx_quant_with_dual_axis"
    *lead, m, n = input.shape
    s1 = input.new_empty((*lead, m, (-(-n // 32) + 1) // 2, 2), dtype=torch.uint8)
    s2 = input.new_empty((*lead, (-(-m // 32) + 1) // 2, n, 2), dtype=torch.uint8)
    return _mx_y(op, input, dst_type), s1, _mx_y(op, input, dst_type), s2
