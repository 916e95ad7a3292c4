"""op_host tiling of DynamicQuant / DynamicQuantV2 on Atlas A2/A3 (docs/ops/dynamic_quant.md §3).

hicann/ops-nn: quant/dynamic_quant/op_host/dynamic_quant_tiling.cpp (DynamicQuantTiling::RunFusionKernelTiling,
SetSpecialTilingForDs, CalcTilingForMultiRow, CalculateMaxUbSizePerRow, SetTilingData, SetTilingKey) and
dynamic_quant_tiling.h (DynamicQuantTilingData). All arithmetic is uint32 with truncating division, as in the C++.

Tiling keys, tried in this order:

* 100 (``dynamic_quant_single_row.h``): no group_index, int8, symmetric (2 outputs), rowLen in {4096, 5120, 10240},
  4 <= rows <= 384.
* 10 (``dynamic_quant_multi_row.h``): no group_index, symmetric, 128 <= rowLen <= maxUbLen, rowLen % 8 == 0, where
  maxUbLen = min((ub - 1024 - 3392) / (15 with smooth | 11) rounded down to 64, 255 * 64)
  (16320 without smooth, 12736 with, on a 196352-byte UB).
* otherwise, by the UB a row needs (ubPerRowNew = (17 | 11) * align16(rowLen); with group: align8(groupNum) * 4 +
  17 * align16(rowLen); double-buffer need ubPerRow = (19 | 13) * align16(rowLen)): 6 (8 with groups) when not one
  row fits (ub - 1024 < ubPerRowNew; the row is then walked in chunks of innerLoopEle), 7 with groups, 2/3
  (bf16/half, double-buffered ``dynamic_quant_db.h``) when ubPerRow < ub - 1024, else 0/1 (``dynamic_quant.h``).

groupNum is read in CheckSmoothShape only, so a group_index without smooth_scales leaves groupNum = 0 and the
non-MoE keys run (group_index is then ignored; keys 100 and 10 are still excluded by its presence).
"""

from dataclasses import dataclass

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult

DEFAULT_SOC = "ascend910b2"

RESERVED_LENGTH = 1024
ONE_REPEAT_ELE = 64
MEMORY_ALLOC_COEFFICIENT = 12
NUM_TWO_FIVE_SIX = 256
MULTI_ROW_HAS_SMOOTH_SPLIT = 15
MULTI_ROW_NO_SMOOTH_SPLIT = 11
MIN_ROW_LENGTH_THRESHOLD = 128
COMPARE_INT = 255
FLOAT_NUM_ONE_RPT = 128
MAX_ROW_LEN_SPECIAL = 16384
MAX_EXPERT_NUM = 1024
SYS_WORKSPACE_SIZE = 16777216
DB_SMOOTH_UB, DB_UB, SMOOTH_UB, PLAIN_UB, MOE_UB = 19, 13, 17, 11, 17
GROUP_DTYPE_SIZE = 4                      # g_dTypeLen[DT_INT32]

KEY_BF16, KEY_HALF, KEY_DB_BF16, KEY_DB_HALF = 0, 1, 2, 3
KEY_LARGE_SHAPE, KEY_MOE, KEY_MOE_LARGE_SHAPE, KEY_MULTI_ROW, KEY_SINGLE_ROW = 6, 7, 8, 10, 100
KEYS = (0, 1, 2, 3, 6, 7, 8, 10, 100)

U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class DynamicQuantTilingData(TilingData):
    """op_host/dynamic_quant_tiling.h: the 15 uint32 fields the A2/A3 kernels read (the 310P and perchannel
    fields after them are not used on these keys and stay 0 in the byte image)."""

    coreNum: int
    rowLen: int
    headCoreNum: int
    rowPerHeadCore: int
    rowPerTailCore: int
    multiRowNumHeadCore: int
    multiRowNumTailCore: int
    innerLoopEle: int
    innerLoopTimes: int
    innerLoopTail: int
    groupNum: int
    alignGroupNum: int
    hasSmooth: int
    unused: int
    ubSize: int

    _ctypes = ("uint32",) * 15


def _ceil_div(a, b):
    return (a + b - 1) // b


def _align_up(a, base):
    return (a + base - 1) // base * base


def _tiling_error(message):
    return AclnnError(ACLNN_ERR_INNER_TILING_ERROR, message)


def platform(soc=DEFAULT_SOC, core_num=None, ub_size=None):
    plat = platforms.get(soc)
    if core_num is not None or ub_size is not None:
        plat = plat.override(core_num=None if core_num is None else int(core_num),
                             ub_size=None if ub_size is None else int(ub_size))
    return plat


def multi_row_max_ub_len(ub_size, has_smooth):
    """CheckMultiRowPreconditions: the longest row key 10 takes."""
    m = ub_size - RESERVED_LENGTH - (NUM_TWO_FIVE_SIX + ONE_REPEAT_ELE + MEMORY_ALLOC_COEFFICIENT * ONE_REPEAT_ELE * 4)
    split = MULTI_ROW_HAS_SMOOTH_SPLIT if has_smooth else MULTI_ROW_NO_SMOOTH_SPLIT
    m = m // split // ONE_REPEAT_ELE * ONE_REPEAT_ELE
    return min(m, COMPARE_INT * ONE_REPEAT_ELE)


def tiling(rows, row_len, *, x_dtype="bfloat16", has_smooth=False, has_group=False, group_num=0, y_int4=False,
           asymmetric=False, soc=DEFAULT_SOC, core_num=None, ub_size=None, key=None):
    """RunFusionKernelTiling for x [rows, row_len] (rows = the product of the leading dims) -> TilingResult.

    ``has_group``: a group_index is given; ``group_num``: its length (read only with smooth_scales, as op_host
    does). ``asymmetric``: DynamicQuantV2 with an offset output (GetComputeNodeOutputNum() == 3).

    ``key`` (emulator-added): the tiling of this shape under a given key, the one a larger call picked (Dask by rows:
    each chunk runs as its part of the whole call). Only the row count may differ from the call that picked it: the
    rows condition of key 100 (4 <= rows <= 384) is not applied when ``key`` is 100, key 100 is not taken when
    ``key`` is another; every other condition still holds, else AclnnError 161002 names the key.
    """
    if key is not None and key not in KEYS:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"tiling key {key} is not one of {KEYS}")
    res = _tiling(rows, row_len, x_dtype, has_smooth, has_group, group_num, y_int4, asymmetric, soc, core_num,
                  ub_size, key)
    if key is not None and res.tiling_key != key:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"tiling key {key} cannot run x [{rows}, {row_len}] with these inputs (op_host picks key "
                         f"{res.tiling_key} for them, and only key 100's row-count condition may be lifted)")
    return res


def _tiling(rows, row_len, x_dtype, has_smooth, has_group, group_num, y_int4, asymmetric, soc, core_num, ub_size,
            force):
    plat = platform(soc, core_num, ub_size)
    vec = int(plat.GetCoreNumAiv())
    ub = int(plat.GetCoreMemSize("UB"))
    if vec <= 0 or ub <= 0:
        raise _tiling_error(f"vectorCoreNum {vec} and ubSize {ub} must be positive")
    rows, row_len = int(rows), int(row_len)
    if rows > U32 or row_len > U32:
        raise _tiling_error(f"rows {rows} and rowLen {row_len} must fit uint32 (the tiling's type)")
    group_num = int(group_num) if (has_group and has_smooth) else 0
    if group_num > MAX_EXPERT_NUM:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"group_index has {group_num} groups; at most {MAX_EXPERT_NUM}")
    bf16 = x_dtype == "bfloat16"
    notes = tuple(f"{f}: {why}" for f, why in plat.placeholders if f in ("core_num", "ub_size"))

    def result(td, key, block_dim):
        return TilingResult(td, block_dim, key, SYS_WORKSPACE_SIZE, ub, vec, plat.name, notes)

    base = dict(innerLoopEle=0, innerLoopTimes=0, innerLoopTail=0, groupNum=0, alignGroupNum=0,
                hasSmooth=int(has_smooth), unused=0, ubSize=0)

    # SetSpecialTilingForDs (key 100)
    rows_ok = (4 <= rows <= 384) if force is None else (force == KEY_SINGLE_ROW and rows >= 1)
    if (not has_group and not y_int4 and not asymmetric and row_len in (4096, 5120, 10240) and rows_ok):
        per_ub = min(MAX_ROW_LEN_SPECIAL // row_len, rows)
        row_loops = _ceil_div(rows, per_ub)
        tmp_r = _ceil_div(row_loops, vec)
        core = _ceil_div(row_loops, tmp_r)
        tmp_r = _ceil_div(row_loops, core)
        left = rows - (core - 1) * tmp_r * per_ub
        td = DynamicQuantTilingData(coreNum=core, rowLen=row_len, headCoreNum=core - 1,
                                    rowPerHeadCore=tmp_r * per_ub, rowPerTailCore=max(left, 0),
                                    multiRowNumHeadCore=per_ub, multiRowNumTailCore=per_ub, **base)
        return result(td, KEY_SINGLE_ROW, core)

    # CalcTilingForMultiRow (key 10)
    if not has_group and not asymmetric:
        max_ub_len = multi_row_max_ub_len(ub, has_smooth)
        if MIN_ROW_LENGTH_THRESHOLD <= row_len <= max_ub_len and row_len % 8 == 0:
            per_ub = min(max_ub_len // row_len, rows)
            row_loops = rows // per_ub if per_ub else 0
            per_core_loop = row_loops // vec
            if per_core_loop < 1:
                core = row_loops
                if core != 0:
                    per_core_loop = 1
                else:
                    per_core_loop, core = 0, 1
            else:
                core = row_loops // per_core_loop
            core = min(vec, core)
            extra = rows - core * per_core_loop * per_ub
            tail_rows = extra // core
            head = extra % core
            d = dict(base, ubSize=ub)
            td = DynamicQuantTilingData(coreNum=core, rowLen=row_len, headCoreNum=head,
                                        rowPerHeadCore=per_core_loop * per_ub + tail_rows + 1, rowPerTailCore=0,
                                        multiRowNumHeadCore=per_ub, multiRowNumTailCore=per_ub, **d)
            return result(td, KEY_MULTI_ROW, core)

    # the general keys
    core = max(min(vec, rows), 1)
    head = rows % core
    per_head = (rows + core - 1) // core
    per_tail = rows // core
    arl = _align_up(row_len, 16)
    ub_per_row = 0
    align_group = 0
    if group_num > 0:
        align_group = _align_up(group_num, 8)
        ub_per_row_new = align_group * GROUP_DTYPE_SIZE + MOE_UB * arl
    else:
        ub_per_row = (DB_SMOOTH_UB if has_smooth else DB_UB) * arl
        ub_per_row_new = (SMOOTH_UB if has_smooth else PLAIN_UB) * arl
    max_use = ub - RESERVED_LENGTH
    if ub_per_row_new > U32:
        raise _tiling_error(f"rowLen {row_len} overflows the tiling's uint32 UB arithmetic")
    ub_avail = max_use // ub_per_row_new
    use_db = True
    inner_ele = inner_times = inner_tail = 0
    if ub_avail == 0:
        inner_ele = max_use // DB_SMOOTH_UB // FLOAT_NUM_ONE_RPT * FLOAT_NUM_ONE_RPT
        inner_times = row_len // inner_ele
        inner_tail = row_len % inner_ele
        ub_avail = 1
    elif group_num == 0:
        if ub_per_row < max_use:
            ub_avail = max(ub_avail, 1)
        else:
            use_db = False
            ub_avail = 1
    else:
        use_db = False
        ub_avail = max(ub_avail, 1)
    # SetTilingKey
    if group_num > 0:
        key = KEY_MOE_LARGE_SHAPE if inner_times > 0 else KEY_MOE
    elif inner_times > 0:
        key = KEY_LARGE_SHAPE
    elif use_db:
        key = KEY_DB_BF16 if bf16 else KEY_DB_HALF
    else:
        key = KEY_BF16 if bf16 else KEY_HALF
    td = DynamicQuantTilingData(
        coreNum=core, rowLen=row_len, headCoreNum=head, rowPerHeadCore=per_head, rowPerTailCore=per_tail,
        multiRowNumHeadCore=min(COMPARE_INT, ub_avail, per_head), multiRowNumTailCore=min(COMPARE_INT, ub_avail, per_tail),
        innerLoopEle=inner_ele, innerLoopTimes=inner_times, innerLoopTail=inner_tail, groupNum=group_num,
        alignGroupNum=align_group, hasSmooth=int(has_smooth), unused=0, ubSize=ub)
    return result(td, key, core)


def core_rows(td, key, block_idx):
    """(first row, row count, rows per UB pass) of core ``block_idx`` as its kernel computes them."""
    b = block_idx
    if key == KEY_SINGLE_ROW:
        n = td.rowPerTailCore if b >= td.headCoreNum else td.rowPerHeadCore
        return b * td.rowPerHeadCore, n, td.multiRowNumHeadCore
    if key == KEY_MULTI_ROW:
        if b < td.headCoreNum:
            return b * td.rowPerHeadCore, td.rowPerHeadCore, td.multiRowNumHeadCore
        n = td.rowPerHeadCore - 1
        return b * n + td.headCoreNum, n, td.multiRowNumHeadCore
    if b < td.headCoreNum:
        return b * td.rowPerHeadCore, td.rowPerHeadCore, td.multiRowNumHeadCore
    return (td.headCoreNum * td.rowPerHeadCore + (b - td.headCoreNum) * td.rowPerTailCore, td.rowPerTailCore,
            td.multiRowNumTailCore)


def validate(result, rows, row_len, has_smooth):
    """A user or computed tiling must cover every row exactly once and stay in the kernels' bounds -> AclnnError."""
    td, key = result.tiling, result.tiling_key
    problems = []
    if key not in KEYS:
        problems.append(f"tiling key {key} is not one of {KEYS}")
    if td.rowLen != row_len:
        problems.append(f"rowLen {td.rowLen} != the last dim of x {row_len}")
    if td.coreNum < 1 or result.block_dim != td.coreNum:
        problems.append(f"coreNum {td.coreNum} must be >= 1 and equal the block dim {result.block_dim}")
    if bool(td.hasSmooth) != bool(has_smooth):
        problems.append(f"hasSmooth {td.hasSmooth} does not match the call (smooth_scales given: {has_smooth})")
    if key in (KEY_LARGE_SHAPE, KEY_MOE_LARGE_SHAPE):
        if td.innerLoopEle <= 0 or td.innerLoopTimes * td.innerLoopEle + td.innerLoopTail != row_len:
            problems.append("innerLoopEle * innerLoopTimes + innerLoopTail must equal rowLen")
        elif td.innerLoopEle % 2:
            problems.append("innerLoopEle must be even")
    if not problems:
        nxt = 0
        for b in range(td.coreNum):
            start, n, per = core_rows(td, key, b)
            if n > 0 and per < 1:
                problems.append(f"core {b}: rows per UB pass must be >= 1")
                break
            if start != nxt:
                problems.append(f"core {b} starts at row {start}, expected {nxt} (rows must be covered once, in order)")
                break
            nxt = start + n
        if not problems and nxt != rows:
            problems.append(f"the cores cover {nxt} rows of {rows}")
    if problems:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "invalid DynamicQuant tiling: " + "; ".join(problems))
