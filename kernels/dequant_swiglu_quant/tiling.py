"""op_host tiling of DequantSwigluQuant on the 910B / 910_93 (docs/ops/dequant_swiglu_quant.md §3).

hicann/ops-nn: quant/dequant_swiglu_quant/op_host/dequant_swiglu_quant_tiling.cpp (DequantSwigluQuantDskTiling:
GetShapeAttrsInfoInner, CountMaxDim, DoOpTiling, CountTilingKey) and op_host/dequant_swiglu_quant_tiling.h
(DequantSwigluQuantBaseTilingData). This template is the one chosen whenever group_index is given (IsCapable); calls
without group_index take DequantSwigluQuantTiling of dequant_swiglu_quant_tiling_base.cpp (:func:`nogroup_tiling`).
"""

from dataclasses import dataclass

from npu_emu.device import platforms
from npu_emu.device.tiling_data import TilingData, TilingResult
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

BLOCK_SIZE = 32
BLOCK_ELEM = 8
WORKSPACE_SIZE = 32
TILING_KEY_HAS_GROUP = 100000000
TILING_KEY_NO_GROUP = 200000000
TILING_KEY_CUT_GROUP = 10000000
TILING_KEY_QS_DTYPE = 100
TILING_KEY_BIAS_DTYPE = 1000
UB_RESERVE = 1024
SWI_FACTOR = 2
PERFORMANCE_CORE_NUM = 36
PERFORMANCE_UB_FACTOR = 4096 * 4
QS_DTYPE = {None: 0, "float32": 0, "float16": 1, "bfloat16": 2}
BIAS_DTYPE = {None: 0, "bfloat16": 0, "float16": 1, "float32": 2, "int32": 3}


@dataclass(frozen=True)
class DequantSwigluQuantBaseTilingData(TilingData):
    """op_host/dequant_swiglu_quant_tiling.h: 18 int64_t then three float (160 bytes)."""

    inDimx: int
    inDimy: int
    outDimy: int
    UbFactorDimx: int
    UbFactorDimy: int
    usedCoreNum: int
    maxCoreNum: int
    inGroupNum: int
    hasBias: int
    quantMode: int
    actRight: int
    quantScaleDtype: int
    groupIndexDtype: int
    needSmoothScale: int
    biasDtype: int
    speGroupType: int
    activationScaleIsEmpty: int
    quantIsOne: int
    swigluMode: int
    clampLimit: float
    gluAlpha: float
    gluBias: float

    _ctypes = ("int64",) * 19 + ("float",) * 3


def count_max_dim(in_dimx, in_dimy, out_dimy, ub_size, has_bias, swiglu_mode, quant_mode):
    """CountMaxDim -> UbFactorDimx (rows per UB pass); 161002 when a row does not fit the UB."""
    db = 2
    bias_y = 0 if not has_bias else SWI_FACTOR * 4
    bias_x = 0 if not has_bias else out_dimy * SWI_FACTOR * 4
    swi_y = 1 + 4 if swiglu_mode == 1 else 0
    swi_x = out_dimy * 1 + out_dimy * 4 if swiglu_mode == 1 else 0
    qoff = 0 if quant_mode == 1 else 4
    num = ub_size - UB_RESERVE - BLOCK_SIZE - db * BLOCK_SIZE - 4
    den = 5 * 4 + db * SWI_FACTOR * 4 + 1 + bias_y + swi_y + qoff
    max_out = int(num / den) // BLOCK_SIZE * BLOCK_SIZE
    if in_dimy > max_out * SWI_FACTOR:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"DequantSwigluQuant: the last dim of x ({in_dimy}) must be <= "
                                                  f"{max_out * SWI_FACTOR} for this UB ({ub_size} bytes)")
    qoff = 0 if quant_mode == 1 else out_dimy * 4
    num = ub_size - UB_RESERVE - out_dimy * 4 - BLOCK_SIZE - SWI_FACTOR * out_dimy * 4 - bias_x - qoff
    den = db * (out_dimy * SWI_FACTOR + BLOCK_ELEM) * 4 + out_dimy + 4 + out_dimy * SWI_FACTOR * 4 + swi_x
    f = int(num / den)
    f = min(f, in_dimx)
    if (swiglu_mode in (0, 2, 3)) and not has_bias:
        f = PERFORMANCE_UB_FACTOR // in_dimy if in_dimy in (2048, 4096) else f
    return f


def dsq_tiling(in_dimx, in_dimy, *, group_num, spe_group_type, quant_mode, activate_left, has_bias, bias_dtype,
               quant_scale_dtype, quant_is_one, activation_scale_empty, swiglu_mode, clamp_limit, glu_alpha,
               glu_bias, x_is_int32=True, soc="ascend910b2", core_num=None, ub_size=None):
    """DequantSwigluQuantDskTiling::DoOpTiling + CountTilingKey (group_index given)."""
    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    cores = int(plat.GetCoreNumAiv())
    ub = int(plat.GetCoreMemSize("UB"))
    out_dimy = in_dimy // 2
    f = count_max_dim(in_dimx, in_dimy, out_dimy, ub, has_bias, swiglu_mode, quant_mode)
    if f < 1:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"DequantSwigluQuant: not one row of {in_dimy} fits the UB "
                                                  f"({ub} bytes)")
    max_pre = (in_dimx + f - 1) // f if in_dimx > 0 else 0
    max_pre = min(max_pre, PERFORMANCE_CORE_NUM, cores)
    qs = QS_DTYPE[quant_scale_dtype]
    bd = BIAS_DTYPE[bias_dtype] if has_bias else 0
    key = TILING_KEY_HAS_GROUP + TILING_KEY_QS_DTYPE * qs + TILING_KEY_BIAS_DTYPE * bd
    notes = []
    cond1 = spe_group_type and group_num >= 64 and in_dimx // group_num <= 16
    cond2 = (not spe_group_type and group_num >= 32 and in_dimx // group_num <= 16 and not bd and not qs
             and x_is_int32)
    if cond1 or cond2:
        key += TILING_KEY_CUT_GROUP
        max_pre = min(cores, in_dimx)
        notes.append("cut-group key (groups dealt round-robin to cores on the device); the emulator walks the "
                     "groups as the base kernel does: the per-row arithmetic is the same")
    td = DequantSwigluQuantBaseTilingData(
        inDimx=in_dimx, inDimy=in_dimy, outDimy=out_dimy, UbFactorDimx=f, UbFactorDimy=out_dimy,
        usedCoreNum=max_pre, maxCoreNum=max_pre, inGroupNum=group_num, hasBias=int(bool(has_bias)),
        quantMode=quant_mode, actRight=0 if activate_left else 1, quantScaleDtype=qs, groupIndexDtype=1,
        needSmoothScale=0 if quant_scale_dtype is None else 1, biasDtype=bd, speGroupType=int(bool(spe_group_type)),
        activationScaleIsEmpty=int(bool(activation_scale_empty)), quantIsOne=int(bool(quant_is_one)),
        swigluMode=swiglu_mode, clampLimit=float(clamp_limit), gluAlpha=float(glu_alpha), gluBias=float(glu_bias))
    return TilingResult(td, max(max_pre, 1), key, WORKSPACE_SIZE + plat.GetLibApiWorkSpaceSize(), ub, cores,
                        plat.name, tuple(notes))


# ------------------------------------------------------------------------------------------------------------------
# without group_index: DequantSwigluQuantTiling of op_host/dequant_swiglu_quant_tiling_base.cpp (registered with
# priority 1: the Dsk template above is not capable when group_index is absent) filling SwiGluTilingData
# (op_host/swi_glu_tiling.h, the struct SwiGlu uses). int32 x (dequant) and float16 / bfloat16 x (no dequant), static
# (keys 100xx) and dynamic (keys 300xx) quantisation.
# ------------------------------------------------------------------------------------------------------------------

NG_PACK_512B = 512
NG_ALIGN_32B = 32
NG_DISCONTINE_COPY_MAX_BLOCKLEN = 65535
NG_DYNAMIC_BF16_TBUF_NUM_HALF = 11
NG_DYNAMIC_BF16_INT16_TBUF_NUM_HALF = 6
NG_STATIC_BF16_TBUF_NUM_HALF = 12
NG_STATIC_BF16_INT16_TBUF_NUM_HALF = 7
NG_DYNAMIC_INT16_TBUF_NUM_HALF = 2
NG_USER_WORKSPACE = 16 * 1024 * 1024
NG_PERFORMANCE_COL_LEN = 1536
NG_PERFORMANCE_ROW_LEN = 128
NG_MIN_CORE = 12
NG_SIZEOF_GE_DATATYPE = 4        # DISCONTINE_COPY_MAX_BLOCKLEN / sizeof(xInputDataType): sizeof the enum
NG_X_BYTES = {"int32": 4, "float16": 2, "bfloat16": 2}
#: getTilingKeyDynamic / getTilingKeyStatic for int32 x: bias dtype (no bias = DT_FLOAT, the member's initial value)
#: -> (quant_scale of 1 element: the _ONE key, otherwise: the _D key)
NG_DYNAMIC_KEYS = {"int32": (30001, 30005), "float32": (30002, 30006), "float16": (30003, 30007),
                   "bfloat16": (30004, 30008)}
NG_STATIC_KEYS = {"int32": (10004, 10005), "float32": (10008, 10009), "float16": (10006, 10007),
                  "bfloat16": (10010, 10011)}
#: float16 / bfloat16 x: x dtype -> (_ONE, _D), dynamic and static
NG_DYNAMIC_X16_KEYS = {"float16": (30009, 30010), "bfloat16": (30011, 30012)}
NG_STATIC_X16_KEYS = {"float16": (10000, 10002), "bfloat16": (10001, 10003)}
NG_DYNAMIC_PERFORMANCE_KEY = 30013


def _ng_single_data_size(quant_mode, x_dtype, bias_dtype):
    """GetBufferNumAndDataLenPerUB: UB bytes per column element."""
    wide_bias = bias_dtype in ("int32", "float32")
    if x_dtype != "int32":
        tbufs = NG_DYNAMIC_BF16_INT16_TBUF_NUM_HALF if quant_mode == 1 else NG_STATIC_BF16_INT16_TBUF_NUM_HALF
        return tbufs * 4 + 1
    tbufs = NG_DYNAMIC_BF16_TBUF_NUM_HALF if quant_mode == 1 else NG_STATIC_BF16_TBUF_NUM_HALF
    return tbufs * 4 + (0 if wide_bias else NG_DYNAMIC_INT16_TBUF_NUM_HALF * 2) + 1


def nogroup_tiling(row_len, col_len, *, bias_dtype, quant_scale_size, activation_scale_empty, activate_left,
                   quant_mode=1, x_dtype="int32", soc="ascend910b2", core_num=None, ub_size=None):
    """DequantSwigluQuantTiling::DoOpTiling + GetTilingKey + GetWorkspaceSize.

    ``bias_dtype``: None (no bias) or the bias dtype name; ``quant_scale_size``: 0 (none), 1 or colLen;
    ``quant_mode``: 1 dynamic, 0 static; ``x_dtype``: int32, float16 or bfloat16 (the 16-bit x kernels read neither
    bias nor scales: checkWeightBiasActivate is skipped, biasIsEmpty / activateScaleIsEmpty keep their 0)."""
    from npu_emu.kernels.swiglu.tiling import SwiGluTilingData

    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    total_core = int(plat.GetCoreNumAiv())
    ub = int(plat.GetCoreMemSize("UB"))
    x16 = x_dtype != "int32"
    dlen = NG_X_BYTES[x_dtype]                            # GetLengthByType
    ub_min_block = NG_ALIGN_32B // dlen
    cache_line = NG_PACK_512B // dlen
    is32b = 1 if col_len % ub_min_block == 0 else 0
    bdt = "float32" if bias_dtype is None or x16 else bias_dtype
    single = _ng_single_data_size(quant_mode, x_dtype, bdt)
    max_tile = (ub // single) // NG_ALIGN_32B * NG_ALIGN_32B
    # getBaseColLenUpBound
    up = min(col_len, max_tile)
    up = min(up, NG_DISCONTINE_COPY_MAX_BLOCKLEN if is32b else NG_DISCONTINE_COPY_MAX_BLOCKLEN // NG_SIZEOF_GE_DATATYPE)
    base_col = up // cache_line * cache_line if (up < col_len and up > cache_line) else up
    if base_col == 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"DequantSwigluQuant: no column tile fits the UB ({ub} bytes)")
    # CalcOptBaseShape: several rows per pass only for dynamic quant of 16-bit x
    base_row = 1
    if quant_mode == 1 and x16:
        base_row = min(max_tile // ((base_col + 31) // 32 * 32), row_len)
        base_row = min((row_len + total_core - 1) // total_core, base_row)
    # SaveOptBaseShape
    used = min(row_len, total_core)
    if col_len < NG_PERFORMANCE_COL_LEN and row_len < NG_PERFORMANCE_ROW_LEN:
        used = min(used, NG_MIN_CORE)
    bias_empty = 0 if x16 else int(bias_dtype is None)
    as_empty = 0 if x16 else int(bool(activation_scale_empty))
    td = SwiGluTilingData(is32BAligned=is32b, isDoubleBuffer=0, rowLen=row_len, colLen=col_len, baseRowLen=base_row,
                          baseColLen=base_col, activateLeft=int(bool(activate_left)), biasIsEmpty=bias_empty,
                          quantScaleIsEmpty=int(quant_scale_size == 0), activateScaleIsEmpty=as_empty,
                          usedCoreNum=used)
    if x16:
        one, d = (NG_DYNAMIC_X16_KEYS if quant_mode == 1 else NG_STATIC_X16_KEYS)[x_dtype]
    else:
        one, d = (NG_DYNAMIC_KEYS if quant_mode == 1 else NG_STATIC_KEYS)[bdt]
    key = one if quant_scale_size == 1 else d
    notes = []
    perf = (is32b == 1 and col_len <= NG_PERFORMANCE_COL_LEN and base_row == 1 and base_col == col_len
            and bias_empty and not as_empty)
    if quant_mode == 1 and key == 30006 and perf:
        key = NG_DYNAMIC_PERFORMANCE_KEY
        notes.append("performance key 30013 (DequantSwigluQuantDynamicPerformance): the same per-row instructions "
                     "as the base kernel, which the emulator walks")
    if base_row > 1:
        notes.append(f"{base_row} rows per UB pass (one ReduceMax per row): the emulator runs the rows one by one, "
                     f"the same instructions per row")
    ws = NG_USER_WORKSPACE
    if col_len > base_col:
        cols = (col_len + base_col - 1) // base_col
        if quant_mode == 1:
            ws += used * col_len * 4
            notes.append(f"row wider than the UB: {cols} column tiles per row, the SwiGLU result staged in the "
                         f"workspace between the max and the quantisation passes")
        else:
            notes.append(f"row wider than the UB: {cols} column tiles per row (static: element-wise, no staging)")
    return TilingResult(td, max(used, 1), key, ws + plat.GetLibApiWorkSpaceSize(), ub, total_core, plat.name,
                        tuple(notes))
