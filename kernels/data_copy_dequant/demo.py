"""The ``npu-emu demo`` cases of the DataCopy CO1 -> CO2 dequantisation (declared in op.py): a production shape and a small one, the user-facing
call, the independent golden, and how their bits are compared."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits as _same_bits, same_float as _same_float  # noqa: F401
from npu_emu.frontend.cases import public as _ops  # noqa: E402

CASES, builder = demo_collector()


def _golden(_name):
    from npu_emu.kernels.data_copy_dequant import golden

    return golden

def _deq_words(scales, signed):
    """DEQ words: the float32 scale in bits 0..31 (already on the 19-bit grid the unit reads), shift field 0, no
    MCB, offset 0, bit 46 = signed int8 output (docs/ops/data_copy_dequant.md §3)."""
    w = (scales.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).astype(np.uint64)
    return w | np.uint64(1 << 46) if signed else w


def _deq_case(dims, rng, mode):
    rows, n = dims
    fn = _ops("data_copy_dequant")
    g = _golden("data_copy_deq")
    acc = rng.integers(-(1 << 15), 1 << 15, (rows, n), dtype=np.int32)
    if mode == "DEQ8":
        word = int(_deq_words(np.array([2.0 ** -7]), True)[0])
        run = lambda: fn(acc, word, mode="DEQ8")
        gold = lambda: g.data_copy_dequant(acc, np.uint64(word), mode="DEQ8")
        label, out_bytes = "DataCopy DEQ8 (scalar)", 1
    else:
        words = _deq_words(rng.uniform(2.0 ** -8, 2.0 ** -6, n), False)
        run = lambda: fn(acc, words, mode="VDEQ16")
        gold = lambda: g.data_copy_dequant(acc, words, mode="DEQ16")
        label, out_bytes = "DataCopy VDEQ16 (per-channel)", 2
    return Case(label, f"[{rows},{n}] i32", run, gold, _same_bits, (4 + out_bytes) * rows * n)


@builder("data_copy_deq8", (8192, 8192), (1024, 1024), "rows x N: int32 L0C -> int8 via a scalar DEQ8 word",
         tiny=(4, 32))
def _deq8(dims, rng):
    return _deq_case(dims, rng, "DEQ8")


@builder("data_copy_vdeq16", (8192, 8192), (1024, 1024), "rows x N: int32 L0C -> fp16 via per-channel VDEQ16",
         tiny=(4, 32))
def _vdeq16(dims, rng):
    return _deq_case(dims, rng, "VDEQ16")
