"""The op data_copy_dequant: a whole L0C accumulator dequantised as the CO1 -> CO2 DataCopy would, in one call.

The instruction (npu_emu.ascendc.deq) moves one DataCopy's bursts of fractals on one AI Core; this op applies the
same per-element pipeline (npu_emu.ascendc.deq_kernels: ``deq8_element``, ``deq16_element``, ``deqs16_element``)
to every element of an (R, N) accumulator in ND order, one prange iteration per row. Every element's result
depends only on its value and its column's deq word, so the order of the walk does not change a bit: the tests
compare this op with a tile-by-tile replay of the instruction (docs/ops/data_copy_dequant.md §7).

Flat C-order arrays of R rows x N columns: acc int32 [R*N]; per-column m (float32 or float64: the datapath),
shift (MCB path) and off [N]; out uint8 (int8/uint8 bits) / uint16 (half bits) / int16 [R*N]. mcb, signed and relu
are uniform over the call (checks.py makes sure). Nothing here validates.

numba's cache watches only the file that defines an entry function (docs/contributing/numba_rules.md §2.4): after
editing the element functions in npu_emu/ascendc/deq_kernels.py use a fresh NUMBA_CACHE_DIR (CI keys its cache by
every source file), as for every kernel that calls the instruction layer.
"""

import numpy as np
from numba import njit, prange

from npu_emu.ascendc.deq_kernels import (
    DEFAULT_SWITCHES,
    decode_column,
    deq8_element,
    deq16_default_element,
    deq16_element,
    deqs16_element,
)
from npu_emu.device.jit_options import PARALLEL

_JIT = dict(cache=True, error_model="numpy")
_INLINE = dict(inline="always", cache=True, error_model="numpy")


@njit(**_JIT)
def decode_table(words, sw, m, shift, off):
    """Per-column parameters of a whole-matrix call (one word per column)."""
    for c in range(words.size):
        decode_column(words[c], sw, m, shift, off, c)


@njit(**_INLINE)
def deq8_row(acc, out, base, m, shift, off, mcb, signed, relu, sw):
    # row slices: a loop index that is provably >= 0 needs no negative-index wraparound, which would otherwise
    # turn every load and store into a gather / scatter and stop LLVM from vectorising the row
    n = m.size
    a = acc[base:base + n]
    o = out[base:base + n]
    for c in range(n):
        o[c] = np.uint8(deq8_element(a[c], m[c], shift[c], mcb, off[c], signed, relu, sw))


@njit(**_INLINE)
def deq16_row(acc, out, base, m, shift, mcb, relu, sw):
    n = m.size
    a = acc[base:base + n]
    o = out[base:base + n]
    for c in range(n):
        o[c] = deq16_element(a[c], m[c], shift[c], mcb, relu, sw)


@njit(**_INLINE)
def deq16_default_row(acc, out, base, m, shift, mcb, relu):
    n = m.size
    a = acc[base:base + n]
    o = out[base:base + n]
    for c in range(n):
        o[c] = deq16_default_element(a[c], m[c], shift[c], mcb, relu)


@njit(**_INLINE)
def deqs16_row(acc, out, base, shift, relu):
    n = shift.size
    a = acc[base:base + n]
    o = out[base:base + n]
    for c in range(n):
        o[c] = np.int16(deqs16_element(a[c], shift[c], relu))


@njit(parallel=PARALLEL, **_JIT)
def deq8_matrix(acc, out, m, shift, off, mcb, signed, relu, sw):
    """DEQ8 / VDEQ8 with any switches."""
    n = m.size
    for r in prange(acc.size // n):
        deq8_row(acc, out, r * n, m, shift, off, mcb, signed, relu, sw)


@njit(parallel=PARALLEL, **_JIT)
def deq16_matrix(acc, out, m, shift, mcb, relu, sw):
    """DEQ16 / VDEQ16 with any switches."""
    n = m.size
    for r in prange(acc.size // n):
        deq16_row(acc, out, r * n, m, shift, mcb, relu, sw)


# The default switches: they are compile-time constants and the per-call flags are hoisted out of the row
# loop, so that LLVM drops every branch of the element pipeline and vectorises it (8 lanes of AVX2); DEQ16 also
# drops the half encoder's NaN / Inf / overflow cases, which the defaults never reach (deq16_default_element).

# The matrix kernels' prange bodies are one call each: numba's parallel-loop passes grow much faster than the loop
# body, and four inlined row copies in the body made DEQ8's first call take 25 s on a loaded box.

@njit(**_JIT)
def _deq8_default_row(acc, out, base, m, shift, off, mcb, signed, relu):
    # constant mcb / relu in each copy of the row loop, so that it vectorises
    if mcb:
        if relu:
            deq8_row(acc, out, base, m, shift, off, True, signed, True, DEFAULT_SWITCHES)
        else:
            deq8_row(acc, out, base, m, shift, off, True, signed, False, DEFAULT_SWITCHES)
    elif relu:
        deq8_row(acc, out, base, m, shift, off, False, signed, True, DEFAULT_SWITCHES)
    else:
        deq8_row(acc, out, base, m, shift, off, False, signed, False, DEFAULT_SWITCHES)


@njit(parallel=PARALLEL, **_JIT)
def deq8_matrix_default(acc, out, m, shift, off, mcb, signed, relu):
    n = m.size
    for r in prange(acc.size // n):
        _deq8_default_row(acc, out, np.int64(r) * n, m, shift, off, mcb, signed, relu)


@njit(**_JIT)
def _deq16_default_row(acc, out, base, m, shift, mcb, relu):
    if mcb:
        if relu:
            deq16_default_row(acc, out, base, m, shift, True, True)
        else:
            deq16_default_row(acc, out, base, m, shift, True, False)
    elif relu:
        deq16_default_row(acc, out, base, m, shift, False, True)
    else:
        deq16_default_row(acc, out, base, m, shift, False, False)


@njit(parallel=PARALLEL, **_JIT)
def deq16_matrix_default(acc, out, m, shift, mcb, relu):
    n = m.size
    for r in prange(acc.size // n):
        _deq16_default_row(acc, out, np.int64(r) * n, m, shift, mcb, relu)


@njit(**_JIT)
def _deqs16_row(acc, out, base, shift, relu):
    if relu:
        deqs16_row(acc, out, base, shift, True)
    else:
        deqs16_row(acc, out, base, shift, False)


@njit(parallel=PARALLEL, **_JIT)
def deqs16_matrix(acc, out, shift, relu):
    """DEQS16 / VDEQS16 (no switch applies); shift = N + 1 per column."""
    n = shift.size
    for r in prange(acc.size // n):
        _deqs16_row(acc, out, np.int64(r) * n, shift, relu)
