"""The ``npu-emu demo`` case of AscendQuantV2 (declared in op.py): a production shape and a small one, the
user-facing call (vLLM-Ascend's W8A8 static activation quantization), the independent golden, compared bit for
bit."""

import numpy as np

from npu_emu.frontend.cases import Case, bf16 as _bf16, demo_collector, same_bits as _same_bits
from npu_emu.frontend.cases import public as _ops

CASES, builder = demo_collector()


@builder("ascend_quant", (8192, 7168), (256, 7168),
         "rows x n: bf16 static int8 quant, per-channel scale and offset (npu_quantize, div_mode=False)", tiny=(4, 64))
def _ascend_quant(dims, rng):
    from npu_emu.kernels.ascend_quant import golden

    rows, n = dims
    fn = _ops("npu_quantize")
    x = _bf16(rng.standard_normal((rows, n), dtype=np.float32) * 4)
    s = _bf16(rng.random(n, dtype=np.float32) + np.float32(0.5))
    o = _bf16(rng.standard_normal(n, dtype=np.float32))
    return Case("AscendQuantV2", f"[{rows},{n}] bf16->int8", lambda: fn(x, s, o, 1, -1, False),
                lambda: golden.ascend_quant(x, s, o), _same_bits, rows * n * 3 + n * 4)
