"""Host tiling of GroupedMatmul (docs/ops/grouped_matmul.md §5): ``GMMTilingData`` = ``GMMBaseParams`` + the per-group
m/k/n lists (``GMMArray``) + ``TCubeTiling``, and the pieces of it that decide the per-core walk.

Sources (read, transcribed in our own words): ``hicann/ops-transformer: gmm/grouped_matmul/op_host/op_tiling/
grouped_matmul_tiling.cpp`` (``CalMMTiling``, ``FullLoadK``, ``DivideUbAndSetWorkspace``,
``SetWorkspscesPerTokenQuant``, ``FindBestSingleNPertoken``, ``FindBestUsedCoreNumOneGroup``, ``GMMCalUbSize``,
``GMMSetUbDivideBlkQuant``, ``SplitMSingleXSingleWeightSingleY``), the struct in ``grouped_matmul_tiling.h`` and the
constants of ``op_host/grouped_matmul_host_util.h``.

Not reproduced (said in the trace notes; none changes a value, only which core computes which block):
``DynamicTilingSingleN`` / ``TryFullLoadA`` (NZ weights with ``tuning_config``), the matmul API's L1 step /
depth search (``CalcStepKaKb``, ``mm.GetTiling``), the A8W4 / A4W4 / A16W8-MSD tilings, the static-tiling key.
"""

from dataclasses import dataclass, field

from npu_emu.device import platforms
from npu_emu.device.tiling_data import TilingData, TilingResult
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.quant_matmul.tiling import TCubeTiling

MAX_TENSOR_CONT = 128
BEST_BASEN = 256
BEST_BASEN_QUANT_ONE_GROUP = 128
BEST_BASEM_QUANT_ONE_GROUP = 256
BEST_BASEK_QUANT_ONE_GROUP = 128
MAX_BASEM = 256
DOUBLE_BUFFER_L0A_L0B = 2
FP32_DATATYPE_SIZE = 4
QUEUE_DOUBLE_BUFFER = 2
UB_BLOCK_UNIT_SIZE = 32
UB_DYNAMIC_QUANT_BLOCK_NUM = 28
UB_DYNAMIC_QUANT_IO_USED_BLOCK = 12
UB_STATIC_QUANT_BLOCK_NUM_BF16 = 20
UB_STATIC_QUANT_BLOCK_NUM_FP16 = 24
UB_STATIC_QUANT_IO_USED_BLOCK = 12
UB_QUANT_BLOCK_ALIGN = 2 * 1024
FULL_K_SINGLE_N = 1280
FULL_K_N_THRESHOLD = 2560
FULL_K_M_THRESHOLD = 2048
FULL_K_M_E_THRESHOLD = 256
FULL_K_MAX_K_THRESHOLD = 384
FULL_K_MIN_K_THRESHOLD = 320
SYS_WORKSPACE_SIZE = 16 * 1024 * 1024
THRESHOLD_BLOCK_NUM = 8       # grouped_matmul.h thresholdBlockNum: the diagonal walk's tile of blocks
THRESHOLD_DIM_M = 5           # grouped_matmul.h thresholdDimM on dav-c220 (1 on dav-m200: no diagonal walk)

_SIZE = {"int8": 1, "int4": 0.5, "bfloat16": 2, "float16": 2, "float32": 4, "int32": 4, "int64": 8,
         "uint64": 8, "float8_e4m3fn": 1, "float8_e5m2": 1, "float4_e2m1": 0.5}


@dataclass(frozen=True)
class GMMBaseParams(TilingData):
    groupNum: int = field(default=0, metadata={"ctype": "uint32"})
    coreNum: int = field(default=0, metadata={"ctype": "uint32"})
    activeType: int = field(default=0, metadata={"ctype": "uint32"})
    ubBaseK: int = field(default=0, metadata={"ctype": "uint32"})
    ubBaseN: int = field(default=0, metadata={"ctype": "uint32"})
    ubCalSize: int = field(default=0, metadata={"ctype": "uint32"})
    ubRestBytes: int = field(default=0, metadata={"ctype": "uint32"})
    singleWeight: int = field(default=0, metadata={"ctype": "uint32"})
    singleX: int = field(default=0, metadata={"ctype": "uint32"})
    singleY: int = field(default=0, metadata={"ctype": "uint32"})
    groupType: int = field(default=0, metadata={"ctype": "int32"})
    singleN: int = field(default=0, metadata={"ctype": "uint32"})
    quantParam: int = field(default=0, metadata={"ctype": "uint32"})
    groupListType: int = field(default=0, metadata={"ctype": "uint32"})
    m: int = field(default=0, metadata={"ctype": "uint32"})
    hasBias: int = field(default=0, metadata={"ctype": "uint32"})
    workspaceSize: int = field(default=0, metadata={"ctype": "uint64"})
    totalInGroup: int = field(default=0, metadata={"ctype": "uint64"})
    k: int = field(default=0, metadata={"ctype": "uint64"})
    n: int = field(default=0, metadata={"ctype": "uint64"})
    vBaseM: int = field(default=0, metadata={"ctype": "uint64"})
    parallNum: int = field(default=0, metadata={"ctype": "uint64"})
    quantGroupNum: int = field(default=0, metadata={"ctype": "uint64"})
    isPreTiling: int = field(default=0, metadata={"ctype": "uint64"})
    withOffset: int = field(default=0, metadata={"ctype": "uint32"})


_ZEROS = (0,) * MAX_TENSOR_CONT


@dataclass(frozen=True)
class GMMArray(TilingData):
    mList: tuple = field(default=_ZEROS, metadata={"ctype": f"int32[{MAX_TENSOR_CONT}]"})
    kList: tuple = field(default=_ZEROS, metadata={"ctype": f"int32[{MAX_TENSOR_CONT}]"})
    nList: tuple = field(default=_ZEROS, metadata={"ctype": f"int32[{MAX_TENSOR_CONT}]"})


@dataclass(frozen=True)
class GMMTilingData(TilingData):
    """GMMTilingData without the A8W4 autotiling tail (``hpTilingData``: A8W4 only, not reproduced)."""
    gmmBaseParams: GMMBaseParams = field(default_factory=GMMBaseParams, metadata={"ctype": GMMBaseParams})
    gmmArray: GMMArray = field(default_factory=GMMArray, metadata={"ctype": GMMArray})
    mmTilingData: TCubeTiling = field(default_factory=TCubeTiling, metadata={"ctype": TCubeTiling})


@dataclass(frozen=True)
class GmmShape:
    """What the tiling reads from the inputs (the s-s-s split-M case, ``SplitMSingleXSingleWeightSingleY``)."""
    group_num: int
    m: int                         # x rows (maxM_ = totalM_)
    k: int
    n: int
    x_dtype: str
    w_dtype: str
    y_dtype: str
    scale_dtype: str = None
    per_token: bool = False
    has_bias: bool = False
    weight_nz: bool = False
    transpose_w: bool = False
    group_type: int = 0
    group_list_type: int = 0
    act_type: int = 0
    tuning_config: int = 0


def sixteen_align(a, up=False):
    return ((a + 15) if up else a) & ~15


def _cdiv(a, b):
    return -(-a // b)


def find_best_single_n_pertoken(max_n, base_n, group_num, aic):
    """FindBestSingleNPertoken: the singleN that leaves the last round of blocks fullest."""
    if _cdiv(max_n, base_n) * group_num <= aic:
        return base_n
    if max_n >= 2048:
        return 1024
    best = base_n
    best_last = (group_num * _cdiv(max_n, best)) % aic
    for single_n in range(1024 // base_n * base_n, base_n, -base_n):
        last = (group_num * _cdiv(max_n, single_n)) % aic
        if last == 0:
            return single_n
        if last > best_last or (last == best_last and max_n % single_n == 0):
            best, best_last = single_n, last
    return best


def grouped_matmul_tiling(s, *, soc="ascend910b2", core_num=None):
    """GMMTiling::RunFusionKernelTiling for ``s`` (a :class:`GmmShape`) -> TilingResult (block_dim = coreNum)."""
    plat = platforms.get(soc)
    notes = []
    aic = int(core_num) if core_num is not None else plat.GetCoreNumAic()
    if core_num is not None:
        notes.append(f"core_num={aic} cube cores (override)")
    if aic < 1:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"core_num={aic}: need at least one cube core")
    l0a, l0b, l0c, ub, l1 = buffer_sizes(plat)
    msize = _SIZE[s.x_dtype]
    is_a8w8 = s.x_dtype == "int8" and s.w_dtype == "int8"
    max_m, max_k, max_n = s.m, s.k, s.n
    used = aic
    # ---- CalMMTiling ------------------------------------------------------------------------------------------
    tuning_flag = (128 < s.tuning_config <= 256) or (
        s.y_dtype == "int32" and 0 < s.tuning_config <= 128 and max_k in (7168, 7680) and max_n == 2048)
    if is_a8w8 and tuning_flag:
        base_n, base_m, base_k = BEST_BASEN_QUANT_ONE_GROUP, BEST_BASEM_QUANT_ONE_GROUP, BEST_BASEK_QUANT_ONE_GROUP
        base_m = sixteen_align(max_m, True) if base_m > max_m else base_m
    else:
        base_n = BEST_BASEN
        base_k = sixteen_align(int((l0b // DOUBLE_BUFFER_L0A_L0B) // (base_n * msize)))
        if base_k == 0:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "baseK_ cannot be 0.")
        max_base_m = l0c // (base_n * FP32_DATATYPE_SIZE)
        base_m = min(int((l0a // DOUBLE_BUFFER_L0A_L0B) // (base_k * msize)), max_base_m)
        base_m = sixteen_align(max_m, True) if base_m > max_m else sixteen_align(base_m)
        base_m = min(base_m, MAX_BASEM)
    if base_m == 0:
        # an empty x (m = 0) gives baseM 0 on the device too: GMMSetMMTiling fails the tiling
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "baseM_ cannot be 0.")
    single_n = 0
    # ---- FullLoadK (float ND weights, one narrow shape family) ----------------------------------------------
    if (not s.weight_nz and not s.transpose_w and s.x_dtype == s.w_dtype and s.w_dtype in ("float16", "bfloat16")
            and max_m >= FULL_K_M_E_THRESHOLD * s.group_num and max_n == FULL_K_N_THRESHOLD
            and FULL_K_MIN_K_THRESHOLD <= max_k <= FULL_K_MAX_K_THRESHOLD and max_m > FULL_K_M_THRESHOLD
            and s.group_type == 0):
        step_ka = _cdiv(max_k, base_k)
        step_kb = step_ka // QUEUE_DOUBLE_BUFFER
        if base_m * base_k * msize * step_ka * 2 + base_n * base_k * msize * step_kb * 2 <= l1:
            single_n = FULL_K_SINGLE_N
    # ---- DivideUbAndSetWorkspace ----------------------------------------------------------------------------
    workspace = SYS_WORKSPACE_SIZE
    ub_cal = ub_rest = ub_base_n = ub_base_k = v_base_m = 0
    if s.x_dtype == "int8" and s.w_dtype == "int8":
        if 1 <= s.tuning_config <= 256 and s.group_num == 1:      # FindBestUsedCoreNumOneGroup
            total = _cdiv(max_n, base_n)
            if (aic * 3 > total and total % aic <= aic // 2) or total < aic:
                used = _cdiv(total, _cdiv(total, aic))
        if s.y_dtype != "int32":
            ssize = _SIZE[s.scale_dtype or "float32"]
            ub_q = ub - ((base_n * ssize + base_m * 4) * QUEUE_DOUBLE_BUFFER if s.per_token
                         else base_n * ssize * QUEUE_DOUBLE_BUFFER)
            opt = (max_m <= 32 * s.group_num and s.weight_nz) and (not s.transpose_w or max_n >= 2048)
            if opt:
                single_n = find_best_single_n_pertoken(max_n, base_n, s.group_num, used)
            workspace += 4 * base_m * base_n * used * 4
            if s.per_token or s.act_type != 0:
                div, io = UB_DYNAMIC_QUANT_BLOCK_NUM, UB_DYNAMIC_QUANT_IO_USED_BLOCK
            else:
                div = UB_STATIC_QUANT_BLOCK_NUM_FP16 if s.y_dtype == "float16" else UB_STATIC_QUANT_BLOCK_NUM_BF16
                io = UB_STATIC_QUANT_IO_USED_BLOCK
            ub_cal = ub_q // div // UB_QUANT_BLOCK_ALIGN * UB_QUANT_BLOCK_ALIGN
            ub_rest = (ub_q - ub_cal * io) // UB_BLOCK_UNIT_SIZE * UB_BLOCK_UNIT_SIZE
            if ub_cal == 0 or ub_rest == 0:
                raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "ubCalSize and ubRestBytes cannot be 0")
            if s.transpose_w:
                ub_base_k = 256
                ub_base_n = ub_cal // ub_base_k // UB_BLOCK_UNIT_SIZE * UB_BLOCK_UNIT_SIZE
            else:
                ub_base_n = base_n
                ub_base_k = v_base_m = ub_cal // ub_base_n
    if s.tuning_config > 0 and s.weight_nz and is_a8w8:
        notes.append("DynamicTilingSingleN (NZ weight with tuning_config) not reproduced: singleN as without it")
    notes.append("matmul API L1 steps/depths (CalcStepKaKb) not reproduced (no effect on values)")
    base = GMMBaseParams(groupNum=s.group_num, coreNum=used, activeType=s.act_type, ubBaseK=ub_base_k,
                         ubBaseN=ub_base_n, ubCalSize=ub_cal, ubRestBytes=ub_rest, singleWeight=1, singleX=1,
                         singleY=1, groupType=s.group_type, singleN=single_n, quantParam=int(s.per_token),
                         groupListType=s.group_list_type, m=max_m, hasBias=int(s.has_bias),
                         workspaceSize=0, vBaseM=v_base_m)
    arr = GMMArray(mList=(-1,) + _ZEROS[1:], kList=(max_k,) + _ZEROS[1:], nList=(max_n,) + _ZEROS[1:])
    cube = TCubeTiling(usedCoreNum=used, M=max_m, N=base_n, Ka=max_k, Kb=max_k, singleCoreM=base_m,
                       singleCoreN=base_n, singleCoreK=max_k, baseM=base_m, baseN=base_n, baseK=base_k, depthA1=2,
                       depthB1=2, stepM=1, stepN=1, isBias=int(s.has_bias), stepKa=1, stepKb=1, dbL0A=2, dbL0B=2,
                       dbL0C=1)
    td = GMMTilingData(gmmBaseParams=base, gmmArray=arr, mmTilingData=cube)
    return TilingResult(td, used, 0, workspace, ub, aic, plat.name, tuple(notes))


def buffer_sizes(plat):
    """(L0A, L0B, L0C, UB, L1) bytes of a platform, the 910B2's where the platform table does not know them."""
    known = lambda name, default: getattr(plat, name) if plat.is_known(name) else default
    return (known("l0a_bytes", 64 * 1024), known("l0b_bytes", 64 * 1024), known("l0c_bytes", 128 * 1024),
            known("ub_size", 196352), known("l1_bytes", 512 * 1024))


def walk_params(tr):
    """(singleM, singleN, baseN, coreNum, diagonal) as the kernel reads them from the tiling data."""
    td = tr.tiling
    base_m, base_n = td.mmTilingData.baseM, td.mmTilingData.baseN
    single_n = td.gmmBaseParams.singleN if td.gmmBaseParams.singleN > 0 else base_n
    return base_m, single_n, base_n, td.gmmBaseParams.coreNum
