"""Cube accumulation primitives: what the Mmad + L0C stage of every base block produces
(docs/ops/quant_matmul.md §7.9).

Integer inputs: the exact int32 dot product. Float inputs (fp8, hif8, fp4, MX): the ``float_accum`` models of
docs/ops/quant_matmul.md §1 — "exact" (exact products, exact k-sum, one RNE rounding to fp32), "kchunk" (exact per
baseK chunk, chunks accumulated in fp32 in k order), "sequential" (one fp32 running sum in increasing k) and "numpy"
(the vendor golden literally: numpy fp32 matmul, BLAS-dependent).

Speed without giving up exactness (the brief's "exact fast primitive"): BLAS is used only where its result is
provably exact whatever its summation order —
* int8/int4: float32 GEMM on k-chunks short enough that every partial sum is an integer below 2^24 (bounded by
  the row sums of |a| times max |b|, :func:`int_k_bounds`), then int32;
* float formats: float64 GEMM on exponent bands of the operands chosen so that every partial sum of a band pair
  is an integer multiple of the band's quantum below 2^53; the band-pair results (exact float64 values) are
  then summed exactly and rounded once to fp32 by :func:`exact_sum_f32` (integer limbs, no float rounding).
One band pair (the common case: data spanning fewer than ~17 binades) costs one float64 GEMM.

The results are the same for every block decomposition, so the kernels may take them for the whole GM matrix;
kernel.py's ``faithful=True`` path recomputes the integer case block by block to prove it.
"""

import math
from itertools import pairwise

import numpy as np
from numba import njit, prange

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.device.jit_options import PARALLEL, is_contended
from npu_emu.device.launch import host_column_split, host_matmul, run_host_parts, serial_below, single_blas_thread
from npu_emu.device.read_only import read_only as ro

FLOAT_ACCUM = ("exact", "kchunk", "sequential", "numpy")
F32_EXACT_INT = 1 << 24          # integers up to 2^24 are exact in float32
F64_MANTISSA = 53
_LIMB = 30                       # limb width of the exact accumulator (int64 limbs leave room for carries)
_LIMB_MASK = (1 << _LIMB) - 1


# --------------------------------------------------------------------------------------------------------------
# integer cube: exact int32 accumulation
# --------------------------------------------------------------------------------------------------------------

def int_k_chunk(amax_a, amax_b, k):
    """Longest k-chunk whose partial sums stay exact in float32 (|sum| <= chunk * amax_a * amax_b <= 2^24),
    rounded down to a multiple of 256 when longer than that (BLAS runs full-width panels; shorter chunks are exact
    too)."""
    prod = int(amax_a) * int(amax_b)
    if prod == 0:
        return k
    step = max(1, min(k, F32_EXACT_INT // prod))
    return step - step % 256 if 256 <= step < k else step


K_BLOCK = 256                    # granularity of the bound-based k-chunks (BLAS runs full-width panels)


def int_k_bounds(a, amax_b, k):
    """K chunk boundaries ``[0, k1, ..., k]`` (whole 256-blocks) of an exact float32 GEMM of int8/int4-valued
    ``a`` (M, K) by a b whose largest magnitude is ``amax_b``: every row's ``amax_b * sum over the chunk of
    |a[i, k]|`` stays <= 2^24. Every partial sum BLAS forms in a chunk, in whatever order and blocking, is a sum
    of some of the chunk's products, so an integer of magnitude <= that bound: exact in float32 (an FMA rounds
    an exact value too). Greedy, longest chunks first.

    Against :func:`int_k_chunk`'s worst case (chunk * max|a| * max|b| <= 2^24: 1024 for full-range int8) the row
    sums of |a| give about 1800 on uniform int8 and one chunk for activations whose values are mostly small. A
    256-block always fits (256 * 128 * 128 = 2^22)."""
    nb = -(-k // K_BLOCK)
    if amax_b == 0 or nb <= 1:
        return [0, k]
    limit = F32_EXACT_INT // int(amax_b)                       # largest row sum of |a| allowed in one chunk
    prefix = np.zeros((a.shape[0], nb + 1), np.int64)
    full = k // K_BLOCK
    for r0 in range(0, a.shape[0], 1024):                     # slabs: |a| in int16 is twice a's bytes
        ab = np.abs(a[r0:r0 + 1024], dtype=np.int16)          # |-128| = 128 (int16 before the abs)
        blocks = np.empty((ab.shape[0], nb), np.int64)
        blocks[:, :full] = ab[:, :full * K_BLOCK].reshape(ab.shape[0], full, K_BLOCK).sum(axis=2, dtype=np.int32)
        if full < nb:
            blocks[:, full] = ab[:, full * K_BLOCK:].sum(axis=1, dtype=np.int32)
        np.cumsum(blocks, axis=1, out=prefix[r0:r0 + 1024, 1:])
    bounds, b0 = [0], 0
    while b0 < nb:
        span = (prefix[:, b0 + 1:] - prefix[:, b0:b0 + 1]).max(axis=0)    # non-decreasing in the chunk's end
        b1 = b0 + max(1, int(np.searchsorted(span, limit, side="right")))
        bounds.append(min(k, b1 * K_BLOCK))
        b0 = b1
    return bounds


def _int_columns(jobs, n0, n1, gemm):
    """For every job (a, b, bounds, total): total[:, n0:n1] = the exact sum over ``bounds``' chunks of float32 GEMMs
    of a by b's columns n0:n1 (int32 or int64 ``total``); the chunks' operands converted once into buffers that
    every chunk of every job reuses."""
    rows = max(job[0].shape[0] for job in jobs)
    longest = max(k1 - k0 for job in jobs for k0, k1 in pairwise(job[2]))
    abuf = np.empty((rows, longest), np.float32)
    bbuf = np.empty((longest, n1 - n0), np.float32)
    cbuf = np.empty((rows, n1 - n0), np.float32)
    for a, b, bounds, total in jobs:
        m = a.shape[0]
        chunk, dst = cbuf[:m], total[:, n0:n1]
        for i, (k0, k1) in enumerate(pairwise(bounds)):
            ac, bc = abuf[:m, :k1 - k0], bbuf[:k1 - k0]
            np.copyto(ac, a[:, k0:k1], casting="unsafe")
            np.copyto(bc, b[k0:k1, n0:n1], casting="unsafe")
            gemm(ac, bc, out=chunk)
            if i == 0:
                np.copyto(dst, chunk, casting="unsafe")            # exact integers below 2^24
            else:
                np.add(dst, chunk, out=dst, casting="unsafe")    # float64 sum of exact integers below 2^31 / 2^53


def int_matmul_groups(a, b, groups, out):
    """Exact int32 ``out[r0:r0 + m] = a[r0:r0 + m] @ b[g]`` for every ``(g, r0, m)`` of ``groups`` (int8-valued a
    (M, K), b (G, K, N), int32 ``out`` (M, N), any strides; rows of no group untouched), as the cube's L0C holds it.

    int32 wrap-around on overflow is that of the int32 accumulator (reached only for K > 2^17). Only numpy runs
    here (float32 GEMMs on the k-chunks of :func:`int_k_bounds`, the exact chunk sums added in float64): no numba
    pool in between. A large call runs its column ranges on host threads (``launch.host_column_split``: each GEMM
    on one BLAS thread, every thread through all groups: one join per call), a small one on the calling thread.
    """
    k, n = b.shape[1], b.shape[2]
    jobs, wides = [], []
    # bytes (|v| <= 255) in one 256-block: 256 * 255 * 255 < 2^24, one exact chunk and no int32 wrap whatever the
    # values, so the scans below (four reductions: 12 us of a 64 x 128 x 64 call) would decide nothing
    one_chunk = 0 < k <= K_BLOCK and n > 0 and a.dtype.kind in "iu" and b.dtype.kind in "iu" \
        and a.dtype.itemsize == 1 and b.dtype.itemsize == 1
    for g, r0, m in groups:
        if m <= 0:
            continue
        ag, bg, og = a[r0:r0 + m], b[g], out[r0:r0 + m]
        if one_chunk:
            jobs.append((ag, bg, [0, k], og))
            continue
        amax_a = max(int(ag.max()), -int(ag.min())) if k else 0  # python ints: -(-128) does not wrap
        amax_b = max(int(bg.max()), -int(bg.min())) if k and n else 0
        if amax_a == 0 or amax_b == 0 or n == 0:
            og[...] = 0
            continue
        wide = k * amax_a * amax_b >= 2**31                    # the int32 accumulator may wrap: sum in int64
        total = np.empty((m, n), np.int64) if wide else og
        jobs.append((ag, bg, int_k_bounds(ag, amax_b, k), total))
        if wide:
            wides.append((total, og))
    if not jobs:
        return out
    # one GEMM: BLAS's own threads are as fast as two host threads (1024^3: 20.5 against 19.5-19.9 ms) and, unlike
    # them, not slowed by the spinning workers a user's (or our previous) threaded GEMM leaves behind (1.5x then);
    # a run of GEMMs (expert groups, k-chunks) gains from one join per call: GroupedMatmul 8 x 4096 x 7168 x 2048
    # took 589-606 ms split against 648-652 ms
    gemms = sum(len(job[2]) - 1 for job in jobs)
    parts = host_column_split(n, sum(job[0].shape[0] for job in jobs) * k * n) if gemms > 1 else [(0, n)]
    if len(parts) > 1:
        run_host_parts(lambda n0, n1: _int_columns(jobs, n0, n1, np.matmul), parts)
    elif is_contended():
        # not host_matmul's BLAS threads for its largest GEMMs: they meet inside every GEMM; on the loaded 2-core
        # box 8 groups in 1024-long chunks took 1.8x the float32 GEMM with them, 1.1x on one thread, and the
        # quantised-activation asv case (512 x 4096 x 2048 chunks, above host_matmul's 2^31) 1.56x with them
        with single_blas_thread():
            _int_columns(jobs, 0, n, np.matmul)
    else:
        _int_columns(jobs, 0, n, host_matmul)
    for total, og in wides:
        np.copyto(og, total.astype(np.int32))                  # int64 -> int32 wraps modulo 2^32
    return out


def int_matmul(a, b, out=None):
    """Exact int32 ``a @ b`` for int8-valued a (M, K) and b (K, N) (any strides): :func:`int_matmul_groups` with
    one group. ``out``: an int32 (M, N) array (any strides) to write into instead of a new one."""
    acc = np.empty((a.shape[0], b.shape[1]), np.int32) if out is None else out
    return int_matmul_groups(a, b[None], [(0, 0, a.shape[0])], acc)


# --------------------------------------------------------------------------------------------------------------
# exact sum of a few float64 values, rounded once to float32 (RNE)
# --------------------------------------------------------------------------------------------------------------

@njit(inline="always", cache=True, error_model="numpy")
def _bit(limbs, pos):
    return (limbs[pos // _LIMB] >> (pos % _LIMB)) & 1


@njit(cache=True, error_model="numpy")
def exact_sum_f32(vals, n, limbs):
    """RNE float32 of the exact sum of vals[0:n] (float64). ``limbs`` is int64 scratch of >= 80 entries.

    NaN in, or +Inf and -Inf together -> NaN; otherwise an infinity wins. Finite values: each is m * 2^e with a
    53-bit integer m (frexp); they are added exactly into base-2^30 limbs relative to the smallest exponent, and
    the integer is rounded to 24 significant bits (or to the 2^-149 quantum below the normal range).
    """
    has_nan = False
    pinf = False
    ninf = False
    emin = 100000
    emax = -100000
    for i in range(n):
        v = vals[i]
        if v != v:
            has_nan = True
        elif v == np.inf:
            pinf = True
        elif v == -np.inf:
            ninf = True
        elif v != 0.0:
            mant, e = math.frexp(v)
            if e - 53 < emin:
                emin = e - 53
            if e > emax:
                emax = e
    if has_nan or (pinf and ninf):
        return np.float32(np.nan)
    if pinf:
        return np.float32(np.inf)
    if ninf:
        return np.float32(-np.inf)
    if emax == -100000:
        # all zeros: IEEE sum of zeros is -0 only if every term is -0
        neg = n > 0
        for i in range(n):
            if not (vals[i] == 0.0 and math.copysign(1.0, vals[i]) < 0.0):
                neg = False
        return np.float32(-0.0) if neg else np.float32(0.0)
    nlimb = (emax - emin + 8) // _LIMB + 3                # <= 75 for any float64 span; callers pass 96
    for i in range(nlimb):
        limbs[i] = 0
    for i in range(n):
        v = vals[i]
        if v == 0.0:
            continue
        mant, e = math.frexp(v)
        mi = np.int64(mant * 9007199254740992.0)        # exact: |mant| < 1, 53 bits
        shift = (e - 53) - emin
        idx = shift // _LIMB
        off = shift % _LIMB
        sgn = np.int64(1)
        if mi < 0:
            sgn = np.int64(-1)
            mi = -mi
        # split the 53-bit magnitude into 30-bit pieces so every shifted piece fits an int64
        j = 0
        while mi != 0:
            piece = (mi & _LIMB_MASK) << off
            limbs[idx + j] += sgn * (piece & _LIMB_MASK)
            limbs[idx + j + 1] += sgn * (piece >> _LIMB)
            mi >>= _LIMB
            j += 1
    # carry-normalise to digits in [0, 2^30) with a signed top
    for i in range(nlimb - 1):
        c = limbs[i] >> _LIMB                                # floor division: works for negative limbs
        limbs[i] -= c << _LIMB
        limbs[i + 1] += c
    negative = limbs[nlimb - 1] < 0
    if negative:
        for i in range(nlimb):
            limbs[i] = -limbs[i]
        for i in range(nlimb - 1):
            c = limbs[i] >> _LIMB
            limbs[i] -= c << _LIMB
            limbs[i + 1] += c
    top = -1
    for i in range(nlimb - 1, -1, -1):
        if limbs[i] != 0:
            b = 0
            x = limbs[i]
            while x != 0:
                x >>= 1
                b += 1
            top = i * _LIMB + b - 1
            break
    if top < 0:
        return np.float32(0.0)  # exact cancellation gives +0 in RNE
    top_exp = emin + top                                     # exponent of the leading bit
    q = top_exp - 23
    if q < -149:
        q = -149
    shift = q - emin
    if shift <= 0:
        # at most 24 significant bits, all in limb 0: exactly representable
        val = math.ldexp(np.float64(limbs[0]), emin)
    else:
        r = np.int64(0)
        for pos in range(top, shift - 1, -1):
            r = (r << 1) | _bit(limbs, pos)
        half = _bit(limbs, shift - 1)
        sticky = False
        below = shift - 1                                    # bits [0, below) decide ties
        full = below // _LIMB
        for i in range(full):
            if limbs[i] != 0:
                sticky = True
                break
        if not sticky and below % _LIMB:
            sticky = (limbs[full] & ((np.int64(1) << (below % _LIMB)) - 1)) != 0
        if half and (sticky or (r & 1)):
            r += 1
        val = math.ldexp(np.float64(r), q)
    f = np.float32(val)                                      # exact, or Inf past the float32 range
    return -f if negative else f


@njit(inline="always", cache=True, error_model="numpy")
def _two_sum(a, b):
    """Knuth's TwoSum: s + e == a + b exactly, s = fl(a + b) (no FMA, no reassociation: numba without fastmath)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


@njit(cache=True, error_model="numpy")
def fast_sum_f32(vals, n):
    """(ok, RN32 of the exact sum) through error-free transformations; ok is False when the tail of the
    double-double does not stay exact (then :func:`exact_sum_f32` decides) or a value is not finite."""
    hi = 0.0
    lo = 0.0
    for i in range(n):
        v = vals[i]
        if not np.isfinite(v):
            return False, np.float32(0.0)
        hi, err = _two_sum(hi, v)
        lo, err2 = _two_sum(lo, err)
        if err2 != 0.0:
            return False, np.float32(0.0)
    hi, lo = _two_sum(hi, lo)                                # hi = RN64(exact sum), lo = the exact remainder
    f = np.float32(hi)
    fd = np.float64(f)
    if lo != 0.0 and fd != hi and np.isfinite(f):
        other = np.float32(np.nextafter(f, np.float32(np.inf) if hi > fd else np.float32(-np.inf)))
        if hi - fd == np.float64(other) - hi:                # hi sits on a float32 midpoint: lo decides the tie
            if (lo > 0.0) == (np.float64(other) > fd):
                f = other
    return True, f


def sum2_f32(a, b):
    """RN32 of the exact a + b (float64 arrays of one shape), elementwise: fast_sum_f32's steps for two terms (its
    error-free transformations never fail for two finite values of a finite sum) and exact_sum_f32's rules otherwise,
    the same bits as :func:`_combine` with one part and a bias (tests/kernels/quant_matmul/test_qmm_accum_sum2.py)."""
    with np.errstate(invalid="ignore", over="ignore"):
        h0 = 0.0 + a                                          # fast_sum_f32 starts from hi = 0.0 (-0 -> +0)
        s = h0 + b
        bb = s - h0
        err = (h0 - (s - bb)) + (b - bb)
        lo = 0.0 + err
        hi = s + lo
        bb2 = hi - s
        lo = (s - (hi - bb2)) + (lo - bb2)
        f = hi.astype(np.float32)
        fd = f.astype(np.float64)
        up = hi > fd
        other = np.nextafter(f, np.where(up, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32))
        mid = (lo != 0.0) & (fd != hi) & np.isfinite(f) & (hi - fd == other.astype(np.float64) - hi)
        take = mid & ((lo > 0.0) == (other.astype(np.float64) > fd))
        f = np.where(take, other, f)
        fin = np.isfinite(a) & np.isfinite(b)
        # finite terms whose float64 sum overflows: fast_sum_f32 gives up, exact_sum_f32 rounds the sum to +-Inf
        f = np.where(fin & ~np.isfinite(s), np.copysign(np.float32(np.inf), s).astype(np.float32), f)
        if not fin.all():
            nan = np.isnan(a) | np.isnan(b) | ((a == np.inf) & (b == -np.inf)) | ((a == -np.inf) & (b == np.inf))
            inf = np.where((a == np.inf) | (b == np.inf), np.float32(np.inf), np.float32(-np.inf))
            f = np.where(fin, f, np.where(nan, np.float32(np.nan), inf))
    return f.astype(np.float32)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def _combine(parts, bias, out):
    """out[b, i, j] = RN32(sum_p parts[p, b, i, j] + bias[b or 0, j]) exactly (bias: empty if none)."""
    npart, nb, rows, cols = parts.shape
    has_bias = bias.shape[1] > 0
    for r in prange(nb * rows):
        b = r // rows
        i = r % rows
        vals = np.empty(npart + 1, np.float64)
        limbs = np.empty(96, np.int64)
        bb = b if bias.shape[0] > 1 else 0
        for j in range(cols):
            cnt = 0
            for p in range(npart):
                vals[cnt] = parts[p, b, i, j]
                cnt += 1
            if has_bias:
                vals[cnt] = bias[bb, j]
                cnt += 1
            ok, f = fast_sum_f32(vals, cnt)
            out[b, i, j] = f if ok else exact_sum_f32(vals, cnt, limbs)


# --------------------------------------------------------------------------------------------------------------
# float cube: exponent bands and the float_accum models
# --------------------------------------------------------------------------------------------------------------

def _exponent_range(x):
    """(emin, emax) of floor(log2|x|) over finite non-zero entries, or None."""
    finite = np.isfinite(x) & (x != 0)
    if not finite.any():
        return None
    _, e = np.frexp(np.abs(x[finite]))
    return int(e.min()) - 1, int(e.max()) - 1


def _bands(x, width, rng):
    """Split x into arrays whose non-zero entries span at most ``width`` binades (x = sum of the bands)."""
    if rng is None or rng[1] - rng[0] + 1 <= width:
        return [x]
    emin, emax = rng
    _, e = np.frexp(np.abs(x))
    e = e - 1
    finite = np.isfinite(x)
    bands = []
    for lo in range(emin, emax + 1, width):
        sel = (e >= lo) & (e < lo + width) & finite & (x != 0)
        if lo == emin:
            sel |= ~finite                                     # NaN / Inf ride in the first band only
        bands.append(np.where(sel, x, 0.0))
    return bands


def _plan(a, b, sig_a, sig_b, k):
    """Band widths (binades) for a and b minimising the number of float64 GEMMs, each provably exact.

    A band of W binades of p-bit values holds integers (in units of its lowest quantum) below 2^(W + p - 1); a
    band pair's k-sum stays below 2^53 when (W_a + p_a - 1) + (W_b + p_b - 1) + ceil(log2 k) <= 53."""
    ra, rb = _exponent_range(a), _exponent_range(b)
    span_a = 1 if ra is None else ra[1] - ra[0] + 1
    span_b = 1 if rb is None else rb[1] - rb[0] + 1
    budget = F64_MANTISSA - max(1, int(k - 1).bit_length()) - (sig_a - 1) - (sig_b - 1)
    best = None
    for na in range(1, span_a + 1):
        wa = -(-span_a // na)
        wb = budget - wa
        if wb < 1:
            continue
        nb = -(-span_b // wb)
        if best is None or na * nb < best[0]:
            best = (na * nb, wa, wb)
        if nb == 1:
            break
    if best is None:                                           # unreachable for formats of <= 24 bits
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "operands too wide for the exact float64 accumulation")
    return _bands(a, best[1], ra), _bands(b, best[2], rb)


def exact_matmul_f32(a, b, sig_a, sig_b, bias=None):
    """RN32 of the exact ``a @ b (+ bias)`` for float64 operands holding exact values of <= sig bits each.

    a: (..., M, K), b: (..., K, N) (broadcast batch); bias: (Bb, N) float64 or None with Bb 1 or the batch.
    Returns float32 (batch..., M, N).
    """
    bands_a, bands_b = _plan(a, b, sig_a, sig_b, a.shape[-1])
    parts = [host_matmul(pa, pb) for pa in bands_a for pb in bands_b]
    shape = parts[0].shape
    if len(parts) == 1 and bias is None:
        return parts[0].astype(np.float32)                   # one exact float64 value per element: one RN
    if len(parts) == 1:
        # one exact value plus the start value: _combine's two-term case in numpy, sparing its compile (~2-3
        # CPU-s) on the bias paths of the narrow formats, which fit one band (MXFP4, W4A8-MX)
        lead = shape[:-2]
        nb = int(np.prod(lead)) if lead else 1
        p = parts[0].reshape(nb, shape[-2], shape[-1])
        bias_b = np.asarray(bias, np.float64)
        bias_b = bias_b[:, None, :] if bias_b.shape[0] > 1 else bias_b[:1, None, :]   # _combine: row b, or row 0
        return sum2_f32(p, np.broadcast_to(bias_b, p.shape)).reshape(shape)
    lead = shape[:-2]
    nb = int(np.prod(lead)) if lead else 1
    stacked = np.stack([p.reshape(nb, shape[-2], shape[-1]) for p in parts])
    bias_arr = np.zeros((1, 0)) if bias is None else np.ascontiguousarray(bias, dtype=np.float64)
    out = np.empty((nb, shape[-2], shape[-1]), np.float32)
    with serial_below(stacked.nbytes + out.nbytes):
        _combine(ro(stacked), ro(bias_arr), out)
    return out.reshape(shape)


@njit(parallel=PARALLEL, cache=True, error_model="numpy")
def _sequential(a, b, bias, out):
    """acc = bias (or the first product); acc = f32(acc + f32(a*b)) for k = 0, 1, ... (float32 operands)."""
    nb, rows, kk = a.shape
    cols = b.shape[2]
    has_bias = bias.shape[1] > 0
    for r in prange(nb * rows):
        bi = r // rows
        i = r % rows
        ba = bi if a.shape[0] > 1 else 0
        bb = bi if b.shape[0] > 1 else 0
        bbias = bi if bias.shape[0] > 1 else 0
        for j in range(cols):
            if has_bias:
                acc = bias[bbias, j]
                start = 0
            else:
                acc = a[ba, i, 0] * b[bb, 0, j] if kk > 0 else np.float32(0.0)
                start = 1
            for t in range(start, kk):
                acc = acc + a[ba, i, t] * b[bb, t, j]
            out[bi, i, j] = acc


def _as3(x):
    return x.reshape((-1,) + x.shape[-2:])


def float_matmul(a64, b64, sig_a, sig_b, *, float_accum="exact", base_k=128, bias=None, a32=None, b32=None):
    """The fp32 L0C value of a float cube: ``a @ b`` (+ ``bias`` as the L0C start value) per ``float_accum``.

    a64/b64: exact float64 operands (MX scales already applied exactly); a32/b32: the float32 operands the
    golden uses for "numpy"/"sequential" (defaults: a64/b64 cast to float32 - exact for unscaled formats).
    bias: (Bb, N) float32 or None. Returns float32 (batch..., M, N).
    """
    if float_accum not in FLOAT_ACCUM:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"float_accum={float_accum!r} is not valid; use one of "
                                                  f"{list(FLOAT_ACCUM)}")
    bias64 = None if bias is None else np.asarray(bias, np.float64)
    if float_accum == "exact":
        return exact_matmul_f32(a64, b64, sig_a, sig_b, bias64)
    a32 = a64.astype(np.float32) if a32 is None else a32
    b32 = b64.astype(np.float32) if b32 is None else b32
    if float_accum == "numpy":
        y = host_matmul(a32, b32).astype(np.float32)
        if bias is not None:
            y = (y + _bias_view(bias, y.ndim)).astype(np.float32)
        return y
    if float_accum == "sequential":
        shape = np.broadcast_shapes(a32.shape[:-2], b32.shape[:-2]) + (a32.shape[-2], b32.shape[-1])
        out = np.empty((int(np.prod(shape[:-2])) if shape[:-2] else 1,) + shape[-2:], np.float32)
        bias_arr = np.zeros((1, 0), np.float32) if bias is None else np.ascontiguousarray(bias, np.float32)
        a3 = np.ascontiguousarray(np.broadcast_to(a32, shape[:-2] + a32.shape[-2:])).reshape((-1,) + a32.shape[-2:])
        b3 = np.ascontiguousarray(np.broadcast_to(b32, shape[:-2] + b32.shape[-2:])).reshape((-1,) + b32.shape[-2:])
        with serial_below(4 * out.size * a3.shape[-1]):     # k multiply-adds per output element
            _sequential(ro(a3), ro(b3), ro(bias_arr), out)
        return out.reshape(shape)
    # kchunk: exact within each baseK chunk, rounded, then accumulated in fp32 in k order
    k = a64.shape[-1]
    shape = np.broadcast_shapes(a64.shape[:-2], b64.shape[:-2]) + (a64.shape[-2], b64.shape[-1])
    acc = None
    if bias is not None:
        acc = np.ascontiguousarray(np.broadcast_to(_bias_view(bias, len(shape)), shape), dtype=np.float32)
    for k0 in range(0, k, base_k):
        part = exact_matmul_f32(a64[..., k0:k0 + base_k], b64[..., k0:k0 + base_k, :], sig_a, sig_b)
        acc = part if acc is None else (acc + part).astype(np.float32)
    if acc is None:
        acc = np.zeros(shape, np.float32)
    return acc


def _bias_view(bias, ndim):
    """(Bb, N) bias -> an array broadcasting against (batch..., M, N): Bb > 1 only for a 3-D output."""
    bias = np.asarray(bias, np.float32)
    if bias.shape[0] == 1:
        return bias.reshape(-1)
    return bias.reshape((bias.shape[0], 1, bias.shape[1]) if ndim == 3 else bias.shape)
