"""exp_f32_many (the EXP_CORRECTLY_ROUNDED model over an array, vectorised, without the libm call on [-87, 88])
equals exp_f32(x, 0) bit for bit: a strided sample of every float32 of the range by default, every one of them
under -m slow."""

import numpy as np
import pytest
from numba import njit, prange

from npu_emu.ascendc.transcendental import EXP_CORRECTLY_ROUNDED, exp_f32, exp_f32_many

POS_HI = int(np.float32(88.0).view(np.uint32))
NEG_HI = int(np.float32(-87.0).view(np.uint32))


@njit(parallel=True, cache=True)
def _mismatches(lo, hi, step):
    n = (hi - lo + step - 1) // step
    bad = np.zeros(64, np.int64)
    for c in prange(64):
        i0 = n * c // 64
        i1 = n * (c + 1) // 64
        src = np.empty(4096, np.float32)
        dst = np.empty(4096, np.float32)
        mark = np.empty(4096, np.uint8)
        for b0 in range(i0, i1, 4096):
            m = min(4096, i1 - b0)
            for i in range(m):
                src[i] = np.uint32(lo + (b0 + i) * step).view(np.float32)
            exp_f32_many(dst, src, m, mark)
            for i in range(m):
                if dst[i:i + 1].view(np.uint32)[0] != np.float32(exp_f32(src[i], 0)).view(np.uint32):
                    bad[c] += 1
    return bad.sum()


def test_specials_and_range_ends():
    xs = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-30, 88.0, -87.0, 88.0001, -87.0001, 88.72, 89.0, -103.9, -104.0,
                   -150.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5], np.float32)
    got = np.empty_like(xs)
    exp_f32_many(got, xs, xs.size, np.empty(xs.size, np.uint8))
    for x, a in zip(xs, got):
        b = exp_f32(x, EXP_CORRECTLY_ROUNDED)
        assert np.float32(a).view(np.uint32) == np.float32(b).view(np.uint32) or (a != a and b != b)


def test_negate_is_exp_of_minus_x():
    """negate=True (DequantSwigluQuant's Muls(-1) + Exp in one pass) equals exp_f32(-x) on a strided sample of both
    signs and on the specials (NaN compares as NaN)."""
    xs = np.concatenate([np.arange(0, POS_HI + 1, 65537, dtype=np.uint32),
                         np.arange(0x80000000, NEG_HI + 1, 65537, dtype=np.uint32)]).view(np.float32)
    xs = np.concatenate([xs, np.array([0.0, -0.0, 88.5, -88.5, 104.0, -104.0, np.inf, -np.inf, np.nan], np.float32)])
    got = np.empty_like(xs)
    exp_f32_many(got, xs, xs.size, np.empty(xs.size, np.uint8), True)
    want = np.array([exp_f32(np.float32(-x), EXP_CORRECTLY_ROUNDED) for x in xs], np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all()


def test_strided_sample():
    assert _mismatches(0, POS_HI + 1, 4093) == 0
    assert _mismatches(0x80000000, NEG_HI + 1, 4093) == 0


@pytest.mark.slow
def test_every_float32_of_the_fast_range():
    """About 2.2e9 inputs (100 s on two cores)."""
    assert _mismatches(0, POS_HI + 1, 1) == 0
    assert _mismatches(0x80000000, NEG_HI + 1, 1) == 0
