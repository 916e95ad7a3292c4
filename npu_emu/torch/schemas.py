"""The operator schemas npu-emu registers with torch.library (importing this module needs no torch).

The ``npu::`` strings are op-plugin's, verbatim from ``op_plugin/config/op_plugin_functions.yaml`` at
OP_PLUGIN_VERSION (Ascend/op-plugin, master), so that a graph traced against a real torch_npu and one traced here
carry the same arguments. op-plugin adds keyword arguments over time: a newer torch_npu whose schema differs keeps
its own (npu_emu.torch then adds CPU kernels only, and Python defaults fill what an older schema lacks).
One difference from the yaml: torch_npu's code generator renames ``self`` to ``input`` (a Python keyword-argument
name torch reserves for methods), so ``npu_sign_bits_pack`` reads ``Tensor input`` in a live torch_npu, and here.

``npu_emu::`` holds the same ops under npu-emu's own namespace (the torch docs' rule: a library defines ops in a
namespace it owns) plus the two kernels torch_npu has no function for.
"""

from npu_emu.frontend import registry

# Ascend/op-plugin master, 2026-08-21 ("【docs】README renamed"). The first commit carrying all seven strings below
# is 19a3c3e5 (2026-07-25: npu_grouped_dynamic_mx_quant's scale_alg / dst_type_max); a110bc30 (2025-06-03) has
# an older npu_quant_matmul (ScalarType? output_dtype, no x1_dtype ... y_scale) and no MX ops at all.
OP_PLUGIN_VERSION = "517f2e7d0f202f38b76310706cb977ca2388ad21"

# The schemas come from the op declarations (kernels/<op>/op.py: TorchOp): torch_npu's ops under both namespaces,
# the ops without a torch_npu function under npu_emu:: only.
TORCH_NPU_SCHEMAS = {t.name: t.schema for t, _ in registry.torch_ops() if t.torch_npu}
EMU_ONLY_SCHEMAS = {t.name: t.schema for t, _ in registry.torch_ops() if not t.torch_npu}

NPU_EMU_SCHEMAS = {**TORCH_NPU_SCHEMAS, **EMU_ONLY_SCHEMAS}

TORCH_NPU_OPS = tuple(TORCH_NPU_SCHEMAS)
NPU_EMU_OPS = tuple(NPU_EMU_SCHEMAS)
