"""vLLM-Ascend's own quantised linear layers and MoE expert MLP on CPU tensors through npu-emu
(docs/integrations/torch.md §8).

Runs in a separate venv holding vllm-ascend 0.23.0, vllm 0.23.0 and npu-emu (tests/interop/make_vllm_client_venv.sh);
tests/interop/test_vllm_client.py starts it and checks what it writes. Nothing of vLLM-Ascend is stubbed or
patched: the emulated torch_npu is installed, then vllm_ascend's method classes are built under a real VllmConfig,
their weights loaded with random quantised values, ``process_weights_after_loading`` and ``apply`` called as
vLLM calls them. For each method the script also computes the same result with npu_emu.ops called directly on the
same operands, and the exact product of the dequantised operands (float64), and saves all three. MOE_PROBE runs
each stage of the W8A8_DYNAMIC MoE method and saves where each stops (docs/integrations/torch.md §8.1).

usage: python vllm_client_script.py OUT.npz [METHOD ... | MOE_PROBE]
"""

import sys

import numpy as np

from npu_emu import torch_npu_shim

torch_npu_shim.install(npu_device=True)      # torch.device("npu") parses: VllmConfig() asks for it

import ml_dtypes  # noqa: E402
import torch  # noqa: E402
import torch_npu  # noqa: E402,F401  (npu-emu's)
from vllm.config import VllmConfig, get_current_vllm_config, set_current_vllm_config  # noqa: E402

import npu_emu.ops as ops  # noqa: E402
import npu_emu.torch as emu_torch  # noqa: E402

M, K, N = 8, 256, 64
RNG = np.random.default_rng(40)


def _layer(**params):
    layer = torch.nn.Module()
    for name, value in params.items():
        setattr(layer, name, torch.nn.Parameter(value, requires_grad=False))
    layer.params_dtype = torch.bfloat16
    layer.prefix = "model.layers.0.mlp.down_proj"
    return layer


def _e8m0(shape, lo=118, hi=130):
    return torch.from_numpy(RNG.integers(lo, hi, size=shape, dtype=np.uint8))


def _x():
    return torch.from_numpy((RNG.standard_normal((M, K)) * 2).astype(np.float32)).to(torch.bfloat16)


def _np(t):
    return t.detach().contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16) if t.dtype == torch.bfloat16 \
        else t.detach().contiguous().numpy()


FP4 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6])   # E2M1 codes (OCP MX v1.0)


def _fp4_codes(packed):
    """(…, k/2) bytes -> (…, k) E2M1 codes, even element in the low nibble."""
    p = np.asarray(packed, np.uint8)
    return np.stack((p & 0x0F, p >> 4), axis=-1).reshape(p.shape[:-1] + (2 * p.shape[-1],))


def _fp8(codes):
    return np.asarray(codes, np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def _scaled(vals, e8m0, axis):
    """values · 2^(code − 127), one code per 32 values along ``axis`` (float64, exact)."""
    e = np.repeat(np.asarray(e8m0, np.uint8).astype(np.float64) - 127, 32, axis=axis)
    return vals * np.exp2(e)


def _u8(t):
    return t.detach().contiguous().view(torch.uint8).numpy()


def _mx_layer_direct(layer, xq, xs, **kw):
    """npu_emu.ops.npu_quant_matmul on the layer's own operands, as the method passes them."""
    return ops.npu_quant_matmul(xq, layer.weight, layer.weight_scale, pertoken_scale=xs,
                                scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
                                output_dtype=torch.bfloat16, soc="ascend950pr", **kw)


def w8a8_mxfp8():
    from vllm_ascend.quantization.methods.w8a8_mxfp8 import AscendW8A8MXFP8DynamicLinearMethod

    emu_torch.set_soc("ascend950pr")
    method = AscendW8A8MXFP8DynamicLinearMethod()
    w = torch.from_numpy((RNG.standard_normal((N, K)) * 100).astype(np.float32)).to(torch.float8_e4m3fn)
    ws = _e8m0((N, K // 32))
    layer = _layer(weight=w.clone(), weight_scale=ws.clone())
    method.process_weights_after_loading(layer)
    x = _x()
    y = method.apply(layer, x)
    xq, xs = ops.npu_dynamic_mx_quant(x, dst_type=torch.float8_e4m3fn, soc="ascend950pr")
    direct = _mx_layer_direct(layer, xq, xs, group_sizes=[1, 1, 32])
    a = _scaled(_fp8(_u8(xq)), _u8(xs).reshape(M, -1), 1)
    b = _scaled(_fp8(_u8(w)), ws.numpy(), 1)
    return y, direct, a @ b.T


def w4a4_mxfp4():
    from vllm_ascend.quantization.methods.w4a4_mxfp4 import AscendW4A4MXFP4DynamicLinearMethod

    emu_torch.set_soc("ascend950pr")
    method = AscendW4A4MXFP4DynamicLinearMethod()
    w = torch.from_numpy(RNG.integers(0, 256, size=(N, K // 2), dtype=np.uint8))
    ws = _e8m0((N, K // 32))
    layer = _layer(weight=w.clone(), weight_scale=ws.clone())
    method.process_weights_after_loading(layer)
    x = _x()
    y = method.apply(layer, x)
    xq, xs = ops.npu_dynamic_mx_quant(x, dst_type=296, round_mode="round", soc="ascend950pr")
    direct = _mx_layer_direct(layer, xq, xs, group_sizes=[1, 1, 32], x1_dtype="float4_e2m1",
                              x2_dtype="float4_e2m1")
    a = _scaled(FP4[_fp4_codes(_u8(xq))], _u8(xs).reshape(M, -1), 1)
    b = _scaled(FP4[_fp4_codes(w.numpy())], ws.numpy(), 1)
    return y, direct, a @ b.T


def w4a8_mxfp():
    from vllm_ascend.quantization.methods.w4a8_mxfp4 import AscendW4A8MXFPDynamicLinearMethod

    emu_torch.set_soc("ascend950pr")
    method = AscendW4A8MXFPDynamicLinearMethod()
    w = torch.from_numpy(RNG.integers(0, 256, size=(N, K // 2), dtype=np.uint8))
    ws = _e8m0((N, K // 32))
    layer = _layer(weight=w.clone(), weight_scale=ws.clone())
    method.process_weights_after_loading(layer)              # npu_format_cast(29) + transpose: the WeightNz path
    assert torch_npu.get_npu_format(layer.weight) == 29
    x = _x()
    y = method.apply(layer, x)
    xq, xs = ops.npu_dynamic_mx_quant(x, dst_type=torch.float8_e4m3fn, soc="ascend950pr")
    # the weight as aclnnQuantMatmulWeightNz gets it from torch_npu: (n, k) in FRACTAL_NZ, transposeX2 = true
    nz = ops.NzWeight.from_nd(np.ascontiguousarray(_fp4_codes(w.numpy())), "float4_e2m1", transposed=True)
    direct = ops.npu_quant_matmul(xq, nz, layer.weight_scale, pertoken_scale=xs, scale_dtype="float8_e8m0",
                                  pertoken_scale_dtype="float8_e8m0", output_dtype=torch.bfloat16,
                                  group_sizes=[0, 0, 32], soc="ascend950pr")
    a = _scaled(_fp8(_u8(xq)), _u8(xs).reshape(M, -1), 1)
    b = _scaled(FP4[_fp4_codes(w.numpy())], ws.numpy(), 1)
    return y, direct, a @ b.T


def w8a8_static():
    from vllm_ascend.ascend_config import get_ascend_config
    from vllm_ascend.quantization.methods.w8a8_static import AscendW8A8LinearMethod
    from vllm_ascend.utils import set_weight_prefetch_method

    from npu_emu.torch.custom_ops import add_cpu_kernels

    import vllm_ascend.ops.register_custom_ops  # noqa: F401  vllm::quantize & co. (PrivateUse1 only)

    add_cpu_kernels("vllm", ["quantize"])                   # their Python kernels call torch_npu: run them on CPU
    # W8A8's apply asks for vLLM-Ascend's weight-prefetch object, whose constructor reads the model's HF config to
    # tell MoE models apart; there is no model here, so its cached answer is given (the one value set by hand)
    import vllm_ascend.utils as va_utils

    va_utils._IS_MOE_MODEL = False
    set_weight_prefetch_method(get_ascend_config().weight_prefetch_config)
    emu_torch.set_soc(None)                                 # the int8 path: the A2 (910B2)
    method = AscendW8A8LinearMethod()
    w = torch.from_numpy(RNG.integers(-127, 128, size=(N, K), dtype=np.int8))
    in_scale = torch.tensor([0.02], dtype=torch.bfloat16)
    in_offset = torch.tensor([3], dtype=torch.int8)
    qbias = torch.from_numpy(RNG.integers(-2000, 2000, size=N, dtype=np.int32))
    deq = torch.from_numpy((RNG.random(N) * 1e-3 + 1e-4).astype(np.float32))
    layer = _layer(weight=w.clone(), input_scale=in_scale, input_offset=in_offset, quant_bias=qbias,
                   deq_scale=deq, weight_scale=torch.ones(N, 1, dtype=torch.bfloat16),
                   weight_offset=torch.zeros(N, 1, dtype=torch.bfloat16))
    method.process_weights_after_loading(layer)
    nz = torch_npu.get_npu_format(layer.weight) == 29
    x = _x()
    y = method.apply(layer, x)
    from npu_emu.kernels.ascend_quant import api as aq

    xq = aq.npu_quantize(x, layer.aclnn_input_scale_reciprocal, layer.aclnn_input_offset, 12, -1, False)
    x2 = ops.NzWeight.from_nd(w.numpy().T.copy(), "int8") if nz else w.numpy().T.copy()
    direct = ops.npu_quant_matmul(xq, x2, deq, bias=qbias, output_dtype=torch.bfloat16)
    acc = xq.numpy().astype(np.float64) @ w.numpy().T.astype(np.float64) + qbias.numpy()
    print("W8A8 weight format", 29 if nz else 2, flush=True)
    return y, direct, acc * deq.numpy().astype(np.float64)


def w8a8_dynamic():
    from vllm_ascend.quantization.methods.w8a8_dynamic import AscendW8A8DynamicLinearMethod

    emu_torch.set_soc(None)                                 # the int8 path: the A2 (910B2)
    method = AscendW8A8DynamicLinearMethod()
    w = torch.from_numpy(RNG.integers(-127, 128, size=(N, K), dtype=np.int8))
    ws = torch.from_numpy((RNG.random((N, 1)) * 1e-2 + 1e-3).astype(np.float32)).to(torch.bfloat16)
    layer = _layer(weight=w.clone(), weight_scale=ws.clone(), weight_offset=torch.zeros(N, 1, dtype=torch.bfloat16))
    method.process_weights_after_loading(layer)             # transpose to (k, n), maybe_trans_nz, scale flattened
    nz = torch_npu.get_npu_format(layer.weight) == 29
    x = _x()
    bias = torch.from_numpy((RNG.standard_normal(N) * 4).astype(np.float32)).to(torch.bfloat16)   # params_dtype
    y = method.apply(layer, x, bias=bias)
    xq, xs = ops.npu_dynamic_quant(x, dst_type=torch.int8)
    x2 = ops.NzWeight.from_nd(w.numpy().T.copy(), "int8") if nz else w.numpy().T.copy()
    direct = ops.npu_quant_matmul(xq, x2, ws.flatten(), pertoken_scale=xs, bias=bias, output_dtype=torch.bfloat16)
    acc = xq.numpy().astype(np.float64) @ w.numpy().T.astype(np.float64)
    print("W8A8_DYNAMIC weight format", 29 if nz else 2, flush=True)
    deq = acc * xs.numpy().astype(np.float64)[:, None] * _np(ws.flatten()).astype(np.float64)[None, :]
    return y, direct, deq + _np(bias).astype(np.float64)[None, :]


def w8a8_dynamic_moe_mlp():
    """The W8A8_DYNAMIC MoE method's expert MLP: vllm_ascend.ops.fused_moe.moe_mlp.quant_apply_mlp as the method's
    AllGather path calls it with ``ascend_fusion_config.fusion_ops_gmmswigluquant`` off (A2, single card): dynamic
    quant -> npu_grouped_matmul (int8, per-token scale, bf16 out) -> npu_swiglu -> npu_dynamic_quant ->
    npu_grouped_matmul. The routing around it (select_experts, token dispatch / combine) is not run: it needs ops
    npu-emu lacks (docs/integrations/torch.md §8.1). Weights prepared as the method's process_weights_after_loading
    does (transpose(1, 2), npu_format_cast to FRACTAL_NZ, scales (E, n), w13's in float32)."""
    from vllm.forward_context import set_forward_context
    from vllm_ascend.ops.fused_moe.moe_mlp import quant_apply_mlp

    emu_torch.set_soc(None)
    E, H, I = 4, K, 64                                      # experts, hidden, intermediate (per partition)
    counts = np.array([3, 5, 0, 8])                         # tokens per expert (group_list_type 1: counts)
    w13 = torch.from_numpy(RNG.integers(-127, 128, size=(E, 2 * I, H), dtype=np.int8))
    w2 = torch.from_numpy(RNG.integers(-127, 128, size=(E, H, I), dtype=np.int8))
    s13 = torch.from_numpy((RNG.random((E, 2 * I, 1)) * 1e-2 + 1e-3).astype(np.float32)).to(torch.bfloat16)
    s2 = torch.from_numpy((RNG.random((E, H, 1)) * 1e-2 + 1e-3).astype(np.float32)).to(torch.bfloat16)
    w1_k = torch_npu.npu_format_cast(w13.transpose(1, 2).contiguous(), 29)         # (E, H, 2I)
    w2_k = torch_npu.npu_format_cast(w2.transpose(1, 2).contiguous(), 29)          # (E, I, H)
    s13_fp32, s2_2d = s13.view(E, -1).to(torch.float32), s2.view(E, -1)
    x = torch.from_numpy((RNG.standard_normal((int(counts.sum()), H)) * 2).astype(np.float32)).to(torch.bfloat16)
    gl = torch.from_numpy(counts.astype(np.int64))
    with set_forward_context(None, get_current_vllm_config()):       # x.clone(): the MLP frees its input
        y, _ = quant_apply_mlp(x.clone(), [w1_k], [s13_fp32.clone()], [w2_k], [s2_2d], gl, 1, fusion=False,
                            act_quant_type=torch.int8)          # (out, the event before gmm2)
    gmm = dict(split_item=2, group_list_type=1, group_type=0, group_list=gl, output_dtype=torch.bfloat16)
    xq, xs = ops.npu_dynamic_quant(x, dst_type=torch.int8)
    w1_nd, w2_nd = w13.numpy().transpose(0, 2, 1).copy(), w2.numpy().transpose(0, 2, 1).copy()
    h = ops.npu_grouped_matmul([xq], [w1_nd], scale=[s13_fp32.to(torch.bfloat16)], per_token_scale=[xs], **gmm)[0]
    q2, qs2 = ops.npu_dynamic_quant(ops.npu_swiglu(h), dst_type=torch.int8)
    direct = ops.npu_grouped_matmul([q2], [w2_nd], scale=[s2_2d], per_token_scale=[qs2], **gmm)[0]
    # exact down-projection of the dequantised operands it is given (the int8 intermediate and its scales)
    exact = np.zeros((x.shape[0], H))
    ends = np.cumsum(counts)
    for e in range(E):
        r = slice(ends[e] - counts[e], ends[e])
        acc = q2.numpy()[r].astype(np.float64) @ w2_nd[e].astype(np.float64)
        exact[r] = acc * qs2.numpy()[r, None].astype(np.float64) * _np(s2_2d[e]).astype(np.float64)[None, :]
    return y, direct, exact


def moe_probe():
    """Each stage of the W8A8_DYNAMIC MoE method's apply on one A2 card (AllGather), called through vLLM-Ascend's own
    functions on CPU tensors: (stage, status, vllm_ascend file:line where it stops) in the order of
    npu_emu.torch.coverage.MOE_W8A8_DYNAMIC_A2, which the test compares it with (docs/integrations/torch.md §8.1)."""
    import traceback

    from vllm.forward_context import set_forward_context
    from vllm_ascend.device.device_op import DeviceOperator
    from vllm_ascend.ops.fused_moe.experts_selector import select_experts
    from vllm_ascend.ops.fused_moe.moe_mlp import quant_apply_mlp

    from npu_emu.torch.coverage import MOE_W8A8_DYNAMIC_A2
    from npu_emu.torch.runtime import NotEmulatedError

    emu_torch.set_soc(None)
    T, H, I, E, TOP = 8, K, 64, 4, 2
    x = torch.from_numpy(RNG.standard_normal((T, H)).astype(np.float32)).to(torch.bfloat16)
    logits = torch.from_numpy(RNG.standard_normal((T, E)).astype(np.float32)).to(torch.bfloat16)
    ids = torch.from_numpy(RNG.integers(0, E, size=(T, TOP), dtype=np.int32))
    w1 = torch_npu.npu_format_cast(torch.ones(E, H, 2 * I, dtype=torch.int8), 29)
    w2 = torch_npu.npu_format_cast(torch.ones(E, I, H, dtype=torch.int8), 29)
    s1, s2 = torch.full((E, 2 * I), 1e-3), torch.full((E, H), 1e-3).to(torch.bfloat16)
    counts = torch.tensor([T * TOP - 3, 3, 0, 0], dtype=torch.int64)

    def mlp(fusion):
        with set_forward_context(None, get_current_vllm_config()):
            return quant_apply_mlp(x.repeat(TOP, 1), [w1], [s1.clone()], [w2], [s2], counts, 1, fusion=fusion,
                                   act_quant_type=torch.int8)

    calls = {
        "select_experts": lambda: select_experts(x, logits, TOP, False, True),
        "dispatch": lambda: DeviceOperator.npu_moe_init_routing(
            x, ids, active_num=T * TOP, expert_num=E, active_expert_range=[0, E], quant_mode=1),
        "mlp, fused (default)": lambda: mlp(True),
        "mlp, unfused": lambda: mlp(False),
        "combine": lambda: DeviceOperator.npu_moe_token_unpermute(
            torch.zeros(T * TOP, H, dtype=torch.bfloat16), torch.arange(T * TOP, dtype=torch.int32),
            torch.ones(T, TOP, dtype=torch.bfloat16)),
    }
    done, rows = {}, []
    for stage, _, _, _ in MOE_W8A8_DYNAMIC_A2:
        key = next(k for k in calls if stage.startswith(k))
        if key not in done:
            try:
                calls[key]()
                done[key] = ("works", "")
            except Exception as e:                          # noqa: BLE001  what stops it, and where
                va = [f for f in traceback.extract_tb(e.__traceback__) if "/vllm_ascend/" in f.filename]
                where = f"{va[-1].filename.split('/vllm_ascend/')[-1]}:{va[-1].lineno}" if va else "?"
                if isinstance(e, NotEmulatedError):
                    done[key] = ("not emulated", where)
                elif isinstance(e, AttributeError) and "_C_ascend" in str(e):
                    done[key] = ("missing (vLLM-Ascend op)", where)
                else:
                    done[key] = (f"error: {type(e).__name__}: {e}"[:300], where)
        rows.append((stage,) + done[key])
    return rows


METHODS = {"W8A8_MXFP8": w8a8_mxfp8, "W4A4_MXFP4": w4a4_mxfp4, "W4A8_MXFP": w4a8_mxfp, "W8A8": w8a8_static,
           "W8A8_DYNAMIC": w8a8_dynamic,
           "W8A8_DYNAMIC_MOE_MLP": w8a8_dynamic_moe_mlp}


def _bits16(t):
    if isinstance(t, torch.Tensor):
        return t.detach().contiguous().view(torch.int16).numpy().view(np.uint16)
    return np.asarray(t).view(np.uint16)


def main(argv):
    out, names = argv[0], argv[1:] or list(METHODS)
    from vllm_ascend.ascend_config import init_ascend_config
    from vllm_ascend.quantization.modelslim_config import AscendModelSlimConfig

    cfg = VllmConfig()
    cfg.quant_config = AscendModelSlimConfig({"group_size": 32})
    init_ascend_config(cfg)                 # what vLLM-Ascend's platform does when vLLM hands it the config
    saved = {}
    with set_current_vllm_config(cfg):
        for name in names:
            if name == "MOE_PROBE":
                rows = moe_probe()
                for i, field in enumerate(("stage", "status", "where")):
                    saved[f"MOE_PROBE.{field}"] = np.array([r[i] for r in rows])
                print(name, "done", flush=True)
                continue
            y, direct, exact = METHODS[name]()
            saved[f"{name}.y"] = _bits16(y)
            saved[f"{name}.direct"] = _bits16(direct)
            saved[f"{name}.exact"] = np.asarray(exact, np.float64)
            print(name, "done", flush=True)
    np.savez(out, **saved)


if __name__ == "__main__":
    main(sys.argv[1:])
