"""The codecs' golden: a plain-numpy HiFloat8 reference, written from docs/codecs.md §4.1-§4.5 (the demo's check of
``npu_emu.dtypes.encode(x, "hifloat8")`` on an install without en_dtypes).

Never calls the codecs under test: the 256 values come from the field layout of §4.1/§4.3 in Python integers, and
the ROUND encode is §4.5's codebook reading (the nearest of 0, the 126 positive finite values and 49152, the Inf
slot; ties to the larger magnitude), decided on exact float64 midpoints.
"""

import numpy as np

NAN_CODE = 0x80
INF_CODE = 0x6F
INF_SLOT = 49152.0          # 1.5 * 2^15: the value the Inf code's bits would have


def _value(p):
    """Value of the positive code p (0..0x7F) from the field layout (docs/codecs.md §4.3); None for the Inf slot."""
    if p == 0:
        return 0.0
    if p == INF_CODE:
        return None
    for shift, d, mb in ((5, 4, 1), (5, 3, 2), (5, 2, 3), (4, 1, 3), (3, 0, 3)):
        prefix = {4: 3, 3: 2, 2: 1, 1: 1, 0: 1}[d]
        if p >> shift == prefix:
            break
    else:                                        # 0000: denormal, 2^(M - 23)
        return 2.0 ** ((p & 7) - 23)
    m = p & ((1 << mb) - 1)
    if d == 0:
        e = 0
    else:
        f = (p >> mb) & ((1 << d) - 1)
        e = (1 << (d - 1)) | (f & ((1 << (d - 1)) - 1))
        if f >> (d - 1):
            e = -e
    return 2.0 ** e * (1 + m / (1 << mb))


def decode_table():
    """float64 values of the 256 codes (NaN for 0x80, +-Inf for 0x6F / 0xEF)."""
    out = np.empty(256)
    for c in range(256):
        v = _value(c & 0x7F)
        out[c] = np.inf if v is None else v
        if c & 0x80:
            out[c] = -out[c]
    out[NAN_CODE] = np.nan
    return out


def _grid():
    pos = [(v, c) for c in range(128) if (v := _value(c)) is not None]
    pos.append((INF_SLOT, INF_CODE))
    pos.sort()
    vals = np.array([v for v, _ in pos])
    codes = np.array([c for _, c in pos], np.uint8)
    assert np.all(np.diff(vals) > 0) and vals.size == 128        # 0, 126 finite values, the Inf slot
    return vals, codes


def encode_round(x):
    """HiF8 codes (uint8) of float32/float16/float64 values ``x`` with CAST_ROUND (ties away), non-saturating:
    NaN -> 0x80, +-Inf and abs(x) >= 40960 -> 0x6F / 0xEF, a zero result -> 0x00 whatever the sign."""
    with np.errstate(invalid="ignore"):                   # signalling NaN payloads
        v = np.asarray(x).astype(np.float64)              # exact for float16 / float32 inputs
    vals, codes = _grid()
    a = np.abs(v)
    finite = np.isfinite(v)
    i = np.clip(np.searchsorted(vals, np.where(finite, a, 0.0), side="right"), 1, vals.size - 1)
    lo, hi = vals[i - 1], vals[i]
    mid = (lo + hi) / 2                                    # exact: grid values are short dyadic numbers
    pick = np.where(a >= mid, i, i - 1)
    pick = np.where(a >= vals[-1], vals.size - 1, pick)    # at or above the Inf slot
    mag = codes[pick]
    mag = np.where(np.isinf(v), INF_CODE, mag)
    sign = np.where(np.signbit(v) & (mag != 0), 0x80, 0).astype(np.uint8)
    out = (mag | sign).astype(np.uint8)
    return np.where(np.isnan(v), np.uint8(NAN_CODE), out).astype(np.uint8)
