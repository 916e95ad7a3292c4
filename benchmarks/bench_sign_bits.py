"""SignBitsUnpack / SignBitsPack at 1-bit-Adam sizes (docs/ops/sign_bits.md §7,
docs/contributing/numba_rules.md §5.3).

Baselines in the same run: the np.unpackbits golden and the best numpy (np.take on a 256 x 8 lookup table) for
unpack, and a plain parallel njit fill of the same output bytes (the host's measured write bandwidth: the issue's
goal is unpack >= 50 % of it on 2 threads); np.packbits of the comparison for pack. Trackers are lower-is-better
ratios (asv's convention), except track_write_bandwidth_percent_of_fill, the goal's own number.

The launch-level timings write into one preallocated output; ``npu_sign_bits_unpack`` is the public call, which
returns a new 2 GiB output each time as a user's loop sees it (from npu_emu.frontend.output_cache once an earlier
output is freed; np.take allocates fresh pages every time).
"""

import numba
import numpy as np
from numba import njit, prange

import npu_emu.ops as ops
from npu_emu.kernels.sign_bits import golden as golden
from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.sign_bits import launch, tiling

from .common import best_seconds, device_roofline_seconds, host_roofline_seconds

HOST_WRITE_BPS_PER_THREAD = 12.5e9       # docs/contributing/numba_rules.md §5.1 planning figure (write only)
UNPACK_BYTES = 64 << 20                  # 64 MiB of packed signs -> 512 Mi outputs
PACK_ELEMS = 512 << 20                   # 512 Mi float32 (2 GiB)


def _best(fn, repeat=3):
    return best_seconds(fn, repeat)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def _fill(y, value):
    """The host's write-bandwidth baseline: a plain store loop over two halves of y (one per thread on 2 threads;
    both on one thread when numba runs 1). Nothing is read, so it is the best a write-bound kernel can do here.
    A slice store, not an element loop: the loop ran 1.5-1.9x slower on the reference box (2026-11-30)."""
    n = y.size
    for c in prange(2):
        y[c * n // 2:(c + 1) * n // 2] = value


class Unpack:
    params = (["float32", "float16"],)
    param_names = ["dtype"]
    timeout = 600

    def setup(self, dtype):
        rng = np.random.default_rng(0)
        self.x = rng.integers(0, 256, UNPACK_BYTES, dtype=np.uint8)
        self.y = np.empty(8 * UNPACK_BYTES, np.float16 if dtype == "float16" else np.float32)
        self.tr = tiling.unpack_tiling(UNPACK_BYTES, dtype)
        sign = np.where(np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little"), 1, -1)
        self.lut = sign.astype(self.y.dtype)
        self.dtype = dtype
        # the fill writes the same bytes as unpack into the same preallocated output (its bits, numba has no half)
        self.y_bits = self.y.view(np.uint16 if dtype == "float16" else np.uint32)
        self.fill_value = self.y_bits.dtype.type(0x3C00 if dtype == "float16" else 0x3F800000)
        self.run()                                     # compile / load from the numba cache outside the timing
        self.fill()
        self.op()

    def run(self):
        launch.run_unpack(self.x, self.y, self.tr, "910b", validate=False)

    def fill(self):
        _fill(self.y_bits, self.fill_value)

    def op(self):
        ops.npu_sign_bits_unpack(self.x, 1, 1 if self.dtype == "float16" else 0)

    def time_npu_sign_bits_unpack(self, dtype):
        self.op()

    def time_npu_emu(self, dtype):
        self.run()

    def time_fill_baseline(self, dtype):
        self.fill()

    def time_npu_emu_faithful(self, dtype):
        launch.run_unpack(self.x, self.y, self.tr, "910b", validate=False, faithful=True)

    def time_npu_emu_validated(self, dtype):
        launch.run_unpack(self.x, self.y, self.tr, "910b", validate=True)

    def time_numpy_golden(self, dtype):
        golden.sign_bits_unpack(self.x, 1, dtype)

    def time_numpy_lut_take(self, dtype):
        np.take(self.lut, self.x, axis=0)

    def track_ratio_to_best_numpy(self, dtype):
        return _best(self.run) / _best(lambda: np.take(self.lut, self.x, axis=0))
    track_ratio_to_best_numpy.unit = "x best numpy time"

    def track_op_ratio_to_best_numpy(self, dtype):
        # the public call against np.take, each returning a new output (the floor: 1/3)
        return _best(self.op) / _best(lambda: np.take(self.lut, self.x, axis=0))
    track_op_ratio_to_best_numpy.unit = "x best numpy time"

    def _bytes(self):
        return self.x.nbytes + self.y.nbytes

    def track_emulator_over_host_roofline(self, dtype):
        return _best(self.run) / host_roofline_seconds(self._bytes(), numba.get_num_threads())
    track_emulator_over_host_roofline.unit = "x host roofline"

    def track_write_bandwidth_fraction_inverse(self, dtype):
        # 1 / (fraction of the planning write bandwidth); 2 means 50 %.
        return _best(self.run) / (self.y.nbytes / (HOST_WRITE_BPS_PER_THREAD * numba.get_num_threads()))
    track_write_bandwidth_fraction_inverse.unit = "x host write roofline"

    def _unpack_and_fill_seconds(self):
        # interleaved, best of 5 each, in this process: both see the same machine load and the same threads
        t_run, t_fill = [], []
        for _ in range(5):
            t_run.append(_best(self.run, 1))
            t_fill.append(_best(self.fill, 1))
        return min(t_run), min(t_fill)

    def track_write_bandwidth_percent_of_fill(self, dtype):
        # The goal, "unpack >= 50 % of the host's write bandwidth on 2 threads", against the measured
        # fill of the same bytes (not the planning figure). The one higher-is-better tracker of this file: asv
        # reports a drop of this number as an improvement; track_time_over_fill is the same ratio the asv way.
        t_run, t_fill = self._unpack_and_fill_seconds()
        return 100.0 * t_fill / t_run
    track_write_bandwidth_percent_of_fill.unit = "% of measured fill bandwidth (higher is better)"

    def track_time_over_fill(self, dtype):
        t_run, t_fill = self._unpack_and_fill_seconds()
        return t_run / t_fill                          # 2.0 = 50 % of the fill bandwidth
    track_time_over_fill.unit = "x fill time"

    def track_emulator_over_910b2(self, dtype):
        return _best(self.run) / device_roofline_seconds(self._bytes(), "910B2")
    track_emulator_over_910b2.unit = "x device roofline"


class Pack:
    timeout = 900

    def setup(self):
        rng = np.random.default_rng(1)
        self.x = rng.standard_normal(PACK_ELEMS, dtype=np.float32)
        self.bits = self.x.view(np.uint32)
        self.y = np.empty(PACK_ELEMS // 8, np.uint8)
        self.tr = tiling.pack_tiling(PACK_ELEMS, "float32")
        self.run()

    def run(self):
        launch.run_pack(self.bits, self.y, self.tr, "910b", validate=False)

    def time_npu_emu(self):
        self.run()

    def time_numpy_packbits(self):
        np.packbits(self.x >= 0, bitorder="little")

    def track_ratio_to_numpy(self):
        return _best(self.run, 2) / _best(lambda: np.packbits(self.x >= 0, bitorder="little"), 2)
    track_ratio_to_numpy.unit = "x numpy time"

    def track_emulator_over_host_roofline(self):
        nbytes = self.x.nbytes + self.y.nbytes
        return _best(self.run, 2) / host_roofline_seconds(nbytes, numba.get_num_threads())
    track_emulator_over_host_roofline.unit = "x host roofline"

    def track_emulator_over_910b2(self):
        nbytes = self.x.nbytes + self.y.nbytes
        return _best(self.run, 2) / device_roofline_seconds(nbytes, "910B2")
    track_emulator_over_910b2.unit = "x device roofline"
