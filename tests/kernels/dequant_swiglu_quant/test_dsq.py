"""npu_dequant_swiglu_quant (group_index kernels): bit-exact against the numpy golden (int8 codes and the float32
scale bits), the tiling, the checks, the aclnn V2 pair."""

import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.dequant_swiglu_quant import golden as G
from npu_emu.kernels.dequant_swiglu_quant.api import (
    aclnnDequantSwigluQuantV2,
    aclnnDequantSwigluQuantV2GetWorkspaceSize,
    npu_dequant_swiglu_quant,
)
from npu_emu.kernels.dequant_swiglu_quant.tiling import count_max_dim, dsq_tiling


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


@pytest.mark.slow
def test_faithful_kernel_equals_fused():
    rng, x, ws, asc = _data(seed=7)
    gi = np.array([10, 0, 25, 5], np.int64)
    bias = rng.integers(-100, 100, (4, 128)).astype(np.int32)
    for kw in (dict(quant_mode=1, activate_left=True), dict(quant_mode=1, swiglu_mode=2, bias=bias)):
        a = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, group_index=gi, **kw)
        b = npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=asc, group_index=gi, faithful=True, **kw)
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
    (dict(group_index=None), 561003),
    (dict(group_index=np.array([2, 2], np.int32)), 161002),
    (dict(group_index=np.array([3, 3], np.int64)), 161002),              # 6 rows > 4
    (dict(quant_offset=np.zeros((2, 64), np.float32)), 161002),          # offset in dynamic mode
    (dict(weight_scale=np.zeros((2, 64), np.float32)), 161002),
    (dict(activation_scale=np.zeros(3, np.float32)), 161002),
    (dict(swiglu_mode=4), 161002),
    (dict(x=None), 161001),
])
def test_checks(change, status):
    kw = dict(x=np.zeros((4, 128), np.int32), weight_scale=np.ones((2, 128), np.float32),
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
