"""GatherDequantInt8 at an LLM vocabulary (issue 5: V = 151936, E = 4096, N = 8192) and at the Kirin
deployment size of docs/ops/gather_dequant_int8.md §7 (V = 10240, E = 256, N = 4096).

Baseline in the same run: the plain-numpy golden (npu_emu.kernels.gather_dequant_int8.golden, two numpy float16
operations). Trackers are lower-is-better ratios (asv's convention); no device roofline, the Kirin 9020's
bandwidth is not public (docs/device/platforms.md §3.3).
"""

import numpy as np

from benchmarks.common import best_seconds, host_roofline_seconds, use_threads
from npu_emu.kernels.gather_dequant_int8 import golden as golden
from npu_emu.kernels.gather_dequant_int8 import api, kernel, tiling

SHAPES = {"llm": (151936, 4096, 8192), "kirin": (10240, 256, 4096)}     # (V, E, N)


class GatherDequantInt8:
    params = (list(SHAPES), [1, 2])
    param_names = ["shape", "threads"]
    timeout = 900

    def setup(self, shape, threads):
        use_threads(threads)
        vocab, emb, num = SHAPES[shape]
        rng = np.random.default_rng(5)
        self.table = np.frombuffer(rng.bytes(vocab * emb), np.uint8).reshape(vocab, emb)
        self.scale = (rng.random(vocab) * 0.01 + 1e-4).astype(np.float16)
        self.zero_point = (rng.random(vocab) * 255).astype(np.float16)
        self.indices = rng.integers(0, vocab, num).astype(np.int32)
        self.y = np.empty((num, emb), np.float16)
        self.tr = tiling.gather_dequant_int8_tiling(self.table.shape, self.indices.shape, core_num=threads)
        self.threads = threads
        self.bytes_moved = 4 * num + 4 * vocab + num * emb + 2 * num * emb   # GM: indices, scale+zp, rows, y
        self.run()                                    # compile / load from the numba cache outside the timing

    def run(self):
        kernel.run(self.table, self.indices, self.scale.view(np.uint16), self.zero_point.view(np.uint16),
                   self.y.view(np.uint16), self.tr, validate=False)

    def call(self):
        return api.gather_dequant_int8(self.table, self.indices, self.scale, self.zero_point)

    def golden(self):
        return golden.gather_dequant_int8(self.table, self.indices, self.scale, self.zero_point)

    def time_npu_emu(self, shape, threads):
        """The user call: checks, tiling, access validation, output allocation, kernel."""
        self.call()

    def time_npu_emu_kernel(self, shape, threads):
        """The fast kernel alone into a preallocated output."""
        self.run()

    def time_npu_emu_faithful(self, shape, threads):
        """The transliterated per-row instruction pipeline, tokens split over ``threads`` emulated cores."""
        kernel.run(self.table, self.indices, self.scale.view(np.uint16), self.zero_point.view(np.uint16),
                   self.y.view(np.uint16), self.tr, faithful=True, validate=False)

    def time_numpy_golden(self, shape, threads):
        self.golden()

    def track_npu_emu_over_golden(self, shape, threads):
        """npu-emu's user call time / the numpy golden's time (issue 5 goal: <= 0.2, i.e. >= 5x faster)."""
        return best_seconds(self.call, 3) / best_seconds(self.golden, 3)
    track_npu_emu_over_golden.unit = "x numpy golden time"

    def track_emulator_over_host_roofline(self, shape, threads):
        return best_seconds(self.run, 3) / host_roofline_seconds(self.bytes_moved, self.threads)
    track_emulator_over_host_roofline.unit = "x host roofline"
