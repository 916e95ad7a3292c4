"""SwiGLU and DequantSwigluQuant at the MoE shapes of issue 38.

SwiGlu: bf16 [8192, 2 x 4096]. Baselines in the same run: np.copyto of as many bytes as the op moves (x's 128 MiB
read and y's 64 MiB written: a 96 MiB copy reads 96 and writes 96 MiB, the same 192 MiB of traffic) and torch CPU
``F.silu(a) * b``. DequantSwigluQuant: int32 [8192, 2 x 2048], group_index over 8 experts, dynamic quant,
activate_left (the vLLM-Ascend W8A8 MoE call) against its numpy golden. Trackers are lower-is-better ratios of the
best times of the two sides timed alternately (:func:`interleaved_best`), so that a load change on the shared box hits
both sides alike.
"""

import ml_dtypes
import numpy as np

from benchmarks.common import interleaved_best, use_threads
from npu_emu.kernels.dequant_swiglu_quant import golden as dsq_golden
from npu_emu.kernels.dequant_swiglu_quant.api import npu_dequant_swiglu_quant
from npu_emu.kernels.swiglu import tiling
from npu_emu.kernels.swiglu.api import npu_swiglu
from npu_emu.kernels.swiglu.launch import run_swiglu


class SwiGlu:
    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 900

    def setup(self, threads):
        use_threads(threads)
        rng = np.random.default_rng(38)
        self.x = (rng.standard_normal((8192, 8192)) * 2).astype(ml_dtypes.bfloat16)
        self.xb = self.x.reshape(-1).view(np.uint16)
        self.y = np.empty(8192 * 4096, np.uint16)
        self.tr = tiling.swiglu_tiling(self.x.shape, -1, "bfloat16")
        self.src = np.ones(8192 * 6144 // 2, np.uint32)     # 96 MiB: 192 MiB of traffic
        self.dst = np.empty_like(self.src)
        self.run()
        try:
            import torch
            self.torch = torch
            self.xt = torch.from_numpy(self.xb.view(np.int16)).view(torch.bfloat16).reshape(8192, 8192)
        except ImportError:
            self.torch = None

    def run(self):
        run_swiglu(self.xb, self.y, self.tr, "bfloat16", exp_model=0, div_model=0, validate=False)

    def copy(self):
        np.copyto(self.dst, self.src)

    def silu(self):
        a, b = self.xt[:, :4096], self.xt[:, 4096:]
        return self.torch.nn.functional.silu(a) * b

    def time_npu_swiglu(self, threads):
        npu_swiglu(self.x)

    def time_kernel(self, threads):
        self.run()

    def time_copy_same_bytes(self, threads):
        self.copy()

    def time_torch_silu_mul(self, threads):
        if self.torch is None:
            raise NotImplementedError
        self.silu()

    def track_kernel_over_copy(self, threads):
        """kernel time / copy time of the bytes the op moves (<= 2 means >= 50 % of a copy)."""
        kernel, copy = interleaved_best(self.run, self.copy, 7)
        return kernel / copy

    track_kernel_over_copy.unit = "x copy"

    def track_torch_over_kernel_inverse(self, threads):
        """kernel time / torch F.silu(a) * b time (<= 1/3 means >= 3x faster than torch)."""
        if self.torch is None:
            raise NotImplementedError
        kernel, torch = interleaved_best(self.run, self.silu, 5)
        return kernel / torch

    track_torch_over_kernel_inverse.unit = "x torch"


class DequantSwigluQuant:
    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 900

    def setup(self, threads):
        use_threads(threads)
        rng = np.random.default_rng(38)
        T, D, E = 8192, 4096, 8
        self.x = rng.integers(-20000, 20000, (T, D), dtype=np.int32)
        self.ws = (rng.random((E, D)) * 1e-3 + 1e-5).astype(np.float32)
        self.asc = (rng.random(T) * 0.05 + 1e-3).astype(np.float32)
        self.gi = np.full(E, T // E, np.int64)
        self.call()

    def call(self):
        return npu_dequant_swiglu_quant(self.x, weight_scale=self.ws, activation_scale=self.asc,
                                        group_index=self.gi, activate_left=True, quant_mode=1)

    def golden(self):
        return dsq_golden.dequant_swiglu_quant(self.x, self.ws, self.asc, group_index=self.gi, activate_left=True,
                                               quant_mode=1)

    def time_npu_dequant_swiglu_quant(self, threads):
        self.call()

    def time_numpy_golden(self, threads):
        self.golden()

    def track_kernel_over_golden(self, threads):
        """npu-emu time / numpy golden time (<= 0.1 means >= 10x faster)."""
        kernel, golden = interleaved_best(self.call, self.golden, 3)
        return kernel / golden

    track_kernel_over_golden.unit = "x golden"
