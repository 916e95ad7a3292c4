"""The Ascend C activation APIs on float32 (``Relu``, ``Silu``, ``FasterGelu``, ``Gelu``) as the sequences of vector
instructions asc-devkit builds them from, each step one float32 rounding.

Sources (read, not copied):

* ``cannmirror/asc-devkit: impl/adv_api/detail/activation/gelu/gelu_impl.h``: ``FastGeluCalcSimplified`` (FasterGelu)
  and ``GeluCalcSimplifiedAvoid`` with ``GeluCalcTanhParams`` / ``GeluCalcYGreaterThanZero`` /
  ``GeluCalcYLessThanZero`` (Gelu, the tanh form). ``highPerformance`` defaults to false: the quotient is a ``Div``,
  not ``Reciprocal`` then ``Mul``. ``highPrecision`` only matters for half inputs.
* ``cannmirror/asc-devkit: impl/adv_api/detail/activation/silu/silu_common_impl.h``: ``SiluCalcSimplified``.
* ``Relu`` is the basic vector instruction ``dst = max(src, 0)``.

The sequences, with every intermediate rounded to float32 (x the input):

* FasterGelu: ``t = x * -1.702``; ``t = Exp(t)``; ``t = t + 1``; ``y = Div(x, t)``  (x / (1 + e^(-1.702 x)));
* Silu: ``t = x * -1``; ``t = Exp(t)``; ``t = t + 1``; ``y = Div(x, t)``  (x / (1 + e^(-x)));
* Gelu (tanh): ``a = x * x``; ``b = x * a``; ``a = b * 0.044715``; ``b = x + a``; ``a = b * 1.5957691216057308``
  (u = 2 sqrt(2 / pi) (x + 0.044715 x^3)); ``b = Exp(Mins(a, 0))``; ``a = Exp(-Abs(a))``; ``a = a + 1``;
  ``a = Div(x, a)``; ``y = a * b``: x / (1 + e^(-|u|)) * e^(min(u, 0)), which is x · sigmoid(u) without an
  overflowing exponential;
* Relu: ``y = max(x, 0)``.

The coefficients are the C++ ``const T`` values, i.e. the float32 nearest to the literals. ``Exp`` and ``Div``
follow the models of ``transcendental`` / ``vector`` (``exp_model``, ``div_model``: docs/conventions.md,
"Transcendental models"). NaN and signed zeros in ``Relu`` and ``Mins`` follow the ``Max`` / ``Min`` convention of
``vector`` (NaN propagates, max(-0, +0) = +0, min(-0, +0) = -0) [HW-unverified: the instructions' documentation
does not say]. Infinities take the IEEE path of each step (FasterGelu(-inf) = -inf / inf = NaN, as the sequence
gives on any IEEE unit).

Structure: ``*_f32`` are the scalar element functions (a kernel that fuses steps calls them, so each sequence is
written once); the API names are count-form row functions over float32 views (``sharedTmpBuffer`` is taken for
reading side by side with the C++ and not used: the steps are element-wise).
"""

import numpy as np
from numba import njit

from npu_emu.ascendc.transcendental import EXP_CORRECTLY_ROUNDED, exp_f32
from npu_emu.ascendc.vector import _MAX, _MIN, _fminmax, div_f32
from npu_emu.ascendc.constants import DIV_IEEE

_SCALAR = dict(inline="never", cache=True, error_model="numpy")
_LOOP = dict(cache=True, error_model="numpy")

FASTGELU_COEF = np.float32(-1.702)
GELU_COEF_A = np.float32(0.044715)
GELU_COEF_B = np.float32(1.5957691216057308)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_MINUS_ONE = np.float32(-1.0)


@njit(**_SCALAR)
def relu_f32(x):
    """Relu of one float32: max(x, +0)."""
    return _fminmax(np.float32(x), _ZERO, _MAX, True)


@njit(inline="always", cache=True, error_model="numpy")
def _x_over_one_plus_exp(x, coef, exp_model, div_model):
    """Muls(coef), Exp, Adds(1), Div(x, .) on one float32: the sequence Silu and FasterGelu share."""
    x = np.float32(x)
    t = np.float32(x * coef)
    t = exp_f32(t, exp_model)
    t = np.float32(t + _ONE)
    return div_f32(x, t, div_model)


@njit(**_SCALAR)
def silu_f32(x, exp_model, div_model):
    """SiluCalcSimplified on one float32: Muls(-1), Exp, Adds(1), Div(x, .)."""
    return _x_over_one_plus_exp(x, _MINUS_ONE, exp_model, div_model)


@njit(**_SCALAR)
def faster_gelu_f32(x, exp_model, div_model):
    """FastGeluCalcSimplified on one float32: Muls(-1.702), Exp, Adds(1), Div(x, .)."""
    return _x_over_one_plus_exp(x, FASTGELU_COEF, exp_model, div_model)


@njit(**_SCALAR)
def gelu_f32(x, exp_model, div_model):
    """GeluCalcSimplifiedAvoid on one float32 (the tanh GELU as x · sigmoid(u), u = 1.5957691 (x + 0.044715 x^3))."""
    x = np.float32(x)
    a = np.float32(x * x)                                  # GeluCalcTanhParams
    b = np.float32(x * a)
    a = np.float32(b * GELU_COEF_A)
    b = np.float32(x + a)
    a = np.float32(b * GELU_COEF_B)
    b = exp_f32(_fminmax(a, _ZERO, _MIN, True), exp_model)  # GeluCalcYGreaterThanZero: Mins(u, 0), Exp
    a = np.float32(abs(a))                                  # GeluCalcYLessThanZero: Abs, Muls(-1), Exp, Adds(1), Div
    a = np.float32(a * _MINUS_ONE)
    a = exp_f32(a, exp_model)
    a = np.float32(a + _ONE)
    a = div_f32(x, a, div_model)
    return np.float32(a * b)


@njit(**_LOOP)
def Relu(dst, src, count):
    """AscendC::Relu(dst, src, count) on float32 views."""
    for i in range(min(count, len(dst), len(src))):
        dst[i] = relu_f32(src[i])


@njit(**_LOOP)
def Silu(dst, src, count, exp_model=EXP_CORRECTLY_ROUNDED, div_model=DIV_IEEE):
    """AscendC::Silu(dst, src, dataSize) on float32 views."""
    for i in range(min(count, len(dst), len(src))):
        dst[i] = silu_f32(src[i], exp_model, div_model)


@njit(**_LOOP)
def FasterGelu(dst, src, sharedTmpBuffer, count, exp_model=EXP_CORRECTLY_ROUNDED, div_model=DIV_IEEE):
    """AscendC::FasterGelu(dst, src, sharedTmpBuffer, dataSize) on float32 views (highPerformance = false)."""
    for i in range(min(count, len(dst), len(src))):
        dst[i] = faster_gelu_f32(src[i], exp_model, div_model)


@njit(**_LOOP)
def Gelu(dst, src, sharedTmpBuffer, count, exp_model=EXP_CORRECTLY_ROUNDED, div_model=DIV_IEEE):
    """AscendC::Gelu(dst, src, sharedTmpBuffer, dataSize) on float32 views (highPrecision, highPerformance = false)."""
    for i in range(min(count, len(dst), len(src))):
        dst[i] = gelu_f32(src[i], exp_model, div_model)


__all__ = ["Relu", "Silu", "FasterGelu", "Gelu", "relu_f32", "silu_f32", "faster_gelu_f32", "gelu_f32",
           "FASTGELU_COEF", "GELU_COEF_A", "GELU_COEF_B"]
