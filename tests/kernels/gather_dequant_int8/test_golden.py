"""The plain-numpy golden against the hand-checked vectors and the sample's default data
(docs/ops/gather_dequant_int8.md §6).

These tests pin the golden itself; the kernel tests then compare the emulator with it.
"""

import hashlib

import numpy as np
import pytest

from npu_emu.kernels.gather_dequant_int8 import golden as golden

# docs/ops/gather_dequant_int8.md §6.1: (q, zp bits, scale bits, fp16(q - zp) bits, y "keep", y "flush",
# y with a single fp32 rounding). Derivations are in the table of §6.1; e.g. G7: 200 - 0.2999 = 199.7001 rounds to
# 199.75 (0x5A3E), times 0.010002 = 1.99796 -> 0x3FFE, while the exact 199.7001 * 0.010002 = 1.99746 -> 0x3FFD.
VECTORS = {
    "G1": (0, 0x57F8, 0x211F, 0xD7F8, 0xBD1A, 0xBD1A, 0xBD1A),
    "G2": (1, 0x57F8, 0x211F, 0xD7E8, 0xBD10, 0xBD10, 0xBD10),
    "G3": (128, 0x57F8, 0x211F, 0x3800, 0x1D1F, 0x1D1F, 0x1D1F),
    "G4": (255, 0x57F8, 0x211F, 0x57F8, 0x3D1A, 0x3D1A, 0x3D1A),
    "G5": (100, 0x5640, 0x3800, 0x0000, 0x0000, 0x0000, 0x0000),
    "G6": (100, 0x5640, 0xB800, 0x0000, 0x8000, 0x8000, 0x8000),    # (+0) * (-0.5) = -0
    "G7": (200, 0x34CD, 0x211F, 0x5A3E, 0x3FFE, 0x3FFE, 0x3FFD),
    "G8": (200, 0x399A, 0x3B33, 0x5A3A, 0x599A, 0x599A, 0x599B),
    "G9": (10, 0x4901, 0x1419, 0xA000, 0x8083, 0x8000, 0x8083),    # -2^-7 * 0.0010004 = -7.8e-6: subnormal
}

# §6.3, numpy legacy RNG seed 42 (hashes of the raw little-endian files gen_data.py writes)
DEFAULT_SHA256 = {
    "table": "b0f42d80b1fcbea6c7f96563225b3c63a47dbef447607310710246134ae6cc47",
    "indices": "96e7ebbe99cd5079ce32d918c11a1557fb5f0c5f0747e6835928ca4311b73d27",
    "scale": "eeab73074173db9f588e32d8bb5da0abd311b3e412b64379996ab443f887166f",
    "zero_point": "40338ad6c71e380df292438fc5e4ba4099393cdc0f8a819d97fadff0f8bae27a",
    "output": "65f09e86818efe96ede90c84034e637a5b4998398ed78a2b9b4b6a3e0e6e52fc",
}
# docs/ops/gather_dequant_int8.md §6.3: (token, row, col, q, zp, s, two-rounding y, single-rounding y)
SINGLE_ROUNDING_POINTS = [
    (1, 563, 6, 255, 0x57CF, 0x177A, 0x3398, 0x3399),
    (5, 488, 16, 255, 0x57C7, 0x186B, 0x3481, 0x3482),
    (6, 1023, 222, 255, 0x571D, 0x18F7, 0x357B, 0x357A),
    (10, 993, 235, 255, 0x57A7, 0x191B, 0x3549, 0x354A),
]


def f16(bits):
    return np.array(bits, np.uint16).view(np.float16)


def one_element(q, zp, s, **kw):
    table = np.array([[q]], np.uint8)
    return golden.gather_dequant_int8(table, np.array([0], np.int32), f16([s]), f16([zp]), **kw)


@pytest.mark.parametrize("name", sorted(VECTORS))
@pytest.mark.parametrize("mode", ["keep", "flush"])
def test_spec_vector(name, mode):
    q, zp, s, _, keep, flush, _ = VECTORS[name]
    y = one_element(q, zp, s, fp16_subnormal=mode)
    assert y.dtype == np.float16 and y.shape == (1, 1)
    assert int(y.view(np.uint16)[0, 0]) == (keep if mode == "keep" else flush)


@pytest.mark.parametrize("name", ["G7", "G8"])
def test_single_rounding_differs(name):
    """The vectors that separate two fp16 roundings from one fp32 computation rounded once."""
    q, zp, s, mid, keep, _, single = VECTORS[name]
    assert int((np.float16(q) - f16(zp)).view(np.uint16)) == mid
    one = np.float16((np.float32(q) - np.float32(f16(zp))) * np.float32(f16(s)))
    assert int(one.view(np.uint16)) == single != keep


def test_uint16_views_accepted():
    q, zp, s = 200, 0x34CD, 0x211F
    y = golden.gather_dequant_int8(np.array([[q]], np.uint8), np.array([0], np.int32),
                                   np.array([s], np.uint16), np.array([[zp]], np.uint16))
    assert int(y.view(np.uint16)[0, 0]) == 0x3FFE


def test_flush_reads_subnormal_operands_as_zero():
    # scale 0x0001 (2^-24, smallest subnormal): keep gives (255 - 127) * 2^-24 = 0x0080; flush reads it as +0
    table = np.array([[255]], np.uint8)
    idx = np.array([0], np.int32)
    zp = f16([0x57F0])                                                # 127.0
    assert int(golden.gather_dequant_int8(table, idx, f16([0x0001]), zp).view(np.uint16)[0, 0]) == 0x0080
    y = golden.gather_dequant_int8(table, idx, f16([0x0001]), zp, fp16_subnormal="flush")
    assert int(y.view(np.uint16)[0, 0]) == 0x0000
    # zero point -2^-24 (subnormal): keep 0 - (-2^-24) = 2^-24, times 1.0 stays 0x0001; flush gives +0
    y = golden.gather_dequant_int8(np.array([[0]], np.uint8), idx, f16([0x3C00]), f16([0x8001]))
    assert int(y.view(np.uint16)[0, 0]) == 0x0001
    y = golden.gather_dequant_int8(np.array([[0]], np.uint8), idx, f16([0x3C00]), f16([0x8001]),
                                   fp16_subnormal="flush")
    assert int(y.view(np.uint16)[0, 0]) == 0x0000


def test_shape_follows_indices():
    table = np.arange(64, dtype=np.uint8).reshape(2, 32)
    idx = np.array([[[1], [0]], [[0], [1]]], np.int32)               # shape (2, 2, 1)
    y = golden.gather_dequant_int8(table, idx, f16([0x3C00, 0x3C00]), f16([0, 0]))
    assert y.shape == (2, 2, 1, 32)
    assert np.array_equal(y[0, 0, 0], table[1].astype(np.float16))
    scalar = golden.gather_dequant_int8(table, np.array(1, np.int32), f16([0x3C00, 0x3C00]), f16([0, 0]))
    assert scalar.shape == (32,)


@pytest.fixture(scope="module")
def default_case():
    return golden.golden_case()


def test_default_golden_hashes(default_case):
    assert default_case["indices"].shape == (1, 30) and default_case["output"].shape == (1, 30, 256)
    for name, want in DEFAULT_SHA256.items():
        assert hashlib.sha256(default_case[name].tobytes()).hexdigest() == want, name


def test_default_golden_row_840(default_case):
    c = default_case
    assert int(c["indices"][0, 0]) == 840
    assert int(c["scale"].view(np.uint16)[840]) == 0x189C and int(c["zero_point"].view(np.uint16)[840]) == 0x55B9
    assert c["table"][840, :8].tolist() == [110, 50, 165, 91, 80, 63, 137, 83]
    want = [0x2950, 0xADFD, 0x314A, 0x9530, 0xA6A9, 0xAC1D, 0x2E8C, 0xA4EF]
    assert c["output"].view(np.uint16)[0, 0, :8].tolist() == want


def test_default_golden_single_rounding_points(default_case):
    """Exactly the 4 elements of docs/ops/gather_dequant_int8.md §6.3 differ from a single fp32 rounding."""
    c = default_case
    idx = c["indices"].reshape(-1)
    q = c["table"][idx].astype(np.float32)
    z = c["zero_point"][idx].astype(np.float32)[:, None]
    s = c["scale"][idx].astype(np.float32)[:, None]
    single = ((q - z) * s).astype(np.float16).view(np.uint16)
    two = c["output"].reshape(30, 256).view(np.uint16)
    diff = [tuple(map(int, p)) for p in np.argwhere(single != two)]
    assert diff == [(t, col) for t, _, col, *_ in SINGLE_ROUNDING_POINTS]
    for t, row, col, qv, zp, sv, y2, y1 in SINGLE_ROUNDING_POINTS:
        assert idx[t] == row and c["table"][row, col] == qv
        assert int(c["zero_point"].view(np.uint16)[row]) == zp and int(c["scale"].view(np.uint16)[row]) == sv
        assert int(two[t, col]) == y2 and int(single[t, col]) == y1


def test_no_subnormal_output_in_default_golden(default_case):
    """docs/ops/gather_dequant_int8.md §2.1: the smallest non-zero |y| is 1.14e-4, so "flush" changes nothing on the
    default data."""
    c = default_case
    y = c["output"]
    assert float(np.abs(y[y != 0]).min()) == pytest.approx(1.141e-4, rel=1e-3)
    flushed = golden.gather_dequant_int8(c["table"], c["indices"], c["scale"], c["zero_point"],
                                         fp16_subnormal="flush")
    assert np.array_equal(flushed.view(np.uint16), y.view(np.uint16))
