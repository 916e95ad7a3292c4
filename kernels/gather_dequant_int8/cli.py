"""``npu-emu run|tiling|golden gather_dequant_int8``: the sample's .bin flow (test/gen_data.py file names)."""

import os

from npu_emu.frontend.binfile import parse_shape, read_bin, write_bin, write_case

FILES = ("table.bin", "indices.bin", "scale.bin", "zero_point.bin", "output.bin")   # gen_data.py's names


def _common(p):
    p.add_argument("--soc", default="kirin9020", help="SoC (only kirin9020 has a GatherDequantInt8 kernel)")
    p.add_argument("--core-num", type=int, default=None,
                   help="split the tokens over this many emulated cores (npu-emu extension; the device uses one)")
    p.add_argument("--ub-size", type=int, default=None,
                   help="check the kernel's UB footprint against this many bytes (Kirin 9020 UB is not public)")


# run ----------------------------------------------------------------------------------------------------------

def _add_run(p):
    p.add_argument("--table", required=True, help="uint8 [V, E] quantised table (.bin)")
    p.add_argument("--indices", required=True, help="int32 token ids (.bin)")
    p.add_argument("--scale", required=True, help="fp16 [V] per-row scale (.bin)")
    p.add_argument("--zero-point", required=True, help="fp16 [V] per-row zero point (.bin)")
    p.add_argument("--vocab", type=int, required=True, help="V, rows of the table")
    p.add_argument("--emb-dim", type=int, required=True, help="E, bytes per table row (a multiple of 32)")
    p.add_argument("--indices-shape", type=parse_shape, default=None,
                   help="shape of the indices, e.g. 1,30 (default: 1-D, the file's length)")
    p.add_argument("--output", required=True, help="where to write the fp16 indices.shape + [E] result (.bin)")
    p.add_argument("--fp16-subnormal", default="keep", choices=("keep", "flush"),
                   help="IEEE subnormals (keep, default) or flush fp16 subnormals to signed zero")
    p.add_argument("--trace", action="store_true", help="print the tiling data and the UB footprint")
    _common(p)


def _run(a):
    from npu_emu.kernels.gather_dequant_int8.api import gather_dequant_int8

    table = read_bin(a.table, "uint8", (a.vocab, a.emb_dim))
    indices = read_bin(a.indices, "int32", a.indices_shape)
    scale = read_bin(a.scale, "float16", (a.vocab,))
    zero_point = read_bin(a.zero_point, "float16", (a.vocab,))
    y, tr = gather_dequant_int8(table, indices, scale, zero_point, fp16_subnormal=a.fp16_subnormal, soc=a.soc,
                                core_num=a.core_num, ub_size=a.ub_size, trace=True)
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {y.shape} float16")
    if a.trace:
        print(f"tiling {tr.tiling_data}  blockDim {tr.block_dim}  workspace {tr.workspace_size}  "
              f"UB {tr.ub_bytes_per_core} B/core")
        for note in tr.notes:
            print("note:", note)
    return 0


# tiling -------------------------------------------------------------------------------------------------------

def _add_tiling(p):
    p.add_argument("--vocab", type=int, default=1024, help="V (table rows)")
    p.add_argument("--emb-dim", type=int, default=256, help="E (table columns)")
    p.add_argument("--indices-shape", type=parse_shape, default=(1, 30), help="shape of the indices (1,30)")
    _common(p)


def _tiling(a):
    from npu_emu.kernels.gather_dequant_int8 import tiling

    tr = tiling.gather_dequant_int8_tiling((a.vocab, a.emb_dim), a.indices_shape, soc=a.soc, ub_size=a.ub_size,
                                           core_num=a.core_num)
    td = tr.tiling
    print(f"GatherDequantInt8 tiling for table [{a.vocab}, {a.emb_dim}], indices {tuple(a.indices_shape)} "
          f"on {tr.soc}:")
    print(td.describe())
    print(f"blockDim {tr.block_dim}  tilingKey {tr.tiling_key}  workspace {tr.workspace_size}  "
          f"UB footprint {tiling.footprint(tr)} B/core")
    print("struct bytes:", td.to_bytes().hex())
    lay = tiling.ub_layout(tiling.core_range(td.numIndices, tr.block_dim, 0)[1], td.embDim, td.vocab)
    print(f"UB (InitBuffer order): idxBuf@{lay.idx} scaleBuf@{lay.scale} zpBuf@{lay.zp} "
          f"inQueueRow@{lay.row_in} (2 x {lay.row_in_bytes}) outQueueRow@{lay.row_out} (2 x {lay.row_out_bytes}) "
          f"calcBuf@{lay.calc}")
    for note in tr.notes:
        print("note:", note)
    print(f"{'core':>5} {'first token':>12} {'tokens':>10}")
    for c in range(tr.block_dim):
        start, count = tiling.core_range(td.numIndices, tr.block_dim, c)
        print(f"{c:>5} {start:>12} {count:>10}")
    return 0


# golden -------------------------------------------------------------------------------------------------------

def _add_golden(p):
    from npu_emu.kernels.gather_dequant_int8 import golden as g

    p.add_argument("--out", required=True, help="directory for the five .bin files and manifest.json")
    p.add_argument("--vocab", type=int, default=g.VOCAB, help=f"V (default {g.VOCAB})")
    p.add_argument("--emb-dim", type=int, default=g.EMB_DIM, help=f"E (default {g.EMB_DIM})")
    p.add_argument("--num-indices", type=int, default=g.NUM_INDICES,
                   help=f"N, indices of shape [1, N] (default {g.NUM_INDICES})")
    p.add_argument("--seed", type=int, default=g.SEED, help=f"numpy legacy RNG seed (default {g.SEED})")
    p.add_argument("--fp16-subnormal", default="keep", choices=("keep", "flush"))


def _golden(a):
    from npu_emu.kernels.gather_dequant_int8 import golden as g

    os.makedirs(a.out, exist_ok=True)
    case = g.golden_case(a.vocab, a.emb_dim, a.num_indices, a.seed, fp16_subnormal=a.fp16_subnormal)
    manifest = {"op": "gather_dequant_int8",
                "recipe": "hicann/cann-recipes-harmony-infer test/gen_data.py: np.random.seed(seed), "
                          "W = randn(V, E) float32 * 0.1, per-row asymmetric uint8, indices randint(0, V, (1, N))",
                "attrs": {"vocab": a.vocab, "emb_dim": a.emb_dim, "num_indices": a.num_indices, "seed": a.seed,
                          "fp16_subnormal": a.fp16_subnormal}}
    files = {key: (fname, case[key]) for key, fname in zip(("table", "indices", "scale", "zero_point", "output"),
                                                           FILES)}
    output = {"output": files.pop("output")}
    write_case(a.out, manifest, files, output)
    print(f"wrote {', '.join(FILES)} and manifest.json to {a.out}")
    return 0


COMMANDS = {
    "gather_dequant_int8": {
        "help": "uint8 embedding gather + per-row fp16 dequant (Kirin 9020)",
        "run": (_add_run, _run),
        "tiling": (_add_tiling, _tiling),
        "golden": (_add_golden, _golden),
    },
}
