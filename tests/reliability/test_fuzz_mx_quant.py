"""Fuzz DynamicMxQuant and GroupedDynamicMxQuant: the torch_npu-style functions and every aclnn version.

Valid calls are drawn from the combinations the ops allow (docs/ops/mx_quant.md §3.2, §4.1): x fp16 / bf16 / fp32
values with NaN, Inf, -0.0 and subnormals, every destination format and its round modes and scale algorithms, block
sizes, axes, ranks 1-3, empty shapes, core_num / ub_size, CANN versions and the behaviour switches; grouped calls draw
cumulative group END offsets including empty groups. At most one mutation makes the call invalid (None tensors,
wrong dtypes, bad attributes, out-of-range / decreasing group offsets, mismatched outputs). Golden:
kernels/mx_quant/golden.py. Entries that are not exported yet are skipped (they appear in npu_emu.ops / .aclnn as
the MX work lands).
"""

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.mx_quant import golden as golden

TORCH_CODES = {23: "float8_e5m2", 24: "float8_e4m3fn", 291: "float8_e5m2", 292: "float8_e4m3fn",
               296: "float4_e2m1", 297: "float4_e1m2"}
ACL = {"float8_e5m2": 35, "float8_e4m3fn": 36, "float4_e2m1": 40, "float4_e1m2": 41}
FP4 = ("float4_e2m1", "float4_e1m2")
ML_FP8 = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
X_DTYPES = {"float16": np.float16, "bfloat16": H.BF16, "float32": np.float32}
VERSIONS = ["master", "master", "9.1.0", "9.0.1", "9.0.0"]


HOME = "npu_emu.kernels.mx_quant.api"


def _need(module, name):
    return H.public(module, name, HOME)


def _x_values(rng, data, shape, x_name):
    kind = data.draw(st.sampled_from(["normal", "wide", "specials", "bits", "constant", "zeros"]), "value kind")
    dt = X_DTYPES[x_name]
    if kind == "bits":
        return H.random_bits(rng, shape, dt)
    if kind == "zeros":
        z = np.zeros(shape, dt)
        if z.size:
            z.reshape(-1)[rng.random(z.size) < 0.5] = -z.dtype.type(0)
        return z
    wide = (-140, 127) if x_name != "float16" else (-24, 15)
    x = H.float_values(rng, shape, dt, special_frac={"specials": 0.2}.get(kind, 0.0),
                       scale_exp=wide if kind in ("wide", "specials") else (-4, 6))
    if kind == "constant" and x.size:
        x[...] = x.reshape(-1)[0]
    return x


# ---------------------------------------------------------------------------------------------------------------
# DynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

DYN_MUTATIONS = ["none"] * 8 + ["x_none", "x_dtype", "axis", "dst_type", "block_size", "round_mode", "scale_alg",
                                "dst_type_max", "max_low_bound", "rank", "switch", "soc"]


def _dyn_case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    x_name = data.draw(st.sampled_from(sorted(X_DTYPES)), "x dtype")
    code = data.draw(st.sampled_from(sorted(TORCH_CODES)), "dst_type")
    y_name = TORCH_CODES[code]
    rank = data.draw(st.integers(1, 3), "rank")
    dims = [data.draw(st.sampled_from([1, 2, 3, 32, 33, 64, 70]), f"dim{i}") for i in range(rank)]
    axis = data.draw(st.integers(-rank, rank - 1), "axis")
    ax = axis % rank
    block = 32 if x_name == "float32" else data.draw(st.sampled_from([32, 32, 64, 96, 1024]), "block_size")
    if x_name == "float32" and dims[ax] < 32:
        dims[ax] = data.draw(st.sampled_from([32, 33, 70]), "fp32 axis dim")
    if y_name in FP4 and dims[-1] % 2:
        dims[-1] += 1
    if data.draw(st.integers(0, 9), "empty roll") == 0:
        dims[data.draw(st.integers(0, rank - 1), "empty dim")] = 0
    shape = tuple(dims)
    x = _x_values(rng, data, shape, x_name)
    round_mode = "rint" if y_name not in FP4 else data.draw(st.sampled_from(["rint", "round", "floor"]), "round")
    algs = {"float8_e4m3fn": [0, 1], "float8_e5m2": [0, 1], "float4_e2m1": [0, 2], "float4_e1m2": [0]}[y_name]
    scale_alg = data.draw(st.sampled_from(algs if block == 32 else [0] + [a for a in algs if a == 1]), "scale_alg")
    dst_type_max = 0.0
    if y_name == "float4_e2m1" and block == 32:
        dst_type_max = data.draw(st.sampled_from([0.0, 0.0, 6.0, 7.0, 9.5, 12.0]), "dst_type_max")
    max_low_bound = data.draw(st.sampled_from([0.0, 1e-30, 0.5, 3.0]), "max_low_bound") if scale_alg == 1 else 0.0
    kw = dict(axis=axis, round_mode=round_mode, dst_type=code, block_size=block, scale_alg=scale_alg,
              dst_type_max=dst_type_max, max_low_bound=max_low_bound,
              cann_version=data.draw(st.sampled_from(VERSIONS), "cann_version"),
              signed_zero=data.draw(st.booleans(), "signed_zero"), ftz=data.draw(st.booleans(), "ftz"),
              fp4_nibble_order=data.draw(st.sampled_from(["low_first", "high_first"]), "nibble order"),
              core_num=data.draw(st.sampled_from([None, 1, 3, 64]), "core_num"),
              ub_size=data.draw(st.sampled_from([None, None, 65536]), "ub_size"))
    how = data.draw(st.sampled_from(["c", "strided", "fortran", "negative", "broadcast"]), "layout")
    xin = H.layout(x, how)
    want_error, codes = False, None
    if kw["ub_size"] is not None or kw["core_num"] is not None:
        want_error = None                      # a small UB may not fit a large block: a tiling error is allowed
    mutation = data.draw(st.sampled_from(DYN_MUTATIONS), "mutation")
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        bad = [d for d in H.WRONG_DTYPES if d not in X_DTYPES.values()]
        xin, want_error, codes = H.readonly(H.as_dtype(x, data.draw(st.sampled_from(bad), "bad x dtype"))), True, \
            {161002}
    elif mutation == "axis":
        kw["axis"], want_error = data.draw(st.sampled_from([rank, -rank - 1, 99, None, 0.0, "0"]), "bad axis"), True
    elif mutation == "dst_type":
        kw["dst_type"], want_error = data.draw(st.sampled_from([35, 36, 40, 0, 1, -1, None, "float8", 25]),
                                               "bad dst_type"), True
    elif mutation == "block_size":
        kw["block_size"], want_error = data.draw(st.sampled_from([0, 16, 33, 2048, -32, None, 32.0]), "bad bs"), True
    elif mutation == "round_mode":
        kw["round_mode"] = data.draw(st.sampled_from(["ceil", "trunc", "RINT", "hybrid", 1, ""]
                                                     + (["round", "floor"] if y_name not in FP4 else [])), "bad rm")
        want_error = True
    elif mutation == "scale_alg":
        bad = [a for a in (1, 2, 3, -1) if a not in algs] + [None, 0.5]
        kw["scale_alg"], want_error = data.draw(st.sampled_from(bad), "bad scale_alg"), True
    elif mutation == "dst_type_max":
        kw["dst_type_max"] = data.draw(st.sampled_from([5.9, 12.5, -6.0, float("nan"), float("inf"), "6", None]
                                                       + ([6.0] if y_name != "float4_e2m1" or block != 32 else [])),
                                       "bad dst_type_max")
        want_error = True
    elif mutation == "max_low_bound":
        kw["max_low_bound"] = data.draw(st.sampled_from([-1.0, float("nan"), float("-inf"), None]
                                                        + ([0.5] if scale_alg != 1 else [])), "bad max_low_bound")
        want_error = True
    elif mutation == "rank":
        v = x.reshape(-1)[:1] if x.size else np.zeros(1, x.dtype)
        xin = H.readonly(v.reshape(()) if data.draw(st.booleans(), "0-d") else
                         np.broadcast_to(v, (1,) * 7 + (2,)).copy())
        want_error = True
    elif mutation == "switch":
        key = data.draw(st.sampled_from(["cann_version", "signed_zero", "ftz", "fp4_nibble_order"]), "switch")
        kw[key] = {"cann_version": "9.2.0", "signed_zero": 1, "ftz": "no", "fp4_nibble_order": "low"}[key]
        want_error, codes = True, {161002}
    elif mutation == "soc":
        kw["soc"] = data.draw(st.sampled_from(["ascend910b2", "ascend310p", "kirin9020", "bad"]), "soc")
        want_error = True
    return x, xin, x_name, y_name, kw, want_error, codes


def _dyn_golden(x, x_name, y_name, kw):
    return golden.dynamic_mx_quant(x, axis=kw["axis"], x_dtype=x_name, dst_type=y_name, round_mode=kw["round_mode"],
                                   block_size=kw["block_size"], scale_alg=kw["scale_alg"],
                                   dst_type_max=kw["dst_type_max"], max_low_bound=kw["max_low_bound"],
                                   cann_version=kw["cann_version"], signed_zero=kw["signed_zero"], ftz=kw["ftz"],
                                   fp4_nibble_order=kw["fp4_nibble_order"])


def _fuzz_dynamic_ops(data):
    fn = _need(ops, "npu_dynamic_mx_quant")
    x, xin, x_name, y_name, kw, want_error, codes = _dyn_case(data)
    outcome = H.call_entry("npu_dynamic_mx_quant", fn, (xin,), kw)
    if H.expect(outcome, want_error, "npu_dynamic_mx_quant", codes):
        return
    y, s = outcome[1]
    gy, gs = _dyn_golden(x, x_name, y_name, kw)
    H.same_bits(np.asarray(y).view(np.uint8), gy, "npu_dynamic_mx_quant y")
    H.same_bits(s, gs, "npu_dynamic_mx_quant mxscale")


def _aclnn_outs(data, shape, y_name, want_error):
    """(y, mxscale template shape, y_dtype label, want_error) for the aclnn MX entries; y may be mutated."""
    form = data.draw(st.sampled_from(["typed", "uint8"] if y_name not in FP4 else
                                     (["packed", "packed", "unpacked"] if y_name == "float4_e2m1" else ["packed"])),
                     "y form")
    label = None
    if form == "typed":
        y = H.sentinel_like(shape, ML_FP8[y_name])
    elif form == "uint8":
        y, label = H.sentinel_like(shape, np.uint8), data.draw(st.sampled_from([None, ACL[y_name], y_name]), "lbl")
    elif form == "packed":
        y, label = H.sentinel_like(shape[:-1] + (shape[-1] // 2,), np.uint8), ACL[y_name]
    else:
        y = H.sentinel_like(shape, np.uint8) & np.uint8(0xF)
        y = y.view(ml_dtypes.float4_e2m1fn)
    return y, label, form


def _fuzz_dynamic_aclnn(data):
    x, xin, x_name, y_name, kw, want_error, codes = _dyn_case(data)
    version = data.draw(st.sampled_from(["", "V2", "V3"]), "aclnn version")
    entry = f"aclnnDynamicMxQuant{version}"
    if kw["scale_alg"] == 2 and version == "":
        want_error = True
    # attributes this version does not take: dropped, and a mutation of them no longer makes the call invalid
    if kw["dst_type_max"] != 0.0 and version == "":
        kw["dst_type_max"] = 0.0
        want_error = None if want_error else want_error
    if kw["max_low_bound"] != 0.0 and version != "V3":
        kw["max_low_bound"] = 0.0
        want_error = None if want_error else want_error
    code = kw.pop("dst_type")
    dst = ACL.get(TORCH_CODES.get(code) if isinstance(code, int) else None, code)
    relaxed = code in ACL.values() and want_error
    if relaxed:
        want_error = None       # a torch-level bad dst_type that is an aclDataType code: valid here if it fits y
    y, label, form = _aclnn_outs(data, x.shape, y_name, want_error)
    ax = kw["axis"] % x.ndim if isinstance(kw["axis"], int) and -x.ndim <= kw["axis"] < x.ndim else x.ndim - 1
    bs = kw["block_size"] if isinstance(kw["block_size"], int) and kw["block_size"] > 0 else 32
    s_shape = list(x.shape)
    s_shape[ax] = -(-(-(-x.shape[ax] // bs)) // 2)
    s = H.sentinel_like(tuple(s_shape) + (2,), np.uint8)
    out_mut = data.draw(st.sampled_from(["ok"] * 5 + ["y_none", "s_none", "y_shape", "s_shape", "s_dtype",
                                                      "y_strided"]), "out mutation")
    two = out_mut != "ok" and want_error is not False   # two mutations: which check fires first is CANN's order
    if out_mut == "y_none":
        y, want_error, codes = None, True, {161001}
    elif out_mut == "s_none":
        s, want_error, codes = None, True, {161001}
    elif out_mut == "y_shape":
        y, want_error = H.sentinel_like(y.shape[:-1] + (y.shape[-1] + 2,), y.dtype), True
    elif out_mut == "s_shape":
        s, want_error = H.sentinel_like(s.shape[:-1] + (3,), np.uint8), True
    elif out_mut == "s_dtype":
        s, want_error = H.sentinel_like(s.shape, np.float32), True
    elif out_mut == "y_strided":
        y = H.sentinel_like(y.shape[:-1] + (2 * y.shape[-1],), y.dtype)[..., ::2]
        # aclnn: "yOut must be contiguous" for the typed forms; a packed uint8 view may be taken (then compared)
        want_error = None if form == "packed" or y.size < 2 else True     # one element is contiguous anyway
    if two:
        codes = None
    args = [xin, kw.pop("axis"), kw.pop("round_mode"), dst, kw.pop("block_size"), kw.pop("scale_alg")]
    dtm, mlb = kw.pop("dst_type_max"), kw.pop("max_low_bound")
    if version in ("V2", "V3"):
        args.append(dtm)
    if version == "V3":
        args.append(mlb)
    args += [y, s]
    outs = tuple(o for o in (y, s) if isinstance(o, np.ndarray))
    res = H.call_aclnn(entry, tuple(args), dict(kw, y_dtype=label), outs=outs, home=HOME)
    if H.expect(res, want_error, entry, codes) or relaxed:
        return                  # relaxed: another format than the drawn one; no golden drawn for it
    gkw = dict(kw, axis=args[1], round_mode=args[2] or "rint", block_size=args[4], scale_alg=args[5],
               dst_type_max=dtm, max_low_bound=mlb)
    gy, gs = _dyn_golden(x, x_name, y_name, gkw)
    if form == "unpacked":
        gy = golden.unpack_fp4(gy, kw["fp4_nibble_order"])
    H.same_bits(np.asarray(y).view(np.uint8), gy, f"{entry} y")
    H.same_bits(s, gs, f"{entry} mxscale")


# ---------------------------------------------------------------------------------------------------------------
# GroupedDynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

GRP_MUTATIONS = ["none"] * 8 + ["x_none", "gi_none", "x_dtype", "gi_dtype", "gi_values", "gi_empty", "x_ndim",
                                "dst_type", "blocksize", "scale_alg", "gap_fill", "switch", "soc"]


def _group_ends(data, m):
    g = data.draw(st.integers(1, 4), "groups")
    cuts = sorted(data.draw(st.lists(st.integers(0, m), min_size=g - 1, max_size=g - 1), "cuts"))
    return np.array(cuts + [m], np.int32)


def _grp_case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    x_name = data.draw(st.sampled_from(["float16", "bfloat16"]), "x dtype")
    code = data.draw(st.sampled_from(sorted(TORCH_CODES)), "dst_type")
    y_name = TORCH_CODES[code]
    m = data.draw(st.sampled_from([0, 1, 31, 64, 65, 130]), "m")
    n = data.draw(st.sampled_from([1, 2, 16, 32, 34]), "n")
    if y_name in FP4 and n % 2:
        n += 1
    x = _x_values(rng, data, (m, n), x_name)
    gi = _group_ends(data, m)
    version = data.draw(st.sampled_from(VERSIONS), "cann_version")
    legacy = version != "master"          # docs/ops/mx_quant.md §2: Grouped 9.0.0-9.1.0 reject FP4 outputs
    algs = [0] if version != "master" else ({"float4_e2m1": [0, 2], "float4_e1m2": [0, 2]}.get(y_name, [0, 1]))
    scale_alg = data.draw(st.sampled_from(algs), "scale_alg")
    dtm = 0.0
    if version == "master" and scale_alg != 0:
        dtm = data.draw(st.sampled_from({"float4_e2m1": [0.0, 6.0, 7.0, 12.0], "float4_e1m2": [0.0, 1.75, 3.5]}.get(
            y_name, [0.0, 448.0, 1.0])), "dst_type_max")
    round_mode = "rint" if y_name not in FP4 else data.draw(st.sampled_from(["rint", "round", "floor"]), "rm")
    kw = dict(round_mode=round_mode, dst_type=code, blocksize=32, scale_alg=scale_alg, dst_type_max=dtm,
              cann_version=version, gap_fill=data.draw(st.sampled_from([0, 0xFF, 0x7F, None]), "gap_fill"),
              signed_zero=data.draw(st.booleans(), "signed_zero"), ftz=data.draw(st.booleans(), "ftz"),
              nan_in_max=data.draw(st.sampled_from(["propagate", "ignore"]), "nan_in_max"),
              fp4_nibble_order=data.draw(st.sampled_from(["low_first", "high_first"]), "nibble order"),
              core_num=data.draw(st.sampled_from([None, 1, 2, 7]), "core_num"))
    want_error, codes = (True if legacy and y_name in FP4 else False), None
    how = data.draw(st.sampled_from(["c", "strided", "fortran", "negative"]), "layout")
    xin, giin = H.layout(x, how), H.layout(gi, data.draw(st.sampled_from(["c", "strided", "list"]), "gi layout")
                                          .replace("list", "c"))
    mutation = data.draw(st.sampled_from(GRP_MUTATIONS), "mutation")
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "gi_none":
        giin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        bad = [d for d in H.WRONG_DTYPES if d not in (np.float16, H.BF16)]
        xin, want_error = H.readonly(H.as_dtype(x, data.draw(st.sampled_from(bad), "bad x dtype"))), True
    elif mutation == "gi_dtype":
        bad = [d for d in H.WRONG_DTYPES if d != np.int32]
        giin, want_error = H.readonly(H.as_dtype(gi, data.draw(st.sampled_from(bad), "bad gi dtype"))), True
    elif mutation == "gi_values":
        g2 = gi.astype(np.int64)
        how_bad = data.draw(st.sampled_from(["last_short", "last_long", "negative", "decreasing", "huge"]), "gi bad")
        if how_bad == "last_short" and m > 0:
            g2[-1] = m - 1
        elif how_bad == "last_long":
            g2[-1] = m + 1
        elif how_bad == "negative":
            g2[0] = -1
        elif how_bad == "decreasing":
            g2 = np.concatenate([g2[:1] + 1, g2])
            g2[-1] = m
            if m == 0:
                g2[0] = 1
        elif how_bad == "huge":
            g2[0] = 2 ** 31 - 1
        if np.array_equal(g2[:gi.size], gi) and g2.size == gi.size:
            g2[-1] = m + 5
        # the (emulator-added) group_index value checks run on an empty x too (before CANN's empty-x return)
        giin, want_error = H.readonly(g2.astype(np.int32)), True
    elif mutation == "gi_empty":
        giin, want_error = H.readonly(np.zeros(0, np.int32)), True
    elif mutation == "x_ndim":
        xin, want_error = H.readonly(x.reshape(1, m, n) if data.draw(st.booleans(), "3-d") else x.reshape(-1)), True
    elif mutation == "dst_type":
        kw["dst_type"], want_error = data.draw(st.sampled_from([35, 36, 0, -1, None, 2.0]), "bad dst_type"), True
    elif mutation == "blocksize":
        kw["blocksize"], want_error = data.draw(st.sampled_from([64, 16, 0, -32, None]), "bad blocksize"), True
    elif mutation == "scale_alg":
        kw["scale_alg"], want_error = data.draw(st.sampled_from([3, -1, None, 1.0]), "bad scale_alg"), True
    elif mutation == "gap_fill":
        kw["gap_fill"], want_error, codes = data.draw(st.sampled_from([256, -1, True, 1.5, "0"]), "bad gap"), True, \
            {161002}
    elif mutation == "switch":
        key = data.draw(st.sampled_from(["cann_version", "signed_zero", "ftz", "fp4_nibble_order", "nan_in_max"]),
                        "switch")
        kw[key] = {"cann_version": "8.0", "signed_zero": None, "ftz": 0, "fp4_nibble_order": "hi",
                   "nan_in_max": "drop"}[key]
        want_error, codes = True, {161002}
    elif mutation == "soc":
        kw["soc"], want_error = data.draw(st.sampled_from(["ascend910b2", "ascend310p", "bogus"]), "soc"), True
    return x, gi, xin, giin, x_name, y_name, kw, want_error, codes


def _grp_golden(x, gi, x_name, y_name, kw, mxscale_init=None):
    return golden.grouped_dynamic_mx_quant(x, gi, x_dtype=x_name, dst_type=y_name, round_mode=kw["round_mode"],
                                           scale_alg=kw["scale_alg"], dst_type_max=kw["dst_type_max"],
                                           cann_version=kw["cann_version"], gap_fill=kw["gap_fill"],
                                           mxscale_init=mxscale_init, signed_zero=kw["signed_zero"], ftz=kw["ftz"],
                                           nan_in_max=kw["nan_in_max"], fp4_nibble_order=kw["fp4_nibble_order"])


def _fuzz_grouped_ops(data):
    fn = _need(ops, "npu_grouped_dynamic_mx_quant")
    x, gi, xin, giin, x_name, y_name, kw, want_error, codes = _grp_case(data)
    outcome = H.call_entry("npu_grouped_dynamic_mx_quant", fn, (xin, giin), kw)
    if H.expect(outcome, want_error, "npu_grouped_dynamic_mx_quant", codes):
        return
    y, s = outcome[1]
    if gi is None:
        return
    gy, gs = _grp_golden(x, gi, x_name, y_name, kw)
    H.same_bits(np.asarray(y).view(np.uint8), gy, "npu_grouped_dynamic_mx_quant y")
    H.same_bits(s, gs, "npu_grouped_dynamic_mx_quant mxscale")


def _fuzz_grouped_aclnn(data):
    x, gi, xin, giin, x_name, y_name, kw, want_error, codes = _grp_case(data)
    version = data.draw(st.sampled_from(["", "V2"]), "aclnn version")
    entry = f"aclnnGroupedDynamicMxQuant{version}"
    if version == "" and want_error and (kw["scale_alg"] != 0 or kw["dst_type_max"] != 0.0):
        want_error = None     # V1 takes no scaleAlg / dstTypeMax: a mutation of them does not reach it
    if version == "" and y_name in FP4:       # V1 has no scaleAlg / dstTypeMax (the golden then uses 0, 0.0)
        want_error, codes = True, (None if want_error is not False else codes)
    if version == "V2" and kw["cann_version"] not in ("master", "9.1.0"):
        want_error, codes = True, (None if want_error is not False else codes)
    code = kw.pop("dst_type")
    dst = ACL.get(TORCH_CODES.get(code) if isinstance(code, int) else None, code)
    relaxed = code in ACL.values() and want_error
    if relaxed:
        want_error = None       # a torch-level bad dst_type that is an aclDataType code: valid here if it fits y
    y, label, form = _aclnn_outs(data, x.shape, y_name, want_error)
    g_count = np.asarray(giin).size if giin is not None else gi.size
    s = H.sentinel_like((x.shape[0] // 64 + g_count, x.shape[1], 2), np.uint8)
    out_mut = data.draw(st.sampled_from(["ok"] * 5 + ["y_none", "s_none", "s_shape", "s_dtype", "s_strided"]),
                        "out mutation")
    if out_mut != "ok" and want_error is not False:
        codes = None                               # two mutations: which check fires first is CANN's order
    if out_mut == "y_none":
        y, want_error = None, True
    elif out_mut == "s_none":
        s, want_error = None, True
    elif out_mut == "s_shape":
        s, want_error = H.sentinel_like((s.shape[0] + 1,) + s.shape[1:], np.uint8), True
    elif out_mut == "s_dtype":
        s, want_error = H.sentinel_like(s.shape, np.int16), True
    elif out_mut == "s_strided":
        s = H.sentinel_like(s.shape[:-1] + (4,), np.uint8)[..., ::2]
        want_error = True if x.size else want_error
    init = None if s is None else np.array(s, copy=True)
    args = [xin, giin, kw.pop("round_mode"), dst, kw.pop("blocksize")]
    alg, dtm = kw.pop("scale_alg"), kw.pop("dst_type_max")
    if version == "V2":
        args += [alg, dtm]
    args += [y, s]
    outs = tuple(o for o in (y, s) if isinstance(o, np.ndarray))
    res = H.call_aclnn(entry, tuple(args), dict(kw, y_dtype=label), outs=outs, home=HOME)
    if H.expect(res, want_error, entry, codes) or relaxed:
        return                  # relaxed: another format than the drawn one; no golden drawn for it
    gkw = dict(kw, round_mode=args[2], scale_alg=alg if version == "V2" else 0, dst_type_max=dtm if version else 0.0)
    if gi is None:
        return
    gy, gs = _grp_golden(x, gi, x_name, y_name, gkw, mxscale_init=init)
    if form == "unpacked":
        gy = golden.unpack_fp4(gy, kw["fp4_nibble_order"])
    H.same_bits(np.asarray(y).view(np.uint8), gy, f"{entry} y")
    if x.shape[0] == 0:
        # CANN returns success before the kernel and the ViewCopy into mxscale: the caller's bytes stay
        # (hicann/ops-nn: quant/grouped_dynamic_mx_quant/op_api/aclnn_grouped_dynamic_mx_quant.cpp; §3.2(5))
        if init is not None:
            H.same_bits(s, init, f"{entry} mxscale untouched on an empty x")
        return
    H.same_bits(s, gs, f"{entry} mxscale")


test_fuzz_dynamic_ops, test_fuzz_dynamic_ops_long = H.fast_and_slow(_fuzz_dynamic_ops)
test_fuzz_dynamic_aclnn, test_fuzz_dynamic_aclnn_long = H.fast_and_slow(_fuzz_dynamic_aclnn)
test_fuzz_grouped_ops, test_fuzz_grouped_ops_long = H.fast_and_slow(_fuzz_grouped_ops)
test_fuzz_grouped_aclnn, test_fuzz_grouped_aclnn_long = H.fast_and_slow(_fuzz_grouped_aclnn)
