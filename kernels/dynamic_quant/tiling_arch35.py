"""op_host tiling of DynamicQuantV2 on Ascend 950 (arch35 / regbase), docs/ops/dynamic_quant.md §9.3.

hicann/ops-nn: quant/dynamic_quant/op_host/dynamic_quant_tiling_arch35.cpp (DynamicQuantRegbaseTiling:
RunFusionKernelTiling, CheckAttrs, CalculateCoreNum, CalculateTilingData, CalculateTilingForPertenLargeMulticore),
dynamic_quant_tiling_arch35.h, op_kernel/arch35/dynamic_quant_arch35_tilingdata.h (DynamicQuantTilingDataArch35) and
op_kernel/arch35/dynamic_quant_struct.h (the template ids). On the 950 every aclnnDynamicQuant version runs this
tiling (aclnn_dynamic_quant.cpp: IsRegbase -> l0op::DynamicQuantV2). uint32 arithmetic with truncating division,
as in the C++.

The tiling key is GET_TPL_TILING_KEY(useDb, quantMode, hasSmooth, isSymmetrical); npu-emu's ``tiling_key`` is the
quantMode template id (the kernel the key dispatches to), ``use_db`` is a field of the result's notes only (double
buffering does not change the order of results). Template ids (``TPL_*``):

* pertoken: 0 full load, 1 large shape (a row does not fit UB: chunks of innerLoopEle), 2 / 3 the MoE versions
  (group_index with smooth_scales), 12 large multicore (a long row split over several cores: rows <= cores / 2 and
  the row needs >= 4x the UB);
* pertensor: 4 full load, 5 large shape, 10 / 11 MoE full load / large shape.

* perchannel (x viewed as [batch, M, N], one scale per (batch, column)): 7 full load (blocks of batchBlockSize
  batches x nBlockSize columns, all M rows in UB), 8 recompute (a (batch, column block) per block, M walked twice in
  blocks of mBlockSize), 9 split-m (blocks (batch, column block, row block); column maxima through the workspace with
  SetAtomicMax and SyncAll). ``tiling_perchannel`` (CalculateTilingDataForPerChannel).
"""

from dataclasses import dataclass

from npu_emu.device.tiling_data import TilingData, TilingResult
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.dynamic_quant.tiling import platform

SYS_WORKSPACE_SIZE = 16777216
COMPARE_INT = 255
RESERVED_LENGTH = 1024
MAX_EXPERT_NUM = 1024
FLOAT_NUM_ONE_RPT = 128
SMOOTH_BYTES_SIZE, REQUIRED_BYTES_SIZE, OFFSET_BYTES_SIZE = 2, 7, 4
DB_SMOOTH_BYTES_SIZE, DB_REQUIRED_BYTES_SIZE, DB_OFFSET_BYTES_SIZE = 4, 14, 8
SMOOTH_QUEUE_FACTOR, MAIN_QUEUE_FACTOR = 2, 4
ROW_ALIGN_SIZE = 16
HIFLOAT8_MAX_VALUE = 32768.0
FLT_EPSILON = 1e-6

TPL_COMMON_FULL_LOAD, TPL_COMMON_LARGE_SHAPE, TPL_MOE_FULL_LOAD, TPL_MOE_LARGE_SHAPE = 0, 1, 2, 3
TPL_PER_TENSOR_FULL_LOAD, TPL_PER_TENSOR_LARGE_SHAPE, TPL_EMPTY_TENSOR = 4, 5, 6
TPL_PER_CHANNEL_FULL_LOAD, TPL_PER_CHANNEL_RECOMPUTE, TPL_PER_CHANNEL_SPLIT_M = 7, 8, 9
TPL_MOE_PER_TENSOR_FULL_LOAD, TPL_MOE_PER_TENSOR_LARGE_SHAPE, TPL_PERTEN_LARGE_MULTICORE = 10, 11, 12
TEMPLATES = {0: "common full load", 1: "common large shape", 2: "MoE full load", 3: "MoE large shape",
             4: "pertensor full load", 5: "pertensor large shape", 7: "perchannel full load",
             8: "perchannel recompute", 9: "perchannel split-m", 10: "MoE pertensor full load",
             11: "MoE pertensor large shape", 12: "pertoken large multicore"}
PER_CHANNEL = (7, 8, 9)
PER_TENSOR = (4, 5, 10, 11)
LARGE = (1, 3, 5, 11)            # a row walked in chunks of innerLoopEle
MOE = (2, 3, 10, 11)

Y_KINDS = ("int8", "int4", "hifloat8", "float8_e5m2", "float8_e4m3fn")


@dataclass(frozen=True)
class DynamicQuantTilingDataArch35(TilingData):
    """op_kernel/arch35/dynamic_quant_arch35_tilingdata.h, member for member (the perchannel members stay 0 on the
    emulated templates)."""

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
    sizeH: int
    sizeX: int
    sizeZOut: int
    sizeCopyRow: int
    numCopyRow: int
    numHeadCore: int
    numTailCore: int
    numHeadTimes: int
    numTailTimes: int
    numLastTailRow: int
    alignType: int
    totalBatchLen: int
    mLen: int
    mBlockSize: int
    mTailBlockSize: int
    mBlockNum: int
    nLen: int
    nBlockSize: int
    nTailBlockSize: int
    nBlockNum: int
    nBaseSize: int
    nBaseLoopNum: int
    blockPerHead: int
    blockPerTail: int
    totalBlockNum: int
    batchBlockSize: int
    batchTailBlockSize: int
    batchBlockNum: int
    dstTypeMax: float

    _ctypes = ("uint32",) * 26 + ("int64",) * 17 + ("float",)


_ZERO = {f: 0 for f in ("alignGroupNum", "unused", "ubSize", "sizeH", "sizeX", "sizeZOut", "sizeCopyRow",
                        "numCopyRow", "numHeadCore", "numTailCore", "numHeadTimes", "numTailTimes", "numLastTailRow",
                        "alignType", "totalBatchLen", "mLen", "mBlockSize", "mTailBlockSize", "mBlockNum", "nLen",
                        "nBlockSize", "nTailBlockSize", "nBlockNum", "nBaseSize", "nBaseLoopNum", "blockPerHead",
                        "blockPerTail", "totalBlockNum", "batchBlockSize", "batchTailBlockSize", "batchBlockNum")}


def _tiling_error(message):
    return AclnnError(ACLNN_ERR_INNER_TILING_ERROR, message)


def dst_type_max_value(dst_type_max):
    """CheckAttrs: dst_type_max must lie in [0, 32768] (else a failed tiling); |v| < 1e-6 means 32768. Returns the
    float32 value the tiling stores (the kernels read it for hifloat8 only)."""
    import numpy as np

    v = np.float32(dst_type_max)
    if not (v <= np.float32(HIFLOAT8_MAX_VALUE) and v >= 0):
        raise _tiling_error(f"The value of dst_type_max must be within the range [0, 32768], got {float(v)}")
    if abs(float(v)) < FLT_EPSILON:
        v = np.float32(HIFLOAT8_MAX_VALUE)
    return float(v)


def tiling(rows, row_len, *, has_smooth=False, group_num=0, y_kind="int8", asymmetric=False, quant_mode="pertoken",
           dst_type_max=0.0, soc="ascend950pr", core_num=None, ub_size=None):
    """RunFusionKernelTiling (pertoken / pertensor) for x [rows, row_len] -> TilingResult (tiling_key = template).

    ``group_num``: the length of group_index when smooth_scales is given too (op_host reads it only then)."""
    plat = platform(soc, core_num, ub_size)
    vec = int(plat.GetCoreNumAiv())
    ub = int(plat.GetCoreMemSize("UB"))
    if vec <= 0 or ub <= 0:
        raise _tiling_error(f"vectorCoreNum {vec} and ubSize {ub} must be positive")
    if y_kind not in Y_KINDS:
        raise _tiling_error(f"y dtype {y_kind} is not one of DT_INT8, DT_INT4, DT_FLOAT8_E5M2, DT_FLOAT8_E4M3FN, "
                            f"DT_HIFLOAT8")
    dtm = dst_type_max_value(dst_type_max)
    rows, row_len = int(rows), int(row_len)
    group_num = int(group_num) if has_smooth else 0
    per_tensor = quant_mode == "pertensor"
    notes = tuple(f"{f}: {why}" for f, why in plat.placeholders if f in ("core_num", "ub_size"))
    # CalculateCoreNum
    head = rows % vec
    per_head = (rows + vec - 1) // vec
    per_tail = rows // vec
    core = max(min(vec, rows), 1)
    # CalculateTilingData
    aligned = (row_len + ROW_ALIGN_SIZE - 1) // ROW_ALIGN_SIZE * ROW_ALIGN_SIZE
    max_use = ub - RESERVED_LENGTH
    sm = 1 if has_smooth else 0
    calc = aligned * (sm * SMOOTH_BYTES_SIZE + REQUIRED_BYTES_SIZE + OFFSET_BYTES_SIZE)
    calc_db = aligned * (sm * DB_SMOOTH_BYTES_SIZE + DB_REQUIRED_BYTES_SIZE + DB_OFFSET_BYTES_SIZE)
    inner_ele = inner_times = inner_tail = 0
    if calc > max_use:
        calc_buf = 2 * (sm * SMOOTH_QUEUE_FACTOR + MAIN_QUEUE_FACTOR)
        inner_ele = (max_use - RESERVED_LENGTH) // calc_buf // FLOAT_NUM_ONE_RPT * FLOAT_NUM_ONE_RPT
        if not per_tensor and group_num == 0 and rows <= vec // 2 and calc >= 4 * max_use:
            # CalculateTilingForPertenLargeMulticore
            cpt = max(vec // rows, 2)
            eh = (row_len + cpt - 1) // cpt
            et = row_len // cpt
            if y_kind == "int4":
                et &= ~1
                eh = et if row_len - et * cpt == 0 else et + 2
            head_slices = cpt if eh == et else (row_len - cpt * et) // (eh - et)
            td = DynamicQuantTilingDataArch35(
                coreNum=cpt * rows, rowLen=row_len, headCoreNum=cpt, rowPerHeadCore=eh, rowPerTailCore=et,
                multiRowNumHeadCore=head_slices, multiRowNumTailCore=1, innerLoopEle=inner_ele,
                innerLoopTimes=eh // inner_ele, innerLoopTail=eh % inner_ele, groupNum=group_num, hasSmooth=sm,
                dstTypeMax=dtm, **_ZERO)
            return _result(td, TPL_PERTEN_LARGE_MULTICORE, True, asymmetric, ub, vec, plat, notes)
        use_db = True
        inner_times = row_len // inner_ele
        inner_tail = row_len % inner_ele
        mh, mt = min(COMPARE_INT, 1, per_head), min(COMPARE_INT, 1, per_tail)
        if per_tensor:
            tpl = TPL_MOE_PER_TENSOR_LARGE_SHAPE if group_num > 0 else TPL_PER_TENSOR_LARGE_SHAPE
        else:
            tpl = TPL_MOE_LARGE_SHAPE if group_num > 0 else TPL_COMMON_LARGE_SHAPE
    else:
        use_db = calc_db <= max_use
        avail = max_use // (calc_db if use_db else calc)
        mh, mt = min(avail, COMPARE_INT, per_head), min(avail, COMPARE_INT, per_tail)
        if per_tensor:
            tpl = TPL_MOE_PER_TENSOR_FULL_LOAD if group_num > 0 else TPL_PER_TENSOR_FULL_LOAD
        else:
            tpl = TPL_MOE_FULL_LOAD if group_num > 0 else TPL_COMMON_FULL_LOAD
    td = DynamicQuantTilingDataArch35(
        coreNum=core, rowLen=row_len, headCoreNum=head, rowPerHeadCore=per_head, rowPerTailCore=per_tail,
        multiRowNumHeadCore=mh, multiRowNumTailCore=mt, innerLoopEle=inner_ele, innerLoopTimes=inner_times,
        innerLoopTail=inner_tail, groupNum=group_num, hasSmooth=sm, dstTypeMax=dtm, **_ZERO)
    return _result(td, tpl, use_db, asymmetric, ub, vec, plat, notes)


def _result(td, tpl, use_db, asymmetric, ub, vec, plat, notes):
    # workspace: system + coreNum floats (two arrays, max and min, when asymmetric)
    ws = SYS_WORKSPACE_SIZE + td.coreNum * 4 * (2 if asymmetric else 1)
    notes = notes + (f"template {tpl} ({TEMPLATES[tpl]}), useDb={int(use_db)}",)
    return TilingResult(td, td.coreNum, tpl, ws, ub, vec, plat.name, notes)


def core_span(td, tpl, b):
    """(first row, rows) of core ``b`` on the row-split templates (DynamicQuantBase::InitParams: head cores
    rowPerHeadCore rows, the others rowPerTailCore)."""
    if b < td.headCoreNum:
        return b * td.rowPerHeadCore, td.rowPerHeadCore
    return td.headCoreNum * td.rowPerHeadCore + (b - td.headCoreNum) * td.rowPerTailCore, td.rowPerTailCore


def slice_span(td, b):
    """Template 12: (token, first element, elements) of core ``b``."""
    cpt = td.headCoreNum
    tok, j = b // cpt, b % cpt
    hs = td.multiRowNumHeadCore
    if j < hs:
        return tok, j * td.rowPerHeadCore, td.rowPerHeadCore
    return tok, hs * td.rowPerHeadCore + (j - hs) * td.rowPerTailCore, td.rowPerTailCore


def validate(result, rows, row_len):
    """A user or computed arch35 tiling must cover every row (template 12: every element) once -> AclnnError."""
    from npu_emu.errors import ACLNN_ERR_PARAM_INVALID

    td, tpl = result.tiling, result.tiling_key
    problems = []
    if tpl not in TEMPLATES:
        problems.append(f"template {tpl} is not one of {sorted(TEMPLATES)}")
    if td.rowLen != row_len:
        problems.append(f"rowLen {td.rowLen} != the last dim of x {row_len}")
    if td.coreNum < 1 or result.block_dim != td.coreNum:
        problems.append(f"coreNum {td.coreNum} must be >= 1 and equal the block dim {result.block_dim}")
    if not problems and tpl in LARGE + (12,):
        if td.innerLoopEle <= 0:
            problems.append("innerLoopEle must be > 0")
        elif tpl in LARGE and td.innerLoopTimes * td.innerLoopEle + td.innerLoopTail != row_len:
            problems.append("innerLoopEle * innerLoopTimes + innerLoopTail must equal rowLen")
    if not problems and tpl == TPL_PERTEN_LARGE_MULTICORE:
        if td.headCoreNum < 1 or td.coreNum != td.headCoreNum * rows:
            problems.append("coreNum must be headCoreNum (cores per token) x rows")
        else:
            nxt = 0
            for j in range(td.headCoreNum):
                _, s, n = slice_span(td, j)
                if s != nxt or n < 0:
                    problems.append(f"slice {j} starts at {s}, expected {nxt}")
                    break
                nxt = s + n
            if not problems and nxt != row_len:
                problems.append(f"the slices cover {nxt} elements of {row_len}")
    elif not problems:
        nxt = 0
        for b in range(td.coreNum):
            s, n = core_span(td, tpl, b)
            per = td.multiRowNumHeadCore if b < td.headCoreNum else td.multiRowNumTailCore
            if n > 0 and per < 1 and tpl not in LARGE:
                problems.append(f"core {b}: rows per UB pass must be >= 1")
                break
            if s != nxt:
                problems.append(f"core {b} starts at row {s}, expected {nxt}")
                break
            nxt = s + n
        if not problems and nxt != rows:
            problems.append(f"the cores cover {nxt} rows of {rows}")
    if problems:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "invalid DynamicQuant arch35 tiling: " + "; ".join(problems))


# ---- perchannel (CalculateTilingDataForPerChannel, IsCapableForFullLoad / Recompute / SplitM) ----------------------

PER_CHANNEL_RESERVED_FACTOR = 8
PER_CHANNEL_N_BASE_SIZE = 64
N_MAX_LOOP_NUM = 16
U64 = (1 << 64) - 1


def _u64(v):
    """The C++ expressions mix int64 with size_t (sizeof): unsigned 64-bit wrap-around."""
    return v & U64


def _i64(v):
    v &= U64
    return v - (1 << 64) if v >> 63 else v


def _udiv(a, b):
    return _u64(a) // _u64(b)


def _ceil_div(a, b):
    return (a + b - 1) // b


def tiling_perchannel(batch, m_len, n_len, *, has_smooth=False, y_kind="int8", asymmetric=False, dst_type_max=0.0,
                      soc="ascend950pr", core_num=None, ub_size=None):
    """The perchannel tiling for x viewed as [batch, m_len, n_len] -> TilingResult (tiling_key 7, 8 or 9)."""
    import numpy as np

    plat = platform(soc, core_num, ub_size)
    vec = int(plat.GetCoreNumAiv())
    ub = int(plat.GetCoreMemSize("UB"))
    if vec <= 0 or ub <= 0:
        raise _tiling_error(f"vectorCoreNum {vec} and ubSize {ub} must be positive")
    dtm = dst_type_max_value(dst_type_max)
    if n_len <= 0 or m_len <= 0:
        raise _tiling_error(f"nLen {n_len} and mLen {m_len} must be greater than 0")
    notes = tuple(f"{f}: {why}" for f, why in plat.placeholders if f in ("core_num", "ub_size"))
    total_batch = int(batch)
    max_use = ub - RESERVED_LENGTH * PER_CHANNEL_RESERVED_FACTOR
    tpl = TPL_PER_CHANNEL_SPLIT_M
    batch_block, batch_block_num, batch_tail = total_batch, 1, 1
    n_base_loop = 1
    m_block, m_block_num = 0, 1
    # IsCapableForFullLoad
    capable = False
    for i in range(1, N_MAX_LOOP_NUM + 1):
        tn = i * PER_CHANNEL_N_BASE_SIZE
        tm = _i64(_udiv(_u64(max_use - 2 * 2 * 4 * tn - 2 * 2 * m_len), 2 * 3 * tn))
        if tm < m_len:
            break
        capable = True
        n_base_loop = i
        tb = _i64(_udiv(_u64(max_use - 2 * 2 * m_len), _u64(tn * (m_len * 2 * 3 + 2 * 2 * 4))))
        batch_block = tb if tb > 0 else 1
        batch_block_num = _ceil_div(total_batch, batch_block)
        batch_tail = total_batch - (batch_block_num - 1) * batch_block
        if tn >= n_len:
            break
    if capable:
        tpl = TPL_PER_CHANNEL_FULL_LOAD
    n_block = PER_CHANNEL_N_BASE_SIZE * n_base_loop
    n_block_num = _ceil_div(n_len, n_block)
    total_block = batch_block_num * n_block_num

    def m_block_size(nb):
        return _i64(_udiv(_u64(max_use - 4 * 2 * 4 * nb), _u64(nb * 2 * 3 + 2 * 2)))

    # IsCapableForRecompute
    if tpl != TPL_PER_CHANNEL_FULL_LOAD and n_block_num * total_batch >= vec:
        nbn = _ceil_div(n_len, n_block)
        ratio = np.float32((n_len - (nbn - 1) * n_block) * 1.0 / n_block)
        for i in range(2, N_MAX_LOOP_NUM + 1):
            size = PER_CHANNEL_N_BASE_SIZE * i
            nbn = _ceil_div(n_len, size)
            if nbn * total_batch < vec:
                break
            new_ratio = np.float32((n_len - (nbn - 1) * size) * 1.0 / size)
            if new_ratio >= ratio:
                n_block, n_block_num, n_base_loop, ratio = size, nbn, i, new_ratio
        m_block = m_block_size(n_block)
        if m_block > 0:
            m_block_num = _ceil_div(m_len, m_block)
            total_block = total_batch * n_block_num
            tpl = TPL_PER_CHANNEL_RECOMPUTE
        else:
            raise _tiling_error(f"The value of mBlockSize must be greater than 0, got {m_block}")
    # IsCapableForSplitM
    if tpl == TPL_PER_CHANNEL_SPLIT_M:
        m_block = m_block_size(n_block)
        if m_block <= 0:
            raise _tiling_error(f"The value of mBlockSize must be greater than 0, got {m_block}")
        m_block_num = _ceil_div(m_len, m_block)
        batch_block, batch_block_num, batch_tail = 1, total_batch, 1
        total_block = batch_block_num * m_block_num * n_block_num
    head = total_block % vec
    head = head if head > 0 else vec
    per_head = _ceil_div(total_block, vec)
    z = dict(_ZERO)
    z.update(totalBatchLen=total_batch, mLen=m_len, mBlockSize=m_block, mTailBlockSize=m_len - m_block * (m_block_num - 1),
             mBlockNum=m_block_num, nLen=n_len, nBlockSize=n_block, nTailBlockSize=n_len - n_block * (n_block_num - 1),
             nBlockNum=n_block_num, nBaseSize=PER_CHANNEL_N_BASE_SIZE, nBaseLoopNum=n_base_loop, blockPerHead=per_head,
             blockPerTail=per_head - 1, totalBlockNum=total_block, batchBlockSize=batch_block,
             batchTailBlockSize=batch_tail, batchBlockNum=batch_block_num)
    # rowLen .. innerLoopTail: CalculateCoreNum does not run for perchannel (members left at ResetLargeTilingParams'
    # values); npu-emu stores rowLen = nLen
    td = DynamicQuantTilingDataArch35(
        coreNum=max(vec, 1), rowLen=n_len, headCoreNum=head, rowPerHeadCore=0, rowPerTailCore=0,
        multiRowNumHeadCore=0, multiRowNumTailCore=0, innerLoopEle=0, innerLoopTimes=0, innerLoopTail=0, groupNum=0,
        hasSmooth=1 if has_smooth else 0, dstTypeMax=dtm, **z)
    ws = SYS_WORKSPACE_SIZE + (total_batch * n_len if tpl == TPL_PER_CHANNEL_SPLIT_M else td.coreNum) * 4 * (
        2 if asymmetric else 1)
    notes = notes + (f"template {tpl} ({TEMPLATES[tpl]}), useDb=1",)
    return TilingResult(td, td.coreNum, tpl, ws, ub, vec, plat.name, notes)


def pc_block(td, tpl, i):
    """Perchannel block ``i`` -> (first batch, batches, first row, rows, first column, columns) as the kernels
    index it (full load: n-major over batch blocks; recompute: batch-major; split-m: (batch, n block, m block))."""
    if tpl == TPL_PER_CHANNEL_FULL_LOAD:
        nb = i // td.batchBlockNum
        bb = i - nb * td.batchBlockNum
        nbs = td.nTailBlockSize if nb + 1 == td.nBlockNum else td.nBlockSize
        bbs = td.batchTailBlockSize if bb + 1 == td.batchBlockNum else td.batchBlockSize
        return bb * td.batchBlockSize, bbs, 0, td.mLen, nb * td.nBlockSize, nbs
    if tpl == TPL_PER_CHANNEL_RECOMPUTE:
        b = i // td.nBlockNum
        nb = i % td.nBlockNum
        nbs = td.nTailBlockSize if nb + 1 == td.nBlockNum else td.nBlockSize
        return b, 1, 0, td.mLen, nb * td.nBlockSize, nbs
    b = i // td.nBlockNum // td.mBlockNum
    nb = (i - b * td.nBlockNum * td.mBlockNum) // td.mBlockNum
    mb = i - b * td.nBlockNum * td.mBlockNum - nb * td.mBlockNum
    nbs = td.nTailBlockSize if nb + 1 == td.nBlockNum else td.nBlockSize
    mbs = td.mTailBlockSize if mb + 1 == td.mBlockNum else td.mBlockSize
    return b, 1, mb * td.mBlockSize, mbs, nb * td.nBlockSize, nbs


def validate_perchannel(result, batch, m_len, n_len):
    """Every (batch, row, column) covered once by the blocks of the cores -> AclnnError otherwise."""
    import numpy as np
    from npu_emu.errors import ACLNN_ERR_PARAM_INVALID

    td, tpl = result.tiling, result.tiling_key
    problems = []
    if tpl not in PER_CHANNEL:
        problems.append(f"template {tpl} is not a perchannel template {PER_CHANNEL}")
    elif td.nLen != n_len or td.mLen != m_len or td.totalBatchLen != batch:
        problems.append(f"(totalBatchLen, mLen, nLen) = ({td.totalBatchLen}, {td.mLen}, {td.nLen}) != x's "
                        f"({batch}, {m_len}, {n_len})")
    elif td.coreNum < 1 or result.block_dim != td.coreNum or min(td.nBlockSize, td.nBlockNum) < 1:
        problems.append("coreNum, nBlockSize and nBlockNum must be >= 1 and coreNum the block dim")
    elif tpl != TPL_PER_CHANNEL_FULL_LOAD and min(td.mBlockSize, td.mBlockNum) < 1:
        problems.append("mBlockSize and mBlockNum must be >= 1")
    elif batch * m_len * n_len > (1 << 24):
        pass                       # coverage not re-checked on huge inputs (the computed tilings cover by design)
    else:
        cover = np.zeros((batch, m_len, n_len), np.int32)
        nxt = 0
        for c in range(td.coreNum):
            n = td.blockPerHead if c < td.headCoreNum else td.blockPerTail
            for i in range(nxt, nxt + n):
                b0, bn, m0, mn, n0, nn = pc_block(td, tpl, i)
                if b0 + bn > batch or m0 + mn > m_len or n0 + nn > n_len or min(bn, mn, nn) < 1:
                    problems.append(f"block {i} reaches past x")
                    break
                cover[b0:b0 + bn, m0:m0 + mn, n0:n0 + nn] += 1
            nxt += n
        if not problems and not (cover == 1).all():
            problems.append("the blocks do not cover every element of x exactly once")
    if problems:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "invalid DynamicQuant perchannel tiling: " + "; ".join(problems))
