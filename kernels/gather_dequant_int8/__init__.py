"""GatherDequantInt8 (Kirin 9020 custom op): tiling.py = op_host, kernel.py = op_kernel, checks.py, api.py, cli.py.

Docs: docs/ops/gather_dequant_int8.md; source: hicann/cann-recipes-harmony-infer
ops/ascendc/src/gather_dequant_int8_custom/.
"""
