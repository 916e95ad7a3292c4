"""torch.library binding of npu_quantize (declared in op.py): the CPU kernel hands the schema's arguments to the op's
api; the fake gives the result's shape and dtype."""

import torch

from npu_emu.frontend import torch_args


def npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True):
    from npu_emu.kernels.ascend_quant import api

    # AscendQuantV2 is emulated for the A2 / A3 kernel only: under an Ascend 950 session (set for the MX ops)
    # npu_quantize runs the A2 kernel (docs/ops/ascend_quant.md §1)
    soc = torch_args.SOC
    kw = {} if soc is None or soc.startswith("ascend950") else {"soc": soc}
    return api.npu_quantize(input, scales, zero_points, int(dtype), axis, div_mode, **kw)


def npu_quantize_fake(input, scales, zero_points, dtype, axis=1, div_mode=True):
    if int(dtype) == 16:         # torch.quint4x2: eight int4 per int32 along the last axis
        return input.new_empty((*input.shape[:-1], input.shape[-1] // 8), dtype=torch.int32)
    return input.new_empty(input.shape, dtype=torch.int8)
