"""Plain-numpy reference of DequantSwigluQuant with group_index (docs/ops/dequant_swiglu_quant.md §1), from the
semantics: each step one float32 rounding; e**t and the quotients under the named models (docs/conventions.md,
"Transcendental models": correctly rounded exp, IEEE division by default). numpy only.
"""

import numpy as np

_LOG2E = np.float32(1.4426950408889634)


def exp32(t, model="correctly_rounded"):
    """e**t in float32: float32(exp(float64(t))), or 2 ** float32(t * float32(log2 e)) for "exp2"."""
    t = np.asarray(t, np.float32)
    with np.errstate(over="ignore"):
        if model == "exp2":
            return np.exp2((t * _LOG2E).astype(np.float32).astype(np.float64)).astype(np.float32)
        return np.exp(t.astype(np.float64)).astype(np.float32)


def div32(p, q, model="ieee"):
    """p / q in float32: one rounding of the float64 quotient, or p * float32(1 / q) for "reciprocal"."""
    p = np.asarray(p, np.float32)
    q = np.asarray(q, np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if model == "reciprocal":
            return (p * (np.float64(1.0) / q.astype(np.float64)).astype(np.float32)).astype(np.float32)
        return (p.astype(np.float64) / q.astype(np.float64)).astype(np.float32)


def _f32(a):
    return np.asarray(a, np.float32)


def _codes(v):
    """float32 -> int8 through RINT to int32, ROUND to half, TRUNC to int8: clamp(rint(v)), NaN -> 0."""
    v = np.where(np.isnan(v), np.float32(0), v)
    return np.clip(np.rint(v.astype(np.float64)), -128, 127).astype(np.int8)


def dequant_swiglu_quant(x, weight_scale, activation_scale=None, bias=None, quant_scale=None, quant_offset=None,
                         group_index=None, activate_left=False, quant_mode=1, swiglu_mode=0, clamp_limit=7.0,
                         glu_alpha=1.702, glu_bias=1.0, *, exp_model="correctly_rounded", div_model="ieee"):
    """x int32 [..., 2H] -> (y int8 [..., H], scale float32 [...]); rows outside every group stay 0."""
    x = np.asarray(x)
    lead = x.shape[:-1]
    X = x.reshape(-1, x.shape[-1])
    T, D = X.shape
    H = D // 2
    gi = np.asarray(group_index, np.int64)
    G = gi.shape[0]
    ws = _f32(weight_scale).reshape(-1, D)
    y = np.zeros((T, H), np.int8)
    sc = np.zeros(T, np.float32)
    groups = []
    off = 0
    for k in range(G):
        g, c = (k, gi[k]) if gi.ndim == 1 else (gi[k, 0], gi[k, 1])
        c = max(int(c), 0)
        if c > 0 and off < T:
            groups.append((int(g), off, c))
            off += c
        if gi.ndim == 2 and c <= 0:
            break
    lim = np.float32(clamp_limit)
    for g, o, c in groups:
        rows = slice(o, o + c)
        xi = X[rows].astype(np.int64)
        if bias is not None and np.asarray(bias).dtype == np.int32:
            b = np.asarray(bias).reshape(-1, D)[g].astype(np.int64)
            xi = ((xi + b + 2 ** 31) % 2 ** 32) - 2 ** 31
        xf = xi.astype(np.float32)                         # int32 -> float32, round to nearest even
        xf = (ws[g] * xf).astype(np.float32)
        if activation_scale is not None:
            xf = (_f32(activation_scale).reshape(-1)[rows, None] * xf).astype(np.float32)
        if bias is not None and np.asarray(bias).dtype != np.int32:
            xf = (xf + np.asarray(bias).astype(np.float32).reshape(-1, D)[g]).astype(np.float32)
        if swiglu_mode == 1:
            act, gate = xf[:, 0::2].copy(), xf[:, 1::2].copy()
        elif activate_left:
            act, gate = xf[:, :H].copy(), xf[:, H:].copy()
        else:
            act, gate = xf[:, H:].copy(), xf[:, :H].copy()
        with np.errstate(invalid="ignore", over="ignore"):
            if swiglu_mode == 0:
                t = -act
            else:
                gate = np.maximum(np.minimum(gate, lim), -lim)
                if swiglu_mode == 3:
                    t = -act
                else:
                    gate = (gate + np.float32(glu_bias)).astype(np.float32)
                    act = np.minimum(act, lim)
                    t = (act * -np.float32(glu_alpha)).astype(np.float32)
            t = (exp32(t, exp_model) + np.float32(1)).astype(np.float32)
            act = div32(act, t, div_model)
            if swiglu_mode == 3:
                act = np.minimum(act, lim)
            act = (gate * act).astype(np.float32)
            if quant_mode == 1:
                if quant_scale is not None:
                    act = (_f32(quant_scale).reshape(-1, H)[g] * act).astype(np.float32)
                m = np.max(np.abs(act), axis=1)
                s = (m * np.float32(1.0 / 127.0)).astype(np.float32)
                sc[rows] = s
                y[rows] = _codes(div32(act, np.broadcast_to(s[:, None], act.shape), div_model))
            else:
                qs = _f32(quant_scale).reshape(G, -1)[g]
                qo = _f32(quant_offset).reshape(G, -1)[g]
                if qs.size == 1:
                    q = np.float32(1) if qs[0] == 0 else np.float32(np.float64(1) / np.float64(qs[0]))
                    v = ((act * q).astype(np.float32) + qo[0]).astype(np.float32)
                else:
                    v = (div32(act, np.broadcast_to(qs, act.shape), div_model) + qo).astype(np.float32)
                y[rows] = _codes(v)
    return y.reshape(lead + (H,)), sc.reshape(lead)


def dequant_swiglu_quant_nogroup(x, weight_scale=None, activation_scale=None, bias=None, quant_scale=None,
                                 activate_left=False, *, quant_mode=1, quant_offset=None,
                                 exp_model="correctly_rounded", div_model="ieee"):
    """Without group_index -> (y int8 [..., H], scale float32 [...]).

    int32 x [..., 2H]: the same dequant and SwiGLU as above with one weight_scale / bias row; float16 / bfloat16 x:
    no dequant (the scales and bias are not read). quant_mode 1 (dynamic), the quantisation of the SwiGluTilingData
    kernels: value = float32(max / 127) is the stored scale, y = codes(act * float32(1 / value)) (a multiply by the
    reciprocal, not a division). quant_mode 0 (static): one quant_scale: y = codes(act * float32(1 / qs) + qo[0]);
    H of them: codes(act / qs + qo); none: codes(act); the scale is not produced (0 here)."""
    x = np.asarray(x)
    lead = x.shape[:-1]
    X = x.reshape(-1, x.shape[-1])
    T, D = X.shape
    H = D // 2
    if X.dtype == np.int32:
        xi = X.astype(np.int64)
        if bias is not None and np.asarray(bias).dtype == np.int32:
            b = np.asarray(bias).reshape(-1).astype(np.int64)
            xi = ((xi + b + 2 ** 31) % 2 ** 32) - 2 ** 31
        xf = xi.astype(np.float32)
        xf = (_f32(weight_scale).reshape(-1) * xf).astype(np.float32)
        if activation_scale is not None:
            xf = (_f32(activation_scale).reshape(-1)[:, None] * xf).astype(np.float32)
        if bias is not None and np.asarray(bias).dtype != np.int32:
            xf = (xf + np.asarray(bias).astype(np.float32).reshape(-1)).astype(np.float32)
    else:
        xf = X.astype(np.float32)                          # float16 / bfloat16 -> float32: exact
    act, gate = (xf[:, :H], xf[:, H:]) if activate_left else (xf[:, H:], xf[:, :H])
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        t = (exp32(-act, exp_model) + np.float32(1)).astype(np.float32)
        v = (div32(act, t, div_model) * gate).astype(np.float32)
        if quant_mode == 0:
            if quant_scale is not None:
                qs = _f32(quant_scale).reshape(-1)
                qo = _f32(quant_offset).reshape(-1)
                if qs.size == 1:
                    rec = np.float32(np.float64(1.0) / np.float64(qs[0]))
                    v = ((v * rec).astype(np.float32) + qo[0]).astype(np.float32)
                else:
                    v = (div32(v, np.broadcast_to(qs, v.shape), div_model) + qo).astype(np.float32)
            return _codes(v).reshape(lead + (H,)), np.zeros(lead, np.float32)
        if quant_scale is not None:
            v = (v * _f32(quant_scale).reshape(-1)).astype(np.float32)
        m = np.max(np.abs(v), axis=1)
        value = (m.astype(np.float64) / 127.0).astype(np.float32)
        rec = (1.0 / value.astype(np.float64)).astype(np.float32)
        y = _codes((v * rec[:, None]).astype(np.float32))
    return y.reshape(lead + (H,)), value.reshape(lead)
