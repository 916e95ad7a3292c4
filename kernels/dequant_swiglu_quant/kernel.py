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

from npu_emu.ascendc import CAST_NONE, DT_AUTO, DT_FLOAT, DT_INT32, Add, Adds, Cast, Div, Duplicate, Exp, Max, Min, \
    Mul, Muls
from npu_emu.ascendc.transcendental import exp_f32
from npu_emu.ascendc.vector import div_f32
from npu_emu.device.jit_options import PARALLEL
from npu_emu.dtypes.scalar import round_to_integral
from npu_emu.kernels.dynamic_quant.row_quant import DT_INT8, quant_row_div, quant_row_div_faithful, quant_row_sym, \
    quant_row_sym_faithful, row_absmax, row_absmax_faithful

_JIT = dict(cache=True, error_model="numpy")

# DYNAMIC_QUANT_FACTOR: a float constexpr initialised from the double 1.0 / 127.0
DYNAMIC_QUANT_FACTOR = np.float32(1.0 / 127.0)


@njit(**_JIT)
def _row(td, r, g, x_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, y_gm, scale_gm, bias_kind, exp_model,
         div_model, xi, xf, act, gate, t, lim, tmp_i32, tmp_u16, tmp_abs):
    """One row through Compute and CopyOut. bias_kind: 0 none, 1 int32, 2 float (widened on the host)."""
    in_y = td.inDimy
    out_y = td.outDimy
    x_row = x_gm[r * in_y:(r + 1) * in_y]
    # ComputeDequant
    if bias_kind == 1:
        Add(xi, x_row, bias_i_gm[g * in_y:(g + 1) * in_y], in_y)
        Cast(xf, xi, CAST_NONE, in_y, DT_FLOAT, DT_INT32)
    else:
        Cast(xf, x_row, CAST_NONE, in_y, DT_FLOAT, DT_INT32)
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
        act[:out_y] = xf[a0:a0 + out_y]
        gate[:out_y] = xf[g0:g0 + out_y]
    if mode == 0:
        Muls(t, act, np.float32(-1.0), out_y)
    else:
        Duplicate(lim, np.float32(td.clampLimit), out_y)
        Min(gate, gate, lim, out_y)
        Duplicate(lim, np.float32(-np.float32(td.clampLimit)), out_y)
        Max(gate, gate, lim, out_y)
        if mode == 3:
            Muls(t, act, np.float32(-1.0), out_y)
        else:
            Adds(gate, gate, np.float32(td.gluBias), out_y)
            Duplicate(lim, np.float32(td.clampLimit), out_y)
            Min(act, act, lim, out_y)
            Muls(t, act, np.float32(-np.float32(td.gluAlpha)), out_y)
    Exp(t, t, out_y, exp_model)
    Adds(t, t, np.float32(1.0), out_y)
    Div(act, act, t, out_y, DT_AUTO, div_model)
    if mode == 3:
        Duplicate(lim, np.float32(td.clampLimit), out_y)
        Min(act, act, lim, out_y)
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
    for j in range(in_y):
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
    if td.quantMode == 1:
        if td.needSmoothScale == 1:
            for j in range(out_y):
                act[j] = np.float32(qs_gm[g * out_y + j] * act[j])
        s = np.float32(row_absmax(act, out_y) * DYNAMIC_QUANT_FACTOR)
        scale_gm[r] = s
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
                            _row(td, r, real_g, x_gm, ws_gm, as_gm, bias_i_gm, bias_f_gm, qs_gm, qo_gm, y_gm,
                                 scale_gm, bias_kind, exp_model, div_model, xi, xf, act, gate, t, lim, tmp_i32,
                                 tmp_u16, tmp_abs)
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


_ = round_to_integral
