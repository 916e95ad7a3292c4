"""Fuzz the quantised matmul V3 modes: npu_emu.ops.npu_quant_matmul / npu_trans_quant_param and the aclnn pairs
aclnnQuantMatmulV3, aclnnTransQuantParamV2 / V3.

Valid calls: int8 x int8 of every V3 epilogue (T-T / T-C / K-C / K-T pertoken, requant with offsets, int32 out,
float and bf16 scales, int32 / float / bf16 bias) on 910B and 950, random small m / k / n (empty m and n included),
read-only inputs in several memory layouts (a column-major x1 / x2 is a transposed view the front end detects),
core_num overrides. Mutations: None operands, wrong dtypes, mismatched k / scale / bias / batch, bad output dtype,
switches, SoC, group_sizes, mismatched aclnn out. Golden: kernels/quant_matmul/golden.py.
V4 / V5 / sparse modes are being finished by their owner and are not fuzzed here yet.
"""

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.quant_matmul import golden as golden

BF16 = np.dtype(ml_dtypes.bfloat16)
SOCS = ["ascend910b2", "ascend950pr"]
M_SIZES = [0, 1, 5, 17, 40]
K_SIZES = [1, 16, 33, 300]
N_SIZES = [0, 1, 7, 45]

# (out dtype, scale kind, pertoken, bias dtype), the V3 int8 epilogues of tests/kernels/quant_matmul's INT_CASES
CASES = [
    ("float16", "u64-t", False, None), ("float16", "u64-c", False, "int32"), ("int8", "u64-c-off", False, "int32"),
    ("bfloat16", "f32-t", False, None), ("bfloat16", "f32-t", False, "int32"), ("bfloat16", "f32-t", False, "float32"),
    ("bfloat16", "f32-c", False, "bfloat16"), ("bfloat16", "bf16-c", False, None), ("int32", "f32-t", False, "int32"),
    ("float16", "f32-c", True, None), ("float16", "f32-c", True, "float16"), ("float16", "f32-c", True, "int32"),
    ("bfloat16", "f32-t", True, "float32"), ("bfloat16", "bf16-c", True, "bfloat16"),
]
V3_CASES = [c for c in CASES if not c[2]]          # aclnnQuantMatmulV3 has no pertoken (x1) scale
OUT_NP = {"float16": np.float16, "bfloat16": BF16, "int8": np.int8, "int32": np.int32}
MUTATIONS = ["none"] * 10 + ["x1_none", "x2_none", "scale_none", "x1_dtype", "x2_dtype", "k", "scale_len",
                             "bias_len", "batch", "x1_1d", "out_dtype", "switch", "soc", "group_sizes", "core_num"]


def _case(data, cases=CASES):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    out, kind, pertoken, bias_dt = data.draw(st.sampled_from(cases), "case")
    m, k, n = (data.draw(st.sampled_from(M_SIZES), "m"), data.draw(st.sampled_from(K_SIZES), "k"),
               data.draw(st.sampled_from(N_SIZES), "n"))
    x1 = rng.integers(-128, 128, (m, k), dtype=np.int8)
    x2 = rng.integers(-128, 128, (k, n), dtype=np.int8)
    if data.draw(st.booleans(), "extreme"):          # all -128 / 127: the int32 accumulator's largest magnitudes
        x1[:] = data.draw(st.sampled_from([-128, 127]), "x1 fill")
        x2[:] = data.draw(st.sampled_from([-128, 127]), "x2 fill")
    c = n if kind.endswith("c") or kind.endswith("off") else 1
    s = (rng.uniform(0.001, 0.05, c) * np.where(rng.random(c) < 0.2, -1, 1)).astype(np.float32)
    if c and data.draw(st.integers(0, 4), "special scale") == 0:
        s.view(np.uint32)[rng.integers(0, c)] = data.draw(st.sampled_from([0x0, 0x80000000, 0x1, 0x007FFFFF,
                                                                           0x7F7FFFFF]), "scale bits")
    off = rng.uniform(-300, 300, c).astype(np.float32) if kind.endswith("off") else None
    if kind.startswith("bf16"):
        s = s.astype(BF16)
    p1 = rng.uniform(0.5, 2.0, m).astype(np.float32) if pertoken else None
    bias = None
    if bias_dt == "int32":
        bias = rng.integers(-5000, 5000, n).astype(np.int32)
    elif bias_dt:
        bias = rng.uniform(-3, 3, n).astype(np.float32).astype(BF16 if bias_dt == "bfloat16" else bias_dt)
    kw = dict(offset=off, pertoken_scale=p1, bias=bias, output_dtype=out,
              soc=data.draw(st.sampled_from(SOCS), "soc"),
              core_num=data.draw(st.sampled_from([None, 1, 2, 3]), "core_num"),
              fixpipe_round=data.draw(st.sampled_from(["rne", "half_away"]), "fixpipe_round"),
              cast_overflow=data.draw(st.sampled_from(["inf", "saturate"]), "cast_overflow"))
    return rng, x1, x2, s, kind, bias_dt, kw


def _golden(x1, x2, s, kind, bias_dt, kw):
    off = kw["offset"]
    if kind.startswith("u64"):
        gold_s, gold_dt = golden.trans_quant_param(s, off), "uint64"
    else:
        gold_s, gold_dt = s, ("bfloat16" if kind.startswith("bf16") else "float32")
    return np.asarray(golden.quant_matmul(x1, x2, gold_s, x1_dtype="int8", x2_dtype="int8", scale_dtype=gold_dt,
                                          out_dtype=kw["output_dtype"], x1_scale=kw["pertoken_scale"],
                                          bias=kw["bias"], bias_dtype=bias_dt, fixpipe_round=kw["fixpipe_round"],
                                          cast_overflow=kw["cast_overflow"]))


def _layout(data, a, what):
    return H.layout(a, data.draw(st.sampled_from(["c", "strided", "fortran", "negative"]), f"{what} layout"))


def _fuzz_qmm_ops(data):
    rng, x1, x2, s, kind, bias_dt, kw = _case(data)
    m, k = x1.shape
    n = x2.shape[1]
    args = [_layout(data, x1, "x1"), _layout(data, x2, "x2"), H.readonly(s)]
    kw = dict(kw)
    for name in ("offset", "pertoken_scale", "bias"):
        if kw[name] is not None:
            kw[name] = H.readonly(kw[name])
    mutation = data.draw(st.sampled_from(MUTATIONS), "mutation")
    # CANN refuses some empty operands ("x1 and x2 can not be empty") and returns an empty y for others: either
    # way, but with a CANN status or the right shape
    want_error, codes = (False, None) if m and n else (None, {161002})
    if mutation in ("x1_none", "x2_none", "scale_none"):
        args[["x1_none", "x2_none", "scale_none"].index(mutation)] = None
        want_error, codes = True, {161001}
    elif mutation in ("x1_dtype", "x2_dtype"):
        i = 0 if mutation == "x1_dtype" else 1
        # every dtype but the int8 / int4-in-int32 / float8 families the V3-V5 routing accepts for x1 / x2
        bad = [d for d in H.WRONG_DTYPES if d.kind in "bcu" or d in (np.dtype(np.int16), np.dtype(np.int64),
                                                                      np.dtype(np.float64))]
        args[i] = H.readonly(H.as_dtype((x1, x2)[i], data.draw(st.sampled_from(bad), "bad dtype")))
        want_error, codes = True, {161002}
    elif mutation == "k":
        args[1] = H.readonly(np.zeros((k + data.draw(st.sampled_from([1, 31]), "dk"), n), np.int8))
        want_error, codes = True, {161002}
    elif mutation == "scale_len" and n > 1:
        args[2] = H.readonly(np.resize(s, n + 1))
        want_error, codes = True, {161002}
    elif mutation == "bias_len" and kw["bias"] is not None and n > 1:
        kw["bias"] = H.readonly(np.resize(kw["bias"], n + 1))
        want_error, codes = True, {161002}
    elif mutation == "batch":
        args[0] = H.readonly(np.broadcast_to(x1, (2, m, k)))
        args[1] = H.readonly(np.broadcast_to(x2, (3, k, n)))
        want_error, codes = True, {161002}
    elif mutation == "x1_1d":
        args[0] = H.readonly(x1.reshape(-1))
        want_error, codes = True, {161002}
    elif mutation == "out_dtype":
        kw["output_dtype"] = data.draw(st.sampled_from(["float64", "nonsense", 99, np.complex64, "int4"]), "bad out")
        want_error, codes = True, {161002}
    elif mutation == "switch":
        name = data.draw(st.sampled_from(["fixpipe_round", "cast_overflow", "float_accum", "e8m0_zero"]), "switch")
        kw[name] = "nonsense"
        want_error, codes = True, {161002}
    elif mutation == "soc":
        kw["soc"] = data.draw(st.sampled_from(["no_such_soc", None, 3]), "bad soc")
        want_error = True
    elif mutation == "group_sizes":
        kw["group_sizes"] = data.draw(st.sampled_from([[1, 2], [-1, 0, 0], [0, 0, 70000], ["a", 0, 0]]), "gs")
        want_error, codes = True, {161002}
    elif mutation == "core_num":
        kw["core_num"] = data.draw(st.sampled_from([0, -1, 1.5, "2", 10 ** 6]), "bad core_num")
        want_error = None          # a core_num above the SoC's may be clamped; the others must be refused
    if not (m and n) and want_error and codes != {161001}:
        want_error = None     # an empty m or n returns before the dtype / shape checks (reported to the lead)
    outcome = H.call_entry("npu_quant_matmul", ops.npu_quant_matmul, tuple(args), kw)
    if mutation == "core_num" and kw["core_num"] != 10 ** 6 and m and n:
        H.expect(outcome, True, "npu_quant_matmul")
    if H.expect(outcome, want_error, "npu_quant_matmul", codes):
        return
    if want_error is None and mutation != "core_num":
        return                          # an invalid call accepted on an empty operand: no golden to compare
    got = outcome[1]
    want = _golden(x1, x2, s, kind, bias_dt, kw) if m and n else np.zeros((m, n), OUT_NP[kw["output_dtype"]])
    if np.asarray(got).dtype != np.dtype(OUT_NP[kw["output_dtype"]]):
        raise H.ContractViolation(f"npu_quant_matmul: dtype {np.asarray(got).dtype} for {kw['output_dtype']}")
    H.same_bits(got, want, f"npu_quant_matmul {kw['output_dtype']} {kind}")


def _fuzz_qmm_aclnn(data):
    """aclnnQuantMatmulV3 (no pertoken scale in its signature): scale as packed words or float / bf16."""
    rng, x1, x2, s, kind, bias_dt, kw = _case(data, V3_CASES)
    m, k = x1.shape
    n = x2.shape[1]
    out_dt = OUT_NP[kw["output_dtype"]]
    if kind.startswith("u64"):
        scale = ops.npu_trans_quant_param(s, kw["offset"]).view(np.uint64) if s.size else np.zeros(0, np.uint64)
    else:
        scale = s
    use_offset = kind.endswith("off") and data.draw(st.booleans(), "pass offset")
    out = H.sentinel_like((m, n), out_dt)
    t1, t2 = data.draw(st.booleans(), "transposeX1"), data.draw(st.booleans(), "transposeX2")
    # transposeX1 = true: x1 is given as its (k, m) transpose (routing.mnk, CANN's GetX1X2DimValue)
    a1 = H.readonly(np.ascontiguousarray(x1.T)) if t1 else H.readonly(x1)
    a2 = H.readonly(np.ascontiguousarray(x2.T)) if t2 else H.readonly(x2)
    args = [a1, a2, H.readonly(scale), H.readonly(kw["offset"]) if use_offset else None,
            None if kw["bias"] is None else H.readonly(kw["bias"]), t1, t2, out]
    extra = dict(soc=kw["soc"], core_num=kw["core_num"], fixpipe_round=kw["fixpipe_round"],
                 cast_overflow=kw["cast_overflow"])
    mutation = data.draw(st.sampled_from(["none"] * 6 + ["x1_none", "scale_none", "out_none", "out_shape",
                                                         "out_dtype", "out_readonly", "transpose", "k"]), "mutation")
    want_error, codes = (False, None) if m and n else (None, {161002})
    if mutation in ("x1_none", "scale_none", "out_none"):
        args[{"x1_none": 0, "scale_none": 2, "out_none": 7}[mutation]] = None
        want_error, codes = True, {161001}
    elif mutation == "out_shape" and m and n:        # an empty x1 / x2 returns before out's shape is checked
        args[7] = out = H.sentinel_like((m, n + 1), out_dt)
        want_error, codes = True, {161002}
    elif mutation == "out_dtype":
        # never a V3 output dtype (int8 / int32 / float16 / bfloat16 outs are other valid modes)
        bad = data.draw(st.sampled_from([np.int16, np.uint8, np.uint16, np.float64, np.int64]), "bad out")
        args[7] = out = H.sentinel_like((m, n), bad)
        want_error = True
    elif mutation == "out_readonly" and m and n:
        args[7] = out = H.readonly(out)
        want_error = True
    elif mutation == "transpose":
        args[5] = data.draw(st.sampled_from([1, None, "yes"]), "bad transposeX1")
        want_error, codes = True, {161002}
    elif mutation == "k":
        args[1] = H.readonly(np.zeros((k + 1, n), np.int8))
        args[6] = False
        if n == k + 1:
            args[1] = H.readonly(np.zeros((k + 2, n), np.int8))
        want_error, codes = True, {161002}
    if not (m and n) and want_error and codes != {161001}:
        want_error = None     # an empty m or n returns before the shape checks (reported to the lead)
    outs = (out,) if isinstance(out, np.ndarray) else ()
    res = H.call_aclnn("aclnnQuantMatmulV3", tuple(args), extra, outs=outs, home="npu_emu.kernels.quant_matmul.api")
    if H.expect(res, want_error, "aclnnQuantMatmulV3", codes):
        return
    if m and n and want_error is False:
        kw2 = dict(kw, offset=kw["offset"] if (kind.endswith("off")) else None)
        want = _golden(x1, x2, s, kind, bias_dt, kw2)
        H.same_bits(out, want, f"aclnnQuantMatmulV3 {kw['output_dtype']} {kind}")


# ---------------------------------------------------------------------------------------------------------------
# npu_trans_quant_param / aclnnTransQuantParamV2 / V3
# ---------------------------------------------------------------------------------------------------------------

TQP_SHAPES = [((1,), None), ((7,), None), ((7,), (7,)), ((1,), (5,)), ((5,), (1,)), ((1, 6), None), ((1, 6), (6,)),
              ((3, 1), None), ((1, 4), (1, 4)), ((3, 4), (1,))]


def _tqp_case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    s_shape, o_shape = data.draw(st.sampled_from(TQP_SHAPES), "shapes")
    s = H.float_values(rng, s_shape, np.float32, special_frac=0.3, scale_exp=(-130, 128))
    off = None if o_shape is None else \
        H.float_values(rng, o_shape, np.float32, special_frac=0.2, scale_exp=(-4, 10))
    rm = data.draw(st.sampled_from([0, 1]), "round_mode")
    return rng, s, off, rm


def _tqp_want(s, off, rm, shape):
    return np.asarray(golden.trans_quant_param(s, off, rm)).astype(np.uint64).reshape(shape)


def _tqp_shape(s, off):
    if s.ndim == 1:
        return (max(s.size, 1 if off is None else off.size),)
    return s.shape


TQP_MUTATIONS = ["none"] * 6 + ["scale_none", "scale_dtype", "offset_dtype", "empty", "ndim", "len", "round_mode"]


def _tqp_mutate(data, s, off, rm):
    mutation = data.draw(st.sampled_from(TQP_MUTATIONS), "mutation")
    want_error, codes = False, None
    if mutation == "scale_none":
        s, want_error, codes = None, True, {161001}
    elif mutation == "scale_dtype":
        bad = [d for d in H.WRONG_DTYPES if d != np.float32]
        s, want_error, codes = H.as_dtype(s, data.draw(st.sampled_from(bad), "bad dtype")), True, {161002}
    elif mutation == "offset_dtype":
        off, want_error, codes = H.as_dtype(s.reshape(-1), np.float64), True, {161002}
    elif mutation == "empty":
        s, want_error, codes = np.zeros((0,), np.float32), True, {161002}
    elif mutation == "ndim":
        s, want_error, codes = s.reshape((1,) * 3 + s.shape), True, {161002}
    elif mutation == "len" and s.size > 1:
        off, want_error, codes = np.ones(s.size + 1, np.float32), True, {161002}
    elif mutation == "round_mode":
        rm, want_error = data.draw(st.sampled_from([2, -1, None, 1.0, "1", True]), "bad round_mode"), True
        if rm is None:
            want_error = None             # torch_npu's default: None may mean 0
    return s, off, rm, want_error, codes


def _fuzz_tqp_ops(data):
    rng, s, off, rm = _tqp_case(data)
    ms, moff, mrm, want_error, codes = _tqp_mutate(data, s, off, rm)
    args = (None if ms is None else H.layout(ms, data.draw(st.sampled_from(["c", "strided", "negative"]), "lay")),
            None if moff is None else H.readonly(moff))
    outcome = H.call_entry("npu_trans_quant_param", ops.npu_trans_quant_param, args, dict(round_mode=mrm))
    if H.expect(outcome, want_error, "npu_trans_quant_param", codes):
        return
    got = outcome[1]
    if got.dtype != np.int64:
        raise H.ContractViolation(f"npu_trans_quant_param returned {got.dtype}, not int64")
    H.same_bits(got, _tqp_want(ms, moff, 0 if mrm is None else mrm, got.shape), "npu_trans_quant_param")


def _fuzz_tqp_aclnn(data):
    rng, s, off, rm = _tqp_case(data)
    ms, moff, mrm, want_error, codes = _tqp_mutate(data, s, off, rm)
    v2 = data.draw(st.booleans(), "V2")
    if v2 and mrm is not rm:
        want_error, codes = False, None          # V2 has no roundMode: the round_mode mutation does not apply
    shape = _tqp_shape(s, off)
    out_dt = data.draw(st.sampled_from([np.uint64, np.int64]), "out dtype")
    out = H.sentinel_like(shape, out_dt)
    out_mut = data.draw(st.sampled_from(["none"] * 5 + ["shape", "dtype", "None"]), "out mutation")
    if out_mut != "none" and want_error is not True:
        out = {"shape": lambda: H.sentinel_like((shape[0] + 1,) + shape[1:], out_dt),
               "dtype": lambda: H.sentinel_like(shape, np.float64), "None": lambda: None}[out_mut]()
        # after a mutation that may or may not be refused (want_error None) either check may fire first
        codes = None if want_error is None else ({161001} if out_mut == "None" else {161002})
        want_error = True
    ins = (None if ms is None else H.readonly(ms), None if moff is None else H.readonly(moff))
    entry = "aclnnTransQuantParamV2" if v2 else "aclnnTransQuantParamV3"
    args = ins + ((out,) if v2 else (mrm, out))
    outs = (out,) if isinstance(out, np.ndarray) else ()
    res = H.call_aclnn(entry, args, outs=outs, home="npu_emu.kernels.quant_matmul.api")
    if H.expect(res, want_error, entry, codes):
        return
    H.same_bits(out, _tqp_want(ms, moff, 0 if v2 else mrm, shape).view(out_dt), entry)


test_fuzz_qmm_ops, test_fuzz_qmm_ops_long = H.fast_and_slow(_fuzz_qmm_ops)
test_fuzz_qmm_aclnn, test_fuzz_qmm_aclnn_long = H.fast_and_slow(_fuzz_qmm_aclnn)
test_fuzz_tqp_ops, test_fuzz_tqp_ops_long = H.fast_and_slow(_fuzz_tqp_ops)
test_fuzz_tqp_aclnn, test_fuzz_tqp_aclnn_long = H.fast_and_slow(_fuzz_tqp_aclnn)
