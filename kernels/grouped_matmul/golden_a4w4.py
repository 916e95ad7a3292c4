"""Independent plain-numpy reference of the GroupedMatmul A4W4 mode (docs/ops/grouped_matmul.md §14), written from
the semantics: int64 matmuls per K group, numpy float32 products, numpy's RNE float -> float16 casts (one rounding
of the exact float64 sum for the fp16 add), ml_dtypes for bfloat16. Never calls the kernels, the instruction layer
or npu_emu's codecs."""

import ml_dtypes
import numpy as np

from npu_emu.kernels.grouped_matmul.golden import group_rows


def _int4_values(a):
    """ml_dtypes.int4 values (one a byte) or INT32 words of 8 (the first in the low nibble) -> int64 values."""
    a = np.asarray(a)
    if a.dtype == np.int32:
        b = a.view(np.uint8).reshape(a.shape[:-1] + (-1,)).astype(np.int64)
        nib = np.stack([b & 0xF, b >> 4], axis=-1).reshape(a.shape[:-1] + (-1,))
        return np.where(nib >= 8, nib - 16, nib)
    return a.astype(np.int64)


def _t19(words):
    """The fp32 scale the FixPipe reads from a uint64 word: bits 0..31 with the low 13 mantissa bits cleared."""
    w = np.asarray(words).view(np.uint64)
    return (w & np.uint64(0xFFFFE000)).astype(np.uint32).view(np.float32)


def grouped_matmul_a4w4(x, weight, scale, per_token_scale, group_list, *, group_list_type=0, out_dtype="bfloat16",
                        fill=0):
    """y[i, j] = cast_y(f32(f32(H[i, j]) * per_token_scale[i])), with the fp16 workspace value H of row i's group g:

        H = f16(f32(f32(acc_0) * t19(scale[g, 0, j])))
        H = f16(H + f16(f32(f32(acc_k) * t19(scale[g, k, j]))))   k = 1 .. G-1, acc_k the exact int sum over K group k

    ``scale`` (E, N) per channel (one K group) or (E, G, N); rows of no group are ``fill``."""
    xv, wv = _int4_values(x), _int4_values(weight)
    m_total, k = xv.shape
    e, _, n = wv.shape
    sc = _t19(scale)
    sc = sc.reshape(e, 1, n) if sc.ndim == 2 else sc
    groups = sc.shape[1]
    gs = k // groups
    pt = np.asarray(per_token_scale, np.float32)
    np_out = ml_dtypes.bfloat16 if out_dtype == "bfloat16" else np.float16
    y = np.full((m_total, n), fill, np_out)
    with np.errstate(over="ignore", invalid="ignore"):
        for g, r0, m in group_rows(group_list, group_list_type, e):
            if m <= 0:
                continue
            h = None
            for kg in range(groups):
                acc = xv[r0:r0 + m, kg * gs:(kg + 1) * gs] @ wv[g, kg * gs:(kg + 1) * gs]
                v = (acc.astype(np.float32) * sc[g, kg]).astype(np.float32)
                hk = v.astype(np.float16)
                h = hk if h is None else (h.astype(np.float64) + hk.astype(np.float64)).astype(np.float16)
            v = (h.astype(np.float32) * pt[r0:r0 + m, None]).astype(np.float32)
            y[r0:r0 + m] = v.astype(np_out)
    return y
