"""DequantSwigluQuant: the declaration every front end reads (docs/contributing/writing_a_kernel.md)."""

from npu_emu.frontend.registry import CFunction, Op, TorchOp

_API = "npu_emu.kernels.dequant_swiglu_quant.api"
_TORCH = "npu_emu.kernels.dequant_swiglu_quant.torch_ops"
# hicann/ops-nn: quant/dequant_swiglu_quant/docs/aclnnDequantSwigluQuant.md and ...V2.md (the first phase's order)
_IN = ("x:tensor", "weightScaleOptional:tensor", "activationScaleOptional:tensor", "biasOptional:tensor",
       "quantScaleOptional:tensor", "quantOffsetOptional:tensor", "groupIndexOptional:tensor", "activateLeft:bool",
       "quantModeOptional:str")

OP = Op(
    name="dequant_swiglu_quant",
    ops={"npu_dequant_swiglu_quant": f"{_API}:npu_dequant_swiglu_quant"},
    aclnn={name: f"{_API}:{name}" for name in ("aclnnDequantSwigluQuantV2",
                                               "aclnnDequantSwigluQuantV2GetWorkspaceSize",
                                               "aclnnDequantSwigluQuant",
                                               "aclnnDequantSwigluQuantGetWorkspaceSize")},
    torch=(
        TorchOp("npu_dequant_swiglu_quant(Tensor x, *, Tensor? weight_scale=None, Tensor? activation_scale=None, "
                "Tensor? bias=None, Tensor? quant_scale=None, Tensor? quant_offset=None, Tensor? group_index=None, "
                "bool activate_left=False, int quant_mode=0, int? dst_type=None, int? round_mode=None, "
                "int? activate_dim=None, int swiglu_mode=0, float clamp_limit=7.0, float glu_alpha=1.702, "
                "float glu_bias=1.0) -> (Tensor, Tensor)",
                f"{_TORCH}:npu_dequant_swiglu_quant", f"{_TORCH}:npu_dequant_swiglu_quant_fake"),
    ),
    cabi=(
        CFunction("aclnnDequantSwigluQuant", "aclnn_dequant_swiglu_quant.h", (*_IN, "yOut:out", "scaleOut:out")),
        CFunction("aclnnDequantSwigluQuantV2", "aclnn_dequant_swiglu_quant_v2.h",
                  (*_IN, "dstType:int64", "roundModeOptional:str", "activateDim:int64", "swigluMode:int64",
                   "clampLimit:double", "gluAlpha:double", "gluBias:double", "yOut:out", "scaleOut:out")),
    ),
    dask={"dequant_swiglu_quant": "npu_emu.kernels.dequant_swiglu_quant.dask_chunks:dequant_swiglu_quant"},
    cli="npu_emu.kernels.dequant_swiglu_quant.cli",
    demo="npu_emu.kernels.dequant_swiglu_quant.demo:CASES",
    configs="npu_emu.kernels.dequant_swiglu_quant.configs:CONFIGS",
    golden="npu_emu.kernels.dequant_swiglu_quant.golden",
    compile_seconds=60,
)
