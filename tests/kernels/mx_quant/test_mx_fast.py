"""The vectorised element loops (kernel._convert_fast, kernel._convert_run) against the per-element
transliteration (kernel._enc_one, the path ``faithful=True`` takes) over every BF16 input pattern and every reciprocal
the scale rules can produce, for each output format, both block shapes (one reciprocal per column / per block of a
run) and both multiplies (the grouped op's FP32 one and DynamicMxQuant's BF16 one, which the fast loops do not model:
this proves they need not).

Which loops a sweep reaches depends on its reciprocals: those rint_code_bf16_pow2 takes run in 16-bit lanes, the
rest through the FP32 loops, either for a whole call (columns, when more than an eighth of them are not taken) or as
a second pass over the columns and blocks concerned. In 16-bit lanes, FP8 runs take the normal-only form, and the
blocks it flags are formed again by the full one; every BF16 pattern includes the flagged ones (NaN, Inf, and the
products whose code is a nonzero subnormal), so every run sweep reaches that pass too. The sweeps below reach each
of these.

The default run takes every 2^16 BF16 pattern against a spread of the 257 reciprocals; the slow run takes all of
them. The end-to-end fast == faithful == golden checks are in test_mx_properties.py (every tiling branch there runs
both paths through the golden) and below.
"""

import re

import ml_dtypes
import numpy as np
import pytest
from numba import njit

from mx_refs import DSTS, RECIPS, RECIPS_F32, reference, sweep_layout
from npu_emu.device.read_only import read_only
from npu_emu.dtypes.scalar import CAST_RINT
from npu_emu.kernels.mx_quant import api, kernel as K, launch as L


def _fast(dst, walk=L.W_ANY):
    """The kernel module specialised for ``dst`` on the vectorised path and ``walk`` (launch.device): the walk of the
    calls the loops are checked for, so that the tests compile (or load) the copies those calls run."""
    return L.device(dst, K.M_FAST, walk)


def _run_walk(bs):
    """The walk of a DynamicMxQuant call along the last axis with blocks of ``bs`` (launch's rule)."""
    return L.W_ROWS32 if bs == K.RUN_CHUNK else L.W_ROWS


def _enc_one(dst):
    """The per-element transliteration for ``dst`` (the path ``faithful=True`` takes)."""
    return L.device(dst, K.M_ELEMENT)._enc_one


def _reference(xs, recips, rrs, rcs, rows, cols, dst, bf16_mul, ys):
    """_convert's per-element branch for BF16 input, RINT, no switches (low nibble first)."""
    reference(xs, recips, rrs, rcs, rows, cols, dst, K.X_BF16, bf16_mul, ys)


def _run(xs, nblk, bs, last, recips, ys, todo, dst):
    """kernel._convert_run from xs[0] to ys[0] with the reciprocals given (not fused with the scales)."""
    _fast(dst, _run_walk(bs))._convert_run(read_only(xs), 0, nblk, bs, last, recips, ys, 0, todo, False,
                                          np.empty(0, np.uint8), 0, 0, False)


def _pow2_recips(dst):
    """The reciprocals of RECIPS_F32 that rint_code_bf16_pow2 takes for ``dst`` (the 16-bit loops)."""
    take = np.array([_fast(dst)._pow2_shifts(np.array([r], np.float32), 1, np.empty(1, np.int16)) == 0
                     for r in RECIPS_F32])
    return RECIPS_F32[take]


def _sweep(dst, bf16_mul, per_col, offsets, recip_set=RECIPS_F32):
    """Every BF16 pattern, laid out as 256 columns x 256 rows (column blocks: _convert_fast) or 2048 blocks of 32
    (row blocks: _convert_fast's per-row loops, and _convert_run with the 2048 blocks as one run), against
    recip_set rotated by each offset, so that each pattern meets recip_set[offset + its column (block)]."""
    xs, rows, cols, ystride, fast, ref = sweep_layout(dst, per_col)
    todo = np.empty(rows, np.int8)
    lanes = cols if per_col else rows
    for k in offsets:
        recips = recip_set[(k + np.arange(lanes)) % recip_set.size]
        rrs, rcs = (0, 1) if per_col else (1, 0)
        _reference(xs, recips, rrs, rcs, rows, cols, dst, bf16_mul, ref)
        walk = L.W_COLS if per_col else L.W_ROWS32
        calls = {"_convert_fast": lambda: _fast(dst, walk)._convert_fast(xs, 0, cols, 0, rows, cols, recips, rrs, rcs,
                                                                        fast, 0, ystride)}
        if not per_col:
            calls["_convert_run"] = lambda: _run(xs, rows, cols, cols, recips, fast, todo, dst)
        for name, call in calls.items():
            fast[:] = 0xEE
            call()
            bad = np.flatnonzero(fast != ref)
            assert bad.size == 0, (f"{name} dst {dst} bf16_mul {bf16_mul} per_col {per_col} offset {k}: byte "
                                   f"{bad[0]} fast {fast[bad[0]]:#x} faithful {ref[bad[0]]:#x}")


@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("bf16_mul", [False, True])
@pytest.mark.parametrize("per_col", [True, False])
def test_fast_equals_faithful_sampled(dst, bf16_mul, per_col):
    # offset k gives lane i the reciprocal RECIPS[k + i]: each pattern meets 8 of the 257 reciprocals, and every
    # reciprocal (2^127 .. 2^-127, NaN, 0 included) is met by 256 x 8 patterns of all exponents
    _sweep(dst, bf16_mul, per_col, [0, 61, 122, 183, 253, 254, 255, 256])


@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("bf16_mul", [False, True])
@pytest.mark.parametrize("per_col", [True, False])
def test_16_bit_loops_equal_faithful(dst, bf16_mul, per_col):
    """Columns and runs whose reciprocals rint_code_bf16_pow2 all takes run only the 16-bit loops: every pattern
    against 5 of those reciprocals, every reciprocal met (the sampled sweep above mixes in NaN, 0 and 2^+-127, which
    its calls convert again through the FP32 loops)."""
    pow2 = _pow2_recips(dst)
    e_hi = 252 + {K.D_E4M3: -6 - 3, K.D_E5M2: -14 - 2, K.D_E2M1: 0 - 1, K.D_E1M2: 0 - 2}[dst]
    assert pow2.size == e_hi and _fast(dst)._pow2_shifts(pow2, pow2.size, np.empty(pow2.size, np.int16)) == 0
    # each pattern meets 5 of them and every one meets 256 x 5 patterns of all exponents; every pattern against
    # every shift is tests/dtypes/test_pow2_codes.py (the codec alone)
    _sweep(dst, bf16_mul, per_col, [0, 37, 101, 150, 200], pow2)


@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("bf16_mul", [False, True])
def test_fp32_column_loops_equal_faithful(dst, bf16_mul):
    """Columns whose reciprocals rint_code_bf16_pow2 never takes (more than an eighth of them: the whole call takes
    the FP32 loops): every pattern against every one of those reciprocals."""
    others = np.setdiff1d(RECIPS_F32.view(np.uint32), _pow2_recips(dst).view(np.uint32)).view(np.float32)
    assert others.size == RECIPS_F32.size - _pow2_recips(dst).size
    assert _fast(dst)._pow2_shifts(others, others.size, np.empty(others.size, np.int16)) == others.size
    _sweep(dst, bf16_mul, True, range(others.size), others)


@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("cols", [18, 32, 50, 110])
def test_column_rows_with_a_short_tail(dst, cols):
    """Column blocks whose count is not a multiple of the 32 vector lanes: the whole chunks take the vector forms,
    the rest rint_code_bf16_pow2; random patterns and reciprocals against _enc_one, the byte after the rows
    untouched."""
    rng = np.random.default_rng(cols + 7 * dst)
    rows = 24
    xs = rng.integers(0, 1 << 16, rows * cols, dtype=np.uint16)
    xs[::5] = ((rng.standard_normal(xs[::5].size).astype(np.float32) * 4).view(np.uint32) >> 16).astype(np.uint16)
    recips = rng.choice(_pow2_recips(dst), cols)
    fp4 = dst >= K.D_E2M1
    ybytes = rows * cols // 2 if fp4 else rows * cols
    got = np.full(ybytes + 1, 0xEE, np.uint8)
    ref = np.empty(ybytes, np.uint8)
    _reference(xs, recips, 0, 1, rows, cols, dst, False, ref)
    _fast(dst, L.W_COLS)._convert_fast(read_only(xs), 0, cols, 0, rows, cols, recips, 0, 1, got, 0,
                                       cols // 2 if fp4 else cols)
    assert np.array_equal(got[:-1], ref) and got[-1] == 0xEE


@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("bs, last", [(32, 18), (32, 32), (64, 50), (96, 96)])
def test_run_blocks_take_every_pass(dst, bs, last):
    """_convert_run on 5 blocks of ``bs`` (one, two or three fixed chunks) whose last is ``last`` long, against
    _enc_one element by element, with the byte after the run untouched. The blocks are laid out so that each pass is
    taken, and the scratch ``todo`` shows it: blocks 0 and 4 hold products in the normal range (16-bit pass only;
    block 4 whole by the full form when it is short), block 2 random patterns,
    which for FP8 include elements the normal-only form flags (formed again by the full form), blocks 1 and 3 the NaN
    and zero reciprocals (FP32 loops)."""
    rng = np.random.default_rng(dst)
    nblk = 5
    nel = (nblk - 1) * bs + last
    xs = (rng.standard_normal(nel).astype(np.float32) * 8).view(np.uint32) >> 16
    xs = xs.astype(np.uint16)
    xs[2 * bs:3 * bs] = rng.integers(0, 1 << 16, bs)
    pow2 = _pow2_recips(dst)
    two5 = np.float32(32.0)
    assert two5 in pow2
    recips = np.array([two5, RECIPS_F32[-2], pow2[-1], RECIPS_F32[-1], two5], np.float32)
    fp4 = dst >= K.D_E2M1
    got = np.full(nel // 2 + 1 if fp4 else nel + 1, 0xEE, np.uint8)
    todo = np.full(nblk, 7, np.int8)
    _run(xs, nblk, bs, last, recips, got, todo, dst)
    enc = _enc_one(dst)
    codes = np.array([enc(np.int64(xs[i]), K.X_BF16, recips[i // bs], CAST_RINT, False, True, True)
                      for i in range(nel)], np.uint8)
    want = codes[0::2] | (codes[1::2] << 4) if fp4 else codes
    assert np.array_equal(got[:-1], want) and got[-1] == 0xEE
    assert list(todo) == [0, 2, 0 if fp4 else 1, 2, 0 if last % K.RUN_CHUNK == 0 else 1], list(todo)


@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("last", [18, 50])
def test_run_short_last_block_rejected(dst, last):
    """A run whose short last block holds no whole chunk (18) or one and a short rest (50) and has a reciprocal the
    16-bit forms do not take (NaN): that block's todo byte must come from its reciprocal (2, FP32 loops), not from its
    length (1, the full 16-bit form with a meaningless shift)."""
    rng = np.random.default_rng(last + dst)
    bs = 32 if last < 32 else 64
    nel = bs + last
    xs = ((rng.standard_normal(nel).astype(np.float32) * 8).view(np.uint32) >> 16).astype(np.uint16)
    recips = np.array([np.float32(32.0), RECIPS_F32[-2]], np.float32)
    assert np.isnan(recips[1])
    fp4 = dst >= K.D_E2M1
    got = np.full(nel // 2 + 1 if fp4 else nel + 1, 0xEE, np.uint8)
    todo = np.full(2, 7, np.int8)
    _run(xs, 2, bs, last, recips, got, todo, dst)
    enc = _enc_one(dst)
    codes = np.array([enc(np.int64(xs[i]), K.X_BF16, recips[i // bs], CAST_RINT, False, True, True)
                      for i in range(nel)], np.uint8)
    want = codes[0::2] | (codes[1::2] << 4) if fp4 else codes
    assert list(todo) == [0, 2], list(todo)
    assert np.array_equal(got[:-1], want) and got[-1] == 0xEE


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("bs, last", [(32, 32), (32, 18), (64, 50), (64, 64), (96, 70)])
def test_fused_run_equals_scales_then_run(dst, bs, last, legacy):
    """_convert_run with ``fused`` (each block's OCP scale formed from its vector maximum inside the 16-bit pass)
    against the unfused order: block maxima, _ocp_scales (proven equal to _scale above), then _convert_run with those
    reciprocals (proven equal to _enc_one above). Blocks of every kind: token magnitudes from 2^-140 to 2^127,
    NaN/Inf, zero and all-subnormal blocks, random patterns, subnormal codes; codes, scale bytes, reciprocals and
    todo bit for bit, with the bytes around the run untouched."""
    rng = np.random.default_rng(17 * bs + last + dst)
    nblk = 64
    nel = (nblk - 1) * bs + last
    x = rng.standard_normal(nel).astype(np.float32) * np.repeat(np.exp2(rng.integers(-140, 128, nblk)), bs)[:nel]
    xs = (x.view(np.uint32) >> 16).astype(np.uint16)
    xs[3 * bs:4 * bs] = 0
    xs[5 * bs:6 * bs] = rng.integers(0, 0x80, bs) | (rng.integers(0, 2, bs) << 15)       # subnormals
    xs[7 * bs:8 * bs] = rng.integers(0, 1 << 16, bs)
    xs[9 * bs + 3] = 0x7F80                                                            # Inf
    xs[11 * bs + 1] = 0xFFC1                                                           # NaN
    xs[nel - 1] = 0x7FC0                                                               # NaN in the last block
    # a block of max 1.0 holding 2^-15 and 2^-30: nonzero subnormal codes for E4M3 and E5M2 (the redo)
    xs[13 * bs:14 * bs] = 0x3F00
    xs[13 * bs:13 * bs + 3] = [0x3F80, 0x3800, 0x3080]
    em = K.EMAX_OF[dst]
    fp4 = dst >= K.D_E2M1
    stat = np.array([(xs[b * bs:(b + 1) * bs] & 0x7F80).max() >> 7 for b in range(nblk)], np.int64)
    ref_ss = np.full(nblk + 2, 0xEE, np.uint8)
    ref_r = np.empty(nblk, np.float32)
    K._ocp_scales(stat, nblk, em, legacy, ref_r, ref_ss, 1, 1)
    ref_y = np.full(nel // 2 + 1 if fp4 else nel + 1, 0xEE, np.uint8)
    ref_t = np.full(nblk, 7, np.int8)
    _run(xs, nblk, bs, last, ref_r, ref_y, ref_t, dst)
    ss = np.full(nblk + 2, 0xEE, np.uint8)
    r = np.full(nblk, np.nan, np.float32)
    y = np.full_like(ref_y, 0xEE)
    t = np.full(nblk, 7, np.int8)
    _fast(dst, _run_walk(bs))._convert_run(read_only(xs), 0, nblk, bs, last, r, y, 0, t, True, ss, 1, em, legacy)
    assert np.array_equal(ss, ref_ss) and np.array_equal(r.view(np.uint32), ref_r.view(np.uint32))
    assert np.array_equal(y, ref_y) and np.array_equal(t, ref_t)
    assert set(t) >= ({0, 2} if fp4 else {0, 1, 2}), sorted(set(t))       # every pass taken


@pytest.mark.slow
@pytest.mark.parametrize("dst", DSTS)
@pytest.mark.parametrize("bf16_mul", [False, True])
@pytest.mark.parametrize("per_col", [True, False])
def test_fast_equals_faithful_exhaustive(dst, bf16_mul, per_col):
    # 2^16 patterns x 257 reciprocals = 16.8 M elements per case
    _sweep(dst, bf16_mul, per_col, range(RECIPS.size))


@pytest.mark.slow
def test_fast_loops_vectorise():
    """The fast row loops vectorise: a fresh, uncached compile (numba cannot show the IR of cached code) has an LLVM
    vector.body per specialised FP32 loop (4 formats x 2 block shapes), the 16-bit column rows work on the
    32-lane vectors of npu_emu.dtypes.vector, and the run pass on 16-bit vectors."""
    xs = np.arange(1 << 12, dtype=np.uint16)
    ys = np.empty(xs.size, np.uint8)
    vector_bodies = 0
    for dst in DSTS:
        fresh = njit(error_model="numpy")(_fast(dst)._fp32_rows.py_func)
        fresh(xs, 0, 128, 0, 32, 128, np.ones(128, np.float32), 0, 1, ys, 0, 128)
        # LLVM numbers the blocks after the first: vector.body, vector.body12, ...
        vector_bodies += len(re.findall(r"^vector\.body\d*:", fresh.inspect_llvm(fresh.signatures[0]), re.M))
    assert vector_bodies >= 8
    fresh = njit(error_model="numpy")(_fast(K.D_E4M3)._pow2_rows.py_func)
    fresh(xs, 0, 128, 0, 32, 128, np.zeros(128, np.int16), ys, 0, 128)
    assert "<32 x i16>" in fresh.inspect_llvm(fresh.signatures[0])
    # the run pass, per format (the format is a constant of each kernel copy): the vector forms' AVX2 (or AVX-512)
    # registers in the machine code; a scalar pass would hold a handful
    for dst in DSTS:
        fresh = _run_blocks_one_format(dst)
        fresh(xs, 0, 128, 32, 32, np.full(128, 32.0, np.float32), ys, 0, np.empty(128, np.int8))
        asm = fresh.inspect_asm(fresh.signatures[0])
        assert len(re.findall(r"[yz]mm", asm)) >= 64, dst


def _run_blocks_one_format(dst):
    """A fresh compile of the run pass for one format."""
    run_blocks = _fast(dst)._run_blocks

    def one(xs, xb, nblk, bs, last, recips, ys, yb, todo):
        run_blocks(xs, xb, nblk, bs, last, recips, ys, yb, todo, False, ys, 0, 0, False)
    return njit(error_model="numpy")(one)


@pytest.mark.parametrize("dst", [24, 23, 296, 297])
def test_fast_equals_faithful_end_to_end(dst):
    """Both ops on data with every special (zeros, subnormals, Inf, NaN, tiny and huge blocks), fast vs faithful."""
    rng = np.random.default_rng(dst)
    with np.errstate(over="ignore"):                  # rows scaled past float32's range become Inf on purpose
        x = (rng.standard_normal((200, 192)) * np.exp2(rng.integers(-130, 128, (200, 1)))).astype(np.float32)
    x.reshape(-1)[rng.choice(x.size, 500, replace=False)] = rng.choice(
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40], np.float32), 500)
    xb = x.astype(ml_dtypes.bfloat16)
    gi = np.array([0, 33, 97, 97, 160, 200], np.int32)
    a = api.npu_grouped_dynamic_mx_quant(xb, gi, dst_type=dst)
    b = api.npu_grouped_dynamic_mx_quant(xb, gi, dst_type=dst, faithful=True)
    assert all(np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8)) for u, v in zip(a, b))
    for axis in (-1, 0):
        a = api.npu_dynamic_mx_quant(xb, axis=axis, dst_type=dst)
        b = api.npu_dynamic_mx_quant(xb, axis=axis, dst_type=dst, faithful=True)
        assert all(np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8)) for u, v in zip(a, b))


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("dst", DSTS)
def test_ocp_scales_equal_scale_for_every_statistic(dst, legacy):
    # the fused path's branch-free OCP scale (_ocp_scales) against _scale's OCP branch, for every block exponent
    stat = np.arange(256, dtype=np.int64)
    recips = np.empty(256, np.float32)
    codes = np.full(2 * 256 + 1, 0xEE, np.uint8)
    em = K.EMAX_OF[dst]
    K._ocp_scales(stat, 256, em, legacy, recips, codes, 1, 2)
    for st in range(256):
        code, rb = K._scale(st, K.X_BF16, K.ALG_OCP, 0, em, legacy, False, np.float32(0), np.float32(0), False)
        assert codes[1 + 2 * st] == code, (st, codes[1 + 2 * st], code)
        assert recips[st:st + 1].view(np.uint32)[0] == np.uint32(rb) << 16, (st, rb)
    assert (codes[0::2] == 0xEE).all()                 # the stride leaves the other slot alone
