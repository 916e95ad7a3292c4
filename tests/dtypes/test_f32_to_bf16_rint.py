"""The branch-free ``scalar.f32_to_bf16_rint`` against the general encoder (``f32_to_bf16(x, CAST_RINT, False)``)
and against ml_dtypes' float32 -> bfloat16 cast (RNE). Slow: all 2^32 patterns; default: a sample with every class
(zeros, subnormals, every bf16 value and midpoint with their float32 neighbours, overflow, Inf, NaN payloads)."""

import ml_dtypes
import numpy as np
import pytest
from numba import njit, prange

from npu_emu.dtypes import scalar

CHUNK = 1 << 28


@njit(parallel=True, cache=True, error_model="numpy")
def _mismatches(start, count):
    bad = 0
    for i in prange(count):
        x = np.uint32(start + i).view(np.float32)
        if scalar.f32_to_bf16_rint(x) != scalar.f32_to_bf16(x, scalar.CAST_RINT, False):
            bad += 1
    return bad


@njit(cache=True, error_model="numpy")
def _both(bits, fast, ref):
    for i in range(bits.size):
        x = np.uint32(bits[i]).view(np.float32)
        fast[i] = scalar.f32_to_bf16_rint(x)
        ref[i] = scalar.f32_to_bf16(x, scalar.CAST_RINT, False)


def _sample():
    rng = np.random.default_rng(20261203)
    h = np.arange(0x7F81, dtype=np.uint32) << 16
    mids = h[:-1] + np.uint32(0x8000)
    f = np.concatenate([h, mids])
    around = np.concatenate([f - 1, f, f + 1])
    return np.concatenate([rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32), around,
                           around | np.uint32(0x80000000),
                           np.array([0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF, 0x7FC00000, 0x7F7FFFFF,
                                     0x7F7F8000, 0x7F7FFFFF, 0, 0x80000000, 1], np.uint32)])


def test_sample_matches_general_path_and_ml_dtypes():
    bits = _sample()
    fast = np.empty(bits.size, np.uint16)
    ref = np.empty(bits.size, np.uint16)
    _both(bits, fast, ref)
    assert np.array_equal(fast, ref)
    x = bits.view(np.float32)
    ok = ~np.isnan(x)
    assert np.array_equal(fast[ok], x[ok].astype(ml_dtypes.bfloat16).view(np.uint16))
    mag = fast & np.uint16(0x7FFF)
    assert (mag == 0x7F80).any() and (mag > 0x7F80).any() and ((mag > 0) & (mag < 0x80)).any()


@pytest.mark.slow
def test_all_patterns_match_general_path():
    for start in range(0, 1 << 32, CHUNK):
        assert _mismatches(start, CHUNK) == 0
