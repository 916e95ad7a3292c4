"""Plain-numpy references for SignBitsUnpack / SignBitsPack, written from
docs/ops/sign_bits.md §1a, §2.1, §3.1, §3.9.

Never calls the kernels: np.unpackbits / np.packbits and value comparisons only.
"""

import numpy as np


def sign_bits_unpack(x, size, dtype="float32"):
    """y.flat[8j+k] = +1 if bit k of x[j] else -1 (LSB first), shape (size, 8N/size)."""
    bits = np.unpackbits(np.asarray(x, np.uint8), bitorder="little")
    y = np.where(bits == 1, 1.0, -1.0).astype(np.float16 if dtype == "float16" else np.float32)
    return y.reshape(size, -1)


def sign_bits_pack(x, size, *, nan_bit=0, denormal_compare="ieee", soc="ascend910b2"):
    """910B: bit = (x >= 0) LSB first, missing tail elements act as -1.0.  950: bit = (x < 0) MSB first."""
    x = np.asarray(x)
    v = x.astype(np.float64)
    if denormal_compare == "ftz":
        tiny = np.finfo(x.dtype).tiny
        v = np.where(np.abs(v) < tiny, np.copysign(0.0, v), v)
    msb_first = str(soc).lower().startswith("ascend950")
    with np.errstate(invalid="ignore"):
        bits = (v < 0) if msb_first else (v >= 0)
    bits = np.where(np.isnan(v), bool(nan_bit), bits)
    pad = (-len(bits)) % 8
    bits = np.concatenate([bits, np.full(pad, msb_first, bool)])   # -1.0 padding: 910B bit 0, 950 bit 1
    packed = np.packbits(bits, bitorder="big" if msb_first else "little")
    return packed.reshape(size, -1)
