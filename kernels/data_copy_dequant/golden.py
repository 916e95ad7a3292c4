"""Plain-numpy reference for the enhanced DataCopy CO1 -> CO2 with dequantisation.

Written from the op page alone (docs/ops/data_copy_dequant.md §3 bit fields, §4 per-element arithmetic, §5 geometry),
vectorised with int64 / float32 / float64 numpy and numpy float16 for the half cast. It deliberately shares no code with
the njit implementation (npu_emu.ascendc.deq*) or the njit codecs (npu_emu.dtypes.scalar): tests compare the two.

Every function takes the data_copy_deq switches as keywords with the documented defaults (docs/conventions.md §3.1).
"""

import numpy as np

SWITCH_DEFAULTS = {
    "mcb_shift": "n_plus_1",
    "mcb_shift_rounding": "floor",
    "mcb_saturate": "int16",
    "clamp9": True,
    "relu_mode": "input_sign",
    "offset_signed": True,
    "m_truncate": True,
    "deq_mul": "f32",
    "deq8_round": "rne",
    "deq16_overflow": "saturate",
}

GEOMETRY_DEFAULTS = {"sid0_half": "low", "vector_src_layout": "slot"}


def _switches(kw):
    unknown = set(kw) - set(SWITCH_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown switch(es) {sorted(unknown)}")
    sw = dict(SWITCH_DEFAULTS)
    sw.update(kw)
    return sw


def decode_words(words, *, mcb_shift="n_plus_1", offset_signed=True, m_truncate=True):
    """Fields of 64-bit deq words (§3.1) as arrays: m (float32), shift (MCB path), shift_s16, mcb, offset, sign,
    relu."""
    w = np.asarray(words, dtype=np.uint64)
    m_bits = (w & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    if m_truncate:
        m_bits = m_bits & np.uint32(0xFFFFE000)
    n = ((w >> np.uint64(32)) & np.uint64(0xF)).astype(np.int64)
    off = ((w >> np.uint64(37)) & np.uint64(0x1FF)).astype(np.int64)
    if offset_signed:
        off = np.where(off >= 256, off - 512, off)
    return {
        "m": m_bits.view(np.float32),
        "shift": n + 1 if mcb_shift == "n_plus_1" else n,
        "shift_s16": n + 1,  # DEQS16 always shifts by N + 1 (hardware-verified; mcb_shift does not apply)
        "mcb": ((w >> np.uint64(36)) & np.uint64(1)).astype(bool),
        "offset": off,
        "sign": ((w >> np.uint64(46)) & np.uint64(1)).astype(bool),
        "relu": ((w >> np.uint64(47)) & np.uint64(1)).astype(bool),
    }


def _shifted(x, shift, sw):
    """The MCB stage: x >> shift (floor or toward zero), narrowed to int16 (saturate or wrap)."""
    if sw["mcb_shift_rounding"] == "floor":
        t = x >> shift
    else:
        t = np.where(x < 0, -((-x) >> shift), x >> shift)
    if sw["mcb_saturate"] == "int16":
        return np.clip(t, -32768, 32767)
    return (t & 0xFFFF) - ((t & 0x8000) << 1)


def _scaled(x, f, words_f, relu, sw):
    """p = f32(t) * M' as float64 (the f32 product, or the exact one), with the pre-offset ReLU variants."""
    m = words_f["m"]
    if sw["deq_mul"] == "f32":
        p = (f * m).astype(np.float32).astype(np.float64)
    else:
        p = f.astype(np.float64) * m.astype(np.float64)
    if sw["relu_mode"] == "input_sign":
        p = np.where(relu & (x < 0), 0.0, p)
    elif sw["relu_mode"] == "scaled":
        p = np.where(relu & (p < 0), 0.0, p)
    return p


def _int_to_f32(x, words_f, sw):
    x = np.asarray(x, dtype=np.int64)
    t = np.where(words_f["mcb"], _shifted(x, words_f["shift"], sw), x)
    return x, t.astype(np.float32)


def deq8(x, words, relu, **switches):
    """DEQ8 / VDEQ8 (§4): int32 -> int8/uint8 values (int64 array). ``words`` broadcasts against ``x``."""
    sw = _switches(switches)
    wf = decode_words(words, mcb_shift=sw["mcb_shift"], offset_signed=sw["offset_signed"],
                      m_truncate=sw["m_truncate"])
    relu = np.asarray(relu, dtype=bool)
    x, f = _int_to_f32(x, wf, sw)
    p = _scaled(x, f, wf, relu, sw)
    off = wf["offset"].astype(np.float64)
    if sw["clamp9"]:
        s = np.clip(p, -256.0, 255.0)
        post = off
    else:
        s = p + off
        if sw["deq_mul"] == "f32":  # the f32 datapath adds in float (C++ float + int)
            s = s.astype(np.float32).astype(np.float64)
        post = 0.0
    if sw["deq8_round"] == "rne":
        r = np.rint(s)
    else:
        r = np.sign(s) * np.floor(np.abs(s) + 0.5)
    q = r + post
    lo = np.where(wf["sign"], -128.0, 0.0)
    hi = np.where(wf["sign"], 127.0, 255.0)
    y = np.minimum(np.maximum(q, lo), hi).astype(np.int64)
    if sw["relu_mode"] == "final":
        y = np.where(relu, np.maximum(y, 0), y)
    return y


def deq16(x, words, relu, **switches):
    """DEQ16 / VDEQ16 (§4): int32 -> half, returned as uint16 bit patterns."""
    sw = _switches(switches)
    wf = decode_words(words, mcb_shift=sw["mcb_shift"], offset_signed=sw["offset_signed"],
                      m_truncate=sw["m_truncate"])
    relu = np.asarray(relu, dtype=bool)
    x, f = _int_to_f32(x, wf, sw)
    p = _scaled(x, f, wf, relu, sw)
    if sw["deq16_overflow"] == "saturate":
        p = np.clip(p, -65504.0, 65504.0)
    with np.errstate(over="ignore"):
        # f32 datapath: p is an exact float32 value; "exact": one rounding of the exact product to half
        h = np.asarray(p).astype(np.float16).view(np.uint16)
    if sw["relu_mode"] == "final":
        h = np.where(relu & ((h & 0x8000) != 0), np.uint16(0), h)
    return h.astype(np.uint16)


def deqs16(x, words, relu):
    """DEQS16 / VDEQS16 (§4): int32 -> int16 by an arithmetic shift of N + 1, saturated; ReLU clamps at 0."""
    wf = decode_words(words)
    x = np.asarray(x, dtype=np.int64)
    y = np.clip(x >> wf["shift_s16"], -32768, 32767)
    return np.where(np.asarray(relu, dtype=bool), np.maximum(y, 0), y).astype(np.int16)


def data_copy_dequant(acc, deq_value, *, mode="DEQ8", is_relu=False, **switches):
    """Whole-matrix reference of npu_emu.ops.data_copy_dequant: acc int32 (..., N) in ND order.

    Scalar deq_value: the register word is deq_value | (is_relu << 47) and its bit 47 drives ReLU.
    Array deq_value (N,): channel n uses entry n; ReLU comes from is_relu alone (entry bit 47 is ignored).
    """
    acc = np.asarray(acc, dtype=np.int64)
    dv = np.asarray(deq_value)
    if dv.ndim == 0:
        word = np.uint64(int(dv) | (int(bool(is_relu)) << 47))
        words = np.full(acc.shape[-1:], word, dtype=np.uint64)
        relu = bool((int(word) >> 47) & 1)
    else:
        words = dv.astype(np.uint64)
        relu = bool(is_relu)
    if mode == "DEQ8":
        y = deq8(acc, words, relu, **switches)
        return y.astype(np.int8 if (int(words.flat[0]) >> 46) & 1 else np.uint8)
    if mode == "DEQ16":
        return deq16(acc, words, relu, **switches).view(np.float16)
    if mode == "DEQS16":
        return deqs16(acc, words, relu)
    raise ValueError(f"mode {mode!r}")


# ---- geometry (docs/ops/data_copy_dequant.md §5.2) ----------------------------------------------------------------

def l0c_to_ub(dst_ub, dst_addr, src_l0c, src_addr, src_dtype, dst_dtype, convert, *, block_count, block_len,
              src_stride, dst_stride, vector, sid=2, sid0_half="low", vector_src_layout="slot"):
    """Move elements per the §5.2 address formulas, element by element in Python.

    ``convert(x_values, cols, burst)`` maps the source values of one 16-wide row (numpy array, source dtype) to
    the destination values for columns ``cols`` (0..15) of burst ``burst``.
    Writes into ``dst_ub`` (uint8) in place and returns it. Small sizes only (tests).
    """
    s_size = np.dtype(src_dtype).itemsize
    d_size = np.dtype(dst_dtype).itemsize
    src_elems = src_l0c.view(np.uint8)
    dense8 = d_size != 1 or sid == 2
    h = sid if sid0_half == "low" else 1 - sid
    rows = 1 if vector else 16
    for b in range(block_count):
        for f in range(block_len):
            slot = b * (block_len + src_stride) + f
            if vector and vector_src_layout == "contiguous":
                src_base = src_addr + slot * 16 * s_size
            else:
                src_base = src_addr + slot * 256 * s_size
            for r in range(rows):
                start = src_base + 16 * r * s_size
                xs = src_elems[start:start + 16 * s_size].view(src_dtype)
                ys = np.asarray(convert(xs, np.arange(16), b)).astype(dst_dtype)
                yb = ys.view(np.uint8)
                for c in range(16):
                    if vector:
                        if dense8:
                            off = b * (block_len * 16 * d_size + dst_stride * 32) + f * 16 * d_size + c * d_size
                        else:
                            off = b * (block_len * 32 + dst_stride * 32) + f * 32 + 16 * h + c
                    else:
                        if dense8:
                            frac = 256 * d_size
                            off = b * (block_len * frac + dst_stride * 32) + f * frac + (16 * r + c) * d_size
                        else:
                            off = b * (block_len * 512 + dst_stride * 32) + f * 512 + 32 * r + 16 * h + c
                    a = dst_addr + off
                    dst_ub[a:a + d_size] = yb[c * d_size:(c + 1) * d_size]
    return dst_ub
