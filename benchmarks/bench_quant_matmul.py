"""npu_quant_matmul at LLM shapes (issue 7): int8 K-C -> bf16 and int8 T-C (packed uint64) -> fp16 at
M = N = K = 4096 and M = 4096, K = N = 7168; fp8 dynamic (K-C) and MX fp8 at 4096^3 (docs/ops/quant_matmul.md).

Baseline in the same run: numpy float32 ``matmul`` of the same shape (goal for the int8 paths: <= 2x its time,
bit-exact). Trackers (lower is better, asv's convention): emulator / numpy float32 matmul, and emulator / device
roofline (max(bytes / HBM bandwidth, ops / peak): int8 on the 910B2, fp8/MXFP8 on the 950PR;
docs/device/platforms.md §4).
"""

import timeit

import ml_dtypes
import numpy as np

from npu_emu.kernels.quant_matmul.api import npu_quant_matmul
from npu_emu.device.platforms import get as get_platform

SHAPES = ["4096x4096x4096", "4096x7168x7168"]     # M x K x N


def _best(fn, repeat=2):
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def _mkn(shape):
    m, k, n = (int(v) for v in shape.split("x"))
    return m, k, n


class Int8:
    params = (SHAPES, ["K-C bf16", "T-C u64 fp16"])
    param_names = ["shape", "mode"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, shape, mode):
        m, k, n = _mkn(shape)
        rng = np.random.default_rng(0)
        self.x1 = rng.integers(-128, 128, (m, k), dtype=np.int8)
        self.x2 = rng.integers(-128, 128, (k, n), dtype=np.int8)
        self.f1 = self.x1.astype(np.float32)
        self.f2 = self.x2.astype(np.float32)
        scale = rng.uniform(0.0005, 0.005, n).astype(np.float32)
        if mode.startswith("K-C"):
            self.kw = dict(pertoken_scale=rng.uniform(0.5, 2, m).astype(np.float32), output_dtype="bfloat16")
        else:
            self.kw = dict(output_dtype="float16")   # npu_quant_matmul packs the float32 scale into UINT64
        self.scale = scale
        self.ops = 2 * m * k * n
        self.bytes = m * k + k * n + 2 * m * n + 4 * (m + n)
        self.run()                                   # compile / load the numba cache outside the timing

    def run(self):
        return npu_quant_matmul(self.x1, self.x2, self.scale, **self.kw)

    def time_npu_emu(self, shape, mode):
        self.run()

    def time_numpy_f32_matmul(self, shape, mode):
        np.matmul(self.f1, self.f2)

    def track_ratio_to_numpy_f32_matmul(self, shape, mode):
        return _best(self.run) / _best(lambda: np.matmul(self.f1, self.f2))
    track_ratio_to_numpy_f32_matmul.unit = "x numpy float32 matmul"

    def track_emulator_over_910b2(self, shape, mode):
        dev = get_platform("ascend910b2").device_seconds(self.bytes, self.ops, peak="int8_peak_ops")
        return _best(self.run, 1) / dev
    track_emulator_over_910b2.unit = "x device roofline"


class Fp8:
    params = (["fp8 K-C bf16", "MX fp8 bf16"],)
    param_names = ["mode"]
    timeout = 1800
    number = 1
    repeat = (1, 2, 120.0)

    def setup(self, mode):
        m = k = n = 4096
        rng = np.random.default_rng(1)
        e4m3 = ml_dtypes.float8_e4m3fn
        self.x1 = rng.standard_normal((m, k), np.float32).astype(e4m3)
        self.f1 = self.x1.astype(np.float32)
        self.kw = dict(output_dtype="bfloat16", soc="ascend950pr")
        if mode.startswith("MX"):
            # x2 stored transposed (n, k) with scales (n, k/64, 2): the layout of the MX quantizers' output
            x2t = rng.standard_normal((n, k), np.float32).astype(e4m3)
            self.x2 = x2t.T
            self.scale = rng.integers(120, 130, (n, k // 64, 2)).astype(np.uint8)
            self.kw.update(pertoken_scale=rng.integers(120, 130, (m, k // 64, 2)).astype(np.uint8),
                           scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0", group_sizes=[1, 1, 32])
        else:
            self.x2 = rng.standard_normal((k, n), np.float32).astype(e4m3)
            self.scale = rng.uniform(0.01, 0.1, n).astype(np.float32)
            self.kw.update(pertoken_scale=rng.uniform(0.5, 2, m).astype(np.float32))
        self.f2 = self.x2.astype(np.float32)
        self.ops = 2 * m * k * n
        self.bytes = m * k + k * n + 2 * m * n
        self.run()

    def run(self):
        return npu_quant_matmul(self.x1, self.x2, self.scale, **self.kw)

    def time_npu_emu(self, mode):
        self.run()

    def time_numpy_f32_matmul(self, mode):
        np.matmul(self.f1, self.f2)

    def track_ratio_to_numpy_f32_matmul(self, mode):
        return _best(self.run, 1) / _best(lambda: np.matmul(self.f1, self.f2), 1)
    track_ratio_to_numpy_f32_matmul.unit = "x numpy float32 matmul"

    def track_emulator_over_950pr(self, mode):
        dev = get_platform("ascend950pr").device_seconds(self.bytes, self.ops, peak="fp8_peak_flops")
        return _best(self.run, 1) / dev
    track_emulator_over_950pr.unit = "x device roofline"


# --------------------------------------------------------------------------------------------------------------
# issue 8: the QuantBatchMatmulV4 integer modes and Sparse4to2QuantMatmul at the LLM shapes
# --------------------------------------------------------------------------------------------------------------

V4_INT_MODES = ["G-B int8 bf16 (A2)", "A4W4 K-G bf16", "A8W4 MSD K-G bf16", "Sparse4to2 bf16"]


def v4_int_case(mode, m, k, n, seed=0):
    """(callable, description) of one V4 integer mode on random data of shape m x k x n (k % 1024 == 0,
    n % 256 == 0). Shared with the one-off speed measurement of the issue-8 report."""
    from npu_emu.kernels.quant_matmul import sparse4to2
    from npu_emu.kernels.quant_matmul.api import npu_trans_quant_param

    rng = np.random.default_rng(seed)
    if mode.startswith("G-B"):
        x1 = rng.integers(-128, 128, (m, k), dtype=np.int8)
        x2t = rng.integers(-128, 128, (n, k), dtype=np.int8)
        x1s = rng.uniform(0.001, 0.01, (m, k // 128)).astype(np.float32)
        x2s = rng.uniform(0.001, 0.01, (n // 128, k // 128)).astype(np.float32)
        bias = rng.normal(0, 1, n).astype(np.float32)
        return lambda: npu_quant_matmul(x1, x2t.T, x2s, pertoken_scale=x1s, bias=bias, output_dtype="bfloat16",
                                        group_sizes=[1, 128, 128])
    if mode.startswith("A4W4"):
        def packed(r, c):
            return rng.integers(-128, 128, (r, c // 2), dtype=np.int8)   # two random int4 per byte
        x1, x2 = packed(m, k), packed(k, n)
        x1s = rng.uniform(0.01, 0.1, (m, 1)).astype(np.float32)
        x2s = rng.uniform(0.01, 0.1, (k // 256, n)).astype(np.float32)
        off = rng.uniform(-8, 8, (k // 256, n)).astype(np.float16)
        return lambda: npu_quant_matmul(x1, x2, x2s, pertoken_scale=x1s, offset=off, x1_dtype="int4",
                                        x2_dtype="int4", output_dtype="bfloat16", group_sizes=[0, 0, 256])
    if mode.startswith("A8W4"):
        x1 = rng.integers(-128, 128, (m, k), dtype=np.int8)
        x2 = rng.integers(-2 ** 31, 2 ** 31, (k, n // 8), dtype=np.int64).astype(np.int32)
        words = npu_trans_quant_param(rng.uniform(0.001, 0.01, (k // 256) * n).astype(np.float32))
        words = words.reshape(k // 256, n)
        y_off = rng.uniform(-1, 1, n).astype(np.float32)
        x1s = rng.uniform(0.5, 2, (m, 1)).astype(np.float32)
        return lambda: npu_quant_matmul(x1, x2, words, pertoken_scale=x1s, offset=y_off, output_dtype="bfloat16",
                                        group_sizes=[0, 0, 256])
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8).reshape(n, -1, 4)
    w[:, :, 1:3] = 0                                  # 2:4 sparse
    sw, idx = sparse4to2.trans_sparse4to2_para(w.reshape(n, k))
    xs = rng.uniform(0.01, 0.1, m).astype(np.float32)
    ws = rng.uniform(0.01, 0.1, n).astype(np.float32)
    return lambda: sparse4to2.sparse4to2_quant_matmul(x, sw, idx, xs, ws)


class V4Int:
    params = (SHAPES, V4_INT_MODES)
    param_names = ["shape", "mode"]
    timeout = 1800
    number = 1
    repeat = (1, 2, 120.0)

    def setup(self, shape, mode):
        m, k, n = _mkn(shape)
        self.run = v4_int_case(mode, m, k, n)
        rng = np.random.default_rng(0)
        self.f1 = rng.standard_normal((m, k), np.float32)
        self.f2 = rng.standard_normal((k, n), np.float32)
        self.run()

    def time_npu_emu(self, shape, mode):
        self.run()

    def time_numpy_f32_matmul(self, shape, mode):
        np.matmul(self.f1, self.f2)

    def track_ratio_to_numpy_f32_matmul(self, shape, mode):
        return _best(self.run, 1) / _best(lambda: np.matmul(self.f1, self.f2), 1)
    track_ratio_to_numpy_f32_matmul.unit = "x numpy float32 matmul"
