"""DynamicQuant (npu_dynamic_quant) at the MoE-activation size of issue 36: bf16 [8192, 7168] -> int8 per token.

In one run: the emulator kernel on preallocated outputs (``time_npu_emu``), the whole front end with checks, tiling
and output allocation (``time_npu_emu_frontend``), a plain copy of the input's bytes (``time_copy``: np.copyto of
117 MB), the numpy golden (``time_golden``) and plain torch CPU per-token quantization as vLLM-Ascend users would
write it (``time_torch``: x.float().abs().amax(-1) / 127, divide, round, clamp, to int8). Trackers (lower is better):
``track_kernel_over_copy`` (<= 2 means the kernel reaches >= 50 % of the copy's speed), ``track_kernel_over_golden``,
``track_kernel_over_torch`` (<= 0.1 and <= 0.33 are the issue's targets).
"""

import ml_dtypes
import numpy as np

from benchmarks import common
from npu_emu.kernels.dynamic_quant import golden, launch, tiling

SHAPE = (8192, 7168)


def _input():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE, dtype=np.float32)
    x *= np.exp2(rng.integers(-6, 7, (SHAPE[0], 1))).astype(np.float32)
    return x.astype(ml_dtypes.bfloat16)


def _torch_quant(xt):
    import torch
    xf = xt.float()
    scale = xf.abs().amax(-1, keepdim=True) / 127.0
    return (xf / scale).round().clamp(-128, 127).to(torch.int8), scale


class DynamicQuantInt8:
    timeout = 600
    params = ([2],)
    param_names = ["threads"]

    def setup(self, threads):
        common.use_threads(threads)
        self.x = _input()
        self.xb = self.x.view(np.uint16)
        self.res = tiling.tiling(*SHAPE)
        self.y = np.empty(SHAPE, np.uint8)
        self.s = np.empty(SHAPE[0], np.float32)
        self.dst = np.empty_like(self.xb)
        self.kernel()                                    # compile / load the cache outside the timing

    def kernel(self):
        launch.run(self.xb, "bfloat16", None, None, self.res, y=self.y, scale=self.s)

    def copy(self):
        np.copyto(self.dst, self.xb)

    def time_npu_emu(self, threads):
        self.kernel()

    def time_npu_emu_frontend(self, threads):
        from npu_emu.kernels.dynamic_quant import api
        api.npu_dynamic_quant(self.x)

    def time_copy(self, threads):
        self.copy()

    def track_kernel_over_copy(self, threads):
        return common.best_seconds(self.kernel, 5) / common.best_seconds(self.copy, 5)
    track_kernel_over_copy.unit = "x copy time"

    def track_kernel_over_golden(self, threads):
        g = common.best_seconds(lambda: golden.dynamic_quant(golden.widen(self.xb, "bfloat16"),
                                                             scale_formula="max_times_inv"), 1)
        return common.best_seconds(self.kernel, 5) / g
    track_kernel_over_golden.unit = "x golden time"

    def track_kernel_over_torch(self, threads):
        import torch
        xt = torch.from_numpy(self.xb.view(np.int16)).view(torch.bfloat16)
        torch.set_num_threads(threads)
        t = common.best_seconds(lambda: _torch_quant(xt), 2)
        return common.best_seconds(self.kernel, 5) / t
    track_kernel_over_torch.unit = "x torch time"
