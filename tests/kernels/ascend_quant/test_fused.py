"""AscendQuantV2's fused kernels (the default) against the faithful transliteration (faithful=True), bit for bit:
every x dtype and layout, every switch (round mode, sqrtMode, offset), every tiling branch (the branch asserted
from the tiling data, so a tiling change that stops covering one fails here), every half and bf16 bit pattern, and
the float32 values where CastOut's casts saturate, overflow the half or round a tie."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.ascend_quant import api, golden, launch

BF16 = ml_dtypes.bfloat16
NAMES = {np.float16: "float16", BF16: "bfloat16", np.float32: "float32"}
SWITCHES = [dict(round_mode=m, sqrt_mode=q, offset=o) for m in ("round", "floor", "ceil", "trunc")
            for q in (False, True) for o in (True, False)]


def _both(x, s, o, layout, **kw):
    """(fused, faithful) y of one call, and the tiling data both ran under."""
    name = NAMES[x.dtype.type]
    a, tr = launch.run(x, s, o, name, layout, soc="ascend910b2", **kw)
    b, _ = launch.run(x, s, o, name, layout, soc="ascend910b2", faithful=True, **kw)
    return a.view(np.uint8), b.view(np.uint8), tr.tiling


def _specials(x, dt):
    """NaN, infinities, signed zeros, ties and the values around the int8 range and the half's largest integer."""
    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 127.5, -128.5, 128.0, -129.0, 126.5,
                  2049.0, -70000.0, 65504.0, 1e-40 if dt is np.float32 else 6e-8], np.float64)
    flat = x.reshape(-1)
    flat[:min(v.size, flat.size)] = v[:flat.size].astype(dt)
    return x


# (shape, layout, kw of the tiling, the branch as tiling-data fields)
BRANCHES = [
    ((96, 64), "channel", {}, dict(blockAxis=0, ubAxis=0, baseN=2)),             # rows over cores, 2 rows per tile
    ((7, 300), "channel", {}, dict(blockAxis=11, ubAxis=1)),                      # the double cut
    ((1, 40000), "channel", {}, dict(blockAxis=1, ubAxis=0)),                     # columns over cores
    ((9, 700), "channel", dict(core_num=3, ub_size=8192), dict(blockAxis=0, ubAxis=1)),   # column loops + tail
    ((33, 130), "channel", dict(core_num=5), dict(blockAxis=0, ubAxis=0)),        # a tail core, baseN tail
    ((1000,), "tensor", {}, dict(blockAxis=1, ubAxis=0)),
    ((5, 3000), "tensor", dict(core_num=2, ub_size=8192), dict(blockAxis=1, ubAxis=1)),
]


# The fused kernels' dtype code (the widening) does not depend on the layout and their layout code (the scale rows)
# not on the dtype, so the per-channel kernels are compared in every dtype and the per-tensor ones in bf16: each
# faithful kernel compiled here costs about 7 s of the test run.
CASES = [(dt, b) for b in BRANCHES for dt in ([np.float16, BF16, np.float32] if b[1] == "channel" else [BF16])]


@pytest.mark.parametrize("dt,branch_case", CASES,
                         ids=[f"{NAMES[dt]}-{b[1]}-{'x'.join(map(str, b[0]))}" for dt, b in CASES])
def test_fused_equals_faithful_on_every_branch(dt, branch_case):
    shape, layout, tkw, branch = branch_case
    rng = np.random.default_rng(abs(hash((shape, layout))) % 2**32)
    x = _specials((rng.standard_normal(shape) * 90).astype(dt), dt)
    n = shape[-1] if layout == "channel" else 1
    s = (rng.random(n) * 2 + 0.05).astype(dt)
    o = (rng.standard_normal(n) * 3).astype(dt)
    for sw in SWITCHES:
        a, b, td = _both(x, s, o if sw["offset"] else None, layout, sqrt_mode=sw["sqrt_mode"],
                         round_mode=sw["round_mode"], **tkw)
        assert {k: getattr(td, k) for k in branch} == branch
        assert np.array_equal(a, b), sw


@pytest.mark.parametrize("dt", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("mode", ["round", "floor", "ceil", "trunc"])
def test_every_16_bit_pattern(dt, mode):
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(dt).reshape(256, 256)
    a, b, _ = _both(x, np.ones(256, dt), None, "channel", sqrt_mode=False, round_mode=mode)
    assert np.array_equal(a, b)
    # the same patterns against per-column scales and offsets spanning 2^-8 .. 2^8
    sc = (2.0 ** np.linspace(-8, 8, 256)).astype(dt)
    oc = np.linspace(-3.5, 3.5, 256).astype(dt)
    a, b, _ = _both(x, sc, oc, "channel", sqrt_mode=True, round_mode=mode)
    assert np.array_equal(a, b)


def test_float32_bit_patterns():
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, 1 << 16, dtype=np.uint64).astype(np.uint32)
    # every exponent from subnormal to NaN, and the magnitudes 2^6 .. 2^8 around the int8 range densely
    bits[:4096] = (bits[:4096] & np.uint32(0x807FFFFF)) | (np.arange(4096, dtype=np.uint32) % 256 << np.uint32(23))
    bits[4096:8192] = (bits[4096:8192] & np.uint32(0x807FFFFF)) | np.uint32(133 << 23)
    x = bits.view(np.float32).reshape(256, 256)
    for mode in ("round", "floor", "ceil", "trunc"):
        a, b, _ = _both(x, np.ones(256, np.float32), None, "channel", sqrt_mode=False, round_mode=mode)
        assert np.array_equal(a, b), mode


def test_public_entries_take_the_switch():
    x = np.linspace(-200, 200, 96 * 64, dtype=np.float32).reshape(96, 64)
    s = np.full(64, 0.75, np.float32)
    want = api.ascend_quant(x, s, faithful=True)
    assert np.array_equal(api.ascend_quant(x, s), want)
    assert np.array_equal(api.npu_quantize(x, s, None, 12, -1, False, faithful=True), want)


def test_a_reused_output_is_written_whole(cache_every_output):
    """A second call gets the first call's freed output (tests/conftest.py): every element is written again."""
    rng = np.random.default_rng(3)
    s = (rng.random(64) + 0.5).astype(np.float32)
    y = api.ascend_quant((rng.standard_normal((96, 64)) * 50).astype(np.float32), s)
    where = y.ctypes.data
    del y
    x = (rng.standard_normal((96, 64)) * 50).astype(np.float32)
    y = api.ascend_quant(x, s)
    assert y.ctypes.data == where
    assert np.array_equal(y.view(np.uint8), golden.ascend_quant(x, s).view(np.uint8))
