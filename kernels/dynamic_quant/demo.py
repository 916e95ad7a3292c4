"""The ``npu-emu demo`` case of DynamicQuant (declared in op.py): a production shape and a small one, the user-facing
call, the independent golden (told the tiling key's scale formula), compared bit for bit."""

import numpy as np

from npu_emu.frontend.cases import Case, bf16 as _bf16, demo_collector, same_bits as _same_bits  # noqa: F401
from npu_emu.frontend.cases import public as _ops  # noqa: E402

CASES, builder = demo_collector()


def _same(result, expected):
    return all(_same_bits(a, b) for a, b in zip(result, expected))


@builder("dynamic_quant", (8192, 7168), (256, 7168), "rows x n: bf16 per-token dynamic int8 quant (npu_dynamic_quant)",
         tiny=(4, 256))
def _dynamic_quant(dims, rng):
    from npu_emu.kernels.dynamic_quant import golden, tiling

    rows, n = dims
    fn = _ops("npu_dynamic_quant")
    x = _bf16(rng.standard_normal((rows, n), dtype=np.float32))
    key = tiling.tiling(rows, n).tiling_key

    def ref():
        y, s, _ = golden.dynamic_quant(golden.widen(x.view(np.uint16), "bfloat16"),
                                       scale_formula=golden.key_formula(key))
        return y, s

    return Case("DynamicQuant", f"[{rows},{n}] bf16->int8", lambda: fn(x), ref, _same, rows * n * 3 + rows * 4)
