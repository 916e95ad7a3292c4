"""torch_npu-compatible functions (``import npu_emu.ops as torch_npu``-style drop-in).

Thin re-exports: each op family's front end lives in kernels/<op>/api.py next to its checks and kernel.
"""

from npu_emu.ascendc.deq import data_copy_dequant
from npu_emu.kernels.gather_dequant_int8.api import gather_dequant_int8
from npu_emu.kernels.mx_quant.api import mx_dequantize, npu_dynamic_mx_quant, npu_grouped_dynamic_mx_quant
from npu_emu.kernels.quant_matmul.api import NzWeight, npu_quant_matmul, npu_trans_quant_param
from npu_emu.kernels.quant_matmul.sparse4to2 import sparse4to2_quant_matmul, trans_sparse4to2_para
from npu_emu.kernels.sign_bits.api import npu_sign_bits_pack, npu_sign_bits_unpack

# torch_npu's own dtype constants, so `torch_npu.float4_e2m1fn_x2` etc. in a swapped-in script keep their values
# (frontend.TORCH_NPU_DTYPES resolves them in every dst_type argument).
hifloat8 = 290
float8_e5m2 = 291
float8_e4m3fn = 292
float8_e8m0fnu = 293
float4_e2m1fn_x2 = 296
float4_e1m2fn_x2 = 297

__all__ = [
    "NzWeight",
    "float4_e1m2fn_x2",
    "float4_e2m1fn_x2",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e8m0fnu",
    "hifloat8",
    "data_copy_dequant",
    "gather_dequant_int8",
    "mx_dequantize",
    "npu_dynamic_mx_quant",
    "npu_grouped_dynamic_mx_quant",
    "npu_quant_matmul",
    "npu_sign_bits_pack",
    "npu_sign_bits_unpack",
    "npu_trans_quant_param",
    "sparse4to2_quant_matmul",
    "trans_sparse4to2_para",
]
