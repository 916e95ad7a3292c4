"""Per-core kernels of DynamicQuant / DynamicQuantV2 on Atlas A2/A3, one walk per tiling key.

Side by side with hicann/ops-nn quant/dynamic_quant/op_kernel/: dynamic_quant.cpp (the key dispatch),
dynamic_quant_base.h (InitParams: the head/tail core split, loopCnt / remainRow; GetScale, GetScaleAndOffset),
dynamic_quant.h (keys 0/1), dynamic_quant_db.h (2/3), dynamic_quant_large_shape_opt.h (6), dynamic_quant_moe.h (7),
dynamic_quant_moe_large_shape.h (8), dynamic_quant_multi_row.h (10), dynamic_quant_single_row.h (100). The
asymmetric kernel (quant/dynamic_quant_v2/op_kernel) includes the same headers; its branch is ``ASYM``.

Each core walks its rows in the kernel's order and in its UB passes (multiRowNum rows per CopyIn, the tail pass
last); every row goes through the chain of row_quant.py with the key's parameters:

| key | q = 127 / max | stored scale | RINT intermediate | row walk |
|---|---|---|---|---|
| 0/1 | vector Div | 1 / q | int32 | head/tail split, multiRowNum rows per pass |
| 2/3 | vector Div | max * fp32(1/127) | int16 | same (double-buffered CopyIn: same order of results) |
| 6 | scalar divide | 1 / q | int32 | one row at a time in chunks of innerLoopEle; chunk maxima folded by (a > b ? a : b) |
| 7 | vector Div | 1 / q | int32 | as 0/1; smooth row from the group_index walk (GetSmoothIndex) |
| 8 | scalar divide | 1 / q | int32 | as 6 with the group_index walk |
| 10 | vector Div | max * fp32(1/127) | int16 | multi-row split (head cores one row more), singleLoopRows per pass |
| 100 | vector Div | max * fp32(1/127) | int32 | rowPerHeadCore rows per core, multiRowNumHeadCore per pass |

The chunk fold of keys 6/8 starts from -FLT_MAX and keeps the running value unless the chunk's is larger, so a
NaN in a chunk before the last is dropped by the next chunk (as on the device's scalar code); the 1-row keys see
the NaN. Half inputs without smooth take the Abs / ReduceMax in half on keys 2/3 and 100 (exact, the same value).

Specialised through npu_emu.specialize: ``FAITHFUL`` (the instructions of npu_emu.ascendc on UB views, or the fused
loops of row_quant), ``XDT`` (DT_BF16 / DT_FLOAT16), ``DST`` (DT_INT8 / DT_INT4), ``ASYM``, ``SMOOTH`` (smooth_scales
given) and ``CHUNKED`` (keys 6 / 8) are constants of each copy, so a call compiles one path: the bf16 int8 call
without smooth compiles only the straight-from-bf16 row loop, not the float32 row buffers, the smooth / MoE walk
or the chunked walk. A plain import defines the functions and compiles nothing.
"""

import numpy as np
from numba import prange

from npu_emu.ascendc.constants import DT_BF16, DT_INT4, DT_INT8, DT_INT16, DT_INT32
from npu_emu.kernels.dynamic_quant import row_quant as rq
from npu_emu.device.specialize import const, load, njit

FAITHFUL = const("FAITHFUL", False)
XDT = const("XDT", DT_BF16)
DST = const("DST", DT_INT8)
ASYM = const("ASYM", False)
SMOOTH = const("SMOOTH", False)      # smooth_scales given (the has_smooth argument is then always this value)
CHUNKED = const("CHUNKED", False)    # keys 6 / 8 (a row walked in chunks of innerLoopEle); else the 1-row keys
# faithful copies: the key's cast-chain intermediate, int16 (INTER16_KEYS) or int32, so that a call compiles one
# chain; None (the fused copies, whose codes do not depend on it): read from the key at run time
INTER16 = const("INTER16", None)

C_SYM = np.float32(7.0) if DST == DT_INT4 else np.float32(127.0)
C_RANGE = np.float32(15.0) if DST == DT_INT4 else np.float32(255.0)
C_OFF = np.float32(7.0) if DST == DT_INT4 else np.float32(127.0)
INTER_T = DT_INT16 if INTER16 else DT_INT32
MIN_FLOAT_VALUE = np.float32(-3.4028235e38)
MAX_FLOAT_VALUE = np.float32(3.4028235e38)

_FN = dict(cache=True, error_model="numpy")


INTER16_KEYS = (2, 3, 10)             # the tiling keys whose cast chain goes through int16


def device(faithful, xdt, dst, asym, smooth=False, chunked=False, key=None):
    """This module specialised for one path / input format / output format / symmetry / smooth or not / row walk
    (keys 6 and 8 walk a row in chunks, the other keys whole rows) and, faithful, the tiling ``key``'s cast-chain
    intermediate: a call compiles only its own walk and chain."""
    consts = dict(FAITHFUL=bool(faithful), XDT=int(xdt), DST=int(dst), ASYM=bool(asym), SMOOTH=bool(smooth),
                  CHUNKED=bool(chunked))
    if faithful and key is not None:
        consts["INTER16"] = int(key) in INTER16_KEYS
    return load(__name__.split("[")[0], **consts)


@njit(**_FN)
def _key_params(key):
    """(q by scalar divide, stored scale = 1/q, int16 intermediate) of a tiling key."""
    scalar_div = key == 6 or key == 8
    recip = key == 0 or key == 1 or key == 6 or key == 7 or key == 8
    inter16 = key == INTER16_KEYS[0] or key == INTER16_KEYS[1] or key == INTER16_KEYS[2]
    return scalar_div, recip, inter16


@njit(**_FN)
def _core_rows(td, key, b):
    """(first row, rows, rows per UB pass) of core b (InitParams / ParseTilingData of the key's template)."""
    if key == 100:
        n = td.rowPerTailCore if b >= td.headCoreNum else td.rowPerHeadCore
        return b * td.rowPerHeadCore, n, td.multiRowNumHeadCore
    if key == 10:
        if b < td.headCoreNum:
            return b * td.rowPerHeadCore, td.rowPerHeadCore, td.multiRowNumHeadCore
        n = td.rowPerHeadCore - 1
        return b * n + td.headCoreNum, n, td.multiRowNumHeadCore
    if b < td.headCoreNum:
        return b * td.rowPerHeadCore, td.rowPerHeadCore, td.multiRowNumHeadCore
    return (td.headCoreNum * td.rowPerHeadCore + (b - td.headCoreNum) * td.rowPerTailCore, td.rowPerTailCore,
            td.multiRowNumTailCore)


@njit(**_FN)
def _load(dst, x, off, n, sm, has_smooth):
    if FAITHFUL:
        rq.load_row_f32_faithful(dst, x, off, n, XDT, sm, has_smooth)
    else:
        rq.load_row_f32(dst, x, off, n, XDT, sm, has_smooth)


@njit(**_FN)
def _absmax(buf, n, tmp):
    if FAITHFUL:
        return rq.row_absmax_faithful(buf, n, tmp)
    return rq.row_absmax(buf, n)


@njit(**_FN)
def _scale(m, scalar_div, recip, div_model):
    qm = rq.Q_SCALAR_DIV if scalar_div else rq.Q_VECTOR_DIV
    sm = rq.SCALE_RECIP_Q if recip else rq.SCALE_MAX_TIMES_INV
    if FAITHFUL:
        return rq.sym_scale_faithful(m, C_SYM, qm, div_model, sm)
    return rq.sym_scale(m, C_SYM, qm, div_model, sm)


@njit(**_FN)
def _quant_sym(buf, n, q, y, yoff, inter16, ti, tu):
    if FAITHFUL:
        if INTER16 is None:
            rq.quant_row_sym_faithful(buf, n, q, y, yoff, DT_INT16 if inter16 else DT_INT32, DST, ti, tu)
        else:
            rq.quant_row_sym_faithful(buf, n, q, y, yoff, INTER_T, DST, ti, tu)
    else:
        rq.quant_row_sym(buf, n, q, y, yoff, DST, ti)


@njit(**_FN)
def _quant_asym(buf, n, back, off, y, yoff, inter16, ti, tu):
    if FAITHFUL:
        if INTER16 is None:
            rq.quant_row_asym_faithful(buf, n, back, off, y, yoff, DT_INT16 if inter16 else DT_INT32, DST, ti, tu)
        else:
            rq.quant_row_asym_faithful(buf, n, back, off, y, yoff, INTER_T, DST, ti, tu)
    else:
        rq.quant_row_asym(buf, n, back, off, y, yoff, DST, ti)


@njit(**_FN)
def _cast_smooth(sm_f32, smooth, off, n):
    """Cast(smoothLocal, smoothHalfLocal, CAST_NONE, rowLen) of one smooth row."""
    _load(sm_f32, smooth, off, n, sm_f32, False)


@njit(**_FN)
def _smooth_index(group, group_num, real_row, gv, start):
    """GetSmoothIndex: the first index >= start whose group value >= real_row (gv: the last value read), else
    start; returns (index, gv)."""
    for index in range(start, group_num):
        gv = group[index]
        if gv >= real_row:
            return index, gv
    return start, gv


@njit(**_FN)
def _row(x, y, scale, offset, r, L, buf, tmp, ti, tu, sm, has_smooth, scalar_div, recip, inter16, div_model):
    """One row of the 1-row-at-a-time keys (0/1, 2/3, 7, 10, 100)."""
    if not FAITHFUL and not ASYM and DST == DT_INT8 and not SMOOTH:
        m = rq.row_absmax_16(x, r * L, L, XDT)       # straight from the 16-bit codes (no float32 row stored)
        q, s = _scale(m, scalar_div, recip, div_model)
        scale[r] = s
        rq.quant_row_sym_16(x, r * L, L, q, y, r * L, XDT)
        return
    if not FAITHFUL and not ASYM:
        m = rq.load_row_absmax(buf, x, r * L, L, XDT, sm, SMOOTH)
        q, s = _scale(m, scalar_div, recip, div_model)
        scale[r] = s
        rq.quant_row_sym(buf, L, q, y, r * L, DST, ti)
        return
    _load(buf, x, r * L, L, sm, SMOOTH)
    if ASYM:
        mx, mn = rq.row_minmax(buf, L, tmp)
        s, o, back = rq.asym_scale(mx, mn, C_RANGE, C_OFF)
        scale[r] = s
        offset[r] = o
        _quant_asym(buf, L, back, o, y, r * L, inter16, ti, tu)
    else:
        if FAITHFUL:
            m = rq.row_absmax_faithful(buf, L, tmp)
        else:
            m = rq.row_absmax(buf, L)
        q, s = _scale(m, scalar_div, recip, div_model)
        scale[r] = s
        _quant_sym(buf, L, q, y, r * L, inter16, ti, tu)


@njit(**_FN)
def _row_chunked(x, y, scale, offset, r, L, td, buf, tmp, ti, tu, sm, has_smooth, div_model):
    """One row of keys 6 / 8 (dynamic_quant_large_shape_opt.h, dynamic_quant_moe_large_shape.h): the max over
    chunks of innerLoopEle (the tail chunk last), then the quantization chunk by chunk."""
    ele = td.innerLoopEle
    nch = td.innerLoopTimes + (1 if td.innerLoopTail > 0 else 0)
    mxu = MIN_FLOAT_VALUE
    mnu = MAX_FLOAT_VALUE
    for c in range(nch):
        c0 = c * ele
        n = ele if c < td.innerLoopTimes else td.innerLoopTail
        _load(buf, x, r * L + c0, n, sm[c0:], SMOOTH)
        if ASYM:
            cmx, cmn = rq.row_minmax(buf, n, tmp)
            mxu = mxu if mxu > cmx else cmx
            mnu = cmn if mnu > cmn else mnu
        else:
            cm = _absmax(buf, n, tmp)
            mxu = mxu if mxu > cm else cm
    if ASYM:
        s, o, back = rq.asym_scale(mxu, mnu, C_RANGE, C_OFF)
        scale[r] = s
        offset[r] = o
    else:
        q, s = _scale(mxu, np.bool_(True), np.bool_(True), div_model)    # _row's types: one compile of _scale
        scale[r] = s
    for c in range(nch):
        c0 = c * ele
        n = ele if c < td.innerLoopTimes else td.innerLoopTail
        _load(buf, x, r * L + c0, n, sm[c0:], SMOOTH)
        if ASYM:
            _quant_asym(buf, n, back, o, y, r * L + c0, False, ti, tu)
        else:
            _quant_sym(buf, n, q, y, r * L + c0, False, ti, tu)


@njit(**_FN)
def _core(b, x, smooth, group, y, scale, offset, td, key, has_smooth, div_model):
    L = td.rowLen
    start, nrows, per = _core_rows(td, key, b)
    if nrows <= 0:
        return
    scalar_div, recip, inter16 = _key_params(key)
    moe = key == 7 or key == 8                 # (groupNum >= 1 needs smooth_scales: only read when SMOOTH)
    width = td.innerLoopEle if CHUNKED else L
    buf = np.empty(width + 16, np.float32)
    tmp = np.empty(width + 16, np.float32)
    ti = np.empty(width + 16, np.int32)
    tu = np.empty(width + 16, np.uint16)
    sm = np.zeros(L + 16, np.float32)
    if SMOOTH:
        _cast_smooth(sm, smooth, np.int64(0), L)    # the first smooth row (MoE: group 0)
    sidx = 0
    gv = np.int64(0)
    loops = nrows // per
    remain = nrows - loops * per
    npass = loops + (1 if remain > 0 else 0)
    for p in range(npass):                      # the UB passes: loopCnt full ones, then remainRow
        rows_here = per if p < loops else remain
        if SMOOTH:
            if moe:
                gv = np.int64(group[sidx])      # Compute: groupValue = groupLocal.GetValue(smoothIndex)
        for i in range(rows_here):
            r = start + p * per + i
            if SMOOTH:
                if moe:
                    real = np.int64(r + 1)
                    if gv < real:
                        sidx, gv = _smooth_index(group, td.groupNum, real, gv, sidx + 1)
                        _cast_smooth(sm, smooth, sidx * L, L)
            if CHUNKED:
                _row_chunked(x, y, scale, offset, r, L, td, buf, tmp, ti, tu, sm, has_smooth, div_model)
            else:
                _row(x, y, scale, offset, r, L, buf, tmp, ti, tu, sm, has_smooth, scalar_div, recip, inter16,
                     div_model)


@njit(parallel=True, cache=True, error_model="numpy")
def dynamic_quant_kernel(x, smooth, group, y, scale, offset, td, key, has_smooth, div_model):
    """The dynamic_quant entry: every core b < coreNum runs its key's walk (x, smooth: uint16 bits; group: int64;
    y: uint8 (int8 bytes or packed int4); scale, offset: float32 [rows])."""
    for b in prange(td.coreNum):
        _core(np.int64(b), x, smooth, group, y, scale, offset, td, key, has_smooth, div_model)   # (one type of b)


_ = (DT_INT8,)
