"""The aclnn two-phase API: ``aclnnXxxGetWorkspaceSize(..., out) -> (status, workspace_size, executor)`` then
``aclnnXxx(workspace, workspace_size, executor, stream=None) -> status``. Statuses are CANN's (docs/conventions.md §6);
``aclGetRecentErrMsg()`` returns the message of the last failure.

As in npu_emu.ops, an op family is imported on first use of one of its names, so ``import npu_emu.aclnn`` loads no
kernel module.
"""

import importlib


def _family(module, *names):
    return {name: (module, name) for name in names}


# name -> (module that defines it, its name there).
_FAMILIES = {
    "aclGetRecentErrMsg": ("npu_emu.frontend.core", "recent_error"),
    **_family(
        "npu_emu.kernels.gather_dequant_int8.api",
        "aclnnGatherDequantInt8",
        "aclnnGatherDequantInt8GetWorkspaceSize",
    ),
    **_family(
        "npu_emu.kernels.mx_quant.api",
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
    ),
    **_family(
        "npu_emu.kernels.quant_matmul.api",
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
    ),
    **_family(
        "npu_emu.kernels.quant_matmul.sparse4to2",
        "aclnnSparse4to2QuantMatmulWeightNz",
        "aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize",
        "aclnnTransSparse4to2Para",
    ),
    **_family(
        "npu_emu.kernels.sign_bits.api",
        "aclnnSignBitsPack",
        "aclnnSignBitsPackGetWorkspaceSize",
        "aclnnSignBitsUnpack",
        "aclnnSignBitsUnpackGetWorkspaceSize",
    ),
}

__all__ = list(_FAMILIES)


def __getattr__(name):
    try:
        module, attr = _FAMILIES[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
