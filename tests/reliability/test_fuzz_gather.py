"""Fuzz GatherDequantInt8: npu_emu.ops.gather_dequant_int8 and aclnnGatherDequantInt8GetWorkspaceSize / run.

Valid calls vary vocabulary, embedding width (multiples of 32), index shape (0-d, empty, 1-d, 3-d), fp16 spelling of
scale / zero_point (float16 or uint16 bits, shape (V,) or (V, 1)), their values (NaN, Inf, -0.0, subnormals), the
fp16_subnormal switch, core_num, ub_size and the memory layout; one mutation at most makes the call invalid.
Golden: kernels/gather_dequant_int8/golden.py.
"""

import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.gather_dequant_int8 import golden as golden

INDEX_SHAPES = [(), (0,), (1,), (5,), (2, 3), (2, 0, 3), (1, 2, 2)]
MUTATIONS = ["none"] * 8 + ["none_arg", "table_dtype", "indices_dtype", "fp16_dtype", "emb", "table_ndim",
                            "fp16_shape", "index_range", "switch", "soc", "ub_size", "core_num"]


def _case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    vocab = data.draw(st.sampled_from([1, 2, 17, 64]), "vocab")
    emb = data.draw(st.sampled_from([32, 64, 96, 256]), "emb")
    ishape = data.draw(st.sampled_from(INDEX_SHAPES), "indices shape")
    table = rng.integers(0, 256, (vocab, emb), dtype=np.uint8)
    indices = rng.integers(0, vocab, ishape, dtype=np.int32) if ishape else np.array(rng.integers(0, vocab),
                                                                                     np.int32)
    special = data.draw(st.sampled_from([0.0, 0.1, 1.0]), "special share")
    scale = H.float_values(rng, (vocab,), np.float16, special_frac=special, scale_exp=(-24, 4))
    zp = H.float_values(rng, (vocab,), np.float16, special_frac=special, scale_exp=(-10, 8))
    s_form = data.draw(st.sampled_from(["f16", "u16", "f16-col", "u16-col"]), "scale form")
    z_form = data.draw(st.sampled_from(["f16", "u16", "f16-col", "u16-col"]), "zero_point form")

    def form(a, f):
        a = a.view(np.uint16) if f.startswith("u16") else a
        return a.reshape(-1, 1) if f.endswith("col") else a

    how = data.draw(st.sampled_from(["c", "strided", "fortran", "negative"]), "layout")
    args = {"table": H.layout(table, how), "indices": H.layout(indices, how if indices.ndim else "c"),
            "scale": H.layout(form(scale, s_form), how), "zero_point": H.layout(form(zp, z_form), how)}
    kw = dict(fp16_subnormal=data.draw(st.sampled_from(["keep", "flush"]), "fp16_subnormal"),
              core_num=data.draw(st.sampled_from([None, 1, 2, 3, 8]), "core_num"),
              ub_size=data.draw(st.sampled_from([None, None, 1 << 20]), "ub_size"))
    want_error, codes = False, None
    mutation = data.draw(st.sampled_from(MUTATIONS), "mutation")
    if mutation == "none_arg":
        args[data.draw(st.sampled_from(sorted(args)), "null arg")] = None
        want_error, codes = True, {161001}
    elif mutation == "table_dtype":
        wrong = data.draw(st.sampled_from([d for d in H.WRONG_DTYPES if d != np.uint8]), "table dtype")
        args["table"], want_error, codes = H.readonly(H.as_dtype(table, wrong)), True, {161002}
    elif mutation == "indices_dtype":
        wrong = data.draw(st.sampled_from([d for d in H.WRONG_DTYPES if d != np.int32]), "indices dtype")
        args["indices"], want_error, codes = H.readonly(H.as_dtype(indices, wrong)), True, {161002}
    elif mutation == "fp16_dtype":
        wrong = data.draw(st.sampled_from([d for d in H.WRONG_DTYPES if d not in (np.float16, np.uint16)]), "fp16")
        key = data.draw(st.sampled_from(["scale", "zero_point"]), "which")
        args[key], want_error, codes = H.readonly(H.as_dtype(args[key], wrong)), True, {161002}
    elif mutation == "emb":
        cut = data.draw(st.sampled_from([1, 16, 31]), "emb cut")
        args["table"], want_error, codes = H.readonly(table[:, :emb - cut]), True, {161002}
    elif mutation == "table_ndim":
        args["table"] = H.readonly(data.draw(st.sampled_from([table.reshape(-1), table.reshape(1, vocab, emb),
                                                              np.array(7, np.uint8)]), "table shape"))
        want_error, codes = True, {161002}
    elif mutation == "fp16_shape":
        key = data.draw(st.sampled_from(["scale", "zero_point"]), "which")
        bad = data.draw(st.sampled_from(["short", "long", "row", "scalar"]), "bad shape")
        a = np.asarray(args[key]).reshape(-1)
        a = {"short": a[:-1], "long": np.concatenate([a, a[:1]]), "row": a.reshape(1, -1), "scalar": a[0]}[bad]
        if bad == "row" and vocab == 1:
            a = a.reshape(1, 1, 1)
        args[key], want_error, codes = H.readonly(a), True, {161002}
    elif mutation == "index_range":
        bad = data.draw(st.sampled_from([-1, vocab, vocab + 1, 2 ** 31 - 1, -(2 ** 31)]), "bad index")
        idx = indices.copy()
        if idx.size == 0:
            idx = np.array([bad], np.int32)
        else:
            idx.reshape(-1)[data.draw(st.integers(0, idx.size - 1), "position")] = bad
        args["indices"], want_error, codes = H.readonly(idx), True, {161002}
    elif mutation == "switch":
        kw["fp16_subnormal"] = data.draw(st.sampled_from(["KEEP", "ftz", None, 0]), "bad fp16_subnormal")
        want_error, codes = True, {161002}
    elif mutation == "soc":
        kw["soc"] = data.draw(st.sampled_from(["ascend910b2", "ascend950pr", "nope", None]), "soc")
        want_error = True
    elif mutation == "ub_size":
        kw["ub_size"] = data.draw(st.sampled_from([0, 1, 255, -3, "big", 1.5]), "bad ub_size")
        want_error = True
    elif mutation == "core_num":
        kw["core_num"] = data.draw(st.sampled_from([0, -1, "2", 2.5, 2 ** 64]), "bad core_num")
        want_error = None
    return table, indices, scale, zp, args, kw, want_error, codes


def _golden(table, indices, scale, zp, kw):
    return golden.gather_dequant_int8(table, indices, scale, zp, fp16_subnormal=kw["fp16_subnormal"])


def _fuzz_ops(data):
    table, indices, scale, zp, args, kw, want_error, codes = _case(data)
    order = ("table", "indices", "scale", "zero_point")
    outcome = H.call_entry("gather_dequant_int8", ops.gather_dequant_int8, tuple(args[k] for k in order), kw)
    if not H.expect(outcome, want_error, "gather_dequant_int8", codes):
        H.same_bits(outcome[1], _golden(table, indices, scale, zp, kw), "gather_dequant_int8",
                    nan_dtype=np.float16)


def _fuzz_aclnn(data):
    table, indices, scale, zp, args, kw, want_error, codes = _case(data)
    shape = indices.shape + (table.shape[1],)
    out = H.sentinel_like(shape, np.float16)
    out_mut = data.draw(st.sampled_from(["ok"] * 6 + ["none", "dtype", "shape", "u16", "strided"]
                                        + H.KNOWN_BUG_MUTATIONS), "out mutation")
    if out_mut == "none":
        out, want_error, codes = None, True, {161001}
    elif out_mut == "dtype":
        out = H.sentinel_like(shape, data.draw(st.sampled_from([np.float32, H.BF16, np.int16]), "out dtype"))
        want_error = True
    elif out_mut == "shape":
        out, want_error = H.sentinel_like(shape[:-1] + (shape[-1] + 32,), np.float16), True
    elif out_mut == "u16":
        out = H.sentinel_like(shape, np.uint16)
    elif out_mut == "strided":
        out = H.sentinel_like(shape[:-1] + (2 * shape[-1],), np.float16)[..., ::2]
    elif out_mut == "readonly":
        out.setflags(write=False)
        want_error = True if out.size and want_error is not True else want_error
    if codes is not None and out is None:
        codes = codes | {161001}
    order = ("table", "indices", "scale", "zero_point")
    outs = () if out is None else (out,)
    res = H.call_aclnn("aclnnGatherDequantInt8", tuple(args[k] for k in order) + (out,), kw, outs=outs)
    if not H.expect(res, want_error, "aclnnGatherDequantInt8", codes):
        H.same_bits(out.view(np.float16), _golden(table, indices, scale, zp, kw), "aclnnGatherDequantInt8",
                    nan_dtype=np.float16)


test_fuzz_gather_ops, test_fuzz_gather_ops_long = H.fast_and_slow(_fuzz_ops)
test_fuzz_gather_aclnn, test_fuzz_gather_aclnn_long = H.fast_and_slow(_fuzz_aclnn)
