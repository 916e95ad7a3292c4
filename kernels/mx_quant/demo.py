"""The ``npu-emu demo`` cases of DynamicMxQuant and GroupedDynamicMxQuant (declared in op.py): a production shape and a small one, the user-facing
call, the independent golden, and how their bits are compared."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits as _same_bits, same_float as _same_float  # noqa: F401
from npu_emu.frontend.cases import public as _ops  # noqa: E402

CASES, builder = demo_collector()


def _golden(_name):
    from npu_emu.kernels.mx_quant import golden

    return golden

def _bf16_normal(rng, shape):
    import ml_dtypes

    return rng.standard_normal(shape, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _mx_same(got, want):
    (y, s), (gy, gs) = got, want
    return _same_bits(np.asarray(y), gy) and _same_bits(np.asarray(s), gs)


@builder("grouped_dynamic_mx_quant", (16384, 7168, 8), (1024, 512, 4),
         "m x n x groups: bf16 -> MXFP8 e4m3fn (npu_grouped_dynamic_mx_quant)", tiny=(128, 64, 2))
def _grouped_mx(dims, rng):
    m, n, groups = dims
    fn = _ops("npu_grouped_dynamic_mx_quant")
    g = _golden("mx_quant")
    x = _bf16_normal(rng, (m, n))
    cuts = np.sort(rng.choice(np.arange(1, m), groups - 1, replace=False)) if groups > 1 else np.array([], int)
    gi = np.append(cuts, m).astype(np.int32)
    rows = m // 64 + groups
    return Case("GroupedDynamicMxQuant e4m3", f"[{m},{n}] bf16 g={groups}",
                lambda: fn(x, gi, dst_type=24), lambda: g.grouped_dynamic_mx_quant(x, gi, dst_type="float8_e4m3fn"),
                _mx_same, 3 * m * n + 2 * rows * n + 4 * groups, device="ascend950pr")


def _dynamic_mx(dims, rng, dst_type, fmt, label):
    m, n = dims
    fn = _ops("npu_dynamic_mx_quant")
    g = _golden("mx_quant")
    x = _bf16_normal(rng, (m, n))
    y_bytes = m * n // 2 if fmt.startswith("float4") else m * n
    return Case(f"DynamicMxQuant {label}", f"[{m},{n}] bf16",
                lambda: fn(x, axis=-1, dst_type=dst_type), lambda: g.dynamic_mx_quant(x, axis=-1, dst_type=fmt),
                _mx_same, 2 * m * n + y_bytes + m * -(-n // 32), device="ascend950pr")


@builder("dynamic_mx_quant_fp8", (8192, 7168), (512, 1024), "m x n: bf16 -> MXFP8 e4m3fn along axis -1", tiny=(4, 64))
def _dynamic_fp8(dims, rng):
    return _dynamic_mx(dims, rng, 24, "float8_e4m3fn", "e4m3")


@builder("dynamic_mx_quant_fp4", (8192, 7168), (512, 1024), "m x n: bf16 -> MXFP4 e2m1 along axis -1", tiny=(4, 64))
def _dynamic_fp4(dims, rng):
    return _dynamic_mx(dims, rng, 296, "float4_e2m1", "fp4 e2m1")
