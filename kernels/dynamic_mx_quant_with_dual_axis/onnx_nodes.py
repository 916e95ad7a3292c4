"""ONNX node of DynamicMxQuantWithDualAxis (declared in op.py): torch_npu's ONNX export of
npu_dynamic_mx_quant_with_dual_axis (domain "npu"), run through npu_emu.ops. Four outputs: y1, mxscale1, y2,
mxscale2 (FP4 y packed two codes per byte, uint8; scales as uint8 E8M0 codes)."""

import numpy as np


def dynamic_mx_quant_with_dual_axis(x, round_mode="rint", dst_type=296, scale_alg=0, dst_type_max=0.0):
    import npu_emu.ops as ops

    y1, s1, y2, s2 = ops.npu_dynamic_mx_quant_with_dual_axis(x, round_mode=round_mode, dst_type=dst_type,
                                                             scale_alg=scale_alg, dst_type_max=dst_type_max)
    return y1, np.asarray(s1).view(np.uint8), y2, np.asarray(s2).view(np.uint8)
