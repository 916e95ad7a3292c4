"""The CO1 -> CO2 instruction (docs/ops/data_copy_dequant.md): byte placement (§8.4), geometry (§8.5, §5),
instruction vs whole-matrix path vs golden on random data, and every rejection."""

import numpy as np
import pytest

from npu_emu.ascendc import deq
from npu_emu.ascendc.deq import (
    BLOCK_MODE_MATRIX, BLOCK_MODE_VECTOR, DEQ8, DEQ16, DEQ_NONE, VDEQ8, VDEQ16, DataCopyEnhancedParams, DeqValue,
    data_copy_enhanced,
)
from npu_emu.kernels.data_copy_dequant.api import data_copy_dequant
from npu_emu.ascendc.nz import nd_to_nz, nz_to_nd
from npu_emu.ascendc.params import DataCopyParams
from npu_emu.errors import AclnnError
from npu_emu.device.read_only import read_only
from npu_emu.kernels.data_copy_dequant import golden as golden

SENTINEL = 0xEE
ONE_INT8 = 0x00004000_3F800000  # M = 1, sign: int8 result = x saturated


def ep(block_mode=BLOCK_MODE_MATRIX, deq_scale=DEQ8, deq_value=ONE_INT8, sid=2, relu=False, table=0):
    e = DataCopyEnhancedParams(block_mode, deq_scale, deq_value, sid, relu)
    e.deqTensorAddr = table
    return e


# ---- §8.4 placement ---------------------------------------------------------------------------------------------

FRACTAL = (np.arange(256).reshape(16, 16) - 100).astype(np.int32)  # v[r][c] = 16r + c - 100


@pytest.mark.parametrize("sid, sid0_half, offsets", [
    # (r, c) = (0, 0) -> 0x9C, (1, 2) -> 0xAE, (15, 15) -> 155 saturated to 0x7F; offsets from the table of §8.4
    (2, "low", [0, 18, 255]), (0, "low", [0, 34, 495]), (1, "low", [16, 50, 511]),
    (0, "high", [16, 50, 511]), (1, "high", [0, 34, 495]),   # sid0_half="high" swaps the sid 0 / 1 columns
])
def test_placement(sid, sid0_half, offsets):
    l0c = FRACTAL.reshape(-1).view(np.uint8).copy()
    ub = np.full(1024, SENTINEL, np.uint8)
    data_copy_enhanced(ub, 0, l0c, 0, np.int32, np.int8, DataCopyParams(1, 1, 0, 0), ep(sid=sid),
                       sid0_half=sid0_half)
    assert [ub[o] for o in offsets] == [0x9C, 0xAE, 0x7F]
    written = np.zeros(1024, bool)
    if sid == 2:
        written[:256] = True
    else:
        h = sid if sid0_half == "low" else 1 - sid
        for r in range(16):
            written[32 * r + 16 * h:32 * r + 16 * h + 16] = True
    assert (ub[~written] == SENTINEL).all()  # untouched half-blocks keep their bytes
    got = ub[written].view(np.int8).reshape(16, 16)
    assert (got == np.clip(FRACTAL, -128, 127)).all()


# ---- §8.5 geometry ----------------------------------------------------------------------------------------------

def test_geometry_matrix_strides():
    # DEQ16, blockCount 2, blockLen 1, srcStride 1, dstStride 2: burst 1 reads the fractal at byte 2048 and writes
    # at dst + 576 (= 512 + 2*32)
    l0c = np.arange(1024, dtype=np.int32).view(np.uint8).copy()   # element i holds i: 4 fractals
    ub = np.full(2048, SENTINEL, np.uint8)
    data_copy_enhanced(ub, 0, l0c, 0, np.int32, np.float16, DataCopyParams(2, 1, 1, 2),
                       ep(deq_scale=DEQ16, deq_value=0x3F800000))
    assert (ub[:512].view(np.float16) == np.arange(256)).all()
    assert (ub[512:576] == SENTINEL).all()
    assert (ub[576:1088].view(np.float16) == np.arange(512, 768)).all()
    assert (ub[1088:] == SENTINEL).all()


@pytest.mark.parametrize("layout, slots", [("slot", [0, 1024, 2048]), ("contiguous", [0, 64, 128])])
def test_geometry_vector_fp32(layout, slots):
    # VECTOR, fp32 -> fp32, no quant, blockLen 3: reads 64 B at L0C offsets 0, 1024, 2048 (one 1x16 row per slot);
    # vector_src_layout="contiguous" reads the rows back to back
    l0c = np.arange(1024, dtype=np.float32).view(np.uint8).copy()
    ub = np.full(512, SENTINEL, np.uint8)
    data_copy_enhanced(ub, 32, l0c, 0, np.float32, np.float32, DataCopyParams(1, 3, 0, 0),
                       ep(block_mode=BLOCK_MODE_VECTOR, deq_scale=DEQ_NONE), vector_src_layout=layout)
    want = np.concatenate([np.arange(s // 4, s // 4 + 16) for s in slots]).astype(np.float32)
    assert (ub[32:224].view(np.float32) == want).all()
    assert (ub[:32] == SENTINEL).all() and (ub[224:] == SENTINEL).all()


# ---- geometry against the golden's address formulas -------------------------------------------------------------

GEOMETRY_CASES = [
    # (vector, src dtype, dst dtype, deqScale, sid, blockCount, blockLen, srcStride, dstStride)
    (False, np.int32, np.int8, DEQ8, 2, 2, 3, 1, 1),
    (False, np.int32, np.int8, DEQ8, 0, 3, 2, 0, 3),
    (False, np.int32, np.uint8, VDEQ8, 1, 2, 2, 2, 0),
    (False, np.int32, np.float16, VDEQ16, 0, 3, 1, 0, 5),
    (False, np.int32, np.int16, DEQ16, 2, 2, 2, 1, 2),
    (False, np.float32, np.float16, DEQ_NONE, 2, 2, 1, 1, 1),
    (False, np.float16, np.float16, DEQ_NONE, 2, 2, 2, 1, 1),
    (True, np.int32, np.int8, VDEQ8, 1, 2, 3, 1, 1),
    (True, np.int32, np.int8, DEQ8, 2, 3, 5, 0, 2),
    (True, np.int32, np.float16, DEQ16, 2, 2, 4, 2, 1),
    (True, np.uint32, np.uint32, DEQ_NONE, 2, 2, 2, 1, 3),
]


def _words_for(rng, count, sign):
    scales = rng.choice([0.5, 0.25, 1.0, 0.0078125, -0.75, 3.0], size=count)
    return DeqValue.build_array(scales, offset=rng.integers(-20, 20, size=count), sign=sign,
                                shift=rng.integers(1, 17, size=count))


# vector_src_layout only affects BLOCK_MODE_VECTOR
GEOMETRY_RUNS = [(c, "slot") for c in GEOMETRY_CASES] + [(c, "contiguous") for c in GEOMETRY_CASES if c[0]]


@pytest.mark.parametrize("case, layout", GEOMETRY_RUNS, ids=[f"{i}-{r[1]}" for i, r in enumerate(GEOMETRY_RUNS)])
def test_geometry_against_golden(case, layout):
    vector, sdt, ddt, ds, sid, bc, bl, ss, dstride = case
    rng = np.random.default_rng(7)
    src_elems = (2048 + bc * (bl + ss) * 256 * np.dtype(sdt).itemsize) // np.dtype(sdt).itemsize
    if np.dtype(sdt).kind == "f":
        src = (rng.standard_normal(src_elems) * 300).astype(sdt)
    else:
        src = rng.integers(-40000, 40000, size=src_elems).astype(sdt)
    l0c = src.view(np.uint8).copy()
    ub_size = 65536
    table = 61440
    ub = np.full(ub_size, SENTINEL, np.uint8)
    sign = np.dtype(ddt) == np.int8
    words = _words_for(rng, 16 * bc, sign)
    if ds in (VDEQ8, VDEQ16):
        ub[table:table + 128 * bc] = words.astype("<u8").view(np.uint8)
    e = ep(block_mode=BLOCK_MODE_VECTOR if vector else BLOCK_MODE_MATRIX, deq_scale=ds,
           deq_value=int(words[0]), sid=sid, table=table)
    reg = deq.deq_register(e, ddt)
    expect = ub.copy()
    data_copy_enhanced(ub, 64, l0c, 1024, sdt, ddt, DataCopyParams(bc, bl, ss, dstride), e,
                       vector_src_layout=layout)

    def convert(xs, cols, b):
        if ds in (DEQ8, VDEQ8, DEQ16, VDEQ16) and np.dtype(sdt) == np.int32:
            w = words[16 * b + cols] if ds in (VDEQ8, VDEQ16) else np.full(16, reg, np.uint64)
            relu = bool((reg >> 47) & 1) if ds in (DEQ8, DEQ16) else False
            if np.dtype(ddt).itemsize == 1:
                return golden.deq8(xs, w, relu)
            if ddt == np.int16:
                return golden.deqs16(xs, w, relu)
            return golden.deq16(xs, w, relu).view(np.float16)
        return xs.astype(ddt)

    golden.l0c_to_ub(expect, 64, l0c, 1024, sdt, ddt, convert, block_count=bc, block_len=bl, src_stride=ss,
                     dst_stride=dstride, vector=vector, sid=sid, vector_src_layout=layout)
    assert (ub == expect).all()


# ---- instruction vs whole-matrix path vs golden -----------------------------------------------------------------

def tile_copy_matrix(acc, mode, deq_value, is_relu=False, sid=2, **switches):
    """Dequantise an ND accumulator with one DataCopy over its NZ image (blockCount = N1, blockLen = M1) -- what
    the matmul library's CopyCo12Co2 does -- and read the ND result back."""
    m, n = acc.shape
    m1, n1 = -(-m // 16), -(-n // 16)
    l0c = nd_to_nz(acc, c0=16).reshape(-1).view(np.uint8).copy()
    vector = np.ndim(deq_value) == 1
    word = 0 if vector else int(deq_value)
    sign_word = int(deq_value[0]) if vector else word
    dst = {"DEQ8": np.int8 if (sign_word >> 46) & 1 else np.uint8, "DEQ16": np.float16, "DEQS16": np.int16}[mode]
    d = np.dtype(dst).itemsize
    dst_bytes = n1 * m1 * (512 if d == 1 and sid != 2 else 256 * d)
    table = -(-dst_bytes // 32) * 32
    ub = np.zeros(table + 128 * n1, np.uint8)
    if vector:
        padded = np.concatenate([deq_value, np.full(16 * n1 - n, deq_value[-1], np.uint64)])
        ub[table:] = padded.astype("<u8").view(np.uint8)
        ds = VDEQ8 if mode == "DEQ8" else VDEQ16
    else:
        ds = DEQ8 if mode == "DEQ8" else DEQ16
    e = ep(deq_scale=ds, deq_value=word, sid=sid, relu=is_relu, table=table)
    data_copy_enhanced(ub, 0, l0c, 0, np.int32, dst, DataCopyParams(n1, m1, 0, 0), e, **switches)
    if d == 1 and sid != 2:
        nz = ub[:dst_bytes].reshape(n1, m1, 16, 32)[..., 16 * sid:16 * sid + 16].view(dst)
    else:
        nz = ub[:dst_bytes].view(dst).reshape(n1, m1, 16, 16)
    return nz_to_nd(nz, m, n)


def _random_acc(rng, m, n):
    scale = rng.choice([2**4, 2**8, 2**9, 2**12, 2**16, 2**24, 2**31], size=(m, n))
    return np.clip(np.floor(rng.uniform(-1, 1, size=(m, n)) * scale), -2**31, 2**31 - 1).astype(np.int32)


def _random_words(rng, n, *, mcb, sign, vector):
    count = n if vector else 1
    scales = rng.choice([1.0, 0.5, 0.01171875, 0.03, 2.0**-9, 3.75, -0.3, 1e-4, 0.0], size=count)
    offsets = np.where(rng.random(count) < 0.2, rng.integers(-256, 256, size=count),
                       rng.integers(-8, 9, size=count))
    w = DeqValue.build_array(scales * rng.uniform(0.5, 2, size=count), shift=rng.integers(1, 17, size=count),
                             offset=offsets, sign=sign, mcb=mcb, relu=rng.random(count) < 0.3)
    return w if vector else int(w[0])


def _near_ties(rng, acc, words):
    """Overwrite every other row with accumulators whose scaled value p lands in [-300, 300], many on .5 ties,
    so the 8-bit rounding, clamps and offsets are exercised rather than saturated."""
    n = acc.shape[1]
    cols = np.broadcast_to(np.asarray(words, np.uint64), (n,))
    for c in range(n):
        v = DeqValue(int(cols[c]))
        if float(v.scale) == 0.0:
            continue
        target = rng.integers(-600, 601, size=acc[::2, c].shape) / 2.0
        x = np.round(target / abs(float(v.scale))) * (2.0 ** v.shift if v.mcb else 1.0)
        acc[::2, c] = np.clip(x, -2**31, 2**31 - 1).astype(np.int32)
    return acc


def _bits(y):
    return np.asarray(y).view(np.uint16) if y.dtype == np.float16 else np.asarray(y)


SWITCH_SETS = [{}] + [{name: alt} for name, choices in deq.SWITCH_CHOICES.items() for alt in choices[1:]] + [
    {"mcb_shift": "n", "mcb_shift_rounding": "trunc", "mcb_saturate": "wrap", "clamp9": False, "relu_mode": "final",
     "offset_signed": False, "m_truncate": False, "deq_mul": "exact", "deq8_round": "half_away",
     "deq16_overflow": "inf"},
]


@pytest.mark.parametrize("index", range(len(SWITCH_SETS)),
                         ids=[",".join(f"{k}={v}" for k, v in s.items()) or "defaults" for s in SWITCH_SETS])
def test_instruction_vs_whole_matrix_vs_golden(index):
    switches = SWITCH_SETS[index]
    rng = np.random.default_rng(1000 + index)
    m, n = 40, 56
    for mode in ("DEQ8", "DEQ16", "DEQS16"):
        for vector in (False, True):
            for mcb in (False, True):
                sign = bool(rng.random() < 0.5)
                words = _random_words(rng, n, mcb=mcb, sign=sign, vector=vector)
                acc = _near_ties(rng, _random_acc(rng, m, n), words)
                is_relu = bool(rng.random() < 0.5)
                sid = int(rng.integers(0, 3)) if mode == "DEQ8" else 2
                whole = data_copy_dequant(acc, words, mode=mode, is_relu=is_relu, **switches)
                ref = golden.data_copy_dequant(acc, words, mode=mode, is_relu=is_relu, **switches)
                tile = tile_copy_matrix(acc, mode, words, is_relu=is_relu, sid=sid, **switches)
                assert whole.dtype == ref.dtype == tile.dtype
                where = f"{mode} vector={vector} mcb={mcb} relu={is_relu} sid={sid}"
                np.testing.assert_array_equal(_bits(whole), _bits(ref), err_msg=where)
                np.testing.assert_array_equal(_bits(tile), _bits(ref), err_msg=where)


def test_whole_matrix_batch_dims_out_and_threads():
    import numba

    rng = np.random.default_rng(3)
    acc = _random_acc(rng, 2 * 3 * 17, 48).reshape(2, 3, 17, 48)
    words = _random_words(rng, 48, mcb=False, sign=True, vector=True)
    ref = golden.data_copy_dequant(acc, words)
    out = np.empty(acc.shape, np.int8)
    assert data_copy_dequant(acc, words, out=out) is out
    np.testing.assert_array_equal(out, ref)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = data_copy_dequant(acc, words)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one, ref)
    res, trace = data_copy_dequant(acc, words, trace=True)
    assert trace.op == "data_copy_dequant" and trace.quant_mode == "VDEQ8" and trace.soc == "ascend310p"
    empty = data_copy_dequant(np.zeros((0, 5), np.int32), 0x3F800000, mode="DEQ16")
    assert empty.shape == (0, 5) and empty.dtype == np.float16


def test_same_type_and_f32_to_f16_copies():
    rng = np.random.default_rng(5)
    f = (rng.standard_normal(256) * 1e5).astype(np.float32)
    f[:4] = [-0.0, np.inf, -np.inf, np.nan]
    i = rng.integers(-2**31, 2**31, 256).astype(np.int32)
    h = (rng.standard_normal(256) * 100).astype(np.float16)
    relu_f = np.where(f < 0, np.float32(0), f)  # max(x, 0): -0.0 and NaN pass
    cases = [  # src, dst dtype, relu, expected (F32toF16: RNE, IEEE overflow to Inf)
        (f, np.float32, False, f), (f, np.float32, True, relu_f),
        (i, np.int32, False, i), (i, np.int32, True, np.maximum(i, 0)),
        (i.view(np.uint32), np.uint32, True, i.view(np.uint32)),     # the uint32 overload ignores isRelu
        (h, np.float16, True, np.where(h < 0, np.float16(0), h)),
        (f, np.float16, False, f), (f, np.float16, True, relu_f),
    ]
    for src, ddt, relu, want in cases:
        ub = np.zeros(1024, np.uint8)
        with np.errstate(over="ignore"):
            want = np.asarray(want).astype(ddt)
        data_copy_enhanced(ub, 0, src.view(np.uint8).copy(), 0, src.dtype, ddt, DataCopyParams(1, 1, 0, 0),
                           ep(deq_scale=DEQ_NONE, relu=relu))
        got = ub[:256 * np.dtype(ddt).itemsize].view(ddt)
        bits = {2: np.uint16, 4: np.uint32}[np.dtype(ddt).itemsize]
        assert (got.view(bits) == want.view(bits)).all(), (src.dtype, ddt, relu)


# ---- rejections -------------------------------------------------------------------------------------------------

def _copy(**kw):
    args = dict(dst_ub=np.zeros(4096, np.uint8), dst_addr=0, src_l0c=np.zeros(4096, np.uint8), src_addr=0,
                src_dtype=np.int32, dst_dtype=np.int8, params=DataCopyParams(1, 1, 0, 0), enhanced=ep())
    switches = kw.pop("switches", {})
    args.update(kw)
    return data_copy_enhanced(**args, **switches)


def _vdeq(table_addr=2048, **fields):
    return ep(deq_scale=VDEQ8, table=table_addr, **fields)


def _bad_table(entry, value):
    ub = np.zeros(4096, np.uint8)
    words = np.full(16, ONE_INT8, np.uint64)
    words[entry] = value
    ub[2048:2176] = words.view(np.uint8)
    return ub


REJECTIONS = [
    ("blockMode NORMAL", dict(enhanced=ep(block_mode=deq.BLOCK_MODE_NORMAL)), "BLOCK_MODE_NORMAL"),
    ("blockMode SMALL_CHANNEL", dict(enhanced=ep(block_mode=deq.BLOCK_MODE_SMALL_CHANNEL)), "SMALL_CHANNEL"),
    ("blockMode DEPTHWISE", dict(enhanced=ep(block_mode=deq.BLOCK_MODE_DEPTHWISE)), "DEPTHWISE"),
    ("padMode", dict(enhanced=DataCopyEnhancedParams(BLOCK_MODE_MATRIX, DEQ8, ONE_INT8, 2, False, 1)),
     "PAD_MODE1"),
    ("DEQ half-M", dict(dst_dtype=np.float16, enhanced=ep(deq_scale=deq.DEQ)), "DEQ"),
    ("VDEQ half-M", dict(dst_dtype=np.float16, enhanced=ep(deq_scale=deq.VDEQ)), "VDEQ"),
    ("int32->half without deq", dict(dst_dtype=np.float16, enhanced=ep(deq_scale=DEQ_NONE)), "DEQ16 or VDEQ16"),
    ("int32->half DEQ8", dict(dst_dtype=np.float16, enhanced=ep(deq_scale=DEQ8)), "DEQ16 or VDEQ16"),
    ("int32->int8 without deq", dict(enhanced=ep(deq_scale=DEQ_NONE)), "DEQ8 or VDEQ8"),
    ("int32->int8 DEQ16", dict(enhanced=ep(deq_scale=DEQ16)), "DEQ8 or VDEQ8"),
    ("int32->int16 DEQ8", dict(dst_dtype=np.int16, enhanced=ep(deq_scale=DEQ8)), "DEQS16"),
    ("int8 src", dict(src_dtype=np.int8), "int8_t"),
    ("half->float", dict(src_dtype=np.float16, dst_dtype=np.float32, enhanced=ep(deq_scale=DEQ_NONE)),
     "no float16 -> float32"),
    ("float64", dict(src_dtype=np.float64, enhanced=ep(deq_scale=DEQ_NONE)), "no float64"),
    ("sidStoreMode 3", dict(enhanced=ep(sid=3)), "sidStoreMode=3"),
    ("dst unaligned", dict(dst_addr=16), "32-byte aligned"),
    ("src unaligned", dict(src_addr=2), "multiple of the 4-byte"),
    ("table unaligned", dict(enhanced=_vdeq(2064)), "32-byte aligned"),
    ("table beyond DEQADDR", dict(enhanced=_vdeq(2**19)), "14-bit DEQADDR"),
    ("table past UB", dict(enhanced=_vdeq(4032)), "past the 4096-byte UB"),
    ("table overlaps dst", dict(enhanced=_vdeq(128)), "overlaps"),
    ("mixed MCB", dict(dst_ub=_bad_table(3, ONE_INT8 | 1 << 36), enhanced=_vdeq()), "burst 0.*MCB"),
    ("NaN scale in table", dict(dst_ub=_bad_table(9, 0x4000_7FC00000), enhanced=_vdeq()), r"entry\[9\].*NaN"),
    ("Inf scale", dict(enhanced=ep(deq_value=0x4000_7F800000)), "Inf, NaN"),
    ("subnormal scale", dict(enhanced=ep(deq_value=0x4000_00400000)), "subnormal"),
    ("src past L0C", dict(params=DataCopyParams(5, 1, 0, 0)), "burst 4 reads L0C"),
    ("dst past UB", dict(dst_ub=np.zeros(700, np.uint8), params=DataCopyParams(3, 1, 0, 0),
                         src_l0c=np.zeros(8192, np.uint8)), "burst 2 writes UB"),
    ("soc 910B", dict(switches={"soc": "ascend910b2"}), "not available on soc"),
    ("bad switch", dict(switches={"clamp9": "no"}), "clamp9"),
    ("bad geometry switch", dict(switches={"sid0_half": "upper"}), "sid0_half"),
    ("unknown switch", dict(switches={"rounding": 1}), "unknown"),
    ("dst not bytes", dict(dst_ub=np.zeros(1024, np.int32)), "uint8"),
    ("params type", dict(params=(1, 1, 0, 0)), "DataCopyParams"),
    ("enhanced type", dict(enhanced={"blockMode": 1}), "DataCopyEnhancedParams"),
]


@pytest.mark.parametrize("kw, match", [(r[1], r[2]) for r in REJECTIONS], ids=[r[0] for r in REJECTIONS])
def test_instruction_rejections(kw, match):
    with pytest.raises(AclnnError, match=match) as e:
        _copy(**kw)
    assert e.value.status == 161002


def test_read_only_ub():
    ub = np.zeros(4096, np.uint8)
    ub.flags.writeable = False
    with pytest.raises(AclnnError, match="read-only"):
        _copy(dst_ub=ub)


def test_null_images():
    for name in ("dst_ub", "src_l0c"):
        with pytest.raises(AclnnError) as e:
            _copy(**{name: None})
        assert e.value.status == 161001


def test_910_is_accepted():
    _copy(switches={"soc": "ascend910"})


WHOLE_REJECTIONS = [
    ("float acc", dict(acc=np.zeros((2, 16), np.float32)), "int32"),
    ("bad mode", dict(mode="DEQ4"), "mode"),
    ("vector mode needs an array", dict(mode="VDEQ8"), "per-channel"),
    ("table length", dict(deq_value=np.full(15, ONE_INT8, np.uint64)), r"shape \(16,\)"),
    ("table 2-D", dict(deq_value=np.full((1, 16), ONE_INT8, np.uint64)), r"shape \(16,\)"),
    ("table int32", dict(deq_value=np.zeros(16, np.int32)), "uint64"),
    ("table of floats", dict(deq_value=np.ones(16)), "unsigned 64-bit"),
    ("mixed MCB", dict(deq_value=np.array([ONE_INT8] * 15 + [ONE_INT8 | 1 << 36], np.uint64)), "MCB"),
    ("mixed sign", dict(deq_value=np.array([ONE_INT8] * 15 + [0x3F800000], np.uint64)), "sign bit"),
    ("NaN scale", dict(deq_value=0x7FC00000), "NaN"),
    ("word too big", dict(deq_value=2**64), "uint64"),
    ("relu not bool", dict(is_relu=1), "bool"),
    ("out dtype", dict(out=np.empty((2, 16), np.uint8)), "int8 array"),
    ("out shape", dict(out=np.empty((2, 17), np.int8)), "shape"),
    ("soc", dict(soc="ascend950pr"), "not available on soc"),
    ("switch", dict(deq16_overflow="wrap"), "deq16_overflow"),
]


@pytest.mark.parametrize("kw, match", [(r[1], r[2]) for r in WHOLE_REJECTIONS], ids=[r[0] for r in WHOLE_REJECTIONS])
def test_whole_matrix_rejections(kw, match):
    args = dict(acc=np.zeros((2, 16), np.int32), deq_value=ONE_INT8)
    args.update(kw)
    acc = args.pop("acc")
    dv = args.pop("deq_value")
    with pytest.raises(AclnnError, match=match) as e:
        data_copy_dequant(acc, dv, **args)
    assert e.value.status == 161002


def test_whole_matrix_nulls():
    for acc, dv in ((None, ONE_INT8), (np.zeros((1, 16), np.int32), None)):
        with pytest.raises(AclnnError) as e:
            data_copy_dequant(acc, dv)
        assert e.value.status == 161001


def test_deqs16_ignores_the_scale_field():
    # M is unused for int32 -> int16 (§3.1), so a NaN there is accepted
    y = data_copy_dequant(np.array([[1024]], np.int32), 0x00000001_7FC00000, mode="DEQS16")
    assert y.tolist() == [[256]]


def test_local_tensor_views():
    # LocalTensors as typed views of the images: the view's position is the address (§7)
    ub = np.zeros(4096, np.uint8)
    l0c = np.zeros(8192, np.uint8)
    l0c[1024:2048] = FRACTAL.reshape(-1).view(np.uint8)
    deq.DeqVector.build(np.full(16, 0.5), sign=True).write(ub, 2048)
    e = ep(deq_scale=VDEQ8, table=2048)
    crmode = deq.data_copy_co1_to_co2(ub[512:768].view(np.int8), l0c[1024:].view(np.int32),
                                      DataCopyParams(1, 1, 0, 0), e)
    assert crmode == deq.CRMODE_DEQSCALE_VDEQ8
    assert (ub[512:768].view(np.int8).reshape(16, 16) == np.rint(FRACTAL * 0.5).clip(-128, 127)).all()
    assert (ub[:512] == 0).all() and (ub[768:2048] == 0).all()
    # half travels as uint16: int32 -> uint16 view means DEQ16 to half
    h = np.zeros(256, np.uint16)
    deq.data_copy_co1_to_co2(h, l0c[1024:].view(np.int32), DataCopyParams(1, 1, 0, 0),
                             ep(deq_scale=DEQ16, deq_value=0x3F800000))
    assert (h.view(np.float16) == FRACTAL.reshape(-1)).all()
    with pytest.raises(AclnnError, match="1-D C-contiguous"):
        deq.data_copy_co1_to_co2(h[::2], l0c.view(np.int32), DataCopyParams(1, 1, 0, 0), e)


def _edge_rows(rng, n, words):
    """Rows that stress the DEQ16 half encoding and the clamps: int32 extremes and small values; accumulators whose
    product with a power-of-two scale is exactly a half rounding tie (normal and subnormal) or sits next to the
    65504 clamp."""
    ext = np.array([2**31 - 1, -2**31, -2**31 + 1, 0, 1, -1, 2**15, -2**15 - 1, 2**24 + 1, -(2**24 + 1)], np.int64)
    rows = [np.resize(ext, n), np.resize(ext[::-1], n)]
    cols = np.broadcast_to(np.asarray(words, np.uint64), (n,))
    scale = np.array([float(DeqValue(int(w)).scale) for w in cols])
    e = -np.round(np.log2(np.where(scale != 0, np.abs(scale), 1.0)))  # scale = +-2^-e for the tie words below
    shift = np.array([DeqValue(int(w)).shift if DeqValue(int(w)).mcb else 0 for w in cols])
    for _ in range(6):
        # p = k·2^(q-11) with k odd is a tie between two halves of exponent q (q = -14 also covers the subnormal
        # quantum 2^-25 for q < -14), and 65504 ± a few quanta of the scale brackets the clamp
        q = rng.integers(-24, 16, size=n)
        k = 2 * rng.integers(1 << 10, 1 << 11, size=n) + 1
        p = np.where(q < -14, (2 * rng.integers(0, 1 << 10, size=n) + 1) * 2.0 ** -25, k * 2.0 ** (q - 11))
        p = np.where(rng.random(n) < 0.15, 65504.0 + rng.integers(-40, 41, size=n) * 2.0 ** -e * 16, p)
        rows.append(np.round(p * np.where(rng.random(n) < 0.5, -1, 1) * 2.0 ** e) * 2.0 ** shift)
    return np.clip(np.array(rows), -2**31, 2**31 - 1).astype(np.int32)


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vdeq"])
def test_default_kernels_equal_generic_kernels(vector):
    # the default-switch kernels (switches folded in, flags hoisted, DEQ16 without the encoder's NaN/Inf/overflow
    # cases) and the generic per-element pipeline must agree bit for bit on every mcb / relu / sign combination
    from npu_emu.ascendc.deq_kernels import DEFAULT_SWITCHES
    from npu_emu.kernels.data_copy_dequant import kernel as k

    rng = np.random.default_rng(11)
    n = 48
    for mcb in (False, True):
        for sign in (False, True):
            ties = DeqValue.build_array(2.0 ** -rng.integers(0, 31, size=n) * np.where(rng.random(n) < 0.5, -1, 1),
                                        shift=rng.integers(1, 17, size=n), sign=sign, mcb=mcb)
            for words in (_random_words(rng, n, mcb=mcb, sign=sign, vector=vector),
                          ties if vector else int(ties[rng.integers(n)])):
                acc = np.concatenate([_near_ties(rng, _random_acc(rng, 32, n), words),
                                      _edge_rows(rng, n, words)]).reshape(-1)
                m, shift, off = np.empty(n, np.float32), np.empty(n, np.int32), np.empty(n, np.int32)
                k.decode_table(read_only(np.broadcast_to(np.asarray(words, np.uint64), (n,)).copy()),
                               DEFAULT_SWITCHES, m, shift, off)
                # the inputs read-only, as the op hands them over (one signature per kernel)
                acc, m, shift, off = read_only(acc), read_only(m), read_only(shift), read_only(off)
                for relu in (False, True):
                    a8, b8 = np.empty(acc.size, np.uint8), np.empty(acc.size, np.uint8)
                    k.deq8_matrix_default(acc, a8, m, shift, off, mcb, sign, relu)
                    k.deq8_matrix(acc, b8, m, shift, off, mcb, sign, relu, DEFAULT_SWITCHES)
                    np.testing.assert_array_equal(a8, b8)
                    a16, b16 = np.empty(acc.size, np.uint16), np.empty(acc.size, np.uint16)
                    k.deq16_matrix_default(acc, a16, m, shift, mcb, relu)
                    k.deq16_matrix(acc, b16, m, shift, mcb, relu, DEFAULT_SWITCHES)
                    np.testing.assert_array_equal(a16, b16)


def test_datacopy_enhanced_form_from_python():
    # npu_emu.ascendc.DataCopy(dst, src, intriParams, enhancedParams) is the Ascend C call shape; it must write the
    # same bytes as the LocalTensor-view entry it routes to, and leave everything else untouched
    from npu_emu.ascendc import DataCopy

    def run(copy):
        ub = np.zeros(4096, np.uint8)
        l0c = np.zeros(8192, np.uint8)
        l0c[1024:2048] = FRACTAL.reshape(-1).view(np.uint8)
        deq.DeqVector.build(np.full(16, 0.5), sign=True).write(ub, 2048)
        copy(ub[512:768].view(np.int8), l0c[1024:].view(np.int32), DataCopyParams(1, 1, 0, 0),
             ep(deq_scale=VDEQ8, table=2048))
        return ub

    a, b = run(DataCopy), run(deq.data_copy_co1_to_co2)
    np.testing.assert_array_equal(a, b)
    assert (a[512:768].view(np.int8).reshape(16, 16) == np.rint(FRACTAL * 0.5).clip(-128, 127)).all()
    with pytest.raises(AclnnError, match="DataCopyEnhancedParams") as e:
        DataCopy(np.zeros(16, np.int8), np.zeros(16, np.int8), DataCopyParams(1, 1, 0, 0), "DEQ8")
    assert e.value.status == 161002
