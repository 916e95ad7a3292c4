"""torch.library bindings of SignBitsPack / SignBitsUnpack (declared in op.py): the CPU kernels hand the schema's
arguments to npu_emu.ops; the fakes give the result's shape and dtype from sizes alone (SymInt-safe arithmetic)."""

import torch

from npu_emu import ops
from npu_emu.frontend.torch_args import soc_kw


def npu_sign_bits_pack(input, size):
    return ops.npu_sign_bits_pack(input, size, **soc_kw())


def npu_sign_bits_unpack(input, size, dtype):
    return ops.npu_sign_bits_unpack(input, size, dtype, **soc_kw())


def npu_sign_bits_pack_fake(input, size):
    return input.new_empty((size, (input.numel() + 7) // 8 // size), dtype=torch.uint8)


def npu_sign_bits_unpack_fake(input, size, dtype):
    return input.new_empty((size, input.numel() * 8 // size), dtype=dtype)
