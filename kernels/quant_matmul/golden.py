"""Independent numpy golden of the quantised matmul family (QuantBatchMatmulV3 modes), written from
docs/ops/quant_matmul.md §3.3 and §7 - never from the kernels, the instruction layer or the njit codecs.

Deliberately simple: integer products in int64 numpy; epilogues step by step in numpy float32 (each numpy
float32 operation is one IEEE rounding); fp16 through numpy ``astype`` (RNE), bf16 through ml_dtypes (RNE); the
float cube "exact" model through Python ``fractions.Fraction`` (so keep shapes small); HiF8 values from en_dtypes,
E4M3/E5M2/FP4 from ml_dtypes, E8M0 as 2**(c - 127).

Inputs are logical (unpacked) arrays: x1 (..., m, k), x2 (..., k, n) as the matmul sees them (transposes already
applied), scales in their logical orientation (see :func:`quant_matmul`).

Requant (int8 out) adds the int9 offset of bits 37..45 of the UINT64 word whenever the scale is a word (the Fixpipe
reads the whole word); the vendor golden (qbmmv3_kernel_golden.py ``compute_requant``) adds it only when an offset
tensor is also passed - the same result whenever the word was packed from that offset, as torch_npu does.
"""

import math
from fractions import Fraction

import ml_dtypes
import numpy as np

try:  # test-only dependency
    import en_dtypes
except ImportError:  # pragma: no cover
    en_dtypes = None

INT_IN = ("int8", "int4")
FP_IN = ("float8_e4m3fn", "float8_e5m2", "hifloat8")


# --------------------------------------------------------------------------------------------------------------
# the packed UINT64 scale (docs/ops/quant_matmul.md §3.3)
# --------------------------------------------------------------------------------------------------------------

def trans_quant_param(scale, offset=None, round_mode=0):
    """float32 scale (and offset) -> uint64 words: FP19 scale | int9 offset << 37 | 1 << 46."""
    s = np.asarray(scale, np.float32).reshape(-1)
    n = s.size if offset is None else max(s.size, np.asarray(offset).size)
    u = np.broadcast_to(s, (n,)).view(np.uint32).astype(np.uint64)
    if round_mode == 0:
        mant = u & np.uint64(0xFFFFE000)
    else:
        words = []
        for v in u.tolist():
            e = (v >> 23) & 0xFF
            if e == 0:
                words.append(v & 0x80000000)
            elif e == 0xFF:
                words.append(v & 0xFFFFE000)
            else:
                low = v & 0x1FFF
                keep = v >> 13
                if low > 0x1000 or (low == 0x1000 and keep & 1):
                    keep += 1                                 # a mantissa carry walks into the exponent
                words.append((keep << 13) & 0xFFFFFFFF)
        mant = np.array(words, np.uint64)
    word = mant | np.uint64(1 << 46)
    if offset is not None:
        o = np.broadcast_to(np.asarray(offset, np.float32).reshape(-1), (n,))
        o = np.clip(np.rint(o.astype(np.float64)), -256, 255).astype(np.int64)
        word = word | ((o & 0x1FF).astype(np.uint64) << np.uint64(37))
    return word


def deq_scale(words):
    return (np.asarray(words).view(np.uint64) & np.uint64(0xFFFFE000)).astype(np.uint32).view(np.float32)


def deq_offset(words):
    raw = ((np.asarray(words).view(np.uint64) >> np.uint64(37)) & np.uint64(0x1FF)).astype(np.int64)
    return np.where(raw >= 256, raw - 512, raw)


def t19(x):
    return (np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


# --------------------------------------------------------------------------------------------------------------
# value decoding
# --------------------------------------------------------------------------------------------------------------

def values(x, dtype):
    """Exact float64 values of a logical operand given as its numpy/ml_dtypes array (uint8 codes for hifloat8)."""
    if dtype in INT_IN:
        return np.asarray(x).astype(np.int64)
    if dtype == "hifloat8":
        return np.asarray(x, np.uint8).view(en_dtypes.hifloat8).astype(np.float64)
    if dtype == "float4_e2m1":
        return np.asarray(x).astype(np.float64)
    return np.asarray(x).astype(np.float64)


def e8m0(codes, zero_is_zero=False):
    c = np.asarray(codes, np.uint8).astype(np.int64)
    v = np.exp2((c - 127).astype(np.float64))
    v = np.where(c == 255, np.nan, v)
    if zero_is_zero:
        v = np.where(c == 0, 0.0, v)
    return v


# --------------------------------------------------------------------------------------------------------------
# rounding helpers (simple, numpy only)
# --------------------------------------------------------------------------------------------------------------

def round_f32(fr):
    """Fraction -> the nearest float32, ties to even (0 -> +0; past the largest float32 by half an ulp -> Inf).

    float(fr) is the correctly rounded float64; rounding that to float32 can only go wrong when it lands exactly
    on a float32 midpoint while fr does not (double rounding), which the side of fr decides.
    """
    big = Fraction(2) ** 128
    if abs(fr) >= big:
        return np.float32(math.copysign(math.inf, fr))
    f64 = float(fr)
    with np.errstate(over="ignore"):
        r = np.float32(f64)
    if Fraction(f64) != fr:
        mag = abs(f64)
        with np.errstate(over="ignore"):
            lo = np.float32(mag)
        lo_v = Fraction(float(lo)) if np.isfinite(lo) else big
        if lo_v > Fraction(mag):
            lo = np.nextafter(lo, np.float32(0))
            lo_v = Fraction(float(lo))
        hi_f = np.nextafter(lo, np.float32(np.inf))
        hi_v = Fraction(float(hi_f)) if np.isfinite(hi_f) else big
        if lo_v + hi_v == 2 * Fraction(mag):                  # f64 sits on a float32 midpoint
            pick = hi_f if abs(fr) > Fraction(mag) else lo
            r = np.float32(math.copysign(float(pick), f64)) if np.isfinite(pick) else \
                np.float32(math.copysign(math.inf, f64))
    return np.float32(r)


def _frac(v):
    return Fraction(float(v))


def to_fp16(v, fixpipe_round="rne", cast_overflow="inf"):
    v = np.asarray(v, np.float32)
    with np.errstate(over="ignore"):
        h = v.astype(np.float16)
    if fixpipe_round == "half_away":
        v64 = v.astype(np.float64)
        lo = np.where(h.astype(np.float64) <= v64, h, np.nextafter(h, np.float16(-np.inf)))
        hi = np.nextafter(lo, np.float16(np.inf))
        tie = (v64 - lo.astype(np.float64)) == (hi.astype(np.float64) - v64)
        away = np.where(v64 >= 0, hi, lo)
        h = np.where(tie & np.isfinite(v64), away, h)
    if cast_overflow == "saturate":
        h = np.where(np.isinf(h) & np.isfinite(v), np.copysign(np.float16(65504), v).astype(np.float16), h)
        h = np.where(np.isinf(v), np.copysign(np.float16(65504), v).astype(np.float16), h)
        h = np.where(np.isnan(v), np.float16(0), h)
    return h.astype(np.float16)


def to_bf16(v, fixpipe_round="rne", cast_overflow="inf"):
    v = np.asarray(v, np.float32)
    b = v.astype(ml_dtypes.bfloat16)
    if fixpipe_round == "half_away":
        u = v.view(np.uint32)
        tie = ((u & np.uint32(0xFFFF)) == 0x8000) & np.isfinite(v)
        away = ((u + np.uint32(0x8000)) >> np.uint32(16)).astype(np.uint16).view(ml_dtypes.bfloat16)
        b = np.where(tie, away, b)
    if cast_overflow == "saturate":
        mx = np.float32(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
        b = np.where((np.isinf(b.astype(np.float32))) & ~np.isnan(v),
                     np.copysign(mx, v).astype(ml_dtypes.bfloat16), b)
        b = np.where(np.isnan(v), np.float32(0).astype(ml_dtypes.bfloat16), b)
    return np.asarray(b, dtype=ml_dtypes.bfloat16)


def to_int9(v, fixpipe_round="rne"):
    v = np.asarray(v, np.float64)
    r = np.sign(v) * np.floor(np.abs(v) + 0.5) if fixpipe_round == "half_away" else np.rint(v)
    return np.clip(r, -256, 255).astype(np.int64)


def cast_out(v, out, fixpipe_round="rne", cast_overflow="inf"):
    if out == "float16":
        return to_fp16(v, fixpipe_round, cast_overflow)
    if out == "bfloat16":
        return to_bf16(v, fixpipe_round, cast_overflow)
    return np.asarray(v, np.float32)


# --------------------------------------------------------------------------------------------------------------
# the float cube models (docs/ops/quant_matmul.md §1 float_accum)
# --------------------------------------------------------------------------------------------------------------

def _as_ints(x):
    """Exact values -> (integer array N, exponent e) with x = N * 2^e; e is the lowest set bit over all entries."""
    x = np.asarray(x, np.float64)
    nz = x[(x != 0) & np.isfinite(x)]
    if nz.size == 0:
        return np.zeros(x.shape, np.int64), 0
    e = min(int(math.frexp(v)[1]) - 53 + ((int(math.frexp(v)[0] * 2 ** 53) & -int(math.frexp(v)[0] * 2 ** 53))
                                          .bit_length() - 1) for v in np.unique(np.abs(nz)).tolist())
    ints = [int(Fraction(float(v)) * Fraction(2) ** -e) for v in x.ravel().tolist()]
    if max(abs(i) for i in ints) < 2 ** 62:
        return np.array(ints, np.int64).reshape(x.shape), e
    return np.array(ints, dtype=object).reshape(x.shape), e


def exact_dots(a, b):
    """Exact a @ b as Fractions (object array), via integer arithmetic (int64 when it cannot overflow)."""
    ia, ea = _as_ints(a)
    ib, eb = _as_ints(b)
    k = ia.shape[1]
    if ia.dtype == np.int64 and ib.dtype == np.int64 and \
            int(np.abs(ia).max(initial=0)) * int(np.abs(ib).max(initial=0)) * max(k, 1) < 2 ** 62:
        s = (ia @ ib).astype(object)
    else:
        s = np.dot(ia.astype(object), ib.astype(object))
    scale = Fraction(2) ** (ea + eb)
    return np.vectorize(lambda v: Fraction(int(v)) * scale, otypes=[object])(s)


def float_cube(a, b, float_accum="exact", base_k=128, bias=None):
    """fp32 L0C of a float64-exact (m, k) @ (k, n), bias (n,) as the start value, per ``float_accum``."""
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n), np.float32)
    if float_accum == "numpy":
        y = np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float32)
        return y if bias is None else (y + np.asarray(bias, np.float32)).astype(np.float32)
    if float_accum == "exact":
        s = exact_dots(a, b)
        for i in range(m):
            for j in range(n):
                out[i, j] = round_f32(s[i, j] + (0 if bias is None else _frac(bias[j])))
        return out
    if float_accum == "kchunk":
        acc = None if bias is None else np.broadcast_to(np.asarray(bias, np.float32), (m, n)).copy()
        for k0 in range(0, k, base_k):
            s = exact_dots(a[:, k0:k0 + base_k], b[k0:k0 + base_k])
            c = np.array([[round_f32(s[i, j]) for j in range(n)] for i in range(m)], np.float32).reshape(m, n)
            acc = c if acc is None else (acc + c).astype(np.float32)
        return np.zeros((m, n), np.float32) if acc is None else acc
    for i in range(m):                                                    # sequential
        for j in range(n):
            a32, b32 = a[i].astype(np.float32), b[:, j].astype(np.float32)
            if bias is None:
                acc = np.float32(a32[0] * b32[0])
                start = 1
            else:
                acc, start = np.float32(bias[j]), 0
            for t in range(start, k):
                acc = np.float32(acc + np.float32(a32[t] * b32[t]))
            out[i, j] = acc
    return out


# --------------------------------------------------------------------------------------------------------------
# QuantBatchMatmulV3 (docs/ops/quant_matmul.md §7.0 - §7.5)
# --------------------------------------------------------------------------------------------------------------

def quant_matmul(x1, x2, x2_scale, *, x1_dtype, x2_dtype, scale_dtype, out_dtype, x1_scale=None,
                 x1_scale_dtype="float32", bias=None, bias_dtype=None, group_size=(1, 1, 1), float_accum="exact",
                 base_k=128, fixpipe_round="rne", cast_overflow="inf", e8m0_zero="pow2"):
    """One 2-D QuantBatchMatmulV3 call.

    x1 (m, k), x2 (k, n) logical. Scales: U64 words (n,)/(1,); float (n,)/(1,); MX E8M0 codes as x1 (m, G) and
    x2 (G, n) with G = ceil(k/32) groups (already unpaired); B-B float32 x1 (M1, Gk) and x2 (Gk, N1) with
    group_size = (gsM, gsN, 128). x1_scale (m,) or (1,). bias (n,).
    """
    a = values(x1, x1_dtype)
    b = values(x2, x2_dtype)
    m, k = a.shape
    n = b.shape[1]
    bias_f = None if bias is None else np.asarray(bias).astype(np.float32)

    if scale_dtype == "float8_e8m0":                                          # MX (§7.5)
        s1 = e8m0(x1_scale, e8m0_zero == "zero")
        s2 = e8m0(x2_scale, e8m0_zero == "zero")
        a_s = a * np.repeat(s1, 32, axis=1)[:, :k]
        b_s = b * np.repeat(s2, 32, axis=0)[:k, :]
        acc = float_cube(a_s, b_s, float_accum, base_k)
        y = acc if bias_f is None else (acc + bias_f).astype(np.float32)
        return cast_out(y, out_dtype, fixpipe_round, cast_overflow)

    if x1_scale is not None and np.asarray(x1_scale).ndim > 1:                # B-B / G-B (§7.4, 950 order)
        gs_m, gs_n, gs_k = group_size
        s1 = np.asarray(x1_scale, np.float32)
        s2 = np.asarray(x2_scale, np.float32)
        acc = None
        for j in range(-(-k // gs_k)):
            k0, k1 = j * gs_k, min(k, (j + 1) * gs_k)
            part = float_cube(a[:, k0:k1], b[k0:k1], float_accum, base_k)
            s = (np.repeat(s1[:, j], gs_m)[:m, None] * np.repeat(s2[j], gs_n)[None, :n]).astype(np.float32)
            p = (part * s).astype(np.float32)
            acc = p if acc is None else (p + acc).astype(np.float32)
        return cast_out(acc, out_dtype, fixpipe_round, cast_overflow)

    fp = x1_dtype in FP_IN
    u64 = scale_dtype in ("uint64", "int64")
    if u64:
        s2 = deq_scale(x2_scale)
    else:
        s2 = np.asarray(x2_scale).astype(np.float32)
    p1 = None if x1_scale is None else np.asarray(x1_scale).astype(np.float32)

    # mode (§7.0)
    if p1 is None:
        mode = "T"
    elif fp and p1.size == 1 and p1.shape[-1] == 1:
        mode = "double-C" if s2.size == n and n > 1 else "double-T"
    elif p1.shape[-1] == m:
        mode = "K"
    else:
        mode = "T"
    bias_after = bias_dtype in ("float32", "bfloat16", "float16") and (not fp or p1 is not None)

    # the cube
    if fp:
        l0c_bias = bias_f if (bias_f is not None and not bias_after) else None
        acc = float_cube(a, b, float_accum, base_k, l0c_bias)
    else:
        acc64 = a @ b
        if bias is not None and bias_dtype == "int32":
            acc64 = acc64 + np.asarray(bias, np.int64)
        acc = ((acc64 + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32)        # the int32 accumulator

    if out_dtype == "int32":
        return acc.astype(np.int32)
    v = acc.astype(np.float32)
    if out_dtype == "int8":                                                   # requant (§7.1)
        off = deq_offset(x2_scale) if u64 else np.zeros(1, np.int64)
        q = to_int9((v * s2.reshape(1, -1)).astype(np.float32), fixpipe_round) + off.reshape(1, -1)
        return np.clip(q, -128, 127).astype(np.int8)
    if mode == "double-T" and not bias_after:                                 # cube doublescale (§7.3)
        merged = t19((s2.reshape(-1)[:1] * p1.reshape(-1)[:1]).astype(np.float32))
        v = (v * merged[0]).astype(np.float32)
    else:
        trunc = (not fp and not u64 and s2.shape[0] == 1 and bias_dtype not in ("bfloat16", "float32")
                 and mode == "T")
        v = (v * (t19(s2) if trunc else s2).reshape(1, -1)).astype(np.float32)
        if mode in ("K", "double-T", "double-C"):
            v = (v * p1.reshape(-1, 1)).astype(np.float32)
    if bias_after and bias_f is not None:
        v = (v + bias_f.reshape(1, -1)).astype(np.float32)
    return cast_out(v, out_dtype, fixpipe_round, cast_overflow)


# --------------------------------------------------------------------------------------------------------------
# QuantBatchMatmulV4 modes (docs/ops/quant_matmul.md §7.4 int8 G-B, §7.7 A8W4 MSD, §7.8 A4W4 K-G)
# --------------------------------------------------------------------------------------------------------------

def perblock_int8(x1, x2, x1_scale, x2_scale, *, bias=None, order="950", group_size=(1, 128, 128),
                  fixpipe_round="rne", cast_overflow="inf"):
    """int8 G-B -> bf16. x1 (m, k), x2 (k, n) logical ints; x1_scale (⌈m/gsM⌉, G); x2_scale (G, ⌈n/gsN⌉);
    bias (n,) float32. order "950": acc = p_0, then acc + p_j, bias last; "a2": acc starts at the bias (0.0
    without one) and every p_j is added."""
    gs_m, gs_n, gs_k = group_size
    a = np.asarray(x1).astype(np.int64)
    b = np.asarray(x2).astype(np.int64)
    m, k = a.shape
    n = b.shape[1]
    s1 = np.asarray(x1_scale, np.float32)
    s2 = np.asarray(x2_scale, np.float32)
    bias_f = None if bias is None else np.asarray(bias, np.float32).reshape(1, n)
    if order == "a2":
        acc = np.zeros((m, n), np.float32) if bias_f is None else np.repeat(bias_f, m, axis=0)
    else:
        acc = None
    for j in range(-(-k // gs_k)):
        ks = slice(j * gs_k, min(k, (j + 1) * gs_k))
        part = (a[:, ks] @ b[ks]).astype(np.float32)
        s = (np.repeat(s1[:, j], gs_m)[:m, None] * np.repeat(s2[j], gs_n)[None, :n]).astype(np.float32)
        p = (part * s).astype(np.float32)
        acc = p if acc is None else (p + acc).astype(np.float32)
    if order != "a2" and bias_f is not None:
        acc = (acc + bias_f).astype(np.float32)
    return to_bf16(acc, fixpipe_round, cast_overflow)


def a4w4_pergroup_asym(x1, x2, x1_scale, x2_scale, x2_offset, *, out_dtype="bfloat16", group_k=256,
                       fixpipe_round="rne", cast_overflow="inf"):
    """int4 K-G with a per-group zero point: out = x1Scale·Σ_g x2Scale_g·(x1_g @ x2_g − rowsum(x1_g)·x2Offset_g),
    each step one fp32 rounding in the kernel's order. x1 (m, k), x2 (k, n) ints; x1_scale (m, 1); x2_scale and
    x2_offset (fp16) (G, n)."""
    a = np.asarray(x1).astype(np.int64)
    b = np.asarray(x2).astype(np.int64)
    m, k = a.shape
    n = b.shape[1]
    s2 = np.asarray(x2_scale, np.float32)
    off = np.asarray(x2_offset, np.float16).astype(np.float32)
    acc = np.zeros((m, n), np.float32)
    for g in range(-(-k // group_k)):
        ks = slice(g * group_k, min(k, (g + 1) * group_k))
        mm = (a[:, ks] @ b[ks]).astype(np.float32)
        rs = a[:, ks].sum(axis=1).astype(np.float32)[:, None]
        o = (off[g][None, :] * rs).astype(np.float32)
        t = (mm - o).astype(np.float32)
        t = (s2[g][None, :] * t).astype(np.float32)
        acc = (t + acc).astype(np.float32)
    y = (acc * np.asarray(x1_scale, np.float32).reshape(m, 1)).astype(np.float32)
    return cast_out(y, out_dtype, fixpipe_round, cast_overflow)


def a8w4_msd(x1, w, x2_scale_words, y_offset, x1_scale, *, out_dtype="bfloat16", group_k=256,
             fixpipe_round="rne", cast_overflow="inf"):
    """int8 x int4 "MSD" on A2/A3 (docs/ops/quant_matmul.md §7.7). x1 (m, k) int8; w (k, n) int4 values; x2_scale_words
    U64 (G, n) for K-G (group_k) or (n,) for K-C (one group of k); y_offset (n,) float32; x1_scale (m,) or (m, 1).

    hi = floor(x/16), lo = (x mod 16) − 8; per group H_g = fp16(f32(f32(hi@W_g)·s)) and H = fp16(H + H_g)
    (fp16 atomic add, groups in ascending order, workspace zeroed first); likewise L; then
    y = f32(f32(16·H) + L) + yOffset, out = cast(f32(y·x1Scale))."""
    x = np.asarray(x1).astype(np.int64)
    wv = np.asarray(w).astype(np.int64)
    m, k = x.shape
    n = wv.shape[1]
    words = np.asarray(x2_scale_words).view(np.uint64)
    per_group = words.ndim == 2
    s = deq_scale(words).reshape(-1 if per_group else 1, n)
    gk = group_k if per_group else k
    hi = np.floor_divide(x, 16)
    lo = np.mod(x, 16) - 8
    assert np.array_equal(16 * hi + lo + 8, x)
    H = np.zeros((m, n), np.float16)
    L = np.zeros((m, n), np.float16)
    for g in range(-(-k // gk)):
        ks = slice(g * gk, min(k, (g + 1) * gk))
        for plane, ws in ((hi, H), (lo, L)):
            v = ((plane[:, ks] @ wv[ks]).astype(np.float32) * s[g][None, :]).astype(np.float32)
            part = to_fp16(v, fixpipe_round, cast_overflow)
            with np.errstate(over="ignore"):
                ws[...] = (ws.astype(np.float32) + part.astype(np.float32)).astype(np.float16)
    y = (np.float32(16) * H.astype(np.float32)).astype(np.float32)
    y = (y + L.astype(np.float32)).astype(np.float32)
    y = (y + np.asarray(y_offset, np.float32).reshape(1, n)).astype(np.float32)
    y = (y * np.asarray(x1_scale, np.float32).reshape(m, 1)).astype(np.float32)
    return cast_out(y, out_dtype, fixpipe_round, cast_overflow)


# --------------------------------------------------------------------------------------------------------------
# Sparse4to2QuantMatmul (docs/ops/sparse4to2_quant_matmul.md)
# --------------------------------------------------------------------------------------------------------------

def sparse4to2_compress(weight):
    """Dense int8 (n, k) -> (kept values NZ (⌈k/64⌉, ⌈n/16⌉, 16, 32), index (⌈k/64⌉, ⌈n/16⌉, 16, 8)), group by
    group in plain Python, as the table of docs/ops/sparse4to2_quant_matmul.md §2 says: two non-zeros at p0 < p1
    keep (p0, p1) with code (p1 − 1) << 2 | p0; a single one at q keeps (q, q + 1) with code q for q = 0, 1, 2
    (its zero partner decodes to position 1), or (0, 3) with code 0b1000 for q = 3; none keeps two zeros with code 0.
    Raises ValueError on > 2 non-zeros."""
    w = np.asarray(weight, np.int8)
    n, k = w.shape
    k1, n1 = -(-k // 64), -(-n // 16)
    sparse = np.zeros((k1, n1 * 16, 32), np.int8)
    index = np.zeros((k1, n1 * 16, 8), np.uint8)
    for r in range(n):
        for g in range(k1 * 16):
            vals = [int(w[r, 4 * g + t]) if 4 * g + t < k else 0 for t in range(4)]
            nzp = [t for t in range(4) if vals[t] != 0]
            if len(nzp) > 2:
                raise ValueError(f"row {r} group {g}: {vals} has more than 2 non-zeros")
            if len(nzp) == 2:
                p0, p1 = nzp
                code = ((p1 - 1) << 2) | p0
            elif len(nzp) == 1 and nzp[0] == 3:
                p0, p1, code = 0, 3, 0b1000
            elif len(nzp) == 1:
                p0, p1, code = nzp[0], nzp[0] + 1, nzp[0]
            else:
                p0, p1, code = 0, 1, 0
            kb, sub = divmod(g, 16)                  # 16 groups (64 k values) per 32-byte C0 row
            sparse[kb, r, 2 * sub] = vals[p0]
            sparse[kb, r, 2 * sub + 1] = vals[p1]
            index[kb, r, sub // 2] |= np.uint8(code << (4 * (sub % 2)))
    return sparse.reshape(k1, n1, 16, 32), index.reshape(k1, n1, 16, 8)


def sparse4to2_decompress(sparse, index, n, k):
    """The inverse: the first kept value is added at position code & 3, the second at (code >> 2) + 1
    (docs/ops/sparse4to2_quant_matmul.md §2 decode rule; adding, since both may name one position), loops; int16."""
    k1 = sparse.shape[0]
    sp = np.asarray(sparse, np.int8).reshape(k1, -1, 32)
    ix = np.asarray(index, np.uint8).reshape(k1, -1, 8)
    dense = np.zeros((n, k1 * 64), np.int16)
    for r in range(n):
        for g in range(k1 * 16):
            kb, sub = divmod(g, 16)
            code = (int(ix[kb, r, sub // 2]) >> (4 * (sub % 2))) & 0xF
            dense[r, 4 * g + (code & 3)] += int(sp[kb, r, 2 * sub])
            dense[r, 4 * g + (code >> 2) + 1] += int(sp[kb, r, 2 * sub + 1])
    return dense[:, :k]


def sparse4to2_quant_matmul(x, weight_dense, x_scale, weight_scale, bias=None, cast_overflow="inf"):
    """bf16(f32(f32(f32(acc)·sws[n])·xs[m]) + f32(bias[n])) with acc = x @ Wᵀ in int64
    (docs/ops/quant_matmul.md §3)."""
    acc = np.asarray(x).astype(np.int64) @ np.asarray(weight_dense).astype(np.int64).T
    with np.errstate(over="ignore"):
        return _sparse_epilogue(acc, x_scale, weight_scale, bias, cast_overflow)


def _sparse_epilogue(acc, x_scale, weight_scale, bias, cast_overflow):
    y = (acc.astype(np.float32) * np.asarray(weight_scale, np.float32)[None, :]).astype(np.float32)
    y = (y * np.asarray(x_scale, np.float32)[:, None]).astype(np.float32)
    if bias is not None:
        y = (y + np.asarray(bias).astype(np.float32)[None, :]).astype(np.float32)
    return to_bf16(y, "rne", cast_overflow)


def t_cg(x1, x2, x2_scale, y_scale_words, *, out_dtype, float_accum="exact", base_k=128, tcg_fp8_overflow="nan",
         fixpipe_round="rne", cast_overflow="inf"):
    """fp8-e4m3 x fp4 with per-(column, 32-group) weight scales (docs/ops/quant_matmul.md §7.6). x1 (m, k)
    float8_e4m3fn; x2 (k, n) exact fp4 values; x2_scale (n, ⌈k/32⌉) as bfloat16 or float16 (its dtype is the
    multiply's dtype); y_scale_words U64 (n,) or (1, n)."""
    a = np.asarray(x1).astype(np.float64)
    w1 = np.asarray(x2).astype(np.float32)
    k, n = w1.shape
    s = np.asarray(x2_scale)
    sdt = s.dtype
    sk = np.repeat(s.astype(np.float32).T, 32, axis=0)[:k]                       # (k, n)
    with np.errstate(over="ignore", invalid="ignore"):
        prod = (w1 * sk).astype(np.float32)                                        # exact (<= 13 bits)
        if sdt == np.float16:
            w2 = to_fp16(prod, fixpipe_round, cast_overflow).astype(np.float32)
        else:
            w2 = to_bf16(prod, fixpipe_round, cast_overflow).astype(np.float32)
        if tcg_fp8_overflow == "saturate":
            w2 = np.where(np.isnan(w2), w2, np.clip(w2, -448.0, 448.0)).astype(np.float32)
        w3 = w2.astype(ml_dtypes.float8_e4m3fn).astype(np.float64)                 # RNE, overflow -> NaN
    acc = float_cube(a, w3, float_accum, base_k)
    y = (acc * deq_scale(y_scale_words).reshape(1, n)).astype(np.float32)
    return cast_out(y, out_dtype, fixpipe_round, cast_overflow)
