"""AscendQuantV2 (npu_quantize div_mode=False: vLLM-Ascend's W8A8 static activation quantisation) and Quantize
(div_mode=True, Ascend 950) at a prefill shape: x [8192, 7168], per channel.

Baselines in the same run: the numpy expression of the op's arithmetic (float32 ``x * scale + offset`` or
``x / scale``, ``np.rint``, clip, int8) and the host roofline of the bytes the op moves. Trackers are lower-is-better
ratios of best times (common.py's rule), the two sides timed alternately so that a load change on the shared box hits
both alike.
"""

import timeit

import ml_dtypes
import numpy as np

from benchmarks.common import device_roofline_seconds, host_roofline_seconds, use_threads
from npu_emu.kernels.ascend_quant.api import ascend_quant, npu_quantize

SHAPE = (8192, 7168)


def _interleaved_best(fn_a, fn_b, repeat=5):
    a, b = [], []
    for _ in range(repeat):
        a.append(timeit.timeit(fn_a, number=1))
        b.append(timeit.timeit(fn_b, number=1))
    return min(a), min(b)


class AscendQuantV2:
    """bf16 x, bf16 per-channel scale and offset -> int8."""

    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 600

    def setup(self, threads):
        use_threads(threads)
        rng = np.random.default_rng(40)
        self.x = (rng.standard_normal(SHAPE) * 4).astype(ml_dtypes.bfloat16)
        self.s = (rng.random(SHAPE[1]) + 0.5).astype(ml_dtypes.bfloat16)
        self.o = rng.standard_normal(SHAPE[1]).astype(ml_dtypes.bfloat16)
        self.run()                                      # compile / load from the cache outside the timing

    def run(self):
        return ascend_quant(self.x, self.s, self.o)

    def numpy(self):
        t = self.x.astype(np.float32) * self.s.astype(np.float32) + self.o.astype(np.float32)
        return np.clip(np.rint(t), -128, 127).astype(np.int8)

    def _bytes(self):
        return self.x.nbytes + self.x.size             # bf16 in, int8 out

    def time_npu_emu(self, threads):
        self.run()

    def time_numpy(self, threads):
        self.numpy()

    def track_over_numpy(self, threads):
        a, b = _interleaved_best(self.run, self.numpy)
        return a / b
    track_over_numpy.unit = "x numpy time"

    def track_over_host_roofline(self, threads):
        return min(timeit.repeat(self.run, number=1, repeat=5)) / host_roofline_seconds(self._bytes(), threads)
    track_over_host_roofline.unit = "x host roofline"

    def track_over_910b2(self, threads):
        return min(timeit.repeat(self.run, number=1, repeat=5)) / device_roofline_seconds(self._bytes(), "910B2")
    track_over_910b2.unit = "x device roofline"


class Quantize950:
    """float32 x, float32 per-channel scale, no zero point -> int8 (aclnnQuantize on the Ascend 950)."""

    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 600

    def setup(self, threads):
        use_threads(threads)
        rng = np.random.default_rng(41)
        self.x = (rng.standard_normal(SHAPE) * 4).astype(np.float32)
        self.s = (rng.random(SHAPE[1]) + 0.5).astype(np.float32)
        self.run()

    def run(self):
        return npu_quantize(self.x, self.s, None, 1, -1, True, soc="ascend950pr")

    def numpy(self):
        return np.clip(np.rint(self.x / self.s), -128, 127).astype(np.int8)

    def time_npu_emu(self, threads):
        self.run()

    def time_numpy(self, threads):
        self.numpy()

    def track_over_numpy(self, threads):
        a, b = _interleaved_best(self.run, self.numpy)
        return a / b
    track_over_numpy.unit = "x numpy time"

    def track_over_host_roofline(self, threads):
        moved = self.x.nbytes + self.x.size
        return min(timeit.repeat(self.run, number=1, repeat=5)) / host_roofline_seconds(moved, threads)
    track_over_host_roofline.unit = "x host roofline"
