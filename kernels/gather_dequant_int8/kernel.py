"""Kernels of GatherDequantInt8 (docs/ops/gather_dequant_int8.md §3.3) and their access pattern.

Faithful kernel: a transliteration of ``KernelGatherDequantInt8`` (hicann/cann-recipes-harmony-infer:
ops/ascendc/src/gather_dequant_int8_custom/op_kernel/gather_dequant_int8.cpp) on the launch model: Init's UB
layout, LoadLookupTables (three DataCopyPad with exact byte counts), then per token DataCopy of the table row ->
Cast(uint8 -> half, CAST_NONE) -> Adds(-zp) -> Muls(scale) -> DataCopy to y, alternating the two slots of the
double-buffered row queues. One core on the device (block_dim 1); with ``core_num=`` each emulated core runs the
same code on its contiguous share of the tokens (tiling.core_range).

Fast kernel (the default of the front ends): each output element is a function of its table byte q alone once
the row is fixed, so per token the same Cast -> Adds -> Muls instructions run on the 256 possible bytes and the
row is then a table lookup. Same instructions, same operands, same roundings, hence the same bits (tests compare
both kernels on every q, both fp16_subnormal modes and subnormal cases); the work is 256 instead of E vector
elements per token, and tokens are spread over the host threads independently of block_dim.

All fp16 arithmetic is in the instruction layer and the codecs (npu_emu.ascendc, npu_emu.dtypes.scalar).
"""

import numpy as np
from numba import njit, prange

from npu_emu.ascendc import CAST_NONE, CAST_RINT, DT_FLOAT16, DT_UINT8, Adds, Cast, DataCopy, DataCopyPad, Muls
from npu_emu.dtypes.scalar import f16_to_f32, f32_to_f16
from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.gather_dequant_int8.tiling import BUFFER_NUM, align_up, core_range, ub_offsets
from npu_emu.device.launch import checked_access, launch, ub_view
from npu_emu.device.read_only import read_only
from npu_emu.device.validate import AccessPattern, ValidationReport

Q_VALUES = 256          # a table byte has 256 values: the size of the fast kernel's per-row table
FAST_CHUNK = 32         # tokens per prange iteration of the fast kernel


@njit(inline="always", cache=True, error_model="numpy")
def _neg_half(h):
    """half(-float(h)): the kernel negates zp through float because dav_l310 has no scalar half arithmetic.
    Exact (the codec only re-encodes the same magnitude with the sign flipped)."""
    return f32_to_f16(-f16_to_f32(h), CAST_RINT, False)


@njit(cache=True, error_model="numpy")
def _cast_u8_to_half(dst, src, n):
    Cast(dst, src, CAST_NONE, n, DT_FLOAT16, DT_UINT8)             # uint8 -> half, exact


@njit(cache=True, error_model="numpy")
def _dequant(dst, calc, src, neg_z, s, n, ftz):
    Adds(calc, src, neg_z, n, DT_FLOAT16, ftz)                      # q - zp, rounding 1
    Muls(dst, calc, s, n, DT_FLOAT16, ftz)                          # (q - zp) * scale, rounding 2


# The instruction calls sit in small serial functions rather than inline in the prange bodies: numba's parfor
# passes are super-linear in the size of an inlined loop body (measured: minutes of compile time otherwise).
# Callers pass np.int64(...) / np.bool_(...) rather than literals so that each helper compiles once, not once
# per literal value.


@njit(cache=True, error_model="numpy")
def _core(block_idx, block_dim, td, ub_size, table_gm, indices_gm, scale_gm, zp_gm, y_gm, ftz):
    """One AI core: KernelGatherDequantInt8::Init + Process on tokens core_range(block_idx)."""
    emb = td.embDim
    vocab = td.vocab
    start, count = core_range(td.numIndices, block_dim, block_idx)
    o_idx, o_scale, o_zp, o_in, o_out, o_calc, in_bytes, out_bytes, _ = ub_offsets(count, emb, vocab)
    ub = np.empty(ub_size, np.uint8)
    idx_local = ub_view(ub, o_idx, np.int32, align_up(4 * count) // 4)
    scale_local = ub_view(ub, o_scale, np.uint16, align_up(2 * vocab) // 2)
    zp_local = ub_view(ub, o_zp, np.uint16, align_up(2 * vocab) // 2)
    calc = ub_view(ub, o_calc, np.uint16, emb)

    # LoadLookupTables: DataCopyExtParams{1, bytes, 0, 0, 0}, DataCopyPadExtParams{false, 0, 0, 0}
    DataCopyPad(idx_local, indices_gm[start:start + count], 1, 4 * count, 0, 0, False, 0, 0, np.int32(0))
    DataCopyPad(scale_local, scale_gm, 1, 2 * vocab, 0, 0, False, 0, 0, np.uint16(0))
    DataCopyPad(zp_local, zp_gm, 1, 2 * vocab, 0, 0, False, 0, 0, np.uint16(0))

    for i in range(count):
        idx = np.int64(idx_local[i])                      # GetValue; indices were checked to lie in [0, V)
        s = scale_local[idx]
        neg_z = _neg_half(zp_local[idx])
        slot = i % BUFFER_NUM
        row = ub_view(ub, o_in + slot * in_bytes, np.uint8, emb)
        out = ub_view(ub, o_out + slot * out_bytes, np.uint16, emb)
        DataCopy(row, table_gm[idx * emb:], emb)                  # CopyIn, unpadded (E % 32 == 0)
        _cast_u8_to_half(calc, row, emb)                          # Cast(calc, rowU8, CAST_NONE, E)
        _dequant(out, calc, calc, neg_z, s, emb, ftz)             # Adds(calc, calc, negZ, E); Muls(out, calc, s, E)
        DataCopy(y_gm[(start + i) * emb:], out, emb)              # CopyOut


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def gather_dequant_int8_kernel(block_dim, td, ub_size, table_gm, indices_gm, scale_gm, zp_gm, y_gm, ftz):
    """The device kernel ``gather_dequant_int8``; ``ftz`` = the vector unit flushes fp16 subnormals
    (fp16_subnormal="flush"; the device default npu-emu assumes is IEEE, ftz False)."""
    for block_idx in prange(block_dim):
        _core(np.int64(block_idx), block_dim, td, ub_size, table_gm, indices_gm, scale_gm, zp_gm, y_gm, ftz)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def gather_dequant_int8_fast(td, table_gm, indices_gm, scale_gm, zp_gm, y_gm, ftz):
    """Fast path: per token, Cast/Adds/Muls on the 256 byte values, then y row = that table at the row's bytes."""
    emb = td.embDim
    num = td.numIndices
    for chunk in prange((num + FAST_CHUNK - 1) // FAST_CHUNK):
        ub = np.empty(Q_VALUES * 7, np.uint8)
        q_u8 = ub_view(ub, 0, np.uint8, Q_VALUES)
        q_half = ub_view(ub, Q_VALUES, np.uint16, Q_VALUES)
        calc = ub_view(ub, 3 * Q_VALUES, np.uint16, Q_VALUES)
        lut = ub_view(ub, 5 * Q_VALUES, np.uint16, Q_VALUES)
        for q in range(Q_VALUES):
            q_u8[q] = q
        _cast_u8_to_half(q_half, q_u8, np.int64(Q_VALUES))
        _fast_tokens(chunk * FAST_CHUNK, min(num, (chunk + 1) * FAST_CHUNK), emb, q_half, calc, lut,
                     table_gm, indices_gm, scale_gm, zp_gm, y_gm, ftz)


@njit(cache=True, error_model="numpy")
def _fast_tokens(first, stop, emb, q_half, calc, lut, table_gm, indices_gm, scale_gm, zp_gm, y_gm, ftz):
    for i in range(first, stop):
        idx = np.int64(indices_gm[i])
        _dequant(lut, calc, q_half, _neg_half(zp_gm[idx]), scale_gm[idx], np.int64(Q_VALUES), ftz)
        row = table_gm[idx * emb:idx * emb + emb]
        out = y_gm[i * emb:i * emb + emb]
        for e in range(emb):                  # row slices + intp index: 1.6x faster than flat GM offsets
            out[e] = lut[np.intp(row[e])]


def access_pattern(tr, indices):
    """GM ranges and UB bytes of the faithful kernel for tiling result ``tr`` and the (flat) ``indices``.

    One "tile" per token: it reads table row indices[i] and writes y row i. Init reads the core's indices and
    all of scale and zero_point. Table reads depend on the data (a gather), so the indices take part.
    """
    td = tr.tiling
    num, emb, vocab, bd = td.numIndices, td.embDim, td.vocab, tr.block_dim
    ap = AccessPattern(bd)
    ap.gm("table", vocab * emb, np.uint8)
    ap.gm("indices", num, np.int32)
    ap.gm("scale", vocab, np.uint16)
    ap.gm("zero_point", vocab, np.uint16)
    ap.gm("y", num * emb, np.uint16, output=True)
    cores = np.arange(bd, dtype=np.int64)
    starts, counts = (np.array(c, np.int64) for c in zip(*(core_range(num, bd, c) for c in range(bd))))
    ap.read("indices", cores, -1, starts, starts + counts)
    ap.read("scale", cores, -1, 0, vocab)
    ap.read("zero_point", cores, -1, 0, vocab)
    ap.ub(cores, -1, [ub_offsets(int(c), emb, vocab)[-1] for c in counts])
    token = np.arange(num, dtype=np.int64)
    core = np.repeat(cores, counts)
    tile = token - starts[core]
    row = indices.astype(np.int64) * emb
    ap.read("table", core, tile, row, row + emb)
    ap.write("y", core, tile, token * emb, token * emb + emb)
    return ap


def run(table, indices, scale, zero_point, y, tr, *, flush=False, faithful=False, validate=True):
    """Launch on checked inputs: table uint8 [V, E], indices int32 (N,), scale / zero_point uint16 (V,) half bits,
    y uint16 [N, E] (written in place), ``tr`` the tiling result. Returns the validation report (or None)."""
    gm = tuple(read_only(a) for a in (table.reshape(-1), indices, scale, zero_point)) + (y.reshape(-1),)
    checked = None
    if validate:
        # the table reads follow the indices, so their values are part of the key; the fast path has no UB
        # layout (check_ub ran before)
        checked = checked_access(("gather_dequant_int8", tr, indices, bool(faithful)),
                                 lambda: access_pattern(tr, indices), ub_size=tr.ub_size if faithful else None,
                                 what="gather_dequant_int8 tiling")
    if faithful:
        ftz = np.bool_(flush)

        def gather_dequant_int8(block_dim, td, ub_size, *buffers):
            # launch passes (block_dim, td, ub_size, *gm); the fp16_subnormal switch rides along here rather than
            # as a second compiled kernel (each parallel entry costs seconds of compile time)
            gather_dequant_int8_kernel(block_dim, td, ub_size, *buffers, ftz)

        return launch(gather_dequant_int8, tr.block_dim, tr.tiling, *gm, ub_size=tr.ub_size, access=checked,
                      validate=validate)
    gather_dequant_int8_fast(tr.tiling.to_numba(), *gm, bool(flush))
    return None if checked is None else ValidationReport(overruns=list(checked.overruns))
