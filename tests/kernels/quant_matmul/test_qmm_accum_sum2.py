"""accum.sum2_f32 (the numpy two-term case of the exact float32 sum) gives _combine's bits for one part plus a bias:
ties on float32 midpoints decided by the remainder, signed zeros, the float32 subnormal range, the overflow
boundary, NaN and infinities."""

import numpy as np

from npu_emu.kernels.quant_matmul import accum
from npu_emu.device.read_only import read_only


def _combine_bits(a, b):
    """_combine with one part: row r of a as batch r of one row, row r of b as that batch's bias."""
    nb, cols = a.shape
    out = np.empty((nb, 1, cols), np.float32)
    accum._combine(read_only(np.ascontiguousarray(a.reshape(1, nb, 1, cols))), read_only(np.ascontiguousarray(b)), out)
    return out.reshape(nb, cols).view(np.uint32)


def _edge_pairs():
    f32 = np.float32
    mids = []
    for v in (1.0, 3.0, 1.5e-38, 2.0 ** -140, 3.4e38, 1e10):
        f = f32(v)
        nxt = np.nextafter(f, f32(np.inf))
        mid = (np.float64(f) + np.float64(nxt)) / 2             # a float32 midpoint, exact in float64
        for tail in (2.0 ** -80 * abs(mid), -(2.0 ** -80) * abs(mid), 0.0):
            mids.append((mid, tail))
            mids.append((-mid, tail))
    fmax = np.float64(np.finfo(np.float32).max)
    half_ulp = 2.0 ** (127 - 24)
    specials = [(0.0, 0.0), (-0.0, -0.0), (-0.0, 0.0), (0.0, -0.0), (1.0, -1.0), (-1.0, 1.0),
                (fmax + half_ulp, -1.0), (fmax + half_ulp, 1.0), (fmax + half_ulp, 0.0),
                (np.inf, 1.0), (-np.inf, 1.0), (np.inf, -np.inf), (np.nan, 1.0), (1.0, np.nan), (np.inf, np.inf),
                (2.0 ** -149 * 1.5, 0.0), (2.0 ** -149 * 2.5, 0.0), (2.0 ** -150, 2.0 ** -200),
                (2.0 ** -150, -2.0 ** -200), (1.7e308, 1.7e308), (-1.7e308, -1.0e308)]
    return mids + specials


def test_sum2_matches_combine_on_edges():
    pairs = np.array(_edge_pairs(), np.float64)
    a, b = pairs[:, 0].reshape(1, -1), pairs[:, 1].reshape(1, -1)
    assert np.array_equal(accum.sum2_f32(a, b).view(np.uint32), _combine_bits(a, b))


def test_sum2_matches_combine_on_random_magnitudes():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 64)) * np.exp2(rng.integers(-140, 120, (64, 64)))
    b = rng.standard_normal((64, 64)) * np.exp2(rng.integers(-140, 120, (64, 64)))
    b[::3] = a[::3] * -1.0000001                                 # cancellations
    assert np.array_equal(accum.sum2_f32(a, b).view(np.uint32), _combine_bits(a, b))
