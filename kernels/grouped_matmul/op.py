"""GroupedMatmul (aclnnGroupedMatmulV4/V5/WeightNz, torch_npu npu_grouped_matmul): the declaration every front end
reads (docs/ops/grouped_matmul.md)."""

from npu_emu.frontend.registry import CFunction, Op, TorchOp

_API = "npu_emu.kernels.grouped_matmul.api"
_TORCH = "npu_emu.kernels.grouped_matmul.torch_ops"

_SCHEMA = ("npu_grouped_matmul(Tensor[] x, Tensor[] weight, *, Tensor[]? bias=None, Tensor[]? scale=None, "
           "Tensor[]? offset=None, Tensor[]? antiquant_scale=None, Tensor[]? antiquant_offset=None, "
           "Tensor[]? per_token_scale=None, Tensor? group_list=None, Tensor[]? activation_input=None, "
           "Tensor[]? activation_quant_scale=None, Tensor[]? activation_quant_offset=None, int? split_item=0, "
           "int? group_type=None, int? group_list_type=0, int? act_type=0, int[]? tuning_config=None, "
           "int? output_dtype=None, int? x_dtype=None, int? weight_dtype=None, int? scale_dtype=None, "
           "int? per_token_scale_dtype=None) -> Tensor[]")

# aclnnGroupedMatmulV4 / V5 / WeightNz in CANN's header order (V5 adds the tuning config, WeightNz also quantGroupSize)
_V4 = ("x:tlist", "weight:tlist:nz", "biasOptional:tlist", "scaleOptional:tlist", "offsetOptional:tlist",
       "antiquantScaleOptional:tlist", "antiquantOffsetOptional:tlist", "perTokenScaleOptional:tlist",
       "groupListOptional:tensor", "activationInputOptional:tlist", "activationQuantScaleOptional:tlist",
       "activationQuantOffsetOptional:tlist", "splitItem:int64", "groupType:int64", "groupListType:int64",
       "actType:int64", "out:tlistm", "activationFeatureOutOptional:tlistm", "dynQuantScaleOutOptional:tlistm")

OP = Op(
    name="grouped_matmul",
    ops={"npu_grouped_matmul": f"{_API}:npu_grouped_matmul"},
    aclnn={n: f"{_API}:{n}" for name in ("aclnnGroupedMatmulV4", "aclnnGroupedMatmulV5", "aclnnGroupedMatmulWeightNz")
           for n in (name, name + "GetWorkspaceSize")},
    torch=(TorchOp(_SCHEMA, f"{_TORCH}:npu_grouped_matmul", f"{_TORCH}:npu_grouped_matmul_fake"),),
    cli="npu_emu.kernels.grouped_matmul.cli",
    demo="npu_emu.kernels.grouped_matmul.demo:CASES",
    dask={"grouped_matmul": "npu_emu.kernels.grouped_matmul.dask_chunks:grouped_matmul"},
    cabi=(CFunction("aclnnGroupedMatmulV4", "aclnn_grouped_matmul_v4.h", _V4),
          CFunction("aclnnGroupedMatmulV5", "aclnn_grouped_matmul_v5.h",
                    _V4[:16] + ("tuningConfigOptional:intarray",) + _V4[16:]),
          CFunction("aclnnGroupedMatmulWeightNz", "aclnn_grouped_matmul_weight_nz.h",
                    _V4[:16] + ("tuningConfigOptional:intarray", "quantGroupSize:int64") + _V4[16:])),
    golden="npu_emu.kernels.grouped_matmul.golden",
    configs="npu_emu.kernels.grouped_matmul.configs:CONFIGS",
    compile_seconds=60,
)
