"""Routing: which device op (QuantBatchMatmulV3 / V4) a call reaches and which quantisation mode it computes.

Docs: docs/ops/quant_matmul.md §2 (V5 routing), §5 (modes), §7.0 (V3 mode selection). Sources:
``hicann/ops-nn: matmul/quant_batch_matmul_v4/op_host/op_api/aclnn_quant_matmul_v5.cpp``
(``aclnnQuantMatmulGetWorkspaceSizeCommonProcess``), ``matmul/quant_batch_matmul_v3/op_api/quant_matmul_checker.cpp``
(``IsA4W4PergroupNonSymmetric``), ``matmul/quant_batch_matmul_v3/tests/assets/qbmmv3_kernel_golden.py``
(``determine_quant_mode``, ``is_bias_vec``) and ``matmul/common/tests/st/arch35/matmul_quant_util.py``
(``needs_scale_generate``).

Everything here is pure Python on :class:`TensorDesc` (dtype name, view shape, storage format): no arrays are
touched, so the checks and the trace can use it before any data is decoded.
"""

from dataclasses import dataclass

INT_IN = ("int8", "int4")
FP8 = ("float8_e4m3fn", "float8_e5m2")
FP8_HIF8 = FP8 + ("hifloat8",)
FP4 = ("float4_e2m1",)
FLOAT_BIAS = ("float32", "bfloat16", "float16")
U64 = ("uint64", "int64")

GROUP_MASK = 0xFFFF

# The V4 device-op modes (issue 8 implements their kernels; the routing, and the checks that precede the
# kernel, are here).
V4_MODES = ("A8W4-float", "A8W4-int", "A8W8-perblock", "A4W4-pergroup-asym")


@dataclass(frozen=True)
class TensorDesc:
    """What the aclnn layer knows of a tensor: dtype name, view shape and storage format ("ND" / "NZ")."""

    _memo_by_value = True       # its own npu_emu.device.memo key: immutable fields (str, int, bool, tuples) compared by ==

    dtype: str
    shape: tuple
    fmt: str = "ND"
    storage_shape: tuple = None

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def empty(self):
        return self.size == 0

    def dim(self, i):
        return self.shape[i]


def decode_group_size(group_size):
    """groupSize int64 -> (gsM, gsN, gsK): 16 bits each at bits 32, 16 and 0 (docs/ops/quant_matmul.md §4.3)."""
    g = int(group_size) & 0xFFFFFFFFFFFFFFFF
    return (g >> 32) & GROUP_MASK, (g >> 16) & GROUP_MASK, g & GROUP_MASK


def encode_group_size(gs_m, gs_n, gs_k):
    return (int(gs_m) << 32) | (int(gs_n) << 16) | int(gs_k)


def mnk(x1, x2, transpose_x1, transpose_x2):
    """(m, k1, k2, n) from the view shapes and the transpose flags (``GetX1X2DimValue``)."""
    s1, s2 = x1.shape, x2.shape
    m, k1 = (s1[-1], s1[-2]) if transpose_x1 else (s1[-2], s1[-1])
    k2, n = (s2[-1], s2[-2]) if transpose_x2 else (s2[-2], s2[-1])
    return m, k1, k2, n


# --------------------------------------------------------------------------------------------------------------
# V5: V3 or V4 (aclnn_quant_matmul_v5.cpp)
# --------------------------------------------------------------------------------------------------------------

def is_a8w4_float(x1, x2):
    return x1.dtype in FP8 and x2.dtype in FP4


def is_a8w4_int(x1, x2):
    return x1.dtype == "int8" and x2.dtype == "int32"


def is_micro_scaling(x1_scale, x2_scale):
    return x1_scale is not None and x1_scale.dtype == "float8_e8m0" and x2_scale.dtype == "float8_e8m0"


def is_a8w8_perblock(x1, x2, x1_scale, x2_scale):
    """``IsA8W8Perblock``: int8 x int8 with float32 scales whose ranks equal the data ranks."""
    return (x1_scale is not None and x1.dtype == "int8" and x2.dtype == "int8"
            and x1_scale.dtype == "float32" and x2_scale.dtype == "float32"
            and x1_scale.ndim == x1.ndim and x2_scale.ndim == x2.ndim)


def is_a4w4_pergroup_asym(x1, x2, x1_scale, x2_scale, x2_offset, bias, transpose_x1, transpose_x2, gs_k):
    """``QuantMatmulChecker::IsA4W4PergroupNonSymmetric`` (without its bias log: a bias makes it false)."""
    if x1_scale is None or x2_offset is None:
        return False
    if x1_scale.dtype != "float32" or x1_scale.ndim <= 1:
        return False
    if x2_scale.dtype != "float32" or x2_scale.ndim <= 1:
        return False
    if x2_offset.dtype != "float16" or x2_offset.ndim <= 1:
        return False
    if bias is not None:
        return False
    if x1.ndim < 2 or x2.ndim < 2:
        return False
    m = x1.dim(1) if transpose_x1 else x1.dim(0)
    k = x2.dim(1) if transpose_x2 else x2.dim(0)
    n = x2.dim(0) if transpose_x2 else x2.dim(1)
    if k % 1024 or n % 256 or x1.dtype != "int4" or x2.dtype != "int4" or gs_k == 0:
        return False
    groups = -(-k // gs_k)
    return (x1_scale.dim(0) == m and x1_scale.dim(1) == 1 and x2_scale.dim(0) == groups and x2_scale.dim(1) == n
            and x2_offset.dim(0) == groups and x2_offset.dim(1) == n)


def v4_mode(x1, x2, x1_scale, x2_scale, x2_offset, bias, transpose_x1, transpose_x2, group_size):
    """The V4 route of aclnnQuantMatmulV5 (docs/ops/quant_matmul.md §2), or None for QuantBatchMatmulV3.

    ``x1``/``x2`` carry their dtypes *before* the INT32 -> INT4 conversion (an int8 x int32 call is A8W4-int).
    """
    if is_a8w4_float(x1, x2):
        return "A8W4-float"
    if is_a8w4_int(x1, x2):
        return "A8W4-int"
    if is_a8w8_perblock(x1, x2, x1_scale, x2_scale):
        return "A8W8-perblock"
    x1c = TensorDesc("int4", x1.shape) if x1.dtype == "int32" else x1
    x2c = TensorDesc("int4", x2.shape) if x2.dtype == "int32" else x2
    if is_a4w4_pergroup_asym(x1c, x2c, x1_scale, x2_scale, x2_offset, bias, transpose_x1, transpose_x2,
                             decode_group_size(group_size)[2]):
        return "A4W4-pergroup-asym"
    return None


# --------------------------------------------------------------------------------------------------------------
# V3: the quantisation mode and the arithmetic plan (qbmmv3_kernel_golden.py, docs/ops/quant_matmul.md §7.0)
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QuantPlan:
    """How QuantBatchMatmulV3 computes one call (docs/ops/quant_matmul.md §7).

    ``quant_mode``: "MX" (the golden's G-G), "B-B" (per-block; G-B when gsM = 1), "T-T", "T-C", "K-C" (covers
    K-T), "T-T-doublescale", "T-C-doublescale".
    ``accum``: "int" (exact int32 cube) or "float" (fp32 cube, ``float_accum``).
    ``epilogue``: "int32" (acc + bias, scales ignored), "requant" (int8 out), "dequant" (float out), "mx",
    "perblock".
    ``path``: "cube" (Fixpipe dequant) or "mix" (vector epilogue on the AIVs).
    ``bias_stage``: None, "l0c_int" (int32 bias added to the int32 accumulator), "l0c_float" (fp32 bias as the
    L0C start value of the fp8/hif8 static modes), "epilogue" (added after the scales).
    ``truncate_scale``: t19 applied to a float x2Scale (U64 scales are always t19: their storage is FP19).
    ``merge_scales``: doublescale cube path, s = t19(f32(x2Scale * x1Scale)).
    """

    _memo_by_value = True       # its own npu_emu.device.memo key: immutable fields (str, int, bool, tuples) compared by ==

    quant_mode: str
    accum: str
    epilogue: str
    path: str
    out: str
    bias_stage: str = None
    truncate_scale: bool = False
    merge_scales: bool = False
    use_pertoken: bool = False
    gs_m: int = 1
    gs_n: int = 1
    gs_k: int = 1

    @property
    def label(self):
        return {"B-B": "G-B" if self.gs_m == 1 else "B-B"}.get(self.quant_mode, self.quant_mode)


def v3_quant_mode(x1_dtype, scale, pertoken, m, n, gs_n):
    """``determine_quant_mode`` of the V3 golden (SetX1QuantMode / SetX2QuantMode / SetQuantMode)."""
    if scale.dtype == "float8_e8m0":
        return "MX"
    fp = x1_dtype in FP8_HIF8
    x2_perblock = (fp and scale.dtype == "float32" and scale.ndim > 1
                   and (scale.ndim > 2 or scale.dim(0) != 1 or gs_n > 1))
    x2_pertensor = scale.dim(-1) == 1
    x2_perchannel = not x2_pertensor and scale.dim(-1) == n
    if pertoken is None:
        if x2_perblock:
            return "B-B"
        return "T-T" if x2_pertensor else "T-C"
    x1_perblock = fp and pertoken.dtype == "float32" and pertoken.ndim > 1
    if x1_perblock and x2_perblock:
        return "B-B"
    if fp and pertoken.ndim == 1 and pertoken.dim(-1) == 1:
        return "T-C-doublescale" if x2_perchannel else "T-T-doublescale"
    if pertoken.ndim == 1 and pertoken.dim(-1) == m:
        return "K-C"
    return "T-T" if x2_pertensor else "T-C"


def plan_v3(x1_dtype, scale, pertoken, bias_dtype, out_dtype, m, n, group_size=0):
    """The arithmetic plan of a QuantBatchMatmulV3 call whose inputs passed the checks
    (docs/ops/quant_matmul.md §7.0-§7.5)."""
    gs_m, gs_n, gs_k = decode_group_size(group_size)
    mode = v3_quant_mode(x1_dtype, scale, pertoken, m, n, max(gs_n, 1))
    accum = "int" if x1_dtype in INT_IN else "float"
    gs = dict(gs_m=max(gs_m, 1), gs_n=max(gs_n, 1), gs_k=max(gs_k, 1))
    if mode == "MX":
        return QuantPlan("MX", accum, "mx", "cube", out_dtype,
                         bias_stage="epilogue" if bias_dtype else None, use_pertoken=True, **gs)
    if mode == "B-B":
        return QuantPlan("B-B", accum, "perblock", "mix", out_dtype,
                         bias_stage="epilogue" if bias_dtype else None, use_pertoken=True, **gs)

    # is_bias_vec: a float bias is an epilogue bias for integer inputs, and for fp8/hif8 when x1Scale exists
    bias_vec = bias_dtype in FLOAT_BIAS and (x1_dtype in INT_IN or (x1_dtype in FP8_HIF8 and pertoken is not None))
    if bias_dtype is None:
        bias_stage = None
    elif bias_dtype == "int32":
        bias_stage = "l0c_int"
    elif bias_vec:
        bias_stage = "epilogue"
    else:
        bias_stage = "l0c_float"

    if out_dtype == "int32":
        return QuantPlan(mode, accum, "int32", "cube", out_dtype, bias_stage=bias_stage, **gs)
    if out_dtype == "int8":
        return QuantPlan(mode, accum, "requant", "cube", out_dtype, bias_stage=bias_stage, **gs)

    scale_u64 = scale.dtype in U64
    if mode == "K-C":
        return QuantPlan(mode, accum, "dequant", "mix", out_dtype, bias_stage=bias_stage, use_pertoken=True, **gs)
    if mode == "T-T-doublescale" and not bias_vec:
        return QuantPlan(mode, accum, "dequant", "cube", out_dtype, bias_stage=bias_stage, merge_scales=True,
                         use_pertoken=True, **gs)
    if mode in ("T-T-doublescale", "T-C-doublescale"):
        return QuantPlan(mode, accum, "dequant", "mix", out_dtype, bias_stage=bias_stage, use_pertoken=True, **gs)
    # T-T / T-C. needs_scale_generate: an integer cube path truncates a float per-tensor scale itself.
    truncate = (x1_dtype in INT_IN and not scale_u64 and scale.dim(0) == 1
                and bias_dtype not in ("bfloat16", "float32"))
    cube = scale_u64 or truncate or (accum == "float" and bias_stage != "epilogue")
    return QuantPlan(mode, accum, "dequant", "cube" if cube else "mix", out_dtype, bias_stage=bias_stage,
                     truncate_scale=truncate, **gs)
