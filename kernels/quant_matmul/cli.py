"""``npu-emu run|tiling|golden quant_matmul``, ``npu-emu run trans_quant_param``, ``npu-emu run trans_sparse4to2_para``
and ``npu-emu run sparse4to2_quant_matmul`` (raw little-endian .bin files)."""

import os

import numpy as np

from npu_emu.frontend.binfile import parse_shape, read_bin, write_bin, write_case

_SWITCHES = (("--float-accum", "exact", ("exact", "kchunk", "sequential", "numpy")),
             ("--fixpipe-round", "rne", ("rne", "half_away")),
             ("--cast-overflow", "inf", ("inf", "saturate")),
             ("--fp4-nibble-order", "low_first", ("low_first", "high_first")),
             ("--e8m0-zero", "pow2", ("pow2", "zero")),
             ("--group-size-inference", "checker", ("checker", "explicit")),
             ("--tcg-fp8-overflow", "nan", ("nan", "saturate")))


def _tensor(p, name, required=False, help_text=""):
    flag = name.replace("_", "-")
    p.add_argument(f"--{flag}", required=required, help=f"{help_text} (.bin)")
    p.add_argument(f"--{flag}-shape", type=parse_shape, help=f"storage shape of --{flag}, e.g. 128,256")
    p.add_argument(f"--{flag}-dtype", help=f"dtype of --{flag}: int8, int4 (packed bytes), int32, float8_e4m3fn, "
                                           f"float8_e5m2, hifloat8, float4_e2m1 (packed bytes), float8_e8m0, "
                                           f"float32, float16, bfloat16, int64/uint64 (packed scales)")


def _load(a, name, default_dtype=None):
    path = getattr(a, name)
    if path is None:
        return None, None
    dtype = getattr(a, f"{name}_dtype") or default_dtype
    if dtype is None:
        raise SystemExit(f"npu-emu: --{name.replace('_', '-')}-dtype is required")
    return read_bin(path, dtype, getattr(a, f"{name}_shape")), dtype


def _add_run(p):
    _tensor(p, "x1", True, "activation")
    _tensor(p, "x2", True, "weight")
    _tensor(p, "scale", True, "x2 scale: float32, bfloat16, packed uint64/int64 or E8M0 codes")
    _tensor(p, "pertoken_scale", help_text="x1 scale")
    _tensor(p, "offset", help_text="offset (float32)")
    _tensor(p, "bias", help_text="bias")
    _tensor(p, "y_scale", help_text="yScale (packed uint64/int64, T-CG)")
    p.add_argument("--output-dtype", default="int8", help="float16, bfloat16, float32, int8 (default), int32")
    p.add_argument("--group-sizes", type=parse_shape, help="gm,gn,gk")
    p.add_argument("--output", required=True, help="where to write the result (.bin)")
    p.add_argument("--soc", default="ascend910b2")
    p.add_argument("--trace", action="store_true", help="print the routed op, quant mode and tiling")
    for flag, default, choices in _SWITCHES:
        p.add_argument(flag, default=default, choices=choices)


def _run(a):
    from npu_emu.kernels.quant_matmul.api import npu_quant_matmul

    x1, d1 = _load(a, "x1", "int8")
    x2, d2 = _load(a, "x2", "int8")
    scale, ds = _load(a, "scale", "float32")
    pt, dp = _load(a, "pertoken_scale", "float32")
    off, _ = _load(a, "offset", "float32")
    bias, _ = _load(a, "bias", "int32")
    ys, _ = _load(a, "y_scale", "int64")
    y, tr = npu_quant_matmul(x1, x2, scale, offset=off, pertoken_scale=pt, bias=bias, output_dtype=a.output_dtype,
                             y_scale=ys, tcg_fp8_overflow=a.tcg_fp8_overflow,
                             x1_dtype=d1, x2_dtype=d2, scale_dtype=ds, pertoken_scale_dtype=dp,
                             group_sizes=a.group_sizes, soc=a.soc, float_accum=a.float_accum,
                             fixpipe_round=a.fixpipe_round, cast_overflow=a.cast_overflow,
                             fp4_nibble_order=a.fp4_nibble_order, e8m0_zero=a.e8m0_zero,
                             group_size_inference=a.group_size_inference, trace=True)
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {tuple(y.shape)} {y.dtype}")
    if a.trace and tr is not None:
        print(f"{tr.routed_op} {tr.quant_mode} on {tr.soc}: blockDim {tr.block_dim}, workspace {tr.workspace_size}")
        for note in tr.notes:
            print("note:", note)
    return 0


def _add_tiling(p):
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--x1-dtype", default="int8")
    p.add_argument("--x2-dtype", default=None)
    p.add_argument("--trans-a", action="store_true")
    p.add_argument("--trans-b", action="store_true")
    p.add_argument("--mode", default="default", choices=("default", "mx", "perblock", "pertile"))
    p.add_argument("--soc", default="ascend910b2")
    p.add_argument("--core-num", type=int, default=None, help="override the cube-core count")
    p.add_argument("--cores", action="store_true", help="list every core's blocks")


def _tiling(a):
    from npu_emu.kernels.quant_matmul import kernel, tiling

    shape = tiling.MatmulShape(a.m, a.n, a.k, batch=a.batch, trans_a=a.trans_a, trans_b=a.trans_b,
                               a_dtype=a.x1_dtype, b_dtype=a.x2_dtype or a.x1_dtype, is_mx=a.mode == "mx",
                               perblock=a.mode in ("perblock", "pertile"), gs_m=1 if a.mode == "pertile" else 128)
    tr = tiling.quant_matmul_tiling(shape, soc=a.soc, core_num=a.core_num)
    print(f"QuantBatchMatmulV3 tiling for m={a.m} n={a.n} k={a.k} batch={a.batch} ({a.mode}) on {tr.soc}:")
    print(tr.tiling.describe())
    print(f"blockDim {tr.block_dim}  tilingKey {tr.tiling_key}  workspace {tr.workspace_size}  ub {tr.ub_size} B/core")
    for note in tr.notes:
        print("note:", note)
    core, local, b, r0, rows, c0, cols = kernel.block_table(tr)
    shown = range(tr.block_dim) if a.cores or tr.block_dim <= 8 else list(range(3)) + [None] + \
        list(range(tr.block_dim - 3, tr.block_dim))
    print(f"{'core':>5} {'blocks':>7}  first blocks (batch, row0:rows, col0:cols)")
    for c in shown:
        if c is None:
            print(f"{'...':>5}")
            continue
        sel = np.nonzero(core == c)[0]
        first = ", ".join(f"({b[i]}, {r0[i]}:{rows[i]}, {c0[i]}:{cols[i]})" for i in sel[:3])
        print(f"{c:>5} {sel.size:>7}  {first}{' ...' if sel.size > 3 else ''}")
    return 0


def _add_golden(p):
    p.add_argument("--out", required=True, help="directory for the .bin files and manifest.json")
    p.add_argument("--m", type=int, default=16)
    p.add_argument("--n", type=int, default=32)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--mode", default="T-C", choices=("T-C", "K-C", "requant"),
                   help="int8 T-C (packed uint64 scale) -> fp16, K-C -> bf16, or T-C requant -> int8")
    p.add_argument("--seed", type=int, default=0)


def _golden(a):
    from npu_emu.kernels.quant_matmul import golden as g

    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    x1 = rng.integers(-128, 128, (a.m, a.k)).astype(np.int8)
    x2 = rng.integers(-128, 128, (a.k, a.n)).astype(np.int8)
    s = rng.uniform(0.0005, 0.005, a.n).astype(np.float32)
    inputs = {"x1": x1, "x2": x2}
    if a.mode == "K-C":
        p1 = rng.uniform(0.5, 2, a.m).astype(np.float32)
        y = g.quant_matmul(x1, x2, s, x1_scale=p1, x1_dtype="int8", x2_dtype="int8", scale_dtype="float32",
                           out_dtype="bfloat16")
        inputs.update(scale=s, pertoken_scale=p1)
        attrs = {"output_dtype": "bfloat16", "scale_dtype": "float32"}
    else:
        off = rng.uniform(-10, 10, a.n).astype(np.float32) if a.mode == "requant" else None
        words = g.trans_quant_param(s, off).view(np.int64)
        out = "int8" if a.mode == "requant" else "float16"
        y = g.quant_matmul(x1, x2, words, x1_dtype="int8", x2_dtype="int8", scale_dtype="int64", out_dtype=out)
        inputs.update(scale=words)
        attrs = {"output_dtype": out, "scale_dtype": "int64"}
    write_case(a.out, {"op": "quant_matmul", "mode": a.mode, "attrs": attrs},
               {k: (f"{k}.bin", v) for k, v in inputs.items()}, {"y": ("golden.bin", y)})
    print(f"wrote {', '.join(inputs)}, golden.bin and manifest.json to {a.out}")
    return 0


def _add_run_tqp(p):
    p.add_argument("--scale", required=True, help="float32 scale (.bin)")
    p.add_argument("--offset", help="float32 offset (.bin)")
    p.add_argument("--round-mode", type=int, default=0, choices=(0, 1))
    p.add_argument("--output", required=True, help="int64 packed words (.bin)")


def _run_tqp(a):
    from npu_emu.kernels.quant_matmul.api import npu_trans_quant_param

    s = read_bin(a.scale, "float32")
    o = None if a.offset is None else read_bin(a.offset, "float32")
    w = npu_trans_quant_param(s, o, a.round_mode)
    write_bin(a.output, w)
    print(f"wrote {a.output}: {w.size} int64 words")
    return 0


def _add_run_sparse_compress(p):
    p.add_argument("--weight", required=True, help="dense int8 weight (n, k) (.bin)")
    p.add_argument("--weight-shape", type=parse_shape, required=True, help="n,k")
    p.add_argument("--output-sparse", required=True, help="int8 NZ kept values (⌈k/64⌉, ⌈n/16⌉, 16, 32) (.bin)")
    p.add_argument("--output-index", required=True, help="uint8 index (⌈k/64⌉, ⌈n/16⌉, 16, 8) (.bin)")


def _run_sparse_compress(a):
    from npu_emu.kernels.quant_matmul.sparse4to2 import trans_sparse4to2_para

    sp, idx = trans_sparse4to2_para(read_bin(a.weight, "int8", a.weight_shape))
    write_bin(a.output_sparse, sp)
    write_bin(a.output_index, idx)
    print(f"wrote {a.output_sparse} {tuple(sp.shape)} int8 and {a.output_index} {tuple(idx.shape)} uint8")
    return 0


def _add_run_sparse(p):
    p.add_argument("--x", required=True, help="int8 activation (m, k) (.bin)")
    p.add_argument("--x-shape", type=parse_shape, required=True, help="m,k")
    p.add_argument("--sparse-weight", required=True, help="int8 NZ kept values from trans_sparse4to2_para (.bin)")
    p.add_argument("--index", required=True, help="uint8 index from trans_sparse4to2_para (.bin)")
    p.add_argument("--x-scale", required=True, help="float32 (m,) (.bin)")
    p.add_argument("--sparse-weight-scale", required=True, help="float32 (n,) (.bin); its length gives n")
    p.add_argument("--bias", help="bfloat16 (n,) (.bin)")
    p.add_argument("--output", required=True, help="bfloat16 (m, n) (.bin)")
    p.add_argument("--soc", default="ascend910b2")
    p.add_argument("--cast-overflow", default="inf", choices=("inf", "saturate"))


def _run_sparse(a):
    from npu_emu.kernels.quant_matmul import sparse4to2

    x = read_bin(a.x, "int8", a.x_shape)
    ws = read_bin(a.sparse_weight_scale, "float32")
    sp_dims, idx_dims = sparse4to2.storage_dims(ws.size, x.shape[1])
    y = sparse4to2.sparse4to2_quant_matmul(
        x, read_bin(a.sparse_weight, "int8", sp_dims), read_bin(a.index, "uint8", idx_dims),
        read_bin(a.x_scale, "float32"), ws, None if a.bias is None else read_bin(a.bias, "bfloat16"), soc=a.soc,
        cast_overflow=a.cast_overflow)
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {tuple(y.shape)} bfloat16")
    return 0


COMMANDS = {
    "quant_matmul": {
        "help": "npu_quant_matmul: quantised matmul (int8/int4/fp8/hif8/MX; QuantBatchMatmulV3 and V4 modes)",
        "run": (_add_run, _run),
        "tiling": (_add_tiling, _tiling),
        "golden": (_add_golden, _golden),
    },
    "trans_quant_param": {
        "help": "npu_trans_quant_param: float32 scale/offset -> packed int64 quantisation words",
        "run": (_add_run_tqp, _run_tqp),
    },
    "trans_sparse4to2_para": {
        "help": "aclnnTransSparse4to2Para: dense 4:2-sparse int8 weight -> NZ kept values + 4-bit index",
        "run": (_add_run_sparse_compress, _run_sparse_compress),
    },
    "sparse4to2_quant_matmul": {
        "help": "Sparse4to2QuantMatmul: int8 x 4:2-sparse int8 weight, per-channel x per-token dequant -> bf16",
        "run": (_add_run_sparse, _run_sparse),
    },
}
