"""The W8A8-dynamic MoE MLP as vLLM-Ascend's ops/fused_moe/moe_mlp.py calls it (sglang's w8a8_moe.py and
MindIE-LLM's w8a8.py run the same chain), on torch CPU tensors through the emulated torch_npu:

    npu_dynamic_quant -> npu_grouped_matmul (int8 -> int32, split_item 3) -> npu_dequant_swiglu_quant
    (quant_mode 1, activate_left) -> npu_grouped_matmul (int8, scale + per_token_scale -> bfloat16)

It must be deterministic and give, bit for bit, what the four npu_emu.ops calls give one by one on numpy arrays.
"""

import ml_dtypes
import numpy as np
import pytest

import npu_emu.ops as ops

pytest.importorskip("torch")

CHAIN = ("npu_dynamic_quant", "npu_grouped_matmul", "npu_dequant_swiglu_quant")


def _have_chain():
    return all(name in ops.__all__ for name in CHAIN)


pytestmark = pytest.mark.skipif(not _have_chain(), reason="the chain's ops are not all in this build")


def _weights(rng, e, h, i):
    w13 = rng.integers(-128, 128, (e, h, 2 * i), dtype=np.int16).astype(np.int8)
    w2 = rng.integers(-128, 128, (e, i, h), dtype=np.int16).astype(np.int8)
    w13_scale = rng.uniform(0.001, 0.01, (e, 2 * i)).astype(np.float32)
    # per-channel scale of the second GEMM in bfloat16: CANN takes bf16 output with per-token scales only with a bf16
    # scale (aclnnGroupedMatmul's CheckQuantParamsDtype), as vLLM-Ascend's W8A8-dynamic weights are converted
    w2_scale = rng.uniform(0.001, 0.01, (e, h)).astype(np.float32).astype(ml_dtypes.bfloat16)
    return w13, w2, w13_scale, w2_scale


def _moe_mlp(torch_npu, torch, hidden, w13, w2, w13_scale, w2_scale, group_list):
    """vLLM-Ascend's quant_apply_mlp (W8A8 dynamic, fused activation), as it calls torch_npu."""
    x, pertoken_scale = torch_npu.npu_dynamic_quant(hidden)
    h = torch_npu.npu_grouped_matmul(x=[x], weight=[w13], split_item=3, group_list_type=1, group_type=0,
                                     group_list=group_list, output_dtype=torch.int32)[0]
    h, swiglu_scale = torch_npu.npu_dequant_swiglu_quant(x=h, weight_scale=w13_scale, activation_scale=pertoken_scale,
                                                         bias=None, quant_scale=None, quant_offset=None,
                                                         group_index=group_list, activate_left=True, quant_mode=1)
    return torch_npu.npu_grouped_matmul(x=[h], weight=[w2], scale=[w2_scale], per_token_scale=[swiglu_scale],
                                        split_item=2, group_list_type=1, group_type=0, group_list=group_list,
                                        output_dtype=torch.bfloat16)[0]


def _by_hand(hidden, w13, w2, w13_scale, w2_scale, counts):
    """The same four calls through npu_emu.ops on numpy arrays."""
    x, s = ops.npu_dynamic_quant(hidden)
    h = ops.npu_grouped_matmul([x], [w13], split_item=3, group_list_type=1, group_type=0, group_list=counts,
                               output_dtype="int32")[0]
    h, hs = ops.npu_dequant_swiglu_quant(h, weight_scale=w13_scale, activation_scale=s, group_index=counts,
                                         activate_left=True, quant_mode=1)
    y = ops.npu_grouped_matmul([h], [w2], scale=[w2_scale], per_token_scale=[hs], split_item=2, group_list_type=1,
                               group_type=0, group_list=counts, output_dtype="bfloat16")[0]
    assert np.asarray(y).dtype == ml_dtypes.bfloat16
    return np.asarray(y)


def test_w8a8_dynamic_moe_mlp_through_torch_npu(tmp_path):
    import torch

    from npu_emu import torch_npu_shim

    torch_npu_shim.install()
    try:
        import torch_npu

        rng = np.random.default_rng(11)
        e, h, i = 4, 128, 64
        counts = np.array([5, 0, 19, 8], np.int64)          # an empty expert; 32 routed tokens
        t = int(counts.sum())
        hidden = (rng.standard_normal((t, h)).astype(np.float32)).astype(np.float32)
        w13, w2, w13_scale, w2_scale = _weights(rng, e, h, i)
        th = torch.from_numpy(hidden).to(torch.bfloat16)
        args = (th, torch.from_numpy(w13), torch.from_numpy(w2), torch.from_numpy(w13_scale),
                torch.from_numpy(w2_scale.view(np.int16)).view(torch.bfloat16), torch.from_numpy(counts))
        out1 = _moe_mlp(torch_npu, torch, *args)
        out2 = _moe_mlp(torch_npu, torch, *args)
        assert out1.dtype == torch.bfloat16 and tuple(out1.shape) == (t, h)
        assert torch.equal(out1.view(torch.int16), out2.view(torch.int16))        # deterministic
        want = _by_hand(th.view(torch.int16).numpy().view(ml_dtypes.bfloat16), w13, w2, w13_scale, w2_scale, counts)
        assert np.array_equal(out1.view(torch.int16).numpy(), want.view(np.int16))
        assert np.isfinite(want.astype(np.float32)).all() and np.abs(want.astype(np.float32)).max() > 0
    finally:
        torch_npu_shim.uninstall()
