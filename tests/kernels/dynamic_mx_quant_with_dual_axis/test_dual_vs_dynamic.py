"""y1 / mxscale1 against npu_dynamic_mx_quant along -1 and y2 / mxscale2 along -2: equal wherever the two kernels'
arithmetic agrees, and the places where it does not, named and tested (docs/ops/dynamic_mx_quant_with_dual_axis.md
§4.4):

1. tiny blocks (0 < E <= emax for OCP; a non-zero block whose scale_alg 2 exponent is 0): DynamicMxQuant (master)
   flushes them to ±0 with the reciprocal +0, the dual kernel keeps the reciprocal 2^127 (as DynamicMxQuant did in
   CANN 9.0.0, ``cann_version="9.0.0"``, for OCP);
2. the element multiply of BF16 inputs: the dual kernel's y2 FP8 path multiplies in FP32 (ComputeY2ToFP8 casts x
   first), DynamicMxQuant in BF16; the products differ only below 2^-126, where the RINT cast (FP8 allows only rint)
   gives the same signed zero, so the bits agree. Both multiply in BF16 for FP4 (ComputeYBF16ToFP4), where a FLOOR
   product below 2^-126 would otherwise differ (-0 against -0.5).
"""

import ml_dtypes
import numpy as np
import pytest
from dual_cases import COMBOS, TORCH_CODE, random_x, special_x

from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import api, golden, launch
from npu_emu.kernels.mx_quant import api as mx_api
from npu_emu.kernels.mx_quant import common as mx_common
from npu_emu.kernels.mx_quant import golden as mx_golden


def _bits(a):
    return np.ascontiguousarray(np.asarray(a)).view(np.uint8)


def _both(x, dst, rm, alg, dtm, **kw):
    dual = api.npu_dynamic_mx_quant_with_dual_axis(x, round_mode=rm, dst_type=TORCH_CODE[dst], scale_alg=alg,
                                                   dst_type_max=dtm)
    one = mx_api.npu_dynamic_mx_quant(x, axis=-1, round_mode=rm, dst_type=TORCH_CODE[dst], scale_alg=alg,
                                      dst_type_max=dtm, **kw)
    two = mx_api.npu_dynamic_mx_quant(x, axis=-2, round_mode=rm, dst_type=TORCH_CODE[dst], scale_alg=alg,
                                      dst_type_max=dtm, **kw)
    return [_bits(a) for a in dual], [_bits(a) for a in one + two]


@pytest.mark.parametrize("x_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("dst, rm, alg, dtm", COMBOS)
def test_equal_without_tiny_blocks(x_dtype, dst, rm, alg, dtm):
    """Blocks of ordinary magnitude, zeros, Inf and NaN: all four outputs equal DynamicMxQuant's."""
    x = random_x((2, 70, 130), x_dtype, 5, spread=6).astype(np.float32)
    x[0, :32, :32] = 0.0
    x[1, 40, 7], x[0, 50, 100], x[1, 3, 3] = np.inf, np.nan, -0.0
    x = x.astype({"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[x_dtype])
    dual, sep = _both(x, dst, rm, alg, dtm)
    for name, a, b in zip(("y1", "mxscale1", "y2", "mxscale2"), dual, sep):
        np.testing.assert_array_equal(a, b, err_msg=name)


def _tiny_x():
    """BF16 blocks with E = 1 (tiny for OCP in every format, and a zero scale_alg 2 exponent) and E = 5."""
    rng = np.random.default_rng(9)
    x = random_x((1, 64, 64), "bfloat16", 9, spread=4).astype(np.float32)
    x[0, :32, :32] = np.where(rng.random((32, 32)) < 0.5, -1, 1) * 2.0 ** -126 * (1 + 0.4 * rng.random((32, 32)))
    x[0, 32:, 32:] = 2.0 ** -122
    return x.astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("dst, alg, dtm", [("float8_e4m3fn", 0, 0.0), ("float8_e5m2", 0, 0.0),
                                           ("float4_e2m1", 0, 0.0), ("float4_e2m1", 2, 0.0)])
def test_tiny_blocks_are_not_flushed(dst, alg, dtm):
    """Difference 1: the dual kernel's scale codes equal DynamicMxQuant's, its y does not flush tiny blocks; OCP y
    equals DynamicMxQuant of CANN 9.0.0 (no flush there either)."""
    x = _tiny_x()
    dual, sep = _both(x, dst, "rint", alg, dtm)
    for name, a, b in zip(("mxscale1", "mxscale2"), (dual[1], dual[3]), (sep[1], sep[3])):
        np.testing.assert_array_equal(a, b, err_msg=name)
    zero = 0x80 if dst.startswith("float8") else 0x88
    assert not np.array_equal(dual[0], sep[0]) and not np.array_equal(dual[2], sep[2])
    # DynamicMxQuant master gives signed zeros in the tiny tile, the dual kernel real codes
    fp4 = dst.startswith("float4")
    tile = (slice(None), slice(0, 32), slice(0, 16 if fp4 else 32))
    assert np.all((sep[0].reshape(1, 64, -1)[tile] | zero) == zero)
    assert np.any((dual[0].reshape(1, 64, -1)[tile] | zero) != zero)
    if alg == 0:
        dual, legacy = _both(x, dst, "rint", alg, dtm, cann_version="9.0.0")
        for name, a, b in zip(("y1", "mxscale1", "y2", "mxscale2"), dual, legacy):
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_y2_fp32_multiply_is_invisible_for_fp8():
    """Difference 2 (FP8): products below 2^-126 are formed, and y2 with the BF16 multiply (DynamicMxQuant's) gives
    the same bytes as the dual kernel's FP32 multiply."""
    x = random_x((1, 64, 64), "bfloat16", 4, spread=2).astype(np.float32)
    x[0, :, 0] = 2.0 ** 10                               # every column block of column 0..: a large maximum
    x[0, 1:, 1] = -(2.0 ** -133) * np.arange(1, 64)      # BF16 subnormals in the same column blocks
    x[0, 0, 1] = x[0, 32, 1] = 2.0 ** 10
    x = x.astype(ml_dtypes.bfloat16)
    xf = x.astype(np.float32)
    r = np.float32(2.0 ** (8 - 10))                      # E4M3 reciprocal of a block whose maximum is 2^10
    prod = (xf[0, 1:32, 1] * r).astype(np.float32)
    assert np.all(np.abs(prod) < 2.0 ** -126) and np.any(prod != prod.astype(ml_dtypes.bfloat16).astype(np.float32))
    for dst in ("float8_e4m3fn", "float8_e5m2"):
        ref = golden.dual_axis_quant(x, dst)
        p1, p2, r32 = launch.make_axis_params(x_dtype="bfloat16", y_dtype=dst, round_mode="rint", scale_alg=0,
                                              dst_type_max=0.0, signed_zero=True, ftz=False,
                                              fp4_nibble_order="low_first")
        assert p2[mx_common.P_BF16_MUL] == 0 and p1[mx_common.P_BF16_MUL] == 1
        y = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=TORCH_CODE[dst])
        np.testing.assert_array_equal(_bits(y[2]), ref[2])
        two = mx_api.npu_dynamic_mx_quant(x, axis=-2, dst_type=TORCH_CODE[dst])
        np.testing.assert_array_equal(_bits(y[2]), _bits(two[0]))


def test_fp4_floor_multiplies_in_bf16():
    """Difference 2 (FP4): the dual kernel multiplies BF16 inputs in BF16 on both axes; an FP32 product below 2^-126
    would give FLOOR code -0.5 (0x9) where the BF16 product gives -0 (0x8)."""
    x = np.zeros((1, 32, 32), np.float32)
    x[0, 0, :] = 2.0 ** 10
    x[0, :, 0] = 2.0 ** 10
    x[0, 5, 7] = -(2.0 ** -133)                      # times 2^-8: -2^-141, rounds to -0 in BF16
    x = x.astype(ml_dtypes.bfloat16)
    y1, _, y2, _ = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=296, round_mode="floor")
    c1 = mx_golden.unpack_fp4(_bits(y1))[0, 5, 7]
    c2 = mx_golden.unpack_fp4(_bits(y2))[0, 5, 7]
    assert c1 == 0x8 and c2 == 0x8
    assert mx_golden.encode_fp4(np.float32(-(2.0 ** -141)), "float4_e2m1", "floor") == 0x9
