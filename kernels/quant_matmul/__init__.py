"""Quantised matmul family (aclnnQuantMatmulV3/V4/V5/WeightNz, torch_npu npu_quant_matmul): docs/ops/quant_matmul.md.

Modules: ``api`` (front ends), ``switches`` (the switch defaults and choices, one table), ``routing`` (which device
op and quant mode), ``checks`` (the aclnn checks with CANN's status codes), ``operands`` (user arrays -> exact
logical operands), ``weight_nz`` (FRACTAL_NZ weights), ``accum`` (exact cube accumulation primitives), ``tiling``
(host tiling: base blocks, core split), ``v3`` (the QuantBatchMatmulV3 host path), ``v4`` / ``v4_tiling`` (the
QuantBatchMatmulV4 modes and their TilingData), ``kernel`` / ``v4_kernel`` (per-core njit kernels, device code
only), ``launch`` (the epilogue's specialised copy, access pattern and launch), ``trans_quant_param`` (the packed
UINT64 scale), ``sparse4to2``, ``cli``.
"""
