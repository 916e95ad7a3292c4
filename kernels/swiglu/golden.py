"""Plain-numpy reference of SwiGlu (docs/ops/swiglu.md §1, §4), written from the semantics, never from the kernel.

out = Swish(A) * B with A the first and B the second half of x along ``dim``, in the device's float32 steps:
half / bf16: s = A / (1 + e**-A), out = round_rne(s * B); float32: out = ((1 / (1 + e**-A)) * A) * B, each step
one float32 rounding. e**t and the quotients follow the named models (docs/conventions.md "Transcendental models"):
"correctly_rounded" e**t = float32(exp(float64(t))); "exp2": float32(2 ** float32(t * float32(log2 e)));
"ieee" quotient = float32(float64(p) / float64(q)) (exact rounding: float64 holds the quotient to 53 bits);
"reciprocal": p * float32(1 / q). Imports numpy and ml_dtypes only.
"""

import ml_dtypes
import numpy as np

_LOG2E = np.float32(1.4426950408889634)


def exp32(t, model="correctly_rounded"):
    t = np.asarray(t, np.float32)
    with np.errstate(over="ignore"):
        if model == "exp2":
            s = (t * _LOG2E).astype(np.float32)
            return np.exp2(s.astype(np.float64)).astype(np.float32)
        return np.exp(t.astype(np.float64)).astype(np.float32)


def div32(p, q, model="ieee"):
    p = np.asarray(p, np.float32)
    q = np.asarray(q, np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if model == "reciprocal":
            r = (np.float64(1.0) / q.astype(np.float64)).astype(np.float32)
            return (p * r).astype(np.float32)
        return (p.astype(np.float64) / q.astype(np.float64)).astype(np.float32)


def _halves(x, dim):
    x = np.asarray(x)
    d = dim % x.ndim
    h = x.shape[d] // 2
    a = np.take(x, np.arange(h), axis=d)
    b = np.take(x, np.arange(h, 2 * h), axis=d)
    return a, b


def swiglu(x, dim=-1, *, exp_model="correctly_rounded", div_model="ieee"):
    """x: float32, float16 or ml_dtypes.bfloat16 array -> same dtype, ``dim`` halved."""
    x = np.asarray(x)
    a, b = _halves(x, dim)
    a32 = a.astype(np.float32)
    b32 = b.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        den = (exp32(-a32, exp_model) + np.float32(1.0)).astype(np.float32)
        if x.dtype == np.float32:
            s = div32(np.ones_like(den), den, div_model)
            return ((s * a32).astype(np.float32) * b32).astype(np.float32)
        s = div32(a32, den, div_model)
        m = (s * b32).astype(np.float32)
    return m.astype(ml_dtypes.bfloat16 if x.dtype == ml_dtypes.bfloat16 else np.float16)
