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


# exp_f32_fast: EXP_CORRECTLY_ROUNDED without the libm call on the common range. exp(x) = 2^m * 2^(j/256) * exp(r)
# with k = rint(x * 256 / ln 2) = 256 m + j, r = x - k ln2 / 256 (Cody-Waite: fdlibm's 32-bit ln2_hi, so k * hi is
# exact and x - k * hi is exact by Sterbenz; |r| <= 0.00136), exp(r) by its degree-5 Taylor polynomial (truncation
# below 2^-65). The float64 result is within 2^-50 of e^x; when its 29 bits below float32 precision lie within 2^12
# float64 ulps (2^-40 relative) of the rounding midpoint, or x is outside [-87, 88] (subnormal / overflowing
# float32 results) or NaN, the libm path decides. Otherwise the libm value and this one are on the same side of
# every float32 midpoint: the same float32. Checked over every float32 input of [-87, 88] against exp_f32(x, 0)
# (tests/npu_emu/ascendc/test_ascendc_exp_fast.py, slow-marked; a strided sample by default).
_EXP_TABLE = np.exp2(np.arange(256, dtype=np.float64) / 256.0)
_EXP_INV = 256.0 / 0.6931471805599453
_LN2_HI_256 = 6.93147180369123816490e-01 / 256.0      # fdlibm ln2_hi (32 significant bits)
_LN2_LO_256 = 1.90821492927058770002e-10 / 256.0      # fdlibm ln2_lo


@njit(cache=True, error_model="numpy")
def exp_f32_fast(x):
    """exp_f32(x, EXP_CORRECTLY_ROUNDED), bit for bit, about 3x faster (see the comment above)."""
    xd = np.float64(x)
    if not (xd >= -87.0 and xd <= 88.0):
        return np.float32(np.exp(xd))
    k = np.int64(np.rint(xd * _EXP_INV))
    r = (xd - np.float64(k) * _LN2_HI_256) - np.float64(k) * _LN2_LO_256
    p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0)))))
    m = k >> 8
    scale = np.uint64(np.int64(m + 1023) << 52).view(np.float64)
    y = np.float64(_EXP_TABLE[k & 255] * p * scale)
    low = np.int64(y.view(np.uint64) & np.uint64(0x1FFFFFFF)) - 0x10000000
    if low < 4096 and low > -4096:
        return np.float32(np.exp(xd))
    return np.float32(y)


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


__all__ = ["Exp", "Reciprocal", "exp_f32", "exp_f32_fast", "EXP_CORRECTLY_ROUNDED", "EXP_EXP2", "RECIPROCAL_IEEE", "EXP_MODELS",
           "DIV_MODELS"]
