"""Independent plain-numpy reference of npu_grouped_matmul (docs/ops/grouped_matmul.md §3), written from the op's
semantics: never calls the kernels, the instruction layer or npu_emu.dtypes' njit codecs (ml_dtypes does the
bf16 rounding, numpy the fp16 one).

Single-tensor split-M form: x (M, K), weight (E, K, N), y (M, N); group g covers the rows given by the group
list. Rows after the last group are not computed: the golden leaves them as ``fill`` (0 by default).
"""

import ml_dtypes
import numpy as np

from npu_emu.kernels.swiglu.golden import div32, exp32

# actType (GMMActType): 1 RELU, 2 GELU_TANH, 4 FASTGELU, 5 SILU (3 GELU_ERR_FUNC is refused by CANN)
RELU, GELU_TANH, FASTGELU, SILU = 1, 2, 4, 5


def group_rows(group_list, group_list_type, num_groups):
    """[(weight index, first row, rows), ...] of the groups in the order the kernel visits them."""
    gl = np.asarray(group_list, dtype=np.int64)
    out = []
    row = 0
    if group_list_type == 2:
        for e in range(gl.shape[0]):
            idx, m = int(gl[e, 0]), int(gl[e, 1])
            if m <= 0:
                break
            out.append((idx, row, m))
            row += m
        return out
    prev = 0
    for g in range(min(num_groups, gl.shape[0])):
        m = int(gl[g]) - prev if group_list_type == 0 else int(gl[g])
        if group_list_type == 0:
            prev = int(gl[g])
        out.append((g, row, m))
        row += m
    return out


def _bf16(v32):
    return np.asarray(v32, np.float32).astype(ml_dtypes.bfloat16)


def activation(v, act_type, exp_model="correctly_rounded", div_model="ieee"):
    """The activation of the A8W8 epilogue on float32 values (docs/ops/grouped_matmul.md §13), every step one float32
    rounding, with e**t and the quotient under the named models (swiglu's golden helpers):

    RELU: x if x > 0 (or NaN) else +0; SILU: x / (1 + e**(-x)); FASTGELU: x / (1 + e**(-1.702 x));
    GELU_TANH: u = 1.5957691216057308 (x + 0.044715 x**3) as x*x, x*that, *0.044715, x+that, *1.5957691, then
    x / (1 + e**(-|u|)) * e**(min(u, 0)) (x * sigmoid(u) without an overflowing power). Constants: the float32
    nearest to each literal."""
    x = np.asarray(v, np.float32)
    one = np.float32(1.0)
    with np.errstate(all="ignore"):
        if act_type == RELU:
            return np.where(np.isnan(x) | (x > 0), x, np.float32(0.0)).astype(np.float32)
        if act_type in (SILU, FASTGELU):
            c = np.float32(-1.0) if act_type == SILU else np.float32(-1.702)
            t = (x * c).astype(np.float32)
            t = (exp32(t, exp_model) + one).astype(np.float32)
            return div32(x, t, div_model)
        if act_type == GELU_TANH:
            u = (x * x).astype(np.float32)
            u = (x * u).astype(np.float32)
            u = (u * np.float32(0.044715)).astype(np.float32)
            u = (x + u).astype(np.float32)
            u = (u * np.float32(1.5957691216057308)).astype(np.float32)
            # min(u, 0): a NaN stays NaN; the sign of a zero does not matter (e**-0 = e**+0 = 1)
            neg = exp32(np.where(np.isnan(u) | (u < 0), u, np.float32(0.0)), exp_model)
            d = (exp32(-np.abs(u), exp_model) + one).astype(np.float32)
            return (div32(x, d, div_model) * neg).astype(np.float32)
    raise ValueError(f"act_type {act_type}")


def grouped_matmul_quant(x, weight, group_list, *, group_list_type=0, scale=None, per_token_scale=None,
                         bias=None, out_dtype="int32", fill=0, act_type=0, exp_model="correctly_rounded",
                         div_model="ieee"):
    """A8W8: int32 = exact sum of int8 products (+ int32 bias, wrapping as the int32 accumulator); int8 out (uint64
    / int64 FixPipe words in ``scale``): REQ8 of f32(acc) * t19(word) with the word's int9 offset; bf16/fp16 out:
    f32(acc) * scale[n] (f32), * per_token[m] (f32), + bias (bf16 -> f32), each product / sum rounded to fp32,
    then the activation (``act_type`` != 0, :func:`activation`), then rounded to bf16 (RNE) or fp16 (RNE)."""
    with np.errstate(over="ignore", invalid="ignore"):      # inf / NaN out of the dequant are part of the semantics
        return _quant(x, weight, group_list, group_list_type, scale, per_token_scale, bias, out_dtype, fill, act_type,
                      exp_model, div_model)


def _quant(x, weight, group_list, group_list_type, scale, per_token_scale, bias, out_dtype, fill, act_type,
           exp_model, div_model):
    x = np.asarray(x)
    weight = np.asarray(weight)
    m_total, n = x.shape[0], weight.shape[-1]
    acc = np.zeros((m_total, n), np.int64)
    done = np.zeros(m_total, bool)
    for g, r0, m in group_rows(group_list, group_list_type, weight.shape[0]):
        if m <= 0:
            continue
        prod = x[r0:r0 + m].astype(np.int64) @ weight[g].astype(np.int64)
        if bias is not None and np.asarray(bias).dtype == np.int32:
            prod = prod + np.asarray(bias)[g].astype(np.int64)
        acc[r0:r0 + m] = prod
        done[r0:r0 + m] = True
    acc32 = ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)
    if out_dtype == "int32":
        y = np.full((m_total, n), fill, np.int32)
        y[done] = acc32[done]
        return y
    rows = group_rows(group_list, group_list_type, weight.shape[0])
    v = acc32.astype(np.float32)
    sc = np.zeros((m_total, n), np.float32)
    off = np.zeros((m_total, n), np.int64)
    for g, r0, m in rows:
        if m > 0:
            if out_dtype == "int8":
                words = np.asarray(scale)[g].view(np.uint64)
                # the FixPipe word: bits 0..31 the fp32 scale truncated to 19 bits, bits 37..45 a signed int9
                sc[r0:r0 + m] = (words & np.uint64(0xFFFFE000)).astype(np.uint32).view(np.float32)
                o9 = ((words >> np.uint64(37)) & np.uint64(0x1FF)).astype(np.int64)
                off[r0:r0 + m] = np.where(o9 >= 256, o9 - 512, o9)
            else:
                sc[r0:r0 + m] = np.asarray(scale)[g].astype(np.float32)
    v = (v * sc).astype(np.float32)
    if out_dtype == "int8":
        # REQ8: round half to even to an int9 range, add the offset, saturate to int8 (NaN -> 0, as npu-emu writes)
        r = np.clip(np.rint(np.nan_to_num(v.astype(np.float64), nan=0.0)), -256, 255).astype(np.int64)
        y = np.full((m_total, n), fill, np.int8)
        y[done] = np.clip(r + off, -128, 127)[done].astype(np.int8)
        return y
    if per_token_scale is not None:
        v = (v * np.asarray(per_token_scale, np.float32)[:, None]).astype(np.float32)
        if bias is not None and np.asarray(bias).dtype != np.int32:
            b = np.zeros((m_total, n), np.float32)
            for g, r0, m in rows:
                if m > 0:
                    b[r0:r0 + m] = np.asarray(bias)[g].astype(np.float32)
            v = (v + b).astype(np.float32)
    if act_type:
        v = activation(v, act_type, exp_model, div_model)
    if out_dtype == "bfloat16":
        y = np.full((m_total, n), fill, ml_dtypes.bfloat16)
        y[done] = _bf16(v[done])
    else:
        y = np.full((m_total, n), fill, np.float16)
        y[done] = v[done].astype(np.float16)
    return y


def _exact_f32(a, b, bias_row=None):
    """RN32 of the exact a @ b (+ bias).

    When every operand has at most 24 significant bits and a magnitude in [2^-500, 2^500] (bf16, fp16, FP8 and FP4
    values times E8M0 scales all do), each product is exact in float64 and ``math.fsum`` returns the correctly
    rounded float64 of the exact sum; a float32 tie is then settled by the sign of the exact sum less the float32
    midpoint, again through fsum. Otherwise the sums run on Python fractions (about 100 times slower)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    bias = None if bias_row is None else np.asarray(bias_row, np.float64)
    if a.shape[1] > 1 << 20 or not all(_exact_products(v) for v in (a, b) + (() if bias is None else (bias,))):
        return _exact_f32_fractions(a, b, bias_row)
    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), np.float32)
    extra = [[]] * n if bias is None else [[v] for v in bias.tolist()]
    for i in range(m):
        for j, terms in enumerate((a[i][:, None] * b).T.tolist()):
            out[i, j] = _rn32_of_sum(terms + extra[j])
    return out


def _exact_products(v):
    """Whether each value of ``v`` has at most 24 significant bits and, unless 0, a magnitude in [2^-500, 2^500]:
    the product of two such values is exact in float64, and 2^20 of them sum below float64's overflow."""
    if not np.isfinite(v).all():
        return False
    mant, ex = np.frexp(v)
    ex = ex[v != 0]
    return bool((np.ldexp(mant, 24) % 1 == 0).all() and (ex >= -499).all() and (ex <= 500).all())


def _rn32_of_sum(terms):
    """RNE float32 of the exact sum of the float64 ``terms``: fsum rounds it to float64, fsum again gives the sign
    of the exact sum less a float32 midpoint (the midpoint is exact in float64)."""
    import math

    return _rn32(math.fsum(terms), lambda mid: math.fsum(terms + [-mid]))


def _exact_f32_fractions(a, b, bias_row=None):
    """RN32 of the exact a @ b (+ bias) via Python fractions, for any finite float64 operands."""
    from fractions import Fraction

    fa = [[Fraction(float(v)) for v in row] for row in a]
    fb = [[Fraction(float(v)) for v in row] for row in b]
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n), np.float32)
    for i in range(m):
        for j in range(n):
            s = Fraction(0) if bias_row is None else Fraction(float(bias_row[j]))
            for t in range(k):
                s += fa[i][t] * fb[t][j]
            out[i, j] = _round_f32(s)
    return out


def _round_f32(fr):
    """RNE float32 of a Fraction (Fraction -> float is correctly rounded to float64)."""
    from fractions import Fraction

    return _rn32(float(fr), lambda mid: fr - Fraction(mid))


def _rn32(d, above):
    """RNE float32 of an exact value x given d = RN64(x) and ``above(mid)``, whose sign is that of x - mid for a
    float64 ``mid``: a float64 tie of float32 is resolved with the exact value. Exact zero gives +0."""
    if d == 0:
        return np.float32(0.0)
    with np.errstate(over="ignore"):
        f = np.float32(d)
    if float(f) == d or not np.isfinite(f):
        return f
    lo = np.float32(np.nextafter(f, np.float32(-np.inf))) if float(f) > d else f
    hi = np.nextafter(lo, np.float32(np.inf))
    side = above((float(lo) + float(hi)) / 2)         # the midpoint of two float32 values is exact in float64
    if side < 0:
        return lo
    if side > 0:
        return hi
    return lo if (int(np.float32(lo).view(np.uint32)) & 1) == 0 else hi


def grouped_matmul_float(x, weight, group_list, *, group_list_type=0, bias=None, fill=0):
    """Plain bf16/fp16 under float_accum="exact": y = round_out(RN32(exact sum + bias)); small shapes only (one
    Python fsum per output element, _exact_f32)."""
    x = np.asarray(x)
    weight = np.asarray(weight)
    m_total, n = x.shape[0], weight.shape[-1]
    out_t = ml_dtypes.bfloat16 if x.dtype == np.dtype(ml_dtypes.bfloat16) else np.float16
    y = np.full((m_total, n), fill, out_t)
    for g, r0, m in group_rows(group_list, group_list_type, weight.shape[0]):
        if m <= 0:
            continue
        b = None if bias is None else np.asarray(bias)[g].astype(np.float64)
        v = _exact_f32(x[r0:r0 + m].astype(np.float64), weight[g].astype(np.float64), b)
        y[r0:r0 + m] = v.astype(out_t)
    return y
