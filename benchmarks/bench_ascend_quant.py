"""AscendQuantV2 (npu_quantize div_mode=False: vLLM-Ascend's W8A8 static activation quantisation) and Quantize
(div_mode=True, Ascend 950) at a prefill shape: x [8192, 7168], per channel.

Baselines in the same run: the numpy expression of the op's arithmetic (float32 ``x * scale + offset`` or
``x / scale``, ``np.rint``, clip, int8) and the host roofline of the bytes the op moves (x in, int8 out). Trackers are
lower-is-better ratios of best times (common.py's rule); against numpy the two sides are timed alternately
(:func:`~benchmarks.common.interleaved_best`).
"""

import ml_dtypes
import numpy as np

from benchmarks.common import (
    best_seconds,
    device_roofline_seconds,
    host_roofline_seconds,
    interleaved_best,
    use_threads,
)
from npu_emu.kernels.ascend_quant.api import ascend_quant, npu_quantize

SHAPE = (8192, 7168)


class _Quant:
    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 600

    def setup(self, threads):
        use_threads(threads)
        self.inputs(np.random.default_rng(40))
        self.run()                                      # compile / load from the cache outside the timing

    def _bytes(self):
        return self.x.nbytes + self.x.size

    def time_npu_emu(self, threads):
        self.run()

    def time_numpy(self, threads):
        self.numpy()

    def track_over_numpy(self, threads):
        a, b = interleaved_best(self.run, self.numpy, 5)
        return a / b
    track_over_numpy.unit = "x numpy time"

    def track_over_host_roofline(self, threads):
        return best_seconds(self.run) / host_roofline_seconds(self._bytes(), threads)
    track_over_host_roofline.unit = "x host roofline"


class AscendQuantV2(_Quant):
    """bf16 x, bf16 per-channel scale and offset -> int8."""

    def inputs(self, rng):
        self.x = (rng.standard_normal(SHAPE) * 4).astype(ml_dtypes.bfloat16)
        self.s = (rng.random(SHAPE[1]) + 0.5).astype(ml_dtypes.bfloat16)
        self.o = rng.standard_normal(SHAPE[1]).astype(ml_dtypes.bfloat16)

    def run(self):
        return ascend_quant(self.x, self.s, self.o)

    def time_faithful(self, threads):
        ascend_quant(self.x, self.s, self.o, faithful=True)

    def numpy(self):
        t = self.x.astype(np.float32) * self.s.astype(np.float32) + self.o.astype(np.float32)
        return np.clip(np.rint(t), -128, 127).astype(np.int8)

    def track_over_910b2(self, threads):
        return best_seconds(self.run) / device_roofline_seconds(self._bytes(), "910B2")
    track_over_910b2.unit = "x device roofline"


class Quantize950(_Quant):
    """float32 x, float32 per-channel scale, no zero point -> int8 (aclnnQuantize on the Ascend 950)."""

    def inputs(self, rng):
        self.x = (rng.standard_normal(SHAPE) * 4).astype(np.float32)
        self.s = (rng.random(SHAPE[1]) + 0.5).astype(np.float32)

    def run(self):
        return npu_quantize(self.x, self.s, None, 1, -1, True, soc="ascend950pr")

    def time_faithful(self, threads):
        npu_quantize(self.x, self.s, None, 1, -1, True, soc="ascend950pr", faithful=True)

    def numpy(self):
        return np.clip(np.rint(self.x / self.s), -128, 127).astype(np.int8)
