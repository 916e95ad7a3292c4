"""rint_code_bf16_pow2 (the MX kernels' 16-bit element cast) against the FP32 codecs it replaces: for every BF16
pattern and every power-of-two reciprocal pow2_shift_ok admits, the code of the FP32 product x * 2^(e - 127) through
encode_e4m3fn / encode_e5m2 (saturating, NaN -> 0) and encode_fp4_e2m1 / encode_fp4_e1m2 (CAST_RINT); and its
normal-only form rint_code_bf16_pow2_normal against it wherever that form does not ask for the redo."""

import numpy as np
import pytest
from numba import njit

from npu_emu.dtypes.scalar import (CAST_RINT, bf16_to_f32, encode_e4m3fn, encode_e5m2, encode_fp4_e1m2,
                                   encode_fp4_e2m1, pow2_bias, pow2_shift_ok, rint_code_bf16_pow2,
                                   rint_code_bf16_pow2_normal)

# (mb, emin, largest finite code, sign bit) per format, from codecs.md §5.1 and §7.1
FORMATS = {"e4m3fn": (3, -6, 0x7E, 7), "e5m2": (2, -14, 0x7B, 7), "e2m1": (1, 0, 7, 3), "e1m2": (2, 0, 7, 3)}


@njit(cache=True, error_model="numpy")
def _mismatches(fmt, mb, emin, max_code, sbit, e_lo, e_hi, out):
    """Count of (pattern, e) with a differing code; the first one in out."""
    bad = 0
    for e in range(e_lo, e_hi + 1):
        recip = np.uint32(e << 23).view(np.float32)
        dd = pow2_bias(e << 7, emin)
        for h in range(1 << 16):
            v = bf16_to_f32(h) * recip
            if fmt == 0:
                ref = encode_e4m3fn(v, True, False)
            elif fmt == 1:
                ref = encode_e5m2(v, True, False)
            elif fmt == 2:
                ref = encode_fp4_e2m1(v, CAST_RINT, False)
            else:
                ref = encode_fp4_e1m2(v, CAST_RINT, False)
            got = rint_code_bf16_pow2(np.uint16(h), dd, mb, emin, max_code, sbit)
            if got != ref:
                if bad == 0:
                    out[0], out[1], out[2], out[3] = e, h, ref, got
                bad += 1
    return bad


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_equals_fp32_codec_for_every_pattern_and_shift(fmt):
    mb, emin, max_code, sbit = FORMATS[fmt]
    e_hi = 252 + emin - mb
    assert pow2_shift_ok(e_hi << 7, mb, emin) and not pow2_shift_ok((e_hi + 1) << 7, mb, emin)
    out = np.zeros(4, np.int64)
    bad = _mismatches(list(FORMATS).index(fmt), mb, emin, max_code, sbit, 1, e_hi, out)
    assert bad == 0, f"{bad} mismatches; first: e {out[0]}, bf16 {out[1]:#06x}: codec {out[2]:#x}, 16-bit {out[3]:#x}"


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_bound_is_where_subnormal_inputs_stop_rounding_to_zero(fmt):
    """One step past pow2_shift_ok's bound the largest BF16 subnormal times the reciprocal reaches half the
    smallest subnormal code and rounds up, which the 16-bit form (it takes every subnormal input to zero) misses:
    the bound is tight, not a guess."""
    mb, emin, max_code, sbit = FORMATS[fmt]
    e = 253 + emin - mb
    out = np.zeros(4, np.int64)
    assert _mismatches(list(FORMATS).index(fmt), mb, emin, max_code, sbit, e, e, out) > 0


def test_shift_ok_rejects_what_is_not_a_power_of_two_reciprocal():
    assert not pow2_shift_ok(0x7F81, 3, -6)          # the NaN reciprocal of an Inf/NaN block
    assert not pow2_shift_ok(0x0000, 3, -6)          # the zero reciprocal of a zero block
    assert not pow2_shift_ok(0x0040, 3, -6)          # 2^-127 (code 254): a BF16 subnormal
    assert not pow2_shift_ok(0x3F81, 3, -6)          # not a power of two
    assert not pow2_shift_ok(0xBF80, 3, -6)          # negative
    assert pow2_shift_ok(0x3F80, 3, -6) and pow2_shift_ok(0x0080, 3, -6)


@njit(cache=True, error_model="numpy")
def _normal_form(mb, emin, max_code, sbit, e_lo, e_hi, out):
    """Over every (pattern, e): count of unflagged codes that differ from rint_code_bf16_pow2 (first one in out),
    and how many are flagged for the redo."""
    bad, redo = 0, 0
    for e in range(e_lo, e_hi + 1):
        dd = pow2_bias(e << 7, emin)
        for h in range(1 << 16):
            c, r = rint_code_bf16_pow2_normal(np.uint16(h), dd, mb, max_code, sbit)
            if r:
                redo += 1
            elif c != rint_code_bf16_pow2(np.uint16(h), dd, mb, emin, max_code, sbit):
                if bad == 0:
                    out[0], out[1], out[2] = e, h, c
                bad += 1
    return bad, redo


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_normal_form_equals_full_form_where_it_does_not_ask_for_the_redo(fmt):
    mb, emin, max_code, sbit = FORMATS[fmt]
    e_hi = 252 + emin - mb
    out = np.zeros(3, np.int64)
    bad, redo = _normal_form(mb, emin, max_code, sbit, 1, e_hi, out)
    assert bad == 0, f"{bad} mismatches; first: e {out[0]}, bf16 {out[1]:#06x}: code {out[2]:#x}"
    # the flagged set, counted by hand per e: the 2 * 128 NaN/Inf patterns (|h| >= 0x7F80, both signs), and per
    # sign the |h| whose u = |h| + dd lies strictly between -mb * 128 (half the smallest subnormal) and 128 (the
    # smallest normal): (mb + 1) * 128 - 1 of them, fewer where that window leaves [0, 0x7F80) (small e)
    n_e = e_hi
    per_e_max = 2 * 128 + 2 * ((mb + 1) * 128 - 1)
    assert 2 * 128 * n_e <= redo <= per_e_max * n_e, redo
    # at the largest e the window lies inside [0, 0x7F80): exactly per_e_max flagged
    dd = pow2_bias(e_hi << 7, emin)
    flags = [rint_code_bf16_pow2_normal(np.uint16(h), dd, mb, max_code, sbit)[1] for h in range(1 << 16)]
    assert sum(flags) == per_e_max
