"""AscendQuantV2 (aclnnAscendQuantV3 / npu_quantize div_mode=False): hand vectors, host tiling vectors derived
from ascend_quant_v2_tiling.cpp by hand, bit-exact comparison with the numpy golden over dtypes, layouts, round
modes and tiling branches, the aclnn checks (docs/ops/ascend_quant.md)."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.ascend_quant import api, golden, tiling

BF16 = ml_dtypes.bfloat16


def _bits(a):
    return np.asarray(a).view(np.uint8)


# ---- hand vectors (docs/ops/ascend_quant.md §8) -------------------------------------------------------------

@pytest.mark.parametrize("mode,expect", [
    ("round", [2, 4, -2, 127, -128, 127, 0, -128, 0]),      # CAST_RINT: ties to even; saturation; NaN -> 0
    ("floor", [2, 3, -3, 127, -128, 127, 0, -128, 0]),
    ("ceil", [3, 4, -2, 127, -128, 127, 0, -128, 1]),
    ("trunc", [2, 3, -2, 127, -128, 127, 0, -128, 0]),
])
def test_round_modes_vector(mode, expect):
    x = np.array([2.5, 3.5, -2.5, 200.0, -300.0, 1e10, np.nan, -np.inf, 0.25], np.float32)
    y = api.ascend_quant(x, np.ones(1, np.float32), round_mode=mode)
    assert y.dtype == np.int8 and y.tolist() == expect


def test_scale_offset_sqrt_vector():
    # (x * s [* s]) + o in float32, then rint: 3*2 + 0.5 = 6.5 -> 6; 3*2*2 + 0.5 = 12.5 -> 12; 1.25*2 - 0.5 = 2 -> 2
    x = np.array([[3.0, 1.25]], np.float16)
    s = np.array([2.0, 2.0], np.float16)
    o = np.array([0.5, -0.5], np.float16)
    assert api.ascend_quant(x, s, o).tolist() == [[6, 2]]
    assert api.ascend_quant(x, s, o, sqrt_mode=True).tolist() == [[12, 4]]


def test_npu_quantize_axis_and_dtype():
    # op-plugin: axis 1 (the default) becomes -1; torch.qint8's ScalarType code 12 and torch.int8's 1 mean int8
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    s = np.array([1.0, 0.5, 2.0, 4.0], np.float32)
    o = np.zeros(4, np.float32)
    want = golden.ascend_quant(x, s, o)
    for dtype in (12, 1, "int8"):
        assert np.array_equal(api.npu_quantize(x, s, o, dtype, 1, False), want)
    # div_mode=True is aclnnQuantize, emulated on the Ascend 950 only (test_quantize.py): the A2 default refuses
    with pytest.raises(AclnnError, match="ascend950pr") as e:
        api.npu_quantize(x, s, o, 12, -1, True)
    assert e.value.status == 161002


# ---- host tiling (values derived by hand from ascend_quant_v2_tiling.cpp) ------------------------------------

def test_tiling_double_cut_fp16():
    # x fp16 (7, 300), per channel, offset; 48 vector cores, UB 196352. 256 elements per 512-byte line:
    # cacheLineNum 2; GetCoreNum(7, 48) = 7 >= GetCoreNum(2, 48) = 2; 7 < 48 and dim1 > 32: double cut
    # 7 * GetCoreNum(2, 48 // 7) = 14 cores; blockUnion 2, blockFactor ceil(2/2) * 256 = 256, tail 300 - 256 = 44;
    # maxBase = floor256((196352 - 2048) // (2*3 + 1 + 4*3)) = 9984; baseLen min(256, 9984), baseN 1
    td = tiling.tiling((7, 300), "float16", per_tensor=False, has_offset=True).tiling
    assert (td.numCore, td.blockAxis, td.blockUnion, td.blockFactor, td.blockTailFactor, td.ubAxis, td.baseN,
            td.baseLen, td.dim0, td.dim1) == (14, 11, 2, 256, 44, 1, 1, 256, 7, 300)


def test_tiling_per_tensor_fp32():
    # x fp32 (1000,), one scale: merged [1, 1000, 1]; 128 elements per line, cacheLineNum 8 -> 8 cores on axis 1,
    # blockFactor 1 * 128, tail 1000 - 7 * 128 = 104; maxBase floor128(194304 // 5) = 38784; blockBase 128 <=
    # 38784 / 2 -> ubAxis 0, baseN min(194304 // 5 // 128, dim0 = 1) = 1, baseLen 128
    tr = tiling.tiling((1000,), "float32", per_tensor=True, has_offset=False)
    td = tr.tiling
    assert (td.numCore, td.blockAxis, td.blockFactor, td.blockTailFactor, td.ubAxis, td.baseN, td.baseLen) == \
        (8, 1, 128, 104, 0, 1, 128)
    assert tr.block_dim == 48 and tr.tiling_key == tiling.KEY_PER_TENSOR


def test_tiling_rows_axis0():
    # x bf16 (96, 64): cacheLineNum 1; GetCoreNum(96, 48) = 48 -> axis 0, blockFactor 2, tail 2;
    # blockBase ceil256(64) = 256 <= maxBase / 2 -> ubAxis 0, baseN min(maxN, 2) = 2
    td = tiling.tiling((96, 64), "bfloat16", per_tensor=False, has_offset=False).tiling
    assert (td.numCore, td.blockAxis, td.blockFactor, td.blockTailFactor, td.ubAxis, td.baseN, td.baseLen) == \
        (48, 0, 2, 2, 0, 2, 256)


# ---- kernel vs golden, bit for bit -------------------------------------------------------------------------

CASES = [((7, 300), "c"), ((3, 5, 64), "c"), ((96, 64), "c"), ((2, 20000), "c"), ((1000,), "t"), ((33, 130), "t")]


@pytest.mark.parametrize("xdt", [np.float16, BF16, np.float32], ids=["f16", "bf16", "f32"])
@pytest.mark.parametrize("shape,layout", CASES)
def test_kernel_matches_golden(xdt, shape, layout):
    rng = np.random.default_rng(hash((shape, layout)) % 2**32)
    x = (rng.standard_normal(shape) * 60).astype(xdt)
    sdt = np.float16 if xdt is np.float32 else xdt       # a float32 x takes a half scale (widened exactly)
    n = shape[-1] if layout == "c" else 1
    s = (rng.random(n) * 2 + 0.05).astype(sdt)
    o = (rng.standard_normal(n) * 3).astype(sdt)
    for kw in ({}, {"sqrt_mode": True}, {"round_mode": "floor"}, {"round_mode": "trunc"}):
        y = api.ascend_quant(x, s, o, **kw)
        assert np.array_equal(_bits(y), _bits(golden.ascend_quant(x, s, o, **kw))), kw
    y = api.ascend_quant(x, s, None)
    assert np.array_equal(_bits(y), _bits(golden.ascend_quant(x, s, None)))


def test_core_num_override_same_bits():
    x = (np.random.default_rng(1).standard_normal((9, 700)) * 50).astype(np.float32)
    s = np.linspace(0.5, 2, 700).astype(np.float32)
    a = api.ascend_quant(x, s)
    b = api.ascend_quant(x, s, core_num=3, ub_size=8192)
    assert np.array_equal(a, b)


# ---- checks ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,status,match", [
    (dict(x=np.zeros(4, np.float16), scale=np.ones(1, np.float32)), 161002, "not compatible"),
    (dict(x=np.zeros(4, np.int8), scale=np.ones(1, np.float32)), 161002, "x has dtype int8"),
    (dict(x=np.zeros((2, 4), np.float32), scale=np.ones(3, np.float32)), 161002, "should be same as x dim"),
    (dict(x=np.zeros((2, 4), np.float32), scale=np.ones((2, 4), np.float32)), 161002, "should be 1"),
    (dict(x=np.zeros((2, 3, 4), np.float32), scale=np.ones(4, np.float32), axis=0), 161002, "last two"),
    (dict(x=np.zeros((2, 3, 4), np.float32), scale=np.ones(3, np.float32), axis=-2), 161002, "per-head"),
    (dict(x=np.zeros(4, np.float32), scale=np.ones(1, np.float32), round_mode="odd"), 161002, "roundMode"),
    (dict(x=np.zeros(8, np.float32), scale=np.ones(1, np.float32), dst_type="int4"), 161002, "not emulated yet"),
    (dict(x=None, scale=np.ones(1, np.float32)), 161001, "None"),
])
def test_checks(kw, status, match):
    x, scale = kw.pop("x"), kw.pop("scale")
    with pytest.raises(AclnnError, match=match) as e:
        api.ascend_quant(x, scale, **kw)
    assert e.value.status == status


def test_aclnn_two_phase_writes_out():
    x = np.array([[1.5, -7.25]], np.float32)
    s = np.array([2.0], np.float32)
    y = np.full((1, 2), 99, np.int8)
    st, ws, ex = api.aclnnAscendQuantV3GetWorkspaceSize(x, s, None, False, "round", 2, -1, y)
    assert st == 0 and ws == 0 and y.tolist() == [[99, 99]]
    assert api.aclnnAscendQuantV3(None, ws, ex) == 0
    assert y.tolist() == [[3, -14]]          # 3.0 -> 3; -14.5 -> -14 (ties to even)
