"""``python -m npu_emu.kernels.ascend_quant.cli run|tiling ...``: AscendQuantV2 from the command line
(docs/ops/ascend_quant.md §6). Until the op registry wires it into ``npu-emu``, this module is its own command."""

import argparse
import sys

import numpy as np


def _parser():
    p = argparse.ArgumentParser(prog="python -m npu_emu.kernels.ascend_quant.cli",
                                description="AscendQuantV2 (npu_quantize div_mode=False / aclnnAscendQuantV3)")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="quantise x (.npy) with scale [offset] (.npy) to int8 (.npy)")
    r.add_argument("--x", required=True)
    r.add_argument("--scale", required=True)
    r.add_argument("--offset", default=None)
    r.add_argument("--round-mode", default="round", choices=("round", "floor", "ceil", "trunc"))
    r.add_argument("--sqrt-mode", action="store_true")
    r.add_argument("--faithful", action="store_true", help="stage every tile through the UB (same bits, slower)")
    r.add_argument("--soc", default="ascend910b2")
    r.add_argument("--output", required=True)
    t = sub.add_parser("tiling", help="print the host tiling data")
    t.add_argument("--shape", required=True, help="x shape, e.g. 8,4096")
    t.add_argument("--dtype", default="float16", choices=("float16", "bfloat16", "float32"))
    t.add_argument("--per-tensor", action="store_true")
    t.add_argument("--no-offset", action="store_true")
    t.add_argument("--soc", default="ascend910b2")
    return p


def main(argv=None):
    a = _parser().parse_args(argv)
    from npu_emu.errors import AclnnError

    try:
        if a.cmd == "run":
            from npu_emu.kernels.ascend_quant import api

            off = None if a.offset is None else np.load(a.offset)
            y = api.ascend_quant(np.load(a.x), np.load(a.scale), off, round_mode=a.round_mode,
                                 sqrt_mode=a.sqrt_mode, soc=a.soc, faithful=a.faithful)
            np.save(a.output, y)
            print(f"wrote {a.output}: shape {y.shape} int8")
        else:
            from npu_emu.kernels.ascend_quant import tiling

            shape = tuple(int(d) for d in a.shape.split(","))
            tr = tiling.tiling(shape, a.dtype, per_tensor=a.per_tensor, has_offset=not a.no_offset, soc=a.soc)
            for k, v in tr.tiling.fields().items():
                print(f"{k} = {v}")
            print(f"block_dim = {tr.block_dim}\ntiling_key = {tr.tiling_key}")
    except AclnnError as e:
        print(f"error {e.status}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
