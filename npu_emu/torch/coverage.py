"""The 81 ``torch_npu`` names vLLM-Ascend 0.23.0 uses (``git grep -o 'torch_npu\\.[A-Za-z_]\\w*'`` over
vllm-project/vllm-ascend: vllm_ascend/ at tag v0.23.0) and what npu-emu's emulated module does with each
(docs/integrations/torch.md §3.3 prints this table). Plain data: importing it needs no torch.

status: "works" (an emulated op, a constant or a format helper), "namespace" (torch_npu.npu, §3.2),
"no-op" (present, does nothing or raises on use as noted), "not emulated" (present; calling it raises
NotEmulatedError naming the docs page). None of them raises AttributeError.
"""

VLLM_ASCEND_VERSION = "0.23.0"

NAMES = (
    ('npu_quant_matmul', 'works', 'torch.ops.npu op with a CPU kernel (npu_emu.ops)'),
    ('npu_format_cast', 'works', 'records the storage format; FRACTAL_NZ (29) weights reach npu_quant_matmul as NzWeight (§3.4)'),
    ('npu', 'namespace', 'torch_npu.npu / torch.npu: streams, events and device queries as CPU no-ops (§3.2)'),
    ('npu_dynamic_quant', 'works',
     'torch.ops.npu op with a CPU kernel (npu_emu.ops); '
     'W8A8_DYNAMIC linear and MoE MLP run on it (§8)'),
    ('npu_fused_infer_attention_score', 'not emulated', 'raises NotEmulatedError when called'),
    ('float4_e2m1fn_x2', 'works', 'dtype constant 296 (§3.1)'),
    ('npu_grouped_matmul', 'works',
     'torch.ops.npu op with a CPU kernel (npu_emu.ops), single-tensor split-M form; '
     'a weight cast to FRACTAL_NZ is read as its ND values (§8)'),
    ('profiler', 'not emulated', 'a module: profile(), ProfilerActivity, ... raise when called'),
    ('npu_dynamic_mx_quant', 'works', 'torch.ops.npu op with a CPU kernel (npu_emu.ops)'),
    ('npu_rms_norm', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_swiglu', 'works', 'torch.ops.npu op with a CPU kernel (npu_emu.ops); the unfused MoE MLP runs on it (§8)'),
    ('npu_rotary_mul', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_token_unpermute', 'not emulated',
     'raises NotEmulatedError when called; '
     'the MoE combine on A2/A3 (device/device_op.py:1102) needs it (§8.1)'),
    ('npu_convert_weight_to_int4pack', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_init_routing_v2', 'not emulated',
     'raises NotEmulatedError when called; '
     'the MoE dispatch on A5 (device/device_op.py:1215) needs it (§8.1)'),
    ('npu_fused_infer_attention_score_v2', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_fused_infer_attention_score_get_max_workspace', 'not emulated', 'raises NotEmulatedError when called'),
    ('_C', 'not emulated', 'a module whose names raise when called (_distributed_c10d.ProcessGroupHCCL, _weak_ref_tensor, ...)'),
    ('npu_transpose_batchmatmul', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_scatter_pa_kv_cache', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_scatter_nd_update_', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_token_permute', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_lightning_indexer', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_kv_rmsnorm_rope_cache', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_fusion_attention', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_add_rms_norm', 'not emulated', 'raises NotEmulatedError when called'),
    ('float8_e8m0fnu', 'works', 'dtype constant 293 (§3.1)'),
    ('atb', 'not emulated', 'module; npu_paged_cache_load raises when called'),
    ('_npu_rotary_embedding', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_reshape_and_cache', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_paged_attention', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_weight_quant_batchmatmul', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_quantize', 'works', 'torch.ops.npu op with a CPU kernel (npu_emu.ops)'),
    ('npu_mm_reduce_scatter_base', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_kronecker_quant', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_interleave_rope', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_grouped_matmul_swiglu_quant_v2', 'not emulated',
     'raises NotEmulatedError when called; '
     'the fused MoE MLP on A5 (device/device_op.py:1339) needs it (§8.1)'),
    ('npu_attention_update', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_apply_rotary_pos_emb', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_fused_infer_attention_score_v2_get_max_workspace', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_transpose_quant_batchmatmul', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_top_k_top_p', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_quant_grouped_matmul_dequant', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_prompt_flash_attention', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_gating_top_k_softmax', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_mla_prolog_v3', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_matmul_compress_dequant', 'not emulated', 'raises NotEmulatedError when called'),
    ('multiprocessing', 'not emulated', 'module; reductions.rebuild_npu_tensor raises when called'),
    ('empty_with_format', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_paged_attention_get_workspace', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_matmul_add_fp32', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_flash_attention_unpad', 'not emulated', 'raises NotEmulatedError when called'),
    ('op_plugin', 'not emulated', 'module; op_plugin.atb._atb_ops._register_atb_extensions raises when called'),
    ('npu_sign_bits_unpack', 'works', 'torch.ops.npu op with a CPU kernel (npu_emu.ops)'),
    ('npu_recurrent_gated_delta_rule', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_quant_lightning_indexer', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_prefetch', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_mrope', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_gating_top_k', 'not emulated',
     'raises NotEmulatedError when called; '
     'select_experts on A5 (device/device_op.py:1251) needs it (§8.1)'),
    ('npu_moe_finalize_routing', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_distribute_dispatch_v2', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_distribute_dispatch', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_distribute_combine_v2', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_moe_distribute_combine', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_mm_all_reduce_base', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_mla_prolog_v2', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_kv_quant_sparse_flash_attention', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_grouped_matmul_swiglu_quant', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_gather_pa_kv_cache', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_fast_gelu', 'not emulated', 'raises NotEmulatedError when called'),
    ('npu_dynamic_block_quant', 'not emulated', 'raises NotEmulatedError when called'),
    ('get_npu_format', 'works', 'the format npu_format_cast recorded (2 = ND otherwise) (§3.4)'),
    ('_npu_paged_attention_splitfuse_v2', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_paged_attention_splitfuse', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_group_topk', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_flash_attention_v3', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_flash_attention_unpad_v2', 'not emulated', 'raises NotEmulatedError when called'),
    ('_npu_flash_attention', 'not emulated', 'raises NotEmulatedError when called'),
    ('_inductor', 'not emulated', 'an empty module (import works; nothing is registered)'),
    ('__version__', 'works', "the string '0.0.0+npu_emu'"),
    ('Format', 'works', 'IntEnum of the ACL storage formats (ND = 2, FRACTAL_NZ = 29, ...)'),
)

STATUS = {name: status for name, status, _ in NAMES}


# What vllm_ascend's W8A8_DYNAMIC MoE method (AscendW8A8DynamicFusedMoEMethod.apply) calls on one card, in order, on
# the device type the 0.23.0 wheel is built for (A2: vllm_ascend/_build_info, BaseDeviceAdaptor) with the AllGather
# communication method (docs/integrations/torch.md §8.1). (stage, call, vllm_ascend file:line, status on CPU):
# vLLM-Ascend's own custom ops (torch.ops._C_ascend.*) live in its C extension vllm_ascend_C, which needs CANN and
# does not load on the CPU, so they do not exist there at all (AttributeError from torch.ops).
MOE_W8A8_DYNAMIC_A2 = (
    ("select_experts", "torch.ops._C_ascend.moe_gating_top_k", "device/device_op.py:147", "missing (vLLM-Ascend op)"),
    ("dispatch", "torch.ops._C_ascend.npu_moe_init_routing_custom", "device/device_op.py:116",
     "missing (vLLM-Ascend op)"),
    ("mlp, fused (default)", "torch.ops._C_ascend.grouped_matmul_swiglu_quant_weight_nz", "device/device_op.py:225",
     "missing (vLLM-Ascend op)"),
    ("mlp, unfused: gate_up", "torch_npu.npu_grouped_matmul", "ops/fused_moe/moe_mlp.py:314", "works"),
    ("mlp, unfused: act", "torch_npu.npu_swiglu", "ops/fused_moe/moe_mlp.py:339", "works"),
    ("mlp, unfused: quant", "torch_npu.npu_dynamic_quant", "ops/fused_moe/moe_mlp.py:340", "works"),
    ("mlp, unfused: down", "torch_npu.npu_grouped_matmul", "device/device_op.py:279", "works"),
    ("combine", "torch_npu.npu_moe_token_unpermute", "device/device_op.py:1102", "not emulated"),
)
