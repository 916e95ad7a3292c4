"""Div (with its division-model switch) and ReduceMin of the instruction layer, against numpy."""

import numpy as np
from numba import njit

from npu_emu.ascendc import DIV_IEEE, DIV_RECIP_MUL, DT_BF16, DT_FLOAT, Div, ReduceMin


@njit(cache=True, error_model="numpy")
def _div(a, b, model):
    d = np.empty_like(a)
    Div(d, a, b, a.size, DT_FLOAT, model)
    return d


@njit(cache=True, error_model="numpy")
def _div_bf16(a, b):
    d = np.empty_like(a)
    Div(d, a, b, a.size, DT_BF16)
    return d


@njit(cache=True, error_model="numpy")
def _rmin(a):
    d = np.empty(2, a.dtype)
    ReduceMin(d, a, d, a.size, True)
    return d


def test_div_models():
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(4096) * 100).astype(np.float32)
    b = (rng.standard_normal(4096) * 3).astype(np.float32)
    a[:6] = [1, 0, np.inf, 127, -0.0, np.nan]
    b[:6] = [0, 0, np.inf, 1e-30, 5, 1]
    with np.errstate(all="ignore"):
        ieee = a / b
        rm = (a * (np.float32(1) / b).astype(np.float32)).astype(np.float32)
    assert np.array_equal(_div(a, b, DIV_IEEE).view(np.uint32), ieee.view(np.uint32))
    assert np.array_equal(_div(a, b, DIV_RECIP_MUL).view(np.uint32), rm.view(np.uint32))
    assert (ieee.view(np.uint32) != rm.view(np.uint32)).any()          # the models differ on some quotients


def test_div_bf16():
    import ml_dtypes
    rng = np.random.default_rng(1)
    a = rng.standard_normal(512).astype(np.float32).astype(ml_dtypes.bfloat16)
    b = (rng.standard_normal(512) + 3).astype(np.float32).astype(ml_dtypes.bfloat16)
    want = (a.astype(np.float32) / b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(_div_bf16(a.view(np.uint16), b.view(np.uint16)), want.view(np.uint16))


def test_reduce_min():
    a = np.array([3, -1, 2, -1, 5], np.float32)
    d = _rmin(a)
    assert d[0] == -1 and d[1:2].view(np.uint32)[0] == 1               # first index of the minimum
    a = np.array([0.0, -0.0, 1.0], np.float32)
    assert np.signbit(_rmin(a)[0])                                     # -0 below +0
    a = np.array([1.0, np.nan, -5.0], np.float32)
    assert np.isnan(_rmin(a)[0])                                       # NaN wins ([HW-unverified])
