"""``npu-emu run|golden data_copy_dequant``: an int32 accumulator and its deq word(s) in .bin files."""

import os

import numpy as np

from npu_emu.frontend.binfile import parse_shape, read_bin, write_bin, write_case


def _deq_common(p):
    p.add_argument("--mode", default="DEQ8", choices=("DEQ8", "DEQ16", "DEQS16", "VDEQ8", "VDEQ16", "VDEQS16"),
                   help="DEQ8: int8/uint8 out (by bit 46 of the word); DEQ16: float16; DEQS16: int16; V*: per-channel "
                        "words (one uint64 per column)")
    p.add_argument("--relu", action="store_true", help="isRelu (sets bit 47 of a scalar word)")


def _add_run_deq(p):
    p.add_argument("--acc", required=True, help="int32 accumulator [rows, N] (.bin)")
    p.add_argument("--acc-shape", type=parse_shape, required=True, help="rows,N of --acc, e.g. 64,128")
    p.add_argument("--deq", required=True, help="uint64 deq word(s): one word (DEQ*) or N words (VDEQ*) (.bin)")
    p.add_argument("--output", required=True, help="where to write the result (.bin)")
    p.add_argument("--soc", default=None, help="SoC (default: the instruction's, ascend310p)")
    _deq_common(p)


def _run_deq(a):
    from npu_emu.kernels.data_copy_dequant.api import data_copy_dequant

    acc = read_bin(a.acc, "int32", a.acc_shape)
    words = read_bin(a.deq, "uint64")
    deq_value = words if a.mode.startswith("V") else _scalar_word(words, a.deq)
    kw = {} if a.soc is None else {"soc": a.soc}
    y = data_copy_dequant(acc, deq_value, mode=a.mode, is_relu=a.relu, **kw)
    write_bin(a.output, y)
    print(f"wrote {a.output}: shape {tuple(y.shape)} {y.dtype}")
    return 0


def _scalar_word(words, path):
    if words.size != 1:
        raise SystemExit(f"npu-emu: {path} holds {words.size} uint64 words; scalar modes take one (use --mode VDEQ8 "
                         f"/ VDEQ16 / VDEQS16 for one word per column)")
    return int(words[0])


def _add_golden_deq(p):
    p.add_argument("--out", required=True, help="directory for acc.bin, deq.bin, golden.bin and manifest.json")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--n", type=int, default=128, help="columns (output channels)")
    p.add_argument("--seed", type=int, default=0)
    _deq_common(p)


def _golden_deq(a):
    from npu_emu.kernels.data_copy_dequant import golden as g

    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    acc = rng.integers(-(1 << 15), 1 << 15, (a.rows, a.n), dtype=np.int32)
    base = a.mode.lstrip("V")
    count = a.n if a.mode.startswith("V") else 1
    # scales already on the 19-bit grid the unit reads; bit 46 (signed int8 out) for DEQ8; shift field 0
    scales = (rng.uniform(2.0 ** -8, 2.0 ** -6, count).astype(np.float32).view(np.uint32)
              & np.uint32(0xFFFFE000)).astype(np.uint64)
    words = scales | (np.uint64(1) << np.uint64(46) if base == "DEQ8" else np.uint64(0))
    dv = words if a.mode.startswith("V") else np.uint64(words[0])
    y = np.asarray(g.data_copy_dequant(acc, dv, mode=base, is_relu=a.relu))
    write_case(a.out, {"op": "data_copy_dequant", "attrs": {"mode": a.mode, "relu": a.relu}},
               {"acc": ("acc.bin", acc), "deq": ("deq.bin", words)}, {"y": ("golden.bin", y)})
    print(f"wrote acc.bin, deq.bin, golden.bin and manifest.json to {a.out}")
    return 0


COMMANDS = {
    "data_copy_dequant": {
        "help": "CO1 -> CO2 DataCopy dequantisation of an int32 accumulator (DEQ8/DEQ16/DEQS16, VDEQ)",
        "run": (_add_run_deq, _run_deq),
        "golden": (_add_golden_deq, _golden_deq),
    },
}
