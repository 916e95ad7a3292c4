"""The ``npu-emu demo`` case of DequantSwigluQuant (declared in op.py): the W8A8 MoE shape (int32 matmul output,
8 experts, per-token activation scale, left half activated, dynamic quant), the user-facing call, the independent
golden, compared bit for bit (int8 codes and the float32 scale bits)."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits as _same_bits
from npu_emu.frontend.cases import public as _ops

CASES, builder = demo_collector()


def _same(result, expected):
    return all(_same_bits(np.asarray(a), b) for a, b in zip(result, expected))


@builder("dequant_swiglu_quant", (8192, 4096, 8), (64, 256, 4),
         "tokens x 2H x experts: int32 -> dequant -> SwiGLU -> int8 (npu_dequant_swiglu_quant)", tiny=(8, 128, 2))
def _dsq(dims, rng):
    from npu_emu.kernels.dequant_swiglu_quant import golden

    T, D, E = dims
    fn = _ops("npu_dequant_swiglu_quant")
    x = rng.integers(-20000, 20000, (T, D), dtype=np.int32)
    ws = (rng.random((E, D), dtype=np.float32) * 1e-3 + 1e-5).astype(np.float32)
    asc = (rng.random(T, dtype=np.float32) * 0.02 + 1e-3).astype(np.float32)
    cuts = np.sort(rng.choice(np.arange(1, T), E - 1, replace=False))
    gi = np.diff(np.concatenate([[0], cuts, [T]])).astype(np.int64)
    kw = dict(weight_scale=ws, activation_scale=asc, group_index=gi, activate_left=True, quant_mode=1)
    return Case("DequantSwigluQuant", f"[{T},{D}] int32 g={E}", lambda: fn(x, **kw),
                lambda: golden.dequant_swiglu_quant(x, ws, asc, group_index=gi, activate_left=True, quant_mode=1),
                _same, T * D * 4 + T * D // 2 + 8 * T)
