"""Plain-numpy reference for GroupedDynamicMxQuant and DynamicMxQuant, written from docs/ops/mx_quant.md §3, §4, §8.

Never calls the kernels, the instruction layer or the njit codecs. Scales are integer codes computed from exponent
fields (never a float -> E8M0 cast); elements are one float32 multiply by the power-of-two reciprocal (numpy float32
arithmetic is IEEE, subnormals kept), then FP8 through ml_dtypes after clipping to the format maximum with NaN
replaced by 0 (the oracle recipe of docs/ops/mx_quant.md §6) and FP4 through the value-grid rounding of §4.5
implemented here with float64 arithmetic.

Where the documented semantics are silent the kernel sources decide (each point says so):
* the element product is an FP32 multiply (``mx_quant_common.h`` ``ComputeData``), not an exact float64 product: for
  FP4 ``floor`` a negative product that underflows FP32 gives -0 (code 0x8), not -0.5;
* DynamicMxQuant multiplies BF16 inputs by the reciprocal in BF16 (``dynamic_mx_quant_tail_axis.h``
  ``ComputeDataBf16``; ``dynamic_mx_quant_not_tail_axis.h`` ``CalcElement`` with calcType = bfloat16), so the
  product is rounded to BF16 (RNE) before the element conversion;
* Grouped scale_alg 1 uses R = fl32(1 / fl32(dst_type_max)) whenever dst_type_max != 0 (the tiling's
  ``invDstTypeMax``), also for FP8 outputs; DynamicMxQuant scale_alg 1 always uses fl32(1/448) / fl32(1/57344).
"""

import ml_dtypes
import numpy as np

FORMATS = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1", "float4_e1m2")
EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15, "float4_e2m1": 2, "float4_e1m2": 0}
ELEM_MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "float4_e2m1": 6.0, "float4_e1m2": 1.75}
_FP4_GRID = {"float4_e2m1": np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]),
             "float4_e1m2": np.arange(8) * 0.25}
_ML_FP8 = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}

# CANN releases whose kernels pass a tiny normal block (0 < E <= emax) through with the reciprocal 2^127
# (docs/ops/mx_quant.md §3.8 for Grouped, §4.3 for DynamicMxQuant).
GROUPED_LEGACY = ("9.0.0", "9.0.1", "9.1.0")
DYNAMIC_LEGACY = ("9.0.0",)
CANN_VERSIONS = ("master",) + GROUPED_LEGACY

_FLT_EPS = float(np.finfo(np.float32).eps)
_TINY32 = float(np.finfo(np.float32).tiny)


# ---------------------------------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------------------------------

def _as_float_input(x, x_dtype):
    """(float32 values, canonical input dtype name, raw bits) of an fp16 / bf16 / fp32 array or its bit view."""
    x = np.asarray(x)
    if x_dtype is None:
        x_dtype = {np.dtype(np.float16): "float16", np.dtype(ml_dtypes.bfloat16): "bfloat16",
                   np.dtype(np.float32): "float32"}.get(x.dtype)
        if x_dtype is None:
            raise ValueError(f"x has dtype {x.dtype}; pass float16, bfloat16 or float32 (or bits with x_dtype=)")
    view = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}[x_dtype]
    bits_t = np.uint32 if x_dtype == "float32" else np.uint16
    xv = x.view(view) if x.dtype != np.dtype(view) else x
    return xv.astype(np.float32), x_dtype, xv.view(bits_t)


def _pow2_f32(k):
    """2^k as float32 for integer arrays k (k may reach -127: an FP32 subnormal, still exact)."""
    return np.ldexp(np.float64(1.0), np.asarray(k, np.int64)).astype(np.float32)


def _bf16_bits_to_f32(b):
    return (np.asarray(b, np.uint32) << np.uint32(16)).view(np.float32)


def _flush32(v):
    """FP32 subnormal -> zero of the same sign (the ``ftz=True`` reading of docs/ops/mx_quant.md §1)."""
    v = np.asarray(v, np.float32)
    tiny = (np.abs(v) < _TINY32) & (v != 0)
    return np.where(tiny, np.copysign(np.float32(0.0), v), v).astype(np.float32)


def _inv32(d):
    """fl32(1.0 / double(fl32(d))), as the host tiling computes invDstTypeMax."""
    return np.float32(1.0 / float(np.float32(d)))


def _is_zero(d):
    """Ops::Base::IsFloatEqual(d, 0) on the float attribute (|d| < FLT_EPSILON; assumed tolerance)."""
    return abs(float(np.float32(d))) < _FLT_EPS


def _dst_type_max_class(dst, dst_type_max, op):
    """0 = no dynamic-range template, else the bump constant's class 1 (0/6), 2 (7), 3 (1.875) (§3.7)."""
    d = float(np.float32(dst_type_max))
    if op == "grouped":
        if (_is_zero(d) and dst == "float4_e2m1") or abs(d - 6.0) < _FLT_EPS:
            return 1
        if abs(d - 7.0) < _FLT_EPS:
            return 2
        if abs(d - 1.875) < _FLT_EPS:
            return 3
        return 0
    # DynamicMxQuant compares the float attribute for equality (dynamic_mx_quant_tail_axis.h, Compute)
    if dst == "float4_e2m1" and d in (0.0, 6.0):
        return 1
    if dst == "float4_e2m1" and d == 7.0:
        return 2
    return 0


# ---------------------------------------------------------------------------------------------------------------
# block scales: codes and reciprocals (docs/ops/mx_quant.md §3.4, §3.7, §4.2, §4.3)
# ---------------------------------------------------------------------------------------------------------------

def _exponent_fields(xf, bits, x_dtype):
    """Biased exponent of each element viewed as BF16 (FP32 input: its own exponent field),
    docs/ops/mx_quant.md §3.4 / §4.2."""
    if x_dtype == "bfloat16":
        return ((bits >> 7) & 0xFF).astype(np.int64)
    if x_dtype == "float32":
        return ((bits >> 23) & 0xFF).astype(np.int64)
    a = np.abs(xf.astype(np.float64))
    _, e = np.frexp(a)                       # a = m * 2^e, m in [0.5, 1): floor(log2 a) = e - 1
    out = (e.astype(np.int64) - 1) + 127
    out = np.where(a == 0, 0, out)
    return np.where(~np.isfinite(a), 255, out)


def _abs_max_f32(xf, x_dtype, op, nan_in_max):
    """Block maximum of |x| as float32 for the RCEIL rule (docs/ops/mx_quant.md §3.7 step 1 and its NaN reading)."""
    a = np.abs(xf)
    if op == "dynamic" or nan_in_max == "propagate":
        nan = np.isnan(a).any(axis=-1)
        m = np.where(np.isnan(a), 0, a).max(axis=-1)
        return np.where(nan, np.float32(np.nan), m).astype(np.float32)
    return np.where(np.isnan(a), 0, a).max(axis=-1).astype(np.float32)      # "ignore": Max keeps the number


def _scales_ocp(xf, bits, x_dtype, dst, op, legacy):
    emax = EMAX[dst]
    e = _exponent_fields(xf, bits, x_dtype).max(axis=-1)
    code = np.where(e == 255, 255, np.where(e <= emax, 0, e - emax))
    recip = _pow2_f32(127 - np.minimum(code, 254))
    recip = np.where(code == 255, np.float32(np.nan), recip)
    tiny = (e <= emax) & ((e == 0) | (not legacy))
    recip = np.where(tiny, np.float32(0.0), recip)
    recip = np.where((e <= emax) & ~tiny, np.float32(2.0 ** 127), recip)
    return code.astype(np.uint8), recip.astype(np.float32)


def _rceil(s, subnormal_bump):
    """UE8M0 exponent of a float32 scale: +1 when the mantissa is non-zero (§3.7 step 3)."""
    u = s.view(np.uint32).astype(np.int64)
    e, m = u >> 23, u & 0x7FFFFF
    bump = (e > 0) & (e < 254) & (m > 0)
    if subnormal_bump:
        bump |= (e == 0) & (m > 0x400000)
    return e + bump


def _scales_cublas(xf, x_dtype, dst, op, r32, subnormal_bump, max_low_bound, nan_in_max, ftz):
    a = _abs_max_f32(xf, x_dtype, op, nan_in_max)
    finite = np.isfinite(a)
    # DynamicMxQuant tests the block maximum for Inf/NaN and zero before raising it to max_low_bound; ftz then
    # flushes the multiply's operand
    a_eff = np.maximum(a, np.float32(max_low_bound)) if op == "dynamic" else a
    if ftz:
        a_eff = _flush32(a_eff)
    with np.errstate(over="ignore", invalid="ignore"):
        s = (np.where(finite, a_eff, np.float32(0)).astype(np.float32) * np.float32(r32)).astype(np.float32)
    if ftz:
        s = _flush32(s)
    c = _rceil(s, subnormal_bump)
    c = np.where(finite, c, 255)
    recip_bits = (0x7F00 - (c << 7)) & 0xFFFF
    if op == "grouped":
        recip_bits = np.where(c == 254, 0x0040, recip_bits)
    recip = _bf16_bits_to_f32(recip_bits)
    recip = np.where(c == 255, np.float32(np.nan), recip)
    code = c & 0xFF
    if op == "dynamic":                      # a zero block keeps code 0 and multiplies by +0 (§4.2)
        zero = finite & (a == 0)
        code = np.where(zero, 0, code)
        recip = np.where(zero, np.float32(0.0), recip)
    return code.astype(np.uint8), recip.astype(np.float32)


def _scales_dynamic_range(xf, bits, x_dtype, dst, op, dtm_class):
    """scale_alg 2 for FP4 with dst_type_max in {0, 6, 7} (E2M1) or 1.875 (E1M2): docs/ops/mx_quant.md §3.7."""
    if x_dtype == "bfloat16":
        ab = (bits & 0x7FFF).astype(np.int64)
    elif x_dtype == "float16":
        b16 = np.abs(xf).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64)   # FP16 -> BF16 RNE
        ab = np.where(np.isfinite(xf), b16, 0x7F80) if op == "dynamic" else b16
    else:
        ab = ((bits & 0x7FFFFFFF) >> 16).astype(np.int64)                               # FP32: top 16 bits
    amax = ab.max(axis=-1)
    add = {1: 0x3F, 2: 0x1F, 3: 0x0F}[dtm_class]
    ems = EMAX[dst] << 7
    e = amax & 0x7F80
    e_add = (amax + add) & 0x7F80
    e_add = np.where(e < ems, ems, e_add)
    shared = (e_add - ems) & 0xFFFF
    code = (shared >> 7) & 0xFF
    recip_bits = (0x7F00 - shared) & 0xFFFF
    recip_bits = np.where(shared == 0x7F00, 0x0040, recip_bits)
    recip = _bf16_bits_to_f32(recip_bits)
    zero = (e == 0) if op == "grouped" else (shared == 0)
    code = np.where(e == 0x7F80, 255, np.where(e == 0, 0, code))
    recip = np.where(zero, np.float32(0.0), recip)
    recip = np.where(e == 0x7F80, np.float32(np.nan), recip)
    return code.astype(np.uint8), recip.astype(np.float32)


def block_scales(xb, x_dtype, dst, *, op, scale_alg=0, dst_type_max=0.0, max_low_bound=0.0,
                 cann_version="master", nan_in_max="propagate", ftz=False, bits=None):
    """E8M0 codes and float32 reciprocals of blocks laid out along the last axis of ``xb`` (float32 values).

    Padding elements must be zeros (they never change any block maximum). ``bits`` are the raw input bits in
    the same layout (needed for BF16/FP32 exponent fields); ``op`` is "grouped" or "dynamic".
    """
    legacy = cann_version in (GROUPED_LEGACY if op == "grouped" else DYNAMIC_LEGACY)
    if scale_alg == 0:
        return _scales_ocp(xb, bits, x_dtype, dst, op, legacy)
    dtm_class = _dst_type_max_class(dst, dst_type_max, op)
    if scale_alg == 2 and dtm_class:
        return _scales_dynamic_range(xb, bits, x_dtype, dst, op, dtm_class)
    if scale_alg == 1 and (op == "dynamic" or legacy):
        r32 = _inv32(ELEM_MAX[dst])
    elif _is_zero(dst_type_max):
        r32 = _inv32(ELEM_MAX[dst])
    else:
        r32 = _inv32(dst_type_max)
    return _scales_cublas(xb, x_dtype, dst, op, r32, scale_alg == 1, max_low_bound, nan_in_max, ftz)


# ---------------------------------------------------------------------------------------------------------------
# element conversion (docs/ops/mx_quant.md §3.5, §4.5)
# ---------------------------------------------------------------------------------------------------------------

def scaled_values(xf, recip, *, x_dtype, op, ftz=False):
    """float32 x * reciprocal as the vector unit forms it (FP32 multiply; DynamicMxQuant BF16 inputs in BF16)."""
    x = _flush32(xf) if ftz else np.asarray(xf, np.float32)
    r = _flush32(recip) if ftz else np.asarray(recip, np.float32)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        v = (x * r).astype(np.float32)
    if op == "dynamic" and x_dtype == "bfloat16":
        v = v.astype(ml_dtypes.bfloat16).astype(np.float32)
    return _flush32(v) if ftz else v


def encode_fp8(v, dst):
    """RINT + SAT: NaN -> +0, |v| beyond the maximum -> +-max, signed zero kept (oracle recipe of
    docs/ops/mx_quant.md §6)."""
    v = np.asarray(v, np.float32)
    mx = np.float32(ELEM_MAX[dst])
    c = np.clip(np.where(np.isnan(v), np.float32(0), v), -mx, mx)
    return c.astype(_ML_FP8[dst]).view(np.uint8)


def _round_integral(t, round_mode):
    if round_mode == "rint":
        return np.rint(t)
    if round_mode == "round":
        return np.sign(t) * np.floor(np.abs(t) + 0.5)
    if round_mode == "floor":
        return np.floor(t)
    raise ValueError(f"round_mode={round_mode!r}")


def encode_fp4(v, dst, round_mode):
    """Value-grid rounding of docs/ops/mx_quant.md §4.5 / docs/codecs.md §7.3; codes in the low nibble, saturating,
    NaN -> 0x0."""
    v = np.asarray(v, np.float32).astype(np.float64)
    nan = np.isnan(v)
    v = np.where(nan, 0.0, v)
    neg = np.signbit(v)
    a = np.abs(v)
    if dst == "float4_e2m1":
        _, e = np.frexp(a)
        k = np.maximum(e.astype(np.int64) - 1, 0) - 1          # quantum 2^k: 0.5 below 2, 1 in [2, 4), ...
        q = np.ldexp(1.0, k)
    else:
        q = np.full(v.shape, 0.25)
    with np.errstate(invalid="ignore"):
        r = _round_integral(v / q, round_mode) * q
    mag = np.where(np.isinf(v), ELEM_MAX[dst], np.minimum(np.abs(r), ELEM_MAX[dst]))
    grid = _FP4_GRID[dst]
    idx = np.searchsorted(grid, mag)
    if not np.all(grid[np.minimum(idx, 7)] == mag):
        raise AssertionError("golden FP4 rounding left the grid")
    code = idx.astype(np.uint8) | np.where(neg, np.uint8(8), np.uint8(0))
    return np.where(nan, np.uint8(0), code).astype(np.uint8)


def encode_elements(v, dst, round_mode="rint", *, signed_zero=True):
    codes = encode_fp8(v, dst) if dst.startswith("float8") else encode_fp4(v, dst, round_mode)
    if not signed_zero:
        zero = 0x80 if dst.startswith("float8") else 0x8
        codes = np.where(codes == zero, np.uint8(0), codes).astype(np.uint8)
    return codes


def pack_fp4(codes, nibble_order="low_first"):
    """Two codes per byte along the last axis; element 2i in the low nibble by default (docs/codecs.md §7.2)."""
    c = np.asarray(codes, np.uint8)
    lo, hi = c[..., 0::2] & 0xF, c[..., 1::2] & 0xF
    if nibble_order == "high_first":
        lo, hi = hi, lo
    return (lo | (hi << 4)).astype(np.uint8)


def unpack_fp4(packed, nibble_order="low_first"):
    p = np.asarray(packed, np.uint8)
    lo, hi = p & 0xF, p >> 4
    if nibble_order == "high_first":
        lo, hi = hi, lo
    out = np.empty(p.shape[:-1] + (2 * p.shape[-1],), np.uint8)
    out[..., 0::2], out[..., 1::2] = lo, hi
    return out


def _quantize_blocks(xb, bits_b, x_dtype, dst, op, round_mode, scale_alg, dst_type_max, max_low_bound,
                     cann_version, nan_in_max, ftz, signed_zero):
    """Codes of the blocks along the last axis of xb (zero padded) and their E8M0 scales."""
    code, recip = block_scales(xb, x_dtype, dst, op=op, scale_alg=scale_alg, dst_type_max=dst_type_max,
                               max_low_bound=max_low_bound, cann_version=cann_version, nan_in_max=nan_in_max,
                               ftz=ftz, bits=bits_b)
    v = scaled_values(xb, recip[..., None], x_dtype=x_dtype, op=op, ftz=ftz)
    return encode_elements(v, dst, round_mode, signed_zero=signed_zero), code


# ---------------------------------------------------------------------------------------------------------------
# the two ops
# ---------------------------------------------------------------------------------------------------------------

def grouped_scale_rows(group_index, m):
    """Per mxscale row of [m // 64 + g, ...]: the owning group, or -1 for a gap row (docs/ops/mx_quant.md §3.6)."""
    gi = [int(v) for v in np.asarray(group_index).reshape(-1)]
    owner = np.full(m // 64 + len(gi), -1, np.int64)
    start = 0
    for g, end in enumerate(gi):
        size = end - start
        if size > 0:
            r0 = start // 64 + g
            owner[r0:r0 + -(-size // 64)] = g
        start = end
    return owner


def grouped_dynamic_mx_quant(x, group_index, *, x_dtype=None, dst_type="float8_e4m3fn", round_mode="rint",
                             scale_alg=0, dst_type_max=0.0, cann_version="master", gap_fill=0,
                             mxscale_init=None, signed_zero=True, ftz=False, nan_in_max="propagate",
                             fp4_nibble_order="low_first"):
    """Reference GroupedDynamicMxQuant: (y, mxscale) as uint8 (FP8 codes [m, n] or packed FP4 [m, n/2]).

    ``group_index`` = cumulative end offsets (valid input assumed). Rows of mxscale no group owns get
    ``gap_fill``; with ``gap_fill=None`` they keep ``mxscale_init`` (zeros if not given).
    """
    xf, x_dtype, bits = _as_float_input(x, x_dtype)
    m, n = xf.shape
    gi = [int(v) for v in np.asarray(group_index).reshape(-1)]
    codes = np.zeros((m, n), np.uint8)
    if mxscale_init is not None:
        scale = np.array(mxscale_init, np.uint8, copy=True).reshape(m // 64 + len(gi), n, 2)
    else:
        scale = np.zeros((m // 64 + len(gi), n, 2), np.uint8)
    if gap_fill is not None:
        scale[grouped_scale_rows(gi, m) < 0] = gap_fill
    start = 0
    for g, end in enumerate(gi):
        size = end - start
        if size > 0:
            nb = -(-size // 32)
            pad = nb * 32 - size
            xg = np.concatenate([xf[start:end], np.zeros((pad, n), np.float32)])
            bg = np.concatenate([bits[start:end], np.zeros((pad, n), bits.dtype)])
            # blocks along the last axis: [n, nb, 32]
            xb = xg.reshape(nb, 32, n).transpose(2, 0, 1)
            bb = bg.reshape(nb, 32, n).transpose(2, 0, 1)
            c, sc = _quantize_blocks(xb, bb, x_dtype, dst_type, "grouped", round_mode, scale_alg, dst_type_max,
                                     0.0, cann_version, nan_in_max, ftz, signed_zero)
            codes[start:end] = c.transpose(1, 2, 0).reshape(nb * 32, n)[:size]
            pairs = np.zeros((n, 2 * (-(-nb // 2))), np.uint8)       # odd block count: slot 1 padded 0x00
            pairs[:, :nb] = sc
            r0 = start // 64 + g
            scale[r0:r0 + pairs.shape[1] // 2] = pairs.reshape(n, -1, 2).transpose(1, 0, 2)
        start = end
    y = pack_fp4(codes, fp4_nibble_order) if dst_type.startswith("float4") else codes
    return y, scale


def dynamic_mx_quant(x, *, axis=-1, x_dtype=None, dst_type="float4_e2m1", round_mode="rint", block_size=32,
                     scale_alg=0, dst_type_max=0.0, max_low_bound=0.0, cann_version="master", signed_zero=True,
                     ftz=False, fp4_nibble_order="low_first"):
    """Reference DynamicMxQuant: (y, mxscale) as uint8; mxscale[pre.., p, post.., k] = code of block 2p + k."""
    xf, x_dtype, bits = _as_float_input(x, x_dtype)
    shape = xf.shape
    ax = axis % len(shape)
    d = shape[ax]
    pre = int(np.prod(shape[:ax], dtype=np.int64))
    post = int(np.prod(shape[ax + 1:], dtype=np.int64))
    nb = -(-d // block_size)
    nb2 = nb + nb % 2
    x3 = xf.reshape(pre, d, post)
    b3 = bits.reshape(pre, d, post)
    pad = nb * block_size - d
    x3 = np.concatenate([x3, np.zeros((pre, pad, post), np.float32)], axis=1)
    b3 = np.concatenate([b3, np.zeros((pre, pad, post), b3.dtype)], axis=1)
    # blocks along the last axis: [pre, post, nb, bs]
    xb = x3.reshape(pre, nb, block_size, post).transpose(0, 3, 1, 2)
    bb = b3.reshape(pre, nb, block_size, post).transpose(0, 3, 1, 2)
    c, sc = _quantize_blocks(xb, bb, x_dtype, dst_type, "dynamic", round_mode, scale_alg, dst_type_max,
                             max_low_bound, cann_version, "propagate", ftz, signed_zero)
    codes = c.transpose(0, 2, 3, 1).reshape(pre, nb * block_size, post)[:, :d].reshape(shape)
    s = np.zeros((pre, post, nb2), np.uint8)
    s[..., :nb] = sc
    s = s.reshape(pre, post, nb2 // 2, 2).transpose(0, 2, 1, 3)           # [pre, p, post, 2]
    mxscale = s.reshape(shape[:ax] + (nb2 // 2,) + shape[ax + 1:] + (2,))
    y = pack_fp4(codes, fp4_nibble_order) if dst_type.startswith("float4") else codes
    return np.ascontiguousarray(y), np.ascontiguousarray(mxscale)


def decode_mxscale(mxscale, e8m0_zero="pow2"):
    """E8M0 codes -> float32 scale values (0xFF NaN; 0x00 -> 2^-127, or 0.0 with ``e8m0_zero="zero"``)."""
    c = np.asarray(mxscale, np.uint8).astype(np.int64)
    v = np.ldexp(np.float64(1.0), np.minimum(c, 254) - 127).astype(np.float32)
    v = np.where(c == 255, np.float32(np.nan), v)
    if e8m0_zero == "zero":
        v = np.where(c == 0, np.float32(0.0), v)
    return v.astype(np.float32)
