"""The numpy golden against outside oracles: the codec vectors of docs/codecs.md §13, ml_dtypes, and the float
formulas of OCP MX (floor(log2 max) - emax) and RCEIL (float32 A / Amax), so the golden is trustworthy on its own."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.mx_quant import golden as g


@pytest.mark.parametrize("fmt, v, code", [
    # docs/codecs.md §13.4, "sat" column (E4M3FN)
    ("float8_e4m3fn", 2.0 ** -9, 0x01), ("float8_e4m3fn", 2.0 ** -10, 0x00), ("float8_e4m3fn", 1.5 * 2.0 ** -9, 0x02),
    ("float8_e4m3fn", 15 * 2.0 ** -10, 0x08), ("float8_e4m3fn", 1.0625, 0x38), ("float8_e4m3fn", 1.1875, 0x3A),
    ("float8_e4m3fn", 248.0, 0x78), ("float8_e4m3fn", 440.0, 0x7E), ("float8_e4m3fn", 464.0, 0x7E),
    ("float8_e4m3fn", 465.0, 0x7E), ("float8_e4m3fn", -465.0, 0xFE), ("float8_e4m3fn", np.inf, 0x7E),
    ("float8_e4m3fn", -np.inf, 0xFE), ("float8_e4m3fn", np.nan, 0x00), ("float8_e4m3fn", -0.0, 0x80),
    ("float8_e4m3fn", 1e-40, 0x00),
    # docs/codecs.md §13.5, "sat" column (E5M2)
    ("float8_e5m2", 2.0 ** -16, 0x01), ("float8_e5m2", 2.0 ** -17, 0x00), ("float8_e5m2", 1.5 * 2.0 ** -16, 0x02),
    ("float8_e5m2", 2.0 ** -14 - 2.0 ** -17, 0x04), ("float8_e5m2", 1.125, 0x3C), ("float8_e5m2", 1.375, 0x3E),
    ("float8_e5m2", 57344.0, 0x7B), ("float8_e5m2", 61439.0, 0x7B), ("float8_e5m2", 61440.0, 0x7B),
    ("float8_e5m2", -61440.0, 0xFB), ("float8_e5m2", np.inf, 0x7B), ("float8_e5m2", np.nan, 0x00),
])
def test_fp8_saturating_encoder(fmt, v, code):
    assert g.encode_fp8(np.array([v], np.float32), fmt)[0] == code


E2M1_TABLE = {   # docs/codecs.md §13.7: input -> (rint, round, floor)
    0.25: (0x0, 0x1, 0x0), 0.75: (0x2, 0x2, 0x1), 1.25: (0x2, 0x3, 0x2), 1.75: (0x4, 0x4, 0x3), 2.5: (0x4, 0x5, 0x4),
    3.5: (0x6, 0x6, 0x5), 5.0: (0x6, 0x7, 0x6), 5.5: (0x7, 0x7, 0x6), 6.5: (0x7, 0x7, 0x7), 0.1: (0x0, 0x0, 0x0),
    -0.1: (0x8, 0x8, 0x9), -0.25: (0x8, 0x9, 0x9), -2.5: (0xC, 0xD, 0xD), -5.0: (0xE, 0xF, 0xF),
    np.inf: (0x7, 0x7, 0x7), -np.inf: (0xF, 0xF, 0xF), np.nan: (0x0, 0x0, 0x0), -0.0: (0x8, 0x8, 0x8),
}
E1M2_TABLE = {
    0.125: (0x0, 0x1, 0x0), 0.375: (0x2, 0x2, 0x1), 0.625: (0x2, 0x3, 0x2), 0.875: (0x4, 0x4, 0x3),
    1.125: (0x4, 0x5, 0x4), 1.625: (0x6, 0x7, 0x6), 1.875: (0x7, 0x7, 0x7), 2.0: (0x7, 0x7, 0x7),
    -0.375: (0xA, 0xA, 0xA), -0.1: (0x8, 0x8, 0x9), -1.9: (0xF, 0xF, 0xF), np.nan: (0x0, 0x0, 0x0),
}


@pytest.mark.parametrize("fmt, table", [("float4_e2m1", E2M1_TABLE), ("float4_e1m2", E1M2_TABLE)])
def test_fp4_grid_encoder(fmt, table):
    for v, codes in table.items():
        for mode, want in zip(("rint", "round", "floor"), codes):
            assert g.encode_fp4(np.array([v], np.float32), fmt, mode)[0] == want, (fmt, v, mode)


def test_fp4_e2m1_rint_matches_ml_dtypes():
    # docs/ops/mx_quant.md §6: ml_dtypes float4_e2m1fn equals the kernel's RINT except for NaN
    rng = np.random.default_rng(0)
    v = (rng.standard_normal(200000) * np.exp2(rng.integers(-4, 5, 200000))).astype(np.float32)
    v = np.concatenate([v, np.arange(-16, 16.25, 0.25, dtype=np.float32)])       # every tie of the grid
    ref = v.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & 0xF
    assert np.array_equal(g.encode_fp4(v, "float4_e2m1", "rint"), ref)


def test_e8m0_decode_matches_ml_dtypes():
    c = np.arange(256, dtype=np.uint8)
    ref = c.view(ml_dtypes.float8_e8m0fnu).astype(np.float32)
    got = g.decode_mxscale(c)
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.array_equal(got[:255], ref[:255])
    assert g.decode_mxscale(np.uint8(0), e8m0_zero="zero") == 0.0


def test_ocp_scale_is_floor_log2_minus_emax():
    # for finite, normal BF16 blocks the integer recipe equals the OCP formula floor(log2(max|V|)) - emax + 127
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((500, 32)) * np.exp2(rng.integers(-100, 100, (500, 1)))).astype(ml_dtypes.bfloat16)
    xf = x.astype(np.float32)
    for dst, emax in g.EMAX.items():
        code, _ = g.block_scales(xf, "bfloat16", dst, op="dynamic", bits=x.view(np.uint16))
        want = np.floor(np.log2(np.abs(xf.astype(np.float64)).max(axis=1))) - emax + 127
        want = np.where(want <= 127 - 127, 0, want)
        assert np.array_equal(code.astype(np.int64), want.astype(np.int64)), dst


def test_rceil_product_equals_division_for_all_bf16():
    # §3.7 step 2: S = A * fl32(1/448) gives the same code as the float32 division A / 448, for every finite
    # BF16 magnitude A (both E4M3 and E5M2)
    a = np.arange(1, 0x7F80, dtype=np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
    for mx in (448.0, 57344.0):
        prod = (a * np.float32(1.0 / mx)).astype(np.float32)
        div = (a / np.float32(mx)).astype(np.float32)
        assert np.array_equal(g._rceil(prod, True), g._rceil(div, True))


def test_grouped_scale_rows_layout():
    # §3.6 worked layout: m = 130, groupIndex [70, 130] -> rows 0, 1 (group 0), 2 (group 1), 3 gap
    assert g.grouped_scale_rows([70, 130], 130).tolist() == [0, 0, 1, -1]
    # G10: an empty group leaves its +g slot unwritten
    assert g.grouped_scale_rows([40, 40, 100], 100).tolist() == [0, -1, 2, -1]


def test_pack_unpack_fp4_orders():
    codes = np.array([[1, 2, 3, 4]], np.uint8)
    assert g.pack_fp4(codes).tolist() == [[0x21, 0x43]]
    assert g.pack_fp4(codes, "high_first").tolist() == [[0x12, 0x34]]
    assert np.array_equal(g.unpack_fp4(g.pack_fp4(codes, "high_first"), "high_first"), codes)
