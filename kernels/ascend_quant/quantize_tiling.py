"""op_host tiling of Quantize (aclnnQuantize) on the Ascend 950 (docs/ops/ascend_quant.md §9).

Source: hicann/ops-nn quant/quantize/op_host/arch35/quantize_tiling_arch35.cpp (GetCompileInfo: cacheLine_ 128;
SelectMode, MergeInputShape, CalcTiling, CalcPerTensorBlockFactor, CalcPerChannelBlockFactor, CalcMaxBaseLen,
CalcPerChannelMaxN, CalcPerTensorUBFactor, CalcPerChannelUBFactor, CalcPerChannelNddmaUBFactor, CalcPerHeadBlockFactor,
CalcPerHeadUBFactor, GetCoreNumDoubleCut, CalTilingKey, WriteTilingData). Integer arithmetic as in the C++.
The struct (op_kernel/arch35/quantize_tilingdata.h) is not in the public tree we read: its fields are the ones
ParseTilingData copies, all written here as int64.
"""

from dataclasses import dataclass, field

from npu_emu.device import platforms
from npu_emu.device.tiling_data import TilingData, TilingResult
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

CACHE_LINE = 128                # CACHE_SIZE_910D
RESERVED_UB = 2048              # RESERVED_UB_SIZE (reserveUb_ of the tensor / channel paths taken equal: not public)
BUFF_NUM = 2
BLOCK_SIZE = 32
LAST_DIM_NUM = 32
DEFAULT_BASE_LEN = 128

MODE_TENSOR, MODE_CHANNEL, MODE_HEAD, MODE_CHANNEL_NDDMA = 0, 1, 2, 3     # our codes for TPL_PER_*
MODES = {"tensor": MODE_TENSOR, "channel": MODE_CHANNEL, "head": MODE_HEAD}
PAGE = "docs/ops/ascend_quant.md"
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "int32": 4, None: 0}


def check_soc(soc):
    """aclnnQuantize is emulated on the Ascend 950 only (DAV_3510): 161002 elsewhere."""
    plat = platforms.get(soc)
    if plat.npu_arch != 3510:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"aclnnQuantize (npu_quantize div_mode=True) is emulated on the Ascend 950 only: its public "
                         f"kernels are hicann/ops-nn quant/quantize/op_kernel/arch35 (regbase); {plat.name!r} "
                         f"(DAV_{plat.npu_arch}) runs a kernel that is not public. Pass soc='ascend950pr' ({PAGE} §9)")


def _cdiv(a, b):
    return (a + b - 1) // b


def _calign(a, b):
    return a if b == 0 else (a + b - 1) // b * b


def _falign(a, b):
    return 0 if b == 0 else a // b * b


def _i():
    return field(metadata={"ctype": "int64"})


@dataclass(frozen=True)
class QuantizeTilingData(TilingData):
    """The fields ParseTilingData reads (quantize.h), in that order."""

    numCore: int = _i()
    blockAxis: int = _i()
    ubAxis: int = _i()
    dim0: int = _i()
    dim1: int = _i()
    dim2: int = _i()
    blockUnion: int = _i()
    blockFactor: int = _i()
    blockTailFactor: int = _i()
    baseN: int = _i()
    baseLen: int = _i()
    hasZeroPoint: int = _i()
    axis: int = _i()
    roundMode: int = _i()
    sqrtMode: int = _i()


def merge_shape(x_shape, mode, axis):
    """MergeInputShape: tensor -> (1, prod); channel -> (prod(x[:-1]), x[-1]); head -> (prod(x[:axis]), x[axis],
    prod(x[axis+1:])). The third dim of the 2-D merges is written as 1."""
    p = 1
    for d in x_shape:
        p *= int(d)
    if mode == "tensor":
        return 1, p, 1
    if mode == "channel":
        return p // int(x_shape[-1]) if int(x_shape[-1]) else 0, int(x_shape[-1]), 1
    a = 1
    for d in x_shape[:axis]:
        a *= int(d)
    c = 1
    for d in x_shape[axis + 1:]:
        c *= int(d)
    return a, int(x_shape[axis]), c


def _core_num(factor, cores):
    per = _cdiv(factor, cores)
    return _cdiv(factor, per)


def _double_cut(d0, d1, cores):
    y = cores // d0
    return 0 if y == 0 else d0 * _core_num(d1, y)


def tiling(x_shape, x_dtype, s_dtype, z_dtype, y_dtype, mode, axis, *, soc="ascend950pr", core_num=None,
           ub_size=None):
    """The host tiling of one Quantize call -> TilingResult (tiling_key: our MODE_* code; block_dim = all vector
    cores, as SetBlockDim(coreNum_); cores at or past numCore return at once)."""
    check_soc(soc)
    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    cores = plat.GetCoreNumAiv()
    ub = plat.GetCoreMemSize("UB")
    xb, yb, sb, zb = BYTES[x_dtype], BYTES[y_dtype], BYTES[s_dtype], BYTES[z_dtype]
    d0, d1, d2 = merge_shape(x_shape, mode, axis)
    line = CACHE_LINE // xb                   # elements per cache line
    key = MODES[mode]
    per_elem = (xb + yb) * BUFF_NUM if mode == "tensor" else (xb + yb + sb + zb) * BUFF_NUM
    avail = ub - RESERVED_UB
    max_base = DEFAULT_BASE_LEN if per_elem == 0 else avail // per_elem        # CalcMaxBaseLen
    union, ub_axis, base_n = 1, 1, 1
    if mode == "tensor":
        cl = _cdiv(d1, line)
        act = _core_num(cl, cores)
        block_axis = 1
        bf = _cdiv(cl, act) * CACHE_LINE // xb
        tail = d1 - bf * (act - 1)
        tail = bf if tail == 0 else tail
        base_len = min(_calign(bf, line), _falign(max_base, line))
    elif mode == "channel":
        cl = _cdiv(d1, line)
        a0, a1 = _core_num(d0, cores), _core_num(cl, cores)
        block_axis = 0 if a0 >= a1 else 1
        act = a0 if a0 >= a1 else a1
        bf = _cdiv(d0 if block_axis == 0 else cl, act)
        if block_axis == 0:
            tail = d0 - bf * (act - 1)
        else:
            bf = bf * CACHE_LINE // xb
            tail = d1 - bf * (act - 1)
        tail = bf if tail == 0 else tail
        nddma = d1 < LAST_DIM_NUM and block_axis == 0
        if nddma:
            key = MODE_CHANNEL_NDDMA
            block_base = d1 if block_axis == 0 else bf
        else:
            max_base = _falign(max_base, line)
            block_base = _calign(d1 if block_axis == 0 else bf, line)
        if block_base <= max_base // 2:
            total = block_base * (xb + yb + sb + zb) * BUFF_NUM           # CalcPerChannelMaxN
            left = avail - total
            max_n = 1 if left <= 0 else left // total
            ub_axis, base_n = 0, min(max_n, bf if block_axis == 0 else d0)
            base_len = block_base if nddma else _calign(block_base, line)
        else:
            base_len = min(block_base, max_base)
    else:
        cl = _cdiv(d2, line)
        u0 = _core_num(d0, cores)
        u1 = _double_cut(d0, d1, cores)
        u2 = _double_cut(d0 * d1, cl, cores)
        block_axis, act = 0, u0
        if u1 > act:
            block_axis, act = 1, u1
        if u2 > act and d2 > BLOCK_SIZE:
            block_axis, act = 2, u2
        if block_axis == 0:
            bf = _cdiv(d0, act)
            tail = d0 - bf * (act - 1)
        elif block_axis == 1:
            union = act // d0
            bf = _cdiv(d1, union)
            tail = d1 - bf * (union - 1)
        else:
            union = act // d0 // d1
            bf = _cdiv(cl, union) * CACHE_LINE // xb
            tail = d2 - bf * (union - 1)
        tail = bf if tail == 0 else tail
        s2 = _calign(d2, line)
        max_base = _falign(max_base, line)
        if block_axis == 0:
            if d1 * s2 <= max_base:
                ub_axis, base_n, base_len = 0, d1, s2
            elif s2 <= max_base:
                ub_axis, base_n, base_len = 1, max_base // s2, s2
            else:
                ub_axis, base_n, base_len = 2, 1, max_base
        elif block_axis == 1:
            if s2 <= max_base:
                ub_axis, base_n, base_len = 1, min(bf, max_base // s2), s2
            else:
                ub_axis, base_n, base_len = 2, 1, max_base
        else:
            ub_axis, base_n, base_len = 2, 1, min(_calign(bf, line), max_base)
    td = QuantizeTilingData(numCore=act, blockAxis=block_axis, ubAxis=ub_axis, dim0=d0, dim1=d1, dim2=d2,
                            blockUnion=union, blockFactor=bf, blockTailFactor=tail, baseN=base_n, baseLen=base_len,
                            hasZeroPoint=int(z_dtype is not None), axis=axis, roundMode=0, sqrtMode=0)
    notes = ("tiling_key is the emulator's mode code (0 tensor, 1 channel, 2 head, 3 channel NDDMA), not "
             "GET_TPL_TILING_KEY's value",)
    return TilingResult(td, cores, key, 0, ub, cores, soc, notes)
