"""The ``npu-emu demo`` cases of GatherDequantInt8 (declared in op.py): a production shape and a small one, the user-facing
call, the independent golden, and how their bits are compared."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits as _same_bits, same_float as _same_float  # noqa: F401
from npu_emu.frontend.cases import public as _ops  # noqa: E402

CASES, builder = demo_collector()


def _golden(_name):
    from npu_emu.kernels.gather_dequant_int8 import golden

    return golden

@builder("gather_dequant_int8", (151936, 4096, 8192), (10240, 256, 4096),
         "V x E x N: uint8 table gather + fp16 dequant (gather_dequant_int8)", tiny=(16, 32, 5))
def _gather(dims, rng):
    vocab, emb, num = dims
    fn = _ops("gather_dequant_int8")
    g = _golden("gather_dequant_int8")
    table = np.frombuffer(rng.bytes(vocab * emb), np.uint8).reshape(vocab, emb)
    scale = (rng.random(vocab) * 0.01 + 1e-4).astype(np.float16)
    zp = (rng.random(vocab) * 255).astype(np.float16)
    idx = rng.integers(0, vocab, num).astype(np.int32)
    return Case("GatherDequantInt8", f"[{vocab},{emb}] N={num}", lambda: fn(table, idx, scale, zp),
                lambda: g.gather_dequant_int8(table, idx, scale, zp), _same_bits,
                4 * num + 4 * vocab + 3 * num * emb)
