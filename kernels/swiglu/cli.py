"""``npu-emu run|tiling swiglu``: SwiGLU of a .bin activation (npu_swiglu)."""

from npu_emu.frontend.binfile import read_bin, write_bin


def _common(p):
    p.add_argument("--soc", default="ascend910b2", help="SoC whose tiling and kernel to reproduce (Atlas A2/A3)")
    p.add_argument("--core-num", type=int, default=None, help="override the SoC's vector-core count")
    p.add_argument("--ub-size", type=int, default=None, help="override the usable UB bytes per core")


def _shape(text):
    return tuple(int(s) for s in text.split(","))


def _add_run(p):
    p.add_argument("--input", required=True, help="x (.bin): float32, float16 or bfloat16")
    p.add_argument("--shape", required=True, help="x shape, e.g. 8192,8192")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"), help="x dtype")
    p.add_argument("--dim", type=int, default=-1, help="the axis split into the halves A | B (default -1)")
    p.add_argument("--exp-model", default="correctly_rounded", choices=("correctly_rounded", "exp2"),
                   help="the vector Exp's rounding ([HW-unverified], docs/conventions.md)")
    p.add_argument("--div-model", default="ieee", choices=("ieee", "reciprocal"),
                   help="the vector Div's rounding ([HW-unverified], docs/conventions.md)")
    p.add_argument("--faithful", action="store_true", help="stage every tile through the UB (same bits, slower)")
    p.add_argument("--output", required=True, help="y (.bin, x dtype, the split axis halved)")
    p.add_argument("--trace", action="store_true", help="print the tiling key and data")
    _common(p)


def _run(a):
    from npu_emu.kernels.swiglu import api

    x = read_bin(a.input, a.dtype).reshape(_shape(a.shape))
    y, tr = api.npu_swiglu(x, a.dim, exp_model=a.exp_model, div_model=a.div_model, soc=a.soc, core_num=a.core_num,
                           ub_size=a.ub_size, faithful=a.faithful, trace=True)
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {y.shape} {a.dtype}")
    if a.trace and tr is not None:
        print(f"tilingKey {tr.tiling_key}  blockDim {tr.block_dim}")
        for k, v in tr.tiling_data.items():
            print(f"  {k} = {v}")
    return 0


def _add_tiling(p):
    p.add_argument("--shape", required=True, help="x shape, e.g. 8192,8192")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    p.add_argument("--dim", type=int, default=-1)
    _common(p)


def _tiling(a):
    from npu_emu.kernels.swiglu import tiling

    r = tiling.swiglu_tiling(_shape(a.shape), a.dim, a.dtype, soc=a.soc, core_num=a.core_num, ub_size=a.ub_size)
    print(f"SwiGlu tiling for {a.shape} {a.dtype} dim {a.dim} on {r.soc}:")
    print(r.tiling.describe())
    print(f"blockDim {r.block_dim}  tilingKey {r.tiling_key}  workspace {r.workspace_size}  ub {r.ub_size} B/core")
    print("struct bytes:", r.tiling.to_bytes().hex())
    return 0


COMMANDS = {
    "swiglu": {
        "help": "SwiGLU: Swish(A) * B of the two halves along dim (npu_swiglu)",
        "run": (_add_run, _run),
        "tiling": (_add_tiling, _tiling),
    },
}
