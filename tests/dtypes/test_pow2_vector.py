"""The vector forms of npu_emu.dtypes.vector against rint_code_bf16_pow2 (itself proven equal to the FP32 codecs in
test_pow2_codes.py): every BF16 pattern, every shift pow2_shift_ok admits, every format, with one shift per call and
with one shift per lane; the normal-only forms' redo flag per pattern (each pattern alone in all 32 lanes) against
the set it must cover; the block maximum; the bounds check."""

import numpy as np
import pytest
from numba import njit

from npu_emu.dtypes import vector as V
from npu_emu.dtypes.scalar import pow2_bias, rint_code_bf16_pow2

# (mb, emin, largest finite code, sign bit) per format, from docs/codecs.md §5.1 and §7.1
FORMATS = {"e4m3fn": (3, -6, 0x7E, 7), "e5m2": (2, -14, 0x7B, 7), "e2m1": (1, 0, 7, 3), "e1m2": (2, 0, 7, 3)}
FP4 = ("e2m1", "e1m2")
ALL = np.arange(1 << 16, dtype=np.uint16)


def _shifts(fmt):
    """pow2_bias of every reciprocal 2^(e - 127) pow2_shift_ok admits for fmt (e = 1 .. 252 + emin - mb)."""
    mb, emin, _, _ = FORMATS[fmt]
    return [pow2_bias(e << 7, emin) for e in range(1, 252 + emin - mb + 1)]


@njit(cache=True, error_model="numpy")
def _full_forms(fmt, xs, dds, ys, ys_one):
    """Full forms over every chunk: per lane (shift dds[i]) into ys; FP4 also with one shift, dds[0], into ys_one.
    The shifts are read from a copy 3 elements in, so that a form reading them at its x or y offset fails."""
    dd3 = np.empty(dds.size + 3, np.int16)
    dd3[3:] = dds
    for c in range(xs.size // 32):
        i = 32 * c
        if fmt == 0:
            V.e4m3_pow2_full_cols32(xs, i, ys, i, dd3, i + 3)
        elif fmt == 1:
            V.e5m2_pow2_full_cols32(xs, i, ys, i, dd3, i + 3)
        elif fmt == 2:
            V.e2m1_pow2_full_cols32(xs, i, ys, i // 2, dd3, i + 3)
            V.e2m1_pow2_full32(xs, i, ys_one, i // 2, dds[0])
        else:
            V.e1m2_pow2_full_cols32(xs, i, ys, i // 2, dd3, i + 3)
            V.e1m2_pow2_full32(xs, i, ys_one, i // 2, dds[0])


@njit(cache=True, error_model="numpy")
def _scalar_form(xs, dds, mb, emin, max_code, sbit, out):
    for i in range(xs.size):
        out[i] = rint_code_bf16_pow2(xs[i], dds[i], mb, emin, max_code, sbit)


def _packed(codes, fmt):
    return (codes[0::2] | (codes[1::2] << 4)) if fmt in FP4 else codes


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_full_forms_equal_scalar_form_for_every_pattern_and_shift(fmt):
    mb, emin, max_code, sbit = FORMATS[fmt]
    xs = np.random.default_rng(0).permutation(ALL)      # every pattern, lanes mixed: no chunk is uniform
    ref = np.empty(xs.size, np.uint8)
    got = np.full(xs.size // 2 if fmt in FP4 else xs.size, 0xEE, np.uint8)
    got_one = got.copy()
    for dd in _shifts(fmt):
        dds = np.full(xs.size, dd, np.int16)
        _scalar_form(xs, dds, mb, emin, max_code, sbit, ref)
        _full_forms(list(FORMATS).index(fmt), xs, dds, got, got_one)
        want = _packed(ref, fmt)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (dd, hex(xs[bad[0] * (2 if fmt in FP4 else 1)]), hex(got[bad[0]]), hex(want[bad[0]]))
        if fmt in FP4:
            assert np.array_equal(got_one, want), dd


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_full_forms_with_a_shift_per_lane(fmt):
    """Each lane its own shift: every pattern meets 16 shifts drawn from the admitted range, lanes of one chunk
    differing (a row of column blocks)."""
    mb, emin, max_code, sbit = FORMATS[fmt]
    rng = np.random.default_rng(1)
    shifts = np.array(_shifts(fmt), np.int16)
    xs = np.tile(ALL, 16)
    dds = rng.choice(shifts, xs.size)
    ref = np.empty(xs.size, np.uint8)
    got = np.full(xs.size // 2 if fmt in FP4 else xs.size, 0xEE, np.uint8)
    _scalar_form(xs, dds, mb, emin, max_code, sbit, ref)
    _full_forms(list(FORMATS).index(fmt), xs, dds, got, np.empty_like(got))
    assert np.array_equal(got, _packed(ref, fmt))


@njit(cache=True, error_model="numpy")
def _normal_forms(fmt, xs, dds, ys, ys_cols, flags, flags_cols):
    """Codes of every chunk of xs with one shift (dds[0]) and per lane (dds); per pattern h the flag of a chunk
    holding h in all 32 lanes, both forms."""
    rep = np.empty(32, np.uint16)
    junk = np.empty(32, np.uint8)
    for c in range(xs.size // 32):
        i = 32 * c
        if fmt == 0:
            V.e4m3_pow2_normal32(xs, i, ys, i, dds[0])
            V.e4m3_pow2_normal_cols32(xs, i, ys_cols, i, dds, i)
        else:
            V.e5m2_pow2_normal32(xs, i, ys, i, dds[0])
            V.e5m2_pow2_normal_cols32(xs, i, ys_cols, i, dds, i)
    for i in range(xs.size):
        rep[:] = xs[i]
        if fmt == 0:
            flags[i] = V.e4m3_pow2_normal32(rep, 0, junk, 0, dds[0])
            flags_cols[i] = V.e4m3_pow2_normal_cols32(rep, 0, junk, 0, dds, 0)
        else:
            flags[i] = V.e5m2_pow2_normal32(rep, 0, junk, 0, dds[0])
            flags_cols[i] = V.e5m2_pow2_normal_cols32(rep, 0, junk, 0, dds, 0)


@pytest.mark.parametrize("fmt", ["e4m3fn", "e5m2"])
def test_normal_forms_equal_scalar_form_where_they_do_not_ask_for_the_redo(fmt):
    mb, emin, max_code, sbit = FORMATS[fmt]
    got, got_cols, ref = (np.empty(ALL.size, np.uint8) for _ in range(3))
    flags, flags_cols = np.empty(ALL.size, np.bool_), np.empty(ALL.size, np.bool_)
    a = (ALL & 0x7FFF).astype(np.int64)
    for dd in _shifts(fmt):
        dds = np.full(ALL.size, dd, np.int16)
        _normal_forms(list(FORMATS).index(fmt), ALL, dds, got, got_cols, flags, flags_cols)
        _scalar_form(ALL, dds, mb, emin, max_code, sbit, ref)
        assert np.array_equal(got, got_cols) and np.array_equal(flags, flags_cols), dd
        bad = np.flatnonzero(~flags & (got != ref))
        assert bad.size == 0, (dd, hex(bad[0]), hex(got[bad[0]]), hex(ref[bad[0]]))
        # the flag, by hand: NaN/Inf inputs, and u = |h| + dd strictly between -mb * 128 (at most half the
        # smallest subnormal code: rounds to 0, which the clamp gives) and 128 (the smallest normal)
        u = a + int(dd)
        assert np.array_equal(flags, (a >= 0x7F80) | ((u > -(mb << 7)) & (u < 128))), dd
    # at the largest shift the window lies inside the finite patterns: (mb + 1) * 128 - 1 per sign, plus NaN/Inf
    assert flags.sum() == 2 * 128 + 2 * ((mb + 1) * 128 - 1)


@njit(cache=True, error_model="numpy")
def _dual_and_single(fmt, xs, dd, dds, y1, y2, f1, r1, r2, g1):
    """Every chunk of xs through the dual form (y1 with the one shift dd, y2 with dds per lane; its flags in f1) and
    through the single forms it stands for (r1 / g1: one shift, normal-only for FP8; r2: per lane, full)."""
    for c in range(xs.size // 32):
        i = 32 * c
        j = i // 2 if fmt >= 2 else i
        if fmt == 0:
            f1[c] = V.e4m3_pow2_dual32(xs, i, y1, y2, j, dd, dds, i)
            g1[c] = V.e4m3_pow2_normal32(xs, i, r1, j, dd)
            V.e4m3_pow2_full_cols32(xs, i, r2, j, dds, i)
        elif fmt == 1:
            f1[c] = V.e5m2_pow2_dual32(xs, i, y1, y2, j, dd, dds, i)
            g1[c] = V.e5m2_pow2_normal32(xs, i, r1, j, dd)
            V.e5m2_pow2_full_cols32(xs, i, r2, j, dds, i)
        elif fmt == 2:
            f1[c] = V.e2m1_pow2_dual32(xs, i, y1, y2, j, dd, dds, i)
            V.e2m1_pow2_full32(xs, i, r1, j, dd)
            V.e2m1_pow2_full_cols32(xs, i, r2, j, dds, i)
        else:
            f1[c] = V.e1m2_pow2_dual32(xs, i, y1, y2, j, dd, dds, i)
            V.e1m2_pow2_full32(xs, i, r1, j, dd)
            V.e1m2_pow2_full_cols32(xs, i, r2, j, dds, i)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_dual_form_equals_the_two_single_forms(fmt):
    """The dual-axis form (one load, two casts) gives, for every BF16 pattern and every admitted shift of y1 (y2: a
    shift per lane drawn from the admitted range), the bytes and the redo flag of the single forms proven above:
    y1 = the one-shift form (FP8 normal-only, FP4 full), y2 = the full form with a shift per lane; FP4 never flags."""
    rng = np.random.default_rng(3)
    shifts = np.array(_shifts(fmt), np.int16)
    xs = rng.permutation(ALL)
    nb = xs.size // 2 if fmt in FP4 else xs.size
    y1, y2, r1, r2 = (np.full(nb, 0xEE, np.uint8) for _ in range(4))
    f1, g1 = np.empty(xs.size // 32, np.bool_), np.zeros(xs.size // 32, np.bool_)
    for dd in shifts:
        dds = rng.choice(shifts, xs.size).astype(np.int16)
        _dual_and_single(list(FORMATS).index(fmt), xs, dd, dds, y1, y2, f1, r1, r2, g1)
        assert np.array_equal(y1, r1) and np.array_equal(y2, r2) and np.array_equal(f1, g1), dd


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


@njit(cache=True, error_model="numpy")
def _maxima_acc(xs, rows, mask, out, acc):
    """A block of ``rows`` rows of acc.size columns, row by row: every chunk's maximum and the column maxima."""
    w = acc.size
    for r in range(rows):
        for c in range(w // 32):
            out[r * (w // 32) + c] = V.bf16_masked_max32_acc(xs, r * w + 32 * c, acc, 32 * c, mask)


@pytest.mark.parametrize("mask", [0x7F80, 0x7FFF])
def test_masked_max_acc(mask):
    """The chunk maxima as bf16_masked_max32's, and the running lane maxima as numpy's column maxima (the start
    values of acc count: a column whose start value exceeds every element keeps it)."""
    rows, w = 37, 32 * 24
    xs = np.random.default_rng(2).integers(0, 1 << 16, rows * w, dtype=np.uint16)
    xs[:32] = 0xFFFF                                   # all-ones lanes, negative NaN included
    xs[w:w + 32] = 0
    acc0 = np.zeros(w, np.uint16)
    acc0[5] = 0xFFFF
    acc = acc0.copy()
    out = np.empty(rows * w // 32, np.uint16)
    _maxima_acc(xs, rows, np.uint16(mask), out, acc)
    m = xs.reshape(rows, w) & mask
    assert np.array_equal(out, m.reshape(-1, 32).max(axis=1))
    assert np.array_equal(acc, np.maximum(m.max(axis=0), acc0))


def test_bounds_checked_when_numba_checks_bounds():
    """With numba's bounds check on (NUMBA_BOUNDSCHECK=1, or boundscheck=True) a chunk that would reach past either
    end of an array is an IndexError, as an array index is; without it the intrinsics read and write unchecked."""
    @njit(boundscheck=True)
    def chunk(xs, i, ys, j, dds, k):
        V.e2m1_pow2_full32(xs, i, ys, j, np.int16(-1024))
        V.e4m3_pow2_full_cols32(xs, i, ys, j, dds, k)
        V.bf16_masked_max32_acc(xs, i, xs, i, np.uint16(0x7FFF))
        V.e4m3_pow2_dual32(xs, i, ys, ys, j, np.int16(-1024), dds, k)
        return V.bf16_masked_max32(xs, i, np.uint16(0x7FFF))

    xs = np.arange(64, dtype=np.uint16)
    ys = np.zeros(48, np.uint8)
    dds = np.zeros(40, np.int16)
    assert chunk(xs, 32, ys, 16, dds, 8) == 63
    for i, j, k in ((33, 0, 0), (-1, 0, 0), (0, 17, 0), (0, -1, 0), (0, 0, 9), (0, 0, -1)):
        with pytest.raises(IndexError):
            chunk(xs, i, ys, j, dds, k)


def test_shift_argument_checked_at_compile_time():
    from numba.core.errors import TypingError

    @njit
    def wrong(xs, ys, dds):
        V.e4m3_pow2_normal32(xs, 0, ys, 0, dds)          # an array where one shift belongs

    with pytest.raises(TypingError, match="one integer shift"):
        wrong(np.zeros(32, np.uint16), np.zeros(32, np.uint8), np.zeros(32, np.int16))
