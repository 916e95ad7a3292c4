"""vLLM-Ascend's own quantised linear layers on CPU tensors through npu-emu (docs/integrations/torch.md §8).

Runs in a separate venv holding vllm-ascend 0.23.0, vllm 0.23.0 and npu-emu (tests/interop/make_vllm_client_venv.sh);
tests/interop/test_vllm_client.py starts it and checks what it writes. Nothing of vLLM-Ascend is stubbed or
patched: the emulated torch_npu is installed, then vllm_ascend's method classes are built under a real VllmConfig,
their weights loaded with random quantised values, ``process_weights_after_loading`` and ``apply`` called as
vLLM calls them. For each method the script also computes the same result with npu_emu.ops called directly on the
same operands, and the exact product of the dequantised operands (float64), and saves all three.

usage: python vllm_client_script.py OUT.npz [METHOD ...]
"""

import sys

import numpy as np

from npu_emu import torch_npu_shim

torch_npu_shim.install(npu_device=True)      # torch.device("npu") parses: VllmConfig() asks for it

import ml_dtypes  # noqa: E402
import torch  # noqa: E402
import torch_npu  # noqa: E402,F401  (npu-emu's)
from vllm.config import VllmConfig, set_current_vllm_config  # noqa: E402

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


def _mx_exact(xq, xs, wq_kn, ws_kn):
    """Exact sum over k of (x code · 2^(xs-127)) (w code · 2^(ws-127)) in float64; scales per 32 along k."""
    xs = np.repeat(xs.astype(np.float64) - 127, 32, axis=1)[:, :xq.shape[1]]
    ws = np.repeat(ws_kn.astype(np.float64) - 127, 32, axis=0)[:wq_kn.shape[0]]
    return (xq * np.exp2(xs)) @ (wq_kn * np.exp2(ws))


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
    # npu-emu directly: the same quantiser and the matmul on the loaded operands (weight (k, n), scale (k/64, n, 2))
    xq, xs = ops.npu_dynamic_mx_quant(_np(x), dst_type=ops.float8_e4m3fn if hasattr(ops, "float8_e4m3fn") else 292,
                                      soc="ascend950pr")
    w_kn = np.ascontiguousarray(_np(w.view(torch.uint8)).T).view(ml_dtypes.float8_e4m3fn)
    ws_kn = np.ascontiguousarray(ws.numpy().T)                                  # (k/32, n)
    ws_pk = np.ascontiguousarray(ws_kn.reshape(K // 64, 2, N).transpose(0, 2, 1))   # (k/64, n, 2)
    direct = ops.npu_quant_matmul(xq, w_kn, ws_pk.view(ml_dtypes.float8_e8m0fnu), pertoken_scale=xs,
                                  scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
                                  output_dtype="bfloat16", group_sizes=[1, 1, 32], soc="ascend950pr")
    xs_kg = np.asarray(xs).view(np.uint8).reshape(M, -1)
    exact = _mx_exact(np.asarray(xq).astype(np.float64), xs_kg, w_kn.astype(np.float64), ws_kn)
    return y, direct, exact


METHODS = {"W8A8_MXFP8": w8a8_mxfp8}


def main(argv):
    out, names = argv[0], argv[1:] or list(METHODS)
    cfg = VllmConfig()
    from vllm_ascend.quantization.modelslim_config import AscendModelSlimConfig

    cfg.quant_config = AscendModelSlimConfig({"group_size": 32})
    saved = {}
    with set_current_vllm_config(cfg):
        for name in names:
            y, direct, exact = METHODS[name]()
            saved[f"{name}.y"] = _np(y).view(np.uint16) if y.dtype == torch.bfloat16 else _np(y)
            saved[f"{name}.direct"] = np.asarray(direct).view(np.uint16)
            saved[f"{name}.exact"] = exact
            print(name, "done", flush=True)
    np.savez(out, **saved)


if __name__ == "__main__":
    main(sys.argv[1:])
