"""Codec throughput: npu_emu.dtypes.encode / decode of 16 Mi elements next to ml_dtypes (en_dtypes for HiF8)
``astype`` in the same run, the ratio between them, both rooflines, and import + first call in a fresh process.

Both sides allocate their output, as ``astype`` does. The first npu-emu call happens in ``setup`` so that numba's
compile / cache load is not timed (docs/contributing/numba_rules.md §6.2).
"""

import ml_dtypes
import numpy as np

from benchmarks import common
from npu_emu import dtypes

N = 1 << 24
FORMATS = ["float8_e4m3fn", "float8_e5m2", "hifloat8", "float4_e2m1"]


def _peer_dtype(fmt):
    """The numpy dtype whose astype is the peer implementation, or None (then the case is skipped)."""
    if fmt == "hifloat8":
        try:
            import en_dtypes  # a test dependency, not a runtime one
        except ImportError:
            return None
        return en_dtypes.hifloat8
    return {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
            "float4_e2m1": ml_dtypes.float4_e2m1fn}[fmt]


class _Codec:
    params = (FORMATS, common.THREADS)
    param_names = ["fmt", "threads"]
    timeout = 300

    def setup(self, fmt, threads):
        common.use_threads(threads)
        self.peer = _peer_dtype(fmt)
        self.fmt = fmt
        self.prepare(fmt)
        self.npu_emu()  # first call: compile or cache load

    def time_npu_emu(self, fmt, threads):
        self.npu_emu()

    def time_ml_dtypes(self, fmt, threads):
        if self.peer is None:
            raise NotImplementedError("no peer dtype installed")
        self.ml_dtypes()

    def track_npu_emu_over_ml_dtypes(self, fmt, threads):
        if self.peer is None:
            raise NotImplementedError("no peer dtype installed")
        return common.best_seconds(self.npu_emu) / common.best_seconds(self.ml_dtypes, repeat=3)

    track_npu_emu_over_ml_dtypes.unit = "x ml_dtypes time"

    def track_npu_emu_over_host_roofline(self, fmt, threads):
        return common.best_seconds(self.npu_emu) / common.host_roofline_seconds(self.bytes_moved, threads)

    track_npu_emu_over_host_roofline.unit = "x host roofline"


class EncodeFloat32(_Codec):
    """float32 -> codes (non-saturating defaults: RNE for FP8/FP4, ties-away for HiF8)."""

    def prepare(self, fmt):
        self.x = common.normal_f32(N)
        self.bytes_moved = 5 * N

    def npu_emu(self):
        return dtypes.encode(self.x, self.fmt)

    def ml_dtypes(self):
        with np.errstate(invalid="ignore", over="ignore"):
            return self.x.astype(self.peer)


class Decode(_Codec):
    """codes -> float32."""

    def prepare(self, fmt):
        self.codes = common.random_codes(N, 4 if fmt.startswith("float4") else 8)
        self.typed = self.codes.view(self.peer) if self.peer is not None else None
        self.bytes_moved = 5 * N

    def npu_emu(self):
        return dtypes.decode(self.codes, self.fmt)

    def ml_dtypes(self):
        return self.typed.astype(np.float32)


class DeviceRoofline:
    """Emulator time over the device's HBM roofline for the same GM traffic (docs/device/platforms.md §4)."""

    params = (["encode_float8_e4m3fn", "decode_float8_e4m3fn"], common.THREADS, list(common.DEVICES))
    param_names = ["op", "threads", "device"]
    timeout = 300

    def setup(self, op, threads, device):
        common.use_threads(threads)
        if op.startswith("encode"):
            x = common.normal_f32(N)
            self.call = lambda: dtypes.encode(x, "float8_e4m3fn")
        else:
            codes = common.random_codes(N)
            self.call = lambda: dtypes.decode(codes, "float8_e4m3fn")
        self.call()
        self.device_seconds = common.device_roofline_seconds(5 * N, device)

    def track_npu_emu_over_device(self, op, threads, device):
        return common.best_seconds(self.call) / self.device_seconds

    track_npu_emu_over_device.unit = "x device roofline"


class ImportAndFirstCall:
    """Import of npu_emu.dtypes plus the first encode and decode in a fresh interpreter (numba cache warm after the
    first run)."""

    timeout = 300

    def timeraw_import_and_first_call(self):
        return """
import numpy as np
from npu_emu import dtypes
dtypes.decode(dtypes.encode(np.ones(1024, np.float32), "float8_e4m3fn"), "float8_e4m3fn")
"""
