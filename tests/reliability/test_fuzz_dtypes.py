"""Fuzz the public codecs: npu_emu.dtypes.encode / decode (and pack_fp4 / unpack_fp4).

encode is checked against the codec tests' independent reference (tests/dtypes/reference.py: grid searches in
value space and a transcription of the HiF8 HYBRID pseudo-code), decode against ml_dtypes / en_dtypes value
tables and kernels/mx_quant/golden.py's E8M0 decoder. NaN results are checked as "a NaN code with the input's
sign" where the reference says so (docs/codecs.md §14: the NaN byte is not documented). Every argument is also fuzzed
with values it must reject.
"""

import dtypes_reference as R
import en_dtypes
import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import npu_reliability as H
from npu_emu import dtypes
from npu_emu.kernels.mx_quant import golden as mx_golden

ENC_FORMATS = ["hifloat8", "float8_e5m2", "float8_e4m3fn", "float8_e8m0", "float4_e2m1", "float4_e1m2"]
DEC_FORMATS = ENC_FORMATS + ["float6_e3m2", "float6_e2m3"]
SPELLINGS = {  # other accepted names of each format (aclDataType code, ml_dtypes dtype, alias)
    "hifloat8": [34, "HIFLOAT8", "acl_hifloat8"],
    "float8_e5m2": [35, ml_dtypes.float8_e5m2, np.dtype(ml_dtypes.float8_e5m2)],
    "float8_e4m3fn": [36, ml_dtypes.float8_e4m3fn, "ACL_FLOAT8_E4M3FN"],
    "float8_e8m0": [37, "float8_e8m0fnu", ml_dtypes.float8_e8m0fnu],
    "float4_e2m1": [40, "float4_e2m1fn", ml_dtypes.float4_e2m1fn],
    "float4_e1m2": [41, " float4_e1m2 "],
    "float6_e3m2": [38, "float6_e3m2fn"],
    "float6_e2m3": [39, ml_dtypes.float6_e2m3fn],
}
BAD_FORMATS = [None, 0, 1, 27, 33, 42, -1, True, np.float32, np.int8, "float8", "e4m3", "", "hifloat4", 3.5,
               [36], object()]
X_DTYPES = [np.float32, np.float16, np.float64, H.BF16]
MODES = {"hifloat8": ["round", "hybrid", " Hybrid ", 4, 7, None], "float8_e5m2": ["rint", 1, "none", None],
         "float8_e4m3fn": ["rint", "RINT", None], "float8_e8m0": ["trunc", 5, None],
         "float4_e2m1": ["rint", "round", "floor", "ceil", "trunc", 2, 3, None],
         "float4_e1m2": ["rint", "round", "floor", "ceil", "trunc", None]}
MODE_NAMES = {1: "rint", 2: "floor", 3: "ceil", 4: "round", 5: "trunc", 7: "hybrid", 0: "rint", "none": "rint"}
# names are matched after strip().lower(), as format names are (" Hybrid " above is valid)
BAD_MODES = ["odd", "nearest", 6, 8, -1, True, 1.0, "hy brid", "hybrid_", object()]
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 0, 4), (64,), (4, 33)]


def _mode_name(fmt, mode):
    if mode is None:
        return MODES[fmt][0]
    if isinstance(mode, str):
        return MODE_NAMES.get(mode.strip().lower(), mode.strip().lower())
    return MODE_NAMES[mode]


def _values(rng, data, shape, dt):
    kind = data.draw(st.sampled_from(["random bits", "values", "specials", "near grid"]), "value kind")
    if kind == "random bits":
        return H.random_bits(rng, shape, dt)
    if kind == "near grid":     # magnitudes around the small formats' range: most rounding decisions happen here
        return H.float_values(rng, shape, dt, special_frac=0.1, scale_exp=(-26, 17))
    return H.float_values(rng, shape, dt, special_frac=1.0 if kind == "specials" else 0.02,
                          scale_exp=(-140, 140) if np.dtype(dt) in (np.float32, np.float64, H.BF16) else (-24, 16))


# ---------------------------------------------------------------------------------------------------------------
# the reference encode (value space) and decode
# ---------------------------------------------------------------------------------------------------------------

def _is_nan_code(codes, fmt):
    c = np.asarray(codes, np.uint8)
    if fmt == "float8_e4m3fn":
        return np.isnan(c.view(ml_dtypes.float8_e4m3fn).astype(np.float32))
    if fmt == "float8_e5m2":
        return np.isnan(c.view(ml_dtypes.float8_e5m2).astype(np.float32))
    if fmt == "hifloat8":
        return c == 0x80
    return np.zeros(c.shape, bool)


def _reference_encode(x, fmt, mode, sat, keep_nan, hybrid_overflow, f16_raw, fp4_nan):
    v = np.asarray(x).astype(np.float64) if np.asarray(x).dtype != np.float64 else np.asarray(x)
    if fmt == "hifloat8":
        if mode == "round":
            return R.encode_hif8_round(v, sat)
        x = np.asarray(x)
        if x.dtype == np.float16:
            return R.hybrid_f16(x.view(np.uint16), sat, hybrid_overflow == "script", f16_raw)
        b = x.astype(np.float32).view(np.uint32)          # bf16 and fp32 are exact in float32
        return R.hybrid_f32(b, sat, hybrid_overflow == "script")
    if fmt == "float8_e8m0":
        return R.encode_e8m0(v)
    return R.encode_binary(v, fmt, mode, sat, keep_nan, fp4_nan == "nan_sign")


def _check_encode(got, x, fmt, mode, sat, keep_nan, hybrid_overflow, f16_raw, fp4_nan):
    x, got = np.asarray(x).reshape(-1), np.asarray(got).reshape(-1)         # the reference works on 1-d arrays
    ref = _reference_encode(x, fmt, mode, sat, keep_nan, hybrid_overflow, f16_raw, fp4_nan)
    sign_bit = {"float4_e2m1": 0x8, "float4_e1m2": 0x8}.get(fmt, 0x80)
    vals = np.asarray(x).astype(np.float64)
    try:
        R.check_codes(got, ref, vals, _is_nan_code(got, fmt), sign_bit, f"encode {fmt} {mode}")
    except AssertionError as e:
        raise H.ContractViolation(f"{e}\ninput bits {H.bits(np.asarray(x)).reshape(-1)[:8].tolist()}") from None


def _reference_decode(codes, fmt, e8m0_zero):
    c = np.asarray(codes, np.uint8)
    if fmt == "float8_e8m0":
        return mx_golden.decode_mxscale(c, e8m0_zero)
    typed = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
             "float4_e2m1": ml_dtypes.float4_e2m1fn, "float4_e1m2": en_dtypes.float4_e1m2,
             "hifloat8": en_dtypes.hifloat8, "float6_e3m2": ml_dtypes.float6_e3m2fn,
             "float6_e2m3": ml_dtypes.float6_e2m3fn}[fmt]
    return c.view(typed).astype(np.float32)


# ---------------------------------------------------------------------------------------------------------------
# encode
# ---------------------------------------------------------------------------------------------------------------

ENC_MUTATIONS = ["none"] * 8 + ["fmt", "x_none", "x_dtype", "mode", "saturate", "keep_nan", "hybrid_overflow",
                                "f16_subnormal", "fp4_nan", "out"]


def _fuzz_encode(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    fmt = data.draw(st.sampled_from(ENC_FORMATS), "format")
    spelling = data.draw(st.sampled_from([fmt] + SPELLINGS[fmt]), "format spelling")
    dt = np.dtype(data.draw(st.sampled_from(X_DTYPES), "x dtype"))
    shape = data.draw(st.sampled_from(SHAPES), "shape")
    x = _values(rng, data, shape, dt)
    how = data.draw(st.sampled_from(["c", "strided", "fortran", "negative"]), "layout")
    mode = data.draw(st.sampled_from(MODES[fmt]), "round_mode")
    mname = _mode_name(fmt, mode)
    sat_opts = {"float4_e2m1": [None, True], "float4_e1m2": [None, True], "float8_e8m0": [None]}.get(
        fmt, [None, False, True])
    sat = data.draw(st.sampled_from(sat_opts), "saturate")
    kw = dict(round_mode=mode, saturate=sat,
              sat_keep_nan=data.draw(st.sampled_from([False, True, None]), "sat_keep_nan"),
              hybrid_overflow=data.draw(st.sampled_from(["isa", "script"]), "hybrid_overflow"),
              hybrid_f16_subnormal=data.draw(st.sampled_from(["normalize", "raw"]), "hybrid_f16_subnormal"),
              fp4_nan=data.draw(st.sampled_from(["pos_zero", "nan_sign"]), "fp4_nan"))
    use_out = data.draw(st.booleans(), "pass out")
    out = H.sentinel_like(shape, np.uint8) if use_out else None
    xin = H.layout(x, how)
    want_error, codes = (True, {161002}) if mname == "hybrid" and dt == np.float64 else (False, None)
    mutation = data.draw(st.sampled_from(ENC_MUTATIONS), "mutation")
    if mutation == "fmt":
        spelling = data.draw(st.sampled_from(BAD_FORMATS + ["float6_e3m2", 38, "float6_e2m3"]), "bad format")
        want_error, codes = True, {161001} if spelling is None else {161002}
    elif mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        bad = [d for d in H.WRONG_DTYPES if d not in X_DTYPES]
        xin, want_error, codes = H.readonly(H.as_dtype(x, data.draw(st.sampled_from(bad), "bad x dtype"))), True, \
            {161002}
    elif mutation == "mode":
        others = [m for f, ms in MODES.items() for m in ms if m is not None and _mode_name(f, m) not in
                  [_mode_name(fmt, k) for k in MODES[fmt]]]
        kw["round_mode"] = data.draw(st.sampled_from(BAD_MODES + others), "bad round_mode")
        want_error, codes = True, {161002}
    elif mutation == "saturate":
        kw["saturate"] = data.draw(st.sampled_from(["yes", 1, 0, np.float32(1)] + (
            [False] if fmt.startswith("float4") else [True, False] if fmt == "float8_e8m0" else [])), "bad saturate")
        want_error, codes = True, {161002}
    elif mutation in ("keep_nan", "hybrid_overflow", "f16_subnormal", "fp4_nan"):
        key = {"keep_nan": "sat_keep_nan", "hybrid_overflow": "hybrid_overflow",
               "f16_subnormal": "hybrid_f16_subnormal", "fp4_nan": "fp4_nan"}[mutation]
        kw[key] = data.draw(st.sampled_from(["ISA", "x", 1, 2.5]), f"bad {key}")
        want_error, codes = True, {161002}
    elif mutation == "out":
        bad = data.draw(st.sampled_from(["dtype", "shape", "strided", "readonly", "list"]), "bad out")
        n = int(np.prod(shape))
        out = {"dtype": lambda: H.sentinel_like(shape, np.int8),
               "shape": lambda: H.sentinel_like((n + 1,), np.uint8),
               "strided": lambda: H.sentinel_like(shape[:-1] + (2 * shape[-1],), np.uint8)[..., ::2]
               if shape and n and shape[-1] > 1 else H.sentinel_like((n + 1,), np.uint8),
               "readonly": lambda: H.readonly(H.sentinel_like(shape, np.uint8)),
               "list": lambda: [0] * n}[bad]()
        want_error, codes = True, {161002}
    if kw["saturate"] is not None and fmt == "float8_e8m0" and mutation != "saturate":
        want_error = True
    outs = (out,) if isinstance(out, np.ndarray) else ()
    outcome = H.call_entry("dtypes.encode", dtypes.encode, (xin, spelling), dict(kw, out=out), outs=outs)
    if H.expect(outcome, want_error, "dtypes.encode", codes):
        return
    got = outcome[1]
    if out is not None and got is not out:
        raise H.ContractViolation("encode(out=...) did not return out")
    if got.shape != x.shape or got.dtype != np.uint8:
        raise H.ContractViolation(f"encode returned {got.dtype}{got.shape} for input {x.shape}")
    sat_v = bool(kw["saturate"]) if kw["saturate"] is not None else False
    _check_encode(got, x, fmt, mname, sat_v, bool(kw["sat_keep_nan"]), kw["hybrid_overflow"],
                  kw["hybrid_f16_subnormal"] == "raw", kw["fp4_nan"])


# ---------------------------------------------------------------------------------------------------------------
# decode
# ---------------------------------------------------------------------------------------------------------------

DEC_MUTATIONS = ["none"] * 6 + ["fmt", "codes_none", "codes_dtype", "code_range", "typed_mismatch", "e8m0_zero",
                                "out"]


def _fuzz_decode(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    fmt = data.draw(st.sampled_from(DEC_FORMATS), "format")
    spelling = data.draw(st.sampled_from([fmt] + SPELLINGS[fmt]), "format spelling")
    shape = data.draw(st.sampled_from(SHAPES), "shape")
    width = {"float4_e2m1": 16, "float4_e1m2": 16, "float6_e3m2": 64, "float6_e2m3": 64}.get(fmt, 256)
    codes = rng.integers(0, width, shape, dtype=np.uint8) if shape else np.array(rng.integers(0, width), np.uint8)
    form = data.draw(st.sampled_from(["uint8", "int8", "typed"]), "codes form")
    typed = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
             "float8_e8m0": ml_dtypes.float8_e8m0fnu, "hifloat8": en_dtypes.hifloat8,
             "float4_e2m1": ml_dtypes.float4_e2m1fn, "float4_e1m2": en_dtypes.float4_e1m2}.get(fmt)
    cin = codes.view(np.int8) if form == "int8" else codes.view(typed) if form == "typed" and typed else codes
    how = data.draw(st.sampled_from(["c", "strided", "negative"]), "layout")
    e8m0_zero = data.draw(st.sampled_from(["pow2", "zero"]), "e8m0_zero")
    use_out = data.draw(st.booleans(), "pass out")
    out = H.sentinel_like(shape, np.float32) if use_out else None
    cin = H.layout(cin, how)
    want_error, err_codes = False, None
    mutation = data.draw(st.sampled_from(DEC_MUTATIONS), "mutation")
    if mutation == "fmt":
        spelling = data.draw(st.sampled_from(BAD_FORMATS), "bad format")
        want_error, err_codes = True, {161001} if spelling is None else {161002}
    elif mutation == "codes_none":
        cin, want_error, err_codes = None, True, {161001}
    elif mutation == "codes_dtype":
        bad = [d for d in H.WRONG_DTYPES if d.itemsize != 1 or d.kind == "b"]
        cin = H.readonly(H.as_dtype(codes, data.draw(st.sampled_from(bad), "bad codes dtype")))
        want_error, err_codes = True, {161002}
    elif mutation == "code_range":
        if width < 256 and codes.size:
            bad = codes.copy()
            bad.reshape(-1)[0] = data.draw(st.integers(width, 255), "code")
            cin, want_error, err_codes = H.readonly(bad), True, {161002}
    elif mutation == "typed_mismatch":
        other = [t for f, t in ((f, t) for f, t in [("float8_e4m3fn", ml_dtypes.float8_e4m3fn),
                                                     ("float8_e5m2", ml_dtypes.float8_e5m2),
                                                     ("float8_e8m0", ml_dtypes.float8_e8m0fnu)]) if f != fmt]
        cin, want_error, err_codes = H.readonly(codes.view(data.draw(st.sampled_from(other), "other type"))), \
            True, {161002}
    elif mutation == "e8m0_zero":
        e8m0_zero, want_error, err_codes = data.draw(st.sampled_from(["POW2", None, 0, "flush"]), "bad"), True, \
            {161002}
    elif mutation == "out":
        n = int(np.prod(shape))
        out = data.draw(st.sampled_from([H.sentinel_like(shape, np.float64), H.sentinel_like((n + 1,), np.float32),
                                         H.readonly(H.sentinel_like(shape, np.float32))]), "bad out")
        want_error, err_codes = True, {161002}
    outs = (out,) if isinstance(out, np.ndarray) else ()
    outcome = H.call_entry("dtypes.decode", dtypes.decode, (cin, spelling), dict(e8m0_zero=e8m0_zero, out=out),
                           outs=outs)
    if not H.expect(outcome, want_error, "dtypes.decode", err_codes):
        H.same_bits(outcome[1], _reference_decode(codes, fmt, e8m0_zero), f"decode {fmt}", nan_dtype=np.float32)


# ---------------------------------------------------------------------------------------------------------------
# pack_fp4 / unpack_fp4: against kernels/mx_quant/golden.py's packer
# ---------------------------------------------------------------------------------------------------------------

def _fuzz_fp4_packing(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    shape = data.draw(st.sampled_from([(2,), (1,), (3, 4), (2, 5), (0, 2), (6,)]), "shape")
    order = data.draw(st.sampled_from(["low_first", "high_first"]), "fp4_nibble_order")
    codes = rng.integers(0, 16, shape, dtype=np.uint8)
    bad = data.draw(st.sampled_from(["none"] * 4 + ["order", "range", "scalar", "none_arg"]), "mutation")
    cin, kw, want_error = H.layout(codes, "c"), dict(fp4_nibble_order=order), False
    if bad == "order":
        kw["fp4_nibble_order"], want_error = data.draw(st.sampled_from(["LOW", None, 1]), "bad order"), True
    elif bad == "range" and codes.size:
        c2 = codes.copy()
        c2.reshape(-1)[-1] = 16
        cin, want_error = H.readonly(c2), True
    elif bad == "scalar":
        cin, want_error = H.readonly(np.uint8(3)), True
    elif bad == "none_arg":
        cin, want_error = None, True
    outcome = H.call_entry("dtypes.pack_fp4", dtypes.pack_fp4, (cin,), kw)
    if H.expect(outcome, want_error, "dtypes.pack_fp4"):
        return
    padded = np.concatenate([codes, np.zeros(shape[:-1] + (shape[-1] % 2,), np.uint8)], axis=-1)
    H.same_bits(outcome[1], mx_golden.pack_fp4(padded, order), "pack_fp4")
    packed = H.readonly(outcome[1])
    count = data.draw(st.sampled_from([shape[-1], shape[-1] + 1, shape[-1] - 1, -1, 2.0, None]), "count")
    ok = isinstance(count, int) and (count + 1) // 2 == packed.shape[-1] and count >= 0
    back = H.call_entry("dtypes.unpack_fp4", dtypes.unpack_fp4, (packed, count), dict(fp4_nibble_order=order))
    if not H.expect(back, None if ok else True, "dtypes.unpack_fp4", None if ok else {161002}):
        H.same_bits(back[1], mx_golden.unpack_fp4(packed, order)[..., :count], "unpack_fp4")


test_fuzz_encode, test_fuzz_encode_long = H.fast_and_slow(_fuzz_encode)
test_fuzz_decode, test_fuzz_decode_long = H.fast_and_slow(_fuzz_decode)
test_fuzz_fp4_packing, test_fuzz_fp4_packing_long = H.fast_and_slow(_fuzz_fp4_packing)
