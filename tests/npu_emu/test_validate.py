"""Tiling validation: each failure kind from deliberately bad tiling data of the example op, good tilings of
several shapes, tolerated device over-runs, message content and speed at real tile counts."""

import dataclasses
import time

import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.example.kernel import add_one_access
from npu_emu.kernels.example.tiling import add_one_tiling, ub_bytes_per_core
from npu_emu.device.validate import AccessPattern, GmOverrun, tile_ranges, validate


def tiled(n, **kw):
    tr = add_one_tiling(n, **kw)
    return tr.tiling, tr.block_dim, tr.ub_size


def check(td, block_dim, n, ub):
    return validate(add_one_access(td, block_dim, n), ub_size=ub)


# ---- good tilings -------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 64, 65, 1000, 1001, 4099, 100_003])
@pytest.mark.parametrize("core_num,ub_size", [(None, None), (1, 256), (3, 1024), (48, 512), (5, 64)])
def test_good_tilings_validate(n, core_num, ub_size):
    td, block_dim, ub = tiled(n, core_num=core_num, ub_size=ub_size)
    report = check(td, block_dim, n, ub)
    assert report.ok, report.errors
    # The device copies whole 32-byte blocks: the last core reads/writes [n, ceil8(n)) past the end.
    pad = -(-n // 8) * 8 - n
    expected = [] if pad == 0 else [("x", "read", 4 * n, 4 * (n + pad), block_dim - 1),
                                    ("y", "write", 4 * n, 4 * (n + pad), block_dim - 1)]
    assert report.overruns == expected


def test_good_tiling_has_big_small_cores_and_tails():
    # n = 1001 on 3 cores with 1024 B UB (see test_launch for the derivation): 126 blocks, 42 per core,
    # tile 8 blocks -> 6 tiles of which the last is a 2-block tail; the tiling must exercise those paths.
    td, block_dim, _ = tiled(1001, core_num=3, ub_size=1024)
    assert (block_dim, td.tileDataNum, td.finalSmallTileNum, td.smallTailDataNum) == (3, 64, 6, 16)
    td, block_dim, _ = tiled(1001 + 16, core_num=3, ub_size=1024)
    assert td.tailBlockNum == 2 and td.bigCoreDataNum == td.smallCoreDataNum + 8


# ---- each failure kind ----------------------------------------------------------------------------------
def test_gap_from_missing_tile():
    # 3 cores x 6 tiles (5 x 64 + a 16-element tail = 336 each). With 5 tiles, tile 4 becomes the tail:
    # 4 x 64 + 16 = 272, so each core leaves [start + 272, start + 336) unwritten.
    n = 1001
    td, block_dim, ub = tiled(n, core_num=3, ub_size=1024)
    bad = dataclasses.replace(td, finalSmallTileNum=td.finalSmallTileNum - 1)
    report = check(bad, block_dim, n, ub)
    assert not report.ok and report.counts == {"unwritten output": 3}
    assert report.errors[0] == ("unwritten output: y[272, 336) is written by no core: it lies between core 0 "
                                "tile 4 (ends at 272) and core 1 tile 0 (starts at 336); check the tile count, "
                                "tileDataNum and the tail length")
    # core 2 starts at 672 and now ends at 944; the output ends at 1001.
    assert "y[944, 1001) is written by no core: the last write ends at 944 (core 2 tile 4)" in report.errors[2]


def test_overlap_from_long_tail():
    # A tail 8 elements too long runs into the next core's first tile (and past the end for the last core).
    n = 1001
    td, block_dim, ub = tiled(n, core_num=3, ub_size=1024)
    bad = dataclasses.replace(td, smallTailDataNum=td.smallTailDataNum + 8)
    report = check(bad, block_dim, n, ub)
    assert report.counts == {"out of bounds": 2, "overlapping writes": 2}    # 2 core boundaries
    assert any(e.startswith("overlapping writes: y[336, 344) is written twice: by core 0 tile 5 (y[320, 344)) "
                            "and by core 1 tile 0 (y[336, 400)); two cores overlap") for e in report.errors)
    # core 2 ends at 1008 + 8 = 1016; the tolerance is 1008 - 1001 = 7 elements.
    assert any("core 2 tile 5 writes y[992, 1016) but y has 1001 elements (float32) + 7 tolerated device "
               "over-run: ends 8 element(s) too far" in e for e in report.errors)


def test_overlap_within_one_core():
    ap = AccessPattern(1)
    ap.gm("y", 100, np.float32, output=True)
    ap.write("y", 0, [0, 1], [0, 40], [50, 100])
    report = validate(ap)
    assert report.errors == ["overlapping writes: y[40, 50) is written twice: by core 0 tile 0 (y[0, 50)) and by "
                             "core 0 tile 1 (y[40, 100)); two tiles of one core overlap: check tileDataNum "
                             "against the tile count and tail"]


def test_out_of_bounds_from_extra_big_core():
    # One big core too many: cores 31..47 each start one block (8 elements) later, consistently, so nothing
    # overlaps, but core 47 starts at 47*24 - 8*(47-31) = 1000 and ends at 1016, 8 past the tolerated 1008.
    n = 1001
    td, block_dim, ub = tiled(n, core_num=48)
    assert (td.tailBlockNum, td.bigCoreDataNum, td.smallCoreDataNum) == (30, 24, 16)
    bad = dataclasses.replace(td, tailBlockNum=td.tailBlockNum + 1)
    report = check(bad, block_dim, n, ub)
    assert report.counts == {"out of bounds": 2}               # x read and y write of core 47
    assert report.errors[0] == ("out of bounds: core 47 tile 0 reads x[1000, 1016) but x has 1001 elements "
                                "(float32) + 7 tolerated device over-run: ends 8 element(s) too far; check the "
                                "tile/tail lengths and the big/small core split (tailBlockNum)")


def test_out_of_bounds_before_the_start():
    ap = AccessPattern(2)
    ap.gm("x", 64, np.uint8)
    ap.read("x", [0, 1], 0, [-8, 32], [32, 64])
    report = validate(ap)
    assert report.errors == ["out of bounds: core 0 tile 0 reads x[-8, 32) but x has 64 elements (uint8): starts "
                             "8 element(s) before its base; check the core's start offset"]


def test_ub_overflow():
    # The tiling was computed for 4096 B of UB (2 queues x 2 slots x 256 floats) but the core has 2048.
    n = 100_000
    td, block_dim, ub = tiled(n, core_num=4, ub_size=4096)
    assert ub_bytes_per_core(td) == 4096
    report = check(td, block_dim, n, 2048)
    assert report.counts == {"UB overflow": 4}
    assert report.errors[0] == ("UB overflow: core 0 (Init) needs 4096 bytes of UB but 2048 are available "
                                "(2048 too many); reduce tileDataNum/buffer count or pass a larger ub_size=")
    assert validate(add_one_access(td, block_dim, n), ub_size=None).ok      # None: no UB check (kirin9020)


def test_unwritten_output_entirely_and_inputs_need_no_coverage():
    ap = AccessPattern(1)
    ap.gm("x", 100, np.float32)
    ap.gm("y", 10, np.float32, output=True)
    ap.read("x", 0, 0, 0, 10)                                # partial read of an input is fine
    report = validate(ap)
    assert report.errors == ["unwritten output: y (10 elements) is never written by any core"]


def test_bad_records():
    ap = AccessPattern(2)
    ap.gm("y", 10, np.int32, output=True)
    ap.write("y", [0, 2, 1], 0, [0, 5, 8], [5, 10, 4])
    report = validate(ap)
    assert report.counts["bad record"] == 2
    assert "core 2 tile 0 writes y: core index outside [0, block_dim=2)" in report.errors[0]
    assert "y[8, 4): stop < start" in report.errors[1]


# ---- tolerated over-runs ---------------------------------------------------------------------------------
def test_overrun_is_diagnostic_only_within_the_declared_limit():
    def pattern(limit):
        ap = AccessPattern(2)
        ap.gm("y", 100, np.float32, output=True, overrun=limit)
        ap.write("y", [0, 1, 1], [0, 0, 1], [0, 64, 96], [64, 96, 104])
        return validate(ap)

    tolerated = pattern(8)
    assert tolerated.ok
    assert tolerated.overruns == [GmOverrun("y", "write", 400, 416, 1)]
    assert tolerated.overruns[0] == ("y", "write", 400, 416, 1)      # the trace's gm_overrun record shape
    strict = pattern(0)
    assert strict.counts == {"out of bounds": 1} and strict.overruns == []
    too_far = pattern(3)
    assert too_far.counts == {"out of bounds": 1}


def test_strict_mode_turns_tolerated_overruns_into_errors():
    td, block_dim, ub = tiled(1001)
    ap = add_one_access(td, block_dim, 1001)
    assert validate(ap, ub_size=ub).ok
    strict = validate(ap, ub_size=ub, tolerate_overruns=False)
    assert strict.counts == {"out of bounds": 2} and strict.overruns == []
    assert "core 47 tile 0 writes y[992, 1008) but y has 1001 elements (float32): ends 7" in strict.errors[1]


def test_corrupt_tile_count_is_a_clear_error():
    td, block_dim, ub = tiled(1001, core_num=3, ub_size=1024)
    with pytest.raises(AclnnError) as e:
        add_one_access(dataclasses.replace(td, finalSmallTileNum=2**40), block_dim, 1001)
    assert e.value.status == 561002 and "core 0: 1099511627776" in e.value.message


def test_overruns_merge_per_core_and_mode():
    ap = AccessPattern(2)
    ap.gm("x", 10, np.uint16, overrun=20)
    ap.read("x", [1, 1, 0], [0, 1, 0], [8, 14, 0], [14, 20, 8])
    assert validate(ap).overruns == [GmOverrun("x", "read", 20, 40, 1)]


# ---- messages, scale ---------------------------------------------------------------------------------------
def test_messages_are_capped_but_counted():
    ap = AccessPattern(1)
    ap.gm("y", 2000, np.float32, output=True)
    starts = np.arange(0, 2000, 20)
    ap.write("y", 0, np.arange(starts.size), starts, starts + 10)   # 100 gaps of 10
    report = validate(ap, max_messages=10)
    assert report.counts == {"unwritten output": 100}
    assert len(report.errors) == 11
    assert report.errors[-1] == "unwritten output: ... and 90 more (first 10 shown)"


def test_raise_if_failed():
    n = 1001
    td, block_dim, ub = tiled(n, core_num=3, ub_size=1024)
    report = check(dataclasses.replace(td, finalSmallTileNum=1), block_dim, n, ub)
    with pytest.raises(AclnnError) as e:
        report.raise_if_failed()
    assert e.value.status == 561002
    # one tile per core, and it is the 16-element tail: core 0 writes only y[0, 16) of its [0, 336)
    assert "tiling validation failed" in e.value.message and "y[16, 336)" in e.value.message
    check(td, block_dim, n, ub).raise_if_failed()           # ok: no exception


def test_tile_ranges_matches_a_plain_loop():
    rng = np.random.default_rng(7)
    core_start = rng.integers(0, 1000, 6)
    tile_num = rng.integers(0, 5, 6)
    tile_len = rng.integers(1, 50, 6)
    tail = rng.integers(1, 50, 6)
    expected = []
    for c in range(6):
        for t in range(tile_num[c]):
            s = core_start[c] + t * tile_len[c]
            expected.append((c, t, s, s + (tail[c] if t == tile_num[c] - 1 else tile_len[c])))
    got = list(zip(*(a.tolist() for a in tile_ranges(core_start, tile_num, tile_len, tail))))
    assert got == expected


def test_validation_is_fast_at_real_tile_counts():
    # 1e9 + 3 floats on 910B2: 48 cores x 1698 tiles = 81 504 tiles, 163 008 GM records (SignBitsUnpack of
    # 125 MB has 52 800 tiles). Vectorised validation takes well under a second; a per-record Python loop or
    # a quadratic overlap test would not.
    n = 10**9 + 3
    td, block_dim, ub = tiled(n)
    t0 = time.perf_counter()
    ap = add_one_access(td, block_dim, n)
    report = validate(ap, ub_size=ub)
    elapsed = time.perf_counter() - t0
    assert len(ap.records) == 2 * block_dim * td.finalSmallTileNum == 163_008
    assert report.ok and elapsed < 3.0, elapsed
    bad = validate(add_one_access(dataclasses.replace(td, smallTailDataNum=td.smallTailDataNum + 8),
                                  block_dim, n), ub_size=ub)
    # 125 000 001 blocks over 48 cores: 33 big cores, then small cores 33..47; the longer small tail runs into
    # the next core for cores 33..46.
    assert td.tailBlockNum == 33 and bad.counts["overlapping writes"] == 14
