"""The vector forms of npu_emu.dtypes.vector against rint_code_bf16_pow2 (itself proven equal to the FP32 codecs in
test_pow2_codes.py): every BF16 pattern, every shift pow2_shift_ok admits, every format; the normal-only forms'
redo flag per pattern (each pattern alone in all 32 lanes) against the set it must cover; the block maximum."""

import numpy as np
import pytest
from numba import njit

from npu_emu.dtypes import vector as V
from npu_emu.dtypes.scalar import pow2_bias, rint_code_bf16_pow2

# (mb, emin, largest finite code, sign bit) per format, from codecs.md §5.1 and §7.1
FORMATS = {"e4m3fn": (3, -6, 0x7E, 7), "e5m2": (2, -14, 0x7B, 7), "e2m1": (1, 0, 7, 3), "e1m2": (2, 0, 7, 3)}
ALL = np.arange(1 << 16, dtype=np.uint16)


@njit(cache=True, error_model="numpy")
def _full_form(fmt, xs, ys, dd):
    for c in range(xs.size // 32):
        if fmt == 0:
            V.e4m3_pow2_full32(xs, 32 * c, ys, 32 * c, dd)
        elif fmt == 1:
            V.e5m2_pow2_full32(xs, 32 * c, ys, 32 * c, dd)
        elif fmt == 2:
            V.e2m1_pow2_full32(xs, 32 * c, ys, 16 * c, dd)
        else:
            V.e1m2_pow2_full32(xs, 32 * c, ys, 16 * c, dd)


@njit(cache=True, error_model="numpy")
def _scalar_form(xs, dd, mb, emin, max_code, sbit, out):
    for i in range(xs.size):
        out[i] = rint_code_bf16_pow2(xs[i], dd, mb, emin, max_code, sbit)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_full_form_equals_scalar_form_for_every_pattern_and_shift(fmt):
    mb, emin, max_code, sbit = FORMATS[fmt]
    fp4 = fmt.startswith("e2") or fmt.startswith("e1")
    xs = np.random.default_rng(0).permutation(ALL)      # every pattern, lanes mixed: no chunk is uniform
    ref = np.empty(xs.size, np.uint8)
    got = np.full(xs.size // 2 if fp4 else xs.size, 0xEE, np.uint8)
    for e in range(1, 252 + emin - mb + 1):
        dd = pow2_bias(e << 7, emin)
        _scalar_form(xs, dd, mb, emin, max_code, sbit, ref)
        _full_form(list(FORMATS).index(fmt), xs, got, dd)
        want = (ref[0::2] | (ref[1::2] << 4)) if fp4 else ref
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (e, hex(xs[bad[0] * (2 if fp4 else 1)]), hex(got[bad[0]]), hex(want[bad[0]]))


@njit(cache=True, error_model="numpy")
def _normal_form(fmt, xs, ys, dd, flags):
    """Codes of every chunk of xs, and per pattern h the flag of a chunk holding h in all 32 lanes."""
    rep = np.empty(32, np.uint16)
    junk = np.empty(32, np.uint8)
    for c in range(xs.size // 32):
        if fmt == 0:
            V.e4m3_pow2_normal32(xs, 32 * c, ys, 32 * c, dd)
        else:
            V.e5m2_pow2_normal32(xs, 32 * c, ys, 32 * c, dd)
    for i in range(xs.size):
        rep[:] = xs[i]
        flags[i] = V.e4m3_pow2_normal32(rep, 0, junk, 0, dd) if fmt == 0 else V.e5m2_pow2_normal32(rep, 0, junk, 0, dd)


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
def test_normal_form_equals_scalar_form_where_it_does_not_ask_for_the_redo(fmt):
    mb, emin, max_code, sbit = FORMATS[fmt]
    e_hi = 252 + emin - mb
    got = np.empty(ALL.size, np.uint8)
    ref = np.empty(ALL.size, np.uint8)
    flags = np.empty(ALL.size, np.bool_)
    a = (ALL & 0x7FFF).astype(np.int64)
    for e in range(1, e_hi + 1):
        dd = pow2_bias(e << 7, emin)
        _normal_form(list(FORMATS).index(fmt), ALL, got, dd, flags)
        _scalar_form(ALL, dd, mb, emin, max_code, sbit, ref)
        bad = np.flatnonzero(~flags & (got != ref))
        assert bad.size == 0, (e, hex(bad[0]), hex(got[bad[0]]), hex(ref[bad[0]]))
        # the flag, by hand: NaN/Inf inputs, and u = |h| + dd strictly between -mb * 128 (at most half the
        # smallest subnormal code: rounds to 0, which the clamp gives) and 128 (the smallest normal)
        u = a + int(dd)
        assert np.array_equal(flags, (a >= 0x7F80) | ((u > -(mb << 7)) & (u < 128))), e
    # at the largest shift the window lies inside the finite patterns: (mb + 1) * 128 - 1 per sign, plus NaN/Inf
    assert flags.sum() == 2 * 128 + 2 * ((mb + 1) * 128 - 1)


@njit(cache=True, error_model="numpy")
def _maxima(xs, mask, out):
    for c in range(xs.size // 32):
        out[c] = V.bf16_masked_max32(xs, 32 * c, mask)


@pytest.mark.parametrize("mask", [0x7F80, 0x7FFF])
def test_masked_max(mask):
    xs = np.random.default_rng(1).integers(0, 1 << 16, 32 * 4096, dtype=np.uint16)
    xs[:32] = 0xFFFF                                   # all-ones lanes, negative NaN included
    xs[32:64] = 0
    out = np.empty(4096, np.uint16)
    _maxima(xs, np.uint16(mask), out)
    assert np.array_equal(out, (xs & mask).reshape(-1, 32).max(axis=1))


def test_bounds_checked_when_numba_checks_bounds():
    """With numba's bounds check on (NUMBA_BOUNDSCHECK=1, or boundscheck=True) a chunk that would reach past either
    end of an array is an IndexError, as an array index is; without it the intrinsics read and write unchecked."""
    @njit(boundscheck=True)
    def first_and_last(xs, i, ys, j):
        V.e2m1_pow2_full32(xs, i, ys, j, np.int16(-1024))
        return V.bf16_masked_max32(xs, i, np.uint16(0x7FFF))

    xs = np.arange(64, dtype=np.uint16)
    ys = np.zeros(32, np.uint8)
    assert first_and_last(xs, 32, ys, 16) == 63
    for i, j in ((33, 0), (-1, 0), (0, 17), (0, -1)):
        with pytest.raises(IndexError):
            first_and_last(xs, i, ys, j)
