"""Per-core kernels of DynamicQuantV2 on Ascend 950 (arch35 regbase), pertoken and pertensor, docs/ops/dynamic_quant.md
§9.

Side by side with hicann/ops-nn quant/dynamic_quant/op_kernel/arch35/: dynamic_quant_regbase_base.h (InitParams: the
head/tail row split), dynamic_quant_regbase_full_load.h (template 0), _large_shape_db.h (1), _moe_full_load.h (2),
_moe_large_shape.h (3), _full_load_pertensor.h (4), _large_shape_db_pertensor.h (5),
_moe_full_load_pertensor.h (10), _moe_large_shape_pertensor.h (11), _pertoken_large_multicore.h (12); the dispatch
is quant/dynamic_quant_v2/op_kernel/dynamic_quant_v2_apt.cpp.

Per element (v = f32(x) [* f32(smooth)], one rounding):

    symmetric:  m = max over the row (tensor) of |v| * k         k = fp32(1 / C)
                scale = m;  y = Q(Div(v, scale))
    asymmetric: mx, mn = max, min of v;  scale = (mx - mn) * k2  k2 = fp32(1 / R)
                offset = C - Div(mx, scale)  (Muls -1, Adds C);  y = Q(Div(v, scale) + offset)

C / R: int8 127 / 255, int4 7 / 15, e5m2 57344 / 114688, e4m3fn 448 / 896, hifloat8 D / 2D with D = dst_type_max
(0 -> 32768). Full-load templates take max|v| then multiply by k, large-shape ones multiply every |v| by k before the
max: the same bits (rounding is monotone). Q: int8 / int4 Cast f32 -> int16 RINT, -> half ROUND, -> int8 / int4
TRUNC (int4 packed two per byte, element 2i low); FP8 Cast RINT saturating; HiF8 Cast ROUND saturating (the kernel
sets CTRL[60] = 0 for FP8 / HiF8 outputs, so the trait's SatMode::SAT applies). A NaN in a max or min propagates
([HW-unverified]).

Pertensor and template 12 are two-pass: every core writes its partial max (and min) to the workspace, SyncAll, then
every core folds the partials it needs, and core 0 (template 12: the token's first core) stores scale / offset. The
launch runs ``phase`` 1 on every core, then ``phase`` 2 (the SyncAll); per-token templates run ``phase`` 0 once.

Specialised through npu_emu.specialize: FAITHFUL (the instructions of npu_emu.ascendc in the kernel's order, or
fused loops over the codecs), XDT, YDT, ASYM, SMOOTH, PC (the perchannel walk or the row walks).
"""

import numpy as np
from numba import prange

from npu_emu.ascendc import Abs, Adds, Cast, Div, Muls, ReduceMax
from npu_emu.ascendc.constants import (
    CAST_FLAG_SAT,
    CAST_RINT,
    CAST_ROUND,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT8_E4M3FN,
    DT_FLOAT8_E5M2,
    DT_HIFLOAT8,
    DT_INT4,
    DT_INT8,
    DT_INT16,
)
from npu_emu.ascendc.vector import div_f32
from npu_emu.device.specialize import const, load, njit
from npu_emu.dtypes.scalar import encode_e4m3fn, encode_e5m2, encode_hif8
from npu_emu.kernels.dynamic_quant import row_quant as rq
# GetSmoothIndex of dynamic_quant_regbase_moe_*.h is the A2 kernels' (dynamic_quant_moe*.h) search
from npu_emu.kernels.dynamic_quant.kernel import _smooth_index

FAITHFUL = const("FAITHFUL", False)
XDT = const("XDT", DT_BF16)
YDT = const("YDT", DT_INT8)
ASYM = const("ASYM", False)
SMOOTH = const("SMOOTH", False)
PC = const("PC", False)              # perchannel templates 7 / 8 / 9 (else the row templates): one walk compiled

# typed arguments for calls that elsewhere pass a variable: a literal 0 or True makes numba compile the callee a
# second time (Literal[int](0) is another signature than int64)
_0 = np.int64(0)
_TRUE = np.bool_(True)
NEG_INF = np.float32(-np.inf)
POS_INF = np.float32(np.inf)
_FN = dict(cache=True, error_model="numpy")


def device(faithful, xdt, ydt, asym, smooth, perchannel=False):
    return load(__name__.split("[")[0], FAITHFUL=bool(faithful), XDT=int(xdt), YDT=int(ydt), ASYM=bool(asym),
                SMOOTH=bool(smooth), PC=bool(perchannel))


@njit(**_FN)
def _consts(dtm):
    """(C, k = fp32(1/C), k2 = fp32(1/R)) of the output type (SetMaxValue / SetSymMaxValue / SetNoSymMaxValue)."""
    if YDT == DT_INT4:
        c, r = np.float32(7.0), np.float32(15.0)
    elif YDT == DT_FLOAT8_E5M2:
        c, r = np.float32(57344.0), np.float32(114688.0)
    elif YDT == DT_FLOAT8_E4M3FN:
        c, r = np.float32(448.0), np.float32(896.0)
    elif YDT == DT_HIFLOAT8:
        c = np.float32(dtm)
        r = np.float32(c * np.float32(2.0))
    else:
        c, r = np.float32(127.0), np.float32(255.0)
    return c, np.float32(np.float32(1.0) / c), np.float32(np.float32(1.0) / r)


@njit(**_FN)
def _fmax(a, b):
    """Vector Max with a NaN operand propagating ([HW-unverified])."""
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b


@njit(**_FN)
def _fmin(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a < b else b


@njit(**_FN)
def _load(buf, x, off, n, sm):
    if FAITHFUL:
        rq.load_row_f32_faithful(buf, x, off, n, XDT, sm, SMOOTH)
    else:
        rq.load_row_f32(buf, x, off, n, XDT, sm, SMOOTH)


@njit(**_FN)
def _partial(buf, n, tmp, k, large):
    """(max, min) of one chunk: symmetric max|v| * k (min unused), asymmetric max / min of v."""
    if ASYM:
        return rq.row_minmax(buf, n, tmp)
    if FAITHFUL:
        Abs(tmp, buf, n)
        if large:               # ComputeMaxScale: Abs, Muls(scaleMaxValue), Max, Reduce
            Muls(tmp, tmp, k, n)
            ReduceMax(tmp, tmp, tmp, n)
            return np.float32(tmp[0]), POS_INF
        ReduceMax(tmp, tmp, tmp, n)       # ComputeScaleVF: Abs, Max, Reduce, then Muls(maxValue)
        Muls(tmp, tmp, k, 1)
        return np.float32(tmp[0]), POS_INF
    return np.float32(rq.row_absmax(buf, n) * k), POS_INF


@njit(**_FN)
def _scale_offset(mx, mn, c, k2, div_model):
    """Asymmetric scale and offset from the folded max / min (Sub, Muls(k2), Div, Muls(-1), Adds(C))."""
    s = np.float32(np.float32(mx - mn) * k2)
    if FAITHFUL:
        t = np.empty(1, np.float32)
        t[0] = mx
        d = np.empty(1, np.float32)
        d[0] = s
        Div(t, t, d, 1, DT_FLOAT, div_model)
        Muls(t, t, np.float32(-1.0), 1)
        Adds(t, t, c, 1)
        return s, np.float32(t[0])
    q = div_f32(mx, s, div_model)
    return s, np.float32(np.float32(-q) + c)


@njit(**_FN)
def _quant(buf, n, s, o, y, yoff, ti, tu, div_model):
    """y[yoff : yoff + n] = Q(Div(v, s) (+ o)); ``buf`` is overwritten."""
    if FAITHFUL:
        Div(buf, buf, s, n, DT_FLOAT, div_model)
        if ASYM:
            Adds(buf, buf, o, n)
        if YDT == DT_INT8 or YDT == DT_INT4:
            rq._chain_faithful(buf, n, y, yoff, DT_INT16, YDT, ti, tu)
        elif YDT == DT_HIFLOAT8:
            Cast(y[yoff:yoff + n], buf, CAST_ROUND, n, DT_HIFLOAT8, DT_FLOAT, CAST_FLAG_SAT)
        else:
            Cast(y[yoff:yoff + n], buf, CAST_RINT, n, YDT, DT_FLOAT, CAST_FLAG_SAT)
        return
    for i in range(n):
        v = div_f32(buf[i], s, div_model)
        if ASYM:
            v = np.float32(v + o)
        buf[i] = v
    _store(buf, n, y, yoff, ti)


@njit(**_FN)
def _fold_ws(wsx, wsn, lo, hi):
    mx = NEG_INF
    mn = POS_INF
    for i in range(lo, hi):
        mx = _fmax(mx, wsx[i])
        mn = _fmin(mn, wsn[i])
    return mx, mn


@njit(**_FN)
def _span_chunks(x, y, r, L, e0, ne, ele, buf, tmp, sm, k, large, mx, mn):
    """Fold the partial max / min of elements [e0, e0 + ne) of row r, in chunks of ``ele``."""
    c = 0
    while c < ne:
        n = min(ele, ne - c)
        _load(buf, x, r * L + e0 + c, n, sm[e0 + c:])
        a, b = _partial(buf, n, tmp, k, large)
        mx = _fmax(mx, a)
        mn = _fmin(mn, b)
        c += n
    return mx, mn


@njit(**_FN)
def _span_quant(x, y, r, L, e0, ne, ele, buf, ti, tu, sm, s, o, div_model):
    c = 0
    while c < ne:
        n = min(ele, ne - c)
        _load(buf, x, r * L + e0 + c, n, sm[e0 + c:])
        _quant(buf, n, s, o, y, r * L + e0 + c, ti, tu, div_model)
        c += n


@njit(**_FN)
def _core(b, x, smooth, group, y, scale, offset, wsx, wsn, td, tpl, div_model, phase):
    L = td.rowLen
    c, k, k2 = _consts(td.dstTypeMax)
    large = tpl == 1 or tpl == 3 or tpl == 5 or tpl == 11 or tpl == 12
    ele = td.innerLoopEle if large else L
    buf = np.empty(ele + 16, np.float32)
    tmp = np.empty(ele + 16, np.float32)
    ti = np.empty(ele + 16, np.int32)
    tu = np.empty(ele + 16, np.uint16)
    sm = np.zeros(L + 16, np.float32)
    if SMOOTH:
        rq.load_row_f32(sm, smooth, 0, L, XDT, sm, False)     # Cast of the smooth row (exact either way)
    if tpl == 12:
        # pertoken large multicore: this core owns elements [e0, e0 + ne) of one token
        cpt = td.headCoreNum
        tok = b // cpt
        j = b % cpt
        hs = td.multiRowNumHeadCore
        ne = td.rowPerHeadCore if j < hs else td.rowPerTailCore
        e0 = j * td.rowPerHeadCore if j < hs else hs * td.rowPerHeadCore + (j - hs) * td.rowPerTailCore
        if phase == 1:
            mx, mn = _span_chunks(x, y, tok, L, e0, ne, ele, buf, tmp, sm, k, _TRUE, NEG_INF, POS_INF)
            wsx[b] = mx
            wsn[b] = mn
            return
        mx, mn = _fold_ws(wsx, wsn, tok * cpt, tok * cpt + cpt)
        if ASYM:
            s, o = _scale_offset(mx, mn, c, k2, div_model)
        else:
            s, o = mx, np.float32(0.0)
        if j == 0:
            scale[tok] = s
            if ASYM:
                offset[tok] = o
        _span_quant(x, y, tok, L, e0, ne, ele, buf, ti, tu, sm, s, o, div_model)
        return
    if b < td.headCoreNum:
        start, nrows = b * td.rowPerHeadCore, td.rowPerHeadCore
    else:
        start, nrows = td.headCoreNum * td.rowPerHeadCore + (b - td.headCoreNum) * td.rowPerTailCore, td.rowPerTailCore
    per_tensor = tpl == 4 or tpl == 5 or tpl == 10 or tpl == 11
    moe = tpl == 2 or tpl == 3 or tpl == 10 or tpl == 11
    s = np.float32(0.0)
    o = np.float32(0.0)
    if per_tensor and phase == 2:
        mx, mn = _fold_ws(wsx, wsn, _0, td.coreNum)
        if ASYM:
            s, o = _scale_offset(mx, mn, c, k2, div_model)
        else:
            s = mx
        if b == 0:
            scale[0] = s
            if ASYM:
                offset[0] = o
    amx = NEG_INF
    amn = POS_INF
    sidx = 0
    gv = np.int64(0)
    if SMOOTH and moe:
        gv = np.int64(group[0])
    for i in range(nrows):
        r = start + i
        if SMOOTH and moe:
            real = np.int64(r + 1)
            if gv < real:
                sidx, gv = _smooth_index(group, td.groupNum, real, gv, sidx + 1)
                rq.load_row_f32(sm, smooth, sidx * L, L, XDT, sm, False)
        if per_tensor and phase == 1:
            amx, amn = _span_chunks(x, y, r, L, _0, L, ele, buf, tmp, sm, k, large, amx, amn)
        elif per_tensor:
            _span_quant(x, y, r, L, _0, L, ele, buf, ti, tu, sm, s, o, div_model)
        else:
            # (full load keeps the row in UB between the two passes; reading it again gives the same values)
            mx, mn = _span_chunks(x, y, r, L, _0, L, ele, buf, tmp, sm, k, large, NEG_INF, POS_INF)
            if ASYM:
                s, o = _scale_offset(mx, mn, c, k2, div_model)
                offset[r] = o
            else:
                s = mx
            scale[r] = s
            _span_quant(x, y, r, L, _0, L, ele, buf, ti, tu, sm, s, o, div_model)
    if per_tensor and phase == 1:
        wsx[b] = amx
        wsn[b] = amn


@njit(**_FN)
def _pc_block(td, tpl, i):
    """tiling_arch35.pc_block: (first batch, batches, first row, rows, first column, columns) of block i."""
    if tpl == 7:
        nb = i // td.batchBlockNum
        bb = i - nb * td.batchBlockNum
        nbs = td.nTailBlockSize if nb + 1 == td.nBlockNum else td.nBlockSize
        bbs = td.batchTailBlockSize if bb + 1 == td.batchBlockNum else td.batchBlockSize
        return bb * td.batchBlockSize, bbs, 0, td.mLen, nb * td.nBlockSize, nbs
    if tpl == 8:
        nbs = td.nTailBlockSize if i % td.nBlockNum + 1 == td.nBlockNum else td.nBlockSize
        return i // td.nBlockNum, 1, 0, td.mLen, (i % td.nBlockNum) * td.nBlockSize, nbs
    b = i // td.nBlockNum // td.mBlockNum
    nb = (i - b * td.nBlockNum * td.mBlockNum) // td.mBlockNum
    mb = i - b * td.nBlockNum * td.mBlockNum - nb * td.mBlockNum
    nbs = td.nTailBlockSize if nb + 1 == td.nBlockNum else td.nBlockSize
    mbs = td.mTailBlockSize if mb + 1 == td.mBlockNum else td.mBlockSize
    return b, 1, mb * td.mBlockSize, mbs, nb * td.nBlockSize, nbs


@njit(**_FN)
def _pc_load(buf, x, off, n, s_row):
    """One row segment of a column block: v = f32(x) * f32(smooth[m]) (the smooth value broadcast, DIST_BRC_B16)."""
    if FAITHFUL:
        rq.load_row_f32_faithful(buf, x, off, n, XDT, buf, False)
    else:
        rq.load_row_f32(buf, x, off, n, XDT, buf, False)
    if SMOOTH:
        if FAITHFUL:
            Muls(buf, buf, s_row, n)
        else:
            for i in range(n):
                buf[i] = buf[i] * s_row


@njit(**_FN)
def _pc_fold(x, b, m0, mn, n0, nn, M, N, buf, tmp, smf, cmx, cmn):
    """Column max |v| (symmetric) or max / min v (asymmetric) over rows [m0, m0 + mn) of batch b, folded into
    cmx / cmn [nn] (the vector Max / Min per column)."""
    for m in range(m0, m0 + mn):
        _pc_load(buf, x, (b * M + m) * N + n0, nn, smf[m])
        if ASYM:
            for j in range(nn):
                cmx[j] = _fmax(cmx[j], buf[j])
                cmn[j] = _fmin(cmn[j], buf[j])
        else:
            if FAITHFUL:
                Abs(tmp, buf, nn)
                for j in range(nn):
                    cmx[j] = _fmax(tmp[j], cmx[j])
            else:
                for j in range(nn):
                    cmx[j] = _fmax(abs(buf[j]), cmx[j])


@njit(**_FN)
def _pc_scale(cmx, cmn, nn, c, k, k2, sc, of, div_model):
    """Per column: scale = colmax * fp32(1/C) (Mul by the duplicated factor); asymmetric (max - min) * fp32(1/R)
    and offset = C - Div(max, scale) (Sub)."""
    for j in range(nn):
        if ASYM:
            s = np.float32(np.float32(cmx[j] - cmn[j]) * k2)
            sc[j] = s
            of[j] = np.float32(c - div_f32(cmx[j], s, div_model))
        else:
            sc[j] = np.float32(cmx[j] * k)


@njit(**_FN)
def _pc_quant(x, y, b, m0, mn, n0, nn, M, N, buf, ti, tu, smf, sc, of, div_model):
    for m in range(m0, m0 + mn):
        off = (b * M + m) * N + n0
        _pc_load(buf, x, off, nn, smf[m])
        if FAITHFUL:
            Div(buf, buf, sc, nn, DT_FLOAT, div_model)
            if ASYM:
                for j in range(nn):          # Add(vregDiv, vregOffset): one float32 addition per element
                    buf[j] = np.float32(buf[j] + of[j])
            if YDT == DT_INT8 or YDT == DT_INT4:
                rq._chain_faithful(buf, nn, y, off, DT_INT16, YDT, ti, tu)
            elif YDT == DT_HIFLOAT8:
                Cast(y[off:off + nn], buf, CAST_ROUND, nn, DT_HIFLOAT8, DT_FLOAT, CAST_FLAG_SAT)
            else:
                Cast(y[off:off + nn], buf, CAST_RINT, nn, YDT, DT_FLOAT, CAST_FLAG_SAT)
            continue
        for j in range(nn):
            v = div_f32(buf[j], sc[j], div_model)
            if ASYM:
                v = np.float32(v + of[j])
            buf[j] = v
        _store(buf, nn, y, off, ti)


@njit(**_FN)
def _store(buf, n, y, yoff, ti):
    if YDT == DT_INT8 or YDT == DT_INT4:
        rq._chain_fused(buf, n, y, yoff, YDT, ti)
    else:
        yo = y[yoff:yoff + n]
        for i in range(n):
            if YDT == DT_HIFLOAT8:
                yo[i] = encode_hif8(buf[i], CAST_ROUND, True, False)
            elif YDT == DT_FLOAT8_E4M3FN:
                yo[i] = encode_e4m3fn(buf[i], True, False)
            else:
                yo[i] = encode_e5m2(buf[i], True, False)


@njit(**_FN)
def _core_pc(c_idx, x, smooth, y, scale, offset, wsx, wsn, td, tpl, div_model, phase):
    """Perchannel templates 7 / 8 / 9: core c_idx walks blocks [start, start + n) (head cores blockPerHead)."""
    M = td.mLen
    N = td.nLen
    c, k, k2 = _consts(td.dstTypeMax)
    nblk = td.blockPerHead if c_idx < td.headCoreNum else td.blockPerTail
    start = (c_idx * td.blockPerHead if c_idx < td.headCoreNum
             else td.headCoreNum * td.blockPerHead + (c_idx - td.headCoreNum) * td.blockPerTail)
    w = td.nBlockSize
    buf = np.empty(w + 16, np.float32)
    tmp = np.empty(w + 16, np.float32)
    ti = np.empty(w + 16, np.int32)
    tu = np.empty(w + 16, np.uint16)
    cmx = np.empty(w, np.float32)
    cmn = np.empty(w, np.float32)
    sc = np.empty(w, np.float32)
    of = np.zeros(w, np.float32)
    smf = np.zeros(M + 16, np.float32)
    if SMOOTH:
        rq.load_row_f32(smf, smooth, 0, M, XDT, smf, False)
    for i in range(start, start + nblk):
        b0, bn, m0, mn, n0, nn = _pc_block(td, tpl, i)
        for b in range(b0, b0 + bn):
            if tpl == 9 and phase == 2:
                # the column maxima of every row block of this batch, atomically maxed into the workspace
                for j in range(nn):
                    cmx[j] = NEG_INF
                    cmn[j] = POS_INF
                for mb in range(td.mBlockNum):
                    base = (b * td.mBlockNum + mb) * N + n0
                    for j in range(nn):
                        cmx[j] = _fmax(cmx[j], wsx[base + j])
                        cmn[j] = _fmin(cmn[j], wsn[base + j])
            else:
                for j in range(nn):
                    cmx[j] = NEG_INF
                    cmn[j] = POS_INF
                _pc_fold(x, b, m0, mn, n0, nn, M, N, buf, tmp, smf, cmx, cmn)
                if tpl == 9:           # phase 1: this block's partial column maxima (SetAtomicMax into workspace)
                    base = (b * td.mBlockNum + i % td.mBlockNum) * N + n0
                    for j in range(nn):
                        wsx[base + j] = cmx[j]
                        wsn[base + j] = cmn[j]
                    continue
            _pc_scale(cmx, cmn, nn, c, k, k2, sc, of, div_model)
            for j in range(nn):
                scale[b * N + n0 + j] = sc[j]
                if ASYM:
                    offset[b * N + n0 + j] = of[j]
            _pc_quant(x, y, b, m0, mn, n0, nn, M, N, buf, ti, tu, smf, sc, of, div_model)


@njit(parallel=True, cache=True, error_model="numpy")
def dynamic_quant_arch35_kernel(x, smooth, group, y, scale, offset, wsx, wsn, td, tpl, div_model, phase):
    """Every core b < coreNum runs its template's walk for ``phase`` (0: per-token, 1 / 2: the two passes around
    SyncAll). x, smooth: uint16 bits; group: int64; y: uint8 (codes, or packed int4); scale / offset: float32;
    wsx / wsn: the float32 workspace [coreNum] (max / min partials)."""
    for b in prange(td.coreNum):
        if PC:
            _core_pc(np.int64(b), x, smooth, y, scale, offset, wsx, wsn, td, tpl, div_model, phase)
        else:
            _core(np.int64(b), x, smooth, group, y, scale, offset, wsx, wsn, td, tpl, div_model, phase)


_ = (DT_INT8, DT_FLOAT8_E5M2)
