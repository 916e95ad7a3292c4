"""MX quantisation at MoE-layer sizes (issue 6): GroupedDynamicMxQuant bf16 [16384, 7168] in 8 groups to E4M3FN,
DynamicMxQuant bf16 [8192, 7168] along the last axis to E4M3FN and to FP4 E2M1, and float16 along either axis to
E4M3FN.

Baseline in the same run: a straightforward numpy implementation of the same math
(docs/contributing/numba_rules.md §5.5 recipe: float32 copy, blocks, abs().max(), floor(log2()), exp2, divide, clip,
ml_dtypes cast). The emulator is timed as the kernel on preallocated outputs (``time_npu_emu``) and as the whole front
end with checks, validation and output allocation (``time_npu_emu_frontend``). Trackers are lower-is-better ratios:
emulator / numpy, emulator / host memory roofline (bytes moved / 25 GB/s per thread), emulator / device roofline (HBM
bandwidth of the 950PR, 950DT and, for scale, 910B2); and emulator / a parallel copy of as many bytes measured in the
same process (``track_npu_emu_over_measured_copy``: 1 / that is the fraction of the host's copy bandwidth the kernel
reaches).
"""

import ml_dtypes
import numpy as np
from numba import njit, prange

from benchmarks import common
from npu_emu.kernels.mx_quant import api, launch, tiling
from npu_emu.kernels.mx_quant import common as mx_common

GROUPED_SHAPE = (16384, 7168)
GROUP_SIZES = (2560, 1536, 3072, 1024, 2048, 2304, 1792, 2048)        # 8 MoE experts, sum 16384
DYNAMIC_SHAPE = (8192, 7168)
ML_FP8 = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15, "float4_e2m1": 2}
ELEM_MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "float4_e2m1": 6.0}
TORCH_CODE = {"float8_e4m3fn": 24, "float8_e5m2": 23, "float4_e2m1": 296}


@njit(parallel=True, error_model="numpy")
def _copy(src, dst):
    """A plain parallel copy: the host bandwidth yardstick (read + write) in the benchmark's own process."""
    chunk = 1 << 20
    for c in prange((src.size + chunk - 1) // chunk):
        dst[c * chunk:(c + 1) * chunk] = src[c * chunk:(c + 1) * chunk]


def measured_copy_seconds(bytes_moved):
    """Best time of copying bytes_moved / 2 bytes (so bytes_moved read + written)."""
    src = np.ones(bytes_moved // 2, np.uint8)
    dst = np.empty_like(src)
    _copy(src, dst)
    return common.best_seconds(lambda: _copy(src, dst), 3)


def bf16_input(shape, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=np.float32)
    x *= np.exp2(rng.integers(-6, 7, (shape[0], 1))).astype(np.float32)       # per-token magnitudes
    return x.astype(ml_dtypes.bfloat16)


def numpy_mx_blocks(xb, fmt):
    """Straightforward MX of blocks along axis 1 of xb [nblocks, 32, cols] (float32): scale codes, element codes."""
    amax = np.abs(xb).max(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(amax)) - EMAX[fmt]
    e = np.clip(np.nan_to_num(e, neginf=-127.0), -127, 127)
    v = np.clip(xb / np.exp2(e), -ELEM_MAX[fmt], ELEM_MAX[fmt])
    dt = ml_dtypes.float4_e2m1fn if fmt == "float4_e2m1" else ML_FP8[fmt]
    return (e + 127).astype(np.uint8), v.astype(dt).view(np.uint8)


def numpy_grouped(x, sizes, fmt):
    xf = x.astype(np.float32)
    ys, ss, start = [], [], 0
    for size in sizes:
        g = xf[start:start + size]
        nb = -(-size // 32)
        g = np.concatenate([g, np.zeros((nb * 32 - size, g.shape[1]), np.float32)])
        s, y = numpy_mx_blocks(g.reshape(nb, 32, -1), fmt)
        ys.append(y.reshape(nb * 32, -1)[:size])
        ss.append(s)
        start += size
    return np.concatenate(ys), ss


def numpy_dynamic_last_axis(x, fmt):
    xf = x.astype(np.float32)
    m, n = xf.shape
    s, y = numpy_mx_blocks(xf.reshape(m, n // 32, 32).transpose(0, 2, 1), fmt)
    y = y.transpose(0, 2, 1).reshape(m, n)
    if fmt == "float4_e2m1":
        y = (y[:, 0::2] & 0xF) | ((y[:, 1::2] & 0xF) << 4)
    return y, s


class GroupedMxQuant:
    """bf16 [16384, 7168], 8 groups -> E4M3FN (the torch_npu default is E5M2; same work)."""

    params = (common.THREADS, ["950PR", "950DT", "910B2"])
    param_names = ["threads", "device"]
    timeout = 900

    def setup(self, threads, device):
        common.use_threads(threads)
        m, n = GROUPED_SHAPE
        self.x = bf16_input(GROUPED_SHAPE, 0)
        self.gi = np.cumsum(GROUP_SIZES).astype(np.int32)
        self.tr = tiling.grouped_tiling(m, n, len(self.gi), x_dtype="bfloat16", y_dtype="float8_e4m3fn")
        self.params_vec = mx_common.make_params(x_dtype="bfloat16", y_dtype="float8_e4m3fn", round_mode="rint",
                                                alg=mx_common.ALG_OCP, dtm_class=0, legacy=False, signed_zero=True,
                                                ftz=False, nan_in_max="propagate", fp4_nibble_order="low_first",
                                                dynamic=False, faithful=False)
        self.bits = self.x.view(np.uint16).reshape(-1)
        self.y = np.empty(m * n, np.uint8)
        self.s = np.zeros((m // 64 + len(self.gi)) * n * 2, np.uint8)
        self.bytes_moved = self.x.nbytes + self.y.nbytes + self.s.nbytes
        self.run()                                       # compile / cache load outside the timing

    def run(self):
        launch.run_grouped(self.bits, self.gi, self.y, self.s, self.tr, self.params_vec,
                           self.tr.tiling.invDstTypeMax, shape=GROUPED_SHAPE, validate=False)

    def frontend(self):
        api.npu_grouped_dynamic_mx_quant(self.x, self.gi, dst_type=24)

    def numpy(self):
        numpy_grouped(self.x, GROUP_SIZES, "float8_e4m3fn")

    def time_npu_emu(self, threads, device):
        self.run()

    def time_npu_emu_frontend(self, threads, device):
        self.frontend()

    def time_numpy_straightforward(self, threads, device):
        self.numpy()

    def track_npu_emu_over_numpy(self, threads, device):
        return common.best_seconds(self.run, 3) / common.best_seconds(self.numpy, 1)
    track_npu_emu_over_numpy.unit = "x numpy time"

    def track_npu_emu_over_host_roofline(self, threads, device):
        return common.best_seconds(self.run, 3) / common.host_roofline_seconds(self.bytes_moved, threads)
    track_npu_emu_over_host_roofline.unit = "x host roofline"

    def track_npu_emu_over_device_roofline(self, threads, device):
        return common.best_seconds(self.run, 3) / common.device_roofline_seconds(self.bytes_moved, device)
    track_npu_emu_over_device_roofline.unit = "x device roofline"

    def track_npu_emu_over_measured_copy(self, threads, device):
        return common.best_seconds(self.run, 3) / measured_copy_seconds(self.bytes_moved)
    track_npu_emu_over_measured_copy.unit = "x host copy of the same bytes"


class DynamicMxQuant:
    """bf16 [8192, 7168] along axis -1 -> E4M3FN and FP4 E2M1 (packed)."""

    params = (["float8_e4m3fn", "float4_e2m1"], common.THREADS, ["950PR", "950DT", "910B2"])
    param_names = ["dst", "threads", "device"]
    timeout = 900

    def setup(self, dst, threads, device):
        common.use_threads(threads)
        m, n = DYNAMIC_SHAPE
        self.dst = dst
        self.x = bf16_input(DYNAMIC_SHAPE, 1)
        self.tr = tiling.dynamic_unit_tiling(DYNAMIC_SHAPE, -1, x_dtype="bfloat16", y_dtype=dst)
        self.params_vec = mx_common.make_params(x_dtype="bfloat16", y_dtype=dst, round_mode="rint",
                                                alg=mx_common.ALG_OCP, dtm_class=0, legacy=False, signed_zero=True,
                                                ftz=False, nan_in_max="propagate", fp4_nibble_order="low_first",
                                                dynamic=True, faithful=False)
        self.bits = self.x.view(np.uint16).reshape(-1)
        self.y = np.empty(m * n // 2 if dst == "float4_e2m1" else m * n, np.uint8)
        self.s = np.empty(m * self.tr.tiling.pairNum * 2, np.uint8)
        self.bytes_moved = self.x.nbytes + self.y.nbytes + self.s.nbytes
        self.run()

    def run(self):
        launch.run_dynamic(self.bits, self.y, self.s, self.tr, self.params_vec, 0.0, 0.0, "bfloat16",
                           validate=False)

    def frontend(self):
        api.npu_dynamic_mx_quant(self.x, dst_type=TORCH_CODE[self.dst])

    def numpy(self):
        numpy_dynamic_last_axis(self.x, self.dst)

    def time_npu_emu(self, dst, threads, device):
        self.run()

    def time_npu_emu_frontend(self, dst, threads, device):
        self.frontend()

    def time_numpy_straightforward(self, dst, threads, device):
        self.numpy()

    def track_npu_emu_over_numpy(self, dst, threads, device):
        return common.best_seconds(self.run, 3) / common.best_seconds(self.numpy, 1)
    track_npu_emu_over_numpy.unit = "x numpy time"

    def track_npu_emu_over_host_roofline(self, dst, threads, device):
        return common.best_seconds(self.run, 3) / common.host_roofline_seconds(self.bytes_moved, threads)
    track_npu_emu_over_host_roofline.unit = "x host roofline"

    def track_npu_emu_over_device_roofline(self, dst, threads, device):
        return common.best_seconds(self.run, 3) / common.device_roofline_seconds(self.bytes_moved, device)
    track_npu_emu_over_device_roofline.unit = "x device roofline"

    def track_npu_emu_over_measured_copy(self, dst, threads, device):
        return common.best_seconds(self.run, 3) / measured_copy_seconds(self.bytes_moved)
    track_npu_emu_over_measured_copy.unit = "x host copy of the same bytes"


class DynamicMxQuantHalf:
    """float16 [8192, 7168] -> E4M3FN along the last axis and along axis -2, through the front end: FP16 inputs take
    the half path (kernel M_HALF), BF16 the fast one (DynamicMxQuant above)."""

    params = ([-1, -2], common.THREADS)
    param_names = ["axis", "threads"]
    timeout = 900

    def setup(self, axis, threads):
        common.use_threads(threads)
        self.axis = axis
        self.x = bf16_input(DYNAMIC_SHAPE, 2).astype(np.float16)
        m, n = DYNAMIC_SHAPE
        self.bytes_moved = self.x.nbytes + m * n + m * n // 32
        self.run()

    def run(self):
        api.npu_dynamic_mx_quant(self.x, axis=self.axis, dst_type=TORCH_CODE["float8_e4m3fn"])

    def numpy(self):
        if self.axis == -1:
            numpy_dynamic_last_axis(self.x, "float8_e4m3fn")
        else:
            m, n = DYNAMIC_SHAPE
            numpy_mx_blocks(self.x.astype(np.float32).reshape(m // 32, 32, n), "float8_e4m3fn")

    def time_npu_emu_frontend(self, axis, threads):
        self.run()

    def time_numpy_straightforward(self, axis, threads):
        self.numpy()

    def track_npu_emu_over_numpy(self, axis, threads):
        return common.best_seconds(self.run, 3) / common.best_seconds(self.numpy, 1)
    track_npu_emu_over_numpy.unit = "x numpy time"

    def track_npu_emu_over_host_roofline(self, axis, threads):
        return common.best_seconds(self.run, 3) / common.host_roofline_seconds(self.bytes_moved, threads)
    track_npu_emu_over_host_roofline.unit = "x host roofline"
