"""Fuzz GroupedMatmul: npu_emu.ops.npu_grouped_matmul and aclnnGroupedMatmulV4 (docs/ops/grouped_matmul.md).

Valid calls: A8W8 -> int32 (+ int32 bias), A8W8 per-channel (+ per-token) -> bf16 / fp16, A8W8 per-channel ->
int8 (uint64 FixPipe words, + int32 bias), plain bf16 (tiny shapes:
its golden sums exactly with fractions), in the single-tensor form (group_list_type 0 / 1 / 2), with separated
weights and with separated x; empty groups, groups that end before x does, read-only inputs, core_num overrides.
Mutations: None operands, decreasing / too long / negative group lists, wrong group-list dtype and length, wrong
scale dtype, per-token length, bad output dtype, split_item / group_type, act_type, a user tiling with a wrong
n (561002). Golden: kernels/grouped_matmul/golden.py.
"""

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.grouped_matmul import golden, tiling
from npu_emu.kernels.quant_matmul.trans_quant_param import trans_quant_param

BF16 = np.dtype(ml_dtypes.bfloat16)
MODES = ["int32", "int32_bias", "pt_bf16", "pc_bf16", "pt_fp16", "pt_bf16_bias", "plain_bf16", "pc_int8"]
OUT_NP = {"int32": np.int32, "bfloat16": BF16, "float16": np.float16, "int8": np.int8}
MUTATIONS = ["none"] * 12 + ["x_none", "w_none", "gl_decreasing", "gl_past_x", "gl_negative", "gl_dtype", "gl_len",
                             "scale_dtype", "pt_len", "out_dtype", "split_item", "group_type", "act_type", "tiling_n"]


def _case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    mode = data.draw(st.sampled_from(MODES), "mode")
    plain = mode == "plain_bf16"
    e = data.draw(st.sampled_from([1, 2, 3, 5]), "e")
    m = data.draw(st.sampled_from([0, 1, 6, 19] if plain else [0, 1, 7, 40, 130]), "m")
    k = data.draw(st.sampled_from([1, 16] if plain else [1, 16, 33, 96]), "k")
    n = data.draw(st.sampled_from([1, 8] if plain else [1, 7, 40, 300]), "n")
    if plain:
        x = rng.standard_normal((m, k)).astype(BF16)
        w = rng.standard_normal((e, k, n)).astype(BF16)
    else:
        x = rng.integers(-128, 128, (m, k), dtype=np.int16).astype(np.int8)
        w = rng.integers(-128, 128, (e, k, n), dtype=np.int16).astype(np.int8)
        if data.draw(st.booleans(), "extreme"):
            x[:] = data.draw(st.sampled_from([-128, 127]), "x fill")
            w[:] = data.draw(st.sampled_from([-128, 127]), "w fill")
    cuts = np.sort(rng.integers(0, m + 1, e))                   # cumulative ends; the last may be < m
    if data.draw(st.booleans(), "cover all"):
        cuts[-1] = m
    counts = np.diff(cuts, prepend=0)
    glt = data.draw(st.sampled_from([0, 1, 2]), "group_list_type")
    if glt == 0:
        gl = cuts.astype(np.int64)
    elif glt == 1:
        gl = counts.astype(np.int64)
    else:                                                        # [e, 2]: (weight index, rows), stops at rows <= 0
        gl = np.stack([rng.integers(0, e, e), counts]).T.astype(np.int64)
    out = {"int32": "int32", "int32_bias": "int32", "pt_fp16": "float16", "plain_bf16": "bfloat16",
           "pc_int8": "int8"}.get(mode, "bfloat16")
    kw = dict(group_list=gl, group_list_type=glt, split_item=3, group_type=0, output_dtype=out,
              core_num=data.draw(st.sampled_from([None, 1, 3]), "core_num"))
    if mode == "int32_bias":
        kw["bias"] = [rng.integers(-2 ** 31, 2 ** 31 - 1, (e, n), dtype=np.int64).astype(np.int32)]
    if mode == "pc_int8":                                        # uint64 FixPipe words, int9 offsets, int32 bias
        s = rng.uniform(1e-4, 1e-2, (e, n)).astype(np.float32)
        off = rng.integers(-256, 256, (e, n)).astype(np.float32)
        kw["scale"] = [trans_quant_param(s.reshape(-1), off.reshape(-1)).reshape(e, n)]
        if data.draw(st.booleans(), "int8 bias"):
            kw["bias"] = [rng.integers(-2 ** 20, 2 ** 20, (e, n)).astype(np.int32)]
    elif mode.startswith(("pt", "pc")):
        s = rng.uniform(1e-3, 1e-2, (e, n)).astype(np.float32)
        kw["scale"] = [s.astype(BF16) if out == "bfloat16" else s]
        if mode.startswith("pt"):
            kw["per_token_scale"] = [rng.uniform(0.01, 0.1, m).astype(np.float32)]
        if mode.endswith("bias"):
            kw["bias"] = [rng.uniform(-4, 4, (e, n)).astype(BF16)]
    return rng, mode, x, w, kw


def _golden(mode, x, w, kw, fill=0):
    one = lambda name: None if kw.get(name) is None else kw[name][0]
    if mode == "plain_bf16":
        return golden.grouped_matmul_float(x, w, kw["group_list"], group_list_type=kw["group_list_type"], fill=fill)
    return golden.grouped_matmul_quant(x, w, kw["group_list"], group_list_type=kw["group_list_type"],
                                       scale=one("scale"), per_token_scale=one("per_token_scale"), bias=one("bias"),
                                       out_dtype=kw["output_dtype"], fill=fill)


def _form(data, x, w, kw, glt):
    """The single-tensor form, or (counts / cumulative lists only) the same call with separated weights or x."""
    form = data.draw(st.sampled_from(["sss", "sss", "sms", "mms"]), "form") if glt != 2 else "sss"
    xs, ws = [x], [w]
    kw = dict(kw)
    if form in ("sms", "mms") and w.shape[0] > 1:
        ws = list(w)
        for name in ("scale", "bias"):
            if kw.get(name) is not None:
                kw[name] = list(kw[name][0])
        if form == "mms" and kw.get("per_token_scale") is None:
            gl = kw["group_list"]
            counts = np.diff(gl, prepend=0) if glt == 0 else gl
            if counts.sum() == x.shape[0]:
                xs = np.split(x, np.cumsum(counts)[:-1])
                kw["split_item"] = 2
    return xs, ws, kw


def _fuzz_gmm_ops(data):
    rng, mode, x, w, kw = _case(data)
    m, k = x.shape
    e, _, n = w.shape
    xs, ws, kw = _form(data, x, w, kw, kw["group_list_type"])
    args = [[H.readonly(a) for a in xs], [H.readonly(a) for a in ws]]
    kw = {key: ([H.readonly(a) for a in v] if isinstance(v, list) else H.readonly(v) if isinstance(v, np.ndarray)
                else v) for key, v in kw.items()}
    single = len(xs) == 1 and len(ws) == 1
    mutation = data.draw(st.sampled_from(MUTATIONS), "mutation")
    want_error, codes = False, None
    gl = np.asarray(kw["group_list"])
    if mutation == "x_none":
        args[0] = None
        want_error, codes = True, {161001}
    elif mutation == "w_none":
        args[1] = [None]
        want_error, codes = True, {161002}
    elif mutation == "gl_decreasing" and single and kw["group_list_type"] == 0 and e > 1 and gl[-1] > 0:
        g2 = gl.copy()
        g2[0] = gl[-1] + 1
        kw["group_list"] = H.readonly(g2)
        want_error, codes = True, {161002}
    elif mutation == "gl_past_x" and single and kw["group_list_type"] in (0, 1):
        g2 = gl.copy()
        g2[-1] += m + 1
        kw["group_list"] = H.readonly(g2)
        want_error, codes = True, {161002}
    elif mutation == "gl_negative" and single and kw["group_list_type"] == 1:
        g2 = gl.copy()
        g2[0] = -1
        kw["group_list"] = H.readonly(g2)
        want_error, codes = True, {161002}
    elif mutation == "gl_dtype" and single:
        kw["group_list"] = H.readonly(gl.astype(np.int32))
        want_error, codes = True, {161002}
    elif mutation == "gl_len" and single and e > 1 and kw["group_list_type"] != 2:
        kw["group_list"] = H.readonly(np.concatenate([gl, gl[-1:]]))
        want_error, codes = True, {161002}
    elif mutation == "scale_dtype" and kw.get("scale") is not None:
        kw["scale"] = [H.readonly(np.asarray(s).astype(np.float64)) for s in kw["scale"]]
        want_error, codes = True, {161002}
    elif mutation == "pt_len" and kw.get("per_token_scale") is not None:
        kw["per_token_scale"] = [H.readonly(np.zeros(m + 1, np.float32))]
        want_error, codes = True, {161002}
    elif mutation == "out_dtype":
        kw["output_dtype"] = data.draw(st.sampled_from(["float64", "nonsense", np.complex64, "int16"]), "bad out")
        want_error, codes = True, {161002}
    elif mutation == "split_item":
        kw["split_item"] = data.draw(st.sampled_from([4, -1]), "bad split_item")
        want_error, codes = True, {161002}
    elif mutation == "group_type":
        kw["group_type"] = data.draw(st.sampled_from([1, 3, -1]), "bad group_type")
        want_error, codes = True, {161002}
    elif mutation == "act_type":
        # GELU_ERR_FUNC (3), past the enum (6), negative: refused for every mode (CheckCommonParam); an activation
        # on int32 / int8 out or plain float: refused (the quant bf16 / fp16 epilogue takes 1, 2, 4, 5)
        bad = [3, 6, -1] if mode.startswith(("pt", "pc_bf16")) else [1, 3, 5, 6, -1]
        kw["act_type"] = data.draw(st.sampled_from(bad), "act_type")
        want_error, codes = True, {161002}
    elif mutation == "tiling_n" and single and m and k:
        s = tiling.GmmShape(group_num=e, m=m, k=k, n=n, x_dtype=str(np.dtype(x.dtype)) if mode != "plain_bf16"
                            else "bfloat16", w_dtype="int8" if mode != "plain_bf16" else "bfloat16",
                            y_dtype=kw["output_dtype"], scale_dtype=None if kw.get("scale") is None else
                            {"bfloat16": "bfloat16", "int8": "uint64"}.get(kw["output_dtype"], "float32"),
                            per_token=kw.get("per_token_scale") is not None, has_bias=kw.get("bias") is not None,
                            group_list_type=kw["group_list_type"])
        td = tiling.grouped_matmul_tiling(s).tiling
        import dataclasses
        td = dataclasses.replace(td, gmmArray=dataclasses.replace(td.gmmArray, nList=(n + 16,) + (0,) * 127))
        kw["tiling"] = td
        covered = golden.group_rows(gl, kw["group_list_type"], e)
        want_error = True if sum(r for _, _, r in covered if r > 0) else None
        codes = {561002}
    outcome = H.call_entry("npu_grouped_matmul", ops.npu_grouped_matmul, tuple(args), kw)
    if H.expect(outcome, want_error, "npu_grouped_matmul", codes):
        return
    if want_error is None:
        return
    got = outcome[1]
    if len(got) != 1 or np.asarray(got[0]).dtype != np.dtype(OUT_NP[kw["output_dtype"]]):
        raise H.ContractViolation(f"npu_grouped_matmul: got {[np.asarray(g).dtype for g in got]}")
    H.same_bits(got[0], _golden(mode, x, w, dict(kw, group_list=gl, scale=None if kw.get("scale") is None else
                                                 [np.asarray(kw["scale"]).reshape(e, n)],
                                                 bias=None if kw.get("bias") is None else
                                                 [np.asarray(kw["bias"]).reshape(e, n)])),
                f"npu_grouped_matmul {mode}")


def _fuzz_gmm_aclnn(data):
    rng, mode, x, w, kw = _case(data)
    m, k = x.shape
    e, _, n = w.shape
    out_dt = OUT_NP[kw["output_dtype"]]
    out = H.sentinel_like((m, n), out_dt)
    one = lambda name: None if kw.get(name) is None else [H.readonly(kw[name][0])]
    args = [[H.readonly(x)], [H.readonly(w)], one("bias"), one("scale"), None, None, None, one("per_token_scale"),
            H.readonly(kw["group_list"]), None, None, None, 3, 0, kw["group_list_type"], 0, [out]]
    mutation = data.draw(st.sampled_from(["none"] * 6 + ["x_none", "out_none", "out_shape", "out_dtype", "gl_past_x",
                                                         "split_item"]), "mutation")
    want_error, codes = False, None
    if mutation == "x_none":
        args[0] = None
        want_error, codes = True, {161001}
    elif mutation == "out_none":
        args[16] = None
        want_error, codes = True, {161001}
    elif mutation == "out_shape":
        args[16] = [H.sentinel_like((m, n + 1), out_dt)]
        want_error, codes = True, {161002}
    elif mutation == "out_dtype":
        args[16] = [H.sentinel_like((m, n), np.float64)]
        want_error, codes = True, {161002}
    elif mutation == "gl_past_x" and kw["group_list_type"] in (0, 1):
        g2 = np.asarray(kw["group_list"]).copy()
        g2[-1] += m + 1
        args[8] = H.readonly(g2)
        want_error, codes = True, {161002}
    elif mutation == "split_item":
        args[12] = 0
        want_error, codes = True, {161002}
    outs = tuple(o for o in (args[16] or []) if isinstance(o, np.ndarray))
    res = H.call_aclnn("aclnnGroupedMatmulV4", tuple(args), dict(core_num=kw["core_num"]), outs=outs,
                       home="npu_emu.kernels.grouped_matmul.api")
    if H.expect(res, want_error, "aclnnGroupedMatmulV4", codes):
        return
    sentinel = H.sentinel_like((m, n), out_dt)
    want = np.array(sentinel, copy=True)
    gold = _golden(mode, x, w, kw)
    rows = golden.group_rows(kw["group_list"], kw["group_list_type"], e)
    end = max([r0 + r for _, r0, r in rows if r > 0] or [0])
    want[:end] = gold[:end]
    H.same_bits(out, want, f"aclnnGroupedMatmulV4 {mode}")


test_fuzz_gmm_ops, test_fuzz_gmm_ops_long = H.fast_and_slow(_fuzz_gmm_ops)
test_fuzz_gmm_aclnn, test_fuzz_gmm_aclnn_long = H.fast_and_slow(_fuzz_gmm_aclnn)
