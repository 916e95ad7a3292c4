"""npu_emu.dtypes.golden, the demo's HiF8 reference (plain numpy from docs/codecs.md §4): its decode table and
ROUND encode against the spot values and thresholds of that page, en_dtypes (the suite's oracle) and the codec."""

import numpy as np
import pytest

from npu_emu.dtypes import golden as h

# docs/codecs.md §4.4 "Spot values"
SPOT = {0x08: 1.0, 0x09: 1.125, 0x0F: 1.875, 0x10: 2.0, 0x12: 2.5, 0x18: 0.5, 0x20: 4.0, 0x28: 8.0, 0x30: 0.25,
        0x38: 0.125, 0x3F: 0.234375, 0x40: 16.0, 0x48: 64.0, 0x5F: 0.013671875, 0x60: 256.0, 0x6E: 32768.0,
        0x7F: 4.57763671875e-05, 0x88: -1.0, 0xEE: -32768.0, 0x01: 2.0 ** -22, 0x07: 2.0 ** -16}


def test_decode_table_spot_values_and_specials():
    t = h.decode_table()
    for code, value in SPOT.items():
        assert t[code] == value, hex(code)
    assert np.isnan(t[0x80]) and t[0x6F] == np.inf and t[0xEF] == -np.inf and t[0x00] == 0.0
    assert np.isfinite(t).sum() == 253                  # 252 non-zero finite values and the zero


# docs/codecs.md §4.5 thresholds: (value just inside, code)
THRESHOLDS = [(np.float32(2.0 ** -23) * np.float32(0.99999994), 0x00), (2.0 ** -23, 0x01),
              (1.5 * 2.0 ** -22, 0x02), (0.96875, 0x08), (1.0625, 0x09), (15.5, 0x40), (28672.0, 0x6E),
              (40959.996, 0x6E), (40960.0, 0x6F), (np.inf, 0x6F), (-np.inf, 0xEF), (-1.0, 0x88), (-0.0, 0x00),
              (-(2.0 ** -24), 0x00), (np.nan, 0x80)]


@pytest.mark.parametrize("value,code", THRESHOLDS)
def test_encode_round_thresholds(value, code):
    assert h.encode_round(np.float32([value]))[0] == code


def _inputs():
    rng = np.random.default_rng(35)
    x = rng.integers(0, 2 ** 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    t = h.decode_table()
    vals = np.unique(np.abs(t[np.isfinite(t)]))
    mids = ((vals[1:] + vals[:-1]) / 2).astype(np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(np.inf))])
    return np.concatenate([x, (rng.standard_normal(1 << 16) * 64).astype(np.float32), near, -near])


def test_encode_round_matches_en_dtypes():
    en_dtypes = pytest.importorskip("en_dtypes")
    x = _inputs()
    with np.errstate(all="ignore"):
        want = x.astype(en_dtypes.hifloat8).view(np.uint8)
    assert np.array_equal(h.encode_round(x), want)
    ref = np.arange(256, dtype=np.uint8).view(en_dtypes.hifloat8).astype(np.float64)
    assert np.array_equal(h.decode_table(), ref, equal_nan=True)


def test_encode_round_matches_the_codec():
    from npu_emu import dtypes

    x = _inputs()
    assert np.array_equal(dtypes.encode(x, "hifloat8"), h.encode_round(x))
    f16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16)           # every fp16 pattern
    assert np.array_equal(dtypes.encode(f16, "hifloat8"), h.encode_round(f16))


def test_demo_checks_hifloat8_without_en_dtypes(monkeypatch):
    """After the README's install (no en_dtypes) `npu-emu demo` runs and checks its HiF8 case instead of skipping."""
    import sys

    from npu_emu.cli import demo

    monkeypatch.setitem(sys.modules, "en_dtypes", None)          # import en_dtypes now raises ImportError
    case = demo.BUILDERS["encode_hifloat8"].build((4096,), np.random.default_rng(0))
    assert case.same(case.run(), case.golden())
    assert not case.same(np.asarray(case.run()) ^ np.uint8(1), case.golden())
