"""torch_npu-compatible functions (``import npu_emu.ops as torch_npu``-style drop-in).

Thin re-exports: each op family's front end lives in kernels/<op>/api.py next to its checks and kernel. A family is
imported on first use of one of its names (PEP 562 ``__getattr__``), so that naming the API costs no kernel
module, no numba and no ml_dtypes: ``import npu_emu.ops`` stays a few milliseconds while a script that uses one op
loads only that op's family.
"""

import importlib

# torch_npu's own dtype constants, so `torch_npu.float4_e2m1fn_x2` etc. in a swapped-in script keep their values
# (frontend.TORCH_NPU_DTYPES resolves them in every dst_type argument).
hifloat8 = 290
float8_e5m2 = 291
float8_e4m3fn = 292
float8_e8m0fnu = 293
float4_e2m1fn_x2 = 296
float4_e1m2fn_x2 = 297

# name -> module that defines it.
_FAMILIES = {
    "data_copy_dequant": "npu_emu.kernels.data_copy_dequant.api",
    "gather_dequant_int8": "npu_emu.kernels.gather_dequant_int8.api",
    "mx_dequantize": "npu_emu.kernels.mx_quant.api",
    "npu_anti_mx_quant": "npu_emu.kernels.mx_quant.api",
    "npu_dynamic_mx_quant": "npu_emu.kernels.mx_quant.api",
    "npu_grouped_dynamic_mx_quant": "npu_emu.kernels.mx_quant.api",
    "NzWeight": "npu_emu.kernels.quant_matmul.api",
    "npu_quant_matmul": "npu_emu.kernels.quant_matmul.api",
    "npu_trans_quant_param": "npu_emu.kernels.quant_matmul.api",
    "sparse4to2_quant_matmul": "npu_emu.kernels.quant_matmul.sparse4to2",
    "trans_sparse4to2_para": "npu_emu.kernels.quant_matmul.sparse4to2",
    "npu_sign_bits_pack": "npu_emu.kernels.sign_bits.api",
    "npu_sign_bits_unpack": "npu_emu.kernels.sign_bits.api",
}

__all__ = sorted(["float4_e1m2fn_x2", "float4_e2m1fn_x2", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "hifloat8",
                  *_FAMILIES])


def __getattr__(name):
    module = _FAMILIES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
