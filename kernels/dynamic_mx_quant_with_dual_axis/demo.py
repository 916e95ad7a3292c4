"""The ``npu-emu demo`` case of DynamicMxQuantWithDualAxis (declared in op.py): MindSpeed's MXFP8 operand shape and
a small one, the user-facing call, the independent golden, and how their bits are compared."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits
from npu_emu.frontend.cases import public as _ops

CASES, builder = demo_collector()


def _same(got, want):
    return len(got) == len(want) == 4 and all(same_bits(np.asarray(g), w) for g, w in zip(got, want))


@builder("dynamic_mx_quant_with_dual_axis", (8192, 7168), (96, 320),
         "m x n: bf16 -> MXFP8 e4m3fn along axes -1 and -2 at once (npu_dynamic_mx_quant_with_dual_axis)",
         tiny=(64, 256))
def _dual(dims, rng):
    import ml_dtypes

    from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import golden

    m, n = dims
    fn = _ops("npu_dynamic_mx_quant_with_dual_axis")
    x = rng.standard_normal((m, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    s1 = m * -(-n // 64) * 2
    s2 = -(-m // 64) * n * 2
    return Case("DynamicMxQuantWithDualAxis e4m3", f"[{m},{n}] bf16",
                lambda: fn(x, dst_type=24), lambda: golden.dual_axis_quant(x, "float8_e4m3fn"),
                _same, 2 * m * n + 2 * m * n + s1 + s2, device="ascend950pr")
