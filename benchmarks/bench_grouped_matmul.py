"""npu_grouped_matmul at the MoE expert shape of issue 37: W8A8, per-channel bf16 scale x per-token scale -> bf16,
8 experts, 4096 routed tokens (512 a group), K 7168, N 2048 (docs/ops/grouped_matmul.md §8).

Baselines in the same run: one numpy float32 ``matmul`` of the same total FLOPs (4096 x 7168 @ 7168 x 2048), the
same groups as numpy float32 matmuls (8 x (512 x 7168 @ 7168 x 2048): each group its own weight, as the MoE layer),
and ``torch._int_mm`` over the same groups (one group timed, x 8: on a CPU without VNNI it runs ~100 s a group).
Goals: <= 1.2x the float32 matmul, <= 1.5x torch._int_mm. Trackers are ratios (lower is better), the two calls
timed alternately. ``W8A8Activations``: the same call with x as npu_dynamic_quant makes it from normal activations
(row max 127, mean |x| about 26): longer exact k-chunks (kernels/quant_matmul/accum.py ``int_k_bounds``).
"""

import timeit

import ml_dtypes
import numpy as np

from npu_emu.kernels.grouped_matmul.api import npu_grouped_matmul

E, M, K, N = 8, 4096, 7168, 2048


def _best(fn, repeat=2):
    return min(timeit.repeat(fn, number=1, repeat=repeat))


def _interleaved(fn, ref, repeat=3):
    """best(fn) / best(ref), the two timed alternately: a change of the box's load hits both."""
    a, b = [], []
    for _ in range(repeat):
        a.append(_best(fn, 1))
        b.append(_best(ref, 1))
    return min(a) / min(b)


class _W8A8:
    timeout = 3600
    number = 1
    repeat = (1, 2, 120.0)

    def setup(self):
        rng = np.random.default_rng(0)
        self.x = rng.integers(-127, 128, (M, K), dtype=np.int8)
        self.w = rng.integers(-127, 128, (E, K, N), dtype=np.int8)
        self.scale = rng.uniform(1e-3, 1e-2, (E, N)).astype(ml_dtypes.bfloat16)
        self.pt = rng.uniform(1e-3, 1e-1, M).astype(np.float32)
        self.gl = np.full(E, M // E, np.int64)
        self.f1 = rng.standard_normal((M, K), np.float32)
        self.f2 = rng.standard_normal((K, N), np.float32)
        self.fw = rng.standard_normal((E, K, N), np.float32)
        self.run()                                   # compile / load the numba cache outside the timing

    def run(self):
        return npu_grouped_matmul([self.x], [self.w], scale=[self.scale], per_token_scale=[self.pt],
                                  group_list=self.gl, group_list_type=1, split_item=3, group_type=0,
                                  output_dtype="bfloat16")

    def f32(self):
        return np.matmul(self.f1, self.f2)

    def f32_grouped(self):
        g = M // E
        for e in range(E):
            np.matmul(self.f1[e * g:(e + 1) * g], self.fw[e])

    def time_npu_emu(self):
        self.run()

    def track_ratio_to_numpy_f32_matmul(self):
        return _interleaved(self.run, self.f32)
    track_ratio_to_numpy_f32_matmul.unit = "x numpy float32 matmul"


class W8A8PerToken(_W8A8):
    def time_numpy_f32_matmul(self):
        self.f32()

    def time_numpy_f32_grouped(self):
        self.f32_grouped()

    def track_ratio_to_numpy_f32_grouped(self):
        return _interleaved(self.run, self.f32_grouped)
    track_ratio_to_numpy_f32_grouped.unit = "x numpy float32 grouped matmuls"

    def track_ratio_to_torch_int_mm(self):
        import torch

        g = M // E
        xt = torch.from_numpy(self.x[:g])
        wt = torch.from_numpy(self.w[0])
        one = _best(lambda: torch._int_mm(xt, wt), 1)
        return _best(self.run, 1) / (E * one)
    track_ratio_to_torch_int_mm.unit = "x torch._int_mm over the groups"


class SmallShapesThreads:
    """2 numba threads against 1 on small calls (issue 37: no call shape where 2 threads are slower): the ratio of the
    best time with numba.set_num_threads(2) to the best with 1, in one process (the launch runs a kernel on the
    calling thread below 1 MiB of GM traffic, so small calls should not pay for the pool). The last shape's groups
    (512 x 2048 x 1024, 2^30 multiply-adds) are above the size from which the cube's GEMMs run their column halves
    on two host threads (npu_emu.device.launch.host_column_split)."""
    params = ["2x16x64x32", "4x64x256x128", "8x256x512x256", "8x1024x1024x512", "2x1024x2048x1024"]
    param_names = ["ExMxKxN"]
    number = 1
    repeat = 1

    def setup(self, shape):
        import numba

        if numba.config.NUMBA_NUM_THREADS < 2:
            raise NotImplementedError("needs NUMBA_NUM_THREADS >= 2")
        e, m, k, n = (int(v) for v in shape.split("x"))
        rng = np.random.default_rng(1)
        x = rng.integers(-127, 128, (m, k), dtype=np.int8)
        w = rng.integers(-127, 128, (e, k, n), dtype=np.int8)
        s = rng.uniform(1e-3, 1e-2, (e, n)).astype(ml_dtypes.bfloat16)
        pt = rng.uniform(1e-3, 1e-1, m).astype(np.float32)
        gl = np.full(e, m // e, np.int64)
        self.call = lambda: npu_grouped_matmul([x], [w], scale=[s], per_token_scale=[pt], group_list=gl,
                                               group_list_type=1, split_item=3, group_type=0,
                                               output_dtype="bfloat16")
        self.call()

    def _best(self, threads):
        import numba

        old = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            n = max(3, int(0.3 / max(1e-5, _best(self.call, 3))))
            return min(timeit.repeat(self.call, number=n, repeat=5)) / n
        finally:
            numba.set_num_threads(old)

    def track_ratio_2_to_1_threads(self, shape):
        one = self._best(1)
        two = self._best(2)
        one = min(one, self._best(1))              # interleaved, so that a load change hits both
        return two / one
    track_ratio_2_to_1_threads.unit = "x the 1-thread time"


class W8A8Activations(_W8A8):
    """The W8A8PerToken call with x quantized per token from normal activations, as npu_dynamic_quant does
    (x / max|x| * 127, rounded): mean |x| ~ 26 instead of 64, so the exact k-chunks are 4096 long instead of 1792."""

    def setup(self):
        act = np.random.default_rng(2).standard_normal((M, K), np.float32)
        super().setup()
        self.x = np.round(act / np.abs(act).max(axis=1, keepdims=True) * 127).astype(np.int8)
        self.run()
