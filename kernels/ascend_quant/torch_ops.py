"""torch.library binding of npu_quantize (declared in op.py): the CPU kernel hands the schema's arguments to the op's
api; the fake gives the result's shape and dtype."""

import torch

from npu_emu.frontend import torch_args


def npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True):
    from npu_emu.kernels.ascend_quant import api

    # div_mode=False: AscendQuantV2 is emulated for the A2 / A3 kernel only, so under an Ascend 950 session (set for
    # the MX ops) it runs the A2 kernel (docs/ops/ascend_quant.md §1). div_mode=True: aclnnQuantize is emulated on
    # the Ascend 950 only and runs on the session's soc (an A2 session gets its 161002, §9)
    soc = torch_args.SOC
    if div_mode:
        kw = {} if soc is None else {"soc": soc}
    else:
        kw = {} if soc is None or soc.startswith("ascend950") else {"soc": soc}
    return api.npu_quantize(input, scales, zero_points, int(dtype), axis, div_mode, **kw)


_DIV_OUT = {13: torch.uint8, 0: torch.uint8, 14: torch.int32, 3: torch.int32}


def npu_quantize_fake(input, scales, zero_points, dtype, axis=1, div_mode=True):
    if div_mode:                 # aclnnQuantize: x's shape; quint8 / uint8 -> uint8, qint32 / int32 -> int32
        return input.new_empty(input.shape, dtype=_DIV_OUT.get(int(dtype), torch.int8))
    if int(dtype) == 16:         # torch.quint4x2: eight int4 per int32 along the last axis
        return input.new_empty((*input.shape[:-1], input.shape[-1] // 8), dtype=torch.int32)
    return input.new_empty(input.shape, dtype=torch.int8)
