"""User-supplied tiling data: every tiling branch gives the golden's bits, and bad tilings are reported in words
(which core, which tile, which range) before the kernel runs."""

import dataclasses

import numba
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.sign_bits import golden as golden
from npu_emu.kernels.sign_bits.tiling import SignBitsPackTilingData, SignBitsUnpackTilingData, unpack_tiling
from npu_emu.ops import npu_sign_bits_pack, npu_sign_bits_unpack


def _bits(a):
    return np.asarray(a).view(np.uint32 if a.dtype.itemsize == 4 else np.uint16)


X = np.random.default_rng(7).integers(0, 256, 1000, dtype=np.uint8)       # ceil64 = 1024: 16 blocks


@pytest.mark.parametrize("fields,block_dim", [
    # one core, one tile covering everything (the host's choice for N = 1000)
    (dict(smallCoreDataNum=1024, bigCoreDataNum=1088, finalBigTileNum=1, finalSmallTileNum=1, tileDataNum=3968,
          smallTailDataNum=1024, bigTailDataNum=1088, tailBlockNum=0, bufferOpen=0), 1),
    # 3 cores: 1 big (6 blocks) + 2 small (5 blocks), tiles of 2 blocks with tails, double buffer
    (dict(smallCoreDataNum=320, bigCoreDataNum=384, finalBigTileNum=3, finalSmallTileNum=3, tileDataNum=128,
          smallTailDataNum=64, bigTailDataNum=128, tailBlockNum=1, bufferOpen=1), 3),
    # 16 cores of one block each, single buffer
    (dict(smallCoreDataNum=64, bigCoreDataNum=128, finalBigTileNum=1, finalSmallTileNum=1, tileDataNum=3968,
          smallTailDataNum=64, bigTailDataNum=128, tailBlockNum=0, bufferOpen=0), 16),
])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_unpack_user_tilings_match_golden(fields, block_dim, dtype):
    td = SignBitsUnpackTilingData(**fields)
    want = golden.sign_bits_unpack(X, 1, dtype)
    for tiling in (td, fields, td.to_bytes()):
        y = npu_sign_bits_unpack(X, 1, dtype, tiling=tiling, block_dim=block_dim)
        assert np.array_equal(_bits(y), _bits(want))


def _unpack_err(fields, block_dim):
    td = SignBitsUnpackTilingData(**fields)
    with pytest.raises(AclnnError) as e:
        npu_sign_bits_unpack(X, 1, 0, tiling=td, block_dim=block_dim)
    assert e.value.status == 561002
    return str(e.value)


GOOD3 = dict(smallCoreDataNum=320, bigCoreDataNum=384, finalBigTileNum=3, finalSmallTileNum=3, tileDataNum=128,
             smallTailDataNum=64, bigTailDataNum=128, tailBlockNum=1, bufferOpen=1)


def test_gap_is_reported():
    msg = _unpack_err(GOOD3, 2)              # the third core never runs: its range stays unwritten
    assert "y" in msg and "no tile writes" in msg or "not written" in msg or "unwritten" in msg


def test_overlap_is_reported():
    bad = dict(GOOD3, smallTailDataNum=128)  # each small core's last tile runs 64 bytes into the next core
    msg = _unpack_err(bad, 3)
    assert "core" in msg and "tile" in msg


def test_out_of_bounds_is_reported():
    msg = _unpack_err(GOOD3, 4)              # a fourth core starts past the end of self
    assert "core 3" in msg


def test_ub_overflow_is_reported():
    bad = dict(GOOD3, tileDataNum=8192)
    td = SignBitsUnpackTilingData(**bad)
    with pytest.raises(AclnnError) as e:
        npu_sign_bits_unpack(X, 1, 0, tiling=td, block_dim=1)
    assert e.value.status == 561002 and "UB" in str(e.value)


def test_validate_false_skips_checks_but_never_writes_outside():
    bad = dict(GOOD3, smallTailDataNum=128)
    y = npu_sign_bits_unpack(X, 1, 0, tiling=bad, block_dim=3, validate=False)
    assert y.shape == (1, 8000)


def test_pack_user_tiling_and_gap():
    x = np.random.default_rng(3).standard_normal(1000).astype(np.float32)
    td = SignBitsPackTilingData(smallCoreDataNum=128, bigCoreDataNum=256, finalBigTileNum=2, finalSmallTileNum=1,
                                tileDataNum=128, smallTailDataNum=128, bigTailDataNum=128, tailBlockNum=7,
                                usedDb=0, lastCopyLength=104, rightPaddingElemNums=0, lastCalcLength=128)
    # 7 big cores of 256 elements already reach 1792 > N = 1000: validation must say so.
    with pytest.raises(AclnnError) as e:
        npu_sign_bits_pack(x, 1, tiling=td, block_dim=8)
    assert e.value.status == 561002
    # N = 1000 f32 is 8 units of 128: 3 big cores (2 units) + 2 small ones; the last starts at 896 and holds
    # 104 real elements (lastCopyLength), padded to 104 (multiple of 8: no right padding), compared as 128.
    good = dataclasses.replace(td, tailBlockNum=3, lastCopyLength=104)
    y = npu_sign_bits_pack(x, 1, tiling=good, block_dim=5)
    assert np.array_equal(y, golden.sign_bits_pack(x, 1))


def test_thread_count_invariance():
    x = np.random.default_rng(11).integers(0, 256, 300_001, dtype=np.uint8)
    f = np.random.default_rng(12).standard_normal(300_001).astype(np.float32)
    old = numba.get_num_threads()
    try:
        outs = []
        for t in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(t)
            outs.append((npu_sign_bits_unpack(x, 1, 0).view(np.uint32), npu_sign_bits_pack(f, 1)))
    finally:
        numba.set_num_threads(old)
    for a, b in outs[1:]:
        assert np.array_equal(a, outs[0][0]) and np.array_equal(b, outs[0][1])


def test_every_host_tiling_branch_covered():
    # single buffer / double buffer, one core / many cores, big+small split, tails
    seen = set()
    for n in (64, 1000, 8192, 190400, 190401, 1_000_000):
        td = unpack_tiling(n, "float32").tiling
        seen.add((td.bufferOpen, td.tailBlockNum > 0, td.smallTailDataNum != td.tileDataNum))
    assert len(seen) >= 4
