"""The ``npu-emu demo`` cases of SignBitsUnpack / SignBitsPack (declared in op.py): a production shape and a small one, the user-facing
call, the independent golden, and how their bits are compared."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits as _same_bits, same_float as _same_float  # noqa: F401
from npu_emu.frontend.cases import public as _ops  # noqa: E402

CASES, builder = demo_collector()


def _golden(_name):
    from npu_emu.kernels.sign_bits import golden

    return golden

@builder("sign_bits_unpack", (64 << 20,), (1 << 20,), "uint8 -> float32 +-1 (npu_sign_bits_unpack)", tiny=(64,))
def _sign_bits_unpack(dims, rng):
    (n,) = dims
    fn = _ops("npu_sign_bits_unpack")
    g = _golden("sign_bits")
    x = rng.integers(0, 256, n, dtype=np.uint8)
    return Case("SignBitsUnpack f32", f"[{n}] u8", lambda: fn(x, 1, 0), lambda: g.sign_bits_unpack(x, 1, "float32"),
                _same_bits, n + 32 * n)


@builder("sign_bits_pack", (512 << 20,), (8 << 20,), "float32 signs -> packed uint8 (npu_sign_bits_pack)", tiny=(256,))
def _sign_bits_pack(dims, rng):
    (n,) = dims
    fn = _ops("npu_sign_bits_pack")
    g = _golden("sign_bits")
    x = rng.standard_normal(n, dtype=np.float32)
    return Case("SignBitsPack f32", f"[{n}] f32", lambda: fn(x, 1), lambda: g.sign_bits_pack(x, 1),
                _same_bits, 4 * n + -(-n // 8))
