"""op_host tiling of GatherDequantInt8 (docs/ops/gather_dequant_int8.md §3.1, §3.2).

hicann/cann-recipes-harmony-infer: ops/ascendc/src/gather_dequant_int8_custom/op_host/gather_dequant_int8.cpp
(TilingFunc) and op_host/gather_dequant_int8_tiling.h (the struct); the UB layout is the kernel's Init
(op_kernel/gather_dequant_int8.cpp). The device tiling is three uint32 fields and SetBlockDim(1); everything about
more than one core is an npu-emu extension (``core_num=``) whose results are identical by construction: tokens are
independent and each core replays the same per-token pipeline on its contiguous share.
"""

from dataclasses import dataclass

from numba.extending import register_jitable

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult

SOC = "kirin9020"
BUFFER_NUM = 2          # the kernel's in/out row queues are double-buffered
UB_ALIGN = 32
_U32 = 1 << 32


@dataclass(frozen=True)
class GatherDequantInt8TilingData(TilingData):
    """op_host/gather_dequant_int8_tiling.h: numIndices, embDim, vocab, three uint32_t (12 bytes)."""

    numIndices: int
    embDim: int
    vocab: int

    _ctypes = ("uint32", "uint32", "uint32")


@register_jitable
def align_up(nbytes, unit=UB_ALIGN):
    return (nbytes + unit - 1) // unit * unit


@register_jitable
def core_range(num_indices, block_dim, block_idx):
    """(first token, token count) of one core: the first ``num_indices % block_dim`` cores take one extra token.

    With block_dim 1 this is the device's whole range [0, numIndices). Host code and the kernel share this one
    definition (register_jitable: plain Python here, compiled where an njit kernel calls it).
    """
    per = num_indices // block_dim
    extra = num_indices % block_dim
    start = block_idx * per + min(block_idx, extra)
    count = per + 1 if block_idx < extra else per
    return start, count


@register_jitable
def ub_offsets(num_indices, emb_dim, vocab):
    """UB byte offsets in the kernel's InitBuffer order (docs/ops/gather_dequant_int8.md §3.2) for a core holding
    ``num_indices`` indices: (idxBuf, scaleBuf, zpBuf, inQueueRow, outQueueRow, calcBuf, inQueueRow slot bytes,
    outQueueRow slot bytes, total). The row queues have BUFFER_NUM slots each."""
    idx = 0
    scale = idx + align_up(4 * num_indices)
    zp = scale + align_up(2 * vocab)
    row_in_bytes = align_up(emb_dim)
    row_in = zp + align_up(2 * vocab)
    row_out_bytes = align_up(2 * emb_dim)
    row_out = row_in + BUFFER_NUM * row_in_bytes
    calc = row_out + BUFFER_NUM * row_out_bytes
    total = calc + align_up(2 * emb_dim)
    return idx, scale, zp, row_in, row_out, calc, row_in_bytes, row_out_bytes, total


@dataclass(frozen=True)
class UbLayout:
    """Byte offsets of the kernel's UB buffers in InitBuffer order (docs/ops/gather_dequant_int8.md §3.2); ``total`` =
    the footprint."""

    idx: int
    scale: int
    zp: int
    row_in: int         # BUFFER_NUM slots of row_in_bytes each
    row_out: int        # BUFFER_NUM slots of row_out_bytes each
    calc: int
    row_in_bytes: int
    row_out_bytes: int
    total: int


def ub_layout(num_indices, emb_dim, vocab):
    """:func:`ub_offsets` with names."""
    return UbLayout(*ub_offsets(num_indices, emb_dim, vocab))


def gather_dequant_int8_tiling(table_shape, indices_shape, *, soc=SOC, ub_size=None, core_num=None):
    """TilingFunc: numIndices = prod(indices storage shape) in uint32, embDim = table.dim(last), vocab = table.dim(0).

    ``core_num=None`` gives the device's launch, block_dim 1. An integer k splits the tokens over
    min(k, numIndices) emulated cores (npu-emu extension, same results). ``ub_size=None``: the Kirin 9020 UB size
    is not public, so the UB scratch is sized to the kernel's footprint and nothing is checked here
    (checks.check_ub does the optional check).
    """
    plat = platforms.get(soc)
    table_shape = tuple(int(d) for d in table_shape)
    indices_shape = tuple(int(d) for d in indices_shape)
    notes = []
    num = 1
    for d in indices_shape:
        num = (num * d) % _U32                       # uint32 product, wraps like the C++
    true_num = 1
    for d in indices_shape:
        true_num *= d
    if num != true_num:
        notes.append(f"numIndices wraps: {true_num} tokens are {num} modulo 2^32 in the uint32 tiling field; "
                     "the device would process only that many")
    emb = (table_shape[-1] if table_shape else 0) % _U32
    vocab = (table_shape[0] if table_shape else 0) % _U32
    td = GatherDequantInt8TilingData(numIndices=num, embDim=emb, vocab=vocab)

    if core_num is None:
        block_dim = 1                                # context->SetBlockDim(1): one AI core
    else:
        core_num = int(core_num)
        if core_num <= 0:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"core_num={core_num} must be a positive integer")
        block_dim = max(1, min(core_num, num))
        notes.append(f"tokens split over {block_dim} emulated cores (npu-emu extension; the device kernel runs "
                     "on one core with SetBlockDim(1); results are identical)")
    _, first_count = core_range(num, block_dim, 0)
    footprint = ub_layout(first_count, emb, vocab).total
    if ub_size is None:
        notes.append("Kirin 9020 UB size is not public: UB sized to the kernel's footprint, not checked "
                     "(pass ub_size= to check it)")
        ub = footprint
    else:
        ub = int(ub_size)
    return TilingResult(td, block_dim, 0, 0, ub, block_dim if core_num is None else core_num, plat.name,
                        tuple(notes))


def footprint(tr):
    """UB bytes the kernel allocates on its busiest core (core 0) for tiling result ``tr``."""
    td = tr.tiling
    _, count = core_range(td.numIndices, tr.block_dim, 0)
    return ub_layout(count, td.embDim, td.vocab).total
