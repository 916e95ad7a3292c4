"""AscendQuantV2 (aclnnAscendQuantV3 / aclnnAscendQuant; torch_npu ``npu_quantize``): docs/ops/ascend_quant.md."""
