"""GroupedDynamicMxQuant and DynamicMxQuant (Ascend 950 MX quantisation): tiling, checks, kernels, front ends.

Docs: docs/ops/mx_quant.md. Front ends: ``api.npu_grouped_dynamic_mx_quant``, ``api.npu_dynamic_mx_quant`` and the
aclnn pairs ``aclnnGroupedDynamicMxQuant[V2]*``, ``aclnnDynamicMxQuant[V2|V3]*``.
"""
