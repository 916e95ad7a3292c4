"""Quantised matmul family (aclnnQuantMatmulV3/V4/V5/WeightNz, torch_npu npu_quant_matmul): docs/ops/quant_matmul.md.

Modules: ``routing`` (which device op and quant mode), ``checks`` (the aclnn checks with CANN's status codes),
``operands`` (user arrays -> exact logical operands), ``accum`` (exact cube accumulation primitives),
``tiling`` (host tiling: base blocks, core split), ``kernel`` (per-core njit kernels), ``api`` (front ends),
``trans_quant_param`` (the packed UINT64 scale), ``cli``.
"""
