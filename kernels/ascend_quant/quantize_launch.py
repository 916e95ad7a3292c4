"""Host side of a Quantize (aclnnQuantize) launch: tiling, GM buffers as bytes, the kernel on its cores
(docs/ops/ascend_quant.md §9)."""

import numpy as np
from npu_emu.kernels.ascend_quant import quantize_kernel as qk
from npu_emu.kernels.ascend_quant import quantize_tiling as qt

from npu_emu.device.launch import launch
from npu_emu.device.read_only import read_only

_Y = {"int8": np.int8, "uint8": np.uint8, "int32": np.int32}


def _bytes(a):
    return read_only(np.ascontiguousarray(a).reshape(-1).view(np.uint8))


def run(x, scale, zp, x_dtype, s_dtype, z_dtype, y_dtype, mode, axis, *, div_model, soc, core_num=None,
        ub_size=None, faithful=False, y=None):
    """x / scale / zp: numpy arrays (scale already float32 or bfloat16: aclnn casts a half scale). ``faithful``: the
    tile walk instead of the fused kernel (same bits); ``y``: an array of x's shape and y's dtype to write (default:
    a new one). Returns (y, TilingResult)."""
    tr = qt.tiling(x.shape, x_dtype, s_dtype, z_dtype, y_dtype, mode, axis, soc=soc, core_num=core_num,
                   ub_size=ub_size)
    y = np.empty(x.shape, _Y[y_dtype]) if y is None else y
    if x.size:
        tags = read_only(np.array([qt.MODES[mode], div_model], np.int64))
        z_gm = _bytes(zp if zp is not None else np.zeros(4, np.uint8))
        dev = qk.device(x_dtype, y_dtype, s_dtype, z_dtype)
        kernel = dev.quantize_kernel if faithful else dev.fused_kernel
        launch(kernel, tr.block_dim, tr.tiling, _bytes(x), _bytes(scale), z_gm, y.reshape(-1).view(np.uint8), tags,
               ub_size=tr.ub_size)
    return y, tr
