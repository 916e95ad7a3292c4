"""Fuzz the GroupedMatmul antiquant and MX modes (docs/ops/grouped_matmul.md §10, §11) through npu_grouped_matmul.

Valid calls: W8A16 per channel and W4A16 per group (bf16 / fp16 x, with or without bias) and A4W4 (int4 x and
weight, uint64 words per channel or per K group, per-token scale) on the A2/A3; MXFP8 split M
(E4M3 / E5M2, three outputs), MXFP8 split K and MXFP4 (with or without bias) on the 950; empty groups, groups that
end before x does, read-only inputs, core_num overrides; small shapes (the goldens sum exactly with fractions).
Mutations: missing antiquant offset, wrong antiquant dtype, MX bias on MXFP8, missing per-token scale, a scale of
the wrong K blocks, a decreasing group list, split K for antiquant, the 950 dtypes on the 910B. Golden:
kernels/grouped_matmul/golden.py and golden_modes.py.
"""

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.grouped_matmul import golden, golden_a4w4, golden_modes
from npu_emu.kernels.quant_matmul.trans_quant_param import trans_quant_param

BF16 = np.dtype(ml_dtypes.bfloat16)
MODES = ["w8a16_bf16", "w8a16_fp16", "w4a16_bf16", "mxfp8_m", "mxfp8_k", "mxfp4", "a4w4"]
MUTATIONS = ["none"] * 10 + ["aq_offset_none", "aq_dtype", "mx_bias", "pt_none", "scale_k", "gl_decreasing",
                             "aq_split_k", "mx_on_910b"]
A5 = "ascend950pr"


def _case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    mode = data.draw(st.sampled_from(MODES), "mode")
    e = data.draw(st.sampled_from([1, 2, 3]), "e")
    m = data.draw(st.sampled_from([0, 1, 5, 13]), "m")
    k = data.draw(st.sampled_from([32, 64, 96] if mode.startswith("mx") else [16, 32]), "k")
    n = data.draw(st.sampled_from([8, 16] if mode == "a4w4" else [2, 8]), "n")      # A4W4: N a multiple of 8
    kw = dict(split_item=3, group_type=0, core_num=data.draw(st.sampled_from([None, 1, 3]), "core_num"))
    if mode == "mxfp8_k":
        sizes = rng.multinomial(k, np.ones(e) / e).astype(np.int64)
        gl = sizes if data.draw(st.booleans(), "counts") else np.cumsum(sizes)
        kw.update(group_type=2, group_list_type=int(gl is sizes), group_list=gl.astype(np.int64))
    else:
        cuts = np.sort(rng.integers(0, m + 1, e))
        if data.draw(st.booleans(), "cover all"):
            cuts[-1] = m
        glt = data.draw(st.sampled_from([0, 1]), "group_list_type")
        kw.update(group_list_type=glt, group_list=(cuts if glt == 0 else np.diff(cuts, prepend=0)).astype(np.int64))
    if mode == "a4w4":                            # int4 x and weight, uint64 words per channel / K group, per token
        x = rng.integers(-8, 8, (m, k)).astype(ml_dtypes.int4)
        w = rng.integers(-8, 8, (e, k, n)).astype(ml_dtypes.int4)
        g = data.draw(st.sampled_from([1, 2]), "k groups")
        sc = rng.uniform(1e-3, 1e-1, (e, g, n)).astype(np.float32)
        words = trans_quant_param(sc.reshape(-1)).reshape(e, g, n)
        kw.update(scale=[words[:, 0] if g == 1 and data.draw(st.booleans(), "2-D scale") else words],
                  per_token_scale=[rng.uniform(0.5, 2, m).astype(np.float32)],
                  output_dtype=data.draw(st.sampled_from(["bfloat16", "float16"]), "out"))
        return mode, x, w, kw
    if mode.startswith("w"):
        xt = BF16 if mode.endswith("bf16") else np.dtype(np.float16)
        x = rng.standard_normal((m, k)).astype(xt)
        if mode.startswith("w4"):
            w = rng.integers(-8, 8, (e, k, n)).astype(ml_dtypes.int4)
            shape = (e, data.draw(st.sampled_from([1, 2, 4]), "groups"), n)
        else:
            w = rng.integers(-128, 128, (e, k, n)).astype(np.int8)
            shape = (e, n)
        kw["antiquant_scale"] = [rng.uniform(0.001, 0.1, shape).astype(xt)]
        kw["antiquant_offset"] = [rng.uniform(-4, 4, shape).astype(xt)]
        if data.draw(st.booleans(), "bias"):
            kw["bias"] = [rng.uniform(-2, 2, (e, n)).astype(np.float32 if xt == BF16 else np.float16)]
        return mode, x, w, kw
    kw["soc"] = A5
    ft = ml_dtypes.float4_e2m1fn if mode == "mxfp4" else data.draw(
        st.sampled_from([ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2]), "fp8")
    x = rng.standard_normal((m, k)).astype(ft)
    code = lambda shape: rng.integers(118, 136, shape).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    if mode == "mxfp8_k":
        w = rng.standard_normal((k, n)).astype(ft)
        rows = k // 64 + e
        kw.update(scale=[code((rows, n, 2))], per_token_scale=[code((m, rows, 2))])
    else:
        w = rng.standard_normal((e, k, n)).astype(ft)
        kp = -(-k // 64)
        kw.update(scale=[code((e, kp, n, 2))], per_token_scale=[code((m, kp, 2))])
    kw["output_dtype"] = data.draw(st.sampled_from(["bfloat16", "float16", "float32"]), "out")
    if mode == "mxfp4" and data.draw(st.booleans(), "bias"):
        kw["bias"] = [rng.uniform(-2, 2, (e, n)).astype(np.float32)]
    return mode, x, w, kw


def _golden(mode, x, w, kw):
    one = lambda name: None if kw.get(name) is None else np.asarray(kw[name][0])
    if mode == "a4w4":
        return golden_a4w4.grouped_matmul_a4w4(x, w, one("scale"), one("per_token_scale"), kw["group_list"],
                                               group_list_type=kw["group_list_type"], out_dtype=kw["output_dtype"])
    if mode.startswith("w"):
        name = "bfloat16" if x.dtype == BF16 else "float16"
        wq = golden_modes.antiquant_weight(w, one("antiquant_scale"), one("antiquant_offset"), name)
        return golden.grouped_matmul_float(x, wq, kw["group_list"], group_list_type=kw["group_list_type"],
                                           bias=one("bias"))
    return golden_modes.grouped_matmul_mx(x, w, one("scale"), one("per_token_scale"), kw["group_list"],
                                          group_list_type=kw["group_list_type"], group_type=kw["group_type"],
                                          out_dtype=kw["output_dtype"], bias=one("bias"))


def _fuzz_gmm_modes(data):
    mode, x, w, kw = _case(data)
    m, k = x.shape
    mutation = data.draw(st.sampled_from(MUTATIONS), "mutation")
    want_error, codes = False, None
    gl = kw["group_list"]
    aq = mode.startswith("w")
    if mutation == "aq_offset_none" and aq:
        kw["antiquant_offset"] = None
        want_error, codes = True, {161002}
    elif mutation == "aq_dtype" and aq:
        kw["antiquant_scale"] = [np.asarray(kw["antiquant_scale"][0]).astype(np.float32)]
        want_error, codes = True, {161002}
    elif mutation == "aq_dtype" and mode == "a4w4":                     # a float32 scale: A4W4 wants uint64 words
        kw["scale"] = [np.asarray(kw["scale"][0]).astype(np.float32)]
        want_error, codes = True, {161002}
    elif mutation == "mx_bias" and mode.startswith("mxfp8"):
        kw["bias"] = [np.zeros((w.shape[0] if w.ndim == 3 else len(gl), w.shape[-1]), np.float32)]
        want_error, codes = True, {161002}
    elif mutation == "pt_none" and not aq:
        kw["per_token_scale"] = None
        want_error, codes = True, {161002}
    elif mutation == "scale_k" and mode.startswith("mx"):
        s = np.asarray(kw["scale"][0])
        kw["scale"] = [np.concatenate([s, s[..., :1, :, :] if s.ndim == 4 else s[:1]], axis=-3)]
        want_error, codes = True, {161002}
    elif mutation == "gl_decreasing" and mode != "mxfp8_k" and len(gl) > 1 and kw["group_list_type"] == 0 \
            and gl[-1] > 0:
        g2 = gl.copy()
        g2[0] = gl[-1] + 1
        kw["group_list"] = g2
        want_error, codes = True, {161002}
    elif mutation == "aq_split_k" and aq:
        kw.update(group_type=2, group_list=np.array([k], np.int64), group_list_type=1)
        w = w[0]
        kw["antiquant_scale"] = [np.asarray(kw["antiquant_scale"][0])[0]]
        kw["antiquant_offset"] = [np.asarray(kw["antiquant_offset"][0])[0]]
        want_error, codes = True, {161002}
    elif mutation == "mx_on_910b" and mode.startswith("mx"):
        kw["soc"] = "ascend910b2"
        want_error, codes = True, {161002}
    args = ([H.readonly(x)], [H.readonly(w)])
    kw = {key: ([None if a is None else H.readonly(np.asarray(a)) for a in v] if isinstance(v, list) else
                H.readonly(v) if isinstance(v, np.ndarray) else v) for key, v in kw.items()}
    outcome = H.call_entry("npu_grouped_matmul", ops.npu_grouped_matmul, args, kw)
    if H.expect(outcome, want_error, "npu_grouped_matmul", codes):
        return
    if want_error is None:
        return
    H.same_bits(outcome[1][0], _golden(mode, x, w, kw), f"npu_grouped_matmul {mode}")


test_fuzz_gmm_modes, test_fuzz_gmm_modes_long = H.fast_and_slow(_fuzz_gmm_modes)
