"""npu_anti_mx_quant (AntiMxQuant, docs/ops/mx_quant.md §7.4): x * 2^(scale - 127), cast as the kernel casts.

Expected values are derived by hand from the kernel's arithmetic: FP8 x times the scale in float32, then a cast
with RINT and saturation (overflow -> the format's maximum, NaN -> +0); FP4 x times the scale in bfloat16, stored
as it is for a bfloat16 y (IEEE: overflow -> inf, NaN stays), else cast with RINT and saturation.
"""

import ml_dtypes
import numpy as np
import pytest

import npu_emu.ops as ops
from npu_emu.errors import AclnnError

E4M3 = ml_dtypes.float8_e4m3fn


def _bits(a):
    return np.asarray(a).view({2: np.uint16, 4: np.uint32}[np.asarray(a).dtype.itemsize])


def _fp8_block(first):
    x = np.zeros((1, 32), E4M3)
    x[0, :len(first)] = first
    return x


def test_fp8_float32_product_then_saturating_cast():
    x = _fp8_block([448.0, -1.5, 1.0])
    s = np.array([[[127 + 10, 127]]], np.uint8)                 # 2^10 for the 32 elements
    y32 = ops.npu_anti_mx_quant(x, s, dst_type=6)
    assert y32.dtype == np.float32 and y32[0, :3].tolist() == [458752.0, -1536.0, 1024.0]
    y16 = ops.npu_anti_mx_quant(x, s, dst_type=5)
    assert _bits(y16)[0, :3].tolist() == [0x7BFF, 0xE600, 0x6400]       # 65504 (saturated), -1536, 1024
    ybf = ops.npu_anti_mx_quant(x, s)                                  # default: bfloat16
    assert ybf.dtype == ml_dtypes.bfloat16 and _bits(ybf)[0, :3].tolist() == [0x48E0, 0xC4C0, 0x4480]


def test_fp8_nan_scale_saturates_to_zero_in_16_bits():
    x = _fp8_block([1.0])
    s = np.array([[[0xFF, 127]]], np.uint8)                     # E8M0 0xFF is NaN
    assert np.isnan(ops.npu_anti_mx_quant(x, s, dst_type=6)[0, 0])
    assert _bits(ops.npu_anti_mx_quant(x, s, dst_type=5))[0, 0] == 0x0000


def test_fp4_bfloat16_product():
    # FP4 e2m1 code 0x7 = 6.0 (low nibble first): 6 * 2^127 overflows bfloat16 -> +inf; as float16, saturated
    x = np.zeros((1, 16), np.uint8)
    x[0, 0] = 0x17                                               # elements 0 and 1: 6.0 and 0.5
    s = np.array([[[127 + 127, 127]]], np.uint8)
    ybf = ops.npu_anti_mx_quant(x, s, src_type=296)
    assert ybf.shape == (1, 32) and _bits(ybf)[0, :2].tolist() == [0x7F80, 0x7E80]   # +inf, 0.5 * 2^127
    y16 = ops.npu_anti_mx_quant(x, s, src_type=296, dst_type=5)
    assert _bits(y16)[0, :2].tolist() == [0x7BFF, 0x7BFF]
    s = np.array([[[127 - 1, 127]]], np.uint8)
    assert ops.npu_anti_mx_quant(x, s, src_type=296, dst_type=6)[0, :2].tolist() == [3.0, 0.25]


@pytest.mark.parametrize("kw, status", [
    (dict(axis=0), 561002), (dict(dst_type=3), 161002), (dict(src_type=23), 161002), (dict(src_type=7), 161002)])
def test_rejections(kw, status):
    with pytest.raises(AclnnError) as e:
        ops.npu_anti_mx_quant(_fp8_block([1.0]), np.full((1, 1, 2), 127, np.uint8), **kw)
    assert e.value.status == status
    with pytest.raises(AclnnError, match="mxscale has shape"):
        ops.npu_anti_mx_quant(_fp8_block([1.0]), np.full((1, 2, 2), 127, np.uint8))
