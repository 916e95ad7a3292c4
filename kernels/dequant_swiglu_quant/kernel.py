"""DequantSwigluQuant device code, group_index kernels (910B): DequantSwigluQuantBase of hicann/ops-nn
quant/dequant_swiglu_quant/op_kernel/dequant_swiglu_quant.h, side by side (docs/ops/dequant_swiglu_quant.md §4).

Process: groups in order; group g covers realDimx rows from groupOffset (counts, or (idx, count) pairs when
speGroupType = 1; a non-positive count is skipped, and ends the walk for pairs). ProcessSingleGroup splits the rows
evenly over maxCoreNum cores (blockDimxFactor = ceil(rows / maxCoreNum)); ProcessSingleGroupPerCore walks them in
UB passes of UbFactorDimx rows. Every step is element-wise or per row, so the emulator runs each pass row by row with
the instructions of npu_emu.ascendc in the kernel's order:

* ComputeDequant: int32 bias: Add (int32, wraps) before the Cast; Cast int32 -> float (CAST_NONE); Mul by
  weight_scale[group]; Mul by activation_scale[row]; float bias: Add.
* ComputeSwiGLU: act / gate = the halves (actRight) or, swigluMode 1, the even / odd elements (SwiGluGate's Gather);
  modes 1 / 2 clamp gate to [-clampLimit, clampLimit] (Mins, Maxs) and add gluBias, clamp act from above (Mins) and
  use -gluAlpha; mode 3 clamps gate, and act again after the Div; then Muls, Exp, Adds(1), Div(act, .), Mul(gate, act).
* DynamicQuant (quantMode 1): Mul by quant_scale[group] (smooth scale) when given; Abs, ReduceMax; scale =
  Muls(max, DYNAMIC_QUANT_FACTOR); Div(act, scale); the cast chain RINT -> int32, ROUND -> half, TRUNC -> int8
  (kernels/dynamic_quant/row_quant.py, shared with DynamicQuant).
* StaticQuant (quantMode 0): quantIsOne: Muls(1 / quant_scale[g] (1 if 0)), Adds(quant_offset[g]); per channel:
  Div by quant_scale, Add quant_offset; the same cast chain.
"""

import numpy as np
from numba import njit, prange

from npu_emu.ascendc import CAST_NONE, CAST_RINT, DT_AUTO, DT_FLOAT, DT_FLOAT16, DT_INT16, DT_INT32, Add, \
    Adds, Cast, Div, Exp, Maxs, Mins, Mul, Muls
from npu_emu.ascendc.transcendental import exp_f32, exp_f32_many
from npu_emu.ascendc.vector import div_f32
from npu_emu.device.jit_options import PARALLEL
from npu_emu.kernels.dynamic_quant.row_quant import DT_INT8, quant_row_div, quant_row_div_faithful, quant_row_sym, \
    quant_row_sym_faithful, row_absmax, row_absmax_faithful

_JIT = dict(cache=True, error_model="numpy")

# DYNAMIC_QUANT_FACTOR: a float constexpr initialised from the double 1.0 / 127.0
DYNAMIC_QUANT_FACTOR = np.float32(1.0 / 127.0)


@njit(**_JIT)
def _row(td, r, g, x_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, y_gm, scale_gm, bias_kind, exp_model,
         div_model, xi, xf, act, gate, t, tmp_i32, tmp_u16, tmp_abs):
    """One row through Compute and CopyOut. bias_kind: 0 none, 1 int32, 2 float (widened on the host)."""
    in_y = td.inDimy
    out_y = td.outDimy
    x_row = x_gm[r * in_y:(r + 1) * in_y]
    # ComputeDequant (one Cast call site whichever bias: each inlined Cast costs compile time)
    src = x_row
    if bias_kind == 1:
        Add(xi, x_row, bias_i_gm[g * in_y:(g + 1) * in_y], in_y)
        src = xi
    Cast(xf, src, CAST_NONE, in_y, DT_FLOAT, DT_INT32)
    Mul(xf, ws_gm[g * in_y:(g + 1) * in_y], xf, in_y)
    if td.activationScaleIsEmpty == 0:
        Muls(xf, xf, as_gm[r], in_y)
    if bias_kind == 2:
        Add(xf, xf, bias_f_gm[g * in_y:(g + 1) * in_y], in_y)
    # ComputeSwiGLU
    mode = td.swigluMode
    if mode == 1:
        for j in range(out_y):                       # Gather offsets 0, 8, 16, ... bytes and 4, 12, ...
            act[j] = xf[2 * j]
            gate[j] = xf[2 * j + 1]
    else:
        a0 = td.actRight * out_y
        g0 = out_y - a0
        for j in range(out_y):                       # (element loops: a slice assignment compiles numba's
            act[j] = xf[a0 + j]                      # shape-error formatting, 1.5 s of a cold call)
            gate[j] = xf[g0 + j]
    clamp = np.float32(td.clampLimit)
    if mode == 0:
        Muls(t, act, np.float32(-1.0), out_y)
    else:
        Mins(gate, gate, clamp, out_y)
        Maxs(gate, gate, np.float32(-clamp), out_y)
        if mode == 3:
            Muls(t, act, np.float32(-1.0), out_y)
        else:
            Adds(gate, gate, np.float32(td.gluBias), out_y)
            Mins(act, act, clamp, out_y)
            Muls(t, act, np.float32(-np.float32(td.gluAlpha)), out_y)
    Exp(t, t, out_y, exp_model)
    Adds(t, t, np.float32(1.0), out_y)
    Div(act, act, t, out_y, DT_AUTO, div_model)
    if mode == 3:
        Mins(act, act, clamp, out_y)
    Mul(act, gate, act, out_y)
    # ComputeQuant
    if td.quantMode == 1:
        if td.needSmoothScale == 1:
            Mul(act, qs_gm[g * out_y:(g + 1) * out_y], act, out_y)
        m = row_absmax_faithful(act, out_y, tmp_abs)
        sc = np.empty(1, np.float32)
        sc[0] = m
        Muls(sc, sc, DYNAMIC_QUANT_FACTOR, 1)
        scale_gm[r] = sc[0]
        quant_row_div_faithful(act, out_y, sc[0], y_gm, r * out_y, DT_INT32, DT_INT8, tmp_i32, tmp_u16, div_model)
    else:
        if td.quantIsOne == 1:
            raw = np.float32(qs_gm[g])
            q = np.float32(1.0) if raw == 0 else np.float32(np.float32(1.0) / raw)
            Muls(t, act, q, out_y)
            Adds(act, t, np.float32(qo_gm[g]), out_y)
        else:
            Div(act, act, qs_gm[g * out_y:(g + 1) * out_y], out_y, DT_AUTO, div_model)
            Add(act, act, qo_gm[g * out_y:(g + 1) * out_y], out_y)
        quant_row_sym_faithful(act, out_y, np.float32(1.0), y_gm, r * out_y, DT_INT32, DT_INT8, tmp_i32, tmp_u16)


@njit(inline="always", **_JIT)
def _fmin(a, b):
    """Mins / Min of float32 (NaN propagates; min(-0, +0) = -0: the Min instruction's rules)."""
    if a != a or b != b:
        return a if a != a else b
    if a == b:
        return a if np.float32(a).view(np.uint32) >> np.uint32(31) else b
    return a if a < b else b


@njit(inline="always", **_JIT)
def _fmax(a, b):
    if a != a or b != b:
        return a if a != a else b
    if a == b:
        return b if np.float32(a).view(np.uint32) >> np.uint32(31) else a
    return a if a > b else b


@njit(**_JIT)
def _row_fused(td, r, g, x_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, y_gm, scale_gm, bias_kind,
               exp_model, div_model, xi, xf, act, gate, t, lim, tmp_i32, tmp_u16, tmp_abs):
    """:func:`_row` in plain loops: the same float32 operations per element (tested equal)."""
    in_y = td.inDimy
    out_y = td.outDimy
    xo = r * in_y
    go = g * in_y
    has_as = td.activationScaleIsEmpty == 0
    a_s = as_gm[r] if has_as else np.float32(1.0)
    if bias_kind == 0:
        _dequant_plain(x_gm[xo:xo + in_y], ws_gm[go:go + in_y], a_s, has_as, xf, in_y)
    for j in range(in_y if bias_kind != 0 else 0):
        if bias_kind == 1:
            v = np.float32(np.int32(x_gm[xo + j] + bias_i_gm[go + j]))
        else:
            v = np.float32(x_gm[xo + j])
        v = np.float32(ws_gm[go + j] * v)
        if has_as:
            v = np.float32(a_s * v)
        if bias_kind == 2:
            v = np.float32(v + bias_f_gm[go + j])
        xf[j] = v
    mode = td.swigluMode
    a0 = td.actRight * out_y
    g0 = out_y - a0
    if mode == 0 and exp_model == 0 and div_model == 0:
        _swiglu0_default(xf[a0:a0 + out_y], xf[g0:g0 + out_y], act, out_y, t, lim, tmp_u16.view(np.uint8))
    else:
        _swiglu_any(td, xf, act, a0, g0, out_y, exp_model, div_model)
    if td.quantMode == 1:
        if td.needSmoothScale == 1:
            for j in range(out_y):
                act[j] = np.float32(qs_gm[g * out_y + j] * act[j])
        s = np.float32(row_absmax(act, out_y) * DYNAMIC_QUANT_FACTOR)
        scale_gm[r] = s
        if div_model == 0:
            _quant_div_ieee(act, out_y, s, y_gm, r * out_y)
        else:
            quant_row_div(act, out_y, s, y_gm, r * out_y, DT_INT8, tmp_i32, div_model)
    else:
        if td.quantIsOne == 1:
            raw = np.float32(qs_gm[g])
            q = np.float32(1.0) if raw == 0 else np.float32(np.float32(1.0) / raw)
            off = np.float32(qo_gm[g])
            for j in range(out_y):
                act[j] = np.float32(np.float32(act[j] * q) + off)
        else:
            for j in range(out_y):
                act[j] = np.float32(div_f32(act[j], qs_gm[g * out_y + j], div_model) + qo_gm[g * out_y + j])
        quant_row_sym(act, out_y, np.float32(1.0), y_gm, r * out_y, DT_INT8, tmp_i32)


@njit(**_JIT)
def _dequant_plain(x, ws, a_s, has_as, xf, n):
    """ComputeDequant without bias: Cast, Mul weight_scale, Muls activation_scale (a loop that vectorises)."""
    if has_as:
        for j in range(n):
            xf[j] = np.float32(a_s * np.float32(ws[j] * np.float32(x[j])))
    else:
        for j in range(n):
            xf[j] = np.float32(ws[j] * np.float32(x[j]))


@njit(**_JIT)
def _swiglu0_default(a, gate, act, n, t, e, mark):
    """swigluMode 0 under the default models (correctly rounded Exp, IEEE Div) as literal constants: the loops
    compile without the model branches, and Muls(-1) + Exp run through exp_f32_many (the same bits, vectorised,
    the exact negation folded into its pass)."""
    one = np.float32(1.0)
    exp_f32_many(e, a, n, mark, True)
    for j in range(n):
        act[j] = np.float32(gate[j] * np.float32(a[j] / np.float32(e[j] + one)))


@njit(**_JIT)
def _quant_div_ieee(act, n, s, y_gm, off):
    """y = codes(act / scale) with the IEEE Div (quant_row_div with the model a constant): NaN -> 0, saturate, RINT."""
    o = y_gm[off:off + n].view(np.int8)
    for i in range(n):
        v = np.float32(act[i] / s)
        v = v if v == v else np.float32(0.0)
        v = np.float32(127.0) if v > np.float32(127.0) else v
        v = np.float32(-128.0) if v < np.float32(-128.0) else v
        o[i] = np.int8(np.rint(v))


@njit(**_JIT)
def _swiglu_any(td, xf, act, a0, g0, out_y, exp_model, div_model):
    """ComputeSwiGLU of one row, any swigluMode and models (plain loops, the instructions' float32 steps)."""
    mode = td.swigluMode
    L = np.float32(td.clampLimit)
    nL = np.float32(-L)
    alpha = np.float32(-np.float32(td.gluAlpha))
    gb = np.float32(td.gluBias)
    one = np.float32(1.0)
    for j in range(out_y):
        if mode == 1:
            a = xf[2 * j]
            gt = xf[2 * j + 1]
        else:
            a = xf[a0 + j]
            gt = xf[g0 + j]
        if mode == 0:
            e = np.float32(a * np.float32(-1.0))
        else:
            gt = _fmax(_fmin(gt, L), nL)
            if mode == 3:
                e = np.float32(a * np.float32(-1.0))
            else:
                gt = np.float32(gt + gb)
                a = _fmin(a, L)
                e = np.float32(a * alpha)
        e = np.float32(exp_f32(e, exp_model) + one)
        a = div_f32(a, e, div_model)
        if mode == 3:
            a = _fmin(a, L)
        act[j] = np.float32(gt * a)


@njit(parallel=PARALLEL, **_JIT)
def dsq_group_kernel_faithful(block_dim, td, ub_size, bias_kind, exp_model, div_model, x_gm, ws_gm, as_gm, bias_i_gm,
                     bias_f_gm, qs_gm, qo_gm, gi_gm, y_gm, scale_gm):
    """DequantSwigluQuantBase::Process for every core, rows by :func:`_row` (the instructions)."""
    in_y = td.inDimy
    out_y = td.outDimy
    for block_idx in prange(block_dim):
        xi = np.empty(in_y, np.int32)
        xf = np.empty(in_y, np.float32)
        act = np.empty(out_y, np.float32)
        gate = np.empty(out_y, np.float32)
        t = np.empty(out_y, np.float32)
        tmp_i32 = np.empty(out_y, np.int32)
        tmp_u16 = np.empty(out_y, np.uint16)
        tmp_abs = np.empty(out_y, np.float32)
        group_offset = 0
        for gidx in range(td.inGroupNum):
            if td.speGroupType == 0:
                real_g = gidx
                cnt = gi_gm[gidx]
            else:
                real_g = gi_gm[2 * gidx]
                cnt = gi_gm[2 * gidx + 1]
            cnt = cnt if cnt > 0 else 0
            if cnt > 0 and group_offset < td.inDimx:
                # ProcessSingleGroup
                f = (cnt + td.maxCoreNum - 1) // td.maxCoreNum
                real_core = (cnt + f - 1) // f
                if block_idx < real_core:
                    dimx_core = cnt - f * (real_core - 1) if block_idx == real_core - 1 else f
                    off = f * block_idx + group_offset
                    loops = (dimx_core + td.UbFactorDimx - 1) // td.UbFactorDimx
                    for lp in range(loops):                       # ProcessSingleGroupPerCore: UB passes
                        start = off + lp * td.UbFactorDimx
                        rows = dimx_core - td.UbFactorDimx * (loops - 1) if lp == loops - 1 else td.UbFactorDimx
                        for r in range(start, start + rows):
                            _row(td, r, real_g, x_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, y_gm,
                                 scale_gm, bias_kind, exp_model, div_model, xi, xf, act, gate, t, tmp_i32, tmp_u16,
                                 tmp_abs)
                group_offset += cnt
            if td.speGroupType == 1 and cnt <= 0:
                break



@njit(parallel=PARALLEL, **_JIT)
def dsq_group_kernel_fused(block_dim, td, ub_size, bias_kind, exp_model, div_model, x_gm, ws_gm, as_gm, bias_i_gm,
                     bias_f_gm, qs_gm, qo_gm, gi_gm, y_gm, scale_gm):
    """DequantSwigluQuantBase::Process for every core, rows by :func:`_row_fused`."""
    in_y = td.inDimy
    out_y = td.outDimy
    for block_idx in prange(block_dim):
        xi = np.empty(in_y, np.int32)
        xf = np.empty(in_y, np.float32)
        act = np.empty(out_y, np.float32)
        gate = np.empty(out_y, np.float32)
        t = np.empty(out_y, np.float32)
        lim = np.empty(out_y, np.float32)
        tmp_i32 = np.empty(out_y, np.int32)
        tmp_u16 = np.empty(out_y, np.uint16)
        tmp_abs = np.empty(out_y, np.float32)
        group_offset = 0
        for gidx in range(td.inGroupNum):
            if td.speGroupType == 0:
                real_g = gidx
                cnt = gi_gm[gidx]
            else:
                real_g = gi_gm[2 * gidx]
                cnt = gi_gm[2 * gidx + 1]
            cnt = cnt if cnt > 0 else 0
            if cnt > 0 and group_offset < td.inDimx:
                # ProcessSingleGroup
                f = (cnt + td.maxCoreNum - 1) // td.maxCoreNum
                real_core = (cnt + f - 1) // f
                if block_idx < real_core:
                    dimx_core = cnt - f * (real_core - 1) if block_idx == real_core - 1 else f
                    off = f * block_idx + group_offset
                    loops = (dimx_core + td.UbFactorDimx - 1) // td.UbFactorDimx
                    for lp in range(loops):                       # ProcessSingleGroupPerCore: UB passes
                        start = off + lp * td.UbFactorDimx
                        rows = dimx_core - td.UbFactorDimx * (loops - 1) if lp == loops - 1 else td.UbFactorDimx
                        for r in range(start, start + rows):
                            _row_fused(td, r, real_g, x_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm,
                                       y_gm, scale_gm, bias_kind, exp_model, div_model, xi, xf, act, gate, t,
                                       lim, tmp_i32, tmp_u16, tmp_abs)
                group_offset += cnt
            if td.speGroupType == 1 and cnt <= 0:
                break



# ------------------------------------------------------------------------------------------------------------------
# without group_index (SwiGluTilingData keys 100xx static, 300xx dynamic): DequantSwigluQuantDynamicBase of
# op_kernel/dequant_swiglu_quant_dynamic_base.hpp (BaseProcess, CanFullLocaOneRow / CanNotFullLocaOneRow,
# BaseCompute, DynamicCompute, dynamicMultiColMax, dynamicAllColOut) with the bias and 16-bit x variants of
# dequant_swiglu_quant_dynamic_{bias_int32,bias_float,bf16}.hpp and the same instructions in
# ..._dynamic_performance.hpp; DequantSwigluQuantStaticBase of op_kernel/dequant_swiglu_quant_static_base.hpp
# (processCompute, dequant, swiglu) with dequant_swiglu_quant_static_{bias_int32,bias_float,bf16}.hpp.
# Rows split over useCoreNum = min(rowLen, usedCoreNum) cores, the first rowLen % useCoreNum one row more. Per row:
# A / B dequantised (int32 x: int32 bias Add, Cast, Mul weight_scale, Muls activation_scale, float bias Add; 16-bit x:
# the Cast alone, done exactly on the host), Muls(-1), Exp, Adds(1), Div(A, .), Mul by B. Dynamic: Mul / Muls by
# quant_scale; then on the scalar unit value = max / 127 (stored as the scale) and 1 / value, Muls, and the cast chain
# RINT -> int16, -> half, -> int8. A row wider than baseColLen is done in column tiles: per tile the max (scalar
# compare, from -FLT_MAX) and the result staged in the workspace, then a second pass quantises every tile with the
# row's reciprocal. Static: quant_scale of one element: Muls by the scalar 1 / quant_scale[0] (Init; no 0 -> 1 rule,
# unlike the group kernels), Adds quant_offset[0]; of colLen: Div by quant_scale, Add quant_offset; no quant_scale:
# nothing; then the same cast chain. The static kernels walk column tiles outside the rows and never write the scale.
# ------------------------------------------------------------------------------------------------------------------

FLT_LOWEST = np.float32(-3.4028234663852886e38)     # 0xFF7FFFFF
X_INT32 = 0                                         # x_kind: int32 x, dequantised
X_FLOAT = 1                                         # x_kind: float16 / bfloat16 x, widened on the host (exact Cast)


@njit(**_JIT)
def _ng_scalar_div(p, q):
    """float p / float q on the scalar unit (IEEE, one rounding: the float64 quotient of two floats rounds once)."""
    return np.float32(np.float64(p) / np.float64(q))


@njit(**_JIT)
def _ng_chunk_faithful(td, r, c0, n, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm, xf_gm, ws_gm, as_gm,
                       bias_i_gm, bias_f_gm, qs_gm, qo_gm, ai, af, bf, t, swi):
    """BaseCompute (dynamic) / dequant + swiglu (static) of columns [c0, c0 + n) of row r into swi (the
    instructions), up to the cast chain."""
    col = td.colLen
    off_a = 0 if td.activateLeft == 1 else col
    off_b = col - off_a
    xa = r * 2 * col + off_a + c0
    xb = r * 2 * col + off_b + c0
    value = as_gm[r] if td.activateScaleIsEmpty == 0 and x_kind == X_INT32 else np.float32(1.0)
    for half in range(2):
        xo = xa if half == 0 else xb
        wo = (off_a if half == 0 else off_b) + c0
        dst = af if half == 0 else bf
        if x_kind == X_FLOAT:
            for j in range(n):
                dst[j] = xf_gm[xo + j]
        else:
            if bias_kind == 1:
                Add(ai, x_gm[xo:xo + n], bias_i_gm[wo:wo + n], n)
                Cast(dst, ai, CAST_NONE, n, DT_FLOAT, DT_INT32)
            else:
                Cast(dst, x_gm[xo:xo + n], CAST_NONE, n, DT_FLOAT, DT_INT32)
            Mul(dst, dst, ws_gm[wo:wo + n], n)
            if td.activateScaleIsEmpty == 0:
                Muls(dst, dst, value, n)
            if bias_kind == 2:
                Add(dst, dst, bias_f_gm[wo:wo + n], n)
        if half == 0:
            Muls(t, af, np.float32(-1.0), n)
            Exp(t, t, n, exp_model)
            Adds(t, t, np.float32(1.0), n)
            Div(t, af, t, n, DT_AUTO, div_model)
    Mul(swi, t, bf, n)
    if td.quantScaleIsEmpty == 0:
        if quant_mode == 1:
            if qs_gm.size == 1:                                   # quantIsOne (the _ONE keys)
                Muls(swi, swi, qs_gm[0], n)
            else:
                Mul(swi, swi, qs_gm[c0:c0 + n], n)
        elif qs_gm.size == 1:
            Muls(swi, swi, _ng_scalar_div(np.float32(1.0), qs_gm[0]), n)
            Adds(swi, swi, qo_gm[0], n)
        else:
            Div(swi, swi, qs_gm[c0:c0 + n], n, DT_AUTO, div_model)
            Add(swi, swi, qo_gm[c0:c0 + n], n)


@njit(**_JIT)
def _ng_cast_chain_faithful(swi, n, y_gm, y_off, t16, h16):
    """Cast RINT -> int16, CAST_NONE -> half, CAST_NONE -> int8 (both kernel families)."""
    Cast(t16, swi, CAST_RINT, n, DT_INT16, DT_FLOAT)
    Cast(h16, t16, CAST_NONE, n, DT_FLOAT16, DT_INT16)
    Cast(y_gm[y_off:y_off + n].view(np.int8), h16, CAST_NONE, n, DT_INT8, DT_FLOAT16)


@njit(**_JIT)
def _ng_quant_faithful(swi, n, sc, y_gm, y_off, t16, h16):
    """Muls(swi, 1 / value), then the cast chain (dynamicAllColOut / DynamicCompute)."""
    Muls(swi, swi, sc, n)
    _ng_cast_chain_faithful(swi, n, y_gm, y_off, t16, h16)


@njit(**_JIT)
def _ng_chunk_fused(td, r, c0, n, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm, xf_gm, ws_gm, as_gm,
                    bias_i_gm, bias_f_gm, qs_gm, qo_gm, swi):
    """:func:`_ng_chunk_faithful` in one loop: the same float32 operations per element."""
    col = td.colLen
    off_a = 0 if td.activateLeft == 1 else col
    off_b = col - off_a
    xa = r * 2 * col + off_a + c0
    xb = r * 2 * col + off_b + c0
    has_as = td.activateScaleIsEmpty == 0 and x_kind == X_INT32
    value = as_gm[r] if has_as else np.float32(1.0)
    has_qs = td.quantScaleIsEmpty == 0
    qs_one = qs_gm.size == 1
    q0 = qs_gm[0]
    if quant_mode == 0 and has_qs and qs_one:
        q0 = _ng_scalar_div(np.float32(1.0), q0)
    o0 = qo_gm[0]
    one = np.float32(1.0)
    for j in range(n):
        if x_kind == X_FLOAT:
            a = xf_gm[xa + j]
            b = xf_gm[xb + j]
        else:
            wa = off_a + c0 + j
            wb = off_b + c0 + j
            if bias_kind == 1:
                a = np.float32(np.int32(x_gm[xa + j] + bias_i_gm[wa]))
                b = np.float32(np.int32(x_gm[xb + j] + bias_i_gm[wb]))
            else:
                a = np.float32(x_gm[xa + j])
                b = np.float32(x_gm[xb + j])
            a = np.float32(a * ws_gm[wa])
            b = np.float32(b * ws_gm[wb])
            if has_as:
                a = np.float32(a * value)
                b = np.float32(b * value)
            if bias_kind == 2:
                a = np.float32(a + bias_f_gm[wa])
                b = np.float32(b + bias_f_gm[wb])
        e = np.float32(exp_f32(np.float32(a * np.float32(-1.0)), exp_model) + one)
        v = np.float32(div_f32(a, e, div_model) * b)
        if has_qs:
            if quant_mode == 1:
                v = np.float32(v * (q0 if qs_one else qs_gm[c0 + j]))
            elif qs_one:
                v = np.float32(np.float32(v * q0) + o0)
            else:
                v = np.float32(div_f32(v, qs_gm[c0 + j], div_model) + qo_gm[c0 + j])
        swi[j] = v


@njit(inline="never", **_JIT)
def _ng_core_rows(td, block_idx):
    """(first row, rows) of core ``block_idx``: the split of rowLen over usedCoreNum cores both kernel families
    make, the first rowLen % cores cores one row more; (0, 0) for a core past the rows."""
    rows = td.rowLen
    use = td.usedCoreNum if rows >= td.usedCoreNum else rows
    if block_idx >= use:
        return 0, 0
    per = rows // use
    rem = rows - use * per
    if block_idx < rem:
        return block_idx * (per + 1), per + 1
    return (per + 1) * rem + (block_idx - rem) * per, per


@njit(parallel=PARALLEL, **_JIT)
def dsq_nogroup_kernel_fused(block_dim, td, ub_size, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm,
                             xf_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, y_gm, scale_gm):
    """BaseProcess (dynamic) / processCompute (static) for every core, rows in fused loops (the same bits). Static
    rows are element-wise: whole rows whatever the column tiles."""
    col = td.colLen
    base_col = td.baseColLen
    multi = td.baseRowLen == 1 and base_col < col and quant_mode == 1
    col_loops = (col + base_col - 1) // base_col
    last_col = col - (col_loops - 1) * base_col
    for block_idx in prange(block_dim):
        start, num = _ng_core_rows(td, np.int64(block_idx))  # one signature: prange gives uint64, range int64
        if num > 0:
            tile = base_col if multi else col
            tmp = np.empty(tile, np.float32)
            swi = np.empty(tile, np.float32)
            wsp = np.empty(col if multi else 1, np.float32)       # swigluTmpGm: this core's row in the workspace
            for r in range(start, start + num):
                if quant_mode == 0:
                    _ng_chunk_fused(td, r, np.int64(0), col, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm, xf_gm,
                                    ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, swi)
                    quant_row_sym(swi, col, np.float32(1.0), y_gm, r * col, DT_INT8, tmp.view(np.int32))
                elif not multi:
                    _ng_chunk_fused(td, r, np.int64(0), col, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm, xf_gm,
                                    ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, swi)
                    m = row_absmax(swi, col)
                    value = _ng_scalar_div(m, np.float32(127.0))
                    scale_gm[r] = value
                    sc = _ng_scalar_div(np.float32(1.0), value)
                    quant_row_sym(swi, col, sc, y_gm, r * col, DT_INT8, tmp.view(np.int32))
                else:
                    red = FLT_LOWEST
                    for j in range(col_loops):
                        n = last_col if j == col_loops - 1 else base_col
                        c0 = j * base_col
                        _ng_chunk_fused(td, r, c0, n, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm,
                                        xf_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, swi)
                        m = row_absmax(swi, n)
                        for k in range(n):
                            wsp[c0 + k] = swi[k]
                        if m > red:
                            red = m
                    value = _ng_scalar_div(red, np.float32(127.0))
                    scale_gm[r] = value
                    sc = _ng_scalar_div(np.float32(1.0), value)
                    for j in range(col_loops):
                        n = last_col if j == col_loops - 1 else base_col
                        c0 = j * base_col
                        for k in range(n):
                            swi[k] = wsp[c0 + k]
                        quant_row_sym(swi, n, sc, y_gm, r * col + c0, DT_INT8, tmp.view(np.int32))


@njit(parallel=PARALLEL, **_JIT)
def dsq_nogroup_kernel_faithful(block_dim, td, ub_size, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm,
                                xf_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, y_gm, scale_gm):
    """BaseProcess (dynamic) / processCompute (static) for every core, rows by the instructions. The 16-bit x
    dynamic kernels take baseRowLen rows per pass with one ReduceMax per row: run row by row here."""
    col = td.colLen
    base_col = td.baseColLen
    multi = td.baseRowLen == 1 and base_col < col
    col_loops = (col + base_col - 1) // base_col
    last_col = col - (col_loops - 1) * base_col
    for block_idx in prange(block_dim):
        start, num = _ng_core_rows(td, np.int64(block_idx))  # one signature: prange gives uint64, range int64
        if num > 0:
            tile = base_col if base_col < col else col
            ai = np.empty(tile, np.int32)
            af = np.empty(tile, np.float32)
            bf = np.empty(tile, np.float32)
            t = np.empty(tile, np.float32)
            tmp = np.empty(tile, np.float32)
            t16 = np.empty(tile, np.int16)
            h16 = np.empty(tile, np.uint16)
            swi = np.empty(tile, np.float32)
            wsp = np.empty(col if multi else 1, np.float32)       # swigluTmpGm: this core's row in the workspace
            if quant_mode == 0:
                for j in range(col_loops):                        # processCompute: column tiles outside the rows
                    n = last_col if j == col_loops - 1 else base_col
                    c0 = j * base_col
                    for r in range(start, start + num):
                        _ng_chunk_faithful(td, r, c0, n, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm,
                                           xf_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, ai, af, bf, t,
                                           swi)
                        _ng_cast_chain_faithful(swi, n, y_gm, r * col + c0, t16, h16)
            else:
                for r in range(start, start + num):
                    if not multi:
                        _ng_chunk_faithful(td, r, np.int64(0), col, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm,
                                           xf_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, ai, af, bf, t, swi)
                        m = row_absmax_faithful(swi, col, tmp)
                        value = _ng_scalar_div(m, np.float32(127.0))
                        scale_gm[r] = value
                        sc = _ng_scalar_div(np.float32(1.0), value)
                        _ng_quant_faithful(swi, col, sc, y_gm, r * col, t16, h16)
                    else:
                        red = FLT_LOWEST
                        for j in range(col_loops):
                            n = last_col if j == col_loops - 1 else base_col
                            c0 = j * base_col
                            _ng_chunk_faithful(td, r, c0, n, bias_kind, x_kind, quant_mode, exp_model, div_model, x_gm,
                                               xf_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, ai, af, bf, t,
                                               swi)
                            m = row_absmax_faithful(swi, n, tmp)
                            for k in range(n):
                                wsp[c0 + k] = swi[k]
                            if m > red:
                                red = m
                        value = _ng_scalar_div(red, np.float32(127.0))
                        scale_gm[r] = value
                        sc = _ng_scalar_div(np.float32(1.0), value)
                        for j in range(col_loops):
                            n = last_col if j == col_loops - 1 else base_col
                            c0 = j * base_col
                            for k in range(n):
                                swi[k] = wsp[c0 + k]
                            _ng_quant_faithful(swi, n, sc, y_gm, r * col + c0, t16, h16)
