"""Plain-numpy reference of AscendQuantV2 (npu_quantize with div_mode=False) from the semantics of
docs/ops/ascend_quant.md §2; never calls the kernel, the instruction layer or npu_emu's njit codecs."""

import numpy as np

_ROUND = {"round": np.rint, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc}


def ascend_quant(x, scale, offset=None, *, sqrt_mode=False, round_mode="round"):
    """x: float32 / float16 / bfloat16 array; scale, offset: broadcastable along the last axis (or one value), in a
    dtype whose values x's dtype holds exactly. Returns int8 of x's shape."""
    xf = np.asarray(x).astype(np.float32)
    s = np.asarray(scale).astype(np.float32).reshape(-1)
    t = (xf * (s if s.size > 1 else s[0])).astype(np.float32)
    if sqrt_mode:
        t = (t * (s if s.size > 1 else s[0])).astype(np.float32)
    if offset is not None:
        o = np.asarray(offset).astype(np.float32).reshape(-1)
        t = (t + (o if o.size > 1 else o[0])).astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        r = _ROUND[round_mode](t.astype(np.float64))
        r = np.where(np.isnan(r), 0.0, np.clip(r, -2.0 ** 31, 2.0 ** 31 - 1))     # float32 -> int32, saturating
        h = r.astype(np.float16)                                                   # int32 -> half, RNE
        q = _ROUND[round_mode](h.astype(np.float64))
    return np.clip(q, -128, 127).astype(np.int8)


_QY = {"int8": (np.int8, -128, 127), "uint8": (np.uint8, 0, 255), "int32": (np.int32, -2.0 ** 31, 2.0 ** 31 - 1)}


def quantize(x, scales, zero_points=None, *, dtype="int8", axis=1, div_model="ieee"):
    """aclnnQuantize / npu_quantize(div_mode=True) from the semantics of docs/ops/ascend_quant.md §9:
    y = dtype(rint(float32(x) / float32(scales) + float32(zero_points))), saturating, NaN -> 0. ``scales`` /
    ``zero_points``: 1-D, one value or one per element of ``axis``; any dtype whose values float32 holds (an int32
    zero point is rounded to float32 to nearest even). div_model "reciprocal": float32(x * float32(1 / scales))."""
    xf = np.asarray(x).astype(np.float32)
    s = np.asarray(scales).astype(np.float32).reshape(-1)
    shape = [1] * xf.ndim
    if s.size > 1:
        shape[axis % xf.ndim] = s.size
    s = s.reshape(shape) if s.size > 1 else s[0]
    with np.errstate(all="ignore"):
        if div_model == "reciprocal":
            t = (xf * (np.float32(1.0) / s).astype(np.float32)).astype(np.float32)
        else:
            t = (xf / s).astype(np.float32)
        if zero_points is not None:
            z = np.asarray(zero_points).astype(np.float32).reshape(-1)
            t = (t + (z.reshape(shape) if z.size > 1 else z[0])).astype(np.float32)
        r = np.rint(t.astype(np.float64))
        npt, lo, hi = _QY[dtype]
        r = np.where(np.isnan(r), 0.0, np.clip(r, lo, hi))
    return r.astype(npt)
