"""The branch-free RINT path of ``scalar.f32_to_f16`` (``_f32_to_f16_rint``) against the general encoder
(``_encode_16``, the path every other mode takes) and against numpy's IEEE float32 -> float16 cast.

The slow tests run every one of the 2^32 float32 patterns for RINT and NONE, saturating and not; the default run
checks a sample with every special class (zeros, fp16 subnormal/normal boundaries and their midpoints, the
overflow threshold, Inf, NaN payloads).
"""

import numpy as np
import pytest
from numba import njit, prange

from npu_emu.dtypes import scalar

COMBOS = [(scalar.CAST_RINT, False), (scalar.CAST_RINT, True), (scalar.CAST_NONE, False), (scalar.CAST_NONE, True)]
CHUNK = 1 << 28


@njit(parallel=True, cache=True, error_model="numpy")
def _mismatches(start, count, rmode, sat):
    """(number of patterns in [start, start + count) where the dispatching f32_to_f16, the branch-free path and
    the general encoder disagree, first such pattern or -1). Integer reductions: thread-count independent."""
    bad = 0
    first = np.int64(1) << 40
    for i in prange(count):
        x = np.uint32(start + i).view(np.float32)
        fast = scalar._f32_to_f16_rint(x, sat)
        ref = scalar._encode_16(x, rmode, sat, 10, -14, 0x7BFF)
        disp = scalar.f32_to_f16(x, rmode, sat)
        if fast != ref or disp != ref:
            bad += 1
            first = min(first, start + i)
    return bad, (first if bad else -1)


@njit(cache=True, error_model="numpy")
def _encode_all(bits, rmode, sat, out):
    for i in range(bits.size):
        out[i] = scalar.f32_to_f16(np.uint32(bits[i]).view(np.float32), rmode, sat)


def _sample():
    """Random patterns plus every class boundary of the fp16 grid and its neighbours."""
    rng = np.random.default_rng(20261130)
    parts = [rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)]
    # every fp16 value and every midpoint between neighbours, as float32 (exact), with +-1 ulp of float32
    h = np.arange(0x7C01, dtype=np.uint16).view(np.float16).astype(np.float64)
    mids = (h[:-1] + h[1:]) / 2
    marks = np.concatenate([h, mids, [65520.0, 65536.0, 2.0 ** -25, 2.0 ** -26, 3 * 2.0 ** -26]])
    f = marks.astype(np.float32).view(np.uint32)
    around = np.concatenate([f - 1, f, f + 1])
    parts += [around, around | np.uint32(0x80000000)]
    parts.append(np.array([0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF, 0x7FC00000, 0xFFC00000, 0x7FBFFFFF,
                           0x7F7FFFFF, 0xFF7FFFFF, 0, 0x80000000, 1, 0x80000001], np.uint32))
    return np.concatenate(parts)


@pytest.mark.parametrize("rmode,sat", COMBOS)
def test_sample_matches_general_path(rmode, sat):
    bits = _sample()
    fast = np.empty(bits.size, np.uint16)
    ref = np.empty(bits.size, np.uint16)
    _encode_all(bits, rmode, sat, fast)
    _encode_general(bits, rmode, sat, ref)
    diff = np.flatnonzero(fast != ref)
    assert diff.size == 0, f"first differing pattern {bits[diff[0]]:#010x}: {fast[diff[0]]:#06x} vs {ref[diff[0]]:#06x}"


@njit(cache=True, error_model="numpy")
def _encode_general(bits, rmode, sat, out):
    for i in range(bits.size):
        out[i] = scalar._encode_16(np.uint32(bits[i]).view(np.float32), rmode, sat, 10, -14, 0x7BFF)


def _check_numpy(bits, got, sat):
    """numpy's float32 -> float16 is IEEE RNE with overflow to Inf; NaN becomes the canonical s|0x7E00 (non-sat)
    or +0 (sat, docs/codecs.md §9), and saturation clamps Inf / overflow to +-65504 (0x7BFF)."""
    x = bits.view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        ref = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    sign = (bits >> 16).astype(np.uint16) & np.uint16(0x8000)
    if sat:
        ref = np.where((ref & 0x7FFF) == 0x7C00, sign | np.uint16(0x7BFF), ref)
        ref = np.where(nan, np.uint16(0), ref)
    else:
        ref = np.where(nan, sign | np.uint16(0x7E00), ref)
    diff = np.flatnonzero(got != ref)
    assert diff.size == 0, f"first differing pattern {bits[diff[0]]:#010x}: {got[diff[0]]:#06x} vs numpy {ref[diff[0]]:#06x}"


@pytest.mark.parametrize("sat", [False, True])
def test_sample_matches_numpy(sat):
    bits = _sample()
    got = np.empty(bits.size, np.uint16)
    _encode_all(bits, scalar.CAST_RINT, sat, got)
    _check_numpy(bits, got, sat)


def test_sample_sees_every_class():
    """The sample is not vacuous: it reaches subnormal, normal, overflow, Inf and NaN results, and both ways of
    every tie."""
    bits = _sample()
    got = np.empty(bits.size, np.uint16)
    _encode_all(bits, scalar.CAST_RINT, False, got)
    mag = got & np.uint16(0x7FFF)
    assert ((mag > 0) & (mag < 0x400)).any() and ((mag >= 0x400) & (mag < 0x7C00)).any()
    assert (mag == 0x7C00).any() and (mag == 0x7E00).any()


@pytest.mark.slow
@pytest.mark.parametrize("rmode,sat", COMBOS)
def test_all_patterns_match_general_path(rmode, sat):
    for start in range(0, 1 << 32, CHUNK):
        bad, first = _mismatches(start, CHUNK, rmode, sat)
        assert bad == 0, f"{bad} patterns differ in [{start:#x}, +{CHUNK:#x}), first {first:#010x}"


@pytest.mark.slow
@pytest.mark.parametrize("sat", [False, True])
def test_all_patterns_match_numpy(sat):
    step = 1 << 26                                              # numpy temporaries: ~1 GiB per chunk
    for start in range(0, 1 << 32, step):
        bits = np.arange(start, start + step, dtype=np.uint32)
        got = np.empty(step, np.uint16)
        _encode_all(bits, scalar.CAST_RINT, sat, got)
        _check_numpy(bits, got, sat)
