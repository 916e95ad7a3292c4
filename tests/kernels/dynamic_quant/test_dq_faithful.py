"""faithful=True (the instructions of npu_emu.ascendc on row views) equals the fused default bit for bit, on every
tiling key, with Inf / NaN / zero rows and subnormals, and for the asymmetric and int4 chains."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.dynamic_quant import api

BF16 = ml_dtypes.bfloat16


def _x(rows, L, seed, dtype=BF16):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, L)) * 5).astype(np.float32)
    if rows >= 6:
        x[0] = 0
        x[1, 1] = np.inf
        x[2, 2] = np.nan
        x[3] = np.float32(2.0 ** -130)
        x[4, L - 1] = -np.inf
    return x.astype(dtype)


def _same(a, b):
    for u, v in zip(a, b):
        assert np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8))


@pytest.mark.parametrize("rows, L, smooth, groups", [
    (6, 4096, False, 0), (7, 256, True, 0), (8, 130, True, 0), (6, 16384, False, 0), (6, 20000, True, 0),
    (9, 256, True, 3), (6, 12000, True, 2),
])
def test_faithful_equals_fused(rows, L, smooth, groups):
    x = _x(rows, L, L)
    sm = None
    grp = None
    if smooth:
        shape = (L,) if not groups else (groups, L)
        sm = (np.random.default_rng(1).random(shape) + 0.5).astype(np.float32).astype(BF16)
    if groups:
        grp = np.linspace(rows // groups, rows, groups).astype(np.int32)
    for div_model in ("ieee", "reciprocal"):
        a = api.npu_dynamic_quant(x, smooth_scales=sm, group_index=grp, div_model=div_model)
        b = api.npu_dynamic_quant(x, smooth_scales=sm, group_index=grp, div_model=div_model, faithful=True)
        _same(a, b)


@pytest.mark.parametrize("rows, L", [(6, 130), (6, 20000)])
def test_faithful_asymmetric(rows, L):
    x = _x(rows, L, 5)
    _same(api.npu_dynamic_quant_asymmetric(x), api.npu_dynamic_quant_asymmetric(x, faithful=True))


def test_faithful_int4():
    x = _x(6, 256, 6)
    _same(api.npu_dynamic_quant(x, dst_type=16), api.npu_dynamic_quant(x, dst_type=16, faithful=True))
