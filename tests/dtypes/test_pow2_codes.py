"""rint_code_bf16_pow2 (the MX kernels' 16-bit element cast) against the FP32 codecs it replaces: for every BF16
pattern and every power-of-two reciprocal pow2_shift_ok admits, the code of the FP32 product x * 2^(e - 127) through
encode_e4m3fn / encode_e5m2 (saturating, NaN -> 0) and encode_fp4_e2m1 / encode_fp4_e1m2 (CAST_RINT). Its vector
forms (npu_emu.dtypes.vector) are checked against it in test_pow2_vector.py."""

import numpy as np
import pytest
from numba import njit

from npu_emu.dtypes.scalar import (CAST_RINT, bf16_to_f32, encode_e4m3fn, encode_e5m2, encode_fp4_e1m2,
                                   encode_fp4_e2m1, pow2_bias, pow2_shift_ok, rint_code_bf16_pow2)

# (mb, emin, largest finite code, sign bit) per format, from docs/codecs.md §5.1 and §7.1
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
