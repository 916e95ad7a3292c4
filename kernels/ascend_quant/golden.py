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
