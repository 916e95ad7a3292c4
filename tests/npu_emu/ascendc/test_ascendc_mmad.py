"""Mmad: L0A (Zz / Nz / GEMV) x L0B (Zn) -> L0C (Nz) against plain numpy matmuls of the ND matrices.

Integer paths are exact (numpy int64 matmul). Float inputs are drawn on coarse grids so that every float64 partial
sum is exact; the oracle is then the exact dot product rounded once to float32 (``math.fsum``), which is what the
documented Mmad float path (exact products, float64 sum, one rounding) must return bit for bit.
"""

import math

import ml_dtypes
import numpy as np
import pytest
from numba import njit

from npu_emu.ascendc import (
    DT_BF16,
    DT_FLOAT8_E4M3FN,
    DT_FLOAT8_E5M2,
    DT_FLOAT16,
    DT_INT4,
    Mmad,
    MmadParams,
    l0c_to_nd,
    mmad,
    nd_to_l0a,
    nd_to_l0b,
)
from npu_emu.errors import AclnnError

M, N, K = 20, 40, 70          # none a multiple of 16 or 32: partial fractals everywhere (Mmad.md M=30,K=70,N=40 case)


@njit(cache=True)
def mmad_f16(c, a, b, m, n, k, init, bias):
    if len(bias) == 0:
        Mmad(c, a, b, m, n, k, init, False, None, DT_FLOAT16, DT_FLOAT16)
    else:
        Mmad(c, a, b, m, n, k, init, False, bias, DT_FLOAT16, DT_FLOAT16)


@njit(cache=True)
def mmad_bf16(c, a, b, m, n, k):
    Mmad(c, a, b, m, n, k, fm_type=DT_BF16, filter_type=DT_BF16)


@njit(cache=True)
def mmad_fp8_nz(c, a, b, m, n, k):
    Mmad(c, a, b, m, n, k, fm_type=DT_FLOAT8_E4M3FN, filter_type=DT_FLOAT8_E5M2, l0a_nz=True)


@njit(cache=True)
def mmad_int4(c, a, b, m, n, k):
    Mmad(c, a, b, m, n, k, fm_type=DT_INT4, filter_type=DT_INT4)


def l0c_image(m, n, dtype, fill):
    return np.full(256 * -(-m // 16) * -(-n // 16), fill, dtype)


def exact_f32(a, b, c0=None):
    """Exact a @ b (+ c0) rounded once to float32."""
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            terms = [float(x) * float(y) for x, y in zip(a[i], b[:, j])]
            if c0 is not None:
                terms.append(float(c0[j]))
            out[i, j] = np.float32(math.fsum(terms))
    return out


def padded_mask(m, n):
    """True at the L0C positions of the m x n valid elements."""
    c = l0c_image(m, n, np.int32, 0)
    c[:] = np.arange(c.size)
    valid = l0c_to_nd(c, m, n).reshape(-1)
    mask = np.zeros(c.size, bool)
    mask[valid] = True
    return mask


def test_int8_zz_zn_nz_exact():
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    c = l0c_image(M, N, np.int32, 12345)
    Mmad(c, nd_to_l0a(a), nd_to_l0b(b), M, N, K)
    assert np.array_equal(l0c_to_nd(c, M, N), a.astype(np.int64) @ b.astype(np.int64))
    assert np.all(c[~padded_mask(M, N)] == 12345)            # padded fractal rows / columns are not written


def test_int8_accumulate_bias_and_wrap():
    rng = np.random.default_rng(12)
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    b = rng.integers(-128, 128, (K, N), dtype=np.int8)
    la, lb = nd_to_l0a(a), nd_to_l0b(b)
    prod = a.astype(np.int64) @ b.astype(np.int64)
    c = l0c_image(M, N, np.int32, 0)
    Mmad(c, la, lb, M, N, K)
    Mmad(c, la, lb, M, N, K, False)                          # cmatrixInitVal=False: C += A x B
    assert np.array_equal(l0c_to_nd(c, M, N), 2 * prod)
    bias = np.arange(N, dtype=np.int32) * 1000 - 7
    Mmad(c, la, lb, M, N, K, True, False, bias)              # bias overload: C = bias + A x B
    assert np.array_equal(l0c_to_nd(c, M, N), prod + bias)
    # the int32 accumulator wraps: start at 2^31 - 1 and add a positive product
    one = np.ones((16, 32), np.int8)
    c = l0c_image(16, 16, np.int32, 2**31 - 1)
    Mmad(c, nd_to_l0a(one), nd_to_l0b(np.ones((32, 16), np.int8)), 16, 16, 32, False)
    assert np.all(l0c_to_nd(c, 16, 16) == -2**31 + 31)


def test_half_to_float_exact_and_bias():
    rng = np.random.default_rng(13)
    a = (rng.integers(-1023, 1024, (M, K)) / 64).astype(np.float16)   # products are multiples of 2^-12
    b = (rng.integers(-1023, 1024, (K, N)) / 64).astype(np.float16)
    bias = (rng.integers(-1000, 1000, N) / 8).astype(np.float32)
    c = l0c_image(M, N, np.float32, np.nan)
    empty = np.zeros(0, np.float32)
    mmad_f16(c, nd_to_l0a(a).view(np.uint16), nd_to_l0b(b).view(np.uint16), M, N, K, True, empty)
    want = exact_f32(a.astype(np.float64), b.astype(np.float64))
    assert np.array_equal(l0c_to_nd(c, M, N).view(np.uint32), want.view(np.uint32))
    mmad_f16(c, nd_to_l0a(a).view(np.uint16), nd_to_l0b(b).view(np.uint16), M, N, K, True, bias)
    want = exact_f32(a.astype(np.float64), b.astype(np.float64), bias)
    assert np.array_equal(l0c_to_nd(c, M, N).view(np.uint32), want.view(np.uint32))


def test_bf16_to_float_single_rounding():
    # one row whose exact sum needs more than 24 bits: 2^24 + 1 + 2^-8 -> rounded once (to 2^24 + 2)
    a = np.array([[2.0**24, 1.0, 2.0**-8] + [0.0] * 13], np.float32)
    b = np.ones((16, 1), np.float32)
    a16 = np.repeat(a, 2, axis=0).astype(ml_dtypes.bfloat16)
    c = l0c_image(2, 1, np.float32, 0)
    mmad_bf16(c, nd_to_l0a(a16).view(np.uint16), nd_to_l0b(b.astype(ml_dtypes.bfloat16)).view(np.uint16), 2, 1, 16)
    assert l0c_to_nd(c, 2, 1)[0, 0] == np.float32(2.0**24 + 2)


def test_float32_k_direction_align():
    rng = np.random.default_rng(14)
    m, n, k = 17, 18, 36
    a = (rng.integers(-100, 100, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-100, 100, (k, n)) / 4).astype(np.float32)
    want = exact_f32(a.astype(np.float64), b.astype(np.float64))
    c = l0c_image(m, n, np.float32, 0)
    Mmad(c, nd_to_l0a(a), nd_to_l0b(b), m, n, k)             # K aligned to 8: 5 fractal columns
    assert np.array_equal(l0c_to_nd(c, m, n), want)
    a48 = np.zeros((m, 48), np.float32)
    a48[:, :k] = a
    b48 = np.zeros((48, n), np.float32)
    b48[:k] = b
    c[:] = 0
    Mmad(c, nd_to_l0a(a48), nd_to_l0b(b48), m, n, k, kDirectionAlign=True)   # K aligned to 16: 6 columns
    assert np.array_equal(l0c_to_nd(c, m, n), want)


def test_gemv_reads_a_as_nd():
    rng = np.random.default_rng(15)
    a = rng.integers(-128, 128, (1, 100), dtype=np.int8)
    b = rng.integers(-128, 128, (100, 24), dtype=np.int8)
    c = l0c_image(1, 24, np.int32, 0)
    Mmad(c, a.reshape(-1).copy(), nd_to_l0b(b), 1, 24, 100)  # GEMV.md: "K个数据连续存储"
    assert np.array_equal(l0c_to_nd(c, 1, 24), a.astype(np.int64) @ b.astype(np.int64))
    c[:] = 0
    Mmad(c, nd_to_l0a(a), nd_to_l0b(b), 1, 24, 100, disableGemv=True)
    assert np.array_equal(l0c_to_nd(c, 1, 24), a.astype(np.int64) @ b.astype(np.int64))


def test_fp8_mixed_with_nz_l0a():
    rng = np.random.default_rng(16)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.float8_e5m2)
    c = l0c_image(M, N, np.float32, 0)
    mmad_fp8_nz(c, nd_to_l0a(a, layout="Nz").view(np.uint8), nd_to_l0b(b).view(np.uint8), M, N, K)
    want = exact_f32(a.astype(np.float64), b.astype(np.float64))
    assert np.array_equal(l0c_to_nd(c, M, N).view(np.uint32), want.view(np.uint32))


def pack_int4(v):
    v = (np.asarray(v).reshape(-1) & 0xF).astype(np.uint8)
    return v[0::2] | (v[1::2] << 4)


def test_int4_packed_k0_64():
    rng = np.random.default_rng(17)
    a = rng.integers(-8, 8, (M, K), dtype=np.int8)
    b = rng.integers(-8, 8, (K, N), dtype=np.int8)
    c = l0c_image(M, N, np.int32, 0)
    mmad_int4(c, pack_int4(nd_to_l0a(a, 64)), pack_int4(nd_to_l0b(b, 64)), M, N, K)
    assert np.array_equal(l0c_to_nd(c, M, N), a.astype(np.int64) @ b.astype(np.int64))


def test_python_level_params_and_checks():
    a = np.ones((16, 32), np.int8)
    c = l0c_image(16, 16, np.int32, 0)
    mmad(c, nd_to_l0a(a), nd_to_l0b(np.ones((32, 16), np.int8)), MmadParams(16, 16, 32))
    assert np.all(c == 32)
    with pytest.raises(AclnnError):
        mmad(c[:100], nd_to_l0a(a), nd_to_l0b(np.ones((32, 16), np.int8)), MmadParams(16, 16, 32))
    with pytest.raises(AclnnError):
        mmad(c, nd_to_l0a(a), nd_to_l0b(np.ones((32, 16), np.int8)), MmadParams(16, 16, 32, False, True))
    with pytest.raises(AclnnError):
        MmadParams(4096, 1, 1)
    Mmad(c, nd_to_l0a(a), nd_to_l0b(np.ones((32, 16), np.int8)), 16, 16, 0)   # k == 0: no-op
    assert np.all(c == 32)
