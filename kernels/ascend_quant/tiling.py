"""op_host tiling of AscendQuantV2 on the Atlas A2 / A3 (docs/ops/ascend_quant.md §3).

Source: hicann/ops-nn quant/ascend_quant_v2/op_host/ascend_quant_v2_tiling.cpp (GetOpParam, MergeInputShape,
CalcTiling, CalcBlockFactor, CalcBlockFactorDoubleCut, CalcUBFactor, CalcUBFactorDoubleCut, CalcMaxBaseLen,
CalcMaxN, CalcTilingKey, WriteTilingData) and ascend_quant_v2_tiling.h (the struct, reserveUb_ 2048,
cacheLine_ 256 / 512 on the 910B family). Integer arithmetic as in the C++ (truncating division of non-negative
values). The per-head template (scale along axis -2 of a 3-D or larger x) and the FRACTAL_NZ template are not
emulated: the front end rejects them before tiling.
"""

from dataclasses import dataclass, field

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult

RESERVE_UB = 2048
CACHE_LINE_910B = 512
CACHE_LINE_DEFAULT = 256
BASE_LEN = 128
BLOCK_SIZE = 32
HALF_BASE = 2
DOUBLE_CUT = 11                 # blockAxis_ value meaning "cut dim0 and dim1"

KEY_PER_CHANNEL = 0             # QuantKey values (ascend_quant_v2_tiling.h)
KEY_PER_TENSOR = 1
KEY_PER_HEAD = 2

ROUND_MODES = {"round": 0, "floor": 1, "ceil": 2, "trunc": 3}      # RoundMode::MODE_*

X_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def _ceil_div(a, b):
    return (a + b - 1) // b


def _ceil_align(a, b):
    return 0 if b == 0 else (a + b - 1) // b * b


def _floor_align(a, b):
    return 0 if b == 0 else a // b * b


def _i(ctype):
    return field(metadata={"ctype": ctype})


@dataclass(frozen=True)
class AscendQuantV2TilingData(TilingData):
    """op_host/ascend_quant_v2_tiling.h BEGIN_TILING_DATA_DEF(AscendQuantV2TilingData), in struct order."""

    numCore: int = _i("uint32")
    blockAxis: int = _i("int32")
    ubAxis: int = _i("int32")
    dim0: int = _i("int64")
    dim1: int = _i("int64")
    dim2: int = _i("int64")
    blockUnion: int = _i("int64")
    blockFactor: int = _i("int64")
    blockTailFactor: int = _i("int64")
    baseN: int = _i("int64")
    baseLen: int = _i("int64")
    hasOffset: int = _i("int16")
    sqrtMode: int = _i("int16")
    roundMode: int = _i("int16")
    reserve1: int = _i("int16")
    E: int = _i("int64")
    K: int = _i("int64")
    N: int = _i("int64")
    needCoreNum: int = _i("int64")


def merge_shape(x_shape, per_tensor):
    """MergeInputShape: per-tensor -> [1, prod(x), 1]; per-channel -> [prod(x[:-1]), x[-1], 1]."""
    shape0, shape1 = 1, int(x_shape[-1])
    for d in x_shape[:-1]:
        if per_tensor:
            shape1 *= int(d)
        else:
            shape0 *= int(d)
    return shape0, shape1, 1


def _core_num(factor, core_num):
    """GetCoreNum: cores actually used when ``factor`` units are spread over ``core_num``."""
    if factor <= 0:
        return 0
    per_core = _ceil_div(factor, core_num)
    return _ceil_div(factor, per_core)


def _core_num_double_cut(shape0, shape1, core_num):
    if shape0 == 0:
        return 0
    y_core_num = core_num // shape0
    if y_core_num <= 0:
        return max(y_core_num, 0)
    return shape0 * _core_num(shape1, y_core_num)


def _max_base_len(ub, x_bytes, cast_bytes, has_offset, per_tensor):
    base_input = 1 if per_tensor else (3 if has_offset else 2)
    total = x_bytes * base_input + 1 + cast_bytes * base_input
    return BASE_LEN if total == 0 else ub // total


def _max_n(ub, base, x_bytes, cast_bytes, has_offset, per_tensor):
    base_input = 0 if per_tensor else (2 if has_offset else 1)
    left = ub - base * x_bytes * base_input - base * cast_bytes * base_input - base * cast_bytes
    if left <= 0:
        return 1
    if base == 0:
        return 0
    return left // (x_bytes + 1) // base


def tiling(x_shape, x_dtype, *, per_tensor, has_offset, sqrt_mode=False, round_mode="round", soc="ascend910b2",
           core_num=None, ub_size=None):
    """The host tiling of one AscendQuantV2 call -> TilingResult (block_dim = all vector cores, as
    WriteTilingData's SetBlockDim(coreNum_); cores at or past ``numCore`` return at once)."""
    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    if plat.npu_arch != 2201:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"AscendQuantV2 is emulated for the Atlas A2 / A3 (DAV_2201: soc='ascend910b2', "
                         f"'ascend910_93', ...), not {plat.name!r}: the 950 (regbase) and 310P kernels differ; "
                         f"pass soc='ascend910b2' (docs/ops/ascend_quant.md §1)")
    cores = plat.GetCoreNumAiv()
    ub = plat.GetCoreMemSize("UB")
    cache_line = CACHE_LINE_910B            # isAscend910B_: DAV_2201 (A2 / A3)
    x_bytes = X_BYTES[x_dtype]
    cast_bytes = 4 if x_dtype in ("float16", "bfloat16") else 0
    dim0, dim1, dim2 = merge_shape(x_shape, per_tensor)
    shape0, shape1 = dim0, dim1             # GetNewShape0: unchanged on the 910B
    cache_line_num = _ceil_div(shape1, cache_line // x_bytes)
    act0 = _core_num(shape0, cores)
    act1 = _core_num(cache_line_num, cores)
    act = act0 if act0 >= act1 else act1
    double_cut = False
    if act < cores and shape0 > 1 and shape1 > BLOCK_SIZE:
        act2 = _core_num_double_cut(shape0, cache_line_num, cores)
        if act2 > act:
            act, double_cut = act2, True
    elem_per_line = cache_line // x_bytes
    available = ub - RESERVE_UB
    max_base = _floor_align(_max_base_len(available, x_bytes, cast_bytes, has_offset, per_tensor), elem_per_line)
    block_union = 1
    if double_cut:
        block_axis = DOUBLE_CUT
        block_union = act // shape0
        block_factor = _ceil_div(cache_line_num, block_union) * cache_line // x_bytes
        block_tail = shape1 - block_factor * (block_union - 1)
        block_tail = block_factor if block_tail == 0 else block_tail
        ub_axis, base_n = 1, 1
        base_len = min(_ceil_align(block_factor, elem_per_line), max_base)
    else:
        block_axis = 0 if act0 >= act1 else 1
        size = shape0 if act0 >= act1 else cache_line_num
        block_factor = _ceil_div(size, act)
        if block_axis == 0:
            block_tail = shape0 - block_factor * (act - 1)
        else:
            block_factor = block_factor * cache_line // x_bytes
            block_tail = shape1 - block_factor * (act - 1)
        block_tail = block_factor if block_tail == 0 else block_tail
        block_base = _ceil_align(shape1 if block_axis == 0 else block_factor, elem_per_line)
        if block_base <= max_base // HALF_BASE:
            max_n = _max_n(available, block_base, x_bytes, cast_bytes, has_offset, per_tensor)
            inner = block_factor if block_axis == 0 else shape0
            ub_axis, base_n, base_len = 0, min(max_n, inner), _ceil_align(block_base, elem_per_line)
        else:
            ub_axis, base_n, base_len = 1, 1, min(block_base, max_base)
    td = AscendQuantV2TilingData(
        numCore=act, blockAxis=block_axis, ubAxis=ub_axis, dim0=dim0, dim1=dim1, dim2=dim2, blockUnion=block_union,
        blockFactor=block_factor, blockTailFactor=block_tail, baseN=base_n, baseLen=base_len,
        hasOffset=int(bool(has_offset)), sqrtMode=int(bool(sqrt_mode)), roundMode=ROUND_MODES[round_mode],
        reserve1=0, E=0, K=0, N=0, needCoreNum=0)
    key = KEY_PER_TENSOR if per_tensor else KEY_PER_CHANNEL
    notes = ("blockUnion is written as 1 outside the double cut (its initial value is not in the public header)",)
    return TilingResult(td, cores, key, 0, ub, cores, soc, notes)
