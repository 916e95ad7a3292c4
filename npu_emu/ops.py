"""torch_npu-compatible functions (``import npu_emu.ops as torch_npu``-style drop-in).

Thin re-exports: each op family's front end lives in kernels/<op>/api.py next to its checks and kernel.
"""

from npu_emu.ascendc.deq import data_copy_dequant
from npu_emu.kernels.gather_dequant_int8.api import gather_dequant_int8
from npu_emu.kernels.quant_matmul.api import NzWeight, npu_quant_matmul, npu_trans_quant_param
from npu_emu.kernels.sign_bits.api import npu_sign_bits_pack, npu_sign_bits_unpack

__all__ = [
    "NzWeight",
    "data_copy_dequant",
    "gather_dequant_int8",
    "npu_quant_matmul",
    "npu_sign_bits_pack",
    "npu_sign_bits_unpack",
    "npu_trans_quant_param",
]
