"""``npu-emu run|tiling dequant_swiglu_quant``: int32 matmul output -> dequant -> SwiGLU -> int8 (.bin files)."""

from npu_emu.frontend.binfile import read_bin, write_bin


def _common(p):
    p.add_argument("--soc", default="ascend910b2", help="SoC whose tiling and kernel to reproduce (Atlas A2/A3)")


def _add_run(p):
    p.add_argument("--input", required=True, help="x (.bin, --x-dtype [tokens, 2H])")
    p.add_argument("--x-dtype", default="int32", choices=("int32", "float16", "bfloat16"),
                   help="x dtype (float16 / bfloat16: without group_index only, no dequant)")
    p.add_argument("--shape", required=True, help="x shape: tokens,2H")
    p.add_argument("--weight-scale", default=None,
                   help="weight_scale (.bin, float32 [2H] or [groups, 2H]; required for int32 x)")
    p.add_argument("--activation-scale", default=None, help="activation_scale (.bin, float32 [tokens])")
    p.add_argument("--bias", default=None, help="bias (.bin, --bias-dtype, [2H] or [groups, 2H])")
    p.add_argument("--bias-dtype", default="float32", choices=("int32", "float32", "float16", "bfloat16"))
    p.add_argument("--quant-scale", default=None, help="quant_scale (.bin, float32 [H] / [groups, H] / [groups])")
    p.add_argument("--quant-offset", default=None, help="quant_offset (.bin, float32; static quant)")
    p.add_argument("--group-index", default=None, help="group_index (.bin, int64 counts [groups])")
    p.add_argument("--group-pairs", action="store_true", help="group_index holds (index, count) pairs [groups, 2]")
    p.add_argument("--activate-left", action="store_true", help="activate the left half (default: the right)")
    p.add_argument("--quant-mode", type=int, default=1, choices=(0, 1), help="0 static, 1 dynamic (default 1)")
    p.add_argument("--swiglu-mode", type=int, default=0, choices=(0, 1, 2, 3))
    p.add_argument("--clamp-limit", type=float, default=7.0)
    p.add_argument("--glu-alpha", type=float, default=1.702)
    p.add_argument("--glu-bias", type=float, default=1.0)
    p.add_argument("--exp-model", default="correctly_rounded", choices=("correctly_rounded", "exp2"),
                   help="the vector Exp's rounding ([HW-unverified], docs/conventions.md)")
    p.add_argument("--div-model", default="ieee", choices=("ieee", "reciprocal"),
                   help="the vector Div's rounding ([HW-unverified], docs/conventions.md)")
    p.add_argument("--faithful", action="store_true", help="run the instruction-level transliteration")
    p.add_argument("--output", required=True, help="y (.bin, int8 [tokens, H])")
    p.add_argument("--scale", required=True, help="scale (.bin, float32 [tokens])")
    p.add_argument("--trace", action="store_true", help="print the tiling key and data")
    _common(p)


def _run(a):
    from npu_emu.kernels.dequant_swiglu_quant import api

    T, D = (int(s) for s in a.shape.split(","))
    x = read_bin(a.input, a.x_dtype).reshape(T, D)
    gi = read_bin(a.group_index, "int64") if a.group_index else None
    if gi is not None and a.group_pairs:
        gi = gi.reshape(-1, 2)
    groups = None if gi is None else gi.shape[0]

    def per_group(path, dtype, width):
        if not path:
            return None
        v = read_bin(path, dtype)
        return v.reshape(groups, -1) if groups and v.size == groups * width else v

    kw = dict(weight_scale=per_group(a.weight_scale, "float32", D),
              activation_scale=read_bin(a.activation_scale, "float32") if a.activation_scale else None,
              bias=per_group(a.bias, a.bias_dtype, D), quant_scale=per_group(a.quant_scale, "float32", D // 2),
              quant_offset=per_group(a.quant_offset, "float32", D // 2), group_index=gi,
              activate_left=a.activate_left, quant_mode=a.quant_mode, swiglu_mode=a.swiglu_mode,
              clamp_limit=a.clamp_limit, glu_alpha=a.glu_alpha, glu_bias=a.glu_bias, exp_model=a.exp_model,
              div_model=a.div_model, soc=a.soc, faithful=a.faithful)
    (y, s), tr = api.npu_dequant_swiglu_quant(x, trace=True, **kw)
    write_bin(a.output, y)
    write_bin(a.scale, s)
    print(f"wrote {a.output}: shape {y.shape} int8; {a.scale}: shape {s.shape} float32")
    if a.trace and tr is not None:
        print(f"tilingKey {tr.tiling_key}  blockDim {tr.block_dim}")
        for k, v in tr.tiling_data.items():
            print(f"  {k} = {v}")
    return 0


def _add_tiling(p):
    p.add_argument("--rows", type=int, required=True, help="tokens (product of x's leading dims)")
    p.add_argument("--n", type=int, required=True, help="x's last dim (2H)")
    p.add_argument("--groups", type=int, default=0, help="group_index length (0: no group_index)")
    p.add_argument("--bias-dtype", default=None, choices=("int32", "float32", "float16", "bfloat16"))
    p.add_argument("--activation-scale", action="store_true", help="an activation_scale is given")
    p.add_argument("--activate-left", action="store_true")
    _common(p)


def _tiling(a):
    from npu_emu.kernels.dequant_swiglu_quant import tiling

    if a.groups:
        r = tiling.dsq_tiling(a.rows, a.n, group_num=a.groups, spe_group_type=False, quant_mode=1,
                              activate_left=a.activate_left, has_bias=a.bias_dtype is not None,
                              bias_dtype=a.bias_dtype, quant_scale_dtype=None, quant_is_one=False,
                              activation_scale_empty=not a.activation_scale, swiglu_mode=0, clamp_limit=7.0,
                              glu_alpha=1.702, glu_bias=1.0, soc=a.soc)
    else:
        r = tiling.nogroup_tiling(a.rows, a.n // 2, bias_dtype=a.bias_dtype, quant_scale_size=0,
                                  activation_scale_empty=not a.activation_scale, activate_left=a.activate_left,
                                  soc=a.soc)
    print(f"DequantSwigluQuant tiling for [{a.rows}, {a.n}] int32, dynamic quant, {a.groups} groups on {r.soc}:")
    print(r.tiling.describe())
    print(f"blockDim {r.block_dim}  tilingKey {r.tiling_key}  workspace {r.workspace_size}  ub {r.ub_size} B/core")
    print("struct bytes:", r.tiling.to_bytes().hex())
    return 0


COMMANDS = {
    "dequant_swiglu_quant": {
        "help": "int32 -> dequant -> SwiGLU -> per-token int8 quant (npu_dequant_swiglu_quant)",
        "run": (_add_run, _run),
        "tiling": (_add_tiling, _tiling),
    },
}
