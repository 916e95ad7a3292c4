"""op_host tiling of DequantSwigluQuant with group_index on the 910B / 910_93 (docs/ops/dequant_swiglu_quant.md §3).

hicann/ops-nn: quant/dequant_swiglu_quant/op_host/dequant_swiglu_quant_tiling.cpp (DequantSwigluQuantDskTiling:
GetShapeAttrsInfoInner, CountMaxDim, DoOpTiling, CountTilingKey) and op_host/dequant_swiglu_quant_tiling.h
(DequantSwigluQuantBaseTilingData). This template is the one chosen whenever group_index is given (IsCapable); calls
without group_index take the SwiGluTilingData kernels of dequant_swiglu_quant_tiling_base.cpp, not emulated.
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
