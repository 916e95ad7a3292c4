"""GatherDequantInt8 (the Kirin 9020 custom op): the declaration every front end reads."""

from npu_emu.frontend.registry import CFunction, OnnxNode, Op, TorchOp

_API = "npu_emu.kernels.gather_dequant_int8.api"
_TORCH = "npu_emu.kernels.gather_dequant_int8.torch_ops"
_ONNX = "npu_emu.kernels.gather_dequant_int8.onnx_nodes:gather_dequant_int8"
_INPUTS = ("table", "indices", "scale", "zero_point")

OP = Op(
    name="gather_dequant_int8",
    ops={"gather_dequant_int8": f"{_API}:gather_dequant_int8"},
    aclnn={name: f"{_API}:{name}" for name in ("aclnnGatherDequantInt8", "aclnnGatherDequantInt8GetWorkspaceSize")},
    torch=(
        TorchOp("gather_dequant_int8(Tensor table, Tensor indices, Tensor scale, Tensor zero_point) -> Tensor",
                f"{_TORCH}:gather_dequant_int8", f"{_TORCH}:gather_dequant_int8_fake", torch_npu=False),
    ),
    cabi=(
        # emulator-provided: the vendor sample has no aclnn entry (docs/ops/gather_dequant_int8.md)
        CFunction("aclnnGatherDequantInt8", "aclnn_gather_dequant_int8.h",
                  ("table:tensor", "indices:tensor", "scale:tensor", "zeroPoint:tensor", "out:out")),
    ),
    cli="npu_emu.kernels.gather_dequant_int8.cli",
    configs="npu_emu.kernels.gather_dequant_int8.configs:CONFIGS",
    demo="npu_emu.kernels.gather_dequant_int8.demo:CASES",
    golden="npu_emu.kernels.gather_dequant_int8.golden",
    onnx=(
        # hicann/cann-recipes-harmony-infer: ops/ascendc/src/gather_dequant_int8_custom/: test/create_onnx.py writes
        # the node in the default domain; its ONNX plugin also maps domain "custom"
        OnnxNode("GatherDequantInt8", "", _INPUTS, _ONNX, "gather_dequant_int8"),
        OnnxNode("GatherDequantInt8", "custom", _INPUTS, _ONNX, "gather_dequant_int8"),
    ),
    dask={"gather_dequant_int8": "npu_emu.kernels.gather_dequant_int8.dask_chunks:gather_dequant_int8"},
    compile_seconds=9,
)
