"""The aclnn two-phase API: ``aclnnXxxGetWorkspaceSize(..., out) -> (status, workspace_size, executor)`` then
``aclnnXxx(workspace, workspace_size, executor, stream=None) -> status``. Statuses are CANN's (spec README §6);
``aclGetRecentErrMsg()`` returns the message of the last failure.
"""

from npu_emu.frontend import recent_error as aclGetRecentErrMsg
from npu_emu.kernels.gather_dequant_int8.api import (
    aclnnGatherDequantInt8,
    aclnnGatherDequantInt8GetWorkspaceSize,
)
from npu_emu.kernels.mx_quant.api import (
    aclnnDynamicMxQuant,
    aclnnDynamicMxQuantGetWorkspaceSize,
    aclnnDynamicMxQuantV2,
    aclnnDynamicMxQuantV2GetWorkspaceSize,
    aclnnDynamicMxQuantV3,
    aclnnDynamicMxQuantV3GetWorkspaceSize,
    aclnnGroupedDynamicMxQuant,
    aclnnGroupedDynamicMxQuantGetWorkspaceSize,
    aclnnGroupedDynamicMxQuantV2,
    aclnnGroupedDynamicMxQuantV2GetWorkspaceSize,
)
from npu_emu.kernels.quant_matmul.api import (
    aclnnQuantMatmulV3,
    aclnnQuantMatmulV3GetWorkspaceSize,
    aclnnQuantMatmulV4,
    aclnnQuantMatmulV4GetWorkspaceSize,
    aclnnQuantMatmulV5,
    aclnnQuantMatmulV5GetWorkspaceSize,
    aclnnQuantMatmulWeightNz,
    aclnnQuantMatmulWeightNzGetWorkspaceSize,
    aclnnTransQuantParamV2,
    aclnnTransQuantParamV2GetWorkspaceSize,
    aclnnTransQuantParamV3,
    aclnnTransQuantParamV3GetWorkspaceSize,
)
from npu_emu.kernels.quant_matmul.sparse4to2 import (
    aclnnSparse4to2QuantMatmulWeightNz,
    aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize,
    aclnnTransSparse4to2Para,
)
from npu_emu.kernels.sign_bits.api import (
    aclnnSignBitsPack,
    aclnnSignBitsPackGetWorkspaceSize,
    aclnnSignBitsUnpack,
    aclnnSignBitsUnpackGetWorkspaceSize,
)

__all__ = [
    "aclGetRecentErrMsg",
    "aclnnGatherDequantInt8",
    "aclnnGatherDequantInt8GetWorkspaceSize",
    "aclnnDynamicMxQuant",
    "aclnnDynamicMxQuantGetWorkspaceSize",
    "aclnnDynamicMxQuantV2",
    "aclnnDynamicMxQuantV2GetWorkspaceSize",
    "aclnnDynamicMxQuantV3",
    "aclnnDynamicMxQuantV3GetWorkspaceSize",
    "aclnnGroupedDynamicMxQuant",
    "aclnnGroupedDynamicMxQuantGetWorkspaceSize",
    "aclnnGroupedDynamicMxQuantV2",
    "aclnnGroupedDynamicMxQuantV2GetWorkspaceSize",
    "aclnnQuantMatmulV3",
    "aclnnQuantMatmulV3GetWorkspaceSize",
    "aclnnQuantMatmulV4",
    "aclnnQuantMatmulV4GetWorkspaceSize",
    "aclnnQuantMatmulV5",
    "aclnnQuantMatmulV5GetWorkspaceSize",
    "aclnnQuantMatmulWeightNz",
    "aclnnQuantMatmulWeightNzGetWorkspaceSize",
    "aclnnTransQuantParamV2",
    "aclnnTransQuantParamV2GetWorkspaceSize",
    "aclnnTransQuantParamV3",
    "aclnnTransQuantParamV3GetWorkspaceSize",
    "aclnnSparse4to2QuantMatmulWeightNz",
    "aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize",
    "aclnnTransSparse4to2Para",
    "aclnnSignBitsPack",
    "aclnnSignBitsPackGetWorkspaceSize",
    "aclnnSignBitsUnpack",
    "aclnnSignBitsUnpackGetWorkspaceSize",
]
