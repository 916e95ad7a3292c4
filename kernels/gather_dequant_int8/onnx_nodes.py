"""The ONNX node of GatherDequantInt8 (declared in op.py): the Kirin 9020 sample's custom node, run through
npu_emu.ops."""


def gather_dequant_int8(table, indices, scale, zero_point):
    import npu_emu.ops as ops

    return (ops.gather_dequant_int8(table, indices, scale, zero_point),)
