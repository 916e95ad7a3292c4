"""Independent plain-numpy references of the GroupedMatmul MX and antiquant modes (docs/ops/grouped_matmul.md §10,
§11), written from the semantics: never calls the kernels, the instruction layer or npu_emu's codecs (ml_dtypes
decodes fp8 / bf16 / fp4 E2M1, ``e1m2`` the FLOAT4_E1M2 codes from the format, numpy does fp16, math.fsum (or
Python fractions) the exact sums of golden.py)."""

import ml_dtypes
import numpy as np

from npu_emu.kernels.grouped_matmul.golden import _exact_f32, group_rows


def e8m0(codes):
    """E8M0 code c -> 2**(c - 127) (float64, exact); 0xFF -> NaN."""
    c = np.asarray(codes).view(np.uint8).astype(np.int64)
    v = np.ldexp(1.0, c - 127)
    return np.where(c == 255, np.nan, v)


def e1m2(codes):
    """FLOAT4_E1M2 code s e m1 m0 (low nibble) -> its value, from the format (1 exponent bit, bias 1, 2 mantissa
    bits): e = 1: (-1)^s (1 + m/4); e = 0 (subnormal): (-1)^s m/4. float64, exact."""
    c = np.asarray(codes).view(np.uint8).astype(np.int64) & 0xF
    s, e, m = c >> 3, (c >> 2) & 1, c & 3
    return np.where(s == 1, -1.0, 1.0) * np.where(e == 1, 1.0 + m / 4.0, m / 4.0)


def fp4_values(w, weight_dtype):
    """fp4 weight values: ml_dtypes float4_e2m1fn (or its codes) for "float4_e2m1", uint8 codes for "float4_e1m2"."""
    if weight_dtype == "float4_e1m2":
        return e1m2(w)
    return np.asarray(w).view(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64) \
        if np.asarray(w).dtype == np.uint8 else np.asarray(w).astype(np.float64)


def prologue_byte(codes, weight_dtype):
    """The W4A8-MX vector prologue on one fp4 code (a nibble at the top of an int8 lane): arithmetic shift right by
    2 (E2M1) or 3 (E1M2), then the mask 0x9C / 0x8E -> the e4m3 byte the cube reads (basic_block_vf_mx.h)."""
    c = (np.asarray(codes).view(np.uint8).astype(np.int64) & 0xF) << 4
    lane = np.where(c >= 128, c - 256, c)                     # the int8 lane, the code in its high nibble
    shift, mask = (3, 0x8E) if weight_dtype == "float4_e1m2" else (2, 0x9C)
    return ((lane >> shift) & mask).astype(np.uint8)


def _cast(v32, out_dtype):
    if out_dtype == "bfloat16":
        return np.asarray(v32, np.float32).astype(ml_dtypes.bfloat16)
    if out_dtype == "float16":
        with np.errstate(over="ignore"):                 # beyond 65504: inf, as numpy's RNE cast
            return np.asarray(v32, np.float32).astype(np.float16)
    return np.asarray(v32, np.float32)


def _np_out(out_dtype):
    return {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float32": np.float32}[out_dtype]


def _scaled_x(x, s1, row0):
    """x (m, k) values * 2^e of their 32-block: s1 (m, rows, 2), the group's first scale row ``row0``."""
    m, k = x.shape
    out = np.empty((m, k), np.float64)
    sv = e8m0(s1)
    for t in range(k):
        j = t // 32
        out[:, t] = x[:, t] * sv[:, row0 + j // 2, j % 2]
    return out


def _scaled_w(w, s2, row0):
    """weight (k, n) values * 2^e of their 32-block: s2 (rows, n, 2)."""
    k, n = w.shape
    out = np.empty((k, n), np.float64)
    sv = e8m0(s2)
    for t in range(k):
        j = t // 32
        out[t, :] = w[t, :] * sv[row0 + j // 2, :, j % 2]
    return out


def _dot(a, b, model, bias_row=None):
    if model == "exact":
        return _exact_f32(a, b, bias_row)
    y = np.matmul(a.astype(np.float32), b.astype(np.float32))
    return y if bias_row is None else (y + np.asarray(bias_row, np.float32)).astype(np.float32)


def grouped_matmul_mx(x, weight, scale, per_token_scale, group_list, *, group_list_type=0, group_type=0,
                      out_dtype="bfloat16", model="exact", bias=None, fill=0, weight_dtype=None):
    """MXFP8: y = cast_out(RN32(sum_k (x * 2^(e1 - 127)) * (w * 2^(e2 - 127)))) per group ("exact": the exact sum
    rounded once; "numpy": float32 matmul of the scaled values). MXFP4 (ml_dtypes float4_e2m1fn x and weight) the
    same, with an optional float32 bias (G, N) as the start value of the sum.

    group_type 0: x (M, K), weight (E, K, N), scale (E, ceil(K/64), N, 2), per_token_scale (M, ceil(K/64), 2).
    group_type 2: x (M, K), weight (K, N), scale (K//64 + G, N, 2), per_token_scale (M, K//64 + G, 2); group g
    has the K values of the group list and its scales from row k0 // 64 + g; a group of no K values is not
    written (``fill``). ``weight_dtype="float4_e1m2"``: weight holds E1M2 codes (uint8), decoded by ``e1m2``."""
    xv = np.asarray(x).astype(np.float64)
    wv = fp4_values(weight, weight_dtype) if weight_dtype == "float4_e1m2" else np.asarray(weight).astype(np.float64)
    if group_type == 0:
        m_total, n = xv.shape[0], wv.shape[-1]
        y = np.full((m_total, n), fill, _np_out(out_dtype))
        for g, r0, m in group_rows(group_list, group_list_type, wv.shape[0]):
            if m <= 0:
                continue
            a = _scaled_x(xv[r0:r0 + m], np.asarray(per_token_scale)[r0:r0 + m], 0)
            b = _scaled_w(wv[g], np.asarray(scale)[g], 0)
            brow = None if bias is None else np.asarray(bias, np.float64)[g]
            y[r0:r0 + m] = _cast(_dot(a, b, model, brow), out_dtype)
        return y
    gl = np.asarray(group_list, np.int64)
    sizes = np.diff(gl, prepend=0) if group_list_type == 0 else gl
    m, n = xv.shape[0], wv.shape[1]
    y = np.full((len(sizes), m, n), fill, _np_out(out_dtype))
    k0 = 0
    for g, kg in enumerate(sizes):
        kg = int(kg)
        if kg > 0:
            row0 = k0 // 64 + g
            a = _scaled_x(xv[:, k0:k0 + kg], np.asarray(per_token_scale), row0)
            b = _scaled_w(wv[k0:k0 + kg], np.asarray(scale), row0)
            y[g] = _cast(_dot(a, b, model), out_dtype)
        k0 += kg
    return y


def grouped_matmul_mx_a8w4(x, weight, antiquant_scale, per_token_scale, group_list, *, group_list_type=0,
                           out_dtype="bfloat16", model="exact", bias=None, fill=0, weight_dtype="float4_e2m1"):
    """W4A8-MX (docs/ops/grouped_matmul.md §10.7): float8_e4m3fn x (M, K), float4_e2m1 weight values (E, K, N) (the
    logical view; the call takes it transposed in FRACTAL_NZ), E8M0 antiquant_scale (E, K/64, N, 2) and
    per_token_scale (M, K/64, 2), optional bias (E, N) of y's dtype. Per group:

        w' = w * 2^-6 (the e2m1 code placed in an e4m3 byte), b' = round_bias_dtype(bias * 2^-6),
        L0C = RN32(b' + sum_k (x * 2^(e1 - 127)) * (w' * 2^(e2 - 127)))   ("exact"; "numpy": float32 matmul + b'),
        y = cast_out(RN32(L0C * 64)).

    ``weight_dtype="float4_e1m2"``: weight holds E1M2 codes (uint8); w' is then the e4m3 value of the byte the
    prologue makes of each code (``prologue_byte``, decoded by ml_dtypes), not a formula.
    """
    if weight_dtype == "float4_e1m2":
        w = prologue_byte(weight, weight_dtype).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    else:
        w = np.asarray(weight).astype(np.float64) * 2.0 ** -6
    b = None
    if bias is not None:
        bb = np.asarray(bias).astype(np.float64) * 2.0 ** -6
        with np.errstate(under="ignore"):
            b = (bb.astype(np.float16) if out_dtype == "float16" else bb.astype(ml_dtypes.bfloat16)).astype(np.float64)
    xv = np.asarray(x).astype(np.float64)
    m_total, n = xv.shape[0], w.shape[-1]
    y = np.full((m_total, n), fill, _np_out(out_dtype))
    for g, r0, m in group_rows(group_list, group_list_type, w.shape[0]):
        if m <= 0:
            continue
        a = _scaled_x(xv[r0:r0 + m], np.asarray(per_token_scale)[r0:r0 + m], 0)
        bw = _scaled_w(w[g], np.asarray(antiquant_scale)[g], 0)
        l0c = np.asarray(_dot(a, bw, model, None if b is None else b[g]), np.float32)
        with np.errstate(over="ignore"):
            y[r0:r0 + m] = _cast(l0c * np.float32(64.0), out_dtype)
    return y


def antiquant_weight(w, scale, offset, x_dtype):
    """AscendAntiQuant of one weight (…, K, N) with scale / offset (…, N) per channel or (…, G, N) per group:
    half x: f16(f16(w + offset) * scale) (each half operation one RNE rounding: the exact float64 value rounded by
    numpy's direct double -> half cast); bf16 x: bf16_rne(f32(f32(w + offset) * scale)) (numpy float32)."""
    w = np.asarray(w).astype(np.int64)
    k = w.shape[-2]
    s = np.asarray(scale)
    o = np.asarray(offset)
    if s.ndim == w.ndim:                          # per group: repeat each of the G rows K / G times along K
        s = np.repeat(s, k // s.shape[-2], axis=-2)
        o = np.repeat(o, k // o.shape[-2], axis=-2)
    else:
        s = np.expand_dims(s, -2)
        o = np.expand_dims(o, -2)
    if x_dtype == "float16":
        with np.errstate(over="ignore"):
            t = (w.astype(np.float64) + o.astype(np.float64)).astype(np.float16)
            return (t.astype(np.float64) * s.astype(np.float64)).astype(np.float16)
    t = (w.astype(np.float32) + o.astype(np.float32)).astype(np.float32)
    return (t * s.astype(np.float32)).astype(np.float32).astype(ml_dtypes.bfloat16)
