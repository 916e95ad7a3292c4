"""Fuzz DynamicMxQuantWithDualAxis: npu_dynamic_mx_quant_with_dual_axis and aclnnDynamicMxQuantWithDualAxis[V2].

Valid calls are drawn from the combinations the op allows (docs/ops/dynamic_mx_quant_with_dual_axis.md): x fp16 /
bf16 values with NaN, Inf, -0.0 and subnormals, ranks 2-4 with odd and tiny dims and empty shapes, every destination
format with its round modes, scale algorithms and dst_type_max, core_num / ub_size and the codec switches. At most
one mutation makes the call invalid (None tensors, wrong dtypes, bad attributes, ranks, SoCs, mismatched outputs).
Golden: kernels/dynamic_mx_quant_with_dual_axis/golden.py.
"""

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import golden

TORCH_CODES = {23: "float8_e5m2", 24: "float8_e4m3fn", 291: "float8_e5m2", 292: "float8_e4m3fn",
               296: "float4_e2m1", 297: "float4_e1m2"}
ACL = {"float8_e5m2": 35, "float8_e4m3fn": 36, "float4_e2m1": 40, "float4_e1m2": 41}
FP4 = ("float4_e2m1", "float4_e1m2")
ML_FP8 = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
X_DTYPES = {"float16": np.float16, "bfloat16": H.BF16}
HOME = "npu_emu.kernels.dynamic_mx_quant_with_dual_axis.api"
MUTATIONS = ["none"] * 8 + ["x_none", "x_dtype", "dst_type", "round_mode", "scale_alg", "dst_type_max", "rank",
                            "switch", "soc"]


def _x_values(rng, data, shape, x_name):
    kind = data.draw(st.sampled_from(["normal", "wide", "specials", "bits", "zeros"]), "value kind")
    dt = X_DTYPES[x_name]
    if kind == "bits":
        return H.random_bits(rng, shape, dt)
    if kind == "zeros":
        z = np.zeros(shape, dt)
        if z.size:
            z.reshape(-1)[rng.random(z.size) < 0.5] = -z.dtype.type(0)
        return z
    wide = (-140, 127) if x_name != "float16" else (-24, 15)
    return H.float_values(rng, shape, dt, special_frac={"specials": 0.2}.get(kind, 0.0),
                          scale_exp=wide if kind in ("wide", "specials") else (-4, 6))


def _case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    x_name = data.draw(st.sampled_from(sorted(X_DTYPES)), "x dtype")
    code = data.draw(st.sampled_from(sorted(TORCH_CODES)), "dst_type")
    y_name = TORCH_CODES[code]
    rank = data.draw(st.integers(2, 4), "rank")
    dims = [data.draw(st.sampled_from([1, 2, 3]), f"batch{i}") for i in range(rank - 2)]
    dims += [data.draw(st.sampled_from([1, 2, 31, 33, 64, 65, 130]), "m"),
             data.draw(st.sampled_from([2, 30, 32, 34, 64, 66, 258, 300]), "n")]
    if data.draw(st.integers(0, 9), "empty roll") == 0:
        dims[data.draw(st.integers(0, rank - 1), "empty dim")] = 0
    shape = tuple(dims)
    x = _x_values(rng, data, shape, x_name)
    round_mode = "rint" if y_name not in FP4 else data.draw(st.sampled_from(["rint", "round", "floor"]), "round")
    algs = {"float8_e4m3fn": [0, 1], "float8_e5m2": [0, 1], "float4_e2m1": [0, 2], "float4_e1m2": [0]}[y_name]
    scale_alg = data.draw(st.sampled_from(algs), "scale_alg")
    dst_type_max = 0.0
    if y_name == "float4_e2m1" and scale_alg == 2:
        dst_type_max = data.draw(st.sampled_from([0.0, 6.0, 7.0, 9.5, 12.0]), "dst_type_max")
    kw = dict(round_mode=round_mode, dst_type=code, scale_alg=scale_alg, dst_type_max=dst_type_max,
              signed_zero=data.draw(st.booleans(), "signed_zero"),
              fp4_nibble_order=data.draw(st.sampled_from(["low_first", "high_first"]), "nibble order"),
              core_num=data.draw(st.sampled_from([None, 1, 3, 64]), "core_num"),
              ub_size=data.draw(st.sampled_from([None, None, 65536, 1024]), "ub_size"))
    xin = H.layout(x, data.draw(st.sampled_from(["c", "strided", "fortran", "negative", "broadcast"]), "layout"))
    want_error, codes = False, None
    if kw["ub_size"] is not None:
        want_error = None                      # a UB too small for one 64 x 256 task is a tiling error
    mutation = data.draw(st.sampled_from(MUTATIONS), "mutation")
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        bad = [d for d in H.WRONG_DTYPES if d not in X_DTYPES.values()]
        xin, want_error, codes = H.readonly(H.as_dtype(x, data.draw(st.sampled_from(bad), "bad x dtype"))), True, \
            {161002}
    elif mutation == "dst_type":
        kw["dst_type"], want_error = data.draw(st.sampled_from([35, 36, 40, 0, 1, -1, None, "float8", 25]),
                                               "bad dst_type"), True
    elif mutation == "round_mode":
        kw["round_mode"] = data.draw(st.sampled_from(["ceil", "trunc", "RINT", "hybrid", 1, ""]
                                                     + (["round", "floor"] if y_name not in FP4 else [])), "bad rm")
        want_error = True
    elif mutation == "scale_alg":
        bad = [a for a in (1, 2, 3, -1) if a not in algs] + [None, 0.5]
        kw["scale_alg"], want_error = data.draw(st.sampled_from(bad), "bad scale_alg"), True
    elif mutation == "dst_type_max":
        kw["dst_type_max"] = data.draw(st.sampled_from([5.9, 12.5, -6.0, float("nan"), float("inf"), "6", None]),
                                       "bad dst_type_max")
        want_error = True
    elif mutation == "rank":
        v = x.reshape(-1)[:1] if x.size else np.zeros(1, x.dtype)
        xin = H.readonly(v.reshape(1) if data.draw(st.booleans(), "1-d") else
                         np.broadcast_to(v, (1,) * 7 + (2,)).copy())
        want_error = True
    elif mutation == "switch":
        key = data.draw(st.sampled_from(["signed_zero", "fp4_nibble_order"]), "switch")
        kw[key] = {"signed_zero": 1, "fp4_nibble_order": "low"}[key]
        want_error, codes = True, {161002}
    elif mutation == "soc":
        kw["soc"] = data.draw(st.sampled_from(["ascend910b2", "ascend310p", "kirin9020", "bad"]), "soc")
        want_error = True
    return x, xin, y_name, kw, want_error, codes


def _golden(x, y_name, kw):
    return golden.dual_axis_quant(x, y_name, round_mode=kw["round_mode"], scale_alg=kw["scale_alg"],
                                  dst_type_max=kw["dst_type_max"], signed_zero=kw["signed_zero"],
                                  fp4_nibble_order=kw["fp4_nibble_order"])


def _fuzz_dual_ops(data):
    fn = H.public(ops, "npu_dynamic_mx_quant_with_dual_axis", HOME)
    x, xin, y_name, kw, want_error, codes = _case(data)
    outcome = H.call_entry("npu_dynamic_mx_quant_with_dual_axis", fn, (xin,), kw)
    if H.expect(outcome, want_error, "npu_dynamic_mx_quant_with_dual_axis", codes) or x.size == 0:
        return
    for name, got, want in zip(("y1", "mxscale1", "y2", "mxscale2"), outcome[1], _golden(x, y_name, kw)):
        H.same_bits(np.asarray(got).view(np.uint8), want, f"npu_dynamic_mx_quant_with_dual_axis {name}")


def _fuzz_dual_aclnn(data):
    x, xin, y_name, kw, want_error, codes = _case(data)
    version = data.draw(st.sampled_from(["", "V2"]), "aclnn version")
    entry = f"aclnnDynamicMxQuantWithDualAxis{version}"
    if kw["scale_alg"] == 2 and version == "":
        want_error = True
    if kw["dst_type_max"] != 0.0 and version == "":
        kw["dst_type_max"] = 0.0
        want_error = None if want_error else want_error
    code = kw.pop("dst_type")
    dst = ACL.get(TORCH_CODES.get(code) if isinstance(code, int) else None, code)
    relaxed = code in ACL.values() and want_error
    if relaxed:
        want_error = None       # a torch-level bad dst_type that is an aclDataType code: valid here if it fits y
    shape = x.shape
    if y_name in FP4:
        ys = [H.sentinel_like(shape[:-1] + (shape[-1] // 2,), np.uint8) for _ in range(2)]
        label = ACL[y_name]
    else:
        ys = [H.sentinel_like(shape, ML_FP8[y_name]) for _ in range(2)]
        label = None
    from npu_emu.kernels.dynamic_mx_quant_with_dual_axis.checks import scale_shapes

    s1_shape, s2_shape = scale_shapes(shape)
    ss = [H.sentinel_like(s1_shape, np.uint8), H.sentinel_like(s2_shape, np.uint8)]
    out_mut = data.draw(st.sampled_from(["ok"] * 5 + ["y1_none", "s2_none", "y2_shape", "s1_shape", "s2_dtype"]),
                        "out mutation")
    if out_mut != "ok" and want_error is not False:
        codes = None                               # two mutations: which check fires first is CANN's order
    if out_mut == "y1_none":
        ys[0], want_error = None, True
    elif out_mut == "s2_none":
        ss[1], want_error = None, True
    elif out_mut == "y2_shape":
        ys[1], want_error = H.sentinel_like(ys[1].shape[:-1] + (ys[1].shape[-1] + 2,), ys[1].dtype), True
    elif out_mut == "s1_shape":
        ss[0], want_error = H.sentinel_like(s1_shape[:-1] + (3,), np.uint8), True
    elif out_mut == "s2_dtype":
        ss[1], want_error = H.sentinel_like(s2_shape, np.float32), True
    args = [xin, kw.pop("round_mode"), dst, kw.pop("scale_alg")]
    dtm = kw.pop("dst_type_max")
    if version == "V2":
        args.append(dtm)
    args += [ys[0], ss[0], ys[1], ss[1]]
    outs = tuple(o for o in (ys[0], ss[0], ys[1], ss[1]) if isinstance(o, np.ndarray))
    res = H.call_aclnn(entry, tuple(args), dict(kw, y_dtype=label), outs=outs, home=HOME)
    if H.expect(res, want_error, entry, codes) or relaxed or x.size == 0:
        return
    want = _golden(x, y_name, dict(kw, round_mode=args[1] or "rint", scale_alg=args[3], dst_type_max=dtm))
    for name, got, w in zip(("y1", "mxscale1", "y2", "mxscale2"), (ys[0], ss[0], ys[1], ss[1]), want):
        H.same_bits(np.asarray(got).view(np.uint8), w, f"{entry} {name}")


test_fuzz_dual_ops, test_fuzz_dual_ops_long = H.fast_and_slow(_fuzz_dual_ops)
test_fuzz_dual_aclnn, test_fuzz_dual_aclnn_long = H.fast_and_slow(_fuzz_dual_aclnn)
