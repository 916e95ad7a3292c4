"""``npu-emu run|tiling|golden sign_bits_unpack|sign_bits_pack``."""

import os

import numpy as np

from npu_emu.frontend.binfile import read_bin, write_bin, write_case


def _common(p):
    p.add_argument("--soc", default="ascend910b2", help="SoC whose tiling and kernel to reproduce "
                   "(ascend910b*, ascend910_93: LSB-first 910B kernels; ascend950pr/dt: arch35)")
    p.add_argument("--core-num", type=int, default=None, help="override the SoC's vector-core count")
    p.add_argument("--ub-size", type=int, default=None, help="override the usable UB bytes per core")


# run ----------------------------------------------------------------------------------------------------------

def _add_run_unpack(p):
    p.add_argument("--input", required=True, help="uint8 packed sign bytes (.bin)")
    p.add_argument("--size", type=int, required=True, help="first output dimension; 8*N must divide by it")
    p.add_argument("--dtype", default="float32", choices=("float32", "float16"), help="output dtype")
    p.add_argument("--output", required=True, help="where to write the (size, 8N/size) result (.bin)")
    p.add_argument("--trace", action="store_true", help="print the tiling data and device GM overruns")
    _common(p)


def _run_unpack(a):
    from npu_emu.ops import npu_sign_bits_unpack

    x = read_bin(a.input, "uint8")
    y, tr = npu_sign_bits_unpack(x, a.size, a.dtype, soc=a.soc, core_num=a.core_num, ub_size=a.ub_size,
                                 trace=True)
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {y.shape} {y.dtype}")
    if a.trace and tr is not None:
        _print_trace(tr)
    return 0


def _add_run_pack(p):
    p.add_argument("--input", required=True, help="float input (.bin)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float16"), help="input dtype")
    p.add_argument("--size", type=int, required=True, help="first output dimension; ceil(N/8) must divide by it")
    p.add_argument("--output", required=True, help="where to write the (size, ceil(N/8)/size) uint8 result")
    p.add_argument("--nan-bit", type=int, default=0, choices=(0, 1), help="bit produced for NaN (default 0)")
    p.add_argument("--denormal-compare", default="ieee", choices=("ieee", "ftz"))
    p.add_argument("--trace", action="store_true", help="print the tiling data and device GM overruns")
    _common(p)


def _run_pack(a):
    from npu_emu.ops import npu_sign_bits_pack

    x = read_bin(a.input, a.dtype)
    y, tr = npu_sign_bits_pack(x, a.size, soc=a.soc, nan_bit=a.nan_bit, denormal_compare=a.denormal_compare,
                               core_num=a.core_num, ub_size=a.ub_size, trace=True)
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {y.shape} uint8")
    if a.trace and tr is not None:
        _print_trace(tr)
    return 0


# tiling -------------------------------------------------------------------------------------------------------

def _add_tiling(p):
    p.add_argument("--n", type=int, required=True, help="input length: bytes (unpack) or elements (pack)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float16"),
                   help="output dtype (unpack) / input dtype (pack)")
    p.add_argument("--cores", action="store_true", help="also print every core's range and tile count")
    _common(p)


def _tiling(op, a):
    from npu_emu.kernels.sign_bits import checks, kernel, tiling

    fam = checks.soc_family(a.soc)
    fn = {("unpack", "910b"): tiling.unpack_tiling, ("unpack", "950"): tiling.unpack_tiling_950,
          ("pack", "910b"): tiling.pack_tiling, ("pack", "950"): tiling.pack_tiling_950}.get((op, fam))
    if fn is None:
        raise SystemExit(f"npu-emu: no SignBits kernel for {a.soc}")
    tr = fn(a.n, a.dtype, soc=a.soc, core_num=a.core_num, ub_size=a.ub_size)
    print(f"SignBits{op.capitalize()} tiling for n={a.n} ({a.dtype}) on {tr.soc}:")
    print(tr.tiling.describe())
    print(f"blockDim {tr.block_dim}  tilingKey {tr.tiling_key}  workspace {tr.workspace_size}  "
          f"ub {tr.ub_size} B/core  (platform cores {tr.core_num})")
    print("struct bytes:", tr.tiling.to_bytes().hex())
    for note in tr.notes:
        print("note:", note)
    split = kernel.core_split(op, tr, fam, a.n)
    print(f"{'core':>5} {'start':>14} {'length':>12} {'tiles':>6} {'tail':>8}")
    rows = split if a.cores or len(split) <= 8 else split[:3] + [None] + split[-3:]
    for row in rows:
        if row is None:
            print(f"{'...':>5}")
            continue
        print(f"{row[0]:>5} {row[1]:>14} {row[2]:>12} {row[3]:>6} {row[4]:>8}")
    return 0


# golden -------------------------------------------------------------------------------------------------------

def _add_golden(p):
    p.add_argument("--out", required=True, help="directory for the .bin files and manifest.json")
    p.add_argument("--n", type=int, default=128, help="input length (bytes for unpack, elements for pack)")
    p.add_argument("--size", type=int, default=1)
    p.add_argument("--dtype", default="float32", choices=("float32", "float16"))
    p.add_argument("--seed", type=int, default=0)


def _golden(op, a):
    from npu_emu.kernels.sign_bits import golden as g

    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    if op == "unpack":
        x = rng.integers(0, 256, a.n, dtype=np.uint8)
        y = g.sign_bits_unpack(x, a.size, a.dtype)
        inputs = {"x": ("x.bin", x)}
    else:
        x = rng.uniform(-10, 10, a.n).astype(a.dtype)
        y = g.sign_bits_pack(x, a.size)
        inputs = {"x": ("x.bin", x)}
    write_case(a.out, {"op": f"sign_bits_{op}", "attrs": {"size": a.size, "dtype": a.dtype}}, inputs,
               {"y": ("golden.bin", y)})
    print(f"wrote {a.out}/x.bin, golden.bin, manifest.json")
    return 0


def _print_trace(tr):
    print(f"tiling {tr.tiling_data}  blockDim {tr.block_dim}  key {tr.tiling_key}")
    for r in tr.gm_overrun:
        print(f"device {r.kind} past the end of {r.tensor}: bytes [{r.start}, {r.end}) by core {r.core}")


COMMANDS = {
    "sign_bits_unpack": {
        "help": "uint8 sign bits -> +-1.0 (float32/float16)",
        "run": (_add_run_unpack, _run_unpack),
        "tiling": (_add_tiling, lambda a: _tiling("unpack", a)),
        "golden": (_add_golden, lambda a: _golden("unpack", a)),
    },
    "sign_bits_pack": {
        "help": "float signs -> packed uint8 bits",
        "run": (_add_run_pack, _run_pack),
        "tiling": (_add_tiling, lambda a: _tiling("pack", a)),
        "golden": (_add_golden, lambda a: _golden("pack", a)),
    },
}
