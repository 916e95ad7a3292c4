"""Plain-numpy reference for GatherDequantInt8, written from docs/ops/gather_dequant_int8.md §2 and §6.3.

Never calls the kernel, the instruction layer or the njit codecs: each device step is one numpy float16 operation
(numpy evaluates a float16 op in float32 and rounds once, which is the correctly rounded fp16 result), so the two
fp16 roundings of the device (Adds, then Muls) are two numpy operations.

The data generator reproduces the sample's test/gen_data.py recipe (hicann/cann-recipes-harmony-infer:
ops/ascendc/src/gather_dequant_int8_custom/test/gen_data.py), numpy legacy RNG, as described in
docs/ops/gather_dequant_int8.md §2.2.
"""

import numpy as np

VOCAB = 1024
EMB_DIM = 256
NUM_INDICES = 30
SEED = 42

_SIGN = np.uint16(0x8000)
_EXP = np.uint16(0x7C00)


def _flush(h):
    """fp16 subnormal -> zero of the same sign (the ``fp16_subnormal="flush"`` reading of
    docs/ops/gather_dequant_int8.md §0)."""
    bits = h.view(np.uint16)
    sub = ((bits & _EXP) == 0) & ((bits & ~_SIGN) != 0)
    return np.where(sub, bits & _SIGN, bits).astype(np.uint16).view(np.float16)


def gather_dequant_int8(table, indices, scale, zero_point, *, fp16_subnormal="keep"):
    """y = fp16(fp16(half(q) - zp) * scale) per gathered row; shape indices.shape + (E,), numpy float16.

    ``scale`` / ``zero_point`` are numpy float16 (or their uint16 bit views), shape (V,) or (V, 1).
    """
    if fp16_subnormal not in ("keep", "flush"):
        raise ValueError(f"fp16_subnormal={fp16_subnormal!r}; use 'keep' or 'flush'")
    table = np.asarray(table)
    indices = np.asarray(indices)
    s_all = np.asarray(scale).reshape(-1)
    z_all = np.asarray(zero_point).reshape(-1)
    if s_all.dtype == np.uint16:
        s_all = s_all.view(np.float16)
    if z_all.dtype == np.uint16:
        z_all = z_all.view(np.float16)
    flush = _flush if fp16_subnormal == "flush" else (lambda h: h)

    idx = indices.reshape(-1).astype(np.int64)
    emb = table.shape[-1]
    q = table[idx].astype(np.float16)               # uint8 -> half is exact for 0..255
    z = flush(z_all[idx])[:, None]
    s = flush(s_all[idx])[:, None]
    d = flush(q - z)                                # rounding 1 (the device's Adds of -zp)
    y = flush(d * s)                                # rounding 2 (Muls)
    return y.reshape(indices.shape + (emb,))


def quantize_embedding(weight):
    """Per-row asymmetric uint8 quantisation of docs/ops/gather_dequant_int8.md §2.2 -> (q uint8 [V, E], scale f16 [V],
    zero_point f16 [V]).

    In float64: scale = (max - min) / 255 (0 -> 1e-8), zp = -min / scale, q = clip(rint(w / scale + zp), 0, 255).
    """
    w = np.asarray(weight).astype(np.float64)
    vmin = w.min(axis=1)
    vmax = w.max(axis=1)
    scale = (vmax - vmin) / 255.0
    scale[scale == 0] = 1e-8
    zp = -vmin / scale
    q = np.clip(np.round(w / scale[:, None] + zp[:, None]), 0, 255).astype(np.uint8)
    return q, scale.astype(np.float16), zp.astype(np.float16)


def make_case(vocab=VOCAB, emb_dim=EMB_DIM, num_indices=NUM_INDICES, seed=SEED, *, indices_shape=None):
    """Inputs as gen_data.py draws them: seed, W = randn(V, E) as float32 times 0.1, quantise, indices randint.

    ``indices_shape`` defaults to (1, num_indices) as in the sample. Returns a dict table / indices / scale /
    zero_point (numpy uint8, int32, float16, float16).
    """
    shape = (1, int(num_indices)) if indices_shape is None else tuple(int(d) for d in indices_shape)
    np.random.seed(seed)
    weight = np.random.randn(vocab, emb_dim).astype(np.float32) * np.float32(0.1)
    table, scale, zero_point = quantize_embedding(weight)
    indices = np.random.randint(0, vocab, size=shape).astype(np.int32)
    return {"table": table, "indices": indices, "scale": scale, "zero_point": zero_point}


def golden_case(vocab=VOCAB, emb_dim=EMB_DIM, num_indices=NUM_INDICES, seed=SEED, *, fp16_subnormal="keep"):
    """``make_case`` plus its expected ``output`` (the five files of gen_data.py, in its order)."""
    case = make_case(vocab, emb_dim, num_indices, seed)
    case["output"] = gather_dequant_int8(case["table"], case["indices"], case["scale"], case["zero_point"],
                                         fp16_subnormal=fp16_subnormal)
    return case
