"""Fuzz SignBitsUnpack / SignBitsPack: npu_emu.ops.npu_sign_bits_unpack/pack and the aclnn pairs.

Each example draws a valid call (shape, size, dtype spelling, switches, SoC, core_num / ub_size, memory layout of
the read-only input) and at most one mutation that makes it invalid; the call must then fail with the listed
status or (when valid) return the bits of kernels/sign_bits/golden.py.
"""

import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.sign_bits import golden as golden

# Byte counts around the 64-byte block, the 512-byte pack unit and multi-core splits (with small ub_size).
N_BYTES = [0, 1, 7, 8, 63, 64, 65, 127, 200, 511, 513, 1000, 2049]
N_ELEMS = [0, 1, 7, 8, 9, 255, 256, 257, 511, 512, 513, 1000, 4095, 4097]
SOCS = ["ascend910b2", "ascend950pr"]
OTHER_SOCS = ["ascend910b1", "ascend910_93", "ascend950dt", "ascend310p", "kirin9020", "ascend910", "ut_faker",
              "no_such_soc", None, 3]
UNPACK_DTYPES = {"float32": [0, "float32", np.float32, np.dtype(np.float32), "float", "fp32"],
                 "float16": [1, "float16", np.float16, "half", "fp16"]}
BAD_UNPACK_DTYPES = [2, 27, "bfloat16", np.int8, "float8_e4m3fn", "nonsense", 1.0, -1, 12345]
CORE_NUMS = [None, 1, 2, 3, 48]
UB_SIZES = [None, 8192, 16384, 196352]          # 8192: the smallest that fits a double-buffered f32 tile


def _divisors(k):
    return [d for d in range(1, k + 1) if k % d == 0] if k else [1, 2, 5]


def _options(data):
    return dict(core_num=data.draw(st.sampled_from(CORE_NUMS), "core_num"),
                ub_size=data.draw(st.sampled_from(UB_SIZES), "ub_size"))


def _soc(data):
    if data.draw(st.integers(0, 9), "soc roll") == 0:
        return data.draw(st.sampled_from(OTHER_SOCS), "soc"), None       # may or may not have a kernel
    return data.draw(st.sampled_from(SOCS), "soc"), False


# ---------------------------------------------------------------------------------------------------------------
# unpack
# ---------------------------------------------------------------------------------------------------------------

UNPACK_MUTATIONS = ["none"] * 10 + ["x_none", "x_dtype", "x_ndim", "size", "dtype", "core_num", "ub_size"]


def _unpack_case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    n = data.draw(st.sampled_from(N_BYTES), "n")
    out_name = data.draw(st.sampled_from(sorted(UNPACK_DTYPES)), "out dtype")
    dtype = data.draw(st.sampled_from(UNPACK_DTYPES[out_name]), "dtype spelling")
    size = data.draw(st.sampled_from(_divisors(8 * n)), "size")
    x = rng.integers(0, 256, n, dtype=np.uint8)
    if data.draw(st.booleans(), "constant x"):
        x[:] = x[0] if n else 0
    how = data.draw(st.sampled_from(["c", "strided", "negative", "broadcast"]), "layout")
    soc, want_error = _soc(data)
    opts = _options(data)
    mutation = data.draw(st.sampled_from(UNPACK_MUTATIONS), "mutation")
    codes = None
    xin = H.layout(x, how)
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        wrong = data.draw(st.sampled_from([d for d in H.WRONG_DTYPES if d != np.uint8]), "x dtype")
        xin, want_error, codes = H.readonly(H.as_dtype(x, wrong)), True, {161002}
    elif mutation == "x_ndim":
        xin = H.readonly(x.reshape(1, -1) if data.draw(st.booleans(), "2-d") or n != 1 else x.reshape(()))
        want_error, codes = True, {161002}
    elif mutation == "size":
        size = data.draw(st.sampled_from(H.BAD_INTS + [8 * n + 1 if n else -8, 3 if (8 * n) % 3 else 5]), "bad size")
        ok_int = isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > 0 and \
            size < 2 ** 63 and (8 * n) % size == 0
        want_error = None if ok_int else True
    elif mutation == "dtype":
        dtype = data.draw(st.sampled_from(BAD_UNPACK_DTYPES + [None]), "bad dtype")
        want_error = True
    elif mutation == "core_num":
        opts["core_num"] = data.draw(st.sampled_from([0, -1, 1.5, "4", 2 ** 70, True]), "bad core_num")
        want_error = None if n == 0 else True
    elif mutation == "ub_size":
        opts["ub_size"] = data.draw(st.sampled_from([0, -5, 1, 63, 1000, 2.0, 2 ** 70, "4096"]), "bad ub_size")
        # a small positive UB may still fit a tile (the 950 tiling); anything else must be refused
        want_error = None if n == 0 or opts["ub_size"] in (63, 1000) else True
    if soc not in SOCS:
        codes = None                  # an unknown soc= is an emulator argument, checked before CANN's checks
    return x, xin, size, dtype, out_name, soc, opts, want_error, codes


def _fuzz_unpack_ops(data):
    x, xin, size, dtype, out_name, soc, opts, want_error, codes = _unpack_case(data)
    kwargs = dict(opts)
    if soc is not None or data.draw(st.booleans(), "pass soc=None"):
        kwargs["soc"] = soc
    outcome = H.call_entry("npu_sign_bits_unpack", ops.npu_sign_bits_unpack, (xin, size, dtype), kwargs)
    if not H.expect(outcome, want_error, "npu_sign_bits_unpack", codes):
        H.same_bits(outcome[1], golden.sign_bits_unpack(x, size, out_name), "npu_sign_bits_unpack")


def _fuzz_unpack_aclnn(data):
    x, xin, size, dtype, out_name, soc, opts, want_error, codes = _unpack_case(data)
    n = x.size
    out_dtype = np.float16 if out_name == "float16" else np.float32
    ok_size = type(size) is int and 0 < size < 2 ** 31 and (8 * n) % size == 0
    out_shape = (size, 8 * n // size) if ok_size else (1, 8 * n)
    out_mut = data.draw(st.sampled_from(["ok"] * 8 + ["none", "dtype", "shape", "1-d", "strided"]
                                        + H.KNOWN_BUG_MUTATIONS),
                        "out mutation")
    out = H.sentinel_like(out_shape, out_dtype)
    if out_mut != "ok":
        codes = None                                   # two mutations: which check fires first is CANN's order
    if out_mut == "none":
        out, want_error = None, True
    elif out_mut == "dtype":
        out = H.sentinel_like(out_shape, data.draw(st.sampled_from([np.float64, np.uint8, np.int32, H.BF16,
                                                                     np.float16 if out_dtype == np.float32
                                                                     else np.float32]), "out dtype"))
        want_error = True
    elif out_mut == "shape":
        out = H.sentinel_like((out_shape[0], out_shape[1] + 1), out_dtype)
        want_error = True
    elif out_mut == "1-d":
        out = H.sentinel_like((out_shape[0] * out_shape[1],), out_dtype)
        want_error = None if out_shape[0] == 1 and want_error is not True else True
        want_error = True if out_shape[0] != 1 or n == 0 else want_error
    elif out_mut == "strided":
        big = H.sentinel_like((out_shape[0], 2 * out_shape[1]), out_dtype)
        out = big[:, ::2]
    elif out_mut == "readonly":
        out.setflags(write=False)
        want_error = True if n else want_error
    kwargs = dict(opts, soc=soc, api_variant=data.draw(st.sampled_from([None, None, "experimental", "math"]),
                                                       "api_variant"))
    if kwargs["api_variant"] is not None or soc not in SOCS:
        want_error = None if want_error is not True else True     # the platform tables decide
    outs = () if out is None else (out,)
    res = H.call_aclnn("aclnnSignBitsUnpack", (xin, size, dtype, out), kwargs, outs=outs)
    if not H.expect(res, want_error, "aclnnSignBitsUnpack", codes):
        H.same_bits(out, golden.sign_bits_unpack(x, size, out_name).reshape(out.shape), "aclnnSignBitsUnpack")


# ---------------------------------------------------------------------------------------------------------------
# pack
# ---------------------------------------------------------------------------------------------------------------

PACK_MUTATIONS = ["none"] * 10 + ["x_none", "x_dtype", "x_ndim", "size", "nan_bit", "denormal", "core_num"]


def _pack_case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    n = data.draw(st.sampled_from(N_ELEMS), "n")
    dt = np.dtype(data.draw(st.sampled_from([np.float32, np.float16]), "x dtype"))
    size = data.draw(st.sampled_from(_divisors(-(-n // 8))), "size")
    special = data.draw(st.sampled_from([0.0, 0.05, 0.5, 1.0]), "special share")
    x = H.float_values(rng, (n,), dt, special_frac=special, scale_exp=(-30, 30) if dt == np.float32 else (-14, 15))
    how = data.draw(st.sampled_from(["c", "strided", "negative", "broadcast"]), "layout")
    if how == "broadcast" and n:
        x[:] = x[0]
    soc, want_error = _soc(data)
    opts = _options(data)
    if opts["ub_size"] is not None and opts["ub_size"] < 196352:
        want_error = None         # the pack tiling reads UB but ignores it: a small ub_size may overflow (561002)
    nan_bit = data.draw(st.sampled_from([0, 1, True, False]), "nan_bit")
    denormal = data.draw(st.sampled_from(["ieee", "ftz"]), "denormal_compare")
    mutation = data.draw(st.sampled_from(PACK_MUTATIONS), "mutation")
    codes = None
    xin = H.layout(x, how)
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        wrong = data.draw(st.sampled_from([d for d in H.WRONG_DTYPES if d not in (np.float16, np.float32)]), "x dt")
        xin, want_error, codes = H.readonly(H.as_dtype(x, wrong)), True, {161002}
    elif mutation == "x_ndim":
        xin, want_error, codes = H.readonly(x.reshape(1, -1)), True, {161002}
    elif mutation == "size":
        packed = -(-n // 8)
        size = data.draw(st.sampled_from(H.BAD_INTS + [packed + 1, 0]), "bad size")
        ok_int = isinstance(size, (int, np.integer)) and not isinstance(size, bool) and 0 < size < 2 ** 63 and \
            packed % size == 0
        want_error = None if ok_int else True
    elif mutation == "nan_bit":
        nan_bit, want_error, codes = data.draw(st.sampled_from([2, -1, "1", None, 0.5]), "bad nan_bit"), True, None
    elif mutation == "denormal":
        denormal, want_error = data.draw(st.sampled_from(["IEEE", "daz", None, 0]), "bad denormal_compare"), True
    elif mutation == "core_num":
        opts["core_num"] = data.draw(st.sampled_from([0, -1, 1.5, "4", 2 ** 70, True]), "bad core_num")
        want_error = None if n == 0 else True
    if soc not in SOCS:
        codes = None
    return x, xin, size, soc, opts, int(nan_bit) if nan_bit in (0, 1) else nan_bit, denormal, want_error, codes


def _pack_golden(x, size, nan_bit, denormal, soc):
    return golden.sign_bits_pack(x, size, nan_bit=nan_bit, denormal_compare=denormal, soc=soc or "ascend910b2")


def _fuzz_pack_ops(data):
    x, xin, size, soc, opts, nan_bit, denormal, want_error, codes = _pack_case(data)
    kwargs = dict(opts, soc=soc, nan_bit=nan_bit, denormal_compare=denormal)
    outcome = H.call_entry("npu_sign_bits_pack", ops.npu_sign_bits_pack, (xin, size), kwargs)
    if not H.expect(outcome, want_error, "npu_sign_bits_pack", codes):
        H.same_bits(outcome[1], _pack_golden(x, size, nan_bit, denormal, soc), "npu_sign_bits_pack")


def _fuzz_pack_aclnn(data):
    x, xin, size, soc, opts, nan_bit, denormal, want_error, codes = _pack_case(data)
    packed = -(-x.size // 8)
    ok_size = type(size) is int and 0 < size < 2 ** 31 and packed % size == 0
    out_shape = (size, packed // size) if ok_size else (1, packed)
    out_mut = data.draw(st.sampled_from(["ok"] * 8 + ["none", "dtype", "shape", "strided"]
                                        + H.KNOWN_BUG_MUTATIONS), "out mut")
    out = H.sentinel_like(out_shape, np.uint8)
    if out_mut != "ok":
        codes = None
    if out_mut == "none":
        out, want_error = None, True
    elif out_mut == "dtype":
        out, want_error = H.sentinel_like(out_shape, data.draw(st.sampled_from([np.int8, np.float32, np.uint16]),
                                                               "out dtype")), True
    elif out_mut == "shape":
        out, want_error = H.sentinel_like((out_shape[0], out_shape[1] + 1), np.uint8), True
    elif out_mut == "strided":
        out = H.sentinel_like((out_shape[0], 2 * out_shape[1]), np.uint8)[:, ::2]
    elif out_mut == "readonly":
        out.setflags(write=False)
        want_error = True if x.size else want_error
    api_variant = data.draw(st.sampled_from([None, None, "experimental", "math"]), "api_variant")
    if api_variant is not None or soc not in SOCS:
        want_error = None if want_error is not True else True
    kwargs = dict(opts, soc=soc, api_variant=api_variant, nan_bit=nan_bit, denormal_compare=denormal)
    outs = () if out is None else (out,)
    res = H.call_aclnn("aclnnSignBitsPack", (xin, size, out), kwargs, outs=outs)
    if not H.expect(res, want_error, "aclnnSignBitsPack", codes):
        H.same_bits(out, _pack_golden(x, size, nan_bit, denormal, soc).reshape(out.shape), "aclnnSignBitsPack")


# ---------------------------------------------------------------------------------------------------------------
# the tests: a fixed-seed fast run in the default suite, the long run behind -m slow
# ---------------------------------------------------------------------------------------------------------------

test_fuzz_unpack_ops, test_fuzz_unpack_ops_long = H.fast_and_slow(_fuzz_unpack_ops)
test_fuzz_pack_ops, test_fuzz_pack_ops_long = H.fast_and_slow(_fuzz_pack_ops)
test_fuzz_unpack_aclnn, test_fuzz_unpack_aclnn_long = H.fast_and_slow(_fuzz_unpack_aclnn)
test_fuzz_pack_aclnn, test_fuzz_pack_aclnn_long = H.fast_and_slow(_fuzz_pack_aclnn)
