"""torch.library binding of the DataCopy CO1 -> CO2 dequantisation (declared in op.py; ``torch.ops.npu_emu`` only).
The schema takes the scalar deq word only (DEQ8 / DEQ16 / DEQS16): the per-channel VDEQ8 table decides int8 vs
uint8 from its values, which a fake kernel cannot read."""

import torch

from npu_emu import ops
from npu_emu.frontend.torch_args import unmodelled

_DEQ_OUT = {"DEQ16": torch.float16, "DEQS16": torch.int16}


def data_copy_dequant(acc, deq_value, *, mode="DEQ8", is_relu=False):
    return ops.data_copy_dequant(acc, deq_value, mode=mode, is_relu=is_relu)


def data_copy_dequant_fake(acc, deq_value, *, mode="DEQ8", is_relu=False):
    if mode == "DEQ8":
        out = torch.int8 if (int(deq_value) >> 46) & 1 else torch.uint8     # the word's sign bit picks the type
    elif mode in _DEQ_OUT:
        out = _DEQ_OUT[mode]
    else:
        raise unmodelled("data_copy_dequant", f"mode={mode!r} (the schema takes a scalar deq word)")
    return acc.new_empty(acc.shape, dtype=out)
