"""torch.library binding of SwiGlu (declared in op.py)."""

from npu_emu import ops
from npu_emu.frontend.torch_args import soc_kw


def npu_swiglu(input, dim=-1):
    return ops.npu_swiglu(input, dim, **soc_kw())


def npu_swiglu_fake(input, dim=-1):
    d = dim % input.dim()
    shape = list(input.shape)
    shape[d] = shape[d] // 2
    return input.new_empty(shape)
