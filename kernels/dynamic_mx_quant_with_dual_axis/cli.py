"""``npu-emu run|tiling dynamic_mx_quant_with_dual_axis`` on raw little-endian .bin files: y1 / y2 get the element
codes (FP8 one byte per element, FP4 packed two per byte along the last axis), mxscale1 / mxscale2 the E8M0 codes."""

import numpy as np

from npu_emu.frontend.binfile import parse_shape, read_bin, write_bin
from npu_emu.kernels.mx_quant.cli import _dst_code, _print_tiling


def _add_run(p):
    p.add_argument("--x", required=True, help="input (.bin)")
    p.add_argument("--shape", required=True, type=parse_shape, help="e.g. 8192,7168")
    p.add_argument("--x-dtype", default="bfloat16", choices=("bfloat16", "float16"))
    p.add_argument("--round-mode", default="rint", choices=("rint", "round", "floor"))
    p.add_argument("--dst-type", default="float4_e2m1", help="float8_e4m3fn, float8_e5m2, float4_e2m1, float4_e1m2")
    p.add_argument("--scale-alg", type=int, default=0, choices=(0, 1, 2))
    p.add_argument("--dst-type-max", type=float, default=0.0)
    p.add_argument("--soc", default="ascend950pr")
    p.add_argument("--core-num", type=int, default=None)
    for name in ("y1", "mxscale1", "y2", "mxscale2"):
        p.add_argument(f"--{name}", required=True, help=f"output {name} (.bin)")
    p.add_argument("--trace", action="store_true", help="print the tiling data")


def _run(a):
    from npu_emu.kernels.dynamic_mx_quant_with_dual_axis.api import npu_dynamic_mx_quant_with_dual_axis

    x = read_bin(a.x, a.x_dtype, a.shape)
    outs, tr = npu_dynamic_mx_quant_with_dual_axis(
        x, round_mode=a.round_mode, dst_type=_dst_code(a.dst_type), scale_alg=a.scale_alg,
        dst_type_max=a.dst_type_max, soc=a.soc, core_num=a.core_num, trace=True)
    for name, v in zip(("y1", "mxscale1", "y2", "mxscale2"), outs):
        write_bin(getattr(a, name), np.asarray(v).view(np.uint8))
        print(f"wrote {getattr(a, name)}: {np.asarray(v).shape}")
    if a.trace and tr is not None:
        _print_tiling("DynamicMxQuantWithDualAxis", tr)
    return 0


def _add_tiling(p):
    p.add_argument("--shape", required=True, type=parse_shape)
    p.add_argument("--dst-type", default="float4_e2m1")
    p.add_argument("--round-mode", default="rint", choices=("rint", "round", "floor"))
    p.add_argument("--scale-alg", type=int, default=0)
    p.add_argument("--soc", default="ascend950pr")
    p.add_argument("--core-num", type=int, default=None)


def _tiling(a):
    from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import checks, tiling

    y = checks.torch_dst_type(_dst_code(a.dst_type))
    tr = tiling.dual_axis_tiling(a.shape, y_dtype=y, round_mode=a.round_mode, scale_alg=a.scale_alg, soc=a.soc,
                                 core_num=a.core_num)
    _print_tiling("DynamicMxQuantWithDualAxis", tr)
    return 0


COMMANDS = {
    "dynamic_mx_quant_with_dual_axis": {
        "help": "MX quantisation along axes -1 and -2 at once: bf16/fp16 -> y1, mxscale1, y2, mxscale2",
        "run": (_add_run, _run),
        "tiling": (_add_tiling, _tiling),
    },
}
