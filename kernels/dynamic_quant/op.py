"""DynamicQuant: the declaration every front end reads (docs/contributing/writing_a_kernel.md)."""

from npu_emu.frontend.registry import CFunction, Op, TorchOp

_API = "npu_emu.kernels.dynamic_quant.api"
_TORCH = "npu_emu.kernels.dynamic_quant.torch_ops"
_DASK = "npu_emu.kernels.dynamic_quant.dask_chunks"

OP = Op(
    name="dynamic_quant",
    ops={name: f"{_API}:{name}" for name in ("npu_dynamic_quant", "npu_dynamic_quant_asymmetric")},
    aclnn={name: f"{_API}:{name}" for name in (
        "aclnnDynamicQuantGetWorkspaceSize", "aclnnDynamicQuant",
        "aclnnDynamicQuantV2GetWorkspaceSize", "aclnnDynamicQuantV2",
        "aclnnDynamicQuantV3GetWorkspaceSize", "aclnnDynamicQuantV3",
        "aclnnDynamicQuantV4GetWorkspaceSize", "aclnnDynamicQuantV4")},
    torch=(
        # op-plugin op_plugin_functions.yaml (the yaml's schema, verbatim)
        TorchOp("npu_dynamic_quant(Tensor input, *, Tensor? smooth_scales=None, Tensor? group_index=None, "
                "int? dst_type=None, str quant_mode=\"pertoken\", float dst_type_max=0.0) -> (Tensor, Tensor)",
                f"{_TORCH}:npu_dynamic_quant", f"{_TORCH}:npu_dynamic_quant_fake"),
        TorchOp("npu_dynamic_quant_asymmetric(Tensor input, *, Tensor? smooth_scales=None, Tensor? group_index=None, "
                "int? dst_type=None, str quant_mode=\"pertoken\", float dst_type_max=0.0) -> (Tensor, Tensor, Tensor)",
                f"{_TORCH}:npu_dynamic_quant_asymmetric", f"{_TORCH}:npu_dynamic_quant_asymmetric_fake"),
    ),
    cabi=(
        CFunction("aclnnDynamicQuant", "aclnn_dynamic_quant.h",
                  ("x:tensor", "smoothScalesOptional:tensor", "yOut:out", "scaleOut:out")),
        CFunction("aclnnDynamicQuantV2", "aclnn_dynamic_quant.h",
                  ("x:tensor", "smoothScalesOptional:tensor", "groupIndexOptional:tensor", "dstType:int64",
                   "yOut:out", "scaleOut:out", "offsetOut:out")),
    ),
    dask={name: f"{_DASK}:{name}" for name in ("dynamic_quant", "dynamic_quant_asymmetric")},
    cli="npu_emu.kernels.dynamic_quant.cli",
    configs="npu_emu.kernels.dynamic_quant.configs:CONFIGS",
    demo="npu_emu.kernels.dynamic_quant.demo:CASES",
    golden="npu_emu.kernels.dynamic_quant.golden",
    compile_seconds=30,
)
