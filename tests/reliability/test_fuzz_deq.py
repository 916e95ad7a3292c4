"""Fuzz npu_emu.ops.data_copy_dequant (the whole-matrix CO1 -> CO2 DataCopy with DEQ8 / DEQ16 / DEQS16).

Valid calls: int32 accumulators of any rank (empty included) with extreme values, a scalar deq word (Python int,
numpy uint64/int64, 0-d array, DeqValue) or a per-channel table (uint64 / int64 array, list, DeqVector) whose fields
are random except where the mode constrains them (M zero or a normal float for DEQ8 / DEQ16, one MCB bit and, for
DEQ8, one sign bit in a table), is_relu, every switch, an optional preallocated out. Mutations: wrong dtypes, bad
words, bad mode / switches / soc, mismatched out. Golden: kernels/data_copy_dequant/golden.py.
"""

import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.ascendc import deq as deq_mod
from npu_emu.kernels.data_copy_dequant import golden as golden

MODES = ["DEQ8", "DEQ16", "DEQS16"]
OUT_DTYPES = {"DEQ16": np.float16, "DEQS16": np.int16}
SHAPES = [(0,), (1,), (16,), (3, 5), (2, 0), (4, 33), (2, 3, 16)]
ACC_EDGES = np.array([0, 1, -1, 2 ** 31 - 1, -2 ** 31, 255, -256, 32767, -32768, 65535], np.int64)


def _word(rng, mode, mcb, sign):
    """A random deq word with a legal M (0 or a normal float32) and the given MCB / sign bits."""
    m = np.float32(rng.choice([0.0, 1.0, -1.0]) if rng.random() < 0.2 else
                   np.exp2(rng.uniform(-30, 30)) * rng.choice([-1, 1]))
    bits = int(np.array(m, np.float32).view(np.uint32))
    n = int(rng.integers(0, 16))
    off = int(rng.integers(0, 512))
    relu = int(rng.integers(0, 2))
    return bits | (n << 32) | (mcb << 36) | (off << 37) | (sign << 46) | (relu << 47) | \
        (int(rng.integers(0, 2 ** 16)) << 48)          # bits 48..63 are unused: random


def _fuzz_deq(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    mode = data.draw(st.sampled_from(MODES), "mode")
    shape = data.draw(st.sampled_from(SHAPES), "shape")
    n = shape[-1]
    acc = rng.integers(-2 ** 31, 2 ** 31, shape, dtype=np.int64)
    if acc.size:
        k = rng.random(acc.size) < 0.3
        acc.reshape(-1)[k] = rng.choice(ACC_EDGES, int(k.sum()))
    acc = acc.astype(np.int32)
    mcb = int(data.draw(st.booleans(), "mcb"))
    sign = int(data.draw(st.booleans(), "sign"))
    vector = data.draw(st.booleans(), "per-channel")
    if vector:
        form = data.draw(st.sampled_from(["uint64", "int64", "list", "DeqVector"]), "table form")
        if form == "DeqVector" and n != deq_mod.DEQ_VECTOR_ENTRIES:
            # a DeqVector is the 16-word table of a 16-column acc (kernels/data_copy_dequant/checks.py deq_words_arg)
            form = "uint64"
        if form == "DeqVector":
            words = np.array([_word(rng, mode, mcb, sign) for _ in range(n)], np.uint64)
            deq = deq_mod.DeqVector(words)
        else:
            words = np.array([_word(rng, mode, mcb, sign) for _ in range(n)], np.uint64)
            deq = {"uint64": lambda: H.readonly(words), "int64": lambda: H.readonly(words.view(np.int64)),
                   "list": lambda: [int(w) for w in words]}[form]()
        mode_arg = data.draw(st.sampled_from([mode, "V" + mode]), "mode spelling")
        gold_deq = words
    else:
        word = _word(rng, mode, mcb, sign)
        form = data.draw(st.sampled_from(["int", "uint64", "int64", "0-d", "DeqValue"]), "word form")
        deq = {"int": lambda: word, "uint64": lambda: np.uint64(word), "int64": lambda: np.array(word, np.uint64).view(np.int64)[()],
               "0-d": lambda: H.readonly(np.array(word, np.uint64)),
               "DeqValue": lambda: deq_mod.DeqValue(word)}[form]()
        mode_arg = mode
        gold_deq = np.uint64(word)
    switches = {name: data.draw(st.sampled_from(choices), name) for name, choices in deq_mod.SWITCH_CHOICES.items()
                if data.draw(st.integers(0, 3), f"set {name}") == 0}
    kw = dict(mode=mode_arg, is_relu=data.draw(st.booleans(), "is_relu"),
              soc=data.draw(st.sampled_from(["ascend310p", "ascend910"]), "soc"), **switches)
    how = data.draw(st.sampled_from(["c", "strided", "fortran", "negative", "broadcast"]), "layout")
    accin = H.layout(acc, how)
    # DEQ8 gives int8 when the (shared) sign bit 46 is set, else uint8; an empty table has no sign bit: uint8
    has_word = np.asarray(gold_deq).size
    out_dtype = OUT_DTYPES.get(mode, np.int8 if sign and has_word else np.uint8)
    use_out = data.draw(st.booleans(), "pass out")
    out = H.sentinel_like(shape, out_dtype) if use_out else None
    want_error, codes = False, None
    mutation = data.draw(st.sampled_from(["none"] * 8 + ["acc_none", "acc_dtype", "acc_0d", "deq_none", "deq_bad",
                                                         "deq_shape", "m_bad", "mix", "mode", "switch", "soc",
                                                         "relu", "out"]), "mutation")
    if mutation == "acc_none":
        accin, want_error, codes = None, True, {161001}
    elif mutation == "acc_dtype":
        bad = [d for d in H.WRONG_DTYPES if d != np.int32]
        accin, want_error, codes = H.readonly(H.as_dtype(acc, data.draw(st.sampled_from(bad), "acc dtype"))), True, \
            {161002}
    elif mutation == "acc_0d":
        accin, want_error, codes = H.readonly(np.int32(5)), True, {161002}
    elif mutation == "deq_none":
        deq, want_error, codes = None, True, {161001}
    elif mutation == "deq_bad":
        deq = data.draw(st.sampled_from([-1, 2 ** 64, 1.5, "0x3f800000", True, np.float32(1.0),
                                         np.array([1.0, 2.0])]), "bad deq_value")
        want_error, codes = True, {161002}
    elif mutation == "deq_shape":
        deq = H.readonly(np.zeros(n + 1, np.uint64))
        want_error, codes = True, {161002}
    elif mutation == "m_bad" and mode != "DEQS16":
        bad_m = data.draw(st.sampled_from([0x7F800000, 0x7FC00000, 0xFF800000, 0x00400000]), "bad M")
        if vector and n:
            w2 = words.copy()
            w2[-1] = (w2[-1] & ~np.uint64(0xFFFFFFFF)) | np.uint64(bad_m)
            deq, want_error, codes = H.readonly(w2), True, {161002}
        elif not vector:
            deq, want_error, codes = (word & ~0xFFFFFFFF) | bad_m, True, {161002}
    elif mutation == "mix" and vector and n > 1:
        w2 = words.copy()
        bit = data.draw(st.sampled_from([36] + ([46] if mode == "DEQ8" else [])), "mixed bit")
        w2[0] ^= np.uint64(1 << bit)
        deq, want_error, codes = H.readonly(w2), True, {161002}
    elif mutation == "mode":
        kw["mode"] = data.draw(st.sampled_from(["deq8", "DEQ32", "", None, 8] + ([] if vector else ["VDEQ8"])), "bad")
        want_error, codes = True, {161002}
    elif mutation == "switch":
        name = data.draw(st.sampled_from(sorted(deq_mod.SWITCH_CHOICES) + ["no_such_switch"]), "bad switch")
        kw[name] = "nonsense"
        want_error, codes = True, {161002}
    elif mutation == "soc":
        kw["soc"], want_error, codes = data.draw(st.sampled_from(["ascend910b2", "ascend950pr", None, "x"]), "soc"), \
            True, {161002}
    elif mutation == "relu":
        kw["is_relu"], want_error, codes = data.draw(st.sampled_from([1, None, "yes"]), "bad is_relu"), True, {161002}
    elif mutation == "out":
        bad = data.draw(st.sampled_from(["dtype", "shape", "readonly", "strided"]), "bad out")
        out = {"dtype": lambda: H.sentinel_like(shape, np.float32),
               "shape": lambda: H.sentinel_like(shape[:-1] + (n + 1,), out_dtype),
               "readonly": lambda: H.readonly(H.sentinel_like(shape, out_dtype)),
               # a strided view of one column is still contiguous in numpy's sense (long fuzz: shape (1,))
               "strided": lambda: H.sentinel_like(shape[:-1] + (2 * n,), out_dtype)[..., ::2]
               if int(np.prod(shape)) and n > 1 else H.sentinel_like(shape[:-1] + (n + 1,), out_dtype)}[bad]()
        want_error, codes = True, {161002}
    outs = (out,) if isinstance(out, np.ndarray) else ()
    outcome = H.call_entry("data_copy_dequant", ops.data_copy_dequant, (accin, deq), dict(kw, out=out), outs=outs)
    if H.expect(outcome, want_error, "data_copy_dequant", codes):
        return
    got = outcome[1]
    if out is not None and got is not out:
        raise H.ContractViolation("data_copy_dequant(out=...) did not return out")
    if np.asarray(got).dtype != np.dtype(out_dtype):
        raise H.ContractViolation(f"data_copy_dequant {mode}: dtype {np.asarray(got).dtype}, expected "
                                  f"{np.dtype(out_dtype)}")
    if acc.size == 0:
        want = np.empty(shape, out_dtype)      # the golden reads a first table word, which an empty table lacks
    else:
        want = golden.data_copy_dequant(acc, gold_deq, mode=mode, is_relu=kw["is_relu"], **switches)
    H.same_bits(got, want, f"data_copy_dequant {mode}", nan_dtype=np.float16 if mode == "DEQ16" else None)


test_fuzz_data_copy_dequant, test_fuzz_data_copy_dequant_long = H.fast_and_slow(_fuzz_deq)
