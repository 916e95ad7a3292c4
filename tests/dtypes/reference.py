"""Independent slow references for the codec tests (loaded by conftest.py as ``dtypes_reference``).

Written from docs/codecs.md in value space, sharing nothing with ``npu_emu.dtypes.scalar``: the value grids come from
ml_dtypes / en_dtypes / numpy decoding, rounding is a search on the sorted grid with the §2.2 rules applied to
float64 values (exact for every input here: float32/float64 inputs and grid midpoints have at most 25 significant
bits), HYBRID is a field-by-field transcription of the ISA pseudo-code (cannmirror/asc-devkit:
docs/zh/api/SIMD-API/基础API/Reg矢量计算/类型转换/Cast.md, "float/half转hifloat8_t转换规则").
"""

import en_dtypes
import ml_dtypes
import numpy as np

MODES = ("rint", "round", "floor", "ceil", "trunc", "odd")

NAN = -1  # reference result "some NaN with the input's sign" (the NaN byte/payload is not specified)


class Binary:
    """A sign-magnitude format whose positive codes 0..max_code are sorted by value (IEEE-like)."""

    def __init__(self, grid, sentinel, sign_bit, inf_code, nan_code, always_sat=False):
        self.grid = np.asarray(grid, np.float64)  # values of codes 0..max_code
        self.max_code = len(self.grid) - 1
        self.sentinel = float(sentinel)  # the next value of the unbounded grid (2^(emax+1))
        self.sign_bit = sign_bit
        self.inf_code = inf_code  # None: overflow is NaN (E4M3FN)
        self.nan_code = nan_code
        self.always_sat = always_sat


def _grid(dtype, n):
    return np.arange(n, dtype=np.uint16 if np.dtype(dtype).itemsize == 2 else np.uint8).view(dtype).astype(np.float64)


BINARY = {
    "float16": Binary(_grid(np.float16, 0x7C00), 2.0 ** 16, 0x8000, 0x7C00, 0x7E00),
    "bfloat16": Binary(_grid(ml_dtypes.bfloat16, 0x7F80), 2.0 ** 128, 0x8000, 0x7F80, 0x7FC0),
    "float8_e4m3fn": Binary(_grid(ml_dtypes.float8_e4m3fn, 0x7F), 480.0, 0x80, None, 0x7F),
    "float8_e5m2": Binary(_grid(ml_dtypes.float8_e5m2, 0x7C), 2.0 ** 16, 0x80, 0x7C, 0x7E),
    "float4_e2m1": Binary(_grid(ml_dtypes.float4_e2m1fn, 8), 8.0, 0x8, None, 0, always_sat=True),
    "float4_e1m2": Binary(_grid(en_dtypes.float4_e1m2, 8), 2.0, 0x8, None, 0, always_sat=True),
}


def round_index(a, grid, sentinel, mode, neg):
    """Index of the rounded magnitude on grid + [sentinel] for finite magnitudes a < sentinel (docs/codecs.md §2.2).
    Parity of the index is the parity of the code's mantissa LSB (rint ties, odd)."""
    ext = np.append(grid, sentinel)
    j = np.searchsorted(ext, a, side="right") - 1  # ext[j] <= a < ext[j + 1]
    j = np.minimum(j, len(ext) - 2)
    lo, hi = ext[j], ext[j + 1]
    exact = a == lo
    mid = (lo + hi) / 2
    if mode == "rint":
        up = (a > mid) | ((a == mid) & (j % 2 == 1))
    elif mode == "round":
        up = a >= mid
    elif mode == "trunc":
        up = np.zeros(a.shape, bool)
    elif mode == "floor":
        up = neg & ~exact
    elif mode == "ceil":
        up = ~neg & ~exact
    elif mode == "odd":
        up = ~exact & (j % 2 == 0)
    else:
        raise ValueError(mode)
    return j + (up & ~exact)


def encode_binary(v, fmt, mode="rint", sat=False, keep_nan=False, nan_sign=False):
    """Reference codes (int64; NAN marks "a NaN with v's sign") of float64 values v."""
    f = BINARY[fmt]
    v = np.asarray(v, np.float64)
    neg = np.signbit(v)
    a = np.abs(v)
    sat = sat or f.always_sat
    out = np.zeros(v.shape, np.int64)
    fin = np.isfinite(v) & (a < f.sentinel)
    idx = np.zeros(v.shape, np.int64)
    idx[fin] = round_index(a[fin], f.grid, f.sentinel, mode, neg[fin])
    # beyond the largest binade: IEEE 754 §7.4 directed overflow (toward zero -> max, away -> overflow)
    big = np.isfinite(v) & ~fin
    to_max = {"rint": False, "round": False, "trunc": True, "odd": True}
    if mode in to_max:
        big_max = np.full(v.shape, to_max[mode])
    elif mode == "floor":
        big_max = ~neg
    else:
        big_max = neg
    idx[big] = np.where(big_max[big], f.max_code, f.max_code + 1)
    ovf = np.isinf(v) | (idx > f.max_code)
    overflow_code = f.max_code if sat else (f.inf_code if f.inf_code is not None else NAN)
    out[:] = np.where(ovf, overflow_code, idx)
    if np.isinf(v).any() and not sat:
        out[np.isinf(v)] = f.inf_code if f.inf_code is not None else NAN
    out = np.where(out == NAN, NAN, out | np.where(neg, f.sign_bit, 0))
    nan = np.isnan(v)
    if f.always_sat:  # FP4: NaN -> zero (+0, or the NaN's sign)
        out[nan] = np.where(neg[nan] & nan_sign, f.sign_bit, 0)
    elif sat and not keep_nan:
        out[nan] = 0
    else:
        out[nan] = NAN
    return out


def check_codes(mine, ref, v, mine_is_nan, sign_bit, context=""):
    """mine == ref where the reference is a code; where it is NAN, mine must be a NaN code carrying v's sign."""
    mine = np.asarray(mine).astype(np.int64).ravel()
    ref = np.asarray(ref).ravel()
    v = np.asarray(v).ravel()
    num = ref != NAN
    bad = np.nonzero(num & (mine != ref))[0]
    assert bad.size == 0, (f"{context}: {bad.size} mismatches; inputs {v[bad[:4]]}, mine "
                           f"{[hex(c) for c in mine[bad[:4]]]}, reference {[hex(c) for c in ref[bad[:4]]]}")
    if mine_is_nan is None:
        mine_is_nan = np.zeros(mine.shape, bool)
    ok_nan = np.asarray(mine_is_nan).ravel() & (((mine & sign_bit) != 0) == np.signbit(v))
    nan_bad = np.nonzero(~num & ~ok_nan)[0]
    assert nan_bad.size == 0, f"{context}: expected a NaN with the input's sign for inputs {v[nan_bad[:4]]}"


# ------------------------------------------------------------------------------------------------------------------
# HiFloat8


def _hif8_values():
    codes = np.arange(256, dtype=np.uint8)
    vals = codes.view(en_dtypes.hifloat8).astype(np.float64)
    return codes, vals


HIF8_CODES, HIF8_VALUES = _hif8_values()
_POS = [(v, c) for c, v in zip(range(128), HIF8_VALUES[:128]) if np.isfinite(v)]
HIF8_GRID = np.array(sorted(v for v, _ in _POS))  # 0 and the 126 positive finite values
HIF8_CODE_OF = {v: c for v, c in _POS}


_HIF8_GRID_CODES = np.array([HIF8_CODE_OF[v] for v in HIF8_GRID], np.int64)


def _hif8_code_of_value(mag, neg):
    """Code of values on the HiF8 grid (mag >= 49152 = the Inf slot); zero has no sign."""
    mag = np.asarray(mag, np.float64)
    i = np.minimum(np.searchsorted(HIF8_GRID, mag), len(HIF8_GRID) - 1)
    on_grid = HIF8_GRID[i] == mag
    assert np.all(on_grid | (mag >= 49152)), "reference produced a value off the HiF8 grid"
    code = np.where(mag >= 49152, 0x6F, _HIF8_GRID_CODES[i])
    return np.where(code == 0, 0, code | np.where(neg, 0x80, 0))


def encode_hif8_round(v, sat=False):
    """TA as a codebook search: the nearest of 0, the finite values and 49152 (Inf), ties to the larger magnitude."""
    v = np.asarray(v, np.float64)
    neg = np.signbit(v)
    a = np.abs(v)
    fin = np.isfinite(v) & (a < 49152)
    mag = np.full(v.shape, 49152.0)
    idx = round_index(a[fin], HIF8_GRID, 49152.0, "round", neg[fin])
    mag[fin] = np.append(HIF8_GRID, 49152.0)[idx]
    out = _hif8_code_of_value(mag, neg)
    return _hif8_specials(out, v, sat)


def _hif8_specials(out, v, sat):
    out = out.copy()
    out[np.isnan(v)] = 0x80
    if sat:
        out = np.where(out == 0x80, 0, out)
        out = np.where((out & 0x7F) == 0x6F, out - 1, out)
    return out


def _bits(x, lo, hi):
    return (x >> lo) & ((1 << (hi - lo + 1)) - 1)


def _hybrid_tail(S, Ev, M_fields, ta, frac, thr, case, ev23_up):
    """Rounding and encoding shared by the two pseudo-codes (vectorised): ``case`` 3/2/1 = normal with that many
    mantissa bits, 0 = denormal [-22, -16], -1 = Ev == -23; M_fields = the kept mantissa bits."""
    up = np.where(np.abs(Ev) <= 3, ta == 1, frac >= thr).astype(np.int64)
    mb = np.maximum(case, 0)
    M = M_fields + up  # M_tmp = M + 1 ...
    carry = np.where(case > 0, M >> mb, up)  # ... Ev = Ev + carry of M_tmp (denormals: Ev + 1)
    M = np.where(carry == 1, 0, M)
    Ev = Ev + carry
    value = np.where(case == -1, 1.0, np.ldexp(1.0 + M / (1 << mb), Ev))  # case -1 is decided below
    code = _hif8_code_of_value(value, S == 1)
    return np.where(case == -1, np.where(ev23_up, 0x01 | (S << 7), 0), code)


def _hif8_case(Ev):
    return np.select([np.abs(Ev) <= 3, np.abs(Ev) <= 7, Ev >= -15, Ev >= -22], [3, 2, 1, 0], -1)


def hybrid_f32(bits, sat=False, script=False):
    """CAST_HYBRID from fp32 bits, transcribed from the ISA pseudo-code (float转hifloat8_t转换规则)."""
    u = np.asarray(bits, np.uint32).astype(np.int64)
    S, Ev, thr, f = u >> 31, ((u >> 23) & 0xFF) - 127, u & 0x3FFF, u & 0x7FFFFF
    case = _hif8_case(Ev)
    M = np.select([case == 3, case == 2, case == 1], [_bits(f, 20, 22), _bits(f, 21, 22), _bits(f, 22, 22)], 0)
    ta = np.select([case == 3, case == 2, case == 1], [_bits(f, 19, 19), _bits(f, 20, 20), _bits(f, 21, 21)],
                   _bits(f, 22, 22))
    frac = np.select([case == 2, case == 1], [_bits(f, 7, 20), _bits(f, 8, 21)], _bits(f, 9, 22))
    inrange = (Ev >= -23) & (Ev <= 15)
    code = _hybrid_tail(S, np.where(inrange, Ev, 0), M, ta, frac, thr, case, ((1 << 13) | _bits(f, 10, 22)) >= thr)
    v = np.asarray(bits, np.uint32).view(np.float32).astype(np.float64)
    code = np.where(Ev < -23, 0, code)
    code = np.where((Ev > 15) | (script & (np.abs(v) >= 40960)), 0x6F | (S << 7), code)
    return _hif8_specials(code, v, sat)


def hybrid_f16(bits, sat=False, script=False, raw_subnormal=False):
    """CAST_HYBRID from fp16 bits (half转hifloat8_t转换规则): subnormals normalised first, thr = {lsb, 1}.
    ``raw_subnormal``: frac read from the raw, unnormalised fraction field (hybrid_f16_subnormal="raw")."""
    h = np.asarray(bits, np.uint16).astype(np.int64)
    S, ef, graw, thr = h >> 15, (h >> 10) & 0x1F, h & 0x3FF, ((h & 1) << 1) | 1
    sub = (ef == 0) & (graw != 0)
    p = np.floor(np.log2(np.maximum(graw, 1))).astype(np.int64)  # exact for integers below 2^10
    Ev = np.where(sub, p - 24, ef - 15)
    g = np.where(sub, (graw << np.maximum(10 - p, 0)) & 0x3FF, graw)
    fr = np.where(sub & raw_subnormal, graw, g)
    case = _hif8_case(Ev)
    M = np.select([case == 3, case == 2, case == 1], [_bits(g, 7, 9), _bits(g, 8, 9), _bits(g, 9, 9)], 0)
    ta = np.select([case == 3, case == 2, case == 1], [_bits(g, 6, 6), _bits(g, 7, 7), _bits(g, 8, 8)],
                   _bits(g, 9, 9))
    frac = np.select([case == 2, case == 1], [_bits(fr, 6, 7), _bits(fr, 7, 8)], _bits(fr, 8, 9))
    inrange = (Ev >= -23) & (Ev <= 15)
    code = _hybrid_tail(S, np.where(inrange, Ev, 0), M, ta, frac, thr, case, ((1 << 1) | _bits(fr, 9, 9)) >= thr)
    v = np.asarray(bits, np.uint16).view(np.float16).astype(np.float64)
    code = np.where((ef == 0) & (graw == 0), 0, code)
    code = np.where(Ev < -23, 0, code)
    code = np.where((ef == 0x1F) | (script & (np.abs(v) >= 40960)), 0x6F | (S << 7), code)
    return _hif8_specials(code, v, sat)


# ------------------------------------------------------------------------------------------------------------------
# E8M0


def encode_e8m0(v):
    """Hardware truncation: floor(log2|v|) + 127, clamped to 0 below 2^-126 (bf16 subnormals), Inf -> 0xFE,
    NaN -> 0xFF, zero -> 0x00 (docs/codecs.md §6.2)."""
    v = np.asarray(v, np.float64)
    a = np.abs(v)
    with np.errstate(all="ignore"):
        e = np.frexp(a)[1].astype(np.int64) - 1  # a = m·2^(e+1), m in [0.5, 1)
    code = np.where(a >= 2.0 ** -126, np.clip(e + 127, 0, 254), 0)
    code = np.where(np.isinf(v), 0xFE, code)
    return np.where(np.isnan(v), 0xFF, code).astype(np.int64)


def f32_bits_around(values, k):
    """float32 bit patterns within k ulps of each float32 value (both signs), as float32, deduplicated."""
    with np.errstate(over="ignore"):  # 2^128 (the bf16 sentinel) becomes Inf, which is the boundary it marks
        b = np.asarray(values, np.float64).astype(np.float32).view(np.uint32).astype(np.int64) & 0x7FFFFFFF
    near = (b[:, None] + np.arange(-k, k + 1)[None, :]).ravel()
    near = near[(near >= 0) & (near <= 0x7F800000)]
    near = np.unique(near).astype(np.uint32)
    return np.concatenate([near, near | np.uint32(0x80000000)]).view(np.float32)
