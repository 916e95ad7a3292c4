"""The compile configurations of the DataCopy CO1 -> CO2 dequantisation (``npu-emu compile``, declared in op.py): each a tiny call through
the public API that makes numba compile one specialisation of its own (docs/cli.md, ``compile``)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()

def _deq(mode):
    def build():
        from npu_emu.ops import data_copy_dequant

        rng = _rng(6)
        rows, n = 32, 64
        acc = rng.integers(-(1 << 15), 1 << 15, (rows, n), dtype=np.int32)
        count = n if mode.startswith("V") else 1
        scales = (rng.uniform(2.0 ** -8, 2.0 ** -6, count).astype(np.float32).view(np.uint32)
                  & np.uint32(0xFFFFE000)).astype(np.uint64)
        words = scales | np.uint64(1 << 46) if mode.endswith("DEQ8") else scales    # bit 46: signed int8 out
        deq = words if mode.startswith("V") else int(words[0])
        return lambda: data_copy_dequant(acc, deq, mode=mode)

    return build


for _mode in ("DEQ8", "DEQ16", "DEQS16", "VDEQ8", "VDEQ16", "VDEQS16"):
    config(f"data_copy_dequant.{_mode.lower()}", f"data_copy_dequant mode={_mode}")(_deq(_mode))
