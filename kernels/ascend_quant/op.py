"""AscendQuantV2 (torch_npu npu_quantize div_mode=False, aclnnAscendQuantV3) and Quantize (div_mode=True,
aclnnQuantize, Ascend 950): the declaration every front end reads."""

from npu_emu.frontend.registry import Op, TorchOp

_API = "npu_emu.kernels.ascend_quant.api"
_TORCH = "npu_emu.kernels.ascend_quant.torch_ops"

OP = Op(
    name="ascend_quant",
    ops={name: f"{_API}:{name}" for name in ("npu_quantize", "ascend_quant")},
    aclnn={name: f"{_API}:{name}" for name in ("aclnnAscendQuantV3", "aclnnAscendQuantV3GetWorkspaceSize",
                                                     "aclnnQuantize", "aclnnQuantizeGetWorkspaceSize")},
    torch=(
        # op-plugin op_plugin_functions.yaml (OP_PLUGIN_VERSION); ``self`` renamed ``input`` as torch_npu does
        TorchOp("npu_quantize(Tensor input, Tensor scales, Tensor? zero_points, int dtype, int axis=1, "
                "bool div_mode=True) -> Tensor", f"{_TORCH}:npu_quantize", f"{_TORCH}:npu_quantize_fake"),
    ),
    configs="npu_emu.kernels.ascend_quant.configs:CONFIGS",
    golden="npu_emu.kernels.ascend_quant.golden",
    demo="npu_emu.kernels.ascend_quant.demo:CASES",
    compile_seconds=60,
)
