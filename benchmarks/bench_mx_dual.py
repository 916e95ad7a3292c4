"""DynamicMxQuantWithDualAxis at the MindSpeed MXFP8 size (issue 39): bf16 [8192, 7168] along both axes.

Baselines in the same run: the op's numpy golden (kernels/dynamic_mx_quant_with_dual_axis/golden.py) and two
separate npu_dynamic_mx_quant calls (axis -1, then axis -2), the one-pass-instead-of-two comparison. Trackers are
lower-is-better ratios: dual / golden (goal <= 1/30) and dual / two calls (goal <= 1/1.5; the median of five
interleaved pairs).
"""

import ml_dtypes
import numpy as np

from benchmarks import common
from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import api, golden
from npu_emu.kernels.mx_quant import api as mx_api

SHAPE = (8192, 7168)
TORCH_CODE = {"float8_e4m3fn": 24, "float4_e2m1": 296}


def bf16_input(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=np.float32)
    x *= np.exp2(rng.integers(-6, 7, (shape[0], 1))).astype(np.float32)       # per-token magnitudes
    return x.astype(ml_dtypes.bfloat16)


class DynamicMxQuantWithDualAxis:
    params = (["float8_e4m3fn", "float4_e2m1"], common.THREADS)
    param_names = ["dst", "threads"]
    timeout = 1200

    def setup(self, dst, threads):
        common.use_threads(threads)
        self.x = bf16_input(SHAPE, 0)
        self.code = TORCH_CODE[dst]
        self.dst = dst
        small = self.x[:64, :512]
        api.npu_dynamic_mx_quant_with_dual_axis(small, dst_type=self.code)             # compile outside timing
        mx_api.npu_dynamic_mx_quant(small, axis=-1, dst_type=self.code)
        mx_api.npu_dynamic_mx_quant(small, axis=-2, dst_type=self.code)
        self.dual()                                                                     # access pattern memo

    def dual(self):
        api.npu_dynamic_mx_quant_with_dual_axis(self.x, dst_type=self.code)

    def two_calls(self):
        mx_api.npu_dynamic_mx_quant(self.x, axis=-1, dst_type=self.code)
        mx_api.npu_dynamic_mx_quant(self.x, axis=-2, dst_type=self.code)

    def numpy_golden(self):
        golden.dual_axis_quant(self.x, self.dst)

    def time_dual(self, dst, threads):
        self.dual()

    def time_two_dynamic_mx_quant_calls(self, dst, threads):
        self.two_calls()

    def track_dual_over_two_calls(self, dst, threads):
        # the calls interleaved, the median of five ratios: on a shared host the load drifts within a run, and a
        # best-of on each side compares moments of different load
        ratios = []
        for _ in range(5):
            ratios.append(common.best_seconds(self.dual, 1) / common.best_seconds(self.two_calls, 1))
        return float(np.median(ratios))
    track_dual_over_two_calls.unit = "x two npu_dynamic_mx_quant calls"

    def track_dual_over_numpy_golden(self, dst, threads):
        return common.best_seconds(self.dual, 3) / common.best_seconds(self.numpy_golden, 1)
    track_dual_over_numpy_golden.unit = "x numpy golden time"
