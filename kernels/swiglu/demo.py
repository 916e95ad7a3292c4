"""The ``npu-emu demo`` case of SwiGlu (declared in op.py): a production shape and a small one, the user-facing call,
the independent golden, compared bit for bit."""

import numpy as np

from npu_emu.frontend.cases import Case, bf16 as _bf16, demo_collector, same_bits as _same_bits
from npu_emu.frontend.cases import public as _ops

CASES, builder = demo_collector()


@builder("swiglu", (8192, 8192), (64, 256), "rows x 2H: bf16 SwiGLU, Swish(A) * B (npu_swiglu)", tiny=(4, 64))
def _swiglu(dims, rng):
    from npu_emu.kernels.swiglu import golden

    rows, n = dims
    fn = _ops("npu_swiglu")
    x = _bf16(rng.standard_normal((rows, n), dtype=np.float32) * 4)
    return Case("SwiGlu", f"[{rows},{n}] bf16", lambda: fn(x), lambda: golden.swiglu(x), _same_bits,
                rows * n * 3)
