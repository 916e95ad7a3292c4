"""Host tiling of DynamicMxQuantWithDualAxis, reproduced from hicann/ops-nn:
quant/dynamic_mx_quant_with_dual_axis/op_host/dynamic_mx_quant_with_dual_axis_tiling.cpp (MergeAxis, SplitCore,
SetTilingParams, SetTilingKey), struct op_kernel/arch35/dynamic_mx_quant_with_dual_axis_tilingdata.h, template
arguments op_kernel/arch35/dynamic_mx_quant_with_dual_axis_struct.h.

The leading dims merge into dim0; a task is (batch, block of splitBlockH rows, block of blockW = 256 columns);
splitBlockH = 2 * 32 * groupPerUb with groupPerUb from the UB budget of the double-buffered queues; the first
headCoreNum cores take blockPerHeadCore consecutive tasks, the others blockPerTailCore
(docs/ops/dynamic_mx_quant_with_dual_axis.md §3).
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.mx_quant.tiling import DEFAULT_SOC, FP4, TilingResult, _core_count  # noqa: F401
from npu_emu.device.tiling_data import TilingData

BLOCK_SIZE = 32
BLOCK_W = 256                    # DIGIT_256: columns of a task
BLOCK_PER_GROUP = 2              # two 32-row blocks share one mxscale2 row pair
N_BUFFER = 2
RESERVED_UB_SIZE = 1024
BYTES_OF_INPUT_TYPE = 2
MAX_BYTES_OF_OUTPUT_TYPE = 1
FP4E2M1_MAX = 6.0
UB_BLOCK = 32
# template arguments (dynamic_mx_quant_with_dual_axis_struct.h)
TPL_ROUND_MODE = {"round": 0, "floor": 1, "rint": 4}
ROUND_MODE_LIST = {"round": 0, "floor": 1, "rint": 4}      # RoundModeList values stored in tilingData.roundMode
ACL_CODE = {"float8_e5m2": 35, "float8_e4m3fn": 36, "float4_e2m1": 40, "float4_e1m2": 41}


def _ceil_div(a, b):
    return -(-a // b)


def _ceil_align(a, b):
    return _ceil_div(a, b) * b


@dataclass(frozen=True)
class DynamicMxQuantWithDualAxisTilingData(TilingData):
    """op_kernel/arch35/dynamic_mx_quant_with_dual_axis_tilingdata.h: 25 int64 (tilingKey uint64) then two floats."""

    totalCoreNum: int
    usedCoreNum: int
    roundMode: int
    dstType: int
    scaleAlg: int
    blockSize: int
    dim0: int
    dimNeg2: int
    dimNeg1: int
    blockW: int
    splitBlockH: int
    tilingKey: int
    dimNeg2Tail: int
    dimNeg1Tail: int
    dimNeg2SplitBlockNum: int
    dimNeg1BlockNum: int
    blockPerHeadCore: int
    blockPerTailCore: int
    headCoreNum: int
    dimNeg2IsOdd: int
    dimNeg1IsOdd: int
    dimNeg1IsPad: int
    blockCountPerBatch: int
    scale1ColCountPerBatch: int
    scale2RowCountPerBatch: int
    dstTypeMax: float
    invDstTypeMax: float

    _ctypes = ("int64",) * 11 + ("uint64",) + ("int64",) * 13 + ("float", "float")


def group_per_ub(ub_size, block_w=BLOCK_W, block_size=BLOCK_SIZE):
    """SplitCore's groupPerUb: how many 64-row groups of a 256-column task fit the double-buffered UB."""
    x_ub = block_size * BLOCK_PER_GROUP * block_w * BYTES_OF_INPUT_TYPE
    y1_ub = block_size * BLOCK_PER_GROUP * block_w * MAX_BYTES_OF_OUTPUT_TYPE
    y2_ub = y1_ub
    scale2_tmp = BLOCK_PER_GROUP * block_w * BYTES_OF_INPUT_TYPE
    scale1_tmp = block_size * BLOCK_PER_GROUP * _ceil_align(_ceil_div(block_w, block_size), block_size) \
        * BYTES_OF_INPUT_TYPE
    scale2_ub = BLOCK_PER_GROUP * block_w
    scale1_ub = block_size * BLOCK_PER_GROUP * _ceil_align(_ceil_div(block_w, block_size), block_size)
    per_group = x_ub + y1_ub + y2_ub + scale2_tmp + scale1_tmp + scale2_ub + scale1_ub + scale2_tmp
    # uint64 arithmetic in the C++: a UB smaller than the reserve wraps around (rejected below instead)
    return (ub_size - RESERVED_UB_SIZE) // N_BUFFER // per_group


def ub_bytes(split_block_h, block_w=BLOCK_W, block_size=BLOCK_SIZE):
    """UB bytes the kernel's Init allocates (queues double-buffered, the three TBufs once)."""
    in_buf = block_w * split_block_h * BYTES_OF_INPUT_TYPE
    s2 = block_w * _ceil_div(split_block_h, 2 * block_size) * 2
    s1 = split_block_h * UB_BLOCK
    out = block_w * split_block_h
    tmp2 = s2 * BYTES_OF_INPUT_TYPE
    tmp1 = split_block_h * UB_BLOCK
    return N_BUFFER * (in_buf + s1 + s2 + 2 * out) + tmp1 + tmp2 + s2


def tiling_key(round_mode, scale_alg, mode=0):
    """GET_TPL_TILING_KEY(mode, roundMode, scaleAlg): fields packed low bits first with the declared widths 1, 3, 2,
    each as the index of its value in the ASCENDC_TPL_UI_LIST (rint 4 -> 0, round 0 -> 1, floor 1 -> 2)."""
    rm_index = {"rint": 0, "round": 1, "floor": 2}[round_mode]
    return mode | (rm_index << 1) | (scale_alg << 4)


def dual_axis_tiling(shape, *, y_dtype, round_mode="rint", scale_alg=0, dst_type_max=0.0, soc=DEFAULT_SOC,
                     core_num=None, ub_size=None):
    """DoTiling for x of ``shape`` (rank >= 2, non-empty) -> TilingResult."""
    shape = tuple(int(s) for s in shape)
    plat, total = _core_count(soc, core_num, ub_size)
    ub = plat.GetCoreMemSize("UB")
    dim0 = int(np.prod(shape[:-2], dtype=np.int64))
    m, n = shape[-2], shape[-1]
    if min(dim0, m, n) <= 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"x shape {shape} is empty: there is nothing to tile")
    gpu = group_per_ub(ub) if ub > RESERVED_UB_SIZE else 0
    if gpu <= 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                         f"UB of {ub} bytes holds no 64 x 256 task (groupPerUb = 0, splitBlockH = 0: the device "
                         f"tiling would divide by zero); pass a larger ub_size")
    split_h = BLOCK_PER_GROUP * BLOCK_SIZE * gpu
    neg2_blocks = _ceil_div(m, split_h)
    neg1_blocks = _ceil_div(n, BLOCK_W)
    tasks = dim0 * neg2_blocks * neg1_blocks
    used = min(total, tasks)
    d = float(np.float32(dst_type_max))
    inv = float(np.float32(1.0 / d)) if d != 0.0 else float(np.float32(1.0 / FP4E2M1_MAX))
    key = tiling_key(round_mode, scale_alg)
    td = DynamicMxQuantWithDualAxisTilingData(
        totalCoreNum=total, usedCoreNum=used, roundMode=ROUND_MODE_LIST[round_mode], dstType=ACL_CODE[y_dtype],
        scaleAlg=scale_alg, blockSize=BLOCK_SIZE, dim0=dim0, dimNeg2=m, dimNeg1=n, blockW=BLOCK_W,
        splitBlockH=split_h, tilingKey=0,      # SetTilingData copies tilingParams.tilingKey, never assigned: 0
        dimNeg2Tail=m % split_h or split_h, dimNeg1Tail=n % BLOCK_W or BLOCK_W,
        dimNeg2SplitBlockNum=neg2_blocks, dimNeg1BlockNum=neg1_blocks,
        blockPerHeadCore=_ceil_div(tasks, total), blockPerTailCore=tasks // total, headCoreNum=tasks % total,
        dimNeg2IsOdd=_ceil_div(m, BLOCK_SIZE) % 2, dimNeg1IsOdd=_ceil_div(n, BLOCK_SIZE) % 2,
        dimNeg1IsPad=int(n % BLOCK_SIZE != 0), blockCountPerBatch=neg2_blocks * neg1_blocks,
        scale1ColCountPerBatch=_ceil_div(n, 2 * BLOCK_SIZE) * 2, scale2RowCountPerBatch=_ceil_div(m, 2 * BLOCK_SIZE) * 2,
        dstTypeMax=d, invDstTypeMax=inv)
    notes = tuple(f"{f}: {why}" for f, why in plat.placeholders if f in ("core_num", "ub_size"))
    return TilingResult(td, used, key, plat.GetLibApiWorkSpaceSize() if hasattr(plat, "GetLibApiWorkSpaceSize")
                        else 0, ub, total, plat.name, notes)


def core_tasks(td, core):
    """(first task, task count) of ``core`` as InitParams computes them."""
    if core < td.headCoreNum:
        return core * td.blockPerHeadCore, td.blockPerHeadCore
    return td.headCoreNum * td.blockPerHeadCore + (core - td.headCoreNum) * td.blockPerTailCore, td.blockPerTailCore
