"""The one table of dtypes (npu_emu.dtype_table; beside, not inside, npu_emu.dtypes, whose import loads numba): each dtype's canonical name, every spelling of it that npu-emu accepts, its bits, its
aclDataType code, its torch_npu constant and its torch dtype. Every front end (``npu_emu.ops``, ``npu_emu.aclnn``,
``npu_emu.dtypes``, the CLI, ``torch.ops.npu``, the emulated ``torch_npu``) resolves names through it, so a name
accepted anywhere is accepted everywhere with the same meaning (docs/conventions.md §5).

Plain data: importing it imports nothing. Sources: aclDataType (hicann/runtime: docs/api_docs/aclDataType.md),
torch_npu's constants = aclDataType + 256 (Ascend/pytorch: torch_npu/csrc/custom_dtype/Init.h,
TORCH_NPU_ENUM_OFFSET), torch's ScalarType codes 23 / 24 for its float8 types (c10/core/ScalarType.h).
"""

from dataclasses import dataclass

TORCH_NPU_OFFSET = 256


@dataclass(frozen=True)
class DType:
    name: str                 # canonical npu-emu name
    acl: int                  # aclDataType code
    bits: int                 # bits per element
    storage: str = None       # numpy dtype holding it ("uint8" for the bit-code formats, "ml_dtypes.X"); None:
                              # torch_npu knows the constant, npu-emu has no array type for it
    aliases: tuple = ()       # other spellings (lower case)
    torch: str = None         # torch.<attr> that is this dtype, where torch has it
    torch_npu: str = None     # torch_npu.<attr> constant (value acl + 256)
    torch_code: int = None    # torch's ScalarType code where op-plugin's dst_type slots take it (float8)
    codec: bool = False       # a low-precision format npu_emu.dtypes encodes / decodes

    @property
    def torch_npu_code(self):
        return None if self.torch_npu is None else TORCH_NPU_OFFSET + self.acl


_F = "float32", "float16", "bfloat16"
TABLE = (
    DType("float32", 0, 32, "float32", ("float", "fp32", "f32", "acl_float", "torch.float32"), "float32", "float32"),
    DType("float16", 1, 16, "float16", ("half", "fp16", "f16", "acl_float16"), "float16", "float16"),
    DType("int8", 2, 8, "int8", ("acl_int8",), "int8", "int8"),
    DType("int32", 3, 32, "int32", ("int", "acl_int32"), "int32", "int32"),
    DType("uint8", 4, 8, "uint8", ("acl_uint8",), "uint8", "uint8"),
    DType("int16", 6, 16, "int16", ("short", "acl_int16"), "int16", "int16"),
    DType("uint16", 7, 16, "uint16", ("acl_uint16",), "uint16", "uint16"),
    DType("uint32", 8, 32, "uint32", ("acl_uint32",), "uint32", "uint32"),
    DType("int64", 9, 64, "int64", ("long", "acl_int64"), "int64", "int64"),
    DType("uint64", 10, 64, "uint64", ("acl_uint64",), "uint64", "uint64"),
    DType("float64", 11, 64, "float64", ("double", "fp64", "acl_double"), "float64", "float64"),
    DType("bool", 12, 8, "bool", ("bool_", "acl_bool"), "bool", "bool"),
    DType("string", 13, 0, torch_npu="string"),
    DType("complex64", 16, 64, torch="complex64", torch_npu="complex64"),
    DType("complex128", 17, 128, torch="complex128", torch_npu="complex128"),
    DType("bfloat16", 27, 16, "ml_dtypes.bfloat16", ("bf16", "acl_bf16"), "bfloat16", "bfloat16"),
    DType("int4", 29, 4, "uint8", ("acl_int4", "quint4x2"), None, "int4"),
    DType("uint1", 30, 1, torch_npu="uint1"),
    DType("complex32", 33, 32, torch="complex32", torch_npu="complex32"),
    DType("hifloat8", 34, 8, "uint8", ("hif8", "acl_hifloat8"), None, "hifloat8", codec=True),
    DType("float8_e5m2", 35, 8, "ml_dtypes.float8_e5m2", ("fp8_e5m2", "e5m2", "acl_float8_e5m2"), "float8_e5m2",
          "float8_e5m2", 23, codec=True),
    DType("float8_e4m3fn", 36, 8, "ml_dtypes.float8_e4m3fn",
          ("float8_e4m3", "fp8_e4m3fn", "fp8_e4m3", "e4m3fn", "e4m3", "acl_float8_e4m3fn"), "float8_e4m3fn",
          "float8_e4m3fn", 24, codec=True),
    DType("float8_e8m0", 37, 8, "uint8", ("float8_e8m0fnu", "fp8_e8m0", "e8m0", "acl_float8_e8m0"),
          "float8_e8m0fnu", "float8_e8m0fnu", codec=True),
    DType("float6_e3m2", 38, 6, "uint8", ("float6_e3m2fn", "fp6_e3m2", "e3m2", "acl_float6_e3m2"), None,
          "float6_e3m2", codec=True),
    DType("float6_e2m3", 39, 6, "uint8", ("float6_e2m3fn", "fp6_e2m3", "e2m3", "acl_float6_e2m3"), None,
          "float6_e2m3", codec=True),
    DType("float4_e2m1", 40, 4, "uint8",
          ("float4_e2m1fn", "float4_e2m1fn_x2", "fp4_e2m1", "e2m1", "acl_float4_e2m1"), "float4_e2m1fn_x2",
          "float4_e2m1fn_x2", codec=True),
    DType("float4_e1m2", 41, 4, "uint8", ("float4_e1m2fn", "float4_e1m2fn_x2", "fp4_e1m2", "e1m2", "acl_float4_e1m2"),
          None, "float4_e1m2fn_x2", codec=True),
)

BY_NAME = {d.name: d for d in TABLE}
BY_ACL = {d.acl: d for d in TABLE}


def _aliases():
    out = {}
    for d in TABLE:
        for spelling in (d.name, *d.aliases, *((d.torch,) if d.torch else ()), *((d.torch_npu,) if d.torch_npu else ())):
            key = spelling.lower()
            if key.startswith("torch."):
                key = key[len("torch."):]
            other = out.setdefault(key, d.name)
            if other != d.name:
                raise ValueError(f"dtype spelling {spelling!r} names both {other} and {d.name}")
    return out


# every accepted spelling (lower case, without a "torch." prefix) -> canonical name
ALIASES = _aliases()

# the integers op-plugin's `int dst_type` / `int? *_dtype` slots take for npu-emu's own formats: torch_npu's
# constants (290 hifloat8 ... 297 float4_e1m2fn_x2, and 285 int4) and torch's ScalarType codes of its float8 types
TORCH_NPU_CODES = {
    **{d.torch_code: d.name for d in TABLE if d.torch_code is not None},
    **{d.torch_npu_code: d.name for d in TABLE if d.torch_npu and (d.codec or d.name == "int4")},
}


def canonical(spelling):
    """Canonical name of a dtype spelling (any case, an optional ``torch.`` prefix), or None."""
    key = spelling.strip().lower()
    if key.startswith("torch."):
        key = key[len("torch."):]
    return ALIASES.get(key)


def codecs():
    """The low-precision formats npu_emu.dtypes encodes and decodes, in aclDataType order."""
    return [d for d in TABLE if d.codec]
