"""Independent numpy golden of DynamicQuant, written from the semantics (docs/ops/dynamic_quant.md §1).

Plain numpy on whole arrays: no kernel, no instruction, no npu_emu codec. bf16 bits widen by a 16-bit shift, half
through numpy.float16. The golden does not choose a tiling key: the caller names the key's formulas
(``scale_formula``: "max_times_inv" = max * fp32(1/c) on keys 100, 10, 2/3, "recip_q" = 1 / q on keys 0/1, 6, 7, 8;
``div_model``: how q = c / max is rounded). NaN rows: y = 0 and a NaN scale (payload not modelled); the chunk fold of
keys 6/8 (a NaN before the last chunk is dropped) is not modelled either.
"""

import numpy as np

F32 = np.float32


def widen(bits, x_dtype):
    """uint16 bits of bf16 / half -> float32."""
    bits = np.asarray(bits, np.uint16)
    if x_dtype == "bfloat16":
        return (bits.astype(np.uint32) << 16).view(np.float32)
    return bits.view(np.float16).astype(np.float32)


def _codes(v, lo, hi):
    v = np.where(np.isnan(v), F32(0), v)
    return np.rint(np.clip(v, F32(lo), F32(hi))).astype(np.int8)


def pack_int4(codes):
    """int8 codes in [-8, 7] [rows, n] -> bytes [rows, n // 2], element 2i in the low nibble."""
    c = codes.astype(np.uint8) & np.uint8(0xF)
    return (c[:, 0::2] | (c[:, 1::2] << np.uint8(4))).astype(np.uint8)


def smooth_rows(rows, smooth, group):
    """The smooth row of every x row: one row, or with group_index the first group g with group[g] >= r + 1."""
    if smooth.ndim == 1:
        return np.broadcast_to(smooth, (rows, smooth.shape[0]))
    g = np.searchsorted(np.asarray(group, np.int64), np.arange(1, rows + 1), side="left")
    return smooth[g]


def dynamic_quant(x, smooth=None, group=None, *, int4=False, asymmetric=False, scale_formula="recip_q",
                  div_model="ieee"):
    """x: float32 [rows, n] (already widened); smooth: float32 [n] or [groups, n]; group: cumulative row ends.

    Returns (y, scale, offset): y int8 codes [rows, n] (int4: codes in [-8, 7], pack with pack_int4), scale float32
    [rows], offset float32 [rows] or None.
    """
    x = np.asarray(x, np.float32)
    rows = x.shape[0]
    with np.errstate(all="ignore"):
        xs = x if smooth is None else (x * smooth_rows(rows, np.asarray(smooth, np.float32), group)).astype(F32)
    if int4:
        c, lo, hi, c_range, c_off = F32(7), -8, 7, F32(15), F32(7)
    else:
        c, lo, hi, c_range, c_off = F32(127), -128, 127, F32(255), F32(127)
    with np.errstate(all="ignore"):
        if asymmetric:
            mx = xs.max(axis=1)
            mn = xs.min(axis=1)
            r = ((mx - mn).astype(F32) / c_range).astype(F32)
            scale = np.where(r > F32(1e-12), r, F32(1e-12)).astype(F32)
            offset = (c_off - (mx / scale).astype(F32)).astype(F32)
            back = (F32(1) / scale).astype(F32)
            v = ((xs * back[:, None]).astype(F32) + offset[:, None]).astype(F32)
            return _codes(v, lo, hi), scale, offset
        amax = np.abs(xs).max(axis=1)
        if div_model == "reciprocal":
            q = (c * (F32(1) / amax).astype(F32)).astype(F32)
        else:
            q = (c / amax).astype(F32)
        if scale_formula == "max_times_inv":
            scale = (amax * (F32(1) / c)).astype(F32)
        else:
            scale = (F32(1) / q).astype(F32)
        v = (xs * q[:, None]).astype(F32)
        return _codes(v, lo, hi), scale, None


def key_formula(key):
    """The golden's scale_formula for a tiling key (docs/ops/dynamic_quant.md §3)."""
    return "max_times_inv" if key in (2, 3, 10, 100) else "recip_q"


def vendor_golden(x, smooth=None):
    """The ops-nn tests/assets/golden.py recipe, for comparison only: scale = max * fp32(1/127), y = round(x / scale)
    (ties to even, no clamp). A tolerance reference: +-1 in y at rounding boundaries, other scale bits on
    keys 0/1/6/7/8."""
    xs = x if smooth is None else (x * smooth).astype(F32)
    with np.errstate(all="ignore"):
        scale = (np.abs(xs).max(axis=1) * (F32(1) / F32(127))).astype(F32)
        y = np.round((xs / scale[:, None]).astype(F32)).astype(np.int8)
    return y, scale


# ---------------------------------------------------------------------------------------------------------------
# Ascend 950 (arch35), docs/ops/dynamic_quant.md §9.1
# ---------------------------------------------------------------------------------------------------------------

# y kind -> (C, R): scale = max * fp32(1 / C) (symmetric), (max - min) * fp32(1 / R) (asymmetric), offset C - max / s
_C_R_950 = {"int8": (127.0, 255.0), "int4": (7.0, 15.0), "float8_e5m2": (57344.0, 114688.0),
            "float8_e4m3fn": (448.0, 896.0)}


def _nanmax_first(a, axis):
    """max with NaN propagating (the kernel's model): NaN where any element is NaN."""
    with np.errstate(invalid="ignore"):
        m = np.max(np.where(np.isnan(a), F32(-np.inf), a), axis=axis)
        return np.where(np.isnan(a).any(axis=axis), F32(np.nan), m).astype(F32)


def _nanmin_first(a, axis):
    with np.errstate(invalid="ignore"):
        m = np.min(np.where(np.isnan(a), F32(np.inf), a), axis=axis)
        return np.where(np.isnan(a).any(axis=axis), F32(np.nan), m).astype(F32)


def dynamic_quant_950(x, smooth=None, group=None, *, y_kind="int8", asymmetric=False, quant_mode="pertoken",
                      dst_type_max=0.0, div_model="ieee", m_len=None):
    """x: float32 [rows, n] (widened); smooth: float32 [n] or [groups, n]. Returns (y, scale, offset): y int8 codes
    (int4: codes in [-8, 7], pack with pack_int4) or uint8 FP8 / HiF8 codes, scale / offset float32 [rows] ([1] for
    pertensor; [batch * n] for perchannel, where x is [batch * m_len, n] and smooth [m_len] scales rows; offset None
    when symmetric). FP8 through ml_dtypes (RNE) after the saturation clamp; HiF8 through
    npu_emu.dtypes.golden.encode_round (the codecs' own plain-numpy reference) after the same clamp."""
    import ml_dtypes

    x = np.asarray(x, np.float32)
    rows = x.shape[0]
    with np.errstate(all="ignore"):
        if quant_mode == "perchannel":
            n = x.shape[1]
            v3 = x.reshape(-1, m_len, n)
            if smooth is not None:
                v3 = (v3 * np.asarray(smooth, np.float32)[None, :, None]).astype(F32)
            v = v3.reshape(rows, n)
        else:
            v = x if smooth is None else (x * smooth_rows(rows, np.asarray(smooth, np.float32), group)).astype(F32)
        if y_kind == "hifloat8":
            d = F32(dst_type_max)
            d = F32(32768.0) if abs(float(d)) < 1e-6 else d
            c, r = d, F32(d * F32(2))
        else:
            c, r = (F32(t) for t in _C_R_950[y_kind])
        k = F32(F32(1) / c)
        k2 = F32(F32(1) / r)
        if quant_mode == "perchannel":       # reduce over the rows of each batch, per column
            vv = v.reshape(-1, m_len, v.shape[1]).transpose(0, 2, 1).reshape(-1, m_len)
        else:
            vv = v.reshape(1, -1) if quant_mode == "pertensor" else v
        if asymmetric:
            mx = _nanmax_first(vv, 1)
            mn = _nanmin_first(vv, 1)
            scale = ((mx - mn).astype(F32) * k2).astype(F32)
            q = (mx * (F32(1) / scale).astype(F32)).astype(F32) if div_model == "reciprocal" else \
                (mx / scale).astype(F32)
            offset = (c - q).astype(F32)
        else:
            scale = (_nanmax_first(np.abs(vv), 1) * k).astype(F32)
            offset = None
        def bcast(a):
            if quant_mode == "pertensor":
                return a[0]
            if quant_mode == "perchannel":
                n = v.shape[1]
                return np.repeat(a.reshape(-1, 1, n), m_len, axis=1).reshape(rows, n)
            return a[:, None]

        sb = bcast(scale)
        if div_model == "reciprocal":
            t = (v * (F32(1) / sb)).astype(F32)
        else:
            t = (v / sb).astype(F32)
        if asymmetric:
            t = (t + bcast(offset)).astype(F32)
        if y_kind in ("int8", "int4"):
            lo, hi = (-8, 7) if y_kind == "int4" else (-128, 127)
            return _codes(t, lo, hi), scale, offset
        t = np.where(np.isnan(t), F32(0), t)
        if y_kind == "hifloat8":
            from npu_emu.dtypes.golden import encode_round

            return encode_round(np.clip(t, -F32(32768), F32(32768))), scale, offset
        fmax = F32(448.0) if y_kind == "float8_e4m3fn" else F32(57344.0)
        y = np.clip(t, -fmax, fmax).astype(getattr(ml_dtypes, y_kind)).view(np.uint8)
        return y, scale, offset
