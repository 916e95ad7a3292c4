"""DynamicMxQuantWithDualAxis (Ascend 950 MX quantisation along axes -1 and -2 in one pass): tiling, checks, kernel,
front ends. Reuses the MX family's block arithmetic and element codecs (kernels/mx_quant).

Docs: docs/ops/dynamic_mx_quant_with_dual_axis.md. Front ends: ``api.npu_dynamic_mx_quant_with_dual_axis`` and the
aclnn pairs ``aclnnDynamicMxQuantWithDualAxis[V2]*``.
"""
