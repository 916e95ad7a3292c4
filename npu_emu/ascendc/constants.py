"""Enumerations of the Ascend C instruction layer.

Values are the Ascend C enum values so that numbers read off a CANN kernel or dump mean the same here:
* ``SELMODE`` and ``CMPMODE``: ``cannmirror/asc-devkit: impl/basic_api/utils/kernel_utils_mode.h``.
* ``RoundMode`` (``CAST_NONE`` .. ``CAST_HYBRID``): re-exported from ``npu_emu.dtypes.scalar`` (one definition).
* Type tags ``DT_*``: the aclDataType / ge::DataType codes (docs/conventions.md §5). numba has no float16 / bfloat16 /
  float8 arrays (docs/contributing/numba_rules.md §2.1), so a LocalTensor of those formats is an integer bit view
  (``uint16`` / ``uint8``); an instruction whose result depends on the format takes the tag as an argument.
  ``DT_AUTO`` means "the view's own numpy dtype" (float32, int8/16/32, uint8/16/32): a ``uint16`` view without a
  tag is uint16 integer data, never half.

Tags and modes must be compile-time constants at njit call sites (module globals like these) so that numba prunes
the branches of the other formats; passing them as runtime values works but compiles every branch.
"""

from npu_emu.dtypes.scalar import (  # noqa: F401  (re-export: the codecs own the RoundMode enum)
    CAST_CEIL,
    CAST_FLOOR,
    CAST_HYBRID,
    CAST_NONE,
    CAST_ODD,
    CAST_RINT,
    CAST_ROUND,
    CAST_TRUNC,
)

# AscendC::SELMODE
VSEL_CMPMASK_SPR = 0
VSEL_TENSOR_SCALAR_MODE = 1
VSEL_TENSOR_TENSOR_MODE = 2

# AscendC::CMPMODE
LT = 0
GT = 1
EQ = 2
LE = 3
GE = 4
NE = 5

# Element formats (aclDataType codes)
DT_AUTO = -1
DT_FLOAT = 0
DT_FLOAT16 = 1
DT_INT8 = 2
DT_INT32 = 3
DT_UINT8 = 4
DT_INT16 = 6
DT_UINT16 = 7
DT_UINT32 = 8
DT_INT64 = 9
DT_BF16 = 27
DT_INT4 = 29
DT_HIFLOAT8 = 34
DT_FLOAT8_E5M2 = 35
DT_FLOAT8_E4M3FN = 36
DT_FLOAT8_E8M0 = 37
DT_FLOAT4_E2M1 = 40
DT_FLOAT4_E1M2 = 41

# Cast flags (bit set; the register / switch a flag stands for is named in the comment)
CAST_FLAG_SAT = 1             # float destination: saturating mode (CTRL[48] = 0 or SatMode::SAT): Inf/overflow -> +-max, NaN -> 0
CAST_FLAG_KEEP_NAN = 2        # with CAST_FLAG_SAT, FP8 keeps NaN (CTRL[50] = 1; codecs switch sat_keep_nan)
CAST_FLAG_HYBRID_SCRIPT = 4   # HiF8 HYBRID overflow rule of the Huawei scripts (codecs switch hybrid_overflow="script")
CAST_FLAG_F16_SUB_RAW = 8     # half -> HiF8 HYBRID on fp16 subnormals uses raw bits (hybrid_f16_subnormal="raw")
CAST_FLAG_FP4_NAN_SIGN = 16   # NaN -> FP4 zero keeps the NaN's sign (codecs switch fp4_nan="nan_sign")
CAST_FLAG_E8M0_ZERO = 32      # E8M0 code 0x00 decodes to 0.0 (codecs switch e8m0_zero="zero")
CAST_FLAG_FP4_HIGH_FIRST = 64  # fp4x2 packing: element 2i in the high nibble (codecs switch fp4_nibble_order)

# Division models of the vector Div (a named switch, docs/conventions.md; the device's Div rounding is not public,
# [HW-unverified]): DIV_IEEE = one correctly rounded IEEE float32 division (default); DIV_RECIP_MUL = a * fp32(1 / b),
# two roundings (the "reciprocal then multiply" model, up to 1 ulp off).
DIV_IEEE = 0
DIV_RECIP_MUL = 1

# Vector unit geometry: one repeat reads 256 bytes; DataCopy moves 32-byte blocks.
REPEAT_BYTES = 256
BLOCK_BYTES = 32

__all__ = [
    "CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD", "CAST_HYBRID",
    "VSEL_CMPMASK_SPR", "VSEL_TENSOR_SCALAR_MODE", "VSEL_TENSOR_TENSOR_MODE",
    "LT", "GT", "EQ", "LE", "GE", "NE",
    "DT_AUTO", "DT_FLOAT", "DT_FLOAT16", "DT_INT8", "DT_INT32", "DT_UINT8", "DT_INT16", "DT_UINT16", "DT_UINT32",
    "DT_INT64", "DT_BF16", "DT_INT4", "DT_HIFLOAT8", "DT_FLOAT8_E5M2", "DT_FLOAT8_E4M3FN", "DT_FLOAT8_E8M0",
    "DT_FLOAT4_E2M1", "DT_FLOAT4_E1M2",
    "CAST_FLAG_SAT", "CAST_FLAG_KEEP_NAN", "CAST_FLAG_HYBRID_SCRIPT", "CAST_FLAG_F16_SUB_RAW",
    "CAST_FLAG_FP4_NAN_SIGN", "CAST_FLAG_E8M0_ZERO", "CAST_FLAG_FP4_HIGH_FIRST",
    "REPEAT_BYTES", "BLOCK_BYTES", "DIV_IEEE", "DIV_RECIP_MUL",
]
