"""Quantize (aclnnQuantize / npu_quantize div_mode=True, Ascend 950): hand vectors, host tiling vectors derived
from quantize_tiling_arch35.cpp by hand, bit-exact comparison with the numpy golden over modes (per tensor /
channel / head), x, zero-point and output dtypes, odd sizes, specials and saturation; the aclnn refusals; the
torch_npu and torch.ops.npu entries (docs/ops/ascend_quant.md §9)."""

import ml_dtypes
import numpy as np
import pytest
from npu_emu.kernels.ascend_quant import api, golden, quantize_tiling

from npu_emu.errors import AclnnError

BF16 = ml_dtypes.bfloat16
SOC = "ascend950pr"


def _bits(a):
    return np.asarray(a).view(np.uint8)


# ---- hand vectors --------------------------------------------------------------------------------------------

SPECIALS = np.array([5.0, 7.0, -5.0, 1000.0, -1000.0, np.inf, np.nan, -np.inf, 0.5, -0.5], np.float32)


@pytest.mark.parametrize("dtype,expect", [
    # x / 2 = 2.5, 3.5, -2.5, 500, -500, inf, nan, -inf, 0.25, -0.25: RINT ties to even, saturation, NaN -> 0
    ("int8", [2, 4, -2, 127, -128, 127, 0, -128, 0, 0]),
    ("uint8", [2, 4, 0, 255, 0, 255, 0, 0, 0, 0]),
    ("int32", [2, 4, -2, 500, -500, 2 ** 31 - 1, 0, -2 ** 31, 0, 0]),
])
def test_specials_vector(dtype, expect):
    y = api.quantize(SPECIALS, np.array([2.0], np.float32), dtype=dtype, soc=SOC)
    assert str(y.dtype) == dtype and y.tolist() == expect


def test_div_then_add_and_div_model():
    # 45.5 / 7 = 6.5 exactly -> 6 (ties to even); 45.5 * float32(1/7) = 6.5000005 -> 7: the switch changes the bits
    x = np.array([45.5, 1.0], np.float32)
    s = np.array([7.0], np.float32)
    assert api.quantize(x, s, soc=SOC).tolist() == [6, 0]
    assert api.quantize(x, s, soc=SOC, div_model="reciprocal").tolist() == [7, 0]
    # the zero point is added after the division: 45.5 / 7 + 0.5 = 7.0 -> 7; 1 / 7 + 0.5 = 0.643 -> 1
    # (multiply-then-add, AscendQuantV2's order, would give 45.5 * 7 + 0.5 -> 127)
    z = np.array([0.5], np.float32)
    assert api.quantize(x, s, z, soc=SOC).tolist() == [7, 1]
    assert np.array_equal(golden.quantize(x, s, z), [7, 1])


# ---- host tiling (values derived by hand from quantize_tiling_arch35.cpp) -------------------------------------

def test_tiling_per_channel_fp16():
    # (7, 300) fp16, f32 scale, no zero point, int8 out; 56 cores, UB 262144, 128-byte lines = 64 elements:
    # cacheLineNum 5; GetCoreNum(7) = 7 >= GetCoreNum(5) = 5 -> blockAxis 0, blockFactor 1, tail 1;
    # maxBase floor64((262144 - 2048) // ((2 + 1 + 4) * 2)) = 18560; blockBase ceil64(300) = 320 <= 9280 ->
    # ubAxis 0, baseN min(255616 // 4480, 1) = 1, baseLen 320
    tr = quantize_tiling.tiling((7, 300), "float16", "float32", None, "int8", "channel", 1)
    td = tr.tiling
    assert (td.numCore, td.blockAxis, td.blockFactor, td.blockTailFactor, td.ubAxis, td.baseN, td.baseLen) == \
        (7, 0, 1, 1, 0, 1, 320)
    assert tr.block_dim == 56 and tr.tiling_key == quantize_tiling.MODE_CHANNEL


def test_tiling_per_head_third_axis():
    # (4, 5, 300) f32, int8 zero point, axis 1: cacheLineNum ceil(300 / 32) = 10; cores: axis0 4, axis1
    # 4 * GetCoreNum(5, 14) = 20, axis2 20 * GetCoreNum(10, 2) = 40 > 20 and 300 > 32 -> blockAxis 2, blockUnion
    # 40 / 20 = 2, blockFactor ceil(10 / 2) * 32 = 160, tail 140; maxBase floor32(260096 // 20) = 12992 ->
    # ubAxis 2, baseN 1, baseLen min(160, 12992)
    td = quantize_tiling.tiling((4, 5, 300), "float32", "float32", "int8", "int8", "head", 1).tiling
    assert (td.numCore, td.blockAxis, td.blockUnion, td.blockFactor, td.blockTailFactor, td.ubAxis, td.baseN,
            td.baseLen, td.dim0, td.dim1, td.dim2) == (40, 2, 2, 160, 140, 2, 1, 160, 4, 5, 300)


def test_tiling_per_tensor_bf16_and_nddma():
    # (1000,) bf16: merged (1, 1000); cacheLineNum 16 -> 16 cores, blockFactor 64, tail 1000 - 15 * 64 = 40
    td = quantize_tiling.tiling((1000,), "bfloat16", "bfloat16", None, "int8", "tensor", 0).tiling
    assert (td.numCore, td.blockAxis, td.blockFactor, td.blockTailFactor, td.baseN, td.baseLen) == \
        (16, 1, 64, 40, 1, 64)
    # (40, 20) per channel: dim1 < 32 with blockAxis 0 -> the NDDMA template, baseLen = dim1 unaligned
    tr = quantize_tiling.tiling((40, 20), "float32", "float32", None, "int8", "channel", 1)
    assert tr.tiling_key == quantize_tiling.MODE_CHANNEL_NDDMA and tr.tiling.baseLen == 20
    assert tr.tiling.numCore == 40 and tr.tiling.baseN == 1


# ---- kernel vs golden, bit for bit -------------------------------------------------------------------------

# (x shape, axis, scale length): per tensor, per channel (incl. NDDMA and a 1-D x), per head (axis 1 and 0)
CASES = [((1000,), 0, 1), ((33, 130), 1, 1), ((7, 300), 1, 300), ((40, 20), -1, 20), ((301,), 0, 301),
         ((3, 5, 64), 1, 5), ((4, 5, 300), 1, 5), ((6, 3, 7), 0, 6), ((2, 3, 4, 9), 2, 4)]


def _inputs(shape, n, xdt, zdt, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 60).astype(xdt)
    with np.errstate(over="ignore"):            # 1e30 is Inf in half
        x.reshape(-1)[::37] = np.array([np.inf, -np.inf, np.nan, 1e30, -1e30], np.float32)[
            np.arange(len(x.reshape(-1)[::37])) % 5].astype(xdt)
    sdt = BF16 if xdt is BF16 else np.float32
    s = (rng.random(n) * 2 + 0.05).astype(sdt)
    if zdt is None:
        return x, s, None
    if np.dtype(zdt).kind in "iu":
        info = np.iinfo(zdt)
        z = rng.integers(max(info.min, -300), min(info.max, 300), n, endpoint=True).astype(zdt)
    else:
        z = (rng.standard_normal(n) * 3).astype(zdt)
    return x, s, z


@pytest.mark.parametrize("xdt,zdt", [(np.float32, np.int8), (np.float32, np.uint8), (np.float32, np.int32),
                                     (np.float32, np.float32), (np.float32, None), (np.float16, np.int8),
                                     (np.float16, None), (BF16, BF16), (BF16, None)],
                         ids=["f32-i8", "f32-u8", "f32-i32", "f32-f32", "f32-none", "f16-i8", "f16-none",
                              "bf16-bf16", "bf16-none"])
@pytest.mark.parametrize("shape,axis,n", CASES)
def test_int8_matches_golden(xdt, zdt, shape, axis, n):
    x, s, z = _inputs(shape, n, xdt, zdt, hash((shape, axis)) % 2 ** 32)
    y = api.quantize(x, s, z, dtype="int8", axis=axis, soc=SOC)
    assert np.array_equal(_bits(y), _bits(golden.quantize(x, s, z, dtype="int8", axis=axis)))


@pytest.mark.parametrize("dtype", ["uint8", "int32"])
@pytest.mark.parametrize("shape,axis,n", [CASES[1], CASES[2], CASES[6]])
def test_other_outputs_match_golden(dtype, shape, axis, n):
    x, s, z = _inputs(shape, n, np.float32, np.int32, 5)
    x = x * np.float32(1e7) if dtype == "int32" else x            # reach the int32 range ends
    for zz in (z, None):
        y = api.quantize(x, s, zz, dtype=dtype, axis=axis, soc=SOC)
        assert np.array_equal(_bits(y), _bits(golden.quantize(x, s, zz, dtype=dtype, axis=axis)))


def test_half_scale_and_reciprocal_model():
    # a half scales is cast to float32 by aclnn (exact); the reciprocal model against its golden
    x, s, z = _inputs((9, 200), 200, np.float16, np.int8, 3)
    s16 = s.astype(np.float16)
    for dm in ("ieee", "reciprocal"):
        y = api.quantize(x, s16, z, axis=1, soc=SOC, div_model=dm)
        assert np.array_equal(_bits(y), _bits(golden.quantize(x, s16, z, axis=1, div_model=dm)))


def test_core_num_override_same_bits():
    x, s, z = _inputs((4, 5, 300), 5, np.float32, np.int8, 9)
    a = api.quantize(x, s, z, axis=1, soc=SOC)
    b = api.quantize(x, s, z, axis=1, soc=SOC, core_num=3, ub_size=4096)
    assert np.array_equal(a, b)


def test_empty():
    y = api.quantize(np.zeros((0, 4), np.float32), np.ones(4, np.float32), axis=1, soc=SOC)
    assert y.shape == (0, 4) and y.dtype == np.int8


# ---- the aclnn refusals ------------------------------------------------------------------------------------

F = np.float32


@pytest.mark.parametrize("kw,status,match", [
    (dict(x=np.zeros(4, F), s=np.ones(1, F), soc="ascend910b2"), 161002, "ascend950pr"),
    (dict(x=None, s=np.ones(1, F)), 161001, "null"),
    (dict(x=np.zeros((2, 4), F), s=np.ones((1, 4), F)), 161002, "only support 1 dimension"),
    (dict(x=np.zeros((2, 4), F), s=np.ones(4, F), z=np.ones(3, F)), 161002, "equal to zeroPoints size"),
    (dict(x=np.zeros((2, 4), F), s=np.ones(4, F), axis=2), 161002, "Axis out of range"),
    (dict(x=np.zeros((2, 4), F), s=np.ones(3, F)), 161002, "size of scales must equal"),
    (dict(x=np.zeros(4, np.int8), s=np.ones(1, F)), 161002, "x has dtype int8"),
    (dict(x=np.zeros(4, F), s=np.ones(1, BF16)), 161002, "bfloat16 x"),
    (dict(x=np.zeros(4, BF16), s=np.ones(1, BF16), z=np.ones(1, np.int8)), 161002, "all be bfloat16"),
    (dict(x=np.zeros(4, F), s=np.ones(1, F), z=np.ones(1, np.int16)), 161002, "zeroPoints has dtype"),
    (dict(x=np.zeros(4, F), s=np.ones(1, F), dtype="float8_e4m3fn"), 161002, "not emulated yet"),
    (dict(x=np.zeros(4, F), s=np.ones(1, F), dtype="float16"), 161002, "support list"),
    (dict(x=np.zeros(4, F), s=np.ones(1, F), div_model="fast"), 161002, "div_model"),
])
def test_refusals(kw, status, match):
    with pytest.raises(AclnnError, match=match) as e:
        api.quantize(kw.pop("x"), kw.pop("s"), kw.pop("z", None), **{"soc": SOC, **kw})
    assert e.value.status == status


def test_aclnn_two_phase():
    x = np.array([[7.5, -7.5, 300.0]], np.float32)
    s = np.array([3.0], np.float32)
    out = np.full((1, 3), 99, np.uint8)
    st, ws, ex = api.aclnnQuantizeGetWorkspaceSize(x, s, None, 4, 1, out)       # 4 = ACL_UINT8
    assert st == 0 and out.tolist() == [[99, 99, 99]]
    assert api.aclnnQuantize(None, ws, ex) == 0
    assert out.tolist() == [[2, 0, 100]]
    bad = np.zeros((1, 3), np.int8)
    st, _, _ = api.aclnnQuantizeGetWorkspaceSize(x, s, None, 4, 1, bad)          # out dtype must match dtype
    assert st == 161002 and bad.tolist() == [[0, 0, 0]]
    st, _, _ = api.aclnnQuantizeGetWorkspaceSize(x, s, None, 2, 1, bad, soc="ascend910b2")
    assert st == 161002


# ---- torch_npu / torch.ops.npu -------------------------------------------------------------------------------

def test_npu_quantize_div_mode_numpy():
    # op-plugin npu_quantize_by_kernel: dtype torch.quint8 (13) -> uint8, qint8 (12) -> int8, qint32 (14) -> int32;
    # axis passed as given (1: dim 1 of a 3-D x is the per-head template)
    x, s, z = _inputs((3, 5, 64), 5, np.float32, np.int8, 11)
    for code, name in ((12, "int8"), (13, "uint8"), (14, "int32"), (1, "int8")):
        y = api.npu_quantize(x, s, z, code, 1, True, soc=SOC)
        assert np.array_equal(_bits(y), _bits(golden.quantize(x, s, z, dtype=name, axis=1)))
    with pytest.raises(AclnnError, match="ascend950pr") as e:
        api.npu_quantize(x, s, z, 12, 1, True)                    # the default soc is the A2's
    assert e.value.status == 161002
    with pytest.raises(AclnnError, match="must be Int8"):
        api.npu_quantize(x, s, z, 16, 1, True, soc=SOC)


def test_torch_entries():
    torch = pytest.importorskip("torch")
    import npu_emu.ops as torch_npu
    import npu_emu.torch as nt

    x, s, z = _inputs((7, 300), 300, np.float32, np.int8, 13)
    want = golden.quantize(x, s, z, dtype="int8", axis=1)
    xt, st, zt = torch.from_numpy(x), torch.from_numpy(s), torch.from_numpy(z)
    y = torch_npu.npu_quantize(xt, st, zt, torch.qint8, 1, div_mode=True, soc=SOC)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.int8
    assert np.array_equal(_bits(y.numpy()), _bits(want))
    nt.set_soc(SOC)
    try:
        y2 = torch.ops.npu.npu_quantize(xt, st, zt, 13, 1, True)           # torch.quint8 -> uint8
    finally:
        nt.set_soc(None)
    assert y2.dtype == torch.uint8
    assert np.array_equal(_bits(y2.numpy()), _bits(golden.quantize(x, s, z, dtype="uint8", axis=1)))
    with pytest.raises(AclnnError, match="ascend950pr"):
        torch.ops.npu.npu_quantize(xt, st, zt, 12, 1, True)                # no session soc: the A2 default


# ---- the fused kernel (default) against the tile walk (faithful=True), bit for bit ----------------------------

@pytest.mark.parametrize("xdt,ydt,zdt", [(np.float16, "uint8", None), (BF16, "int8", BF16),
                                         (np.float32, "int32", np.int32)],
                         ids=["f16-u8-none", "bf16-i8-bf16", "f32-i32-i32"])
def test_fused_equals_faithful(xdt, ydt, zdt):
    """Every layout and tiling branch of CASES (tensor, channel with and without NDDMA, head along each block axis),
    with the default and a small core count and UB (column loops, tail blocks), both division models; x holds Inf,
    NaN and huge values, and an int32 output reaches its range ends. Each x and output dtype once, without a zero
    point and with a float and an integer one (the zero points are widened by the same code in both kernels; each
    quadruple's tile walk costs about 7 s to compile)."""
    for shape, axis, n in CASES:
        x, s, z = _inputs(shape, n, xdt, zdt, 11)
        if ydt == "int32":
            x = (x.astype(np.float32) * np.float32(1e7)).astype(xdt)
        for kw in ({}, dict(core_num=3, ub_size=4096)):
            for dm in ("ieee", "reciprocal"):
                a = api.quantize(x, s, z, dtype=ydt, axis=axis, soc=SOC, div_model=dm, **kw)
                b = api.quantize(x, s, z, dtype=ydt, axis=axis, soc=SOC, div_model=dm, faithful=True, **kw)
                assert np.array_equal(_bits(a), _bits(b)), (shape, axis, kw, dm)


def test_a_reused_output_is_written_whole(cache_every_output):
    """A second call gets the first call's freed output (tests/conftest.py): every element is written again."""
    x, s, z = _inputs((40, 20), 20, np.float32, np.int8, 1)
    y = api.quantize(x, s, z, axis=-1, soc=SOC)
    where = y.ctypes.data
    del y
    x, s, z = _inputs((40, 20), 20, np.float32, np.int8, 2)
    y = api.quantize(x, s, z, axis=-1, soc=SOC)
    assert y.ctypes.data == where
    assert np.array_equal(_bits(y), _bits(golden.quantize(x, s, z, dtype="int8", axis=-1)))
