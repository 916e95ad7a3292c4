"""Fuzz SwiGlu and DequantSwigluQuant: npu_emu.ops.npu_swiglu / npu_dequant_swiglu_quant and the aclnn pairs.

Each example draws a valid call (shape, dtype, dim / group_index form, optional operands, switches, memory layout of
the read-only inputs) and at most one mutation that makes it invalid; the call must then fail with the listed
status or (when valid) return the bits of kernels/swiglu/golden.py / kernels/dequant_swiglu_quant/golden.py.
"""

import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.dequant_swiglu_quant import golden as dsq_golden
from npu_emu.kernels.swiglu import golden as swiglu_golden

SW_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), H.BF16]
SW_SHAPES = [(2,), (1, 2), (3, 8), (4, 6, 10), (2, 3, 64), (5, 130), (7, 1, 4), (0, 8), (33, 96)]
CORE_NUMS = [None, 1, 3, 48]
UB_SIZES = [None, 2048, 196352]
SW_MUTATIONS = ["none"] * 10 + ["x_none", "x_dtype", "odd", "dim", "exp_model", "div_model"]


def _sw_case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    shape = data.draw(st.sampled_from(SW_SHAPES), "shape")
    dt = data.draw(st.sampled_from(SW_DTYPES), "dtype")
    nd = len(shape)
    even = [d - nd for d in range(nd) if shape[d] % 2 == 0]          # the split axis itself must be even
    dim = data.draw(st.sampled_from(even or [-1]), "dim")
    if data.draw(st.booleans(), "positive dim"):
        dim += nd
    special = data.draw(st.sampled_from([0.0, 0.0, 0.05, 0.5]), "special share")
    x = H.float_values(rng, shape, dt, special_frac=special, scale_exp=(-6, 6))
    how = data.draw(st.sampled_from(["c", "strided", "negative", "fortran"]), "layout")
    kw = dict(core_num=data.draw(st.sampled_from(CORE_NUMS), "core_num"),
              ub_size=data.draw(st.sampled_from(UB_SIZES), "ub_size"),
              exp_model=data.draw(st.sampled_from(["correctly_rounded", "exp2"]), "exp_model"),
              div_model=data.draw(st.sampled_from(["ieee", "reciprocal"]), "div_model"))
    want_error, codes = (None if kw["ub_size"] == 2048 else False), None
    mutation = data.draw(st.sampled_from(SW_MUTATIONS), "mutation")
    xin = H.layout(x, how)
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        wrong = data.draw(st.sampled_from([d for d in H.WRONG_DTYPES if d not in SW_DTYPES]), "x dtype")
        xin, want_error, codes = H.readonly(H.as_dtype(x, wrong)), True, {161002}
    elif mutation == "odd":
        odd = tuple(shape[:-1]) + (3,)
        x = H.float_values(rng, odd, dt)
        xin, dim, want_error, codes = H.readonly(x), -1, True, {161002}
    elif mutation == "dim":
        dim, want_error = data.draw(st.sampled_from([nd, -nd - 1, 99, 1.5, "1", None]), "bad dim"), True
    elif mutation in ("exp_model", "div_model"):
        kw[mutation] = data.draw(st.sampled_from(["ieee754", None, 1, "CORRECTLY"]), "bad model")
        want_error, codes = True, {161002}
    return x, xin, dim, kw, want_error, codes


def _fuzz_swiglu_ops(data):
    x, xin, dim, kw, want_error, codes = _sw_case(data)
    out = H.call_entry("npu_swiglu", ops.npu_swiglu, (xin, dim), kw)
    if not H.expect(out, want_error, "npu_swiglu", codes):
        want = swiglu_golden.swiglu(x, dim, exp_model=kw["exp_model"], div_model=kw["div_model"])
        H.same_bits(out[1], want, "npu_swiglu", nan_dtype=x.dtype)


def _fuzz_swiglu_aclnn(data):
    x, xin, dim, kw, want_error, codes = _sw_case(data)
    ok = xin is not None and isinstance(dim, int) and -x.ndim <= dim < x.ndim and want_error is not True
    if ok:
        split = dim % x.ndim
        shape = x.shape[:split] + (x.shape[split] // 2,) + x.shape[split + 1:]
    else:
        shape = x.shape
    out = H.sentinel_like(shape, x.dtype)
    mut = data.draw(st.sampled_from(["ok"] * 6 + ["none", "dtype", "shape"]), "out mutation")
    if mut != "ok":
        codes = None
    if mut == "none":
        out, want_error = None, True
    elif mut == "dtype":
        out = H.sentinel_like(shape, np.float64)
        want_error = True
    elif mut == "shape":
        out = H.sentinel_like(shape + (2,), x.dtype)
        want_error = True
    res = H.call_aclnn("aclnnSwiGlu", (xin, dim, out), kw, outs=() if out is None else (out,))
    if not H.expect(res, want_error, "aclnnSwiGlu", codes):
        want = swiglu_golden.swiglu(x, dim, exp_model=kw["exp_model"], div_model=kw["div_model"])
        H.same_bits(out, want, "aclnnSwiGlu", nan_dtype=x.dtype)


# ---------------------------------------------------------------------------------------------------------------
# DequantSwigluQuant
# ---------------------------------------------------------------------------------------------------------------

DSQ_MUTATIONS = ["none"] * 12 + ["x_none", "x_dtype", "x_bf16", "ws_none", "ws_shape", "asc_size", "gi_dtype",
                                 "gi_sum", "quant_mode", "swiglu_mode", "last_dim"]


def _dsq_case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    grouped = data.draw(st.booleans(), "group_index")
    T = data.draw(st.sampled_from([0, 1, 3, 16, 41]), "tokens")
    D = data.draw(st.sampled_from([64, 128, 256] if grouped else [2, 64, 70, 128, 256]), "2H")
    E = data.draw(st.sampled_from([1, 2, 5]), "groups") if grouped else 1
    x = rng.integers(-(2 ** 31), 2 ** 31, (T, D), dtype=np.int64).astype(np.int32) if data.draw(
        st.booleans(), "full int32 range") else rng.integers(-5000, 5000, (T, D), dtype=np.int32)
    ws = (rng.random((E, D) if grouped else (D,)) * 1e-3 * data.draw(st.sampled_from([1.0, 1e-30, 1e30]), "ws mag")
          ).astype(np.float32)
    asc = (rng.random(T) * 0.1).astype(np.float32) if data.draw(st.booleans(), "activation_scale") else None
    bias_dt = data.draw(st.sampled_from([None, "int32", "float32", "float16"]), "bias")
    bias = None
    if bias_dt == "int32":
        bias = rng.integers(-1000, 1000, ws.shape).astype(np.int32)
    elif bias_dt:
        bias = rng.standard_normal(ws.shape).astype(bias_dt)
    qs = qo = None
    static = data.draw(st.booleans(), "static quant")
    if static:                     # [G] / [G, H] with groups (fp32 / fp16 scales), [1] / [H] / none without
        per_ch = data.draw(st.booleans(), "per-channel static")
        if grouped or data.draw(st.booleans(), "static quant_scale"):
            n = D // 2 if per_ch else 1
            shape = ((E, n) if per_ch else (E,)) if grouped else (n,)
            qdt = data.draw(st.sampled_from([np.float32, np.float16]), "static dtype") if grouped else np.float32
            qs = (rng.random(shape) * 0.2 + 0.01).astype(qdt)
            qo = rng.integers(-5, 5, shape).astype(qdt)
    elif data.draw(st.booleans(), "quant_scale"):
        qs = (rng.random((E, D // 2) if grouped else (D // 2,)) + 0.5).astype(np.float32)
    gi = None
    if grouped:
        cuts = np.sort(rng.integers(0, T + 1, E - 1)) if E > 1 else np.array([], np.int64)
        counts = np.diff(np.concatenate([[0], cuts, [rng.integers(0, T + 1) if T else 0]]))
        gi = np.maximum(counts, 0).astype(np.int64)
        if gi.sum() > T:
            gi[-1] = max(T - gi[:-1].sum(), 0)
    kw = dict(weight_scale=ws, activation_scale=asc, bias=bias, quant_scale=qs, quant_offset=qo, group_index=gi,
              activate_left=data.draw(st.booleans(), "activate_left"), quant_mode=0 if static else 1,
              exp_model=data.draw(st.sampled_from(["correctly_rounded", "exp2"]), "exp_model"),
              div_model=data.draw(st.sampled_from(["ieee", "reciprocal"]), "div_model"))
    want_error, codes = False, None
    mutation = data.draw(st.sampled_from(DSQ_MUTATIONS), "mutation")
    xin = H.layout(x, data.draw(st.sampled_from(["c", "strided", "negative"]), "layout"))
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        xin, want_error, codes = H.readonly(x.astype(np.float32)), True, {161002}
    elif mutation == "x_bf16" and grouped:
        xin, want_error, codes = H.readonly(x.astype(H.BF16)), True, {561003}
    elif mutation == "x_bf16":     # without group_index: the 16-bit x kernels (no dequant; scales, bias ignored)
        x = x.astype(data.draw(st.sampled_from([H.BF16, np.float16]), "16-bit x"))
        xin = H.readonly(x)
    elif mutation == "ws_none" and grouped and static:
        kw["quant_offset"], want_error, codes = None, True, {161002}
    elif mutation == "ws_none":
        kw["weight_scale"], want_error, codes = None, True, {161002}
    elif mutation == "ws_shape":
        kw["weight_scale"], want_error, codes = ws[..., : D // 2], True, {161002}
    elif mutation == "asc_size":
        kw["activation_scale"], want_error, codes = np.ones(T + 1, np.float32), True, {161002}
    elif mutation == "gi_dtype" and grouped:
        kw["group_index"], want_error, codes = gi.astype(np.int32), True, {161002}
    elif mutation == "gi_sum" and grouped:
        g2 = gi.copy()
        g2[0] += T + 1
        kw["group_index"], want_error, codes = g2, True, {161002}
    elif mutation == "quant_mode":
        kw["quant_mode"], want_error = data.draw(st.sampled_from([2, -1]), "bad quant_mode"), True
    elif mutation == "swiglu_mode":
        kw["swiglu_mode"] = 5
        want_error = True
    elif mutation == "last_dim":
        xin, want_error, codes = H.readonly(x[:, :-1] if D > 2 else x[:, :1]), True, None
    if want_error is True and codes is None:
        pass
    if T == 0 and want_error is not True:
        want_error = None
    return x, xin, kw, want_error, codes


def _dsq_golden(x, kw):
    if kw["group_index"] is None:
        return dsq_golden.dequant_swiglu_quant_nogroup(
            x, kw["weight_scale"], kw["activation_scale"], bias=kw["bias"], quant_scale=kw["quant_scale"],
            quant_offset=kw["quant_offset"], quant_mode=kw["quant_mode"], activate_left=kw["activate_left"],
            exp_model=kw["exp_model"], div_model=kw["div_model"])
    f32 = (lambda a: None if a is None else np.asarray(a, np.float32))
    return dsq_golden.dequant_swiglu_quant(
        x, kw["weight_scale"], kw["activation_scale"], bias=kw["bias"], quant_scale=f32(kw["quant_scale"]),
        quant_offset=f32(kw["quant_offset"]), group_index=kw["group_index"], activate_left=kw["activate_left"],
        quant_mode=kw["quant_mode"], exp_model=kw["exp_model"], div_model=kw["div_model"])


def _fuzz_dsq_ops(data):
    x, xin, kw, want_error, codes = _dsq_case(data)
    out = H.call_entry("npu_dequant_swiglu_quant", ops.npu_dequant_swiglu_quant, (xin,), kw)
    if not H.expect(out, want_error, "npu_dequant_swiglu_quant", codes):
        gy, gs = _dsq_golden(x, kw)
        H.same_bits(out[1][0], gy, "npu_dequant_swiglu_quant y")
        H.same_bits(out[1][1], gs, "npu_dequant_swiglu_quant scale", nan_dtype=np.float32)


def _fuzz_dsq_aclnn(data):
    x, xin, kw, want_error, codes = _dsq_case(data)
    T, D = x.shape
    y = H.sentinel_like((T, D // 2), np.int8)
    s = H.sentinel_like((T,), np.float32)
    mut = data.draw(st.sampled_from(["ok"] * 6 + ["y_dtype", "s_size"]), "out mutation")
    if mut != "ok":
        codes, want_error = None, True
    if mut == "y_dtype":
        y = H.sentinel_like((T, D // 2), np.int16)
    elif mut == "s_size":
        s = H.sentinel_like((T + 1,), np.float32)
    qm = {1: "dynamic", 0: "static"}.get(kw["quant_mode"], kw["quant_mode"])
    args = (xin, kw["weight_scale"], kw["activation_scale"], kw["bias"], kw["quant_scale"], kw["quant_offset"],
            kw["group_index"], kw["activate_left"], qm, 2, None, -1, kw.get("swiglu_mode", 0), 7.0, 1.702, 1.0, y, s)
    res = H.call_aclnn("aclnnDequantSwigluQuantV2", args, dict(exp_model=kw["exp_model"], div_model=kw["div_model"]),
                       outs=(y, s))
    if not H.expect(res, want_error, "aclnnDequantSwigluQuantV2", codes):
        gy, gs = _dsq_golden(x, kw)
        if kw["group_index"] is not None:       # rows no group covers: not written (undefined on the device)
            n = int(min(kw["group_index"].sum(), T))
            y, gy, s, gs = y[:n], gy[:n], s[:n], gs[:n]
        H.same_bits(y, gy, "aclnnDequantSwigluQuantV2 y")
        H.same_bits(s, gs, "aclnnDequantSwigluQuantV2 scale", nan_dtype=np.float32)


test_fuzz_swiglu_ops, test_fuzz_swiglu_ops_long = H.fast_and_slow(_fuzz_swiglu_ops)
test_fuzz_swiglu_aclnn, test_fuzz_swiglu_aclnn_long = H.fast_and_slow(_fuzz_swiglu_aclnn)
test_fuzz_dsq_ops, test_fuzz_dsq_ops_long = H.fast_and_slow(_fuzz_dsq_ops)
test_fuzz_dsq_aclnn, test_fuzz_dsq_aclnn_long = H.fast_and_slow(_fuzz_dsq_aclnn)
