"""torch.library binding of GatherDequantInt8 (declared in op.py; ``torch.ops.npu_emu`` only: torch_npu has no such
function): the CPU kernel calls npu_emu.ops, the fake gives indices.shape + (E,) in float16."""

import torch

from npu_emu import ops
from npu_emu.frontend.torch_args import soc_kw


def gather_dequant_int8(table, indices, scale, zero_point):
    return ops.gather_dequant_int8(table, indices, scale, zero_point, **soc_kw())


def gather_dequant_int8_fake(table, indices, scale, zero_point):
    return table.new_empty((*indices.shape, table.shape[-1]), dtype=torch.float16)
