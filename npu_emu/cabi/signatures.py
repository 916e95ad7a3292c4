"""The one table of the aclnn entry points the C ABI exports.

Each row gives the C declaration (CANN's parameter order, names and types, from the public aclnn headers and docs)
and how the bridge hands each argument to the same-named function of :mod:`npu_emu.aclnn`. The header writer, the
C wrapper generator and the embedded bridge all read this table, so a parameter cannot be declared one way and
passed another.

Parameter kinds:

* ``tensor`` ``const aclTensor*`` input; ``out`` ``const aclTensor*`` and ``outm`` ``aclTensor*`` outputs (CANN's
  headers use both): handed over as numpy views of the memory.
* ``int64`` ``int64_t``, ``double``, ``bool``, ``str`` / ``cstr`` (``char*`` / ``const char*``, may be null),
  ``dtype`` (``aclDataType``).
"""

from dataclasses import dataclass, field

C_TYPES = {
    "tensor": "const aclTensor*",
    "out": "const aclTensor*",
    "outm": "aclTensor*",
    "int64": "int64_t",
    "double": "double",
    "bool": "bool",
    "str": "char*",
    "cstr": "const char*",
    "dtype": "aclDataType",
}


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    # npu_emu keyword that labels a uint8 carrier (HiF8, E8M0, packed FP4/INT4) with the tensor's aclDataType
    dtype_kw: str = None
    # the tensor may be in FRACTAL_NZ storage (handed over as a quant-matmul NzWeight)
    nz: bool = False
    # the op reads the storage, whatever the view says: handed over as the contiguous storage-shaped array (the
    # compressed sparse weight and its index, which CANN's example creates as ND tensors with the dense view shape)
    storage: bool = False


@dataclass(frozen=True)
class Op:
    name: str            # "aclnnXxx": the second phase; the first is name + "GetWorkspaceSize"
    header: str          # aclnnop/<header>
    params: tuple = field(default_factory=tuple)

    @property
    def workspace_name(self):
        return self.name + "GetWorkspaceSize"


def _p(spec):
    """"name:kind[:dtype_kw][:nz][:storage]" -> Param."""
    parts = spec.split(":")
    name, kind, flags = parts[0], parts[1], parts[2:]
    kw = next((x for x in flags if x and x not in ("nz", "storage")), None)
    return Param(name, kind, kw, "nz" in flags, "storage" in flags)


def _op(name, header, *specs):
    return Op(name, header, tuple(_p(s) for s in specs))


# x2 may be FRACTAL_NZ in V3/V4/V5 too: CANN's examples convert it with aclnnTransMatmulWeight and pass it on
_V5 = ("x1:tensor:x1_dtype", "x2:tensor:x2_dtype:nz", "x1Scale:tensor:x1_scale_dtype",
       "x2Scale:tensor:x2_scale_dtype", "yScale:tensor", "x1Offset:tensor", "x2Offset:tensor", "yOffset:tensor",
       "bias:tensor", "transposeX1:bool", "transposeX2:bool", "groupSize:int64", "out:outm")

OPS = (
    _op("aclnnSignBitsUnpack", "aclnn_sign_bits_unpack.h",
        "self:tensor", "size:int64", "dtype:dtype", "out:outm"),
    _op("aclnnSignBitsPack", "aclnn_sign_bits_pack.h",
        "self:tensor", "size:int64", "out:outm"),
    # emulator-provided: the vendor sample has no aclnn entry (docs/ops/gather_dequant_int8.md)
    _op("aclnnGatherDequantInt8", "aclnn_gather_dequant_int8.h",
        "table:tensor", "indices:tensor", "scale:tensor", "zeroPoint:tensor", "out:out"),
    _op("aclnnDynamicMxQuant", "aclnn_dynamic_mx_quant.h",
        "x:tensor", "axis:int64", "roundModeOptional:str", "dstType:int64", "blocksize:int64", "scaleAlg:int64",
        "yOut:out:y_dtype", "mxscaleOut:out"),
    _op("aclnnDynamicMxQuantV2", "aclnn_dynamic_mx_quant_v2.h",
        "x:tensor", "axis:int64", "roundModeOptional:str", "dstType:int64", "blocksize:int64", "scaleAlg:int64",
        "dstTypeMax:double", "yOut:out:y_dtype", "mxscaleOut:out"),
    _op("aclnnDynamicMxQuantV3", "aclnn_dynamic_mx_quant_v3.h",
        "x:tensor", "axis:int64", "roundModeOptional:str", "dstType:int64", "blocksize:int64", "scaleAlg:int64",
        "dstTypeMax:double", "maxLowBound:double", "yOut:out:y_dtype", "mxscaleOut:out"),
    _op("aclnnGroupedDynamicMxQuant", "aclnn_grouped_dynamic_mx_quant.h",
        "x:tensor", "groupIndex:tensor", "roundMode:cstr", "dstType:int64", "blocksize:int64",
        "y:out:y_dtype", "mxscale:out"),
    _op("aclnnGroupedDynamicMxQuantV2", "aclnn_grouped_dynamic_mx_quant_v2.h",
        "x:tensor", "groupIndex:tensor", "roundMode:cstr", "dstType:int64", "blocksize:int64", "scaleAlg:int64",
        "dstTypeMax:double", "y:out:y_dtype", "mxscale:out"),
    _op("aclnnQuantMatmulV3", "aclnn_quant_matmul_v3.h",
        "x1:tensor:x1_dtype", "x2:tensor:x2_dtype:nz", "scale:tensor:scale_dtype", "offset:tensor", "bias:tensor",
        "transposeX1:bool", "transposeX2:bool", "out:out"),
    _op("aclnnQuantMatmulV4", "aclnn_quant_matmul_v4.h",
        "x1:tensor:x1_dtype", "x2:tensor:x2_dtype:nz", "scale:tensor:scale_dtype", "offset:tensor",
        "pertokenScaleOptional:tensor", "bias:tensor", "transposeX1:bool", "transposeX2:bool", "out:out"),
    _op("aclnnQuantMatmulV5", "aclnn_quant_matmul_v5.h", *_V5),
    _op("aclnnQuantMatmulWeightNz", "aclnn_quant_matmul_weight_nz.h",
        *_V5),
    _op("aclnnTransQuantParamV2", "aclnn_trans_quant_param_v2.h",
        "scale:tensor", "offset:tensor", "out:out"),
    _op("aclnnTransQuantParamV3", "aclnn_trans_quant_param_v3.h",
        "scale:tensor", "offset:tensor", "roundMode:int64", "out:out"),
    _op("aclnnSparse4to2QuantMatmulWeightNz", "aclnn_sparse4to2quant_matmul_weight_nz.h",
        "x:tensor", "sparseWeight:tensor::storage", "index:tensor::storage", "xScale:tensor",
        "sparseWeightScale:tensor", "biasOptional:tensor", "out:outm"),
)

BY_NAME = {op.name: op for op in OPS}

# Hand-written C++ in runtime.cpp: header -> declarations. aclnnTransSparse4to2Para is the sparse op's host
# compressor; the others are the data-movement ops CANN's quant-matmul examples call around npu-emu's ops (a
# transpose, and the ND -> FRACTAL_NZ weight conversion), plain copies that need no npu-emu kernel.
_PHASE2 = "(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)"
HOST_HELPERS = {
    "aclnn_sparse4to2quant_matmul_weight_nz.h": (
        "aclnnStatus aclnnTransSparse4to2Para(const int8_t* weight, aclIntArray* shape, int8_t** sparseWeight, "
        "int64_t** sparseWeightDims, uint64_t* sparseWeightDimsNum, uint8_t** index, int64_t** indexDims, "
        "uint64_t* indexDimsNum)",
    ),
    "aclnn_trans_matmul_weight.h": (
        "aclnnStatus aclnnCalculateMatmulWeightSize(const aclIntArray* tensorShape, uint64_t* weightTensorSize)",
        "aclnnStatus aclnnCalculateMatmulWeightSizeV2(const aclIntArray* tensorShape, aclDataType dataType, "
        "uint64_t* weightTensorSize)",
        "aclnnStatus aclnnTransMatmulWeightGetWorkspaceSize(aclTensor* mmWeightRef, uint64_t* workspaceSize, "
        "aclOpExecutor** executor)",
        "aclnnStatus aclnnTransMatmulWeight" + _PHASE2,
    ),
    "aclnn_permute.h": (
        "aclnnStatus aclnnPermuteGetWorkspaceSize(const aclTensor* self, const aclIntArray* dims, aclTensor* out, "
        "uint64_t* workspaceSize, aclOpExecutor** executor)",
        "aclnnStatus aclnnPermute" + _PHASE2,
    ),
}


def c_params(op):
    """The C parameter list of the first phase."""
    args = [f"{C_TYPES[p.kind]} {p.name}" for p in op.params]
    return ", ".join(args + ["uint64_t* workspaceSize", "aclOpExecutor** executor"])
