"""Host side of an AscendQuantV2 launch: tiling, UB size, GM buffers as bit views, the kernel on its cores
(docs/ops/ascend_quant.md §3-4)."""

import numpy as np

from npu_emu.kernels.ascend_quant import kernel, tiling as tiling_mod
from npu_emu.device.launch import launch
from npu_emu.device.read_only import read_only

_BITS = {"float32": np.float32, "float16": np.uint16, "bfloat16": np.uint16}


def run(x, scale, offset, x_dtype, layout, *, sqrt_mode, round_mode, soc, core_num=None, ub_size=None,
        faithful=False, y=None):
    """x / scale / offset: contiguous numpy arrays already in x's dtype (scale and offset cast as aclnn's
    l0op::Cast does). ``faithful``: the UB-staged transliteration instead of the fused kernel (same bits). ``y``: an
    int8 array of x's shape to write (default: a new one). Returns (y, TilingResult)."""
    tr = tiling_mod.tiling(x.shape, x_dtype, per_tensor=layout == "tensor", has_offset=offset is not None,
                           sqrt_mode=sqrt_mode, round_mode=round_mode, soc=soc, core_num=core_num, ub_size=ub_size)
    bits = _BITS[x_dtype]
    x_gm = np.ascontiguousarray(x).reshape(-1).view(bits)
    s_gm = np.ascontiguousarray(scale).reshape(-1).view(bits)
    o_gm = (np.ascontiguousarray(offset).reshape(-1).view(bits) if offset is not None
            else np.zeros(1, bits))
    y = np.empty(x.shape, np.int8) if y is None else y
    if x.size:
        kern = (kernel.KERNELS if faithful else kernel.FUSED)[(layout, x_dtype)]
        launch(kern, tr.block_dim, tr.tiling, read_only(x_gm), read_only(s_gm), read_only(o_gm), y.reshape(-1),
               ub_size=tr.ub_size)
    return y, tr
