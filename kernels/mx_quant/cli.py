"""``npu-emu run|tiling|golden grouped_dynamic_mx_quant|dynamic_mx_quant`` on raw little-endian .bin files.

Outputs: ``--y`` gets the element codes (FP8 one byte per element, FP4 packed two per byte along the last axis),
``--mxscale`` the E8M0 codes, both as uint8 .bin files, as CANN's gen_data / compare_data scripts hold them.
"""

import os

import numpy as np

from npu_emu.frontend.binfile import parse_shape, read_bin, write_bin, write_case

_DST = {"float8_e5m2": 23, "float8_e4m3fn": 24, "float4_e2m1": 296, "float4_e1m2": 297,
        "e5m2": 23, "e4m3fn": 24, "e2m1": 296, "e1m2": 297}


def _dst_code(text):
    if text in _DST:
        return _DST[text]
    try:
        return int(text)
    except ValueError:
        raise SystemExit(f"npu-emu: --dst-type {text!r}: use float8_e4m3fn, float8_e5m2, float4_e2m1, float4_e1m2 "
                         f"or a torch dtype code (24, 23, 296, 297)") from None


def _common(p, dynamic):
    p.add_argument("--round-mode", default="rint", choices=("rint", "round", "floor"),
                   help="element rounding (FP8 outputs accept rint only)")
    p.add_argument("--dst-type", default="float4_e2m1" if dynamic else "float8_e5m2",
                   help="output format: float8_e4m3fn, float8_e5m2, float4_e2m1, float4_e1m2 (or torch code)")
    p.add_argument("--scale-alg", type=int, default=0, choices=(0, 1, 2), help="0 OCP, 1 RCEIL (FP8), 2 FP4 range")
    p.add_argument("--dst-type-max", type=float, default=0.0)
    p.add_argument("--soc", default="ascend950pr", help="ascend950pr / ascend950dt (others fail as on the device)")
    p.add_argument("--core-num", type=int, default=None, help="override the SoC's vector-core count")
    p.add_argument("--cann-version", default="master", choices=("master", "9.1.0", "9.0.1", "9.0.0"))
    p.add_argument("--unsigned-zero", action="store_true", help="switch signed_zero=False")
    p.add_argument("--ftz", action="store_true", help="switch ftz=True (flush FP32/BF16 subnormal operands)")
    p.add_argument("--fp4-nibble-order", default="low_first", choices=("low_first", "high_first"))
    p.add_argument("--faithful", action="store_true", help="stage every tile through UB with DataCopyPad")
    p.add_argument("--trace", action="store_true", help="print the tiling data")


def _add_run_grouped(p):
    p.add_argument("--x", required=True, help="x [m, n] (.bin)")
    p.add_argument("--shape", required=True, type=parse_shape, help="m,n")
    p.add_argument("--x-dtype", default="bfloat16", choices=("bfloat16", "float16"))
    p.add_argument("--group-index", required=True, help="int32 cumulative group end offsets (.bin)")
    p.add_argument("--y", required=True, help="output element codes (.bin)")
    p.add_argument("--mxscale", required=True, help="output E8M0 scales [m // 64 + g, n, 2] (.bin)")
    p.add_argument("--gap-fill", default="0", help="byte written to mxscale rows no group owns, or 'none'")
    p.add_argument("--nan-in-max", default="propagate", choices=("propagate", "ignore"))
    _common(p, dynamic=False)


def _run_grouped(a):
    from npu_emu.kernels.mx_quant.api import npu_grouped_dynamic_mx_quant

    x = read_bin(a.x, a.x_dtype, a.shape)
    gi = read_bin(a.group_index, "int32")
    gap = None if a.gap_fill.lower() == "none" else int(a.gap_fill, 0)
    (y, s), tr = npu_grouped_dynamic_mx_quant(
        x, gi, round_mode=a.round_mode, dst_type=_dst_code(a.dst_type), scale_alg=a.scale_alg,
        dst_type_max=a.dst_type_max, soc=a.soc, cann_version=a.cann_version, gap_fill=gap,
        signed_zero=not a.unsigned_zero, ftz=a.ftz, nan_in_max=a.nan_in_max, fp4_nibble_order=a.fp4_nibble_order,
        core_num=a.core_num, faithful=a.faithful, trace=True)
    write_bin(a.y, np.asarray(y).view(np.uint8))
    write_bin(a.mxscale, s)
    print(f"wrote {a.y}: {np.asarray(y).shape} codes, {a.mxscale}: {s.shape} E8M0")
    if a.trace and tr is not None:
        _print_trace(tr)
    return 0


def _add_run_dynamic(p):
    p.add_argument("--x", required=True, help="input (.bin)")
    p.add_argument("--shape", required=True, type=parse_shape, help="e.g. 8192,7168")
    p.add_argument("--x-dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    p.add_argument("--axis", type=int, default=-1)
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--max-low-bound", type=float, default=0.0)
    p.add_argument("--y", required=True, help="output element codes (.bin)")
    p.add_argument("--mxscale", required=True, help="output E8M0 scales (.bin)")
    _common(p, dynamic=True)


def _run_dynamic(a):
    from npu_emu.kernels.mx_quant.api import npu_dynamic_mx_quant

    x = read_bin(a.x, a.x_dtype, a.shape)
    (y, s), tr = npu_dynamic_mx_quant(
        x, axis=a.axis, round_mode=a.round_mode, dst_type=_dst_code(a.dst_type), block_size=a.block_size,
        scale_alg=a.scale_alg, dst_type_max=a.dst_type_max, max_low_bound=a.max_low_bound, soc=a.soc,
        cann_version=a.cann_version, signed_zero=not a.unsigned_zero, ftz=a.ftz,
        fp4_nibble_order=a.fp4_nibble_order, core_num=a.core_num, faithful=a.faithful, trace=True)
    write_bin(a.y, np.asarray(y).view(np.uint8))
    write_bin(a.mxscale, s)
    print(f"wrote {a.y}: {np.asarray(y).shape} codes, {a.mxscale}: {s.shape} E8M0")
    if a.trace and tr is not None:
        _print_trace(tr)
    return 0


# tiling -------------------------------------------------------------------------------------------------------

def _add_tiling_grouped(p):
    p.add_argument("--shape", required=True, type=parse_shape, help="m,n of x")
    p.add_argument("--groups", type=int, default=1, help="number of groups g")
    p.add_argument("--x-dtype", default="bfloat16", choices=("bfloat16", "float16"))
    p.add_argument("--round-mode", default="rint", choices=("rint", "round", "floor"))
    p.add_argument("--dst-type", default="float8_e5m2")
    p.add_argument("--scale-alg", type=int, default=0)
    p.add_argument("--dst-type-max", type=float, default=0.0)
    p.add_argument("--soc", default="ascend950pr")
    p.add_argument("--core-num", type=int, default=None)


def _tiling_grouped(a):
    from npu_emu.kernels.mx_quant import checks, tiling

    m, n = a.shape
    y = checks.torch_dst_type(_dst_code(a.dst_type))
    tr = tiling.grouped_tiling(m, n, a.groups, x_dtype=a.x_dtype, y_dtype=y, round_mode=a.round_mode,
                               scale_alg=a.scale_alg, dst_type_max=a.dst_type_max, soc=a.soc, core_num=a.core_num)
    _print_tiling("GroupedDynamicMxQuant", tr)
    print("tiling data as the CANN UT prints it (int64 words):",
          " ".join(str(v) for v in np.frombuffer(tr.tiling.to_bytes(), np.int64)))
    return 0


def _add_tiling_dynamic(p):
    p.add_argument("--shape", required=True, type=parse_shape)
    p.add_argument("--axis", type=int, default=-1)
    p.add_argument("--x-dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    p.add_argument("--dst-type", default="float4_e2m1")
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--soc", default="ascend950pr")
    p.add_argument("--core-num", type=int, default=None)


def _tiling_dynamic(a):
    from npu_emu.kernels.mx_quant import checks, tiling

    y = checks.torch_dst_type(_dst_code(a.dst_type))
    tr = tiling.dynamic_unit_tiling(a.shape, a.axis, x_dtype=a.x_dtype, y_dtype=y, block_size=a.block_size,
                                    soc=a.soc, core_num=a.core_num)
    _print_tiling("DynamicMxQuant", tr)
    first, count = tiling.unit_ranges(tr.tiling)
    print(f"units per core: {count.min()}..{count.max()} (first units {first[:4].tolist()} ...)")
    return 0


def _print_tiling(op, tr):
    print(f"{op} tiling on {tr.soc}:")
    print(tr.tiling.describe())
    print(f"blockDim {tr.block_dim}  tilingKey {tr.tiling_key}  workspace {tr.workspace_size}  "
          f"UB {tr.ub_size} B/core  (platform cores {tr.core_num})")
    for note in tr.notes:
        print("note:", note)


# golden -------------------------------------------------------------------------------------------------------

def _add_golden(p):
    p.add_argument("--out", required=True, help="directory for the .bin files and manifest.json")
    p.add_argument("--shape", type=parse_shape, default=(256, 256))
    p.add_argument("--groups", type=int, default=4, help="grouped only: number of random groups")
    p.add_argument("--axis", type=int, default=-1, help="dynamic only")
    p.add_argument("--x-dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    p.add_argument("--dst-type", default=None)
    p.add_argument("--round-mode", default="rint", choices=("rint", "round", "floor"))
    p.add_argument("--scale-alg", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)


def _golden(op, a):
    import ml_dtypes

    from npu_emu.kernels.mx_quant import golden as g
    from npu_emu.kernels.mx_quant import checks

    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    xdt = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float32": np.float32}[a.x_dtype]
    x = (rng.standard_normal(a.shape) * np.exp2(rng.integers(-8, 8, a.shape[:1] + (1,) * (len(a.shape) - 1))))
    x = x.astype(np.float32).astype(xdt)
    dst = checks.torch_dst_type(_dst_code(a.dst_type or ("float8_e5m2" if op == "grouped" else "float4_e2m1")))
    manifest = {"op": f"{op}_dynamic_mx_quant" if op == "grouped" else "dynamic_mx_quant",
                "attrs": {"dst_type": dst, "round_mode": a.round_mode, "scale_alg": a.scale_alg}}
    files = {"x": x}
    if op == "grouped":
        m = a.shape[0]
        cuts = np.sort(rng.integers(0, m + 1, max(a.groups - 1, 0)))
        gi = np.append(cuts, m).astype(np.int32)
        files["group_index"] = gi
        y, s = g.grouped_dynamic_mx_quant(x, gi, dst_type=dst, round_mode=a.round_mode, scale_alg=a.scale_alg)
    else:
        manifest["attrs"]["axis"] = a.axis
        y, s = g.dynamic_mx_quant(x, axis=a.axis, dst_type=dst, round_mode=a.round_mode, scale_alg=a.scale_alg)
    files["golden_y"], files["golden_mxscale"] = y, s
    write_case(a.out, manifest, {k: (f"{k}.bin", v) for k, v in files.items() if not k.startswith("golden")},
               {k: (f"{k}.bin", v) for k, v in files.items() if k.startswith("golden")})
    print(f"wrote {', '.join(k + '.bin' for k in files)} and manifest.json to {a.out}")
    return 0


def _print_trace(tr):
    print(f"tiling {tr.tiling_data}  blockDim {tr.block_dim}  key {tr.tiling_key}  workspace {tr.workspace_size}")
    for note in tr.notes:
        print("note:", note)


COMMANDS = {
    "grouped_dynamic_mx_quant": {
        "help": "MX quantisation of row groups (MoE): bf16/fp16 [m, n] -> FP8/FP4 + E8M0 scales",
        "run": (_add_run_grouped, _run_grouped),
        "tiling": (_add_tiling_grouped, _tiling_grouped),
        "golden": (_add_golden, lambda a: _golden("grouped", a)),
    },
    "dynamic_mx_quant": {
        "help": "MX quantisation along any axis: bf16/fp16/fp32 -> FP8/FP4 + E8M0 scales",
        "run": (_add_run_dynamic, _run_dynamic),
        "tiling": (_add_tiling_dynamic, _tiling_dynamic),
        "golden": (_add_golden, lambda a: _golden("dynamic", a)),
    },
}
