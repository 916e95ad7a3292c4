"""Exp / Reciprocal of npu_emu.ascendc.transcendental (and the Div models of npu_emu.ascendc.vector): the models' bits, proven against mpmath.

The default Exp model is float32(exp(float64(x))). It is the correctly rounded float32 exp wherever the float64
result lies farther than MARGIN float64 ulps from a float32 rounding boundary (float64 exp is accurate to within
one ulp, far less than MARGIN). ``hard_inputs`` finds every float32 input that is not that far (the slow-marked
exhaustive sweep over all 2**32 bit patterns); mpmath decides those. HARD lists what the sweep found (re-run it
with ``pytest -m slow tests/npu_emu/ascendc/test_ascendc_exp.py``), so the fast test checks exactly the inputs where
the model could be wrong, plus a random sample against mpmath.
"""

import numpy as np
import pytest
from numba import njit, prange

from npu_emu.ascendc import DIV_IEEE, DIV_RECIP_MUL, DT_AUTO, EXP_CORRECTLY_ROUNDED, EXP_EXP2, Div, Exp, Reciprocal

mpmath = pytest.importorskip("mpmath")

MARGIN = 8  # float64 ulps

# float32 bit patterns whose float64 exp lies within MARGIN float64 ulps of a float32 rounding boundary (the slow
# sweep below prints this list; it is checked to be complete there and correct against mpmath in the fast test).
HARD = [0x337FFFFF, 0x33800000, 0x343FFFFF, 0x34DFFFFD, 0x356FFFF9, 0x35F7FFF1, 0x367BFFE1, 0x36FDFFC1,
        0x377EFF81, 0x383A3EF1, 0x38E69CC1, 0x39C6BE5B, 0x39E5BB1D, 0x3D1A274E, 0x4001B249, 0x40315B33,
        0x4288942B, 0xB3000000, 0xBAE0E25C, 0xBBF0EDF1, 0xC16912CD]


@njit(cache=True, error_model="numpy")
def _exp_model(x):
    return np.float32(np.exp(np.float64(x)))


@njit(cache=True, error_model="numpy", parallel=True)
def _sweep(lo, hi, margin, out, counts):
    """For bit patterns [lo, hi) in 64 chunks: record those whose float64 exp is within ``margin`` float64 ulps
    of a float32 rounding boundary (midpoint between neighbours, the overflow and underflow thresholds)."""
    nchunk = 64
    span = (hi - lo + nchunk - 1) // nchunk
    for c in prange(nchunk):
        a = lo + c * span
        b = min(hi, a + span)
        k = 0
        for u in range(a, b):
            x = np.uint32(u).view(np.float32)
            if x != x:
                continue
            y = np.exp(np.float64(x))
            if y == 0.0 or y == np.inf:
                # the float64 result itself underflowed / overflowed: far beyond the float32 thresholds
                continue
            r = np.float32(y)
            ulp = np.abs(np.nextafter(y, np.inf) - y)
            if r == np.float32(np.inf):
                lo_mid = np.float64(np.float32(3.4028234663852886e38)) + 2.0 ** 103
                d = np.abs(y - lo_mid)
            elif r == 0:
                d = np.abs(y - 2.0 ** -150)
            else:
                rp = np.float64(np.nextafter(r, np.float32(np.inf)))
                rm = np.float64(np.nextafter(r, np.float32(0)))
                if rp == np.inf:
                    rp = np.float64(r) + 2.0 ** 104
                d = min(np.abs(y - (np.float64(r) + rp) / 2), np.abs(y - (np.float64(r) + rm) / 2))
            if d <= margin * ulp:
                if k < out.shape[1]:
                    out[c, k] = u
                k += 1
        counts[c] = k


def hard_inputs(lo=0, hi=2 ** 32, margin=MARGIN):
    out = np.zeros((64, 4096), np.int64)
    counts = np.zeros(64, np.int64)
    _sweep(lo, hi, margin, out, counts)
    assert counts.max() <= out.shape[1]
    return sorted(int(out[c, k]) for c in range(64) for k in range(counts[c]))


def correct_exp_f32(x):
    """The correctly rounded float32 e**x (round to nearest even), by mpmath at 300 bits."""
    x = np.float32(x)
    if np.isnan(x):
        return np.float32(np.nan)
    with mpmath.workprec(300):
        e = mpmath.exp(mpmath.mpf(float(x)))
        # float32 neighbours of float64(e): pick the nearest, ties to even
        f = np.float32(float(e))
        cands = {f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(0))}
        best = None
        for c in cands:
            cv = mpmath.mpf(float(np.float32(3.4028234663852886e38))) * 2 if np.isinf(c) else mpmath.mpf(float(c))
            d = abs(e - cv)
            if best is None or d < best[0] or (d == best[0] and (int(np.float32(c).view(np.uint32)) & 1) == 0):
                best = (d, c)
        # overflow: beyond max + half an ulp rounds to inf
        if e >= mpmath.mpf(float(np.float32(3.4028234663852886e38))) + mpmath.mpf(2) ** 103:
            return np.float32(np.inf)
        return np.float32(best[1])


def _exp_instr(x, model=EXP_CORRECTLY_ROUNDED):
    x = np.ascontiguousarray(x, np.float32)
    y = np.empty_like(x)
    _run_exp(y, x, x.size, model)
    return y


@njit(cache=True, error_model="numpy")
def _run_exp(y, x, n, model):
    if model == EXP_EXP2:
        Exp(y, x, n, EXP_EXP2)
    else:
        Exp(y, x, n)


@njit(cache=True, error_model="numpy")
def _run_div(z, a, b, n, model):
    if model == DIV_RECIP_MUL:
        Div(z, a, b, n, DT_AUTO, DIV_RECIP_MUL)
    else:
        Div(z, a, b, n)


@njit(cache=True, error_model="numpy")
def _run_rcp(z, a, n):
    Reciprocal(z, a, n)


def test_exp_is_correctly_rounded_on_a_sample_and_the_hard_inputs():
    rng = np.random.default_rng(38)
    bits = rng.integers(0, 2 ** 32, 3000, dtype=np.uint64).astype(np.uint32)
    # and a dense sample of the range that matters (no overflow / underflow)
    dense = rng.uniform(-104, 89, 3000).astype(np.float32).view(np.uint32)
    hard = np.array(HARD, np.uint32)
    u = np.concatenate([bits, dense, hard])
    x = u.view(np.float32)
    got = _exp_instr(x)
    want = np.array([correct_exp_f32(v) for v in x], np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_exp_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283935546875, 88.72284698486328, -103.97208404541016,
                  -103.97207641601562, 1e-30, -1e-30, 1.0], np.float32)
    got = _exp_instr(x)
    want = np.array([correct_exp_f32(v) for v in x], np.float32)
    assert np.isnan(got[4])
    keep = ~np.isnan(want)
    assert np.array_equal(got[keep].view(np.uint32), want[keep].view(np.uint32))
    assert got[2] == np.inf and got[3] == 0 and got[0] == 1 and got[6] == np.inf and got[7] == 0


def test_exp_models_differ_and_exp2_model_is_its_formula():
    rng = np.random.default_rng(1)
    x = rng.uniform(-80, 80, 20000).astype(np.float32)
    cr = _exp_instr(x)
    e2 = _exp_instr(x, EXP_EXP2)
    t = (x * np.float32(1.4426950408889634)).astype(np.float32)
    assert np.array_equal(e2.view(np.uint32), np.exp2(t.astype(np.float64)).astype(np.float32).view(np.uint32))
    assert not np.array_equal(cr.view(np.uint32), e2.view(np.uint32))


def test_div_models():
    rng = np.random.default_rng(2)
    a = rng.standard_normal(20000).astype(np.float32)
    b = (rng.standard_normal(20000) * 3).astype(np.float32)
    z = np.empty_like(a)
    _run_div(z, a, b, a.size, DIV_IEEE)
    # IEEE quotient: the float64 quotient of two float32 rounded once is the correctly rounded float32 quotient
    assert np.array_equal(z.view(np.uint32), (a.astype(np.float64) / b).astype(np.float32).view(np.uint32))
    _run_div(z, a, b, a.size, DIV_RECIP_MUL)
    r = (np.float32(1) / b).astype(np.float32)
    assert np.array_equal(z.view(np.uint32), (a * r).astype(np.float32).view(np.uint32))
    assert not np.array_equal(z.view(np.uint32), (a / b).view(np.uint32))
    _run_rcp(z, b, b.size)
    assert np.array_equal(z.view(np.uint32), r.view(np.uint32))


def test_count_limits_the_elements_written():
    x = np.ones(8, np.float32)
    y = np.full(8, -7, np.float32)
    _run_exp(y, x, 3, EXP_CORRECTLY_ROUNDED)
    assert np.array_equal(y[:3], np.full(3, np.float32(np.e))) and np.all(y[3:] == -7)


def test_the_sweep_finds_a_planted_close_case():
    # a small range swept with a huge margin flags every input: the sweep's bookkeeping works
    assert hard_inputs(0x3F800000, 0x3F800000 + 64, margin=2 ** 40) == list(range(0x3F800000, 0x3F800000 + 64))


@pytest.mark.slow
def test_exhaustive_sweep_hard_inputs_are_listed_and_correct():
    """All 2**32 float32 inputs (about a minute on 2 cores): every input outside HARD is correctly rounded by the
    float64 argument above; the HARD ones are checked against mpmath."""
    found = hard_inputs()
    print("HARD =", [hex(u) for u in found])
    assert found == sorted(HARD)
    x = np.array(found, np.uint32).view(np.float32)
    got = _exp_instr(x)
    want = np.array([correct_exp_f32(v) for v in x], np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
