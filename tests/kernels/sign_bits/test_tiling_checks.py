"""User tiling data the SignBits kernels cannot honour is refused with AclnnError 561002 before any kernel runs, with a
message naming the field, the core, the tile and the element range (kernel.unpack_tiling_problems /
pack_tiling_problems and the access patterns built from the tiling fields, not from the input length).

Every case starts from the host tiling of the input (which passes, test_host_tilings_pass) and changes one field.
A property test perturbs the 910B unpack fields: whatever the validator accepts, the fused kernel and the faithful
one (faithful=True) both return the golden's bits.
"""

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from npu_emu import AclnnError
from npu_emu.kernels.sign_bits import golden as golden
from npu_emu.kernels.sign_bits import tiling as sbt
from npu_emu.ops import npu_sign_bits_pack, npu_sign_bits_unpack

RANGE = re.compile(r"\[\d+, \d+\)")

X_U8 = np.random.default_rng(11).integers(0, 256, 1000, dtype=np.uint8)
X_F32 = np.random.default_rng(12).standard_normal(100_000).astype(np.float32)
X_F16 = X_F32[:30_000].astype(np.float16)

# 1000 bytes, 3 cores, UB 16384: big core 0 (384 B) and small cores 1, 2 (320 B), tiles of 192 B, double buffer.
UNPACK = sbt.unpack_tiling(X_U8.size, "float32", core_num=3, ub_size=16384)
# 100000 floats, 3 cores: tiles of 16768, two big cores, the last core's last tile holds 16416 real elements.
PACK = sbt.pack_tiling(X_F32.size, "float32", core_num=3)
UNPACK_950 = sbt.unpack_tiling_950(X_U8.size, "float32", core_num=4)
PACK_950 = sbt.pack_tiling_950(X_F32.size, "float32", core_num=4)


def _unpack(tr, faithful=False, soc="ascend910b2", dtype=0, **change):
    td = dataclasses.replace(tr.tiling, **change)
    return npu_sign_bits_unpack(X_U8, 1, dtype, soc=soc, tiling=td, block_dim=tr.block_dim, faithful=faithful)


def _pack(tr, x=X_F32, soc="ascend910b2", **change):
    td = dataclasses.replace(tr.tiling, **change)
    return npu_sign_bits_pack(x, 1, soc=soc, tiling=td, block_dim=tr.block_dim)


def _refused(call, *words):
    with pytest.raises(AclnnError) as e:
        call()
    msg = str(e.value)
    assert e.value.status == 561002, msg
    for w in words:
        assert w in msg, f"{w!r} missing from: {msg}"
    return msg


def test_fixture_tilings_have_the_shapes_the_cases_rely_on():
    u, p = UNPACK.tiling, PACK.tiling
    assert UNPACK.block_dim == 3 and u.tailBlockNum == 1 and u.finalSmallTileNum == 2 and u.bufferOpen == 1
    assert (u.tileDataNum, u.smallTailDataNum, u.bigTailDataNum) == (192, 128, 192)
    assert PACK.block_dim == 3 and p.tailBlockNum == 2 and p.finalSmallTileNum == 2
    assert (p.tileDataNum, p.lastCopyLength, p.rightPaddingElemNums, p.lastCalcLength) == (16768, 16416, 0, 16448)


def test_host_tilings_pass():
    for faithful in (False, True):
        assert np.array_equal(_unpack(UNPACK, faithful).view(np.uint32),
                              golden.sign_bits_unpack(X_U8, 1).view(np.uint32))
    assert np.array_equal(_pack(PACK), golden.sign_bits_pack(X_F32, 1))
    assert np.array_equal(_unpack(UNPACK_950, soc="ascend950pr").view(np.uint32),
                          golden.sign_bits_unpack(X_U8, 1).view(np.uint32))
    assert np.array_equal(_pack(PACK_950, soc="ascend950pr"), golden.sign_bits_pack(X_F32, 1, soc="ascend950pr"))


# ---------------------------------------------------------------------------------------------------------------
# 910B unpack
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("faithful", [False, True])
def test_unpack_tile_not_a_multiple_of_32_bytes(faithful):
    # 191 once reached the faithful kernel and died in ub_view (misaligned float buffer) as a 561000
    _refused(lambda: _unpack(UNPACK, faithful, tileDataNum=191), "tileDataNum=191", "multiple of 32")


def test_unpack_tail_not_a_multiple_of_32_bytes():
    # small core 1 starts at 384; its tile 1 at 384 + 192 = 576; a tail of 127 B is copied as 96 B
    msg = _refused(lambda: _unpack(UNPACK, smallTailDataNum=127), "core 1 tile 1", "smallTailDataNum=127",
                   "self[576, 672)", "y[5376, 5624)")
    assert "stale UB" in msg


def test_unpack_tail_longer_than_the_tile_buffer():
    # tileDataNum 128 on the 5-core tiling of the fuzz: the one tile of each core is its 192- or 256-byte tail
    tr = sbt.unpack_tiling(X_U8.size, "float32", core_num=5, ub_size=16384)
    _refused(lambda: _unpack(tr, True, tileDataNum=128), "core 0 tile 0", "bigTailDataNum=256",
             "self[0, 256)", "tileDataNum=128")
    # in the fixture: big core 0's tail of 224 B runs past its 192-byte buffer (and into core 1)
    _refused(lambda: _unpack(UNPACK, bigTailDataNum=224), "core 0 tile 1", "bigTailDataNum=224", "self[192, 416)",
             "overlapping writes")


def test_unpack_zero_tile():
    _refused(lambda: _unpack(UNPACK, tileDataNum=0), "tileDataNum=0")


# ---------------------------------------------------------------------------------------------------------------
# 910B pack
# ---------------------------------------------------------------------------------------------------------------

def test_pack_tile_not_whole_repeats():
    _refused(lambda: _pack(PACK, tileDataNum=16760), "tileDataNum=16760", "64 elements")


def test_pack_tail_not_whole_repeats():
    # big core 0's tile 1 starts at 16768; 16600 = 259 * 64 + 24, so CompareScalar stops 24 elements short
    _refused(lambda: _pack(PACK, bigTailDataNum=16600), "core 0 tile 1", "bigTailDataNum=16600",
             "x[16768, 33344)", "y[4168, 4171)")


def test_pack_tail_longer_than_the_tile_buffer():
    _refused(lambda: _pack(PACK, tileDataNum=16384), "core 0 tile 1", "bigTailDataNum=16640", "tileDataNum=16384")


def test_pack_core_start_not_byte_aligned():
    # 3 cores, 1 big: core 2 starts at 2 * 33408 - (33408 - 33284) = 66692, not a multiple of 8
    _refused(lambda: _pack(PACK, tailBlockNum=1, smallCoreDataNum=33284), "core 2 starts at element 66692",
             "multiple of 8")


@pytest.mark.parametrize("change,words", [
    # the last core (2) starts at 66816, its last tile at 66816 + 16768 = 83584; 100000 - 83584 = 16416 elements
    (dict(lastCalcLength=16447), ["core 2 tile 1", "lastCalcLength=16447", "y[12496, 12503)"]),
    (dict(lastCopyLength=0), ["core 2 tile 1", "lastCopyLength=0", "x[83584, 100000)", "set lastCopyLength=16416"]),
    (dict(lastCopyLength=16408), ["core 2 tile 1", "x[83584, 99992)", "set lastCopyLength=16416"]),
    (dict(rightPaddingElemNums=9), ["core 2 tile 1", "rightPaddingElemNums=9", "32 bytes"]),
    (dict(lastCalcLength=16832), ["core 2 tile 1", "needs 16832 elements", "tileDataNum=16768"]),
])
def test_pack_last_tile(change, words):
    _refused(lambda: _pack(PACK, **change), *words)


def test_pack_partial_last_byte_needs_padding():
    # 29996 halves on 1 core (docs/ops/sign_bits.md §3.4): tiles of 15104, the last tile starts at 15104 and holds
    # 14892 elements, 14892 % 8 = 4: the last output byte y[3749] is half data, half padding
    x = X_F16[:29_996]
    tr = sbt.pack_tiling(x.size, "float16", core_num=1)
    assert tr.tiling.rightPaddingElemNums == 4          # ceil16(29996) - 29996 (docs/ops/sign_bits.md §3.4 step 8)
    assert np.array_equal(_pack(tr, x), golden.sign_bits_pack(x, 1))
    _refused(lambda: _pack(tr, x, rightPaddingElemNums=0), "core 0 tile 1", "y[3749, 3750)",
             "rightPaddingElemNums=0", "copies of x[15104]")


def test_pack_last_tile_longer_than_tile():
    x = X_F32[:5000]
    tr = sbt.pack_tiling(x.size, "float32", core_num=1)            # one core, one tile of 5120 elements
    _refused(lambda: _pack(tr, x, tileDataNum=2560, bigTailDataNum=256), "core 0 tile 0", "needs 5056 elements",
             "tileDataNum=2560")


def test_pack_tiling_ignores_ub_size_like_cann_and_says_so():
    # CANN's 910B pack tiling fetches the UB size and never uses it (docs/ops/sign_bits.md §3.4): same tiling data
    small = sbt.pack_tiling(X_F32.size, "float32", ub_size=16384)
    assert small.tiling == sbt.pack_tiling(X_F32.size, "float32").tiling
    assert any("ub_size=16384" in n for n in small.notes)
    assert not sbt.pack_tiling(X_F32.size, "float32").notes
    _refused(lambda: npu_sign_bits_pack(X_F32, 1, ub_size=16384), "UB overflow", "core 0")


# ---------------------------------------------------------------------------------------------------------------
# 950
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("ub_factor", [0, 7])
def test_unpack_950_zero_step(ub_factor):
    _refused(lambda: _unpack(UNPACK_950, soc="ascend950pr", ubFactor=ub_factor), f"ubFactor={ub_factor}",
             "never advances")


def test_unpack_950_misaligned_ub_factor():
    _refused(lambda: _unpack(UNPACK_950, soc="ascend950pr", ubFactor=1000), "ubFactor=1000", "multiple of 32")
    # float16 output: multiples of 16 are enough
    y = _unpack(UNPACK_950, soc="ascend950pr", dtype=1, ubFactor=144)
    assert np.array_equal(y.view(np.uint16), golden.sign_bits_unpack(X_U8, 1, "float16").view(np.uint16))


def test_950_small_steps_follow_the_tiling():
    # many UB passes per core: the access pattern has one record per pass and the result is unchanged
    y = _unpack(UNPACK_950, soc="ascend950pr", ubFactor=128)
    assert np.array_equal(y.view(np.uint32), golden.sign_bits_unpack(X_U8, 1).view(np.uint32))
    y = _pack(PACK_950, soc="ascend950pr", slotsPerTile=3)
    assert np.array_equal(y, golden.sign_bits_pack(X_F32, 1, soc="ascend950pr"))


def test_pack_950_zero_step():
    _refused(lambda: _pack(PACK_950, soc="ascend950pr", slotsPerTile=0), "slotsPerTile=0", "never advances")


@pytest.mark.parametrize("short", [1, 2, 7])
def test_pack_950_total_num_short_of_a_byte(short):
    # every y byte is still written (ceil(totalNum / 8) bytes), but the kernel packs its -1.0 pad for the last
    # `short` elements of x instead of reading them (found by the long tiling fuzz: totalNum 99998 of 100000)
    n = X_F32.size
    _refused(lambda: _pack(PACK_950, soc="ascend950pr", totalNum=n - short), f"totalNum={n - short}",
             f"x[{n - short}, {n})", f"set totalNum={n}")


def test_950_total_num_is_what_the_kernels_walk():
    # 4 cores of 256 bytes; totalNum 500 stops inside core 1: y[4000, 8000) stays unwritten
    _refused(lambda: _unpack(UNPACK_950, soc="ascend950pr", totalNum=500), "unwritten", "y[4000, 8000)",
             "core 1 tile 0")
    _refused(lambda: _unpack(UNPACK_950, soc="ascend950pr", totalNum=1016), "out of bounds", "core 3 tile 0",
             "self[768, 1016)")
    _refused(lambda: _pack(PACK_950, soc="ascend950pr", totalNum=10), "unwritten", "y[2, 12500)")


# ---------------------------------------------------------------------------------------------------------------
# property: fused == faithful == golden on every accepted 910B unpack tiling
# ---------------------------------------------------------------------------------------------------------------

_FIELDS = list(UNPACK.tiling.fields())


def _candidates(v):
    return sorted({0, 1, 32, 64, 128, 192, max(v - 64, 0), max(v - 32, 0), max(v - 1, 0), v, v + 1, v + 32, v + 64,
                   2 * v, v // 2})


@st.composite
def _perturbed(draw):
    core_num = draw(st.sampled_from([1, 2, 3, 5]))
    dtype = draw(st.sampled_from(["float32", "float16"]))
    host = sbt.unpack_tiling(X_U8.size, dtype, core_num=core_num, ub_size=16384)
    td = host.tiling
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(_FIELDS))
        td = dataclasses.replace(td, **{name: draw(st.sampled_from(_candidates(getattr(td, name))))})
    block_dim = draw(st.sampled_from(sorted({host.block_dim, host.block_dim + 1, max(host.block_dim - 1, 1)})))
    return dtype, td, block_dim


@seed(20261130)
@settings(max_examples=100, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_perturbed())
def test_fused_and_faithful_agree_on_every_accepted_tiling(case):
    dtype, td, block_dim = case
    want = golden.sign_bits_unpack(X_U8, 1, dtype).view(np.uint32 if dtype == "float32" else np.uint16)
    results = []
    for faithful in (False, True):
        try:
            y = npu_sign_bits_unpack(X_U8, 1, dtype, tiling=td, block_dim=block_dim, faithful=faithful)
        except AclnnError as e:
            assert e.status == 561002, e
            assert "core" in str(e) or "=" in str(e), e          # names the core or the field
            results.append("561002")
            continue
        results.append("ok")
        np.testing.assert_array_equal(y.view(want.dtype), want, err_msg=f"faithful={faithful} {td}")
    assert results[0] == results[1], (results, td)              # validation does not depend on the kernel
