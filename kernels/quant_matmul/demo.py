"""The ``npu-emu demo`` cases of the quantised matmul (declared in op.py): a production shape and a small one, the user-facing
call, the independent golden, and how their bits are compared."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits as _same_bits, same_float as _same_float  # noqa: F401
from npu_emu.frontend.cases import public as _ops  # noqa: E402

CASES, builder = demo_collector()


def _golden(_name):
    from npu_emu.kernels.quant_matmul import golden

    return golden

_INT8_SAMPLE_ROWS = 64        # int64 numpy golden: fast enough for whole rows
_FLOAT_SAMPLE = (4, 32)       # Fraction golden of the exact float models: rows, columns


def _qmm():
    fn = _ops("npu_quant_matmul")
    return fn, _golden("quant_matmul")


def _int8_case(dims, rng, mode):
    m, k, n = dims
    fn, g = _qmm()
    x1 = rng.integers(-128, 128, (m, k), dtype=np.int8)
    x2 = rng.integers(-128, 128, (k, n), dtype=np.int8)
    s = rng.uniform(0.0005, 0.005, n).astype(np.float32)
    r = min(m, _INT8_SAMPLE_ROWS)
    if mode == "K-C":
        p1 = rng.uniform(0.5, 2.0, m).astype(np.float32)
        run = lambda: fn(x1, x2, s, pertoken_scale=p1, output_dtype="bfloat16")
        gold = lambda: g.quant_matmul(x1[:r], x2, s, x1_scale=p1[:r], x1_dtype="int8", x2_dtype="int8",
                                      scale_dtype="float32", out_dtype="bfloat16")
        label, out_bytes = "QuantMatmul int8 K-C bf16", 2
    else:
        # npu_quant_matmul packs a float32 scale into the UINT64 word itself (FP19), as torch_npu does
        run = lambda: fn(x1, x2, s, output_dtype="float16")
        gold = lambda: g.quant_matmul(x1[:r], x2, g.trans_quant_param(s), x1_dtype="int8", x2_dtype="int8",
                                      scale_dtype="uint64", out_dtype="float16")
        label, out_bytes = "QuantMatmul int8 T-C fp16", 2
    return Case(label, f"{m}x{k}x{n}", run, gold, lambda got, want: _same_bits(np.asarray(got)[:r], want),
                m * k + k * n + out_bytes * m * n + 4 * (m + n), flops=2 * m * k * n, peak="int8_peak_ops",
                golden_fraction=r / m)


@builder("quant_matmul_int8_kc_bf16", (4096, 4096, 4096), (256, 512, 512),
         "m x k x n: int8, per-token x per-channel float32 scales -> bf16 (npu_quant_matmul)", tiny=(8, 64, 16))
def _qmm_kc(dims, rng):
    return _int8_case(dims, rng, "K-C")


@builder("quant_matmul_int8_tc_fp16", (4096, 4096, 4096), (256, 512, 512),
         "m x k x n: int8, per-channel scale packed to UINT64 -> fp16 (npu_quant_matmul)", tiny=(8, 64, 16))
def _qmm_tc(dims, rng):
    return _int8_case(dims, rng, "T-C")


def _sub(got, r, c):
    return np.asarray(got)[:r, :c]


@builder("quant_matmul_fp8_kc_bf16", (4096, 4096, 4096), (128, 512, 256),
         "m x k x n: fp8 e4m3fn on ascend950pr, float_accum='exact' -> bf16 (npu_quant_matmul)", tiny=(4, 64, 8))
def _qmm_fp8(dims, rng):
    import ml_dtypes

    m, k, n = dims
    fn, g = _qmm()
    e4m3 = ml_dtypes.float8_e4m3fn
    x1 = rng.standard_normal((m, k), np.float32).astype(e4m3)
    x2 = rng.standard_normal((k, n), np.float32).astype(e4m3)
    s = rng.uniform(0.01, 0.1, n).astype(np.float32)
    p1 = rng.uniform(0.5, 2.0, m).astype(np.float32)
    r, c = min(m, _FLOAT_SAMPLE[0]), min(n, _FLOAT_SAMPLE[1])
    return Case("QuantMatmul fp8 K-C bf16", f"{m}x{k}x{n}",
                lambda: fn(x1, x2, s, pertoken_scale=p1, output_dtype="bfloat16", soc="ascend950pr"),
                lambda: g.quant_matmul(x1[:r], x2[:, :c], s[:c], x1_scale=p1[:r], x1_dtype="float8_e4m3fn",
                                       x2_dtype="float8_e4m3fn", scale_dtype="float32", out_dtype="bfloat16"),
                lambda got, want: _same_bits(_sub(got, r, c), want),
                m * k + k * n + 2 * m * n + 4 * (m + n), flops=2 * m * k * n, peak="fp8_peak_flops",
                device="ascend950pr", golden_fraction=(r * c) / (m * n))


@builder("quant_matmul_mxfp8_bf16", (4096, 4096, 4096), (128, 512, 256),
         "m x k x n: MXFP8 e4m3fn with E8M0 scales per 32 on ascend950pr -> bf16 (npu_quant_matmul)", tiny=(4, 64, 8))
def _qmm_mx(dims, rng):
    import ml_dtypes

    m, k, n = dims
    if k % 64:
        raise ValueError(f"the MX demo case needs k % 64 == 0 (got k={k})")
    fn, g = _qmm()
    e4m3 = ml_dtypes.float8_e4m3fn
    x1 = rng.standard_normal((m, k), np.float32).astype(e4m3)
    x2t = rng.standard_normal((n, k), np.float32).astype(e4m3)      # weight stored (n, k), as the MX quantizers give
    s2 = rng.integers(120, 130, (n, k // 64, 2)).astype(np.uint8)
    s1 = rng.integers(120, 130, (m, k // 64, 2)).astype(np.uint8)
    r, c = min(m, _FLOAT_SAMPLE[0]), min(n, _FLOAT_SAMPLE[1])
    e1 = s1.reshape(m, k // 32)                                      # pairs are consecutive k-groups
    e2 = s2.reshape(n, k // 32).T
    return Case("QuantMatmul MXFP8 bf16", f"{m}x{k}x{n}",
                lambda: fn(x1, x2t.T, s2, pertoken_scale=s1, scale_dtype="float8_e8m0",
                           pertoken_scale_dtype="float8_e8m0", group_sizes=[1, 1, 32], output_dtype="bfloat16",
                           soc="ascend950pr"),
                lambda: g.quant_matmul(x1[:r], x2t[:c].T, e2[:, :c], x1_scale=e1[:r], x1_dtype="float8_e4m3fn",
                                       x2_dtype="float8_e4m3fn", scale_dtype="float8_e8m0", out_dtype="bfloat16"),
                lambda got, want: _same_bits(_sub(got, r, c), want),
                m * k + k * n + 2 * m * n + (m + n) * k // 32, flops=2 * m * k * n, peak="fp8_peak_flops",
                device="ascend950pr", golden_fraction=(r * c) / (m * n))
