"""Bit-exact codecs of the Ascend low-precision formats (installed as ``npu_emu.dtypes``; docs/codecs.md).

Scalar codecs for njit kernels live in ``npu_emu.dtypes.scalar``; the MX kernels' 16-bit casts also have vector
forms, 32 elements a call, in ``npu_emu.dtypes.vector``. This module is the numpy-level API: it validates every
argument (raising ``AclnnError`` 161001/161002 with what to change) and then runs a parallel njit loop over the
scalar codecs. Codes are uint8, one per element (FP4 in the low nibble; ``pack_fp4`` makes ``fp4x2`` bytes).

float64 inputs are rounded to float32 with round-to-odd first (``scalar.f64_to_f32_odd``). For every target here
(at most 22 significand bits, quanta of at least 2^-147) that intermediate keeps the float64 value's position
relative to every representable value and midpoint, so the final code equals one rounding of the float64 value:
no double rounding. HYBRID rounding reads the input's own low bits, so it takes float32/float16/bfloat16 only.
"""

import functools
from collections import namedtuple

import ml_dtypes
import numpy as np

from npu_emu.dtypes import _kernels as K
from npu_emu.dtypes import scalar
from npu_emu.dtypes.scalar import (  # noqa: F401  (re-exported round-mode ints)
    CAST_CEIL,
    CAST_FLOOR,
    CAST_HYBRID,
    CAST_NONE,
    CAST_ODD,
    CAST_RINT,
    CAST_ROUND,
    CAST_TRUNC,
)
from npu_emu import dtype_table as _table
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError, nullptr
from npu_emu.device.jit_options import serial_below
from npu_emu.device.read_only import read_only as ro

__all__ = [
    "FORMATS", "ROUND_MODES", "resolve_format", "encode", "decode", "pack_fp4", "unpack_fp4", "cast",
    "to_float16", "to_bfloat16", "scalar",
]

ROUND_MODES = {"none": CAST_NONE, "rint": CAST_RINT, "floor": CAST_FLOOR, "ceil": CAST_CEIL, "round": CAST_ROUND,
               "trunc": CAST_TRUNC, "odd": CAST_ODD, "hybrid": CAST_HYBRID}
_MODE_NAMES = {v: k for k, v in ROUND_MODES.items()}

FormatInfo = namedtuple("FormatInfo", "name acl bits round_modes")
# round_modes: the modes docs/codecs.md §2.3 allows when encoding to the format, the default first.
# float8_e8m0 has no mode in the ISA (exponent truncation); npu-emu calls that rule "trunc".
# the low-precision formats of the one dtype table (npu_emu.dtype_table), with the modes each allows
_ROUND_MODES_OF = {
    "hifloat8": ("round", "hybrid"), "float8_e5m2": ("rint",), "float8_e4m3fn": ("rint",), "float8_e8m0": ("trunc",),
    "float6_e3m2": (), "float6_e2m3": (),
    "float4_e2m1": ("rint", "round", "floor", "ceil", "trunc"), "float4_e1m2": ("rint", "round", "floor", "ceil", "trunc"),
}
FORMATS = {d.name: FormatInfo(d.name, d.acl, d.bits, _ROUND_MODES_OF[d.name]) for d in _table.codecs()}
_BY_ACL = {f.acl: f.name for f in FORMATS.values()}
_FP16_MODES = ("rint", "round", "floor", "ceil", "trunc", "odd")


def _small_on_caller(fn):
    """Run the codec's parallel loops on the calling thread for small arrays (npu_emu.device.jit_options.serial_below:
    a thread pool's start costs more than it saves there; results are the same). The work is counted as 5 bytes
    per element, a 4-byte value and a 1-byte code."""
    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        size = getattr(x, "size", None)
        if not isinstance(size, int):
            return fn(x, *args, **kwargs)
        with serial_below(5 * size):
            return fn(x, *args, **kwargs)
    return wrapper


def _invalid(message):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, message)


def resolve_format(fmt):
    """Canonical name of a low-precision format given by name, aclDataType code (34-41) or numpy/ml_dtypes dtype."""
    if fmt is None:
        raise nullptr("fmt")
    if isinstance(fmt, (bool, np.bool_)):
        raise _invalid(f"format {fmt!r} is not a format; use a name such as 'float8_e4m3fn' or an aclDataType 34-41")
    if isinstance(fmt, (int, np.integer)):
        if int(fmt) in _BY_ACL:
            return _BY_ACL[int(fmt)]
        raise _invalid(f"aclDataType {int(fmt)} is not a low-precision format; use 34-41 "
                       f"({', '.join(f'{k} {v}' for k, v in sorted(_BY_ACL.items()))})")
    if isinstance(fmt, str):
        key = fmt.strip().lower()
    else:
        try:
            key = np.dtype(fmt).name
        except TypeError:
            raise _invalid(f"format {fmt!r} is neither a name, an aclDataType code nor a dtype; use one of "
                           f"{', '.join(FORMATS)}") from None
    key = _table.canonical(key) or key
    if key in FORMATS:
        return key
    raise _invalid(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)} (or aclDataType 34-41, or an "
                   "ml_dtypes dtype)")


def _choice(value, name, allowed):
    if value not in allowed:
        raise _invalid(f"{name}={value!r} is not supported; use one of {', '.join(map(repr, allowed))}")
    return value


def _round_mode(round_mode, allowed, what):
    """Ascend mode int for a name / RoundMode int; ``None`` = allowed[0]; "none" (CAST_NONE) means rint."""
    if round_mode is None:
        name = allowed[0]
    elif isinstance(round_mode, str) and round_mode.strip().lower() in ROUND_MODES:
        name = round_mode.strip().lower()
    elif isinstance(round_mode, (int, np.integer)) and not isinstance(round_mode, (bool, np.bool_)) \
            and int(round_mode) in _MODE_NAMES:
        name = _MODE_NAMES[int(round_mode)]
    else:
        raise _invalid(f"round_mode={round_mode!r} is not a round mode; use one of "
                       f"{', '.join(map(repr, allowed))} for {what}")
    if name == "none" and "rint" in allowed:
        name = "rint"
    if name not in allowed:
        raise _invalid(f"round_mode {name!r} is not supported for {what}; allowed: {', '.join(map(repr, allowed))}")
    return ROUND_MODES[name]


def _bool(value, name, default):
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise _invalid(f"{name}={value!r} must be True, False or None")


_FLOAT_KINDS = {"float32", "float16", "float64", "bfloat16"}


def _float_input(x, name="x"):
    """(flat C-contiguous array, kind, shape) of a float32/float16/float64/bfloat16 input."""
    if x is None:
        raise nullptr(name)
    arr = np.asarray(x)
    kind = arr.dtype.name
    if kind not in _FLOAT_KINDS:
        raise _invalid(f"{name} has dtype {arr.dtype}; pass float32, float16, float64 or ml_dtypes.bfloat16 values")
    return np.ascontiguousarray(arr).reshape(-1), kind, arr.shape


def _exact_f32(flat, kind):
    """float32 carrying the input exactly (float16/bfloat16 widen; float64 rounds to odd, see module doc)."""
    if kind == "float32":
        return flat
    out = np.empty(flat.size, np.float32)
    if kind == "float16":
        K.widen_f16(ro(flat.view(np.uint16)), out)
    elif kind == "bfloat16":
        out.view(np.uint32)[:] = flat.view(np.uint16).astype(np.uint32) << 16
    else:
        K.f64_to_f32_odd(ro(flat), out)
    return out


def _out_array(out, shape, dtype, name="out"):
    if out is None:
        return np.empty(shape, dtype)
    if not isinstance(out, np.ndarray) or out.dtype != dtype or out.shape != tuple(shape) \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise _invalid(f"{name} must be a writeable C-contiguous {np.dtype(dtype).name} array of shape {tuple(shape)}")
    return out


@_small_on_caller
def encode(x, fmt, *, round_mode=None, saturate=None, sat_keep_nan=False, hybrid_overflow="isa",
           hybrid_f16_subnormal="normalize", fp4_nan="pos_zero", out=None):
    """Codes (uint8, same shape as x) of float32/float16/float64/bfloat16 values in format ``fmt``.

    One rounding of the exact input value (FP4: the MX kernels' "direct" path; ``cast`` has the aclnnCast chains).
    ``round_mode``: a name or Ascend ``RoundMode`` int allowed for the format (docs/codecs.md §2.3), default first:
    hifloat8 "round"/"hybrid"; float8_e4m3fn, float8_e5m2 "rint"; float4_* "rint", "round", "floor", "ceil",
    "trunc"; float8_e8m0 "trunc" (hardware exponent truncation, sign dropped, 0 -> 0x00, Inf -> 0xFE).
    ``saturate`` (HiF8/FP8; default False = Inf/NaN mode): overflow and Inf -> ±max, NaN -> 0 unless
    ``sat_keep_nan``. FP4 always saturates. ``hybrid_overflow`` "isa"/"script", ``hybrid_f16_subnormal``
    "normalize"/"raw", ``fp4_nan`` "pos_zero"/"nan_sign": docs/codecs.md §0.
    """
    name = resolve_format(fmt)
    flat, kind, shape = _float_input(x)
    info = FORMATS[name]
    if not info.round_modes:
        raise _invalid(f"{name} has no encoder: no Ascend conversion produces FP6 (docs/codecs.md §7.5); decode only")
    what = f"encoding to {name}"
    rmode = _round_mode(round_mode, info.round_modes, what)
    keep_nan = _bool(sat_keep_nan, "sat_keep_nan", False)
    _choice(hybrid_overflow, "hybrid_overflow", ("isa", "script"))
    _choice(hybrid_f16_subnormal, "hybrid_f16_subnormal", ("normalize", "raw"))
    _choice(fp4_nan, "fp4_nan", ("pos_zero", "nan_sign"))
    if name.startswith("float4"):
        if saturate is not None and not _bool(saturate, "saturate", True):
            raise _invalid(f"{name} conversions always saturate; drop saturate=False")
    elif name == "float8_e8m0":
        if saturate is not None:
            raise _invalid("float8_e8m0 encoding has no saturation switch (Inf -> 0xFE, NaN -> 0xFF); drop saturate")
    sat = _bool(saturate, "saturate", False)
    if rmode == CAST_HYBRID and kind == "float64":
        raise _invalid("round_mode 'hybrid' reads the low bits of the float32/float16 input; convert float64 x to "
                       "float32 (or float16) first")
    res = _out_array(out, shape, np.uint8)
    dst = res.reshape(-1)
    if name == "hifloat8" and kind == "float16":
        K.encode_hif8_f16(ro(flat.view(np.uint16)), dst, rmode, sat, hybrid_overflow == "script",
                          hybrid_f16_subnormal == "raw")
        return res
    v = _exact_f32(flat, kind)
    if name == "hifloat8":
        K.encode_hif8(ro(v), dst, rmode, sat, hybrid_overflow == "script")
    elif name == "float8_e4m3fn":
        K.encode_e4m3fn(ro(v), dst, sat, keep_nan)
    elif name == "float8_e5m2":
        K.encode_e5m2(ro(v), dst, sat, keep_nan)
    elif name == "float4_e2m1":
        K.encode_fp4_e2m1(ro(v), dst, rmode, fp4_nan == "nan_sign")
    elif name == "float4_e1m2":
        K.encode_fp4_e1m2(ro(v), dst, rmode, fp4_nan == "nan_sign")
    else:
        K.encode_e8m0(ro(v), dst)
    return res


def _code_input(codes, name, what="codes"):
    """(flat uint8 codes, shape) of a uint8/int8 array or an array typed with format ``name``."""
    if codes is None:
        raise nullptr(what)
    arr = np.asarray(codes)
    if arr.dtype.kind in "ui" and arr.dtype.itemsize == 1:
        pass
    elif arr.dtype.itemsize == 1 and arr.dtype.kind != "b":
        try:
            typed = resolve_format(arr.dtype)
        except AclnnError:
            typed = None
        if typed != name:
            raise _invalid(f"{what} are typed {arr.dtype.name} but the format is {name}; pass uint8 codes or "
                           f"an array of {name}")
    else:
        raise _invalid(f"{what} has dtype {arr.dtype}; pass uint8 codes (or an ml_dtypes/en_dtypes {name} array)")
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    bits = FORMATS[name].bits
    if bits < 8 and flat.size and int(flat.max()) >> bits:
        raise _invalid(f"{name} codes must be in 0..{(1 << bits) - 1} (one code per byte); "
                       + ("unpack fp4x2 bytes with unpack_fp4 first" if bits == 4 else "found larger values"))
    return flat, arr.shape


@_small_on_caller
def decode(codes, fmt, *, e8m0_zero="pow2", out=None):
    """float32 values of ``codes`` (uint8, one code per byte) in format ``fmt``; exact.

    ``e8m0_zero``: "pow2" (E8M0 0x00 -> 2^-127, default) or "zero" (0x00 -> 0.0).
    """
    name = resolve_format(fmt)
    _choice(e8m0_zero, "e8m0_zero", ("pow2", "zero"))
    flat, shape = _code_input(codes, name)
    table = scalar.DECODE_TABLES["float8_e8m0_zero" if name == "float8_e8m0" and e8m0_zero == "zero" else name]
    res = _out_array(out, shape, np.float32)
    K.decode_lut(ro(flat), ro(K.lut256(table)), res.reshape(-1))
    return res


@_small_on_caller
def pack_fp4(codes, *, fp4_nibble_order="low_first"):
    """fp4x2 bytes: codes (0..15, one per byte) packed two per byte along the last axis; element 2i goes to the low
    nibble ("low_first", default) or the high nibble ("high_first"). An odd last dimension is padded with code 0."""
    _choice(fp4_nibble_order, "fp4_nibble_order", ("low_first", "high_first"))
    if codes is None:
        raise nullptr("codes")
    arr = np.asarray(codes)
    if arr.ndim == 0:
        raise _invalid("pack_fp4 needs an array with at least one dimension")
    name = "float4_e2m1"
    if arr.dtype.kind not in "uib" and arr.dtype.itemsize == 1:
        name = resolve_format(arr.dtype)
        if not name.startswith("float4"):
            raise _invalid(f"pack_fp4 packs FP4 codes; got an array of {name}")
    flat, shape = _code_input(arr, name)
    c = flat.reshape(shape)
    if shape[-1] % 2:
        c = np.concatenate([c, np.zeros(shape[:-1] + (1,), np.uint8)], axis=-1)
    even, odd = c[..., 0::2], c[..., 1::2]
    lo, hi = (even, odd) if fp4_nibble_order == "low_first" else (odd, even)
    return np.ascontiguousarray(lo | (hi << 4))


@_small_on_caller
def unpack_fp4(packed, count, *, fp4_nibble_order="low_first"):
    """Codes (uint8, one per byte) of fp4x2 bytes: ``count`` codes along the last axis (2n - 1 or 2n for n bytes)."""
    _choice(fp4_nibble_order, "fp4_nibble_order", ("low_first", "high_first"))
    if packed is None:
        raise nullptr("packed")
    arr = np.asarray(packed)
    if arr.dtype != np.uint8 or arr.ndim == 0:
        raise _invalid(f"packed must be a uint8 array of fp4x2 bytes with at least one dimension; got {arr.dtype} "
                       f"with {arr.ndim} dimensions")
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) \
            or (int(count) + 1) // 2 != arr.shape[-1]:
        raise _invalid(f"count={count!r} does not match {arr.shape[-1]} packed bytes; use "
                       f"{max(2 * arr.shape[-1] - 1, 0)} or {2 * arr.shape[-1]}")
    lo, hi = arr & 0xF, arr >> 4
    even, odd = (lo, hi) if fp4_nibble_order == "low_first" else (hi, lo)
    out = np.empty(arr.shape[:-1] + (2 * arr.shape[-1],), np.uint8)
    out[..., 0::2] = even
    out[..., 1::2] = odd
    return np.ascontiguousarray(out[..., :int(count)])


def _round_16(x, round_mode, saturate, dst):
    flat, kind, shape = _float_input(x)
    rmode = _round_mode(round_mode if round_mode is not None else "rint", _FP16_MODES, f"rounding to {dst}")
    sat = _bool(saturate, "saturate", False)
    res = np.empty(shape, np.uint16)
    if kind == dst:
        res.reshape(-1)[:] = flat.view(np.uint16)
    else:
        (K.to_f16 if dst == "float16" else K.to_bf16)(ro(_exact_f32(flat, kind)), res.reshape(-1), rmode, sat)
    return res.view(np.float16 if dst == "float16" else ml_dtypes.bfloat16)


@_small_on_caller
def to_float16(x, *, round_mode="rint", saturate=False):
    """float16 array of float32/float64/float16/bfloat16 values: one rounding (rint, round, floor, ceil, trunc,
    odd); ``saturate``: overflow/Inf -> ±65504 and NaN -> +0. Directed modes overflow as in IEEE 754 §7.4.
    A float16 input is returned as a copy (no conversion happens)."""
    return _round_16(x, round_mode, saturate, "float16")


@_small_on_caller
def to_bfloat16(x, *, round_mode="rint", saturate=False):
    """ml_dtypes.bfloat16 array of float32/float64/float16/bfloat16 values; modes and saturation as
    ``to_float16`` (max 0x7F7F)."""
    return _round_16(x, round_mode, saturate, "bfloat16")


# ----------------------------------------------------------------------------------------------------------------
# aclnnCast chains (docs/codecs.md §10, hicann/ops-math: math/cast/op_kernel/arch35/cast_struct.h castMap)

_PLAIN = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
_PLAIN_ACL = {_table.BY_NAME[name].acl: name for name in _PLAIN}


def _resolve_type(t, what):
    if t is None:
        raise nullptr(what)
    if isinstance(t, (int, np.integer)) and not isinstance(t, (bool, np.bool_)) and int(t) in _PLAIN_ACL:
        return _PLAIN_ACL[int(t)]
    if isinstance(t, str):
        key = _table.canonical(t)
        if key in _PLAIN:
            return key
    elif not isinstance(t, (int, np.integer, bool, np.bool_)):
        try:
            if np.dtype(t).name in _PLAIN:
                return np.dtype(t).name
        except TypeError:
            pass
    try:
        return resolve_format(t)
    except AclnnError:
        raise _invalid(f"{what}={t!r} is not a cast type; use float32, float16, bfloat16 or one of "
                       f"{', '.join(FORMATS)}") from None


def _cast_values(x, src):
    """(exact float32 values, shape) of a cast input of type src (floats as values, formats as codes)."""
    if src in _PLAIN:
        flat, kind, shape = _float_input(x)
        if kind != src:
            raise _invalid(f"x has dtype {kind} but src is {src}; pass src={kind!r} or convert x")
        return _exact_f32(flat, kind), shape
    flat, shape = _code_input(x, src, "x")
    values = np.empty(flat.size, np.float32)
    K.decode_lut(ro(flat), ro(K.lut256(scalar.DECODE_TABLES[src])), values)
    return values, shape


def _f32_to_16(v, dst, sat):
    bits = np.empty(v.size, np.uint16)
    (K.to_f16 if dst == "float16" else K.to_bf16)(ro(v), bits, CAST_RINT, sat)
    return bits


def _widen16(bits, kind):
    v = np.empty(bits.size, np.float32)
    if kind == "float16":
        K.widen_f16(ro(bits), v)
    else:
        v.view(np.uint32)[:] = bits.astype(np.uint32) << 16
    return v


_NO_PATH = {("hifloat8", "float8_e4m3fn"), ("hifloat8", "float8_e5m2"), ("float8_e4m3fn", "hifloat8"),
            ("float8_e5m2", "hifloat8"), ("float8_e4m3fn", "float8_e5m2"), ("float8_e5m2", "float8_e4m3fn"),
            ("float4_e2m1", "float4_e1m2"), ("float4_e1m2", "float4_e2m1")}


@_small_on_caller
def cast(x, src, dst, *, saturate=False, sat_keep_nan=False, fp4_path="via_bf16", fp4_nan="pos_zero"):
    """aclnnCast on Ascend 950: convert x from ``src`` to ``dst`` along the castMap chain of docs/codecs.md §10.

    Types: float32, float16, bfloat16 (x as values) and the low-precision formats (x as uint8 codes, one per
    byte, or an ml_dtypes/en_dtypes array of the format); ``src=None`` takes the type from x's dtype. Returns
    float32 / float16 / ml_dtypes.bfloat16 values or uint8 codes (FP4 unpacked: see ``pack_fp4``). Round modes
    are fixed by the chain (RINT, HiF8 ROUND). ``saturate`` (global CTRL[48]) applies to every fp16/bf16/HiF8/FP8
    stage, never to fp32 outputs; FP4 always saturates. ``fp4_path``: float32/float16 -> FP4 via a bf16 RINT
    step ("via_bf16", aclnnCast) or one rounding ("direct"). There are no FLOAT8_E8M0 or FP6 paths.
    """
    if src is None:
        if x is None:
            raise nullptr("x")
        dtype = np.asarray(x).dtype
        src = dtype.name
        if src not in _PLAIN:
            try:
                src = resolve_format(dtype) if dtype.kind not in "uib" else None
            except AclnnError:
                src = None
            if src is None:
                raise _invalid(f"cannot infer src from dtype {dtype.name}; pass src (codes are uint8 in one of the "
                               "formats)")
    src = _resolve_type(src, "src")
    dst = _resolve_type(dst, "dst")
    sat = _bool(saturate, "saturate", False)
    keep_nan = _bool(sat_keep_nan, "sat_keep_nan", False)
    _choice(fp4_path, "fp4_path", ("via_bf16", "direct"))
    _choice(fp4_nan, "fp4_nan", ("pos_zero", "nan_sign"))
    for t in (src, dst):
        if t in ("float8_e8m0", "float6_e3m2", "float6_e2m3"):
            raise _invalid(f"aclnnCast has no {t} path on Ascend 950 (docs/codecs.md §10); use encode/decode")
    if (src, dst) in _NO_PATH:
        raise _invalid(f"aclnnCast has no {src} -> {dst} path on Ascend 950 (castMap, docs/codecs.md §10); go through "
                       "float32 explicitly if that is what you want")
    if src == dst:
        if src in _PLAIN:
            flat, kind, shape = _float_input(x)
            if kind != src:
                raise _invalid(f"x has dtype {kind} but src is {src}")
            return flat.copy().reshape(shape)
        flat, shape = _code_input(x, src, "x")
        return flat.copy().reshape(shape)

    if src == "float16" and dst == "hifloat8":
        # the only direct half path with a rounding of its own; ROUND equals ROUND of the widened value
        flat, kind, shape = _float_input(x)
        if kind != "float16":
            raise _invalid(f"x has dtype {kind} but src is float16")
        out = np.empty(flat.size, np.uint8)
        K.encode_hif8_f16(ro(flat.view(np.uint16)), out, CAST_ROUND, sat, False, False)
        return out.reshape(shape)

    v, shape = _cast_values(x, src)
    if dst == "float32":
        return v.reshape(shape)
    if dst in ("float16", "bfloat16"):
        if src == "hifloat8" and dst == "bfloat16":
            v = _widen16(_f32_to_16(v, "float16", sat), "float16")  # castMap: HiF8 -> half -> bf16
        return _f32_to_16(v, dst, sat).reshape(shape).view(_PLAIN[dst])
    out = np.empty(v.size, np.uint8)
    if dst == "hifloat8":
        K.encode_hif8(ro(v), out, CAST_ROUND, sat, False)
    elif dst == "float8_e4m3fn":
        K.encode_e4m3fn(ro(v), out, sat, keep_nan)
    elif dst == "float8_e5m2":
        K.encode_e5m2(ro(v), out, sat, keep_nan)
    else:
        if src != "bfloat16" and not (src in ("float32", "float16") and fp4_path == "direct"):
            v = _widen16(_f32_to_16(v, "bfloat16", sat), "bfloat16")
        (K.encode_fp4_e2m1 if dst == "float4_e2m1" else K.encode_fp4_e1m2)(ro(v), out, CAST_RINT, fp4_nan == "nan_sign")
    return out.reshape(shape)
