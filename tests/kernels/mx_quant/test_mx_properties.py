"""Emulator against the independent numpy golden on random data covering every output format, scale algorithm,
input dtype, round mode, switch and layout; plus the invariances the design promises (faithful UB staging vs the
fused path, any core count or tiling, any host thread count). Bit-exact: compared as bytes.
"""

import itertools
import zlib

import ml_dtypes
import numba
import numpy as np
import pytest

from npu_emu.kernels.mx_quant import golden as golden
from npu_emu.kernels.mx_quant import api, kernel, tiling

TORCH_CODE = {"float8_e5m2": 23, "float8_e4m3fn": 24, "float4_e2m1": 296, "float4_e1m2": 297}
XDT = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float32": np.float32}


def mixed(rng, shape, dtype, special=True):
    """Values over many binades per block, with zeros, -0, subnormals, tiny and huge blocks, Inf and NaN."""
    lead = shape[:-1] + (1,)
    mag = rng.standard_normal(shape) * np.exp2(rng.integers(-20, 20, lead))
    x = mag.astype(np.float32)
    if dtype == "float16":
        x = np.clip(x, -60000, 60000)
    x = x.astype(XDT[dtype])
    if not special:
        return x
    flat = x.reshape(-1)
    bits = flat.view(np.uint32 if dtype == "float32" else np.uint16)
    n = flat.size
    idx = rng.choice(n, size=max(1, n // 40), replace=False)
    kinds = rng.integers(0, 6, idx.size)
    nan, inf, sub = {"bfloat16": (0x7FC0, 0x7F80, 0x0035), "float16": (0x7E00, 0x7C00, 0x0035),
                     "float32": (0x7FC00000, 0x7F800000, 0x00000035)}[dtype]
    for i, k in zip(idx, kinds):
        if k == 0:
            bits[i] = 0
        elif k == 1:
            bits[i] = bits.dtype.type(1 << (bits.itemsize * 8 - 1))          # -0.0
        elif k == 2:
            bits[i] = sub | (bits[i] & (1 << (bits.itemsize * 8 - 1)))
        elif k == 3:
            bits[i] = nan if rng.random() < 0.3 else sub
        elif k == 4:
            bits[i] = inf if rng.random() < 0.3 else 0
    return x


def seed(*parts):
    """A stable seed per parameter set (hash() of strings changes between processes)."""
    return zlib.crc32(repr(parts).encode())


def check_grouped(x, gi, dst, **kw):
    y, s = api.npu_grouped_dynamic_mx_quant(x, np.asarray(gi, np.int32), dst_type=TORCH_CODE[dst], **kw)
    kw = {k: v for k, v in kw.items() if k not in ("faithful", "core_num", "tiling", "validate")}
    yg, sg = golden.grouped_dynamic_mx_quant(x, gi, dst_type=dst, **kw)
    assert np.array_equal(np.asarray(y).view(np.uint8), yg), "y differs from the golden"
    assert np.array_equal(s, sg), "mxscale differs from the golden"
    return y, s


def check_dynamic(x, dst, **kw):
    y, s = api.npu_dynamic_mx_quant(x, dst_type=TORCH_CODE[dst], **kw)
    kw = {k: v for k, v in kw.items() if k not in ("faithful", "core_num", "ub_size", "validate")}
    yg, sg = golden.dynamic_mx_quant(x, dst_type=dst, **kw)
    assert np.array_equal(np.asarray(y).view(np.uint8), yg), "y differs from the golden"
    assert np.array_equal(s, sg), "mxscale differs from the golden"
    return y, s


def random_groups(rng, m, g):
    cuts = np.sort(rng.integers(0, m + 1, g - 1))
    return np.append(cuts, m).astype(np.int32)


# every (output, scale_alg, dst_type_max) the grouped V2 kernel compiles (grouped_dynamic_mx_quant_struct.h)
GROUPED_CASES = [
    ("float8_e4m3fn", 0, 0.0, "rint"), ("float8_e5m2", 0, 0.0, "rint"),
    ("float8_e4m3fn", 1, 0.0, "rint"), ("float8_e5m2", 1, 0.0, "rint"), ("float8_e4m3fn", 1, 500.0, "rint"),
    ("float4_e2m1", 0, 0.0, "rint"), ("float4_e2m1", 0, 0.0, "round"), ("float4_e2m1", 0, 0.0, "floor"),
    ("float4_e2m1", 2, 0.0, "rint"), ("float4_e2m1", 2, 7.0, "floor"), ("float4_e2m1", 2, 9.0, "round"),
    ("float4_e1m2", 0, 0.0, "floor"), ("float4_e1m2", 2, 1.875, "rint"), ("float4_e1m2", 2, 0.0, "round"),
    ("float4_e1m2", 2, 3.0, "floor"),
]


@pytest.mark.parametrize("dst, alg, dtm, mode", GROUPED_CASES)
@pytest.mark.parametrize("xdt", ["bfloat16", "float16"])
def test_grouped_random(dst, alg, dtm, mode, xdt):
    rng = np.random.default_rng(seed((dst, alg, dtm, mode, xdt)))
    m, n = 203, 270
    x = mixed(rng, (m, n), xdt)
    gi = random_groups(rng, m, 5)
    check_grouped(x, gi, dst, scale_alg=alg, dst_type_max=dtm, round_mode=mode)


@pytest.mark.parametrize("switch", [dict(signed_zero=False), dict(ftz=True), dict(nan_in_max="ignore"),
                                    dict(fp4_nibble_order="high_first"), dict(gap_fill=0xA5),
                                    dict(cann_version="9.1.0"), dict(cann_version="9.0.0")])
def test_grouped_switches(switch):
    rng = np.random.default_rng(7)
    m, n = 150, 64
    x = mixed(rng, (m, n), "bfloat16")
    x[:40] = (x[:40].astype(np.float32) * np.float32(2.0 ** -118)).astype(ml_dtypes.bfloat16)   # tiny blocks
    gi = np.array([0, 64, 64, 150], np.int32)
    version = switch.get("cann_version", "master")
    cases = {"master": [("float8_e4m3fn", 0), ("float8_e5m2", 1), ("float4_e2m1", 0), ("float4_e1m2", 2)],
             "9.1.0": [("float8_e4m3fn", 0), ("float8_e5m2", 1)],      # V2 of 9.1.0: FP8, scale_alg 0/1
             "9.0.0": [("float8_e4m3fn", 0), ("float8_e5m2", 0)]}[version]   # V1 only
    for dst, alg in cases:
        check_grouped(x, gi, dst, scale_alg=alg, **switch)


_LAYOUTS = [((4, 100), -1, 32), ((3, 70, 6), 1, 32), ((65, 10), 0, 32), ((2, 5, 96), 2, 64), ((40, 3, 2), 0, 96),
            ((7, 200), 1, 1024)]


# FP32 input takes blocksize 32 only, on an axis of at least 32 (its rejection is tested in test_mx_checks)
@pytest.mark.parametrize("xdt, shape, axis, bs", [
    (xdt, shape, axis, bs) for xdt in ("bfloat16", "float16", "float32") for shape, axis, bs in _LAYOUTS
    if xdt != "float32" or (bs == 32 and shape[axis] >= 32)])
def test_dynamic_random_layouts(xdt, shape, axis, bs):
    rng = np.random.default_rng(seed((xdt, shape, axis, bs)))
    x = mixed(rng, shape, xdt)
    for dst, mode in (("float8_e4m3fn", "rint"), ("float4_e2m1", "floor"), ("float4_e1m2", "round")):
        check_dynamic(x, dst, axis=axis, block_size=bs, round_mode=mode)


DYNAMIC_CASES = [("float8_e4m3fn", 0, 0.0, 0.0, "rint"), ("float8_e5m2", 1, 0.0, 0.0, "rint"),
                 ("float8_e4m3fn", 1, 0.0, 3.0, "rint"), ("float4_e2m1", 2, 0.0, 0.0, "rint"),
                 ("float4_e2m1", 2, 7.0, 0.0, "floor"), ("float4_e2m1", 2, 10.0, 0.0, "round"),
                 ("float4_e2m1", 2, 6.0, 0.0, "floor"), ("float4_e1m2", 0, 0.0, 0.0, "floor")]


@pytest.mark.parametrize("dst, alg, dtm, mlb, mode", DYNAMIC_CASES)
@pytest.mark.parametrize("xdt", ["bfloat16", "float16", "float32"])
def test_dynamic_random_algorithms(dst, alg, dtm, mlb, mode, xdt):
    rng = np.random.default_rng(seed((dst, alg, dtm, mlb, mode, xdt)))
    for axis in (-1, 0):
        x = mixed(rng, (64, 96), xdt)
        check_dynamic(x, dst, axis=axis, scale_alg=alg, dst_type_max=dtm, max_low_bound=mlb, round_mode=mode)


@pytest.mark.parametrize("switch", [dict(signed_zero=False), dict(ftz=True), dict(fp4_nibble_order="high_first"),
                                    dict(cann_version="9.0.0")])
def test_dynamic_switches(switch):
    rng = np.random.default_rng(11)
    x = mixed(rng, (6, 128), "bfloat16")
    x[0] = (x[0].astype(np.float32) * np.float32(2.0 ** -118)).astype(ml_dtypes.bfloat16)
    for dst in ("float8_e4m3fn", "float4_e2m1", "float4_e1m2"):
        for axis in (-1, 0):
            check_dynamic(x, dst, axis=axis, **switch)


# --- invariances --------------------------------------------------------------------------------------------------

def _grouped_case():
    rng = np.random.default_rng(3)
    m, n = 333, 300
    return mixed(rng, (m, n), "bfloat16"), np.array([10, 75, 75, 200, 333], np.int32)


@pytest.mark.parametrize("dst", ["float8_e4m3fn", "float4_e2m1"])
def test_faithful_equals_fused(dst):
    x, gi = _grouped_case()
    a = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=TORCH_CODE[dst])
    b = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=TORCH_CODE[dst], faithful=True)
    assert all(np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8)) for u, v in zip(a, b))
    for xdt, axis in itertools.product(("bfloat16", "float32"), (-1, 1)):
        xd = mixed(np.random.default_rng(5), (3, 70, 34), xdt)
        a = api.npu_dynamic_mx_quant(xd, axis=axis, dst_type=TORCH_CODE[dst])
        b = api.npu_dynamic_mx_quant(xd, axis=axis, dst_type=TORCH_CODE[dst], faithful=True)
        assert all(np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8)) for u, v in zip(a, b))


@pytest.mark.parametrize("dst", ["float8_e4m3fn", "float4_e2m1"])
def test_fused_walk_crosses_slabs(dst):
    # the fused grouped walk cuts the columns into slabs of kernel.FUSED_COLS: a row wider than one slab, its last
    # slab partial, against the golden and the faithful tiles
    n = kernel.FUSED_COLS + 160
    x = mixed(np.random.default_rng(13), (70, n), "bfloat16")
    gi = np.array([40, 70], np.int32)
    check_grouped(x, gi, dst)
    a = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=TORCH_CODE[dst])
    b = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=TORCH_CODE[dst], faithful=True)
    assert all(np.array_equal(np.asarray(u).view(np.uint8), np.asarray(v).view(np.uint8)) for u, v in zip(a, b))


def test_core_count_and_threads_do_not_change_results():
    x, gi = _grouped_case()
    ref = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24)
    xd = mixed(np.random.default_rng(9), (40, 200), "bfloat16")
    ref_d = api.npu_dynamic_mx_quant(xd, dst_type=296)
    saved = numba.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            for cores in (1, 3, 56, 64):
                got = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24, core_num=cores)
                assert np.array_equal(np.asarray(got[0]).view(np.uint8), np.asarray(ref[0]).view(np.uint8))
                assert np.array_equal(got[1], ref[1])
                got = api.npu_dynamic_mx_quant(xd, dst_type=296, core_num=cores, ub_size=4096)
                assert np.array_equal(got[0], ref_d[0]) and np.array_equal(got[1], ref_d[1])
    finally:
        numba.set_num_threads(saved)


def test_user_tiling_with_narrow_tiles():
    # a valid user tiling: 64-column tiles instead of 128 (more tiles, other core assignment), same values
    x, gi = _grouped_case()
    ref = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=23)
    host = tiling.grouped_tiling(333, 300, 5, x_dtype="bfloat16", y_dtype="float8_e5m2").tiling
    fields = host.fields()
    fields.update(blockRowSize=64, blockRowCount=5, blockRowTailSize=300 - 4 * 64, usedCoreNum=7)
    (y, s), tr = api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=23, tiling=fields, trace=True)
    assert tr.block_dim == 7 and tr.tiling_data["blockRowSize"] == 64
    assert np.array_equal(np.asarray(y).view(np.uint8), np.asarray(ref[0]).view(np.uint8))
    assert np.array_equal(s, ref[1])
