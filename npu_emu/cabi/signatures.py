"""The aclnn entry points the C ABI exports, from the op declarations (kernels/<op>/op.py: CFunction).

Each row gives the C declaration (CANN's parameter order, names and types, from the public aclnn headers and docs)
and how the bridge hands each argument to the same-named function of :mod:`npu_emu.aclnn`. The header writer, the
C wrapper generator and the embedded bridge all read this table, so a parameter cannot be declared one way and
passed another.

Parameter kinds:

* ``tensor`` ``const aclTensor*`` input; ``out`` ``const aclTensor*`` and ``outm`` ``aclTensor*`` outputs (CANN's
  headers use both): handed over as numpy views of the memory.
* ``tlist`` ``const aclTensorList*`` and ``tlistm`` ``aclTensorList*`` (an output list): handed over as a list of
  numpy views (None for a null list or entry), each entry as a ``tensor`` is.
* ``intarray`` ``const aclIntArray*``: handed over as a tuple of ints (None for a null array).
* ``int64`` ``int64_t``, ``double``, ``bool``, ``str`` / ``cstr`` (``char*`` / ``const char*``, may be null),
  ``dtype`` (``aclDataType``).
"""

from dataclasses import dataclass, field

from npu_emu.frontend import registry

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
    "tlist": "const aclTensorList*",
    "tlistm": "aclTensorList*",
    "intarray": "const aclIntArray*",
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


# every aclnn entry point the op declarations give a C signature (kernels/<op>/op.py: CFunction)
OPS = tuple(_op(f.name, f.header, *f.params) for f, _ in registry.c_functions())

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
