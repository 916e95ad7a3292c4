"""``npu-emu run|tiling|golden grouped_matmul`` (raw little-endian .bin files): the single-tensor split-M form
(x (M, K), weight (E, K, N), one y) and the split-K form of docs/ops/grouped_matmul.md §2, with the antiquant (§11)
and MX (§10) inputs: any dtype name npu-emu knows goes in ``--<tensor>-dtype`` (float8_e4m3fn, float8_e8m0,
float4_e2m1 and int4 one element a byte)."""

import os

import ml_dtypes
import numpy as np

from npu_emu.frontend.binfile import parse_shape, read_bin, write_bin, write_case

_LABELS = {"float8_e8m0": ml_dtypes.float8_e8m0fnu, "int4": ml_dtypes.int4, "float4_e2m1": ml_dtypes.float4_e2m1fn}
_MODES = ("int32", "pertoken_bf16", "pertoken_fp16", "int8", "bf16")


def _tensor(p, name, required=False, help_text="", default_dtype=None):
    flag = name.replace("_", "-")
    p.add_argument(f"--{flag}", required=required, help=f"{help_text} (.bin)")
    p.add_argument(f"--{flag}-shape", type=parse_shape, help=f"shape of --{flag}, e.g. 8,7168,2048")
    p.add_argument(f"--{flag}-dtype", default=default_dtype,
                   help=f"dtype of --{flag} (default {default_dtype}): int8, int32, int64, uint64, float32, float16, "
                        f"bfloat16; "
                        f"float8_e4m3fn, float8_e5m2, float8_e8m0, float4_e2m1, int4 (one element a byte)")


def _load(a, name):
    path = getattr(a, name)
    if path is None:
        return None
    dtype = getattr(a, f"{name}_dtype")
    arr = read_bin(path, dtype, getattr(a, f"{name}_shape"))
    # formats whose storage is uint8 (E8M0 codes, int4 / float4_e2m1 one element a byte) get their ml_dtypes label,
    # so the dtype checks see FLOAT8_E8M0 / INT4 / FLOAT4_E2M1 and not UINT8
    from npu_emu.frontend.core import resolve_dtype

    label = _LABELS.get(resolve_dtype(dtype, f"--{name.replace('_', '-')}-dtype"))
    return arr if label is None else arr.view(label)


def _add_run(p):
    _tensor(p, "x", True, "activation (M, K)", "int8")
    _tensor(p, "weight", True, "weight (E, K, N); (K, N) with --group-type 2", "int8")
    _tensor(p, "group_list", True, "int64 group list (E,) or (E, 2)", "int64")
    _tensor(p, "scale", help_text="per-channel scale (E, N): bfloat16 for bf16 out, float32 for fp16 out, the uint64 "
                                  "FixPipe words (npu-emu run trans_quant_param) for int8 out",
            default_dtype="bfloat16")
    _tensor(p, "per_token_scale", help_text="per-token scale (M,)", default_dtype="float32")
    _tensor(p, "bias", help_text="bias (E, N)", default_dtype="int32")
    _tensor(p, "antiquant_scale", help_text="antiquant scale (E, N) or (E, G, N), x's dtype (W8A16 / W4A16, §11)",
            default_dtype="float16")
    _tensor(p, "antiquant_offset", help_text="antiquant offset, shaped and typed as --antiquant-scale",
            default_dtype="float16")
    p.add_argument("--output-dtype", default=None, help="int8, int32, bfloat16, float16 (default: x's dtype)")
    p.add_argument("--group-list-type", type=int, default=0, choices=(0, 1, 2))
    p.add_argument("--group-type", type=int, default=0, choices=(0, 2))
    p.add_argument("--split-item", type=int, default=3, choices=(2, 3))
    p.add_argument("--output", required=True, help="where to write y (.bin)")
    p.add_argument("--soc", default="ascend910b2")
    p.add_argument("--float-accum", default="exact", choices=("exact", "kchunk", "sequential", "numpy"))
    p.add_argument("--act-type", type=int, default=0,
                   help="activation of the A8W8 -> bf16 / fp16 epilogue: 1 RELU, 2 GELU_TANH, 4 FASTGELU, "
                        "5 SILU (§13)")
    p.add_argument("--exp-model", default="correctly_rounded", choices=("correctly_rounded", "exp2"))
    p.add_argument("--div-model", default="ieee", choices=("ieee", "reciprocal"))
    p.add_argument("--trace", action="store_true", help="print the tiling and the quant mode")


def _run(a):
    from npu_emu.kernels.grouped_matmul.api import npu_grouped_matmul

    opt = lambda name: (None if (v := _load(a, name)) is None else [v])
    ys, tr = npu_grouped_matmul([_load(a, "x")], [_load(a, "weight")], group_list=_load(a, "group_list"),
                                scale=opt("scale"), per_token_scale=opt("per_token_scale"), bias=opt("bias"),
                                antiquant_scale=opt("antiquant_scale"), antiquant_offset=opt("antiquant_offset"),
                                output_dtype=a.output_dtype, group_list_type=a.group_list_type,
                                group_type=a.group_type, split_item=a.split_item, soc=a.soc,
                                float_accum=a.float_accum, act_type=a.act_type, exp_model=a.exp_model,
                                div_model=a.div_model, trace=True)
    y = ys[0]
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {tuple(y.shape)} {y.dtype}")
    if a.trace and tr is not None:
        print(f"{tr.routed_op} {tr.quant_mode} on {tr.soc}: blockDim {tr.block_dim}, workspace {tr.workspace_size}")
        for note in tr.notes:
            print("note:", note)
    return 0


def _add_tiling(p):
    p.add_argument("--e", type=int, default=8, help="groups (experts)")
    p.add_argument("--m", type=int, required=True, help="rows of x")
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--mode", default="pertoken_bf16", choices=_MODES)
    p.add_argument("--weight-nz", action="store_true")
    p.add_argument("--group-list", type=parse_shape, help="counts per group, e.g. 100,0,28 (default: M split evenly)")
    p.add_argument("--soc", default="ascend910b2")
    p.add_argument("--core-num", type=int, default=None, help="override the cube-core count")
    p.add_argument("--cores", action="store_true", help="list every core's blocks")


def _shape(a):
    from npu_emu.kernels.grouped_matmul import tiling

    x = "bfloat16" if a.mode == "bf16" else "int8"
    y = {"int32": "int32", "pertoken_bf16": "bfloat16", "pertoken_fp16": "float16", "int8": "int8",
         "bf16": "bfloat16"}[a.mode]
    scale = {"pertoken_bf16": "bfloat16", "pertoken_fp16": "float32", "int8": "uint64"}.get(a.mode)
    return tiling.GmmShape(group_num=a.e, m=a.m, k=a.k, n=a.n, x_dtype=x, w_dtype=x, y_dtype=y, scale_dtype=scale,
                           per_token=a.mode.startswith("pertoken"), weight_nz=a.weight_nz)


def _tiling(a):
    from npu_emu.kernels.grouped_matmul import launch, tiling

    tr = tiling.grouped_matmul_tiling(_shape(a), soc=a.soc, core_num=a.core_num)
    print(f"GroupedMatmul tiling for E={a.e} m={a.m} k={a.k} n={a.n} ({a.mode}) on {tr.soc}:")
    print(tr.tiling.describe())
    print(f"blockDim {tr.block_dim}  workspace {tr.workspace_size}  ub {tr.ub_size} B/core  "
          f"vecBaseM {launch.vec_base_m(tr.tiling)}")
    for note in tr.notes:
        print("note:", note)
    counts = list(a.group_list) if a.group_list else [a.m // a.e + (g < a.m % a.e) for g in range(a.e)]
    if len(counts) != a.e or sum(counts) > a.m or min(counts) < 0:
        raise SystemExit(f"npu-emu: --group-list needs {a.e} counts >= 0 summing to at most m={a.m}")
    ent = launch.entries(np.array(counts, np.int64), 1, a.e, a.m)
    tab = launch.block_table(tr, ent)
    shown = range(tr.block_dim) if a.cores or tr.block_dim <= 8 else list(range(3)) + [None] + \
        list(range(tr.block_dim - 3, tr.block_dim))
    print(f"{'core':>5} {'blocks':>7}  first blocks (group, mIdx, nIdx)")
    for c in shown:
        if c is None:
            print(f"{'...':>5}")
            continue
        sel = np.nonzero(tab[:, 0] == c)[0]
        first = ", ".join(f"({tab[i, 1]}, {tab[i, 2]}, {tab[i, 3]})" for i in sel[:3])
        print(f"{c:>5} {sel.size:>7}  {first}{' ...' if sel.size > 3 else ''}")
    return 0


def _add_golden(p):
    p.add_argument("--out", required=True, help="directory for the .bin files and manifest.json")
    p.add_argument("--e", type=int, default=4)
    p.add_argument("--m", type=int, default=64)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--n", type=int, default=32)
    p.add_argument("--mode", default="pertoken_bf16", choices=_MODES[:4])
    p.add_argument("--seed", type=int, default=0)


def _golden(a):
    from npu_emu.kernels.grouped_matmul import golden as g

    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    x = rng.integers(-128, 128, (a.m, a.k)).astype(np.int8)
    w = rng.integers(-128, 128, (a.e, a.k, a.n)).astype(np.int8)
    counts = np.diff(np.sort(rng.integers(0, a.m + 1, a.e - 1)), prepend=0, append=a.m).astype(np.int64)
    inputs = {"x": x, "weight": w, "group_list": counts}
    attrs = {"group_list_type": 1, "split_item": 3, "group_type": 0}
    if a.mode == "int32":
        y = g.grouped_matmul_quant(x, w, counts, group_list_type=1, out_dtype="int32")
        attrs["output_dtype"] = "int32"
    elif a.mode == "int8":
        from npu_emu.kernels.quant_matmul.trans_quant_param import trans_quant_param

        s = rng.uniform(1e-3, 6e-3, (a.e, a.n)).astype(np.float32)
        off = rng.integers(-16, 16, (a.e, a.n)).astype(np.float32)
        words = trans_quant_param(s.reshape(-1), off.reshape(-1)).reshape(a.e, a.n)
        y = g.grouped_matmul_quant(x, w, counts, group_list_type=1, scale=words, out_dtype="int8")
        inputs.update(scale=words)
        attrs.update(output_dtype="int8", scale_dtype="uint64")
    else:
        import ml_dtypes

        s = rng.uniform(1e-3, 1e-2, (a.e, a.n)).astype(np.float32)
        if a.mode == "pertoken_bf16":
            s = s.astype(ml_dtypes.bfloat16)
        pt = rng.uniform(0.01, 0.1, a.m).astype(np.float32)
        out = "bfloat16" if a.mode == "pertoken_bf16" else "float16"
        y = g.grouped_matmul_quant(x, w, counts, group_list_type=1, scale=s, per_token_scale=pt, out_dtype=out)
        inputs.update(scale=s, per_token_scale=pt)
        attrs.update(output_dtype=out, scale_dtype=str(s.dtype))
    write_case(a.out, {"op": "grouped_matmul", "mode": a.mode, "attrs": attrs},
               {k: (f"{k}.bin", v) for k, v in inputs.items()}, {"y": ("golden.bin", y)})
    print(f"wrote {', '.join(inputs)}, golden.bin and manifest.json to {a.out}")
    return 0


COMMANDS = {
    "grouped_matmul": {
        "help": "npu_grouped_matmul: the MoE expert GEMM (A8W8 -> int32 / int8 / per-token bf16, fp16; plain float)",
        "run": (_add_run, _run),
        "tiling": (_add_tiling, _tiling),
        "golden": (_add_golden, _golden),
    },
}
