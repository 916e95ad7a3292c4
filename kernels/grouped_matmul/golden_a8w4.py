"""Independent plain-numpy reference of the GroupedMatmul A8W4 MSD mode (docs/ops/grouped_matmul.md §12), written
from the formula of §12.1: never calls the kernels, the instruction layer or npu_emu's codecs (numpy rounds float32
and float16, ml_dtypes bfloat16, all round-to-nearest-even; the integer sums are int64)."""

import ml_dtypes
import numpy as np


def fixpipe_scale(words):
    """uint64 / int64 Fixpipe words -> the float32 the Fixpipe multiplies by: the low 32 bits with the 13 lowest
    mantissa bits dropped (the FP19 view)."""
    u = np.ascontiguousarray(words).view(np.uint64) & np.uint64(0xFFFFE000)
    return u.astype(np.uint32).view(np.float32)


def _f16_add(acc16, v16):
    """fp16 atomic add: the exact sum (float64 holds any sum of two fp16) rounded once to fp16."""
    with np.errstate(over="ignore"):
        return (acc16.astype(np.float64) + v16.astype(np.float64)).astype(np.float16)


def grouped_matmul_a8w4_msd(x, w, scale, bias, per_token_scale, counts, y_dtype, offset=None):
    """x int8 (M, K); w int4 values (E, K, N) (any integer dtype); scale uint64 / int64 (E, G, N); bias float32 (E, N);
    per_token_scale float32 (M,) or (M, 1); counts: rows per group (group_list_type 1); offset float32 (E, 1, N) or
    None. Returns y (M, N) of y_dtype (bfloat16 / float16); rows after the last group are 0.

    x = 16·hi + lo + 8 with hi = floor(x / 16), lo = (x mod 16) - 8. Per group g and k group q (width K / G):
    H = fp16(f32(hi_q @ w_q) · s[g, q]) for q = 0, then H += that with an fp16 add (L likewise with lo); then per
    element v = f32(16·H); v = f32(L + v); v = f32(v + bias); [v = f32(f32(Σ_k x · offset) + v)];
    v = f32(v · pt); y = RNE(v)."""
    x = np.asarray(x, np.int64)
    w = np.asarray(w).astype(np.int64)
    m, k = x.shape
    e, _, n = w.shape
    s = fixpipe_scale(scale).reshape(e, -1, n)
    g_num = s.shape[1]
    gs = k // g_num
    hi = np.floor_divide(x, 16)
    lo = np.mod(x, 16) - 8
    pt = np.asarray(per_token_scale, np.float32).reshape(-1)
    bias = np.asarray(bias, np.float32)
    out_t = ml_dtypes.bfloat16 if y_dtype == "bfloat16" else np.float16
    y = np.zeros((m, n), out_t)
    row = 0
    for g in range(e):
        mg = int(counts[g])
        if mg <= 0:
            continue
        r = slice(row, row + mg)
        h16 = l16 = None                     # k group 0 is written as is, the others added
        for q in range(g_num):
            kq = slice(q * gs, (q + 1) * gs)
            with np.errstate(over="ignore"):
                hq = ((hi[r, kq] @ w[g, kq]).astype(np.float32) * s[g, q]).astype(np.float16)
                lq = ((lo[r, kq] @ w[g, kq]).astype(np.float32) * s[g, q]).astype(np.float16)
            h16 = hq if h16 is None else _f16_add(h16, hq)
            l16 = lq if l16 is None else _f16_add(l16, lq)
        v = np.float32(16.0) * h16.astype(np.float32)
        v = l16.astype(np.float32) + v
        v = v + bias[g]
        if offset is not None:
            rs = x[r].sum(axis=1).astype(np.float32)[:, None]
            v = rs * np.asarray(offset, np.float32).reshape(e, n)[g] + v
        v = v * pt[r][:, None]
        with np.errstate(over="ignore"):
            y[r] = v.astype(out_t)
        row += mg
    return y


def _floor_bf16(v32):
    """float32 -> bfloat16 rounded toward -inf: drop the 16 low bits (toward zero), then one step away from zero
    for a negative value that lost nonzero bits (NaN / inf are kept as they truncate)."""
    u = np.asarray(v32, np.float32).view(np.uint32)
    t = (u & np.uint32(0xFFFF0000)).astype(np.uint32)
    finite = (u & np.uint32(0x7F800000)) != np.uint32(0x7F800000)
    step = ((u >> np.uint32(31)) == 1) & ((u & np.uint32(0xFFFF)) != 0) & finite
    t = np.where(step, t + np.uint32(0x10000), t).astype(np.uint32)
    return (t >> np.uint32(16)).astype(np.uint16).view(ml_dtypes.bfloat16)


def fake_a8w8_scale(words, y_dtype):
    """The per-channel A8W4 words (E, 1, N) as the A8W8 scale (E, N): float32(low half) + float32(high half),
    then for bfloat16 y rounded toward -inf to bfloat16."""
    u = np.ascontiguousarray(words).view(np.uint64)
    lo = (u & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
    hi = (u >> np.uint64(32)).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        v = (lo + hi).reshape(u.shape[0], u.shape[-1])
    return v if y_dtype == "float16" else _floor_bf16(v)


def grouped_matmul_a8w4_msd_vector(x, w, scale, bias, per_token_scale, counts, y_dtype):
    """The MSD_VECTOR_DEQUANT template: per 256-wide k chunk q, P = fp16(Σ_{k∈q} plane · w) (the Fixpipe with scale
    1.0), H = f32(H + f32(f32(P) · s_q)) from the first chunk (L likewise), s_q = f32(low float + high float) of the
    word (no FP19 here); then the combine of grouped_matmul_a8w4_msd without an offset."""
    x = np.asarray(x, np.int64)
    w = np.asarray(w).astype(np.int64)
    m, k = x.shape
    e, _, n = w.shape
    u = np.ascontiguousarray(scale).view(np.uint64).reshape(e, -1, n)
    lo_f = (u & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.float32)
    hi_f = (u >> np.uint64(32)).astype(np.uint32).view(np.float32)
    s = lo_f + hi_f
    hi = np.floor_divide(x, 16)
    lo = np.mod(x, 16) - 8
    pt = np.asarray(per_token_scale, np.float32).reshape(-1)
    out_t = ml_dtypes.bfloat16 if y_dtype == "bfloat16" else np.float16
    y = np.zeros((m, n), out_t)
    row = 0
    for g in range(e):
        mg = int(counts[g])
        if mg <= 0:
            continue
        r = slice(row, row + mg)
        planes = []
        for a in (hi, lo):
            acc = None
            for q in range(k // 256):
                kq = slice(q * 256, (q + 1) * 256)
                p16 = (a[r, kq] @ w[g, kq]).astype(np.float32).astype(np.float16)
                v = p16.astype(np.float32) * s[g, q]
                acc = v if acc is None else acc + v
            planes.append(acc)
        v = np.float32(16.0) * planes[0]
        v = planes[1] + v
        v = v + np.asarray(bias, np.float32)[g]
        v = v * pt[r][:, None]
        with np.errstate(over="ignore"):
            y[r] = v.astype(out_t)
        row += mg
    return y
