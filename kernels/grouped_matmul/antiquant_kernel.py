"""Device code of the GroupedMatmul antiquant weight prologue (beside ``hicann/ops-transformer:
gmm/grouped_matmul/op_kernel/grouped_matmul_antiquant.h`` ``GMMAntiquantCompute::CastWeightProcess`` /
``CastWeightCompute``, which call ``AscendAntiQuant<int8_t / int4b_t, half / bfloat16_t>`` of
``cannmirror/asc-devkit: impl/adv_api/detail/quantization/antiquant/ascend_antiquant_c220_impl.h`` and
``ascend_antiquant_impl.h``).

Every weight row of N values (one k of one expert) becomes the x-dtype weight the cube reads from the workspace:

* half out (``AntiQuantInnerLoopF16`` / the performance path): Cast int8 -> half (exact), Add the half offset, Mul
  the half scale, each a half vector operation (one RNE rounding each);
* bf16 out (``AntiQuantInnerLoop`` / ``CalculationMax`` / ``CalcN64ByBrcb``, the same steps in each): Cast int8 ->
  half -> float (exact both times), Add the offset widened to float, Mul the scale widened to float (float32
  operations), Cast float -> bf16 with CAST_RINT.

int4 weights arrive sign-extended in int8 (their half values are the same). The split of the cast over cores
(``CastWeightConfig``, the antiquantPerformance rounds) is not reproduced: each element is computed alone, so the
split decides who computes it, never its value.
"""

import numpy as np

from npu_emu.ascendc.constants import CAST_RINT
from npu_emu.dtypes.scalar import bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16
from npu_emu.device.specialize import const, njit

BF16 = const("BF16")          # 1: bf16 x (float32 arithmetic), 0: half x (half arithmetic)


@njit(cache=True, error_model="numpy")
def antiquant_weight_kernel(w8, scale, offset, k, group_size, out):
    """w8 (E*K, N) int8 values; scale / offset (E*G, N) uint16 bits of x's dtype, G = K / group_size parameter rows
    per expert; out (E*K, N) uint16 bits of x's dtype.

    Per element, the instruction layer's element formulas (npu_emu.ascendc.vector / cast) written with the same
    codecs: a half Add / Mul is ``f32_to_f16(f16_to_f32(a) op f16_to_f32(b), CAST_RINT)`` (docs/codecs.md §3.2), a
    float Add / Mul the IEEE single operation, Cast float -> bf16 CAST_RINT ``f32_to_bf16``. Calling the
    instructions themselves costs 6.8 CPU-s of compile against about 2 here (one fused loop)."""
    rows, n = w8.shape
    groups = k // group_size
    for r in range(rows):
        p = (r // k) * groups + (r % k) // group_size
        for j in range(n):
            w = np.float32(w8[r, j])                       # int8 -> half -> float: exact
            if BF16 == 1:
                f = w + bf16_to_f32(offset[p, j])          # Add<float>
                f = f * bf16_to_f32(scale[p, j])           # Mul<float>
                out[r, j] = f32_to_bf16(f, CAST_RINT, False)
            else:
                h = f32_to_f16(w + f16_to_f32(offset[p, j]), CAST_RINT, False)          # Add<half>
                out[r, j] = f32_to_f16(f16_to_f32(h) * f16_to_f32(scale[p, j]), CAST_RINT, False)   # Mul<half>
