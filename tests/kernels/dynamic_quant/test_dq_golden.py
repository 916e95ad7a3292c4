"""DynamicQuant against the independent numpy golden, bit for bit, on every tiling key and its boundaries.

Shapes are the smallest that select each key (test_dq_tiling.py derives the keys); the golden is told the key's
scale formula (golden.key_formula), nothing else.
"""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.dynamic_quant import api, golden, tiling as T

BF16 = ml_dtypes.bfloat16


def _data(rows, L, dtype, seed, scale=3.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, L)) * scale * rng.random((rows, 1)) * 4).astype(np.float32)
    return x.astype(dtype)


def _smooth(L, dtype, seed, groups=None):
    rng = np.random.default_rng(seed + 100)
    shape = (L,) if groups is None else (groups, L)
    return (rng.random(shape) * 1.5 + 0.25).astype(np.float32).astype(dtype)


def _run_and_compare(x, smooth=None, group=None, *, int4=False, asym=False, key=None, div_model="ieee"):
    rows, L = x.shape[0], x.shape[-1]
    xdt = "bfloat16" if x.dtype == BF16 else "float16"
    res = T.tiling(rows, L, x_dtype=xdt, has_smooth=smooth is not None, has_group=group is not None,
                   group_num=0 if group is None else len(group), y_int4=int4, asymmetric=asym)
    if key is not None:
        assert res.tiling_key == key
    kw = dict(smooth_scales=smooth, group_index=group, div_model=div_model)
    if int4:
        kw["dst_type"] = 16
    if asym:
        y, s, o = api.npu_dynamic_quant_asymmetric(x, **kw)
    else:
        y, s = api.npu_dynamic_quant(x, **kw)
        o = None
    gx = golden.widen(x.view(np.uint16), xdt)
    gs = None if smooth is None else golden.widen(smooth.view(np.uint16), xdt)
    gy, gsc, goff = golden.dynamic_quant(gx, gs, group, int4=int4, asymmetric=asym,
                                         scale_formula=golden.key_formula(res.tiling_key), div_model=div_model)
    if int4:
        assert np.array_equal(y.reshape(rows, -1).view(np.uint8), golden.pack_int4(gy))
    else:
        assert np.array_equal(y.view(np.uint8), gy.view(np.uint8))
    nan = np.isnan(gsc)
    assert np.array_equal(np.isnan(s), nan)
    assert np.array_equal(s[~nan].view(np.uint32), gsc[~nan].view(np.uint32))
    if asym:
        assert np.array_equal(o.view(np.uint32), goff.view(np.uint32))
    return res.tiling_key, y, s, o


def test_a_reused_output_is_written_whole(cache_every_output):
    """A second call gets the first call's freed y (tests/conftest.py): every byte is written again."""
    y = _run_and_compare(_data(9, 136, BF16, seed=1))[1]
    where = y.ctypes.data
    del y
    y = _run_and_compare(_data(9, 136, BF16, seed=2))[1]
    assert y.ctypes.data == where


@pytest.mark.parametrize("rows, L, smooth, key", [
    (4, 4096, False, 100), (5, 5120, True, 100), (3, 4096, False, 10), (9, 128, False, 10), (9, 136, True, 10),
    (5, 127, False, 2), (7, 130, True, 2), (100, 100, False, 2), (3, 16320, False, 10), (3, 16384, False, 0),
    (3, 12736, True, 10), (2, 12800, True, 6), (2, 17752, False, 6), (2, 20000, True, 6),
])
def test_keys_bf16(rows, L, smooth, key):
    x = _data(rows, L, BF16, rows * L)
    sm = _smooth(L, BF16, L) if smooth else None
    _run_and_compare(x, sm, key=key)


@pytest.mark.parametrize("rows, L, key", [(5, 130, 3), (4, 4096, 100), (6, 256, 10), (2, 16384, 1), (2, 20000, 6)])
def test_keys_half(rows, L, key):
    x = _data(rows, L, np.float16, L, scale=1.0)
    _run_and_compare(x, key=key)
    _run_and_compare(x, _smooth(L, np.float16, 3))


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("rows, L, keys", [(9, 130, (2, 3)), (9, 4096, (100, 100)), (9, 256, (10, 10)),
                                           (9, 16384, (0, 1))])
def test_special_rows_read_from_the_codes(dtype, rows, L, keys):
    """The rows the fused path reads straight from the 16-bit codes: zero, Inf, NaN (two payloads: the first NaN's
    is the stored max), subnormal and largest-value rows, a row whose max is a negative value."""
    x = _data(rows, L, np.float32, 11)
    tiny = np.float32(2.0 ** -20 if dtype is np.float16 else 2.0 ** -130)
    x[0] = 0
    x[1, 3] = np.inf
    x[2, 5] = np.nan
    x[3] = tiny * np.sign(x[3])
    x[4, L - 1] = -np.inf
    x[5, 7] = -65504.0
    x = x.astype(dtype)
    x.view(np.uint16)[6, 1] = 0x7E01 if dtype is np.float16 else 0x7FC1     # a NaN with a payload, then another
    x.view(np.uint16)[6, 9] = 0xFE55 if dtype is np.float16 else 0xFF85
    x.view(np.uint16)[7] = 0x8001                                           # the smallest negative subnormal
    _run_and_compare(x, key=keys[dtype is np.float16])


def test_scale_bits_depend_on_key():
    # the same row through key 2 (max * fp32(1/127)) and key 0 (1 / (127 / max)): the scale bits differ on some rows
    x = _data(64, 130, BF16, 7)
    _, _, s2, _ = _run_and_compare(x, key=2)
    g0 = golden.dynamic_quant(golden.widen(x.view(np.uint16), "bfloat16"), scale_formula="recip_q")[1]
    assert (s2.view(np.uint32) != g0.view(np.uint32)).any()


@pytest.mark.parametrize("rows, L, groups, key", [(10, 256, 3, 7), (12, 130, 4, 7), (4, 12000, 2, 8)])
def test_moe_group_index(rows, L, groups, key):
    x = _data(rows, L, BF16, 11)
    sm = _smooth(L, BF16, 5, groups)
    ends = np.sort(np.random.default_rng(3).integers(0, rows + 1, groups - 1))
    group = np.concatenate([ends, [rows + 2]]).astype(np.int32)      # empty groups allowed, last end past rows
    _run_and_compare(x, sm, group, key=key)


def test_group_index_without_smooth_is_ignored():
    x = _data(6, 4096, BF16, 2)
    k, y, s, _ = _run_and_compare(x, None, None)
    assert k == 100
    y2, s2 = api.npu_dynamic_quant(x, group_index=np.array([3, 6], np.int32))
    assert T.tiling(6, 4096, has_group=True, group_num=2).tiling_key == 2
    assert np.array_equal(y2, y)


@pytest.mark.parametrize("rows, L, smooth, key", [(4, 4096, False, 10), (5, 120, True, 2), (3, 16384, False, 0),
                                                  (2, 20000, False, 6)])
def test_int4(rows, L, smooth, key):
    x = _data(rows, L, BF16, 9)
    _run_and_compare(x, _smooth(L, BF16, 1) if smooth else None, int4=True, key=key)


@pytest.mark.parametrize("rows, L, smooth, key", [(4, 4096, False, 2), (5, 130, True, 2), (3, 16384, False, 0),
                                                  (2, 20000, True, 6)])
def test_asymmetric(rows, L, smooth, key):
    x = _data(rows, L, BF16, 4) + np.float32(0.5).astype(BF16)
    _run_and_compare(x, _smooth(L, BF16, 1) if smooth else None, asym=True, key=key)


def test_asymmetric_int4_and_moe():
    x = _data(6, 256, BF16, 4)
    _run_and_compare(x, asym=True, int4=True, key=2)
    _run_and_compare(x, _smooth(256, BF16, 2, 2), np.array([3, 6], np.int32), asym=True, key=7)


@pytest.mark.parametrize("L, key", [(130, 2), (256, 10), (4096, 100), (16384, 0)])
def test_special_rows(L, key):
    """Zero rows (y 0, scale 0), +-Inf rows (y 0, scale Inf), NaN rows (y 0, scale NaN), subnormal-only rows, a row
    whose max gives q = 127 / max = Inf (bf16 below 127 * 2^-128): all follow the cast chain's NaN -> 0 rule."""
    rows = 8
    x = _data(rows, L, np.float32, 1)
    x[0] = 0
    x[1, 3] = np.inf
    x[2, L // 2] = -np.inf
    x[3, 5] = np.nan
    x[4] = np.float32(2.0 ** -130) * np.sign(x[4])
    x[5] = 0
    x[5, 1] = np.float32(2.0 ** -125)
    x[6, :] = -x[6, :]
    xb = x.astype(BF16)
    _, y, s, _ = _run_and_compare(xb, key=key)
    assert (y[0] == 0).all() and s[0] == 0 and (y[1] == 0).all() and np.isinf(s[1]) and np.isnan(s[3])
    assert (y[3] == 0).all()


def test_div_model_switch():
    x = _data(64, 130, BF16, 8)
    _, y_ieee, s_ieee, _ = _run_and_compare(x, key=2)
    _, y_rm, s_rm, _ = _run_and_compare(x, key=2, div_model="reciprocal")
    assert np.array_equal(s_ieee.view(np.uint32), s_rm.view(np.uint32))     # key 2 stores max * fp32(1/127)


def test_vendor_golden_distance():
    """The ops-nn golden (x / (max * fp32(1/127)), round half even, no clamp): within 1 of the kernel."""
    x = _data(32, 130, BF16, 12)
    y, s = api.npu_dynamic_quant(x)
    vy, vs = golden.vendor_golden(golden.widen(x.view(np.uint16), "bfloat16"))
    d = np.abs(y.astype(np.int32) - vy.astype(np.int32))
    assert d.max() <= 1
    assert np.array_equal(s.view(np.uint32), vs.view(np.uint32))            # key 2: the same scale formula
