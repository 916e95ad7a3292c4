"""Device code of the GroupedMatmul A4W4 FixPipe stage (beside ``hicann/ops-transformer: gmm/grouped_matmul/op_kernel/
grouped_matmul_a4w4.h`` ``GMMA4W4Compute::MMComputePerChannel`` / ``MMComputePerGroup``; docs/ops/grouped_matmul.md
§14).

The cube's matmul object has an fp16 C type (``cT = half``): for every K group of a block the cube computes the int32
L0C sum over the group's quantGroupSize values of K, and the FixPipe writes it to the GM workspace through the
uint64 quant vector of that K group (``SetQuantVector``, VDEQF16: the fp32 scale of the word's bits 0..31 as the
FixPipe keeps it, t19). ``GetTensorC`` writes K group 0 plainly (``enAtomic`` 0) and adds every later K group onto
the workspace with the fp16 atomic add (``enAtomic`` 1), in ascending K order on the same core. Per element:

    h_0 = f16(f32(f32(acc_0) * t19(word[g, 0, n])))
    h   = f16(h + f16(f32(f32(acc_k) * t19(word[g, k, n]))))      for k = 1 .. G-1

(per channel: G = 1). The fp16 cast is RNE with overflow to inf, as quant_matmul's A8W4 MSD models the same FixPipe
cast (docs/ops/quant_matmul.md §7.7: ``v4_kernel._fixpipe_f16_add``, imported). K group 0 is written, not added, so
a -0 stays -0 (an atomic add onto a zeroed workspace would make it +0). Every element is computed alone here: which
core and which base block writes it decides nothing about its value.
"""

import numpy as np
from numba import prange

from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.specialize import njit
from npu_emu.dtypes import scalar
from npu_emu.kernels.quant_matmul.v4_kernel import _fixpipe_f16_add


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def fixpipe_group_kernel(part, scale, row_w, first, ws):
    """K group k of every computed row: ``ws[r, n]`` (fp16 bits) = the FixPipe's fp16 of ``part[r, n]`` (the int32
    L0C sum of the K group) times ``scale[row_w[r], n]`` (the t19 fp32 scales of K group k, one row per weight);
    written when ``first`` (K group 0), else added with the fp16 atomic add. ``row_w[r]`` < 0: a row of no group
    (not written)."""
    rows, n = part.shape
    for r in prange(rows):
        g = row_w[r]
        if g < 0:
            continue
        s = scale[g]
        if first:
            for j in range(n):
                ws[r, j] = scalar.f32_to_f16(np.float32(part[r, j]) * s[j], scalar.CAST_RINT, False)
        else:
            for j in range(n):
                ws[r, j] = _fixpipe_f16_add(ws[r, j], np.float32(part[r, j]) * s[j], scalar.CAST_RINT, False)
