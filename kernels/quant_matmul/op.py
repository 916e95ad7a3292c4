"""The quantised matmul family (aclnnQuantMatmulV3/V4/V5/WeightNz: QuantBatchMatmulV3 and V4, TransQuantParam,
Sparse4to2QuantMatmul): the declaration every front end reads."""

from npu_emu.frontend.registry import CFunction, Op, TorchOp

_API = "npu_emu.kernels.quant_matmul.api"
_SPARSE = "npu_emu.kernels.quant_matmul.sparse4to2"
_TORCH = "npu_emu.kernels.quant_matmul.torch_ops"

# x2 may be FRACTAL_NZ in V3/V4/V5 too: CANN's examples convert it with aclnnTransMatmulWeight and pass it on
_V5 = ("x1:tensor:x1_dtype", "x2:tensor:x2_dtype:nz", "x1Scale:tensor:x1_scale_dtype",
       "x2Scale:tensor:x2_scale_dtype", "yScale:tensor", "x1Offset:tensor", "x2Offset:tensor", "yOffset:tensor",
       "bias:tensor", "transposeX1:bool", "transposeX2:bool", "groupSize:int64", "out:outm")


def _pairs(module, *names):
    return {n: f"{module}:{n}" for name in names for n in (name, name + "GetWorkspaceSize")}


OP = Op(
    name="quant_matmul",
    ops={**{name: f"{_API}:{name}" for name in ("NzWeight", "npu_quant_matmul", "npu_trans_quant_param")},
         **{name: f"{_SPARSE}:{name}" for name in ("sparse4to2_quant_matmul", "trans_sparse4to2_para")}},
    aclnn={**_pairs(_API, "aclnnQuantMatmulV3", "aclnnQuantMatmulV4", "aclnnQuantMatmulV5", "aclnnQuantMatmulWeightNz",
                    "aclnnTransQuantParamV2", "aclnnTransQuantParamV3"),
           **_pairs(_SPARSE, "aclnnSparse4to2QuantMatmulWeightNz"),
           "aclnnTransSparse4to2Para": f"{_SPARSE}:aclnnTransSparse4to2Para"},
    torch=(
        TorchOp("npu_quant_matmul(Tensor x1, Tensor x2, Tensor scale, *, Tensor? offset=None, "
                "Tensor? pertoken_scale=None, Tensor? bias=None, int? output_dtype=None, int? x1_dtype=None, "
                "int? x2_dtype=None, int? pertoken_scale_dtype=None, int? scale_dtype=None, int[]? group_sizes=None, "
                "Tensor? y_scale=None) -> Tensor", f"{_TORCH}:npu_quant_matmul", f"{_TORCH}:npu_quant_matmul_fake"),
        TorchOp("npu_trans_quant_param(Tensor scale, Tensor? offset=None, int? round_mode=0) -> Tensor",
                f"{_TORCH}:npu_trans_quant_param", f"{_TORCH}:npu_trans_quant_param_fake"),
    ),
    cabi=(
        CFunction("aclnnQuantMatmulV3", "aclnn_quant_matmul_v3.h",
                  ("x1:tensor:x1_dtype", "x2:tensor:x2_dtype:nz", "scale:tensor:scale_dtype", "offset:tensor",
                   "bias:tensor", "transposeX1:bool", "transposeX2:bool", "out:out")),
        CFunction("aclnnQuantMatmulV4", "aclnn_quant_matmul_v4.h",
                  ("x1:tensor:x1_dtype", "x2:tensor:x2_dtype:nz", "scale:tensor:scale_dtype", "offset:tensor",
                   "pertokenScaleOptional:tensor", "bias:tensor", "transposeX1:bool", "transposeX2:bool", "out:out")),
        CFunction("aclnnQuantMatmulV5", "aclnn_quant_matmul_v5.h", _V5),
        CFunction("aclnnQuantMatmulWeightNz", "aclnn_quant_matmul_weight_nz.h", _V5),
        CFunction("aclnnTransQuantParamV2", "aclnn_trans_quant_param_v2.h", ("scale:tensor", "offset:tensor", "out:out")),
        CFunction("aclnnTransQuantParamV3", "aclnn_trans_quant_param_v3.h",
                  ("scale:tensor", "offset:tensor", "roundMode:int64", "out:out")),
        CFunction("aclnnSparse4to2QuantMatmulWeightNz", "aclnn_sparse4to2quant_matmul_weight_nz.h",
                  ("x:tensor", "sparseWeight:tensor::storage", "index:tensor::storage", "xScale:tensor",
                   "sparseWeightScale:tensor", "biasOptional:tensor", "out:outm")),
    ),
    cli="npu_emu.kernels.quant_matmul.cli",
    configs="npu_emu.kernels.quant_matmul.configs:CONFIGS",
    demo="npu_emu.kernels.quant_matmul.demo:CASES",
    golden="npu_emu.kernels.quant_matmul.golden",
    dask={"quant_matmul": "npu_emu.kernels.quant_matmul.dask_chunks:quant_matmul"},
    compile_seconds=45,
)
