"""What the element-loop proofs share (test_mx_fast.py, test_mx_half.py; the module ``mx_refs``, registered by
tests/conftest.py): the reciprocals the scale rules produce and the per-element reference."""

import numpy as np
from numba import njit

from npu_emu.device.read_only import read_only
from npu_emu.dtypes.scalar import CAST_RINT
from npu_emu.kernels.mx_quant import kernel as K, launch as L

# BF16 bits of every reciprocal _scale returns: 2^(127 - code) for codes 0..253 (code 0 gives 2^127: legacy tiny
# blocks, RCEIL code 0), 2^-127 for code 254, NaN for code 255, and 0 for flushed blocks
RECIPS = np.array([0x7F00 - (c << 7) for c in range(254)] + [0x0040, 0x7F81, 0x0000], np.uint16)
RECIPS_F32 = (RECIPS.astype(np.uint32) << 16).view(np.float32)
DSTS = (K.D_E4M3, K.D_E5M2, K.D_E2M1, K.D_E1M2)

_REFERENCES = {}


def sweep_layout(dst, per_col):
    """Every 16-bit pattern laid out as 256 column blocks x 256 rows (``per_col``) or as 2048 runs of one 32-element
    block: (patterns, rows, cols, y row stride in bytes, two output buffers). The patterns are read-only, as a
    kernel's x is (npu_emu.device.read_only): the loops are then the compiled copies the kernels call."""
    xs = read_only(np.arange(1 << 16, dtype=np.uint16))
    cols = 256 if per_col else 32
    fp4 = dst >= K.D_E2M1
    ybytes = xs.size // 2 if fp4 else xs.size
    return xs, xs.size // cols, cols, cols // 2 if fp4 else cols, np.empty(ybytes, np.uint8), np.empty(ybytes, np.uint8)


def reference(xs, recips, rrs, rcs, rows, cols, dst, xk, bf16_mul, ys):
    """_convert's per-element branch (kernel._enc_one, the path ``faithful=True`` takes) for input kind ``xk``
    (an X_* constant), RINT, no switches, FP4 low nibble first: element (r, j) of xs [rows, cols] with reciprocal
    recips[r * rrs + j * rcs]."""
    if (dst, xk) not in _REFERENCES:
        enc = L.device(dst, K.M_ELEMENT)._enc_one
        fp4 = dst >= K.D_E2M1

        @njit(error_model="numpy")
        def ref(xs, recips, rrs, rcs, rows, cols, bf16_mul, ys):
            for r in range(rows):
                for j in range(cols):
                    # typed as the kernels call it (int64 and bool, not literals): they share one compiled _enc_one
                    c = enc(np.int64(xs[r * cols + j]), np.int64(xk), recips[r * rrs + j * rcs], np.int64(CAST_RINT),
                            np.bool_(False), bf16_mul, np.bool_(True))
                    if fp4:
                        k = (r * cols + j) // 2
                        ys[k] = c if j % 2 == 0 else ys[k] | (c << 4)
                    else:
                        ys[r * cols + j] = c

        _REFERENCES[dst, xk] = ref
    _REFERENCES[dst, xk](xs, recips, rrs, rcs, rows, cols, bf16_mul, ys)
