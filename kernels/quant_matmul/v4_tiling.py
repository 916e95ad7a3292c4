"""QuantBatchMatmulV4 host tiling: the V4 TilingData structs and the templates that fill them
(docs/ops/quant_matmul.md §10).

Which struct a V4 kernel reads (``GET_TILING_DATA_WITH_STRUCT`` / ``REGISTER_TILING_DEFAULT`` in
``hicann/ops-nn: matmul/quant_batch_matmul_v4/op_kernel/quant_batch_matmul_v4.cpp`` and ``.../arch35/
quant_batch_matmul_v4.cpp``):

* A8W4-int (A2/A3): :class:`QuantBatchMatmulV4MsdTilingData`, ``op_host/op_tiling/quant_batch_matmul_v4_msd_tiling``;
* A8W8-perblock (A2/A3): :class:`QuantBatchMatmulV4PerblockTilingData`, ``quant_batch_matmul_v4_perblock_tiling``;
* A4W4 asym (A2/A3 and 950): ``QuantBatchMatmulV3TilingData`` (tiling.py), ``quant_batch_matmul_v4_pergroup_tiling``
  and ``arch35/quant_batch_matmul_v4_pergroup_arch35_tiling``;
* A8W8-perblock (950): :class:`QuantBatchMatmulV3BasicAPITilingData`, ``arch35/adaptive_sliding_window_basic_api_v4_
  tiling``;
* T-CG (950): :class:`QuantBatchMatmulV4TilingDataParams`, ``arch35/quant_batch_matmul_v4_reg_base_tiling``;
* MxA8W4 (950): :class:`QuantBatchMatmulV4WeightQuantMxSwatTilingData`, ``arch35/quant_batch_matmul_v4_weight_quant_
  mx_swat_tiling``.

Structs: ``op_kernel/quant_batch_matmul_v4_tiling_data.h`` (A2/A3), ``op_kernel/arch35/
quant_batch_matmul_v4_tiling_data_apt.h`` (950) and, for the 950 per-tile struct, ``matmul/quant_batch_matmul_v3/
op_kernel/arch35/quant_batch_matmul_v3_tiling_data.h`` - the layout the op_host writes (the apt.h copy of
``BasicAPICubeTiling`` orders its members differently; see :class:`BasicAPICubeTiling`). TCubeTiling,
L2cacheTileParam, SlidingWindowParam and the V3 struct are tiling.py's classes (the same C structs).

What is not reproduced (each TilingResult says so in its notes): the V3 basic-tiling cost search that the A2
MSD-per-channel and per-block templates start from, the L2 split search (CalcTile) for operands above the L2
threshold, the matmul_tiling library's own fields (MultiCoreMatmulTiling::GetTiling), the 950 solvers (RegBase
basic-block solver, SWAT solver, the ASW sliding-window tails) and the template tiling keys
(GET_TPL_TILING_KEY). Those fields get the struct's default or the value stated in the notes; none changes a
result, because blocks own disjoint output tiles and every value is computed in the same order whatever the split.
"""

from dataclasses import dataclass, field

from npu_emu.device import platforms

from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.quant_matmul import tiling as tiling_mod
from npu_emu.kernels.quant_matmul.tiling import (L2cacheTileParam, MatmulShape, QuantBatchMatmulV3Params,
                                                 QuantBatchMatmulV3TilingData, SlidingWindowParam, TCubeTiling,
                                                 _calign, _cdiv, _platform)
from npu_emu.device.tiling_data import TilingData, TilingResult

PER_BLOCK = 128
A4W4_GROUP = 256
MSD_GROUP = 256
MB = 1024 * 1024

# quant_batch_matmul_v4_msd_tiling.cpp
MSD_BASEN = (64, 128, 256, 512)
MSD_BASE_M = 16                   # rows of the 2m-row hi/lo int4 matrix
MSD_UB_CALSIZE = 32 * 256         # elements of one UB buffer
MSD_UB_BUFFERS = 4
MSD_CV_PARALL = 4                 # workspace slots per core
MSD_STEP_K = 2                    # L0A/L0B ping-pong: baseK = 256 / 2
MSD_PERGROUP_VBASE_M = 32

# quant_batch_matmul_v4_perblock_tiling.h / _pergroup_tiling.cpp
A2_BASE_M, A2_BASE_N = 128, 256
A2_DEPTH, A2_STEP_K = 8, 4
PERBLOCK_CV_PARALL = 2
NUM_DB = 2

# quant_batch_matmul_v3_basic_tiling.cpp (DoL2CacheTiling)
L2_LIMIT_MB = 128
L2_SPLIT_RATIO = 100.0 / 192
L2_SPLIT_RATIO_FOR_MIX = 110.0 / 192
L2_FAKE_MB, L2_REAL_MB = 96, 168   # the per-group templates correct the 96 MB the runtime reports for 910B4

# 950
V4_WORKSPACE_SIZE = 16 * MB        # arch35/quant_batch_matmul_v4_tiling.h WORKSPACE_SIZE
DB_BUFFER = 2
L1_TWO_BUFFER, L1_FOUR_BUFFER = 2, 4
ORDER_N = 1
PERBLOCK_MODE, PERGROUP_MODE = 1 << 4, 1 << 5      # optiling::BasicQuantMode
GE_DTYPE = {"float16": 1, "bfloat16": 27}          # ge::DataType of y
# the 950 L1 size is not published (docs/device/platforms.md §3.2): the A2 value is assumed
L1_PLACEHOLDER = 512 * 1024

_BITS = {"int4": 4, "float4_e2m1": 4, "int8": 8, "float8_e4m3fn": 8, "float16": 16, "bfloat16": 16}


def _nbytes(count, dtype):
    return count * _BITS[dtype] // 8


# ----------------------------------------------------------------------------------------------------------------
# structs
# ----------------------------------------------------------------------------------------------------------------

class _AlignAs8:
    """``struct alignas(8)``: sizeof rounds up to 8 even when every member is 4-byte aligned (npu_emu.device.tiling_data
    lays a struct out with its members' alignment only)."""

    @classmethod
    def nbytes(cls):
        return -(-super().nbytes() // 8) * 8


@dataclass(frozen=True)
class QuantBatchMatmulV4MsdTilingData(_AlignAs8, TilingData):
    """hicann/ops-nn: matmul/quant_batch_matmul_v4/op_kernel/quant_batch_matmul_v4_tiling_data.h
    ``struct alignas(8) QuantBatchMatmulV4MsdTilingData``: uint8 coreNum at 0, eight uint32 from 4, TCubeTiling at
    36 (4-byte aligned), 236 bytes of members padded to 240 by alignas(8)."""

    coreNum: int = 0
    vBaseM: int = 0
    ubRestBytes: int = 0
    parallNum: int = 0
    ubCalSize: int = 0
    mSize: int = 0
    kSize: int = 0
    nSize: int = 0
    groupSize: int = 0
    matmulTiling: TCubeTiling = field(default_factory=TCubeTiling)

    _ctypes = ("uint8",) + ("uint32",) * 8 + (TCubeTiling,)


@dataclass(frozen=True)
class QuantBatchMatmulV4PerblockTilingData(_AlignAs8, TilingData):
    """hicann/ops-nn: matmul/quant_batch_matmul_v4/op_kernel/quant_batch_matmul_v4_tiling_data.h
    ``struct alignas(8) QuantBatchMatmulV4PerblockTilingData``: 200 + 24 + 5·4 + 2 bools = 246 bytes, padded to 248.
    ``bool`` members are declared uint8 (C++ bool is one byte holding 0 or 1)."""

    matmulTiling: TCubeTiling = field(default_factory=TCubeTiling)
    tileL2cacheTiling: L2cacheTileParam = field(default_factory=L2cacheTileParam)
    groupSizeM: int = 0
    groupSizeN: int = 0
    groupSizeK: int = 0
    ubCalcM: int = 0
    ubCalcN: int = 0
    transA: int = 0
    transB: int = 0

    _ctypes = (TCubeTiling, L2cacheTileParam) + ("uint32",) * 5 + ("uint8", "uint8")


@dataclass(frozen=True)
class QuantBatchMatmulV3BasicAPIDataParams(TilingData):
    """``QuantBatchMatmulV3BasicAPIDataParams`` (arch35 quant_batch_matmul_v3_tiling_data.h and apt.h agree)."""

    batchA: int = 0
    batchB: int = 0
    batchC: int = 0
    batchA1: int = 0
    batchA2: int = 0
    batchA3: int = 0
    batchA4: int = 0
    batchB1: int = 0
    batchB2: int = 0
    batchB3: int = 0
    batchB4: int = 0
    batchC1: int = 0
    batchC2: int = 0
    batchC3: int = 0
    batchC4: int = 0
    x1QuantMode: int = 0
    x2QuantMode: int = 0
    biasThreeDim: int = 0
    biasDtype: int = 0
    groupSizeM: int = 0
    groupSizeN: int = 0
    groupSizeK: int = 0

    _ctypes = ("uint32",) * 22


@dataclass(frozen=True)
class BasicAPICubeTiling(TilingData):
    """``BasicAPICubeTiling`` as the 950 op_host writes it (hicann/ops-nn: matmul/quant_batch_matmul_v3/op_kernel/
    arch35/quant_batch_matmul_v3_tiling_data.h; filled by ``adaptive_sliding_window_perblock_basic_api_tiling.cpp``,
    which the V4 per-tile template inherits). The V4 kernel header ``arch35/quant_batch_matmul_v4_tiling_data_apt.h``
    declares a same-size (40-byte) struct with another member order (``scaleKL1, kL1, uint16 usedCoreNum,
    scaleFactorA/B, isBias, nBufferNum, dbL0C, reserved``); npu-emu follows the bytes the host produces."""

    m: int = 0
    n: int = 0
    k: int = 0
    baseM: int = 0
    baseN: int = 0
    baseK: int = 0
    kAL1: int = 0
    kBL1: int = 0
    scaleKL1: int = 0
    nBufferNum: int = 0
    isBias: int = 0
    dbL0C: int = 0
    weightMustHitL2: int = 1

    _ctypes = ("uint32",) * 9 + ("uint8",) * 4


@dataclass(frozen=True)
class QuantBatchMatmulV3BasicAPITilingData(TilingData):
    """``QuantBatchMatmulV3BasicAPITilingData``: 88 + 40 + 24 = 152 bytes (the 950 V4 per-tile int8 G-B kernel)."""

    params: QuantBatchMatmulV3BasicAPIDataParams = field(default_factory=QuantBatchMatmulV3BasicAPIDataParams)
    matmulTiling: BasicAPICubeTiling = field(default_factory=BasicAPICubeTiling)
    adaptiveSlidingWin: SlidingWindowParam = field(default_factory=SlidingWindowParam)

    _ctypes = (QuantBatchMatmulV3BasicAPIDataParams, BasicAPICubeTiling, SlidingWindowParam)


@dataclass(frozen=True)
class QuantBatchMatmulV4TilingDataParams(TilingData):
    """hicann/ops-nn: matmul/quant_batch_matmul_v4/op_kernel/arch35/quant_batch_matmul_v4_tiling_data_apt.h
    ``qbmmv4_tiling::QuantBatchMatmulV4TilingDataParams`` (the RegBase T-CG kernel): four uint8 and two uint16 in
    the first 8 bytes, fourteen uint64 from 8, TCubeTiling at 120; 320 bytes."""

    cubeNumBlocksN: int = 0
    cubeNumBlocksM: int = 0
    vecCoreParallel: int = 0
    reserve1: int = 0
    AL1Pingpong: int = 0
    BL1Pingpong: int = 0
    kAlign: int = 0
    nAlign: int = 0
    kSize: int = 0
    nSize: int = 0
    groupSize: int = 0
    mSize: int = 0
    nBubSize: int = 0
    kBubSize: int = 0
    mAL1Size: int = 0
    kAL1Size: int = 0
    nBL1Size: int = 0
    kBL1Size: int = 0
    hasX1Scale: int = 0
    hasX2Scale: int = 0
    matmulTiling: TCubeTiling = field(default_factory=TCubeTiling)

    _ctypes = ("uint8",) * 4 + ("uint16",) * 2 + ("uint64",) * 14 + (TCubeTiling,)


_SWAT_FIELDS = (
    "m n k baseM baseN baseK tileShapeKL1 tileShapeScaleKL1 usedCoreNum cubeNumBlocksM cubeNumBlocksN iterateOrder "
    "mTailTile nTailTile mBaseTailSplitCnt nBaseTailSplitCnt mTailMain nTailMain nBubSize kBubSize groupSize hasBias "
    "hasX1Scale hasX2Scale weightNz yDtype l1BufferNum reserved").split()
_SWAT_DEFAULTS = {"usedCoreNum": 1, "cubeNumBlocksM": 1, "cubeNumBlocksN": 1, "iterateOrder": 1, "mTailTile": 1,
                  "nTailTile": 1, "mBaseTailSplitCnt": 1, "nBaseTailSplitCnt": 1}


def _swat_cls():
    # 28 uint32 members with the header's default initialisers; built like tiling.TCubeTiling
    ns = {"__annotations__": {f: int for f in _SWAT_FIELDS}, "_ctypes": ("uint32",) * len(_SWAT_FIELDS),
          "__doc__": "hicann/ops-nn: matmul/quant_batch_matmul_v4/op_kernel/arch35/quant_batch_matmul_v4_tiling_"
                     "data_apt.h ``struct alignas(8) QuantBatchMatmulV4WeightQuantMxSwatTilingData``: 28 uint32_t "
                     "members, 112 bytes (the MxA8W4 SWAT kernel).",
          "__module__": __name__, "__qualname__": "QuantBatchMatmulV4WeightQuantMxSwatTilingData"}
    for f in _SWAT_FIELDS:
        ns[f] = _SWAT_DEFAULTS.get(f, 0)
    return dataclass(frozen=True)(type("QuantBatchMatmulV4WeightQuantMxSwatTilingData", (_AlignAs8, TilingData), ns))


QuantBatchMatmulV4WeightQuantMxSwatTilingData = _swat_cls()


# ----------------------------------------------------------------------------------------------------------------
# shared op_host pieces
# ----------------------------------------------------------------------------------------------------------------

def _l2_tiles(plat, m, n, k, base_m, base_n, a_dtype, b_dtype, c_dtype, mix, l2_fix, notes):
    """QuantBatchMatmulV3BasicTiling::DoL2CacheTiling -> (mTileCntL2, nTileCntL2, mTileBlock, nTileBlock,
    calOrder). Operands that fit the L2 threshold are not split (one tile of all blocks)."""
    one = (1, 1, _cdiv(m, base_m), _cdiv(n, base_n), 0)
    if not plat.is_known("l2_bytes"):
        notes.append(f"L2 size of {plat.name} is not published: the L2 split is not evaluated (one L2 tile)")
        return one
    l2 = plat.l2_bytes
    if l2_fix and l2 == L2_FAKE_MB * MB:
        l2 = L2_REAL_MB * MB
    size_a, size_b, size_c = _nbytes(m * k, a_dtype), _nbytes(k * n, b_dtype), _nbytes(m * n, c_dtype)
    thre = l2 * (L2_SPLIT_RATIO_FOR_MIX if mix else L2_SPLIT_RATIO)
    if size_a + size_b + size_c < thre and max(size_a, size_b, size_c) < L2_LIMIT_MB * MB:
        return one
    notes.append("operands exceed the L2 threshold: the L2 split search (CalcTile) is not reproduced, one L2 tile "
                 "is used (no effect on values)")
    return one


def _result(td, block_dim, workspace, ub, aic, plat, notes):
    notes.append("tiling key not reproduced (GET_TPL_TILING_KEY): 0")
    return TilingResult(td, int(block_dim), 0, int(workspace), ub, aic, plat.name, tuple(notes))


def _setup(soc, core_num):
    plat, aic, l0a, ub, sys_ws, notes = _platform(soc, core_num)
    if aic < 1:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"core_num={aic}: need at least one cube core")
    return plat, aic, l0a, ub, sys_ws, notes


# ----------------------------------------------------------------------------------------------------------------
# A2/A3 templates
# ----------------------------------------------------------------------------------------------------------------

def msd_base_n(m, n, aic):
    """SetMatmulTilingPerGroup: the smallest of {64, 128, 256, 512} strictly above ceil(n / aicNumN), else 512,
    with aicNumN = ceil(aicNum / ceil(2m / 16)) (the cores left per row of 16-row blocks)."""
    per_core = _cdiv(n, _cdiv(aic, _cdiv(2 * m, MSD_BASE_M)))
    return next((c for c in MSD_BASEN if per_core < c), MSD_BASEN[-1])


def msd_tiling(m, n, k, *, per_group, soc="ascend910b2", core_num=None):
    """QuantBatchMatmulV4MsdTiling (A8W4-int on A2/A3): ``mSize`` is the token count, the cube runs the 2m-row
    hi/lo matrix in 16-row blocks."""
    plat, aic, _, ub, sys_ws, notes = _setup(soc, core_num)
    base_n = msd_base_n(m, n, aic)
    blocks = _cdiv(2 * m, MSD_BASE_M) * _cdiv(n, base_n)
    # SetFixSplit(16, baseN, 256) on the library tiling, then the template's own overrides
    cube = dict(N=n, Ka=k, Kb=k, singleCoreM=MSD_BASE_M, singleCoreN=base_n, singleCoreK=k, baseM=MSD_BASE_M,
                baseN=base_n, baseK=MSD_GROUP // MSD_STEP_K, depthA1=1, depthB1=1, stepM=1, stepN=1,
                stepKa=MSD_STEP_K, stepKb=MSD_STEP_K, dbL0A=2, dbL0B=2, dbL0C=1)
    if per_group:
        core_cnt = aic
        cube.update(M=MSD_BASE_M, usedCoreNum=1)          # SetOrgShape(baseM, n, k); the library's core count
        v_base_m = MSD_PERGROUP_VBASE_M
        notes.append("MSD per-group: matmulTiling from MultiCoreMatmulTiling::GetTiling with SetFixSplit(16, baseN, "
                     "256); the library's own members (usedCoreNum 1, dbL0A/dbL0B 2, share*/transLength 0) are "
                     "assumed")
    else:
        core_cnt = min(aic, blocks)
        cube.update(M=2 * m, usedCoreNum=core_cnt)
        v_base_m = min(MSD_UB_CALSIZE // base_n, MSD_BASE_M // 2)
        notes.append("MSD per-channel: the V3 basic-tiling search (DoBasicTiling) is not reproduced: the per-group "
                     "blocks (16 x baseN, baseK 128 x stepK 2) are used (no effect on values)")
    td = QuantBatchMatmulV4MsdTilingData(
        coreNum=core_cnt, vBaseM=v_base_m, ubRestBytes=MSD_UB_CALSIZE * 4 * MSD_UB_BUFFERS, parallNum=MSD_CV_PARALL,
        ubCalSize=MSD_UB_CALSIZE, mSize=m, kSize=k, nSize=n, groupSize=MSD_GROUP if per_group else 0,
        matmulTiling=TCubeTiling(**cube))
    workspace = sys_ws + MSD_CV_PARALL * core_cnt * MSD_BASE_M * base_n * 2
    notes.append(f"MSD baseM 16 (hi/lo rows), baseN {base_n} from quant_batch_matmul_v4_msd_tiling.cpp")
    return _result(td, core_cnt, workspace, ub, aic, plat, notes)


def perblock_a2_tiling(m, n, k, *, gs_m, gs_n, gs_k, has_bias, soc="ascend910b2", core_num=None):
    """QuantBatchMatmulV4PerblockTiling (int8 G-B on A2/A3): fixed 128 x 256 x 128 blocks, blockDim = aicNum."""
    plat, aic, _, ub, sys_ws, notes = _setup(soc, core_num)
    m_tiles, n_tiles, m_tb, n_tb, order = _l2_tiles(plat, m, n, k, A2_BASE_M, A2_BASE_N, "int8", "int8", "bfloat16",
                                                    False, False, notes)
    used = min(aic, _cdiv(m, A2_BASE_M) * _cdiv(n, A2_BASE_N), m_tb * n_tb)
    cube = TCubeTiling(usedCoreNum=used, M=m, N=n, Ka=k, Kb=k, singleCoreM=A2_BASE_M, singleCoreN=A2_BASE_N,
                       singleCoreK=k, baseM=A2_BASE_M, baseN=A2_BASE_N, baseK=PER_BLOCK, depthA1=A2_DEPTH,
                       depthB1=A2_DEPTH, stepM=1, stepN=1, stepKa=A2_STEP_K, stepKb=A2_STEP_K, iterateOrder=0,
                       dbL0A=2, dbL0B=2, dbL0C=1)
    l2 = L2cacheTileParam(mTileCntL2=m_tiles, nTileCntL2=n_tiles, mTileBlock=m_tb, nTileBlock=n_tb, calOrder=order,
                          isBasicTiling=1)
    td = QuantBatchMatmulV4PerblockTilingData(matmulTiling=cube, tileL2cacheTiling=l2, groupSizeM=gs_m,
                                              groupSizeN=gs_n, groupSizeK=gs_k, ubCalcM=A2_BASE_M // PERBLOCK_CV_PARALL,
                                              ubCalcN=A2_BASE_N, transA=0, transB=1)
    notes.append("A2 per-block 128 x 256 x 128 (quant_batch_matmul_v4_perblock_tiling.cpp); the DoBasicTiling "
                 "search it starts from is not reproduced: usedCoreNum = min(aicNum, blocks), singleCoreK = K, "
                 "stepM = stepN = 1, iterateOrder 0")
    workspace = sys_ws + aic * A2_BASE_N * A2_BASE_M * 4 * PERBLOCK_CV_PARALL
    return _result(td, aic, workspace, ub, aic, plat, notes)


def _pergroup_ub_calc_m(ub, base_m, base_n, gs_k):
    """CalcDequantTiling: the UB rows of one vector pass after the resident buffers (both archs)."""
    ele = ub // 4
    aiv_m = _cdiv(base_m, 2)
    ele -= aiv_m * base_n
    ele -= _calign(aiv_m, 8)
    ele -= _calign(aiv_m, 8) * 8
    ele -= int(3.5 * base_n)
    ele -= _calign(aiv_m, 8)
    return int(ele // (4 * base_n + int(1.5 * gs_k)))


def pergroup_tiling(m, n, k, *, gs_k=A4W4_GROUP, soc="ascend910b2", core_num=None):
    """A4W4 asymmetric K-G: QuantBatchMatmulV4PergroupTiling (A2/A3) or ...PergroupArch35Tiling (950), both filling
    the QuantBatchMatmulV3TilingData the per-group kernels read; 128 x 256 x gsK blocks."""
    plat, aic, _, ub, sys_ws, notes = _setup(soc, core_num)
    arch35 = plat.npu_arch == 3510
    # arch35 widens int4 to int8 before the cube and tiles the int8 operands
    dt = "int8" if arch35 else "int4"
    m_tiles, n_tiles, m_tb, n_tb, order = _l2_tiles(plat, m, n, k, A2_BASE_M, A2_BASE_N, dt, dt, "bfloat16", True,
                                                    not arch35, notes)
    if arch35:
        l1 = plat.l1_bytes if plat.is_known("l1_bytes") else L1_PLACEHOLDER
        if not plat.is_known("l1_bytes"):
            notes.append(f"L1 size of {plat.name} is not published; {L1_PLACEHOLDER} is assumed for stepK")
        step_k = max(1, l1 // (2 * (A2_BASE_M + A2_BASE_N) * gs_k))
        used = min(aic, m_tb * n_tb)
        db_l0b, single_k, depth = 1, k, A2_DEPTH
        notes.append("950 per-group (quant_batch_matmul_v4_pergroup_arch35_tiling.cpp); its DoBasicTiling search is "
                     "not reproduced: usedCoreNum = min(aicNum, blocks), singleCoreK = K, stepM = stepN = 1")
    else:
        # DoOpTiling never runs the basic search, so usedCoreNum keeps BasicTiling's initial 1 (and singleCoreK 1)
        step_k, used, db_l0b, single_k, depth = A2_STEP_K, min(1, m_tb * n_tb), 2, 1, A2_DEPTH
        notes.append("A2 per-group (quant_batch_matmul_v4_pergroup_tiling.cpp): usedCoreNum and singleCoreK keep "
                     "BasicTiling's initial value 1 (DoOpTiling does not run the basic search), so blockDim is 1")
    params = QuantBatchMatmulV3Params(batchA=1, batchB=1, batchC=1, ubCalcM=_pergroup_ub_calc_m(ub, A2_BASE_M,
                                                                                                 A2_BASE_N, gs_k),
                                      ubCalcN=A2_BASE_N, groupSizeK=gs_k)
    cube = TCubeTiling(usedCoreNum=used, M=m, N=n, Ka=k, Kb=k, singleCoreM=A2_BASE_M, singleCoreN=A2_BASE_N,
                       singleCoreK=single_k, baseM=A2_BASE_M, baseN=A2_BASE_N, baseK=gs_k, depthA1=depth,
                       depthB1=depth, stepM=1, stepN=1, stepKa=step_k, stepKb=step_k, iterateOrder=0, dbL0A=2,
                       dbL0B=db_l0b, dbL0C=1)
    l2 = L2cacheTileParam(mTileCntL2=m_tiles, nTileCntL2=n_tiles, mTileBlock=m_tb, nTileBlock=n_tb, calOrder=order,
                          isBasicTiling=1)
    td = QuantBatchMatmulV3TilingData(params=params, matmulTiling=cube, tileL2cacheTiling=l2)
    workspace = sys_ws + 4 * A2_BASE_M * A2_BASE_N * used * NUM_DB
    if arch35:
        workspace += _calign(m * k, 128) + _calign(k * n, 128)         # the int4 -> int8 copies of x1 and x2
    notes.append(f"per-group {A2_BASE_M} x {A2_BASE_N} x {gs_k}; the params members these templates do not set keep "
                 f"tiling.QuantBatchMatmulV3Params' defaults")
    return _result(td, used, workspace, ub, aic, plat, notes)


# ----------------------------------------------------------------------------------------------------------------
# 950 templates
# ----------------------------------------------------------------------------------------------------------------

def pertile_950_tiling(m, n, k, *, gs_m, gs_n, gs_k, has_bias, trans_a=False, trans_b=True, soc="ascend950pr",
                       core_num=None):
    """AdaptiveSlidingWindowBasicTilingV4 (int8 G-B on 950): the arch35 per-block calculator's blocks
    (tiling.py) in QuantBatchMatmulV3BasicAPITilingData."""
    plat, aic, _, ub, sys_ws, notes = _setup(soc, core_num)
    shape = MatmulShape(m, n, k, trans_a=trans_a, trans_b=trans_b, perblock=True, gs_m=max(gs_m, 1))
    bm, bn, bk = tiling_mod._Calc(shape, aic, plat.l0a_bytes if plat.is_known("l0a_bytes")
                                  else tiling_mod.L0A_PLACEHOLDER).compute()
    l1 = plat.l1_bytes if plat.is_known("l1_bytes") else L1_PLACEHOLDER
    k_l1 = bk                                           # stepKa = stepKb = 1 (the ASW L1 split is not reproduced)
    four = (bm + bn) * k_l1 * L1_FOUR_BUFFER <= l1
    params = QuantBatchMatmulV3BasicAPIDataParams(
        batchA=1, batchB=1, batchC=1, x1QuantMode=PERGROUP_MODE if gs_m == 1 else PERBLOCK_MODE,
        x2QuantMode=PERBLOCK_MODE, biasThreeDim=0, biasDtype=0 if has_bias else 3, groupSizeM=gs_m, groupSizeN=gs_n,
        groupSizeK=gs_k)
    cube = BasicAPICubeTiling(m=m, n=n, k=k, baseM=bm, baseN=bn, baseK=bk, kAL1=k_l1, kBL1=k_l1, scaleKL1=0,
                              nBufferNum=L1_FOUR_BUFFER if four else L1_TWO_BUFFER, isBias=int(has_bias), dbL0C=1,
                              weightMustHitL2=1)
    td = QuantBatchMatmulV3BasicAPITilingData(params=params, matmulTiling=cube)
    used = min(aic, _cdiv(m, bm) * _cdiv(n, bn))
    notes.append("950 per-tile base block from the arch35 calculator (tiling.py); not reproduced: the sliding-window "
                 "tails (adaptiveSlidingWin keeps the header defaults), stepK (1: kAL1 = kBL1 = baseK), scaleKL1 (0) "
                 "and IsWeightMustHitL2 (the header default 1); blocks are walked row-major (no effect on values)")
    return _result(td, used, sys_ws, ub, aic, plat, notes)


def tcg_tiling(m, n, k, *, trans_b, weight_nz, group_size=32, a_dtype="float8_e4m3fn", soc="ascend950pr",
               core_num=None):
    """QuantBatchMatmulV4RegBase (T-CG: fp8-e4m3 x fp4, 950) in QuantBatchMatmulV4TilingDataParams."""
    plat, aic, _, ub, _, notes = _setup(soc, core_num)
    shape = MatmulShape(m, n, k, trans_b=trans_b, a_dtype=a_dtype, b_dtype="float4_e2m1")
    bm, bn, bk = tiling_mod._Calc(shape, aic, plat.l0a_bytes if plat.is_known("l0a_bytes")
                                  else tiling_mod.L0A_PLACEHOLDER).compute()
    m_dim = min(_cdiv(m, bm), aic)
    n_dim = max(1, min(_cdiv(n, bn), aic // m_dim))
    k_l1 = min(bk, k)
    cube = TCubeTiling(M=m, N=n, Ka=k, Kb=k, singleCoreM=bm, singleCoreN=bn, singleCoreK=bk, baseM=bm, baseN=bn,
                       baseK=bk, dbL0A=DB_BUFFER, dbL0B=DB_BUFFER, dbL0C=1, stepM=1, stepN=1, stepKa=1, stepKb=1,
                       depthA1=L1_TWO_BUFFER, depthB1=L1_TWO_BUFFER, iterateOrder=0, isBias=0, shareL1Size=0,
                       shareL0CSize=0, mxTypePara=0)
    td = QuantBatchMatmulV4TilingDataParams(
        cubeNumBlocksN=n_dim, cubeNumBlocksM=m_dim, AL1Pingpong=L1_TWO_BUFFER, BL1Pingpong=L1_TWO_BUFFER,
        kAlign=_calign(k, 64), nAlign=n, kSize=k, nSize=n, groupSize=group_size, mSize=m, nBubSize=bn,
        kBubSize=k_l1, mAL1Size=bm, kAL1Size=k_l1, nBL1Size=bn, kBL1Size=k_l1, hasX1Scale=0, hasX2Scale=1,
        matmulTiling=cube)
    notes.append("base blocks from the arch35 calculator: the RegBase basic-block solver is not reproduced (step 1, "
                 "two L1 buffers, mDim x nDim = the block grid capped at aicNum, UB weight tile = the L1 tile, "
                 "scaleFactor 0); TCubeTiling.usedCoreNum is not set by the template (0)")
    if weight_nz:
        notes.append("FRACTAL_NZ weight: the NZ UB weight-tile split is not reproduced")
    workspace = V4_WORKSPACE_SIZE + n_dim * m_dim * 8
    return _result(td, m_dim * n_dim, workspace, ub, aic, plat, notes)


def mx_a8w4_tiling(m, n, k, *, trans_b, weight_nz, has_bias, out_dtype, a_dtype="float8_e4m3fn", soc="ascend950pr",
                   core_num=None):
    """QuantBatchMatmulV4WeightQuantMxSwatTiling (MxA8W4, 950) in QuantBatchMatmulV4WeightQuantMxSwatTilingData."""
    plat, aic, _, ub, sys_ws, notes = _setup(soc, core_num)
    shape = MatmulShape(m, n, k, trans_b=trans_b, a_dtype=a_dtype, b_dtype="float4_e2m1", is_mx=True)
    bm, bn, bk = tiling_mod._Calc(shape, aic, plat.l0a_bytes if plat.is_known("l0a_bytes")
                                  else tiling_mod.L0A_PLACEHOLDER).compute()
    m_cnt, n_cnt = _cdiv(m, bm), _cdiv(n, bn)
    td = QuantBatchMatmulV4WeightQuantMxSwatTilingData(
        m=m, n=n, k=k, baseM=bm, baseN=bn, baseK=bk, tileShapeKL1=bk, tileShapeScaleKL1=bk,
        usedCoreNum=min(aic, m_cnt * n_cnt), cubeNumBlocksM=m_cnt, cubeNumBlocksN=n_cnt, iterateOrder=ORDER_N,
        nBubSize=bn, kBubSize=bk, groupSize=32, hasBias=int(has_bias), hasX1Scale=1, hasX2Scale=1,
        weightNz=int(weight_nz), yDtype=GE_DTYPE[out_dtype], l1BufferNum=L1_TWO_BUFFER)
    notes.append("base blocks from the arch35 calculator: the SWAT solver is not reproduced (tileShapeKL1 = "
                 "tileShapeScaleKL1 = baseK, UB weight tile = the base block, tails at the header defaults, the "
                 "2-buffer solution); the template's user workspace is 0")
    notes.append("MX load-balance base-block search (OptimizeBaseBlockForLoadBalance) not reproduced")
    return _result(td, td.usedCoreNum, sys_ws, ub, aic, plat, notes)


# ----------------------------------------------------------------------------------------------------------------
# the front door and the adapters the shared V3 kernels need
# ----------------------------------------------------------------------------------------------------------------

def v4_tiling(mode, m, n, k, soc, core_num=None, *, per_group=True, gs=(1, 128, 128), has_bias=False,
              trans_a=False, trans_b=True, weight_nz=False, mx=False, out_dtype="bfloat16", a_dtype="float8_e4m3fn"):
    """The V4 template the registry picks for ``mode`` on ``soc`` -> TilingResult carrying its real V4 struct."""
    arch = platforms.get(soc).npu_arch
    if mode == "A8W4-int":
        return msd_tiling(m, n, k, per_group=per_group, soc=soc, core_num=core_num)
    if mode == "A8W8-perblock":
        gs_m, gs_n, gs_k = gs
        if arch == 3510:
            return pertile_950_tiling(m, n, k, gs_m=gs_m, gs_n=gs_n, gs_k=gs_k, has_bias=has_bias, trans_a=trans_a,
                                      trans_b=trans_b, soc=soc, core_num=core_num)
        return perblock_a2_tiling(m, n, k, gs_m=gs_m, gs_n=gs_n, gs_k=gs_k, has_bias=has_bias, soc=soc,
                                  core_num=core_num)
    if mode == "A4W4-pergroup-asym":
        return pergroup_tiling(m, n, k, gs_k=gs[2] or A4W4_GROUP, soc=soc, core_num=core_num)
    if mode == "A8W4-float":
        if mx:
            return mx_a8w4_tiling(m, n, k, trans_b=trans_b, weight_nz=weight_nz, has_bias=has_bias,
                                  out_dtype=out_dtype, a_dtype=a_dtype, soc=soc, core_num=core_num)
        return tcg_tiling(m, n, k, trans_b=trans_b, weight_nz=weight_nz, a_dtype=a_dtype, soc=soc, core_num=core_num)
    raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"no QuantBatchMatmulV4 tiling template for mode {mode!r}")


def blocks(td):
    """(rows, n, k, baseM, baseN, baseK) of the output blocks a V4 struct describes (for the MSD struct the rows of
    the 2m-row hi/lo matrix and the group's k: baseK x stepKa)."""
    if isinstance(td, QuantBatchMatmulV4MsdTilingData):
        c = td.matmulTiling
        return 2 * td.mSize, td.nSize, td.kSize, c.baseM, c.baseN, c.baseK * c.stepKa
    if isinstance(td, QuantBatchMatmulV3BasicAPITilingData):
        c = td.matmulTiling
        return c.m, c.n, c.k, c.baseM, c.baseN, c.baseK
    if isinstance(td, QuantBatchMatmulV4WeightQuantMxSwatTilingData):
        return td.m, td.n, td.k, td.baseM, td.baseN, td.baseK
    c = td.matmulTiling
    return c.M, c.N, c.Ka, c.baseM, c.baseN, c.baseK


def epilogue_tiling(tr, soc, core_num=None, block_dim=None):
    """The QuantBatchMatmulV3TilingData view of a V4 tiling that the shared V3 epilogue kernel and cube helpers read
    (kernel.qbmm_epilogue_kernel walks ``matmulTiling`` / ``tileL2cacheTiling`` and the UB tile of ``params``).

    The device runs these steps inside the V4 kernel on the V4 struct; npu-emu reuses the V3 vector epilogue, so it
    hands it the V4 blocks in V3 form: the same N / baseN / baseK, and for MSD the token rows (baseM / 2 per block,
    the rows a block's AIV combine writes)."""
    td = tr.tiling
    rows, n, k, bm, bn, bk = blocks(td)
    if isinstance(td, QuantBatchMatmulV4MsdTilingData):
        rows, bm = td.mSize, max(1, bm // 2)
    view = tiling_mod.quant_matmul_tiling(MatmulShape(rows, n, k), soc=soc, core_num=core_num, base_m=min(bm, rows),
                                          base_n=min(bn, n), base_k=bk)
    return with_block_dim(view, block_dim)


def with_block_dim(tr, block_dim):
    """The ``block_dim=`` override (an npu-emu switch) applied to a V4 TilingResult."""
    return tr if block_dim is None else tiling_mod.with_overrides(tr, block_dim=int(block_dim))
