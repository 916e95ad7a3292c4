"""The scalar API of docs/codecs.md §14 called from njit code: widening helpers, FP19, integral rounding, round-to-odd,
E8M0 from bf16, and one call of every encoder with the contract's argument order."""

import inspect
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from numba import njit

from npu_emu.dtypes import scalar as S

# Random bit patterns include signalling NaNs (numpy flags "invalid" when it converts them) and some inputs are
# deliberately out of range for numpy's own casts ("overflow"); neither is a test failure.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning",
                                        "ignore:overflow encountered in cast:RuntimeWarning")

CONTRACT = {
    "f32_as_u32": ["x"], "u32_as_f32": ["u"], "f16_to_f32": ["h"], "bf16_to_f32": ["b"],
    "f32_to_f16": ["x", "rmode", "sat"], "f32_to_bf16": ["x", "rmode", "sat"],
    "encode_e4m3fn": ["x", "sat", "keep_nan"], "encode_e5m2": ["x", "sat", "keep_nan"],
    "encode_hif8": ["x", "rmode", "sat", "hybrid_script"],
    "encode_hif8_f16": ["h", "rmode", "sat", "hybrid_script", "f16_sub_raw"],
    "encode_e8m0_bf16": ["b"], "encode_fp4_e2m1": ["x", "rmode", "nan_sign"],
    "encode_fp4_e1m2": ["x", "rmode", "nan_sign"], "decode_e4m3fn": ["c"], "decode_e5m2": ["c"],
    "decode_hif8": ["c"], "decode_fp4_e2m1": ["c"], "decode_fp4_e1m2": ["c"], "decode_e8m0": ["c", "zero_is_zero"],
    "round_to_integral": ["x", "rmode"], "t19": ["u"], "r19": ["u"],
}


def test_contract_names_signatures_and_options():
    # docs/codecs.md §14: names, argument order, and @njit(inline='always', cache=True, error_model='numpy')
    for name, args in CONTRACT.items():
        fn = getattr(S, name)
        assert list(inspect.signature(fn.py_func).parameters) == args, name
        assert fn.targetoptions.get("inline", "never") == "always", name
        assert fn.targetoptions.get("error_model") == "numpy", name
        assert fn._cache is not None and type(fn._cache).__name__ == "FunctionCache", name
    assert (S.CAST_NONE, S.CAST_RINT, S.CAST_FLOOR, S.CAST_CEIL, S.CAST_ROUND, S.CAST_TRUNC, S.CAST_ODD,
            S.CAST_HYBRID) == tuple(range(8))


@njit(cache=True, error_model="numpy")
def _widen(h, f16_out, bf16_out, roundtrip):
    for i in range(h.size):
        f16_out[i] = S.f16_to_f32(h[i])
        bf16_out[i] = S.bf16_to_f32(h[i])
        roundtrip[i] = S.f32_as_u32(S.u32_as_f32(np.uint32(h[i]) * np.uint32(65537)))


def test_widening_is_exact_for_every_pattern():
    h = np.arange(65536, dtype=np.uint16)
    f16, bf16, rt = np.empty(65536, np.float32), np.empty(65536, np.float32), np.empty(65536, np.uint32)
    _widen(h, f16, bf16, rt)
    # numpy's half -> float and ml_dtypes' bf16 -> float are exact and keep NaN payloads: compare all bits
    assert np.array_equal(f16.view(np.uint32), h.view(np.float16).astype(np.float32).view(np.uint32))
    assert np.array_equal(bf16.view(np.uint32), h.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32))
    assert np.array_equal(rt, h.astype(np.uint32) * np.uint32(65537))


@njit(cache=True, error_model="numpy")
def _fp19(u, t, r):
    for i in range(u.size):
        t[i] = S.t19(u[i])
        r[i] = S.r19(u[i])


def _r19_reference(u):
    """Value-space RNE to 11 significant bits (rint of an exact float64 scaling); exponent 0 -> signed zero,
    exponent 255 truncated (hicann/ops-nn trans_quant_param_v2.h CalQuantPreScaleValue)."""
    u = u.astype(np.uint32)
    e = (u >> 23) & 0xFF
    x = u.view(np.float32).astype(np.float64)
    normal = (e > 0) & (e < 255)
    q = np.ldexp(1.0, e.astype(np.int64) - 127 - 10)
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.where(normal, np.rint(x / q) * q, 0).astype(np.float32).view(np.uint32)  # 2^128 -> Inf
    return np.where(e == 0, u & 0x80000000, np.where(e == 255, u & 0xFFFFE000, r)).astype(np.uint32)


def test_t19_r19():
    # docs/codecs.md §13.8: t19(0.1f) = 0x3DCCC000; r19(1 + 2^-11 + 2^-12) = 0x3F802000; r19(1 + 2^-12) = 0x3F800000
    u = np.array([0x3DCCCCCD, 0x3F801800, 0x3F800800], np.uint32)
    t, r = np.empty_like(u), np.empty_like(u)
    _fp19(u, t, r)
    assert t[0] == 0x3DCCC000 and r[1] == 0x3F802000 and r[2] == 0x3F800000
    rng = np.random.default_rng(19)
    u = np.concatenate([rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint32),
                        np.array([0x7F7FFFFF, 0xFF7FF000, 0x7F7FEFFF, 0x00000000, 0x80000001, 0x007FFFFF,
                                  0x7F800000, 0x7FC00001, 0xFF801FFF, 0x00800FFF, 0x3F801000, 0x3F803000], np.uint32)])
    t, r = np.empty_like(u), np.empty_like(u)
    _fp19(u, t, r)
    assert np.array_equal(t, u & np.uint32(0xFFFFE000))
    assert np.array_equal(r, _r19_reference(u))
    assert r[-12] == 0x7F800000  # a carry out of the largest exponent gives Inf (exponent 255, mantissa 0)


@njit(cache=True, error_model="numpy")
def _integral(x, out):
    for m in range(8):
        for i in range(x.size):
            out[m, i] = S.round_to_integral(x[i], m)


def _integral_reference(x, mode):
    if not np.isfinite(x):
        return x
    f = Fraction(x)
    t = int(f)  # toward zero
    frac = abs(f - t)
    sign = 1 if f > 0 else -1
    if mode in (S.CAST_RINT, S.CAST_NONE, S.CAST_HYBRID):
        r = t + sign * (frac > Fraction(1, 2) or (frac == Fraction(1, 2) and t % 2 != 0))
    elif mode == S.CAST_ROUND:
        r = t + sign * (frac >= Fraction(1, 2))
    elif mode == S.CAST_TRUNC:
        r = t
    elif mode == S.CAST_FLOOR:
        r = t - (f < t)
    elif mode == S.CAST_CEIL:
        r = t + (f > t)
    else:  # ODD
        r = t + sign * (frac != 0 and t % 2 == 0)
    return float(r)


def test_round_to_integral_all_modes():
    base = [0.0, 0.25, 0.5, 0.75, 1.5, 2.5, 3.5, 2.0, 7.0, 0.49999999999999994, 4503599627370495.5, 2.0 ** 53,
            1e300, 5e-324, 1.0 - 2.0 ** -53, 123456.5]
    x = np.array(base + [-b for b in base] + [np.inf, -np.inf], np.float64)
    out = np.empty((8, x.size), np.float64)
    _integral(x, out)
    for m in range(8):
        ref = np.array([_integral_reference(v, m) for v in x])
        assert np.array_equal(out[m], ref), (m, x[out[m] != ref], out[m][out[m] != ref])
    nan = np.empty((8, 1))
    _integral(np.array([np.nan]), nan)
    assert np.isnan(nan).all()


@njit(cache=True, error_model="numpy")
def _odd(x, out):
    for i in range(x.size):
        out[i] = S.f64_to_f32_odd(x[i])


def test_f64_to_f32_round_to_odd():
    rng = np.random.default_rng(64)
    x = np.concatenate([
        rng.standard_normal(1 << 13) * 10.0 ** rng.integers(-47, 40, 1 << 13),
        np.array([3.5e38, -1e300, 1e-50, -1e-50, 2.0 ** -149 * 0.75, 2.0 ** -149 * 1.5, 1.0 + 2.0 ** -30,
                  1.0 + 2.0 ** -24, 1.0 - 2.0 ** -60, 3.4028234663852886e38, 0.0, -0.0, np.inf, -np.inf]),
    ])
    out = np.empty(x.size, np.float32)
    _odd(x, out)
    # reference: the float32 neighbours below/above |x| (Fraction comparisons); odd one of them unless exact
    with np.errstate(over="ignore"):
        for v, got in zip(x.tolist(), out.tolist()):
            f = np.float32(v)
            if np.isfinite(v) and float(f) != v:
                lo = f if abs(float(f)) < abs(v) else np.nextafter(f, np.float32(0))  # Inf -> FLT_MAX
                hi = np.nextafter(lo, np.float32(np.copysign(np.inf, v)))
                assert Fraction(abs(float(lo))) < Fraction(abs(v))
                assert np.isinf(hi) or Fraction(abs(v)) < Fraction(abs(float(hi)))
                want = lo if (lo.view(np.uint32) & 1) or np.isinf(hi) else hi
            else:
                want = f
            assert np.float32(got).view(np.uint32) == np.float32(want).view(np.uint32), (v, got, want)
    assert np.isnan(_odd_nan())


def _odd_nan():
    out = np.empty(1, np.float32)
    _odd(np.array([np.nan]), out)
    return out[0]


@njit(cache=True, error_model="numpy")
def _e8m0_bf16(b, out):
    for i in range(b.size):
        out[i] = S.encode_e8m0_bf16(b[i])


def test_encode_e8m0_bf16_every_pattern():
    b = np.arange(65536, dtype=np.uint16)
    out = np.empty(65536, np.uint8)
    _e8m0_bf16(b, out)
    e = (b >> 7) & 0xFF
    # docs/codecs.md §6.2: the exponent field, sign dropped; Inf -> 0xFE, NaN -> 0xFF
    want = np.where(e == 0xFF, np.where((b & 0x7F) != 0, 0xFF, 0xFE), e)
    assert np.array_equal(out, want)


@njit(cache=True, error_model="numpy")
def _every_encoder(x, h, out):
    for i in range(x.size):
        out[0, i] = S.f32_to_f16(x[i], S.CAST_RINT, False)
        out[1, i] = S.f32_to_bf16(x[i], S.CAST_TRUNC, True)
        out[2, i] = S.encode_e4m3fn(x[i], True, False)
        out[3, i] = S.encode_e5m2(x[i], False, False)
        out[4, i] = S.encode_hif8(x[i], S.CAST_HYBRID, False, False)
        out[5, i] = S.encode_hif8_f16(h[i], S.CAST_ROUND, True, False, False)
        out[6, i] = S.encode_fp4_e2m1(x[i], S.CAST_FLOOR, False)
        out[7, i] = S.encode_fp4_e1m2(x[i], S.CAST_CEIL, True)


def test_scalar_encoders_with_constant_arguments_match_array_api():
    from npu_emu import dtypes as D

    rng = np.random.default_rng(7)
    x = np.concatenate([rng.standard_normal(4096).astype(np.float32) * 3,
                        np.array([np.nan, -np.inf, 1e6, -0.0, 2.5, 17.0], np.float32)])
    h = x.astype(np.float16)
    out = np.empty((8, x.size), np.int64)
    _every_encoder(x, h.view(np.uint16), out)
    assert np.array_equal(out[0], D.to_float16(x).view(np.uint16))
    assert np.array_equal(out[1], D.to_bfloat16(x, round_mode="trunc", saturate=True).view(np.uint16))
    assert np.array_equal(out[2], D.encode(x, "float8_e4m3fn", saturate=True))
    assert np.array_equal(out[3], D.encode(x, "float8_e5m2"))
    assert np.array_equal(out[4], D.encode(x, "hifloat8", round_mode="hybrid"))
    assert np.array_equal(out[5], D.encode(h, "hifloat8", saturate=True))
    assert np.array_equal(out[6], D.encode(x, "float4_e2m1", round_mode="floor"))
    assert np.array_equal(out[7], D.encode(x, "float4_e1m2", round_mode="ceil", fp4_nan="nan_sign"))


# py_func evaluates the fast path in numpy scalars, where the discarded normal-branch value wraps (uint32) for
# subnormal results exactly as in the compiled code; numpy reports that wrap as an overflow
@pytest.mark.filterwarnings("ignore:overflow encountered in scalar:RuntimeWarning")
def test_general_rounding_core_in_rint_mode_matches_the_fast_path():
    # _any_mag (every mode but RINT in practice) treats RINT and unknown modes (HYBRID) as RNE: it must agree with
    # the branch-free RNE path that the public encoders use, for fp16, bf16 and FP8 parameters
    rng = np.random.default_rng(5)
    a = np.concatenate([rng.integers(0, 0x7F800000, 3000), [0, 1, 0x33000000, 0x33000001, 0x477FF000, 0x7F7FFFFF,
                                                            0x387FE000, 0x387FF000, 0x3A800000, 0x3B400000]])
    for mb, emin in ((10, -14), (7, -126), (3, -6), (2, -14), (1, 0)):
        for i, ai in enumerate(a.tolist()):
            fast = int(S._rne_mag.py_func(np.uint32(ai), mb, emin))
            assert S._any_mag(ai, bool(i & 1), S.CAST_RINT, mb, emin) == fast, (hex(ai), mb, emin)
            assert S._any_mag(ai, bool(i & 1), S.CAST_HYBRID, mb, emin) == fast
