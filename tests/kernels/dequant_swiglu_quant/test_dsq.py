"""npu_dequant_swiglu_quant (group_index kernels): bit-exact against the numpy golden (int8 codes and the float32
scale bits), the tiling, the checks, the aclnn V2 pair."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.dequant_swiglu_quant import golden as G
from npu_emu.kernels.dequant_swiglu_quant.api import (
    aclnnDequantSwigluQuant,
    aclnnDequantSwigluQuantGetWorkspaceSize,
    aclnnDequantSwigluQuantV2,
    aclnnDequantSwigluQuantV2GetWorkspaceSize,
    npu_dequant_swiglu_quant,
)
from npu_emu.kernels.dequant_swiglu_quant.tiling import count_max_dim, dsq_tiling, nogroup_tiling


def _data(T=40, D=128, E=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-4000, 4000, (T, D), dtype=np.int32)
    ws = (rng.random((E, D)) * 0.01 + 1e-4).astype(np.float32)
    asc = (rng.random(T) * 0.1 + 0.01).astype(np.float32)
    return rng, x, ws, asc


def _check(got, want):
    (y, s), (gy, gs) = got, want
    assert y.dtype == np.int8 and s.dtype == np.float32
    assert np.array_equal(y, gy)
    assert np.array_equal(s.view(np.uint32), gs.view(np.uint32))


@pytest.mark.parametrize("activate_left", [True, False])
def test_vllm_moe_path(activate_left):
    """activate_left, quant_mode=1, counts with an empty group and groups smaller than a UB pass."""
    _, x, ws, asc = _data()
    gi = np.array([10, 0, 25, 5], np.int64)
    kw = dict(weight_scale=ws, activation_scale=asc, group_index=gi, activate_left=activate_left, quant_mode=1)
    _check(npu_dequant_swiglu_quant(x, **kw), G.dequant_swiglu_quant(x, ws, asc, group_index=gi,
                                                                      activate_left=activate_left, quant_mode=1))


@pytest.mark.parametrize("bias_dtype", ["int32", "float32", "float16"])
def test_bias_and_smooth_scale(bias_dtype):
    rng, x, ws, asc = _data(seed=1)
    gi = np.array([7, 13, 0, 20], np.int64)
    if bias_dtype == "int32":
        bias = rng.integers(-2 ** 31, 2 ** 31 - 1, (4, 128), dtype=np.int64).astype(np.int32)  # wraps when added
    else:
        bias = (rng.standard_normal((4, 128)) * 3).astype(bias_dtype)
    qs = (rng.random((4, 64)) + 0.5).astype(np.float32)
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, bias=bias, quant_scale=qs,
                                   group_index=gi, activate_left=True, quant_mode=1)
    _check(got, G.dequant_swiglu_quant(x, ws, asc, bias=bias, quant_scale=qs, group_index=gi, activate_left=True,
                                       quant_mode=1))


def test_rows_not_in_any_group_stay_zero_and_no_activation_scale():
    _, x, ws, _ = _data(seed=2)
    gi = np.array([3, 4, 0, 2], np.int64)                 # 9 of 40 rows
    y, s = npu_dequant_swiglu_quant(x, weight_scale=ws, group_index=gi, quant_mode=1)
    _check((y, s), G.dequant_swiglu_quant(x, ws, None, group_index=gi, quant_mode=1))
    assert not y[9:].any() and not s[9:].any() and y[:9].any()


def test_pairs_group_index():
    _, x, ws, asc = _data(seed=3)
    gi = np.array([[2, 5], [0, 9], [3, 4], [1, 0], [2, 7]], np.int64)   # walk stops at the zero count
    ws5 = np.concatenate([ws, ws[:1]])
    with pytest.raises(AclnnError):                      # 5 pairs but the scales have 4 groups -> shape check
        npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, group_index=gi, quant_mode=1)
    got = npu_dequant_swiglu_quant(x, weight_scale=ws5, activation_scale=asc, group_index=gi, quant_mode=1)
    _check(got, G.dequant_swiglu_quant(x, ws5, asc, group_index=gi, quant_mode=1))
    assert not got[0][18:].any()


@pytest.mark.parametrize("per_channel", [False, True])
def test_static_quant(per_channel):
    rng, x, ws, asc = _data(seed=4)
    gi = np.array([10, 10, 10, 10], np.int64)
    shape = (4, 64) if per_channel else (4,)
    qs = (rng.random(shape) * 0.2 + 0.01).astype(np.float32)
    if not per_channel:
        qs[1] = 0                                          # a zero scale means 1 (CopyInQuantScale)
    qo = rng.integers(-5, 5, shape).astype(np.float32)
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, quant_scale=qs, quant_offset=qo,
                                   group_index=gi, quant_mode=0)
    _check(got, G.dequant_swiglu_quant(x, ws, asc, quant_scale=qs, quant_offset=qo, group_index=gi, quant_mode=0))


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_swiglu_modes_with_clamp(mode):
    _, x, ws, asc = _data(seed=5)
    ws = ws * 20                                           # values beyond the clamp limit
    gi = np.array([40, 0, 0, 0], np.int64)
    kw = dict(swiglu_mode=mode, clamp_limit=3.0, glu_alpha=1.5, glu_bias=0.5)
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, group_index=gi, quant_mode=1, **kw)
    _check(got, G.dequant_swiglu_quant(x, ws, asc, group_index=gi, quant_mode=1, **kw))


@pytest.mark.parametrize("exp_model,div_model", [("exp2", "ieee"), ("correctly_rounded", "reciprocal")])
def test_models(exp_model, div_model):
    _, x, ws, asc = _data(seed=6)
    gi = np.array([40, 0, 0, 0], np.int64)
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, group_index=gi, quant_mode=1,
                                   exp_model=exp_model, div_model=div_model)
    _check(got, G.dequant_swiglu_quant(x, ws, asc, group_index=gi, quant_mode=1, exp_model=exp_model,
                                       div_model=div_model))


FAITHFUL_CASES = [
    dict(quant_mode=1, activate_left=True),                                  # default models: the fast row path
    dict(quant_mode=1, exp_model="exp2"),                                    # any other model: the generic path
    dict(quant_mode=1, div_model="reciprocal", smooth=True),
    dict(quant_mode=1, swiglu_mode=1, activate_left=True, bias="int32"),
    dict(quant_mode=1, swiglu_mode=2, bias="float16", clamp_limit=2.0),
    dict(quant_mode=1, swiglu_mode=3, bias="float32", clamp_limit=2.0),
    dict(quant_mode=0, static="one"),
    dict(quant_mode=0, static="channel", div_model="reciprocal"),
    dict(quant_mode=1, pairs=True),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", FAITHFUL_CASES)
def test_faithful_kernel_equals_fused(case):
    """Every branch of the fused group row (the default-model fast path, the generic swiglu / quant loops, the
    modes, biases, static quant, pairs) against the instruction-level kernel."""
    rng, x, ws, asc = _data(seed=7)
    case = dict(case)
    gi = np.array([10, 0, 25, 5], np.int64)
    if case.pop("pairs", False):
        gi = np.array([[2, 10], [0, 25], [3, 5], [1, 0]], np.int64)
    bias = case.pop("bias", None)
    if bias == "int32":
        case["bias"] = rng.integers(-100, 100, (4, 128)).astype(np.int32)
    elif bias:
        case["bias"] = rng.standard_normal((4, 128)).astype(bias)
    if case.pop("smooth", False):
        case["quant_scale"] = (rng.random((4, 64)) + 0.5).astype(np.float32)
    static = case.pop("static", None)
    if static:
        shape = (4,) if static == "one" else (4, 64)
        case["quant_scale"] = (rng.random(shape) * 0.2 + 0.01).astype(np.float32)
        case["quant_offset"] = rng.integers(-5, 5, shape).astype(np.float32)
    ws = ws * 20
    a = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, group_index=gi, **case)
    b = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, group_index=gi, faithful=True, **case)
    _check(a, b)


def test_tiling_production_shape():
    """int32 [8192, 4096], 8 experts, dynamic, no bias, 910B2 (UB 196,352, 48 cores): inDimy 4096 is a
    PERFORMANCE_H shape, so UbFactorDimx = 16384 / 4096 = 4; maxCoreNum = min(ceil(8192 / 4), 36, 48) = 36."""
    tr = dsq_tiling(8192, 4096, group_num=8, spe_group_type=False, quant_mode=1, activate_left=True, has_bias=False,
                    bias_dtype=None, quant_scale_dtype=None, quant_is_one=False, activation_scale_empty=False,
                    swiglu_mode=0, clamp_limit=7.0, glu_alpha=1.702, glu_bias=1.0)
    td = tr.tiling
    assert (td.UbFactorDimx, td.maxCoreNum, td.outDimy, td.actRight, tr.tiling_key) == (4, 36, 2048, 0, 100000000)


def test_count_max_dim_limits():
    # the second formula for outDimy 64, dynamic, no bias: (196352 - 1024 - 256 - 32 - 512) / (2*136*4 + 64 + 4 + 512)
    assert count_max_dim(10 ** 6, 128, 64, 196352, False, 0, 1) == (196352 - 1024 - 256 - 32 - 512) // 1668
    with pytest.raises(AclnnError):
        count_max_dim(8, 2 ** 16, 2 ** 15, 196352, False, 0, 1)


@pytest.mark.parametrize("change,status", [
    (dict(x=np.zeros((4, 96), np.int32)), 161002),                       # last dim not a multiple of 64
    (dict(group_index=None, swiglu_mode=1), 561003),                    # no-group kernels ignore swiglu_mode
    (dict(group_index=None, quant_mode=0, quant_scale=np.ones(1, np.float32)), 161002),   # static: offset needed
    (dict(group_index=None, quant_mode=0, quant_scale=np.ones(1, np.float32),
          quant_offset=np.zeros(1, np.float16)), 161002),                # float32 offset only
    (dict(group_index=None, quant_mode=0, quant_scale=np.ones(64, np.float32),
          quant_offset=np.zeros(3, np.float32)), 161002),                # H or 1 offsets
    (dict(group_index=None, quant_mode=0, quant_scale=np.ones(64, np.float32),
          quant_offset=np.zeros(1, np.float32)), 161002),                # emulator-added: H scales need H offsets
    (dict(x=np.zeros((4, 128), np.float32), group_index=None), 161002),  # x int32 / fp16 / bf16 only
    (dict(x=np.zeros((4, 128), np.float16)), 161002),                    # with group_index: int32 / bf16 x only
    (dict(x=np.zeros((4, 128), ml_dtypes.bfloat16)), 561003),            # bf16 x with group_index: not emulated
    (dict(quant_mode=0), 161002),                                        # static with groups: scale and offset needed
    (dict(quant_mode=0, quant_scale=np.ones(2, np.float32)), 161002),
    (dict(quant_mode=0, quant_scale=np.ones(2, np.float32), quant_offset=np.ones(2, np.float16)), 161002),
    (dict(quant_mode=0, quant_scale=np.ones(3, np.float32), quant_offset=np.ones(3, np.float32)), 161002),  # [G]
    (dict(quant_mode=0, quant_scale=np.ones(2, np.float32), quant_offset=np.ones((2, 64), np.float32)), 161002),
    (dict(quant_mode=0, quant_scale=np.ones((2, 64), np.int32), quant_offset=np.ones((2, 64), np.int32)), 161002),
    (dict(group_index=None, x=np.zeros(128, np.int32)), 161002),         # SetTotalShape: at least 2 dims
    (dict(group_index=None, weight_scale=np.ones(64, np.float32)), 161002),
    (dict(group_index=None, quant_scale=np.ones(3, np.float32)), 161002),   # H or 1 elements
    (dict(group_index=None, quant_scale=np.ones(64, np.float16)), 161002),  # float32 only without groups
    (dict(group_index=np.array([2, 2], np.int32)), 161002),
    (dict(group_index=np.array([3, 3], np.int64)), 161002),              # 6 rows > 4
    (dict(quant_offset=np.zeros((2, 64), np.float32)), 161002),          # offset in dynamic mode
    (dict(weight_scale=np.zeros((2, 64), np.float32)), 161002),
    (dict(activation_scale=np.zeros(3, np.float32)), 161002),
    (dict(swiglu_mode=4), 161002),
    (dict(x=None), 161001),
])
def test_checks(change, status):
    ws_rows = 1 if "group_index" in change and change["group_index"] is None else 2
    kw = dict(x=np.zeros((4, 128), np.int32), weight_scale=np.ones((ws_rows, 128), np.float32),
              activation_scale=np.ones(4, np.float32), group_index=np.array([2, 2], np.int64), quant_mode=1)
    kw.update(change)
    x = kw.pop("x")
    with pytest.raises(AclnnError) as e:
        npu_dequant_swiglu_quant(x, **kw)
    assert e.value.status == status


def test_aclnn_v2():
    _, x, ws, asc = _data(seed=8)
    gi = np.array([10, 30, 0, 0], np.int64)
    y = np.full((40, 64), 9, np.int8)
    s = np.full(40, 9, np.float32)
    st, ws_size, ex = aclnnDequantSwigluQuantV2GetWorkspaceSize(x, ws, asc, None, None, None, gi, True, "dynamic",
                                                                None, None, -1, 0, 7.0, 1.702, 1.0, y, s)
    assert st == 0
    assert aclnnDequantSwigluQuantV2(None, ws_size, ex) == 0
    _check((y, s), G.dequant_swiglu_quant(x, ws, asc, group_index=gi, activate_left=True, quant_mode=1))
    st, _, ex = aclnnDequantSwigluQuantV2GetWorkspaceSize(x, ws, asc, None, None, None, gi, True, "dynamic", None,
                                                          None, -1, 0, 7.0, 1.702, 1.0, np.zeros((40, 64), np.int16),
                                                          s)
    assert st == 161002 and ex is None


# ---------------------------------------------------------------------------------------------------------------
# without group_index: the SwiGluTilingData kernels (tiling_base.cpp, dequant_swiglu_quant_dynamic_base.hpp)
# ---------------------------------------------------------------------------------------------------------------

def _ng_operands(T, D, bias, qs, asc, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-6000, 6000, (T, D), dtype=np.int32)
    ws = (rng.random(D) * 0.01 + 1e-4).astype(np.float32)
    a = (rng.random(T) * 0.1 + 0.01).astype(np.float32) if asc else None
    b = None
    if bias == "int32":
        b = rng.integers(-2 ** 31, 2 ** 31 - 1, D, dtype=np.int64).astype(np.int32)   # wraps when added
    elif bias is not None:
        b = (rng.standard_normal(D) * 3).astype(bias)
    q = None
    if qs == "one":
        q = np.array([0.75], np.float32)
    elif qs == "H":
        q = (rng.random(D // 2) + 0.5).astype(np.float32)
    return x, ws, a, b, q


# (T, D, bias, quant_scale, activation_scale): single-column rows (key 30006 / 30002 / 30005 / 30003), the
# performance key 30013 (D <= 3072, no bias, activation_scale), rows wider than the UB (column tiles + workspace),
# an odd number of rows per core, a colLen that is not 32-byte aligned
NG_CASES = [
    (40, 128, None, None, True),          # 30013
    (13, 256, None, "H", False),          # 30006
    (9, 192, "float32", "one", True),     # 30002
    (6, 128, "int32", "H", True),         # 30005
    (5, 136, "bfloat16", None, True),     # 30008
    (3, 10002, "float16", "one", True),   # 30003, 2 column tiles of 3968 + a tail
    (2, 9000, None, "H", False),          # 30006, 2 column tiles (4352 max tile -> 4224) + tail
    (4, 70, None, None, True),            # colLen 35: not 32B aligned
]


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("activate_left", [True, False])
@pytest.mark.parametrize("T,D,bias,qs,asc", NG_CASES)
def test_nogroup_bit_exact(T, D, bias, qs, asc, activate_left, faithful):
    x, ws, a, b, q = _ng_operands(T, D, bias, qs, asc, seed=T * 7 + D)
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=a, bias=b, quant_scale=q,
                                   activate_left=activate_left, quant_mode=1, faithful=faithful)
    _check(got, G.dequant_swiglu_quant_nogroup(x, ws, a, bias=b, quant_scale=q, activate_left=activate_left))


def test_nogroup_scale_is_max_over_127_and_codes_use_the_reciprocal():
    """The stored scale is float32(max / 127), not max * float32(1 / 127) as with group_index, and the codes are
    rint(v * float32(1 / scale)): find rows where either differs from the group kernel's formula."""
    x, ws, a, _, _ = _ng_operands(64, 128, None, None, True, seed=11)
    y, s = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=a, quant_mode=1)
    gy, gs = G.dequant_swiglu_quant(x, ws[None], a, group_index=np.array([64], np.int64), quant_mode=1)
    assert not np.array_equal(s.view(np.uint32), gs.view(np.uint32))
    m = (s.astype(np.float64) * 127.0)        # the row max is recovered within one ulp either way
    assert np.allclose(m, gs.astype(np.float64) * 127.0, rtol=1e-6)


def test_nogroup_multicol_nan_row():
    """A NaN in one column tile: the tile's max is NaN, the scalar compare (maxValue > reduceMax) skips it, so the
    row's scale comes from the other tile; a single-tile row takes ReduceMax's NaN."""
    x, ws, a, _, _ = _ng_operands(2, 9000, None, None, True, seed=12)
    ws[10] = np.nan
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=a, quant_mode=1)
    # baseColLen 4224 of colLen 4500: tile 1 holds columns 4224.. of each half; its golden alone gives the scale
    cols = np.r_[4224:4500, 4500 + 4224:9000]
    want_y, want_s = G.dequant_swiglu_quant_nogroup(x[:, cols], ws[cols], a, activate_left=False)
    _check((got[0][:, 4224:], got[1]), (want_y, want_s))
    assert got[0][:, 10].tolist() == [0, 0]      # the NaN element codes to 0
    fa = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=a, quant_mode=1, faithful=True)
    _check(got, fa)


def test_nogroup_tiling():
    """int32 [8192, 4096] dynamic, no bias, 910B2 (UB 196,352, 48 cores): maxTileLen = AlignDown(196352 // 45, 32)
    = 4352 >= colLen 2048, one column tile; 48 cores; key 30006 (no activation scale: not the performance key)."""
    tr = nogroup_tiling(8192, 2048, bias_dtype=None, quant_scale_size=0, activation_scale_empty=True,
                        activate_left=True)
    td = tr.tiling
    assert (td.baseRowLen, td.baseColLen, td.usedCoreNum, tr.tiling_key) == (1, 2048, 48, 30006)
    # colLen 5000, fp16 bias: 196352 // 49 = 4007 -> 4000 -> AlignDown(4000, 128) = 3968; 16 rows -> 16 cores
    tr = nogroup_tiling(16, 5000, bias_dtype="float16", quant_scale_size=1, activation_scale_empty=True,
                        activate_left=False)
    assert (tr.tiling.baseColLen, tr.block_dim, tr.tiling_key) == (3968, 16, 30003)
    # small shapes (colLen < 1536, rowLen < 128) use at most MIN_CORE 12 cores; the performance key
    tr = nogroup_tiling(100, 512, bias_dtype=None, quant_scale_size=512, activation_scale_empty=False,
                        activate_left=False)
    assert (tr.block_dim, tr.tiling_key) == (12, 30013)


def test_aclnn_v1_without_group_index():
    x, ws, a, _, _ = _ng_operands(12, 128, None, None, True, seed=13)
    y = np.full((12, 64), 9, np.int8)
    s = np.full(12, 9, np.float32)
    st, size, ex = aclnnDequantSwigluQuantGetWorkspaceSize(x, ws, a, None, None, None, None, False, "DYNAMIC", y, s)
    assert st == 0
    assert aclnnDequantSwigluQuant(None, size, ex) == 0
    _check((y, s), G.dequant_swiglu_quant_nogroup(x, ws, a))
    # quantModeOptional None = static; without quant_scale the kernel casts the SwiGLU result as it is (key 10009)
    s[:] = 9
    st, size, ex = aclnnDequantSwigluQuantGetWorkspaceSize(x, ws, a, None, None, None, None, False, None, y, s)
    assert st == 0 and aclnnDequantSwigluQuant(None, size, ex) == 0
    gy, _ = G.dequant_swiglu_quant_nogroup(x, ws, a, quant_mode=0)
    assert np.array_equal(y, gy) and np.array_equal(s, np.zeros(12, np.float32))


# static quantisation without group_index (keys 100xx, dequant_swiglu_quant_static_base.hpp) and 16-bit x
# (keys 10000-10003, 30009-30012: no dequant)

def _ng_static(T, D, qs, seed):
    rng = np.random.default_rng(seed)
    if qs is None:
        return None, None
    n = 1 if qs == "one" else D // 2
    q = (rng.random(n) * 0.2 + 0.01).astype(np.float32)
    o = rng.integers(-5, 5, n).astype(np.float32)
    return q, o


# (T, D, bias, quant_scale, activation_scale): every static key (bias kind x quant_scale size 1 / H), no quant_scale
# (the _D key, nothing applied), column tiles (colLen 5000 > baseColLen 3968 with an fp16 bias; static UB share
# 196352 // 53 -> 3680 -> 3584), a colLen that is not 32-byte aligned
NG_STATIC_CASES = [
    (13, 256, None, "H", True),           # 10009
    (9, 192, "float32", "one", False),    # 10008
    (6, 128, "int32", "H", True),         # 10005
    (7, 128, "int32", "one", True),       # 10004
    (5, 136, "bfloat16", "one", True),    # 10010
    (5, 136, "bfloat16", "H", False),     # 10011
    (3, 10000, "float16", "H", True),     # 10007, 2 column tiles of 3584 + a tail
    (4, 70, "float16", "one", True),      # 10006, colLen 35
    (4, 70, None, None, True),            # 10009 without quant_scale
]


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("activate_left", [True, False])
@pytest.mark.parametrize("T,D,bias,qs,asc", NG_STATIC_CASES)
def test_nogroup_static_bit_exact(T, D, bias, qs, asc, activate_left, faithful):
    x, ws, a, b, _ = _ng_operands(T, D, bias, None, asc, seed=T * 5 + D)
    q, o = _ng_static(T, D, qs, seed=T + D)
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=a, bias=b, quant_scale=q, quant_offset=o,
                                   activate_left=activate_left, quant_mode=0, faithful=faithful)
    want = G.dequant_swiglu_quant_nogroup(x, ws, a, bias=b, quant_scale=q, quant_offset=o,
                                          activate_left=activate_left, quant_mode=0)
    _check(got, want)
    assert not np.all(got[0] == 0) and np.all(got[1] == 0)    # codes present; the static kernels write no scale


def test_nogroup_static_scalar_reciprocal_has_no_zero_rule():
    """One quant_scale: Init computes 1 / quant_scale[0] on the scalar unit, so 0 gives +inf (saturated codes, NaN
    for 0 * inf -> 0), while the group kernels replace a zero scale by 1; the offset of one element is read even
    when quant_offset holds H (the kernel reads only element 0)."""
    x, ws, a, _, _ = _ng_operands(8, 128, None, None, True, seed=21)
    x[0, :64] = 0                                          # gate 0: 0 * inf = NaN -> code 0
    q = np.zeros(1, np.float32)
    o = np.arange(64, dtype=np.float32)
    y, _ = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=a, quant_scale=q, quant_offset=o,
                                    quant_mode=0)
    gy, _ = G.dequant_swiglu_quant_nogroup(x, ws, a, quant_scale=q, quant_offset=o[:1], quant_mode=0)
    assert np.array_equal(y, gy)
    assert set(np.unique(y[1:])) <= {-128, 0, 127} and np.all(y[0] == 0)
    yg, _ = npu_dequant_swiglu_quant(x, weight_scale=ws[None], activation_scale=a, quant_scale=q,
                                     quant_offset=o[:1], group_index=np.array([8], np.int64), quant_mode=0)
    assert not np.array_equal(y, yg)                      # group kernels: a zero scale means 1


def test_default_quant_mode_is_static():
    """op-plugin's default quant_mode=0 is static. With group_index the Dsk tiling needs quant_scale and
    quant_offset (CheckForStaticQuant: their descs must not be null) -> 161002; without group_index a missing
    quant_scale means no quantisation step at all: y = codes(SwiGLU)."""
    x, ws, a, _, _ = _ng_operands(8, 128, None, None, True, seed=22)
    with pytest.raises(AclnnError) as e:
        npu_dequant_swiglu_quant(x, weight_scale=ws[None], activation_scale=a, group_index=np.array([8], np.int64))
    assert e.value.status == 161002
    y, s = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=a)
    _check((y, s), G.dequant_swiglu_quant_nogroup(x, ws, a, quant_mode=0))


@pytest.mark.parametrize("qs_dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("per_channel", [False, True])
def test_static_quant_16bit_scales_with_groups(qs_dtype, per_channel):
    """Static quant_scale / quant_offset of float16 / bfloat16 (keys 1000001xx / 1000002xx): widened exactly."""
    dt = np.float16 if qs_dtype == "float16" else ml_dtypes.bfloat16
    rng, x, ws, asc = _data(seed=23)
    gi = np.array([10, 0, 25, 5], np.int64)
    shape = (4, 64) if per_channel else (4,)
    qs = (rng.random(shape) * 0.2 + 0.01).astype(dt)
    qo = rng.integers(-5, 5, shape).astype(dt)
    if not per_channel:
        qs[1] = 0
    for faithful in (False, True):
        got = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, quant_scale=qs, quant_offset=qo,
                                       group_index=gi, quant_mode=0, faithful=faithful)
        _check(got, G.dequant_swiglu_quant(x, ws, asc, quant_scale=qs.astype(np.float32),
                                           quant_offset=qo.astype(np.float32), group_index=gi, quant_mode=0))


# (T, D, quant_mode, quant_scale): 16-bit x, dynamic with several rows per UB pass (baseRowLen 5 for 200 rows on
# 48 cores), one row per pass (T < cores), column tiles (colLen 9000 > 7680), static with one / H / no scales
X16_CASES = [
    (200, 128, 1, None),
    (7, 256, 1, "H"),
    (6, 70, 1, "one"),
    (2, 18000, 1, "H"),
    (9, 192, 0, "one"),
    (9, 192, 0, "H"),
    (5, 70, 0, None),
    (2, 18000, 0, "H"),
]


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("x_dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("T,D,quant_mode,qs", X16_CASES)
def test_nogroup_16bit_x_bit_exact(T, D, quant_mode, qs, x_dtype, faithful):
    rng = np.random.default_rng(T + D + quant_mode)
    dt = np.float16 if x_dtype == "float16" else ml_dtypes.bfloat16
    x = (rng.standard_normal((T, D)) * 4).astype(dt)
    x[0, 3] = np.inf
    if quant_mode == 1:
        q = None if qs is None else (rng.random(1 if qs == "one" else D // 2) + 0.5).astype(np.float32)
        o = None
    else:
        q, o = _ng_static(T, D, qs, seed=T)
    ws = np.full(D, np.nan, np.float32)                     # not read for 16-bit x
    got = npu_dequant_swiglu_quant(x, weight_scale=ws, quant_scale=q, quant_offset=o, quant_mode=quant_mode,
                                   activate_left=bool(T % 2), faithful=faithful)
    _check(got, G.dequant_swiglu_quant_nogroup(x, quant_scale=q, quant_offset=o, quant_mode=quant_mode,
                                               activate_left=bool(T % 2)))


def test_nogroup_static_and_16bit_tiling():
    """Static int32 x, no bias: maxTileLen = AlignDown(196352 // (12 * 4 + 1), 32) = 4000, colLen 5000 -> baseColLen
    AlignDown(4000, 128) = 3968, key 10009 (dynamic: 196352 // 45 -> 4352), no staging workspace; bf16 x dynamic:
    196352 // 25 = 7854 -> 7840; 200 rows on 48 cores -> baseRowLen min(7840 // 128, ceil(200 / 48)) = 5, key 30012;
    16-bit x leaves biasIsEmpty / activateScaleIsEmpty at 0 (checkWeightBiasActivate is skipped)."""
    st, dy = (nogroup_tiling(16, 5000, bias_dtype=None, quant_scale_size=0, activation_scale_empty=True,
                             activate_left=False, quant_mode=qm) for qm in (0, 1))
    assert (st.tiling.baseColLen, st.tiling_key, dy.tiling.baseColLen) == (3968, 10009, 4352)
    assert dy.workspace_size - st.workspace_size == 16 * 5000 * 4     # only dynamic stages rows in the workspace
    tr = nogroup_tiling(200, 64, bias_dtype=None, quant_scale_size=0, activation_scale_empty=True,
                        activate_left=False, quant_mode=1, x_dtype="bfloat16")
    td = tr.tiling
    assert (td.baseRowLen, td.baseColLen, td.biasIsEmpty, td.activateScaleIsEmpty, tr.tiling_key) == \
        (5, 64, 0, 0, 30012)
    keys = {(qm, xd, n): nogroup_tiling(4, 64, bias_dtype=None, quant_scale_size=n, activation_scale_empty=True,
                                         activate_left=False, quant_mode=qm, x_dtype=xd).tiling_key
            for qm in (0, 1) for xd in ("float16", "bfloat16") for n in (1, 64)}
    assert keys == {(0, "float16", 1): 10000, (0, "float16", 64): 10002, (0, "bfloat16", 1): 10001,
                    (0, "bfloat16", 64): 10003, (1, "float16", 1): 30009, (1, "float16", 64): 30010,
                    (1, "bfloat16", 1): 30011, (1, "bfloat16", 64): 30012}
    keys = {b: nogroup_tiling(4, 64, bias_dtype=b, quant_scale_size=1, activation_scale_empty=False,
                              activate_left=False, quant_mode=0).tiling_key
            for b in (None, "int32", "float32", "float16", "bfloat16")}
    assert keys == {None: 10008, "int32": 10004, "float32": 10008, "float16": 10006, "bfloat16": 10010}
