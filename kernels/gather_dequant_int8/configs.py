"""The compile configurations of GatherDequantInt8 (``npu-emu compile``, declared in op.py): each a tiny call through
the public API that makes numba compile one specialisation of its own (docs/cli.md, ``compile``)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()

def _gather():
    def build():
        from npu_emu.ops import gather_dequant_int8

        rng = _rng()
        vocab, emb = 64, 256
        table = rng.integers(0, 256, (vocab, emb), dtype=np.uint8)
        scale = (rng.random(vocab) * 0.01 + 1e-4).astype(np.float16)
        zp = (rng.random(vocab) * 255).astype(np.float16)
        idx = rng.integers(0, vocab, (2, 8)).astype(np.int32)
        return lambda: gather_dequant_int8(table, idx, scale, zp)

    return build


config("gather_dequant_int8.fp16", "gather_dequant_int8: uint8 table rows -> float16")(_gather())
