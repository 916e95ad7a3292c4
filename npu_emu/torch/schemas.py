"""The operator schemas npu-emu registers with torch.library (plain data: importing this module needs no torch).

The ``npu::`` strings are op-plugin's, verbatim from ``op_plugin/config/op_plugin_functions.yaml`` at
OP_PLUGIN_VERSION (Ascend/op-plugin, master), so that a graph traced against a real torch_npu and one traced here
carry the same arguments. op-plugin adds keyword arguments over time: a newer torch_npu whose schema differs keeps
its own (npu_emu.torch then adds CPU kernels only, and Python defaults fill what an older schema lacks).
One difference from the yaml: torch_npu's code generator renames ``self`` to ``input`` (a Python keyword-argument
name torch reserves for methods), so ``npu_sign_bits_pack`` reads ``Tensor input`` in a live torch_npu, and here.

``npu_emu::`` holds the same ops under npu-emu's own namespace (the torch docs' rule: a library defines ops in a
namespace it owns) plus the two kernels torch_npu has no function for.
"""

# Ascend/op-plugin master, 2026-08-21 ("【docs】README renamed"). The first commit carrying all seven strings below
# is 19a3c3e5 (2026-07-25: npu_grouped_dynamic_mx_quant's scale_alg / dst_type_max); a110bc30 (2025-06-03) has
# an older npu_quant_matmul (ScalarType? output_dtype, no x1_dtype ... y_scale) and no MX ops at all.
OP_PLUGIN_VERSION = "517f2e7d0f202f38b76310706cb977ca2388ad21"

TORCH_NPU_SCHEMAS = {
    "npu_sign_bits_pack": "npu_sign_bits_pack(Tensor input, int size) -> Tensor",
    "npu_sign_bits_unpack": "npu_sign_bits_unpack(Tensor input, int size, ScalarType dtype) -> Tensor",
    "npu_dynamic_mx_quant": (
        'npu_dynamic_mx_quant(Tensor input, *, int axis=-1, str round_mode="rint", int dst_type=296, '
        "int block_size=32, int? scale_alg=0, float dst_type_max=0.0, float max_low_bound=0.0) -> (Tensor, Tensor)"),
    "npu_grouped_dynamic_mx_quant": (
        'npu_grouped_dynamic_mx_quant(Tensor x, Tensor group_index, *, str round_mode="rint", int dst_type=23, '
        "int blocksize=32, int? scale_alg=0, float? dst_type_max=0.0) -> (Tensor, Tensor)"),
    "npu_quant_matmul": (
        "npu_quant_matmul(Tensor x1, Tensor x2, Tensor scale, *, Tensor? offset=None, Tensor? pertoken_scale=None, "
        "Tensor? bias=None, int? output_dtype=None, int? x1_dtype=None, int? x2_dtype=None, "
        "int? pertoken_scale_dtype=None, int? scale_dtype=None, int[]? group_sizes=None, Tensor? y_scale=None) "
        "-> Tensor"),
    "npu_trans_quant_param": "npu_trans_quant_param(Tensor scale, Tensor? offset=None, int? round_mode=0) -> Tensor",
    "npu_anti_mx_quant": (
        "npu_anti_mx_quant(Tensor x, Tensor mxscale, *, int? axis=-1, int? dst_type=15, int? src_type=292) -> Tensor"),
    "npu_quantize": (
        "npu_quantize(Tensor input, Tensor scales, Tensor? zero_points, int dtype, int axis=1, bool div_mode=True) "
        "-> Tensor"),
}

# Ops without a torch_npu function. data_copy_dequant takes the scalar deq word only (DEQ8 / DEQ16 / DEQS16): the
# per-channel VDEQ8 table decides int8 vs uint8 from its values, which a fake kernel cannot read.
EMU_ONLY_SCHEMAS = {
    "gather_dequant_int8": (
        "gather_dequant_int8(Tensor table, Tensor indices, Tensor scale, Tensor zero_point) -> Tensor"),
    "data_copy_dequant": (
        'data_copy_dequant(Tensor acc, int deq_value, *, str mode="DEQ8", bool is_relu=False) -> Tensor'),
}

NPU_EMU_SCHEMAS = {**TORCH_NPU_SCHEMAS, **EMU_ONLY_SCHEMAS}

TORCH_NPU_OPS = tuple(TORCH_NPU_SCHEMAS)
NPU_EMU_OPS = tuple(NPU_EMU_SCHEMAS)
