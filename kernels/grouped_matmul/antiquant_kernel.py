"""Device code of the GroupedMatmul antiquant weight prologue (beside ``hicann/ops-transformer:
gmm/grouped_matmul/op_kernel/grouped_matmul_antiquant.h`` ``GMMAntiquantCompute::CastWeightProcess`` /
``CastWeightCompute``, which call ``AscendAntiQuant<int8_t / int4b_t, half / bfloat16_t>`` of
``cannmirror/asc-devkit: impl/adv_api/detail/quantization/antiquant/ascend_antiquant_c220_impl.h`` and
``ascend_antiquant_impl.h``).

Every weight row of N values (one k of one expert) becomes the x-dtype weight the cube reads from the workspace:

* half out (``AntiQuantInnerLoopF16`` / the performance path): Cast int8 -> half (exact), Add the half offset, Mul
  the half scale, each a half vector operation (one RNE rounding each);
* bf16 out (``AntiQuantInnerLoop`` / ``CalculationMax`` / ``CalcN64ByBrcb``, the same steps in each): Cast int8 ->
  half -> float (exact), Add the offset widened to float, Mul the scale widened to float (float32 operations),
  Cast float -> bf16 with CAST_RINT.

int4 weights arrive sign-extended in int8 (their half values are the same). The split of the cast over cores
(``CastWeightConfig``, the antiquantPerformance rounds) is not reproduced: each element is computed alone, so the
split decides who computes it, never its value.
"""

import numpy as np
from numba import prange

from npu_emu.ascendc.cast import Cast
from npu_emu.ascendc.constants import CAST_NONE, CAST_RINT, DT_BF16, DT_FLOAT, DT_FLOAT16, DT_INT8
from npu_emu.ascendc.vector import Add, Mul
from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.specialize import const, njit

BF16 = const("BF16")          # 1: bf16 x (float32 arithmetic), 0: half x (half arithmetic)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def antiquant_weight_kernel(w8, scale, offset, k, group_size, out):
    """w8 (E*K, N) int8 values; scale / offset (E*G, N) uint16 bits of x's dtype, G = K / group_size parameter rows
    per expert; out (E*K, N) uint16 bits of x's dtype."""
    rows, n = w8.shape
    groups = k // group_size
    for r in prange(rows):
        e = r // k
        p = e * groups + (r % k) // group_size
        if BF16 == 1:
            h = np.empty(n, np.uint16)
            f = np.empty(n, np.float32)
            t = np.empty(n, np.float32)
            Cast(h, w8[r], CAST_NONE, n, DT_FLOAT16, DT_INT8)
            Cast(f, h, CAST_NONE, n, DT_FLOAT, DT_FLOAT16)
            Cast(t, offset[p], CAST_NONE, n, DT_FLOAT, DT_BF16)
            Add(f, f, t, n)
            Cast(t, scale[p], CAST_NONE, n, DT_FLOAT, DT_BF16)
            Mul(f, f, t, n)
            Cast(out[r], f, CAST_RINT, n, DT_BF16, DT_FLOAT)
        else:
            h = np.empty(n, np.uint16)
            Cast(h, w8[r], CAST_NONE, n, DT_FLOAT16, DT_INT8)
            Add(h, h, offset[p], n, DT_FLOAT16)
            Mul(out[r], h, scale[p], n, DT_FLOAT16)
