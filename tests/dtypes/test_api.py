"""The numpy-level API: format resolution, argument validation (AclnnError before any njit call), shapes and dtypes,
FP4 packing, and the aclnnCast chains of docs/codecs.md §10."""

import en_dtypes
import ml_dtypes
import numpy as np
import pytest

from npu_emu import dtypes as D
from npu_emu.errors import AclnnError

# Random bit patterns include signalling NaNs (numpy flags "invalid" when it converts them) and some inputs are
# deliberately out of range for numpy's own casts ("overflow"); neither is a test failure.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning",
                                        "ignore:overflow encountered in cast:RuntimeWarning")

NAMES = ["hifloat8", "float8_e5m2", "float8_e4m3fn", "float8_e8m0", "float6_e3m2", "float6_e2m3", "float4_e2m1",
         "float4_e1m2"]


def _raises(status, *words):
    class _Ctx:
        def __enter__(self):
            self.cm = pytest.raises(AclnnError)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.cm.__exit__(*exc)
            assert self.info.value.status == status, self.info.value
            for w in words:
                assert w in str(self.info.value), (w, str(self.info.value))
            return handled

    return _Ctx()


def test_resolve_format_names_codes_dtypes():
    # aclDataType 34..41 in NAMES order (docs/conventions.md §5)
    for code, name in enumerate(NAMES, start=34):
        assert D.resolve_format(name) == name
        assert D.resolve_format(code) == name
        assert D.resolve_format(np.int64(code)) == name
        assert D.resolve_format(name.upper()) == name
    for dtype, name in [(ml_dtypes.float8_e4m3fn, "float8_e4m3fn"), (ml_dtypes.float8_e5m2, "float8_e5m2"),
                        (ml_dtypes.float8_e8m0fnu, "float8_e8m0"), (ml_dtypes.float4_e2m1fn, "float4_e2m1"),
                        (ml_dtypes.float6_e3m2fn, "float6_e3m2"), (en_dtypes.hifloat8, "hifloat8"),
                        (en_dtypes.float4_e1m2, "float4_e1m2"), (en_dtypes.float8_e8m0, "float8_e8m0")]:
        assert D.resolve_format(dtype) == name
        assert D.resolve_format(np.dtype(dtype)) == name
    assert D.resolve_format("float8_e8m0fnu") == "float8_e8m0"
    assert D.resolve_format("ACL_FLOAT4_E2M1") == "float4_e2m1"


@pytest.mark.parametrize("bad", ["float8", "int8", 33, 42, 0, True, np.float32, 3.5, object()])
def test_resolve_format_rejects(bad):
    with _raises(161002, "float8_e4m3fn"):
        D.resolve_format(bad)


def test_resolve_format_none_is_nullptr():
    with _raises(161001):
        D.resolve_format(None)


@pytest.mark.parametrize("fmt,bad,allowed", [
    ("float8_e4m3fn", "round", "'rint'"), ("float8_e5m2", "floor", "'rint'"), ("float8_e4m3fn", "hybrid", "'rint'"),
    ("hifloat8", "rint", "'round', 'hybrid'"), ("hifloat8", "trunc", "'round', 'hybrid'"),
    ("float4_e2m1", "odd", "'rint', 'round', 'floor', 'ceil', 'trunc'"),
    ("float4_e1m2", "hybrid", "'rint', 'round', 'floor', 'ceil', 'trunc'"), ("float8_e8m0", "rint", "'trunc'"),
    ("hifloat8", 1, "'round', 'hybrid'"), ("float8_e4m3fn", "nearest", "'rint'"), ("hifloat8", 9, "'round'"),
])
def test_invalid_round_mode(fmt, bad, allowed):
    with _raises(161002, fmt, allowed):
        D.encode(np.ones(3, np.float32), fmt, round_mode=bad)


def test_round_mode_spellings():
    x = np.array([2.5, -2.5, 0.3], np.float32)
    want = D.encode(x, "float4_e2m1", round_mode="ceil")
    assert np.array_equal(D.encode(x, "float4_e2m1", round_mode=D.CAST_CEIL), want)
    assert np.array_equal(D.encode(x, "float4_e2m1", round_mode=" CEIL "), want)
    # CAST_NONE behaves as RINT where RINT is allowed (docs/codecs.md §2.1)
    assert np.array_equal(D.encode(x, "float4_e2m1", round_mode="none"), D.encode(x, "float4_e2m1"))
    assert np.array_equal(D.encode(x, 36, round_mode=0), D.encode(x, "float8_e4m3fn"))
    with _raises(161002, "'round', 'hybrid'"):
        D.encode(x, "hifloat8", round_mode="none")


@pytest.mark.parametrize("x", [np.arange(4, dtype=np.int32), np.ones(3, np.uint8), np.ones(2, np.complex64),
                               np.ones(2, ml_dtypes.float8_e4m3fn), np.array(["a"])])
def test_encode_rejects_non_float_input(x):
    with _raises(161002, "float32", "bfloat16"):
        D.encode(x, "hifloat8")


def test_encode_none_is_nullptr():
    with _raises(161001, "x"):
        D.encode(None, "hifloat8")


def test_switch_validation():
    x = np.ones(2, np.float32)
    with _raises(161002, "always saturate"):
        D.encode(x, "float4_e2m1", saturate=False)
    assert np.array_equal(D.encode(x, "float4_e2m1", saturate=True), D.encode(x, "float4_e2m1"))
    with _raises(161002, "saturation"):
        D.encode(x, "float8_e8m0", saturate=True)
    with _raises(161002, "float64"):
        D.encode(x.astype(np.float64), "hifloat8", round_mode="hybrid")
    for kw, words in [({"hybrid_overflow": "ascriptor"}, "'isa', 'script'"),
                      ({"hybrid_f16_subnormal": "flush"}, "'normalize', 'raw'"),
                      ({"fp4_nan": "nan"}, "'pos_zero', 'nan_sign'"), ({"saturate": 1}, "True, False"),
                      ({"sat_keep_nan": "yes"}, "True, False")]:
        with _raises(161002, *words.split(", ")):
            D.encode(x, "hifloat8", **kw)
    with _raises(161002, "decode only"):
        D.encode(x, "float6_e2m3")
    with _raises(161002, "'pow2', 'zero'"):
        D.decode(np.zeros(2, np.uint8), "float8_e8m0", e8m0_zero=0)


def test_decode_input_validation():
    with _raises(161002, "0..15", "unpack_fp4"):
        D.decode(np.array([3, 16], np.uint8), "float4_e2m1")
    with _raises(161002, "0..63"):
        D.decode(np.array([64], np.uint8), "float6_e3m2")
    with _raises(161002, "uint8"):
        D.decode(np.array([1.0]), "hifloat8")
    with _raises(161002, "float8_e4m3fn", "hifloat8"):
        D.decode(np.zeros(2, ml_dtypes.float8_e4m3fn), "hifloat8")
    with _raises(161001, "codes"):
        D.decode(None, "hifloat8")
    # int8 codes are read as their bytes
    assert np.array_equal(D.decode(np.array([-1, 8], np.int8), "hifloat8"), D.decode(np.array([0xFF, 8], np.uint8),
                                                                                       "hifloat8"))


def test_shapes_layouts_and_out():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    flat = D.encode(x.ravel(), "hifloat8")
    got = D.encode(x, "hifloat8")
    assert got.shape == x.shape and got.dtype == np.uint8 and np.array_equal(got.ravel(), flat)
    t = x.transpose(2, 0, 1)  # non-contiguous
    assert np.array_equal(D.encode(t, "hifloat8"), D.encode(np.ascontiguousarray(t), "hifloat8"))
    assert D.encode(np.float32(1.0), "hifloat8").shape == () and D.encode(np.float32(1.0), "hifloat8")[()] == 0x08
    assert D.encode(1.0, "float8_e4m3fn")[()] == 0x38  # a Python float is float64
    assert D.encode(np.zeros((0, 3), np.float32), "float8_e5m2").shape == (0, 3)
    out = np.empty(x.shape, np.uint8)
    assert D.encode(x, "hifloat8", out=out) is out and np.array_equal(out, got)
    dec = np.empty(x.shape, np.float32)
    assert D.decode(got, "hifloat8", out=dec) is dec
    assert np.array_equal(dec, D.decode(got.ravel(), "hifloat8").reshape(x.shape))
    for bad in (np.empty(x.shape, np.int8), np.empty((3, 20), np.uint8), np.empty((3, 5, 8), np.uint8)[..., ::2],
                [0] * 60):
        with _raises(161002, "out"):
            D.encode(x, "hifloat8", out=bad)
    h = D.to_float16(x)
    assert h.dtype == np.float16 and h.shape == x.shape
    b = D.to_bfloat16(x)
    assert b.dtype == ml_dtypes.bfloat16 and b.shape == x.shape
    assert np.array_equal(D.to_bfloat16(b).view(np.uint16), b.view(np.uint16))
    assert np.array_equal(D.to_float16(h).view(np.uint16), h.view(np.uint16))
    with _raises(161002, "'rint', 'round', 'floor', 'ceil', 'trunc', 'odd'"):
        D.to_float16(x, round_mode="hybrid")


def test_pack_unpack_fp4():
    codes = np.array([[1, 2, 3, 4], [0xF, 0x0, 0x8, 0x7]], np.uint8)
    packed = D.pack_fp4(codes)
    assert packed.tolist() == [[0x21, 0x43], [0x0F, 0x78]]  # element 2i in the low nibble (docs/codecs.md §7.2)
    hf = D.pack_fp4(codes, fp4_nibble_order="high_first")
    assert hf.tolist() == [[0x12, 0x34], [0xF0, 0x87]]
    assert np.array_equal(D.unpack_fp4(packed, 4), codes)
    assert np.array_equal(D.unpack_fp4(hf, 4, fp4_nibble_order="high_first"), codes)
    odd = np.array([5, 6, 7], np.uint8)
    assert D.pack_fp4(odd).tolist() == [0x65, 0x07]  # padded with code 0
    assert D.unpack_fp4(D.pack_fp4(odd), 3).tolist() == [5, 6, 7]
    # typed FP4 arrays are accepted (one code per byte, as ml_dtypes stores them)
    typed = np.array([1.0, -0.5], np.float32).astype(ml_dtypes.float4_e2m1fn)
    assert D.pack_fp4(typed).tolist() == [0x92]
    with _raises(161002, "0..15"):
        D.pack_fp4(np.array([16], np.uint8))
    with _raises(161002, "count"):
        D.unpack_fp4(packed, 5)
    with _raises(161002, "count"):
        D.unpack_fp4(packed, 2)
    with _raises(161002, "uint8"):
        D.unpack_fp4(packed.astype(np.int16), 4)
    with _raises(161002, "FP4"):
        D.pack_fp4(np.zeros(2, ml_dtypes.float8_e4m3fn))
    with _raises(161002, "'low_first', 'high_first'"):
        D.pack_fp4(codes, fp4_nibble_order="little")


# ---------------------------------------------------------------------------------------------------------------
# aclnnCast chains (docs/codecs.md §10)


def _vals():
    rng = np.random.default_rng(10)
    x = (rng.standard_normal(20000) * 4.0 ** rng.integers(-6, 6, 20000)).astype(np.float32)
    return np.concatenate([x, np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e6, -7e4, 2.0 ** -30], np.float32)])


@pytest.mark.parametrize("sat", [False, True])
def test_cast_float_to_formats(sat):
    x = _vals()
    h, b = x.astype(np.float16), x.astype(ml_dtypes.bfloat16)
    kw = dict(saturate=sat)
    for dst in ("hifloat8", "float8_e4m3fn", "float8_e5m2"):
        assert np.array_equal(D.cast(x, "float32", dst, **kw), D.encode(x, dst, **kw))
        assert np.array_equal(D.cast(h, "float16", dst, **kw), D.encode(h, dst, **kw))
        assert np.array_equal(D.cast(b, 27, dst, **kw), D.encode(b, dst, **kw))
    for dst in ("float4_e2m1", "float4_e1m2"):
        # bf16 -> FP4 is direct; float/half go through a bf16 RINT step (saturating when saturate is set)
        assert np.array_equal(D.cast(b, "bfloat16", dst, **kw), D.encode(b, dst))
        assert np.array_equal(D.cast(x, "float32", dst, **kw), D.encode(D.to_bfloat16(x, saturate=sat), dst))
        assert np.array_equal(D.cast(h, "float16", dst, **kw), D.encode(D.to_bfloat16(h, saturate=sat), dst))
        assert np.array_equal(D.cast(x, "float32", dst, fp4_path="direct", **kw), D.encode(x, dst))


def test_cast_between_float_types():
    x = _vals()
    assert np.array_equal(D.cast(x, None, "float16").view(np.uint16), D.to_float16(x).view(np.uint16))
    assert np.array_equal(D.cast(x, "float", "bf16", saturate=True).view(np.uint16),
                          D.to_bfloat16(x, saturate=True).view(np.uint16))
    h = x.astype(np.float16)
    assert np.array_equal(D.cast(h, "half", "float32").view(np.uint32), h.astype(np.float32).view(np.uint32))
    assert np.array_equal(D.cast(h, 1, 27).view(np.uint16), D.to_bfloat16(h).view(np.uint16))
    c = D.cast(x, 0, 0)
    assert c is not x and np.array_equal(c.view(np.uint32), x.view(np.uint32))
    # src taken from a typed array
    e4 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    assert np.array_equal(D.cast(e4, None, "float4_e2m1"), D.cast(e4.view(np.uint8), "float8_e4m3fn", "float4_e2m1"))


def test_cast_formats_to_floats_and_back():
    codes8 = np.arange(256, dtype=np.uint8)
    codes4 = np.arange(16, dtype=np.uint8)
    for src, codes in [("hifloat8", codes8), ("float8_e4m3fn", codes8), ("float8_e5m2", codes8),
                       ("float4_e2m1", codes4), ("float4_e1m2", codes4)]:
        v = D.decode(codes, src)
        got32 = D.cast(codes, src, "float32")
        assert np.array_equal(np.isnan(got32), np.isnan(v))
        assert np.array_equal(got32[~np.isnan(v)].view(np.uint32), v[~np.isnan(v)].view(np.uint32))
        for dst, helper in (("float16", D.to_float16), ("bfloat16", D.to_bfloat16)):
            got = D.cast(codes, src, dst)
            assert np.array_equal(got.view(np.uint16), helper(v).view(np.uint16))  # exact values, Inf/NaN kept
    # FP4 -> HiF8 / FP8 (exact), FP8/HiF8 -> FP4 (RINT, saturating)
    for src in ("float4_e2m1", "float4_e1m2"):
        v = D.decode(codes4, src)
        for dst in ("hifloat8", "float8_e4m3fn", "float8_e5m2"):
            assert np.array_equal(D.cast(codes4, src, dst), D.encode(v, dst))
            assert np.array_equal(D.decode(D.cast(codes4, src, dst), dst), v)
    for src in ("hifloat8", "float8_e4m3fn", "float8_e5m2"):
        v = D.decode(codes8, src)
        for dst in ("float4_e2m1", "float4_e1m2"):
            assert np.array_equal(D.cast(codes8, src, dst), D.encode(v, dst))
    # HiF8 -> bf16 goes through half: with saturation Inf -> 65504 (half) -> 65536 (bf16 RINT)
    inf = np.array([0x6F, 0xEF], np.uint8)
    assert D.cast(inf, "hifloat8", "bfloat16", saturate=True).astype(np.float32).tolist() == [65536.0, -65536.0]
    assert np.isinf(D.cast(inf, "hifloat8", "bfloat16").astype(np.float32)).all()


def test_cast_errors():
    x = np.ones(4, np.float32)
    codes = np.zeros(4, np.uint8)
    for src, dst in [("hifloat8", "float8_e4m3fn"), ("float8_e5m2", "float8_e4m3fn"), ("float8_e4m3fn", "hifloat8"),
                     ("float4_e2m1", "float4_e1m2")]:
        with _raises(161002, src, dst, "no"):
            D.cast(codes, src, dst)
    for t in ("float8_e8m0", "float6_e2m3"):
        with _raises(161002, t):
            D.cast(x, "float32", t)
        with _raises(161002, t):
            D.cast(codes, t, "float32")
    with _raises(161002, "src"):
        D.cast(codes, None, "float32")
    with _raises(161002, "float16"):
        D.cast(x, "float16", "hifloat8")
    with _raises(161002, "dst"):
        D.cast(x, "float32", "int8")
    with _raises(161002, "'via_bf16', 'direct'"):
        D.cast(x, "float32", "float4_e2m1", fp4_path="bf16")
    with _raises(161001, "dst"):
        D.cast(x, "float32", None)
    with _raises(161002, "float32"):
        D.cast(np.ones(2, np.float64), "float64", "hifloat8")
