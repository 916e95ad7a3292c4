"""M_HALF, the path of FP16 inputs with RINT and no switches (launch.mode_of): the FP32 element loops of M_FAST
(kernel._fp32_rows, reading FP16) and the block statistics taken as the maximum of |x|'s 16 bits (kernel._half_stats
and the same loop in _row_blocks), against the per-element transliteration (kernel._enc_one, common._stats: the path
``faithful=True`` takes) over every FP16 pattern, and end to end against ``faithful=True`` on every walk. The
independent golden checks FP16 on every layout and scale rule in test_mx_properties.py.
"""

import numpy as np
import pytest

from mx_refs import DSTS, RECIPS_F32, reference, sweep_layout
from npu_emu.device.read_only import read_only
from npu_emu.kernels.mx_quant import api, common as C, kernel as K, launch as L

Y_DTYPE = {K.D_E4M3: "float8_e4m3fn", K.D_E5M2: "float8_e5m2", K.D_E2M1: "float4_e2m1", K.D_E1M2: "float4_e1m2"}


def _params(dst, **kw):
    args = dict(x_dtype="float16", y_dtype=Y_DTYPE[dst], round_mode="rint", alg=C.ALG_OCP, dtm_class=0,
                legacy=False, signed_zero=True, ftz=False, nan_in_max="keep", fp4_nibble_order="low_first",
                dynamic=True, faithful=False)
    args.update(kw)
    return read_only(C.make_params(**args))          # read-only, as launch passes it: the kernels' signatures


def test_plain_fp16_calls_take_m_half():
    assert L.mode_of(_params(K.D_E4M3)) == K.M_HALF
    assert L.mode_of(_params(K.D_E2M1)) == K.M_HALF
    assert L.mode_of(_params(K.D_E4M3, x_dtype="bfloat16")) == K.M_FAST
    assert L.mode_of(_params(K.D_E4M3, x_dtype="float32")) == K.M_ELEMENT
    assert L.mode_of(_params(K.D_E4M3, faithful=True)) == K.M_FAITHFUL
    for kw in (dict(ftz=True), dict(signed_zero=False), dict(fp4_nibble_order="high_first", y_dtype="float4_e2m1"),
               dict(round_mode="floor", y_dtype="float4_e1m2")):
        assert L.mode_of(_params(K.D_E4M3, **kw)) == K.M_ELEMENT, kw


@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("per_col", [True, False])
def test_half_loops_equal_faithful(dst, per_col):
    """Every FP16 pattern through the M_HALF copy's _convert, laid out as 256 column blocks x 256 rows or 2048 runs
    of one 32-element block, against the reciprocals rotated by 8 offsets: each pattern meets 8 of the 257, and
    every reciprocal (2^127 .. 2^-127, NaN, 0) meets 256 x 8 patterns of all exponents."""
    xs, rows, cols, ystride, got, ref = sweep_layout(dst, per_col)
    rrs, rcs = (0, 1) if per_col else (1, 0)
    p = _params(dst)
    half = L.device(dst, K.M_HALF, L.W_COLS if per_col else L.W_ROWS32)
    for k in (0, 61, 122, 183, 253, 254, 255, 256):
        recips = RECIPS_F32[(k + np.arange(cols if per_col else rows)) % RECIPS_F32.size]
        reference(xs, recips, rrs, rcs, rows, cols, dst, K.X_F16, False, ref)
        got[:] = 0xEE
        half._convert(xs, 0, cols, 0, rows, cols, recips, rrs, rcs, got, 0, ystride, p)
        bad = np.flatnonzero(got != ref)
        assert bad.size == 0, (f"dst {dst} per_col {per_col} offset {k}: byte {bad[0]} M_HALF {got[bad[0]]:#x} "
                               f"faithful {ref[bad[0]]:#x}")


@pytest.mark.parametrize("alg", [C.ALG_OCP, C.ALG_RCEIL, C.ALG_RCEIL_NOSUB])
def test_half_statistics_equal_the_per_element_keys(alg):
    """The column maxima of every FP16 pattern from |x|'s 16 bits equal common._stats' maxima of the per-element
    keys: 256 columns x 256 rows, column j holding the 256 patterns whose high byte is j (zeros and subnormals,
    each exponent, Inf and NaN payloads, both signs: a different maximum per column); the row-block loop of
    _row_blocks equals them block by block."""
    xs = read_only(np.arange(1 << 16, dtype=np.uint16).reshape(256, 256).T.copy().reshape(-1))
    half = L.device(K.D_E4M3, K.M_HALF, L.W_COLS)
    assert half._half_keys(alg, False)
    got, ref = np.full(256, -1, np.int64), np.full(256, -2, np.int64)
    half._half_stats(xs, 0, 256, 0, 256, 256, got, np.empty(256, np.uint16), alg == C.ALG_OCP)
    C._stats(xs, 0, 256, 0, 256, 256, ref, np.empty(256, np.uint16), C.X_F16, alg, True, False)
    assert np.array_equal(got, ref)
    # runs of 32-element blocks along a row (_row_blocks), every pattern once: the statistics it leaves in scr
    keys = np.array([C._stat_key(np.int64(b), C.X_F16, alg, True, False) for b in range(1 << 16)])
    want = keys.reshape(-1, 32).max(axis=1)
    rows = L.device(K.D_E4M3, K.M_HALF, L.W_ROWS32)
    scr = np.full(want.size, -1, np.int64)
    rows._row_blocks(read_only(np.arange(1 << 16, dtype=np.uint16)), 0, want.size, 32, 32, 0, np.empty(1 << 16, np.uint8), 0,
                     np.empty(want.size, np.uint8), 0, scr, np.empty(want.size, np.float32), np.empty(0, np.int8),
                     _params(K.D_E4M3, alg=alg), np.float32(1.0), np.float32(0.0))
    assert np.array_equal(scr, want)
    # the dynamic-range key rounds to BF16, and RCEIL with "ignore" drops NaN: both stay per element
    assert not half._half_keys(C.ALG_RANGE, False) and not half._half_keys(C.ALG_RANGE, True)
    assert half._half_keys(alg, True) == (alg == C.ALG_OCP)


def _specials(rng, shape):
    with np.errstate(over="ignore"):                  # rows scaled past FP16's range become Inf on purpose
        x = (rng.standard_normal(shape) * np.exp2(rng.integers(-30, 18, (shape[0],) + (1,) * (len(shape) - 1))))
        x = x.astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, flat.size // 40, replace=False)] = rng.choice(
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6e-8, -6e-8, 3e-5, 65504.0, -65504.0], np.float32),
        flat.size // 40)
    with np.errstate(over="ignore"):
        return x.astype(np.float16)


def _same(a, b):
    return all(np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8)) for u, v in zip(a, b))


@pytest.mark.parametrize("dst", [23, 24, 296, 297])
def test_half_equals_faithful_end_to_end(dst):
    """Both ops on FP16 data with every special (zeros, subnormals, Inf, NaN, rows beyond FP16's range and tiny
    ones), M_HALF against faithful=True: the grouped op (its slab walk), DynamicMxQuant along the last axis (runs of
    32-element blocks) and along others (column blocks: the first axis, and a middle axis of a 3-d input), with the
    OCP scales and (FP8) RCEIL. Runs of 64-element blocks (the last-axis walk for any block length, a copy of its
    own) for one FP8 and one FP4 format: the walk does not depend on the format, and the sweeps above prove each
    format's loops."""
    rng = np.random.default_rng(dst)
    x = _specials(rng, (200, 192))
    gi = np.array([0, 33, 97, 97, 160, 200], np.int32)
    for alg in (0, 1) if dst in (23, 24) else (0,):
        a = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=dst, scale_alg=alg)
        b = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=dst, scale_alg=alg, faithful=True)
        assert _same(a, b), alg
        for axis, bs in ((-1, 32), (0, 32)) + (((-1, 64),) if dst in (23, 296) else ()):
            a = api.npu_dynamic_mx_quant(x, axis=axis, dst_type=dst, block_size=bs, scale_alg=alg)
            b = api.npu_dynamic_mx_quant(x, axis=axis, dst_type=dst, block_size=bs, scale_alg=alg, faithful=True)
            assert _same(a, b), (alg, axis, bs)
    x3 = _specials(rng, (3, 70, 6))
    a = api.npu_dynamic_mx_quant(x3, axis=1, dst_type=dst)
    b = api.npu_dynamic_mx_quant(x3, axis=1, dst_type=dst, faithful=True)
    assert _same(a, b)
