"""``npu-emu run|tiling dynamic_quant``: per-token dynamic quantization of a .bin activation."""

from npu_emu.frontend.binfile import read_bin, write_bin


def _common(p):
    p.add_argument("--soc", default="ascend910b2",
                   help="SoC whose tiling and kernel to reproduce (Atlas A2/A3, or ascend950pr / ascend950dt)")
    p.add_argument("--quant-mode", default="pertoken", choices=("pertoken", "pertensor", "perchannel"),
                   help="quant_mode (pertensor / perchannel: Ascend 950 only)")
    p.add_argument("--dst-type-max", type=float, default=0.0, help="dst_type_max (hifloat8 on Ascend 950)")
    p.add_argument("--core-num", type=int, default=None, help="override the SoC's vector-core count")
    p.add_argument("--ub-size", type=int, default=None, help="override the usable UB bytes per core")


def _add_run(p):
    p.add_argument("--input", required=True, help="x (.bin), bfloat16 or float16")
    p.add_argument("--shape", required=True, help="x shape, e.g. 8192,7168 (at least two dims)")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"), help="x dtype")
    p.add_argument("--smooth", default=None, help="smooth_scales (.bin, x dtype): [n] or [groups, n]")
    p.add_argument("--group-index", default=None, help="group_index (.bin, int32 cumulative row ends)")
    p.add_argument("--int4", action="store_true", help="int4 output (dst_type quint4x2: eight codes per int32)")
    p.add_argument("--dst-type", type=int, default=None,
                   help="torch dtype code of y (Ascend 950: 23 float8_e5m2, 24 float8_e4m3fn, 290 hifloat8)")
    p.add_argument("--asymmetric", action="store_true", help="npu_dynamic_quant_asymmetric (writes --offset too)")
    p.add_argument("--div-model", default="ieee", choices=("ieee", "reciprocal"),
                   help="rounding of the vector Div q = 127 / max ([HW-unverified], default ieee)")
    p.add_argument("--faithful", action="store_true", help="run the instruction-level transliteration")
    p.add_argument("--output", required=True, help="y (.bin): int8 [.., n] or int32 [.., n/8]")
    p.add_argument("--scale", required=True, help="scale (.bin, float32 [..])")
    p.add_argument("--offset", default=None, help="offset (.bin, float32 [..]) with --asymmetric")
    p.add_argument("--trace", action="store_true", help="print the tiling key and data")
    _common(p)


def _run(a):
    from npu_emu.kernels.dynamic_quant import api

    shape = tuple(int(s) for s in a.shape.split(","))
    x = read_bin(a.input, a.dtype).reshape(shape)
    sm = None
    if a.smooth:
        sm = read_bin(a.smooth, a.dtype)
    grp = read_bin(a.group_index, "int32") if a.group_index else None
    if sm is not None and grp is not None:
        sm = sm.reshape(len(grp), shape[-1])
    dst = 16 if a.int4 else a.dst_type
    kw = dict(smooth_scales=sm, group_index=grp, dst_type=dst, soc=a.soc, core_num=a.core_num,
              ub_size=a.ub_size, div_model=a.div_model, faithful=a.faithful, quant_mode=a.quant_mode,
              dst_type_max=a.dst_type_max)
    if a.asymmetric:
        y, s, o = api.npu_dynamic_quant_asymmetric(x, **kw)
    else:
        y, s = api.npu_dynamic_quant(x, **kw)
        o = None
    write_bin(a.output, y)
    write_bin(a.scale, s)
    if o is not None and a.offset:
        write_bin(a.offset, o)
    print(f"wrote {a.output}: shape {y.shape} {y.dtype}; {a.scale}: shape {s.shape} float32")
    if a.trace:
        r = api.torch_call_tiling(x.dtype, x.shape, smooth_scales=sm, group_index=grp, dst_type=dst,
                                  quant_mode=a.quant_mode, dst_type_max=a.dst_type_max,
                                  symmetrical=not a.asymmetric, soc=a.soc, core_num=a.core_num, ub_size=a.ub_size)
        print(f"tilingKey {r.tiling_key}  blockDim {r.block_dim}")
        print(r.tiling.describe())
    return 0


def _add_tiling(p):
    p.add_argument("--rows", type=int, required=True, help="rows (product of x's leading dims)")
    p.add_argument("--n", type=int, required=True, help="row length (x's last dim)")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16"))
    p.add_argument("--smooth", action="store_true")
    p.add_argument("--groups", type=int, default=0, help="group_index length (with --smooth: the MoE keys)")
    p.add_argument("--int4", action="store_true")
    p.add_argument("--y", default="int8", choices=("int8", "int4", "hifloat8", "float8_e5m2", "float8_e4m3fn"),
                   help="y dtype (Ascend 950 tiling)")
    p.add_argument("--m", type=int, default=None, help="perchannel: x's second-to-last dim (rows = batch * m)")
    p.add_argument("--asymmetric", action="store_true")
    _common(p)


def _tiling(a):
    from npu_emu.device import platforms
    from npu_emu.kernels.dynamic_quant import tiling, tiling_arch35

    if platforms.get(a.soc).name.startswith("ascend950"):
        y = "int4" if a.int4 else a.y
        if a.quant_mode == "perchannel":
            m = a.m or a.rows
            r = tiling_arch35.tiling_perchannel(a.rows // m, m, a.n, has_smooth=a.smooth, y_kind=y,
                                                asymmetric=a.asymmetric, dst_type_max=a.dst_type_max, soc=a.soc,
                                                core_num=a.core_num, ub_size=a.ub_size)
        else:
            r = tiling_arch35.tiling(a.rows, a.n, has_smooth=a.smooth, group_num=a.groups if a.smooth else 0,
                                     y_kind=y, asymmetric=a.asymmetric, quant_mode=a.quant_mode,
                                     dst_type_max=a.dst_type_max, soc=a.soc, core_num=a.core_num, ub_size=a.ub_size)
        print(f"DynamicQuant arch35 tiling for [{a.rows}, {a.n}] {a.dtype} on {r.soc} ({r.notes[-1]}):")
        print(r.tiling.describe())
        print(f"blockDim {r.block_dim}  template {r.tiling_key}  workspace {r.workspace_size}  ub {r.ub_size} B/core")
        print("struct bytes:", r.tiling.to_bytes().hex())
        return 0
    r = tiling.tiling(a.rows, a.n, x_dtype=a.dtype, has_smooth=a.smooth, has_group=a.groups > 0,
                      group_num=a.groups, y_int4=a.int4, asymmetric=a.asymmetric, soc=a.soc, core_num=a.core_num,
                      ub_size=a.ub_size)
    print(f"DynamicQuant tiling for [{a.rows}, {a.n}] {a.dtype} on {r.soc}:")
    print(r.tiling.describe())
    print(f"blockDim {r.block_dim}  tilingKey {r.tiling_key}  workspace {r.workspace_size}  ub {r.ub_size} B/core")
    print("struct bytes:", r.tiling.to_bytes().hex())
    return 0


COMMANDS = {
    "dynamic_quant": {
        "help": "per-token dynamic int8/int4 quantization (npu_dynamic_quant)",
        "run": (_add_run, _run),
        "tiling": (_add_tiling, _tiling),
    },
}
