"""The T-CG weight prologue of QuantBatchMatmulV4 (docs/ops/quant_matmul.md §7.6): AntiquantW4Pergroup32NK / ...KN
on the AIVs, which dequantise the fp4 weight group by group into x1's fp8 format before the fp8 cube.

Specialised like kernel.py (npu_emu.device.specialize): the scale's format (``SCALE_F16``: float16, else bfloat16)
and the weight's target format (``E5M2``: FLOAT8_E5M2, else FLOAT8_E4M3FN) are constants of each copy, which the
launcher loads with :func:`device`, so a call compiles one scale product and one encoder (cold T-CG call: the
kernel compiled both products and both encoders).
"""

import numpy as np
from numba import prange

from npu_emu.device.jit_options import PARALLEL
from npu_emu.device.specialize import const, load, njit
from npu_emu.dtypes import scalar
from npu_emu.kernels.quant_matmul.kernel import _cdiv

SCALE_F16 = const("SCALE_F16")      # None in a plain import: no kernel of it may compile
E5M2 = const("E5M2")

# cfg of tcg_weight_kernel
TCG_G, TCG_RMODE, TCG_SAT, TCG_FP8_SAT, TCG_LEN = 0, 1, 2, 3, 4


def device(scale_f16, e5m2):
    """This module specialised for a float16 (else bfloat16) group scale and an E5M2 (else E4M3FN) x1."""
    return load(__name__.split("[")[0], SCALE_F16=int(bool(scale_f16)), E5M2=int(bool(e5m2)))


@njit(inline="always", cache=True, error_model="numpy")
def _tcg_weight(code, scale_bits, rmode, sat, fp8_sat):
    """One weight: fp4 -> bf16 (exact; -> fp16 exact too), times the group scale IN bf16/fp16 (the exact
    product rounded once), then Cast to xType, x1's format, with CAST_RINT (NO_SAT: overflow -> NaN in E4M3FN,
    ±Inf in E5M2; ``fp8_sat``: the largest finite value, NaN kept)."""
    w1 = scalar.decode_fp4_e2m1(code)
    if SCALE_F16 == 1:
        w2 = scalar.f16_to_f32(scalar.f32_to_f16(w1 * scalar.f16_to_f32(scale_bits), rmode, sat))
    else:
        w2 = scalar.bf16_to_f32(scalar.f32_to_bf16(w1 * scalar.bf16_to_f32(scale_bits), rmode, sat))
    if E5M2 == 1:
        return scalar.encode_e5m2(w2, fp8_sat, True)
    return scalar.encode_e4m3fn(w2, fp8_sat, True)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def tcg_weight_kernel(block_dim, td, ub_size, codes, scale_bits, w3, cfg):
    """Every core converts the columns of its n blocks (block j -> core j % blockDim) over all of k, group by
    group of 32.

    codes: fp4 codes of the logical (K, N) weight, flat uint8; scale_bits: (N, G) bf16/fp16 bits; w3: the codes
    of the dequantised weight in x1's format, flat (K, N)."""
    cube = td.matmulTiling
    n = cube.N
    k = cube.Ka
    base_n = cube.baseN
    g = cfg[TCG_G]
    rmode = cfg[TCG_RMODE]
    sat = cfg[TCG_SAT] != 0
    fp8_sat = cfg[TCG_FP8_SAT] != 0
    n_blocks = _cdiv(n, base_n)
    for core in prange(block_dim):
        for nb in range(np.int64(core), n_blocks, block_dim):
            c0 = nb * base_n
            c1 = min(n, c0 + base_n)
            for kk in range(k):
                grp = kk // 32
                base = kk * n
                for c in range(c0, c1):
                    w3[base + c] = _tcg_weight(codes[base + c], scale_bits[c * g + grp], rmode, sat, fp8_sat)
