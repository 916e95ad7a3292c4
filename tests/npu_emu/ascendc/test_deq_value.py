"""DeqValue / DeqVector / DataCopyEnhancedParams / switch resolution (docs/ops/data_copy_dequant.md §1-§3)."""

import numpy as np
import pytest

from npu_emu.ascendc import deq
from npu_emu.ascendc.deq import (
    BLOCK_MODE_MATRIX, BLOCK_MODE_VECTOR, DEQ, DEQ8, DEQ16, DEQ_NONE, PAD_MODE1, VDEQ8, VDEQ16,
    DataCopyEnhancedParams, DeqValue, DeqVector, deq_register,
)
from npu_emu.errors import AclnnError
from npu_emu.kernels.data_copy_dequant import golden as golden

INVALID = 161002


def raises_invalid(match):
    return pytest.raises(AclnnError, match=match)


# ---- DeqValue ---------------------------------------------------------------------------------------------------

def test_doc_example_word():
    # §3.1: the API doc's example value 70369809530880 = 0x0000_4000_3F80_0000, "dst = src"
    v = DeqValue(70369809530880)
    assert v.word == 0x0000_4000_3F80_0000
    assert float(v.scale) == 1.0 and v.sign and not v.relu and not v.mcb
    assert v.shift == 1 and v.n == 0 and v.offset == 0 and v.reserved == 0
    assert v == DeqValue.build(1.0, sign=True) == 70369809530880


@pytest.mark.parametrize("word, fields", [
    # docs/ops/data_copy_dequant.md §8.1 rows 3, 4, 5, 6, 10 decoded by hand from the bit table of §3.1
    (0x0000F000_3F800000, dict(scale=1.0, shift=1, mcb=False, offset=-128, sign=True, relu=True)),
    (0x00003380_3F800000, dict(scale=1.0, shift=1, mcb=False, offset=-100, sign=False, relu=False)),
    (0x00004020_3F000000, dict(scale=0.5, shift=1, mcb=False, offset=1, sign=True, relu=False)),
    (0x00004013_3F800000, dict(scale=1.0, shift=4, mcb=True, offset=0, sign=True, relu=False)),
    (0x00000007_00000000, dict(scale=0.0, shift=8, mcb=False, offset=0, sign=False, relu=False)),
])
def test_spec_words_decode_and_rebuild(word, fields):
    v = DeqValue(word)
    for name, value in fields.items():
        assert getattr(v, name) == value, name
    assert DeqValue.build(**fields).word == word


def test_scale_truncation_and_switch_readings():
    # §8.1 row 9: M = 0x3FFFFFFF reads as 0x3FFFE000 = 1.9990234375 (m_truncate), else 1.9999999
    v = DeqValue(0x3FFFFFFF)
    assert float(v.scale) == 1.9990234375
    assert v.scale_full == np.uint32(0x3FFFFFFF).view(np.float32)
    assert v.decode(m_truncate=False)["scale"] == v.scale_full
    # offset field 0x19C: signed -100 (default) or 412 (offset_signed=False); N = 3: shift 4 or 3 (mcb_shift="n")
    w = DeqValue(0x00003386_3F800000)
    assert w.decode()["offset"] == -100 and w.decode(offset_signed=False)["offset"] == 412
    assert w.decode()["shift"] == 7 and w.decode(mcb_shift="n")["shift"] == 6
    with raises_invalid("mcb_shift"):
        w.decode(mcb_shift="n+1")


def test_round_trip_random_words():
    rng = np.random.default_rng(2024)
    words = rng.integers(0, 2**64, size=3000, dtype=np.uint64)
    words[:4] = [0, 2**64 - 1, 0x7F800000, 0x00000001]  # edges: all zero, all ones, Inf scale, subnormal scale
    rebuilt = 0
    for w in words:
        v = DeqValue(w)
        assert v.word == int(w) and int(v) == int(w)
        assert DeqValue(v.word) == v and hash(DeqValue(int(w))) == hash(v)
        f = v.fields()
        kw = dict(scale_bits=f["scale_bits"], shift=f["shift"], mcb=f["mcb"], offset=f["offset"], sign=f["sign"],
                  relu=f["relu"], reserved=f["reserved"])
        if v.scale_is_valid(m_truncate=False):
            assert DeqValue.build(**kw).word == int(w)
            rebuilt += 1
        else:  # Inf/NaN/subnormal scales cannot be built (documented constraint), but always parse
            with raises_invalid("Inf, NaN or a float32 subnormal"):
                DeqValue.build(**kw)
    assert rebuilt > 2900
    # int64 bit patterns (aclnn packers produce INT64) read as their bits
    assert DeqValue(np.int64(-1)).word == 2**64 - 1


def test_build_array_matches_build():
    scales = np.array([0.25, -3.5, 1e-3, 0.0])
    arr = DeqValue.build_array(scales, shift=np.array([1, 2, 16, 5]), offset=-7, sign=True, mcb=True)
    assert arr.dtype == np.uint64
    for s, sh, w in zip(scales, [1, 2, 16, 5], arr):
        assert DeqValue.build(float(s), shift=sh, offset=-7, sign=True, mcb=True).word == int(w)


@pytest.mark.parametrize("kwargs, match", [
    (dict(shift=0), "shift"), (dict(shift=17), "shift"), (dict(offset=-257), "offset"), (dict(offset=256), "offset"),
    (dict(scale=float("inf")), "Inf"), (dict(scale=float("nan")), "NaN"), (dict(scale=1e-40), "subnormal"),
    (dict(scale=1e39), "Inf"), (dict(scale_bits=2**32), "scale_bits"), (dict(reserved=2**16), "reserved"),
    (dict(sign=1), "bool"), (dict(shift=True), "shift"), (dict(scale="1"), "real number"),
])
def test_build_range_checks(kwargs, match):
    with raises_invalid(match) as e:
        DeqValue.build(**kwargs)
    assert e.value.status == INVALID


@pytest.mark.parametrize("word", [-1, 2**64, 1.5, True, "0"])
def test_word_range_checks(word):
    with raises_invalid("deqValue") as e:
        DeqValue(word)
    assert e.value.status == INVALID


# ---- DeqVector and deqTensorAddr --------------------------------------------------------------------------------

# docs/ops/data_copy_dequant.md §8.2: entry c = sign | fp32((c+1)*0.25)
SPEC_VDEQ8_TABLE = [
    0x40003E800000, 0x40003F000000, 0x40003F400000, 0x40003F800000, 0x40003FA00000, 0x40003FC00000,
    0x40003FE00000, 0x400040000000, 0x400040100000, 0x400040200000, 0x400040300000, 0x400040400000,
    0x400040500000, 0x400040600000, 0x400040700000, 0x400040800000,
]


def test_deq_vector_build_bytes_and_ub_round_trip():
    vec = DeqVector.build((np.arange(16) + 1) * 0.25, sign=True)
    assert [int(w) for w in vec.words] == SPEC_VDEQ8_TABLE
    raw = vec.to_bytes()
    assert len(raw) == 128 and raw[:8] == (0x40003E800000).to_bytes(8, "little")
    assert DeqVector.from_bytes(raw) == vec
    ub = np.zeros(1024, np.uint8)
    vec.write(ub, 256)
    assert DeqVector.read(ub, 256) == vec and len(vec) == 16 and vec[3].word == 0x40003F800000
    with raises_invalid("32-byte aligned"):
        vec.write(ub, 16)
    with raises_invalid("past the"):
        vec.write(ub, 928)


def test_deq_vector_rejects_mixed_mcb_and_wrong_length():
    words = list(SPEC_VDEQ8_TABLE)
    words[5] |= 1 << 36
    with raises_invalid("MCB"):
        DeqVector(words)
    with raises_invalid("16 entries"):
        DeqVector(words[:15])


@pytest.mark.parametrize("addr, ok", [(0, True), (32, True), (2**19 - 32, True), (16, False), (2**19, False)])
def test_deq_tensor_addr(addr, ok):
    if ok:
        assert deq.check_deq_tensor_addr(addr) == addr
    else:
        with raises_invalid("deqTensorAddr"):
            deq.check_deq_tensor_addr(addr)


# ---- DataCopyEnhancedParams and the DEQSCALE register ----------------------------------------------------------

def test_enhanced_params_defaults_order_and_checks():
    p = DataCopyEnhancedParams()
    assert (p.blockMode, p.deqScale, p.deqValue, p.sidStoreMode, p.isRelu, p.padMode, p.padValue,
            p.deqTensorAddr) == (0, DEQ_NONE, 0, 0, False, 0, 0, 0)
    # aggregate-init order of Huawei's tests: {blockMode, deqScale, deqValue, sidStoreMode, isRelu, padMode, padValue}
    q = DataCopyEnhancedParams(BLOCK_MODE_MATRIX, DEQ8, 5, 2, True, 0, 7)
    assert (q.blockMode, q.deqScale, q.deqValue, q.sidStoreMode, q.isRelu, q.padValue) == (1, 3, 5, 2, True, 7)
    assert q.blockMode.name == "BLOCK_MODE_MATRIX" and q.deqScale.name == "DEQ8"
    p.blockMode = BLOCK_MODE_VECTOR
    p.deqValue = DeqValue(0x3F800000)
    assert p.blockMode == 2 and p.deqValue == 0x3F800000
    for field, bad in [("blockMode", 5), ("deqScale", 7), ("sidStoreMode", 256), ("isRelu", 1), ("padMode", 9),
                       ("deqValue", -1), ("deqTensorAddr", 2**64)]:
        with raises_invalid(field):
            setattr(p, field, bad)
    with pytest.raises(AttributeError):
        p.deqvalue = 1


def test_deq_register_adjustments():
    # docs/ops/data_copy_dequant.md §2: DEQ8/DEQ16 OR in bit 47 (isRelu) and bit 46 (int8_t dst), never clear them
    e = DataCopyEnhancedParams(BLOCK_MODE_MATRIX, DEQ8, 0x3F800000, 2, True)
    assert deq_register(e, np.int8) == 0x0000C000_3F800000
    assert deq_register(e, np.uint8) == 0x00008000_3F800000
    e.isRelu = False
    e.deqValue = 0x0000C000_3F800000  # user-set bits survive isRelu = false and a uint8 dst
    assert deq_register(e, np.uint8) == 0x0000C000_3F800000
    e.deqScale = DEQ16
    assert deq_register(e, np.float16) == 0x0000C000_3F800000
    # vector modes: (deqTensorAddr >> 5) | isRelu << 15
    v = DataCopyEnhancedParams(BLOCK_MODE_MATRIX, VDEQ8, 0x3F800000, 2, True)
    v.deqTensorAddr = 4096
    assert deq_register(v, np.int8) == (4096 >> 5) | (1 << 15)
    v.deqScale = VDEQ16
    v.isRelu = False
    assert deq_register(v, np.float16) == 128
    assert deq_register(DataCopyEnhancedParams(deqScale=DEQ, deqValue=0x3C00, isRelu=True), np.float16) == 0x3C00
    assert deq_register(DataCopyEnhancedParams(), np.float32) is None


def test_enum_constants():
    assert (deq.BLOCK_MODE_NORMAL, deq.BLOCK_MODE_SMALL_CHANNEL, deq.BLOCK_MODE_DEPTHWISE) == (0, 3, 4)
    assert (DEQ_NONE, DEQ, deq.VDEQ, DEQ8, VDEQ8, DEQ16, VDEQ16) == (0, 1, 2, 3, 4, 5, 6)
    assert (deq.PAD_NONE, PAD_MODE1, deq.PAD_MODE8) == (0, 1, 8)
    assert (deq.CRMODE_DEQSCALE_VDEQ8, deq.CRMODE_DEQSCALE_DEQ8, deq.CRMODE_DEQSCALE_DEQS16) == (8, 9, 13)


# ---- switches ---------------------------------------------------------------------------------------------------

def test_switch_defaults_agree_everywhere():
    from npu_emu.ascendc import deq_kernels

    assert deq.resolve_switches() == deq_kernels.DEFAULT_SWITCHES
    assert deq.SWITCH_DEFAULTS == golden.SWITCH_DEFAULTS
    assert {k: v[0] for k, v in deq.GEOMETRY_CHOICES.items()} == golden.GEOMETRY_DEFAULTS
    # every alternative resolves to a different tuple
    seen = {deq.resolve_switches()}
    for name, choices in deq.SWITCH_CHOICES.items():
        for alt in choices[1:]:
            sw = deq.resolve_switches(**{name: alt})
            assert sw not in seen, name
            seen.add(sw)


@pytest.mark.parametrize("kwargs, match", [
    (dict(clamp9="yes"), "clamp9"), (dict(relu_mode="after"), "relu_mode"), (dict(deq_mul=32), "deq_mul"),
    (dict(rounding="rne"), "unknown"),
])
def test_switch_validation(kwargs, match):
    with raises_invalid(match):
        deq.resolve_switches(**kwargs)
