"""Host side of a DequantSwigluQuant launch: operands flattened and widened the way the kernels read them, outputs
allocated here (never inside njit), one kernel call per launch.

Two kernel families (docs/ops/dequant_swiglu_quant.md §3-4): with group_index the DequantSwigluQuantBase kernels
(tiling.dsq_tiling, DequantSwigluQuantBaseTilingData); without it the SwiGluTilingData kernels
(tiling.nogroup_tiling). Compile cost: one njit per family and per ``faithful``; the bias kind, the models and the
tiling are run-time arguments.
"""

import numpy as np

from npu_emu.device.launch import launch
from npu_emu.device.read_only import read_only
from npu_emu.kernels.dequant_swiglu_quant import kernel as K
from npu_emu.kernels.swiglu.launch import contended_work


def _f32(a, fallback=1):
    """A float operand widened to float32 on the host (exact, as the kernel's Cast CAST_NONE)."""
    if a is None:
        return np.zeros(fallback, np.float32)
    return np.ascontiguousarray(np.asarray(a).astype(np.float32)).reshape(-1)


def bias_operands(bias, bias_dtype):
    """-> (bias_kind 0 none / 1 int32 / 2 float, int32 bias, float32 bias)."""
    kind = 0 if bias is None else (1 if bias_dtype == "int32" else 2)
    bi = np.ascontiguousarray(bias.reshape(-1)) if kind == 1 else np.zeros(1, np.int32)
    bf = _f32(bias) if kind == 2 else np.zeros(1, np.float32)
    return kind, bi, bf


def _launch(kern, tr, extra, args):
    """``args``: the GM buffers in kernel order, the two outputs (y, scale) last."""
    args = tuple(read_only(a) for a in args[:-2]) + tuple(args[-2:])

    def kernel(block_dim, tdn, ub_size, *gm):
        kern(block_dim, tdn, ub_size, *extra, *gm)

    kernel.__name__ = kern.__name__
    launch(kernel, tr.block_dim, tr.tiling, *args, ub_size=tr.ub_size, validate=False, work=contended_work())


def run_group(tr, x, ws, asc, bias, bias_dtype, qs, qo, gi, em, dm, faithful=False):
    """The group_index kernels on int32 x [T, 2H] -> (y int8 [T * H], scale float32 [T]); rows outside every group
    stay 0."""
    T = tr.tiling.inDimx
    H = tr.tiling.outDimy
    y = np.zeros(T * H, np.int8)
    scale = np.zeros(T, np.float32)
    kind, bi, bf = bias_operands(bias, bias_dtype)
    args = (np.ascontiguousarray(x.reshape(-1)), _f32(ws), _f32(asc), bi, bf, _f32(qs), _f32(qo),
            np.ascontiguousarray(gi.reshape(-1).astype(np.int64)), y.view(np.uint8), scale)
    kern = K.dsq_group_kernel_faithful if faithful else K.dsq_group_kernel_fused
    _launch(kern, tr, (kind, em, dm), args)
    return y, scale


def run_nogroup(tr, x, ws, asc, bias, bias_dtype, qs, qo, quant_mode, em, dm, faithful=False):
    """The SwiGluTilingData kernels (int32 or 16-bit x, static or dynamic quant) -> (y int8 [T * H], scale float32
    [T]). The static kernels never write the scale: left 0 here (undefined on the device). 16-bit x is widened to
    float32 here (the kernels' first Cast, exact); it has no bias or dequant scales."""
    td = tr.tiling
    y = np.empty(td.rowLen * td.colLen, np.int8)
    scale = (np.zeros if quant_mode == 0 else np.empty)(td.rowLen, np.float32)
    x_kind = K.X_INT32 if x.dtype == np.int32 else K.X_FLOAT
    if x_kind == K.X_INT32:
        kind, bi, bf = bias_operands(bias, bias_dtype)
        xi, xf = np.ascontiguousarray(x.reshape(-1)), np.zeros(1, np.float32)
    else:
        kind, bi, bf = bias_operands(None, None)
        xi, xf = np.zeros(1, np.int32), _f32(x)
        ws = asc = None
    args = (xi, xf, _f32(ws), _f32(asc), bi, bf, _f32(qs), _f32(qo), y.view(np.uint8), scale)
    kern = K.dsq_nogroup_kernel_faithful if faithful else K.dsq_nogroup_kernel_fused
    _launch(kern, tr, (kind, x_kind, quant_mode, em, dm), args)
    return y, scale
