"""DynamicMxQuantWithDualAxis (Ascend 950 MX quantisation along axes -1 and -2 at once): the declaration every front
end reads (docs/contributing/writing_a_kernel.md). Its kernels are built on kernels/mx_quant's njit helpers, so it
compiles in that folder's ``--jobs`` worker."""

from npu_emu.frontend.registry import CFunction, OnnxNode, Op, TorchOp

_API = "npu_emu.kernels.dynamic_mx_quant_with_dual_axis.api"
_TORCH = "npu_emu.kernels.dynamic_mx_quant_with_dual_axis.torch_ops"
_PKG = "npu_emu.kernels.dynamic_mx_quant_with_dual_axis"
_ARGS = ("x:tensor", "roundModeOptional:str", "dstType:int64", "scaleAlg:int64")
_OUT = ("y1Out:out:y_dtype", "mxscale1Out:out", "y2Out:out:y_dtype", "mxscale2Out:out")

OP = Op(
    name="dynamic_mx_quant_with_dual_axis",
    ops={"npu_dynamic_mx_quant_with_dual_axis": f"{_API}:npu_dynamic_mx_quant_with_dual_axis"},
    aclnn={n: f"{_API}:{n}" for name in ("aclnnDynamicMxQuantWithDualAxis", "aclnnDynamicMxQuantWithDualAxisV2")
           for n in (name, name + "GetWorkspaceSize")},
    torch=(
        TorchOp('npu_dynamic_mx_quant_with_dual_axis(Tensor input, *, str round_mode="rint", int dst_type=296, '
                "int scale_alg=0, float? dst_type_max=0.0) -> (Tensor, Tensor, Tensor, Tensor)",
                f"{_TORCH}:npu_dynamic_mx_quant_with_dual_axis",
                f"{_TORCH}:npu_dynamic_mx_quant_with_dual_axis_fake"),
    ),
    cabi=(
        CFunction("aclnnDynamicMxQuantWithDualAxis", "aclnn_dynamic_mx_quant_with_dual_axis.h", (*_ARGS, *_OUT)),
        CFunction("aclnnDynamicMxQuantWithDualAxisV2", "aclnn_dynamic_mx_quant_with_dual_axis_v2.h",
                  (*_ARGS, "dstTypeMax:double", *_OUT)),
    ),
    cli="npu_emu.kernels.dynamic_mx_quant_with_dual_axis.cli",
    configs="npu_emu.kernels.dynamic_mx_quant_with_dual_axis.configs:CONFIGS",
    golden="npu_emu.kernels.dynamic_mx_quant_with_dual_axis.golden",
    demo=f"{_PKG}.demo:CASES",
    dask={"dynamic_mx_quant_with_dual_axis": f"{_PKG}.dask_chunks:dynamic_mx_quant_with_dual_axis"},
    onnx=(
        # torch_npu's exporter names its ops NPU<Op> in domain "npu" (as NPUSignBitsPack); this op's export node is
        # not in the public sources (docs/ops/dynamic_mx_quant_with_dual_axis.md §7): the name follows that pattern
        OnnxNode("NPUDynamicMxQuantWithDualAxis", "npu", ("input",),
                 f"{_PKG}.onnx_nodes:dynamic_mx_quant_with_dual_axis", "npu_dynamic_mx_quant_with_dual_axis",
                 (("round_mode", "rint"), ("dst_type", 296), ("scale_alg", 0), ("dst_type_max", 0.0))),
    ),
    schedule_group="mx_quant",
    compile_seconds=60,
)
