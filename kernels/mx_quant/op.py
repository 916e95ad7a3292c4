"""DynamicMxQuant and GroupedDynamicMxQuant (Ascend 950 MX quantisation), plus the MX dequantisation: the two
families this folder declares (one `npu-emu compile --jobs` worker: their kernels share njit functions)."""

from npu_emu.frontend.registry import CFunction, Op, TorchOp

_API = "npu_emu.kernels.mx_quant.api"
_TORCH = "npu_emu.kernels.mx_quant.torch_ops"
_DASK = "npu_emu.kernels.mx_quant.dask_chunks"
_SHARED = dict(
    cli="npu_emu.kernels.mx_quant.cli",
    configs="npu_emu.kernels.mx_quant.configs:CONFIGS",
    demo="npu_emu.kernels.mx_quant.demo:CASES",
    golden="npu_emu.kernels.mx_quant.golden",
    schedule_group="mx_quant",
    compile_seconds=77,
    doc="ops/mx_quant.md",
)
_DYN = ("x:tensor", "axis:int64", "roundModeOptional:str", "dstType:int64", "blocksize:int64", "scaleAlg:int64")
_OUT = ("yOut:out:y_dtype", "mxscaleOut:out")


def _pairs(*names):
    return {n: f"{_API}:{n}" for name in names for n in (name, name + "GetWorkspaceSize")}


OPS = (
    Op(
        name="dynamic_mx_quant",
        ops={name: f"{_API}:{name}" for name in ("npu_dynamic_mx_quant", "npu_anti_mx_quant", "mx_dequantize")},
        aclnn=_pairs("aclnnDynamicMxQuant", "aclnnDynamicMxQuantV2", "aclnnDynamicMxQuantV3"),
        torch=(
            TorchOp('npu_dynamic_mx_quant(Tensor input, *, int axis=-1, str round_mode="rint", int dst_type=296, '
                    "int block_size=32, int? scale_alg=0, float dst_type_max=0.0, float max_low_bound=0.0) "
                    "-> (Tensor, Tensor)", f"{_TORCH}:npu_dynamic_mx_quant", f"{_TORCH}:npu_dynamic_mx_quant_fake"),
            TorchOp("npu_anti_mx_quant(Tensor x, Tensor mxscale, *, int? axis=-1, int? dst_type=15, "
                    "int? src_type=292) -> Tensor", f"{_TORCH}:npu_anti_mx_quant", f"{_TORCH}:npu_anti_mx_quant_fake"),
        ),
        cabi=(
            CFunction("aclnnDynamicMxQuant", "aclnn_dynamic_mx_quant.h", (*_DYN, *_OUT)),
            CFunction("aclnnDynamicMxQuantV2", "aclnn_dynamic_mx_quant_v2.h", (*_DYN, "dstTypeMax:double", *_OUT)),
            CFunction("aclnnDynamicMxQuantV3", "aclnn_dynamic_mx_quant_v3.h",
                      (*_DYN, "dstTypeMax:double", "maxLowBound:double", *_OUT)),
        ),
        dask={"dynamic_mx_quant": f"{_DASK}:dynamic_mx_quant"},
        **_SHARED,
    ),
    Op(
        name="grouped_dynamic_mx_quant",
        ops={"npu_grouped_dynamic_mx_quant": f"{_API}:npu_grouped_dynamic_mx_quant"},
        aclnn=_pairs("aclnnGroupedDynamicMxQuant", "aclnnGroupedDynamicMxQuantV2"),
        torch=(
            TorchOp('npu_grouped_dynamic_mx_quant(Tensor x, Tensor group_index, *, str round_mode="rint", '
                    "int dst_type=23, int blocksize=32, int? scale_alg=0, float? dst_type_max=0.0) "
                    "-> (Tensor, Tensor)", f"{_TORCH}:npu_grouped_dynamic_mx_quant",
                    f"{_TORCH}:npu_grouped_dynamic_mx_quant_fake"),
        ),
        cabi=(
            CFunction("aclnnGroupedDynamicMxQuant", "aclnn_grouped_dynamic_mx_quant.h",
                      ("x:tensor", "groupIndex:tensor", "roundMode:cstr", "dstType:int64", "blocksize:int64",
                       "y:out:y_dtype", "mxscale:out")),
            CFunction("aclnnGroupedDynamicMxQuantV2", "aclnn_grouped_dynamic_mx_quant_v2.h",
                      ("x:tensor", "groupIndex:tensor", "roundMode:cstr", "dstType:int64", "blocksize:int64",
                       "scaleAlg:int64", "dstTypeMax:double", "y:out:y_dtype", "mxscale:out")),
        ),
        dask={"grouped_dynamic_mx_quant": f"{_DASK}:grouped_dynamic_mx_quant"},
        **_SHARED,
    ),
)
