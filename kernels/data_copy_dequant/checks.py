"""Argument checks of data_copy_dequant, in the order they run; the first failure raises AclnnError.

The op has no aclnn entry on the device (it is an Ascend C instruction applied to a whole accumulator), so the
codes follow the project's rule for emulator-added checks (docs/conventions.md §4.3, §6): 161001 for a missing
argument, 161002 for every other invalid one. The deq-word rules are the instruction's own
(npu_emu.ascendc.deq: the scale must be zero or a normal float, the switches' values).
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.ascendc.deq import (
    DEQ_COPY_SOCS,
    DeqValue,
    DeqVector,
    as_u64,
    check_bool,
    check_soc,
    check_words,
    resolve_switches,
)
from npu_emu.ascendc import deq_kernels as k
from npu_emu.errors import invalid, nullptr

# mode -> (base mode, per-channel table expected)
MODES = {"DEQ8": ("DEQ8", False), "DEQ16": ("DEQ16", False), "DEQS16": ("DEQS16", False),
         "VDEQ8": ("DEQ8", True), "VDEQ16": ("DEQ16", True), "VDEQS16": ("DEQS16", True)}
KINDS = {"DEQ8": k.K_DEQ8, "DEQ16": k.K_DEQ16, "DEQS16": k.K_DEQS16}


@dataclass(frozen=True)
class DeqCall:
    """A checked call: what the kernel needs, decided once."""

    base_mode: str       # "DEQ8" | "DEQ16" | "DEQS16"
    words: np.ndarray    # uint64 [N], one deq word per column (a scalar word repeated)
    per_channel: bool    # a VDEQ table was given
    relu: bool
    signed: bool         # DEQ8: int8 (bit 46 set) or uint8
    switches: tuple      # npu_emu.ascendc.deq_kernels.DeqSwitches

    @property
    def out_dtype(self):
        return {"DEQ8": np.int8 if self.signed else np.uint8, "DEQ16": np.float16,
                "DEQS16": np.int16}[self.base_mode]


def deq_words_arg(deq_value, n):
    """(words uint64 [n] or None, scalar word or None) from the deq_value argument."""
    if deq_value is None:
        raise nullptr("deq_value")
    if isinstance(deq_value, DeqVector):
        deq_value = deq_value.words
    if isinstance(deq_value, (DeqValue, int, np.integer)) or \
            (isinstance(deq_value, np.ndarray) and deq_value.ndim == 0):
        return None, as_u64(deq_value, "deq_value")
    if isinstance(deq_value, np.ndarray) and deq_value.dtype.kind in "iu":
        arr = deq_value
        if arr.dtype == np.int64:
            arr = arr.view(np.uint64)
        elif arr.dtype.kind == "i":
            raise invalid(f"deq_value array has dtype {arr.dtype}; pass uint64 (or int64 bit patterns)")
    else:
        try:
            arr = np.array([as_u64(v, "deq_value entry") for v in deq_value], dtype=np.uint64)
        except TypeError:
            raise invalid(f"deq_value must be a uint64 word or a uint64 array of shape ({n},), not "
                          f"{type(deq_value).__name__}") from None
    if arr.ndim != 1 or arr.shape[0] != n:
        raise invalid(f"deq_value array has shape {arr.shape}; a per-channel (VDEQ) table needs shape ({n},), "
                      f"one word per column of acc")
    return np.ascontiguousarray(arr, dtype=np.uint64), None


def check_call(acc, deq_value, mode, is_relu, soc, switches):
    """Check a data_copy_dequant call on an already normalised ``acc``; returns its :class:`DeqCall`."""
    if mode not in MODES:
        raise invalid(f"mode={mode!r} is not valid; use one of {list(MODES)}")
    base_mode, vector_mode = MODES[mode]
    is_relu = check_bool(is_relu, "is_relu")
    check_soc(soc)
    sw = resolve_switches(**switches)
    if acc.dtype != np.int32:
        raise invalid(f"acc has dtype {acc.dtype}; the L0C accumulator is int32 (cast it, or use the same-type "
                      f"DataCopy for float data)")
    if acc.ndim < 1:
        raise invalid("acc must have at least one dimension (..., N)")
    n = acc.shape[-1]
    table, word = deq_words_arg(deq_value, n)
    if vector_mode and table is None:
        raise invalid(f"mode={mode} needs a per-channel uint64 array of shape ({n},) as deq_value")

    kind = KINDS[base_mode]
    if table is None:
        # the register word the API writes: bit 47 (ReLU) is deq_value's bit 47 or is_relu
        word |= int(is_relu) << 47
        check_words(np.array([word], np.uint64), kind, "deq_value", sw.m_truncate)
        return DeqCall(base_mode, np.full(n, word, dtype=np.uint64), False, bool((word >> 47) & 1),
                       bool((word >> 46) & 1), sw)
    if n:
        mcb = (table >> np.uint64(36)) & np.uint64(1)
        if mcb.min() != mcb.max():
            raise invalid(f"the MCB bit (bit 36) differs across deq_value (set in entries "
                          f"{np.flatnonzero(mcb)[:8].tolist()}...); every VDEQ vector must share it")
        sign = (table >> np.uint64(46)) & np.uint64(1)
        if base_mode == "DEQ8" and sign.min() != sign.max():
            raise invalid("the sign bit (bit 46) differs across deq_value; one output dtype (int8 or uint8) "
                          "needs the same sign bit in every entry")
        check_words(table, kind, "deq_value", sw.m_truncate)
    return DeqCall(base_mode, table, True, is_relu, bool(n and (int(table[0]) >> 46) & 1), sw)


__all__ = ["MODES", "DeqCall", "check_call", "deq_words_arg", "DEQ_COPY_SOCS"]
