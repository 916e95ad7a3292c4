"""The golden's exact float sums: the fsum route of golden._exact_f32 gives the bits of the Python-fraction route
(exact products and sums, one rounding to float32) on the operands the goldens pass, ties included."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.grouped_matmul import golden

RNG = np.random.default_rng(4242)


def _bits(a):
    return np.ascontiguousarray(a, np.float32).view(np.uint32)


def _mx_values(shape):
    """FP8 E4M3 values times E8M0 scales over a wide range, as the MX goldens pass them."""
    codes = RNG.integers(0, 256, shape, dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x3C                                  # no NaN codes
    v = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    return v * np.exp2(RNG.integers(-60, 60, shape)).astype(np.float64)


@pytest.mark.parametrize("kind", ["bf16", "fp16", "mx"])
@pytest.mark.parametrize("bias", [False, True])
def test_fsum_route_equals_fractions(kind, bias):
    m, k, n = 5, 70, 6
    if kind == "mx":
        a, b = _mx_values((m, k)), _mx_values((k, n))
    else:
        t = ml_dtypes.bfloat16 if kind == "bf16" else np.float16
        a = RNG.standard_normal((m, k)).astype(t).astype(np.float64)
        b = RNG.standard_normal((k, n)).astype(t).astype(np.float64)
    bias_row = RNG.standard_normal(n).astype(np.float32).astype(np.float64) if bias else None
    assert golden._exact_products(a) and golden._exact_products(b)
    got = golden._exact_f32(a, b, bias_row)
    with np.errstate(over="ignore"):                                    # sums past float32's range: inf
        want = golden._exact_f32_fractions(a, b, bias_row)
    assert (_bits(got) == _bits(want)).all()


def test_ties_and_near_ties():
    """1 + 2^-24 is the float32 midpoint of 1 and 1 + 2^-23: the tie goes to the even 1.0, 2^-80 above it up, 2^-80
    below it down. 1 + 2^-23 + 2^-24 ties between an odd and an even neighbour: up to 1 + 2^-22. 1 - 2^-25 ties
    between 1 - 2^-24 (odd) and 1.0. An exact zero is +0."""
    e = 2.0 ** -80
    rows = [[1.0, 2.0 ** -24, 0.0], [1.0, 2.0 ** -24, e], [1.0, 2.0 ** -24, -e],
            [1.0 + 2.0 ** -23, 2.0 ** -24, 0.0], [1.0, -(2.0 ** -25), 0.0], [2.0 ** -24, -(2.0 ** -24), -0.0]]
    a = np.array(rows, np.float64)
    b = np.ones((3, 1), np.float64)
    got = golden._exact_f32(a, b)[:, 0]
    want = np.array([1.0, 1.0 + 2.0 ** -23, 1.0, 1.0 + 2.0 ** -22, 1.0, 0.0], np.float32)
    assert (_bits(got) == _bits(want)).all()
    assert (_bits(got) == _bits(golden._exact_f32_fractions(a, b)[:, 0])).all()


def test_operands_it_cannot_sum_exactly_take_the_fraction_route():
    """An operand of 53 significant bits: its products need not be exact in float64, so the sum takes the fraction
    route. Exact: (1 + 2^-52)(1 + 2^-30) - (1 + 2^-30) = 2^-52 + 2^-82, to float32 2^-52."""
    a = np.array([[1.0 + 2.0 ** -52, 1.0]])
    b = np.array([[1.0 + 2.0 ** -30], [-(1.0 + 2.0 ** -30)]])
    assert not golden._exact_products(a)
    got = golden._exact_f32(a, b)
    assert (_bits(got) == _bits(golden._exact_f32_fractions(a, b))).all()
    assert _bits(got)[0, 0] == _bits(np.float32(2.0 ** -52))
