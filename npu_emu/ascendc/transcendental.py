"""Exp and Reciprocal on float32, with a named model switch for the bits the device's vector unit gives.

No public source gives the bits of the vector ``Exp``, ``Div`` or ``Reciprocal`` instructions
(``cannmirror/asc-devkit: docs/api/context/Exp.md``, ``Div.md``, ``Reciprocal.md`` state the formula only), so each
takes a ``model`` (a compile-time constant at the call site; docs/conventions.md, "Transcendental models"):

* ``EXP_CORRECTLY_ROUNDED`` (default): ``float32(exp(float64(x)))``, the correctly rounded float32 result. The
  float64 exp is accurate to well under one float64 ulp and the sweep of ``tests/npu_emu/ascendc/test_ascendc_exp.py``
  (every float32 input, slow-marked) shows that one rounding of it to float32 never meets a rounding boundary
  closely enough to matter, with mpmath deciding the few close cases. [HW-unverified]
* ``EXP_EXP2``: ``exp2(float32(x * log2(e)))``: the argument scaled in float32 (one rounding) and the power of two
  correctly rounded, the usual shape of a hardware exp built on an exp2 unit. [HW-unverified]
* ``Div`` lives in ``vector`` with its own ``div_model`` (``DIV_IEEE`` default, ``DIV_RECIP_MUL`` =
  ``a * float32(1 / b)``, the "approximate division" DeepSpeed reports for this accelerator,
  ``microsoft/DeepSpeed: op_builder/npu/quantizer.py``); ``DIV_MODELS`` below names them for the op switches.
* ``Reciprocal`` has the correctly rounded ``float32(1 / x)`` only (``RECIPROCAL_IEEE``).

Special values follow IEEE: exp(NaN) = NaN, exp(+inf) = +inf, exp(-inf) = +0; x/0 = +-inf, 0/0 = NaN. Subnormal
inputs and results are kept (no flush).

Structure: ``exp_f32`` (and ``vector.div_f32``) are the scalar element functions (kernels that fuse steps call them, so each
model is written once); the instructions are tiny inlined dispatchers to loops compiled once per signature, as in
``vector``.
"""

import numpy as np
from numba import njit

from npu_emu.ascendc.constants import DIV_IEEE, DIV_RECIP_MUL

_INLINE = dict(inline="always", cache=True, error_model="numpy")
_LOOP = dict(cache=True, error_model="numpy")

EXP_CORRECTLY_ROUNDED = 0
EXP_EXP2 = 1
RECIPROCAL_IEEE = 0

#: the op-level switch names (``exp_model=``, ``div_model=``) and their codes
EXP_MODELS = {"correctly_rounded": EXP_CORRECTLY_ROUNDED, "exp2": EXP_EXP2}
DIV_MODELS = {"ieee": DIV_IEEE, "reciprocal": DIV_RECIP_MUL}

_LOG2E_F32 = np.float32(1.4426950408889634)


@njit(**_INLINE)
def exp_f32(x, model):
    """e**x of a float32 under the Exp ``model``."""
    if model == EXP_EXP2:
        t = np.float32(np.float32(x) * _LOG2E_F32)
        return np.float32(np.exp2(np.float64(t)))
    return np.float32(np.exp(np.float64(x)))


# exp_f32_many: EXP_CORRECTLY_ROUNDED over an array without the libm call on the common range, in a loop that
# vectorises (no table, no float -> int conversion, no branch). exp(x) = 2^k * exp(r): k = rint(x / ln 2) read from
# the bits of x / ln 2 + 1.5 * 2^52, r = (x - k ln2_hi) - k ln2_lo (fdlibm's split: k * ln2_hi is exact, and so is
# the subtraction by Sterbenz; |r| <= 0.347), exp(r) by its degree-11 Taylor polynomial (Lagrange remainder
# <= e^0.347 * 0.347^12 / 12! < 2^-46 relative; Estrin's scheme), 2^k built in the exponent bits. The float64
# result is within 2^-45 of e^x (the truncation plus a few roundings), under 2^8 float64 ulps. An element is marked
# for the libm path when x is outside [-87, 88] (subnormal or overflowing float32 results) or NaN, or when the 29 bits of its float64
# result below float32 precision lie within 2^12 float64 ulps (2^-40 relative) of the rounding midpoint: otherwise
# the libm value is on the same side of every float32 midpoint, so it rounds to the same float32. Checked against
# exp_f32(x, 0) on every float32 of [-87, 88] (tests/npu_emu/ascendc/test_ascendc_exp_fast.py, slow-marked).
_MAGIC = 6755399441055744.0                          # 1.5 * 2^52
_INV_LN2 = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01                 # fdlibm ln2_hi (32 significant bits)
_LN2_LO = 1.90821492927058770002e-10                 # fdlibm ln2_lo
_INV_FACT = tuple(1.0 / float(np.prod(np.arange(1, i + 1, dtype=np.float64))) for i in range(14))


_MID_LO = 0x10000000 - 4095                         # 2^28 - 4095: see the midpoint test below


@njit(cache=True, error_model="numpy")
def exp_f32_many(dst, src, n, mark, negate=False):
    """dst[i] = exp_f32(src[i], EXP_CORRECTLY_ROUNDED) for i < n, bit for bit (``mark``: uint8 scratch of n);
    ``negate=True``: exp_f32(-src[i]), i.e. Muls(x, -1) then Exp in one pass (the negation is exact)."""
    c2, c3, c4, c5, c6, c7 = _INV_FACT[2], _INV_FACT[3], _INV_FACT[4], _INV_FACT[5], _INV_FACT[6], _INV_FACT[7]
    c8, c9, c10, c11 = _INV_FACT[8], _INV_FACT[9], _INV_FACT[10], _INV_FACT[11]
    magic_bits = np.float64(_MAGIC).view(np.int64)
    sign = -1.0 if negate else 1.0
    for i in range(n):
        x = np.float64(src[i]) * sign
        m = np.float64(x * _INV_LN2 + _MAGIC)
        kd = m - _MAGIC
        k = m.view(np.int64) - magic_bits
        r = (x - kd * _LN2_HI) - kd * _LN2_LO
        r2 = r * r                                   # Estrin's scheme: a short dependency chain
        r4 = r2 * r2
        r8 = r4 * r4
        q0 = (1.0 + r) + r2 * (c2 + r * c3)
        q1 = (c4 + r * c5) + r2 * (c6 + r * c7)
        q2 = (c8 + r * c9) + r2 * (c10 + r * c11)
        p = (q0 + r4 * q1) + r8 * q2
        y = np.float64(p * np.int64((k + 1023) << 52).view(np.float64))
        # |low 29 bits - 2^28| < 4096 as one compare: (bits - (2^28 - 4095)) mod 2^29 < 8191; [-87, 88] as
        # |x - 0.5| <= 87.5 (exact in float64, false for NaN). Both in one pass cost 10 % less than the two-sided
        # compares (a DequantSwigluQuant row loop, CPU time, interleaved).
        near = (y.view(np.int64) - _MID_LO) & 0x1FFFFFFF
        mark[i] = np.uint8(near < 8191) | np.uint8(not (abs(x - 0.5) <= 87.5))
        dst[i] = np.float32(y)
    for i in range(n):
        if mark[i]:
            dst[i] = np.float32(np.exp(np.float64(src[i]) * sign))


@njit(**_LOOP)
def _exp_loop(dst, src, n, model):
    for i in range(n):
        dst[i] = exp_f32(src[i], model)


@njit(**_LOOP)
def _reciprocal_loop(dst, src, n):
    for i in range(n):
        dst[i] = np.float32(np.float32(1.0) / src[i])


@njit(**_INLINE)
def Exp(dst, src, count, model=EXP_CORRECTLY_ROUNDED):
    """AscendC::Exp(dst, src, count): dst[i] = e**src[i] on float32 LocalTensors (``Exp.md``), under ``model``."""
    _exp_loop(dst, src, min(count, len(dst), len(src)), model)


@njit(**_INLINE)
def Reciprocal(dst, src, count, model=RECIPROCAL_IEEE):
    """AscendC::Reciprocal(dst, src, count): dst[i] = 1 / src[i] on float32 (``Reciprocal.md``), correctly rounded."""
    _reciprocal_loop(dst, src, min(count, len(dst), len(src)))


__all__ = ["Exp", "Reciprocal", "exp_f32", "exp_f32_many", "EXP_CORRECTLY_ROUNDED", "EXP_EXP2", "RECIPROCAL_IEEE", "EXP_MODELS",
           "DIV_MODELS"]
