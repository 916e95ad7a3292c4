"""Plain-numpy reference of DynamicMxQuantWithDualAxis, written from the semantics of
docs/ops/dynamic_mx_quant_with_dual_axis.md §4 (hicann/ops-nn: quant/dynamic_mx_quant_with_dual_axis/op_kernel/
arch35/dynamic_mx_quant_with_dual_axis_base.h read as arithmetic, not transliterated).

Never imports npu-emu code (tests/test_layering.py). Block statistics are computed with float32 numpy arithmetic and
ml_dtypes casts, scales as integer codes; elements are one float32 multiply by the power-of-two reciprocal (rounded
to BF16 where the kernel multiplies in BF16), then FP8 through ml_dtypes after clipping to the format maximum (NaN
-> +0) and FP4 by the nearest points of its value grid in the round mode (saturating, NaN -> +0, signed zeros).
"""

import ml_dtypes
import numpy as np

EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15, "float4_e2m1": 2, "float4_e1m2": 0}
_FP8 = {"float8_e4m3fn": (ml_dtypes.float8_e4m3fn, 448.0), "float8_e5m2": (ml_dtypes.float8_e5m2, 57344.0)}
_GRID = {"float4_e2m1": np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]), "float4_e1m2": np.arange(8) * 0.25}


def _fp4_codes(v, dst, round_mode):
    grid = _GRID[dst]
    v = np.asarray(v, np.float64)
    nan = np.isnan(v)
    a = np.minimum(np.abs(np.where(nan, 0.0, v)), grid[-1])             # saturate (Inf too)
    neg = np.signbit(v) & ~nan
    lo = np.searchsorted(grid, a, side="right") - 1                      # largest grid point <= a
    hi = np.minimum(lo + 1, 7)
    exact = grid[lo] == a
    d_lo, d_hi = a - grid[lo], grid[hi] - a
    if round_mode == "floor":                                            # towards -inf: magnitude up if negative
        idx = np.where(exact | ~neg, lo, hi)
    else:
        tie_up = (hi % 2 == 0) if round_mode == "rint" else np.ones_like(exact)
        idx = np.where(exact, lo, np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, np.where(tie_up, hi, lo))))
    return (idx.astype(np.uint8) | np.where(neg, np.uint8(8), np.uint8(0))).astype(np.uint8)


def encode_elements(v, dst, round_mode="rint", *, signed_zero=True):
    """Element codes of float32 values (FP4: one code per byte, low nibble)."""
    if dst in _FP8:
        dt, mx = _FP8[dst]
        v = np.asarray(v, np.float32)
        codes = np.clip(np.where(np.isnan(v), np.float32(0), v), -mx, mx).astype(dt).view(np.uint8)
        zero = 0x80
    else:
        codes, zero = _fp4_codes(v, dst, round_mode), 0x8
    if not signed_zero:
        codes = np.where(codes == zero, np.uint8(0), codes).astype(np.uint8)
    return codes


def pack_fp4(codes, nibble_order="low_first"):
    """Two codes per byte along the last axis, element 2i in the low nibble unless ``high_first``."""
    c = np.asarray(codes, np.uint8)
    lo, hi = c[..., 0::2] & 0xF, c[..., 1::2] & 0xF
    if nibble_order == "high_first":
        lo, hi = hi, lo
    return (lo | (hi << 4)).astype(np.uint8)

BLOCK = 32
R_CUBLAS = {"float8_e4m3fn": 0x3B124925, "float8_e5m2": 0x37924925}   # fl32(1/448), fl32(1/57344)


def _f32(u):
    return np.asarray(u, np.uint32).view(np.float32)


def _pow2(k):
    """2^k as float32 for integer arrays k in [-127, 127] (2^-127 is an FP32 subnormal, exact)."""
    return np.ldexp(np.float64(1.0), np.asarray(k, np.int64)).astype(np.float32)


def _scales(xf, x_dtype, dst, scale_alg, dst_type_max):
    """(codes uint8, reciprocals float32) of the blocks laid out along the last axis of xf ([..., nblk, 32])."""
    with np.errstate(invalid="ignore", over="ignore"):
        ax = np.abs(xf)
        if scale_alg == 0:
            # OCP: the largest biased exponent (FP16 through a truncating cast to BF16 keeps the exponent)
            e = ((np.abs(xf).astype(np.float32).view(np.uint32) >> 23) & 0xFF).astype(np.int64).max(axis=-1)
            em = EMAX[dst]
            code = np.where(e == 255, 255, np.where(e <= em, 0, e - em))
            recip = np.where(e == 255, np.float32(np.nan),
                             np.where(e == 0, np.float32(0.0),
                                      np.where(e <= em, _pow2(127), _pow2(127 - np.minimum(code, 254)))))
            return code.astype(np.uint8), recip.astype(np.float32)
        d = float(np.float32(dst_type_max))
        if scale_alg == 2 and d in (0.0, 6.0, 7.0):
            add = 0x3F if d != 7.0 else 0x1F
            if x_dtype == "bfloat16":
                stat = (ax.astype(ml_dtypes.bfloat16).view(np.uint16)).astype(np.int64)
            else:
                fin = np.isfinite(xf)
                b = np.where(fin, ax, 0).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64)
                stat = np.where(fin, b, 0x7F80)
            s = stat.max(axis=-1)
            e = s & 0x7F80
            shared = np.where(e < 0x100, 0, ((s + add) & 0x7F80) - 0x100)
            code = np.where(e == 0x7F80, 255, np.where(e == 0, 0, shared >> 7))
            recip = np.where(e == 0x7F80, np.float32(np.nan),
                             np.where(e == 0, np.float32(0.0), _pow2(127 - np.minimum(shared >> 7, 254))))
            return code.astype(np.uint8), recip.astype(np.float32)
        # scale_alg 1 (cuBLAS, FP8) or 2 with another dst_type_max: S = fl32(A * R), exponent + 1 when inexact
        if scale_alg == 1:
            r, bump = _f32(R_CUBLAS[dst]), True
        else:
            r, bump = np.float32(1.0 / d), False
        a = ax.max(axis=-1).astype(np.float32)                # NaN anywhere -> NaN
        sbits = (a * r).astype(np.float32).view(np.uint32).astype(np.int64)
        e, m = sbits >> 23, sbits & 0x7FFFFF
        up = ((e > 0) & (e < 254) & (m > 0)) | ((e == 0) & (m > 0x400000) & bump)
        c = np.where(up, e + 1, e)
        code = c & 0xFF
        recip = np.where(c >= 255, np.float32(np.nan), _pow2(127 - np.minimum(c, 254)))
        return code.astype(np.uint8), recip.astype(np.float32)


def _elements(xf, recip, x_dtype, dst, round_mode, bf16_mul, signed_zero):
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        v = (xf * recip).astype(np.float32)
    if bf16_mul and x_dtype == "bfloat16":
        v = v.astype(ml_dtypes.bfloat16).astype(np.float32)
    return encode_elements(v, dst, round_mode, signed_zero=signed_zero)


def dual_axis_quant(x, dst, *, round_mode="rint", scale_alg=0, dst_type_max=0.0, signed_zero=True,
                    fp4_nibble_order="low_first"):
    """(y1, mxscale1, y2, mxscale2) as uint8 arrays (FP4 y packed two codes per byte along the last axis) of a float16
    or bfloat16 array x of rank >= 2."""
    x = np.asarray(x)
    x_dtype = "bfloat16" if x.dtype == np.dtype(ml_dtypes.bfloat16) else "float16"
    shape = x.shape
    m, n = shape[-2], shape[-1]
    xf = x.astype(np.float32).reshape(-1, m, n)
    b = xf.shape[0]
    fp4 = dst.startswith("float4")
    mp, np_ = -(-m // 64) * 64, -(-n // 64) * 64
    xp = np.zeros((b, mp, np_), np.float32)
    xp[:, :m, :n] = xf
    # axis -1: blocks of 32 columns; the pad blocks are all zero, which gives the pad code 0x00
    blk1 = xp[:, :m, :].reshape(b, m, np_ // BLOCK, BLOCK)
    c1, r1 = _scales(blk1, x_dtype, dst, scale_alg, dst_type_max)
    y1 = _elements(blk1, r1[..., None], x_dtype, dst, round_mode, True, signed_zero).reshape(b, m, np_)[..., :n]
    # axis -2: blocks of 32 rows, one per column; y2 multiplies BF16 in BF16 only for FP4 outputs
    blk2 = np.moveaxis(xp[:, :, :n].reshape(b, mp // BLOCK, BLOCK, n), 2, -1)      # [b, nb2, n, 32]
    c2, r2 = _scales(blk2, x_dtype, dst, scale_alg, dst_type_max)
    y2 = _elements(blk2, r2[..., None], x_dtype, dst, round_mode, fp4, signed_zero)
    y2 = np.moveaxis(y2, -1, 2).reshape(b, mp, n)[:, :m, :]
    if fp4:
        y1, y2 = pack_fp4(y1, fp4_nibble_order), pack_fp4(y2, fp4_nibble_order)
    ylast = n // 2 if fp4 else n
    s1 = c1.reshape(shape[:-1] + (np_ // 64, 2))
    s2 = np.moveaxis(c2.reshape(b, mp // 64, 2, n), 2, -1).reshape(shape[:-2] + (mp // 64, n, 2))
    return (y1.reshape(shape[:-1] + (ylast,)), s1, y2.reshape(shape[:-1] + (ylast,)), s2)
