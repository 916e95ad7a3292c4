"""Host tilings: the GroupedDynamicMxQuant UT vectors of hicann/ops-nn (reproduced field by field and byte by byte),
its tiling-rule failures, ProcessBase's per-core split, tiling validation of user data, and npu-emu's DynamicMxQuant
unit decomposition."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.mx_quant import api, kernel, tiling


def ut_words(tr):
    """The UT prints the raw tiling data as int64 words (test_grouped_dynamic_mx_quant_tiling.cpp to_string)."""
    return " ".join(str(v) for v in np.frombuffer(tr.tiling.to_bytes(), np.int64))


# hicann/ops-nn: quant/grouped_dynamic_mx_quant/tests/ut/op_host/arch35/test_grouped_dynamic_mx_quant_tiling.cpp:
# x [32, 128], groupIndex [1], CORE_NUM 64; invDstTypeMax shows as the low word of the last int64 (float + padding)
UT_CASES = [
    ("bfloat16", "float8_e4m3fn", 0, 0.0, "64 64 128 32 128 64 128 1 1 256 991054117"),
    ("float16", "float8_e4m3fn", 0, 0.0, "64 64 128 32 128 64 128 1 1 256 991054117"),
    ("bfloat16", "float8_e5m2", 0, 0.0, "64 64 128 32 128 64 128 1 1 256 932333861"),
    ("float16", "float8_e5m2", 0, 0.0, "64 64 128 32 128 64 128 1 1 256 932333861"),
    ("float16", "float8_e5m2", 1, 0.0, "64 64 128 32 128 64 128 1 1 257 932333861"),
    ("bfloat16", "float4_e2m1", 0, 0.0, "64 64 128 32 128 64 128 1 1 292 1042983595"),
    ("bfloat16", "float4_e1m2", 2, 1.875, "64 64 128 32 128 64 128 1 1 334 1057523849"),
]


@pytest.mark.parametrize("x_dtype, y_dtype, alg, dtm, want", UT_CASES)
def test_grouped_ut_vectors(x_dtype, y_dtype, alg, dtm, want):
    tr = tiling.grouped_tiling(32, 128, 1, x_dtype=x_dtype, y_dtype=y_dtype, scale_alg=alg, dst_type_max=dtm,
                               core_num=64)
    assert ut_words(tr) == want
    assert tr.block_dim == 64 and tr.workspace_size == 32 and tr.tiling.nbytes() == 88


def test_grouped_defaults_and_tails():
    tr = tiling.grouped_tiling(333, 300, 5, x_dtype="bfloat16", y_dtype="float8_e4m3fn")
    f = tr.tiling.fields()
    assert (f["totalCoreNum"], f["usedCoreNum"]) == (56, 56)                   # ascend950pr AIV (placeholder)
    assert (f["blockRowSize"], f["blockRowCount"], f["blockRowTailSize"], f["blockColSize"]) == (128, 3, 44, 64)
    assert tr.ub_size == 262144 and tiling.grouped_ub_bytes(tr.tiling) == 98304   # 3 queues x 2 x 16 KiB
    assert any("core_num" in n for n in tr.notes)


@pytest.mark.parametrize("alg, cls, dst, rm", [(0, 0, "float8_e4m3fn", "rint"), (1, 0, "float8_e5m2", "rint"),
                                               (2, 1, "float4_e2m1", "floor"), (0, 2, "float4_e2m1", "round"),
                                               (2, 3, "float4_e1m2", "round")])
def test_tiling_key_round_trip(alg, cls, dst, rm):
    key = tiling.grouped_tiling_key(alg, cls, dst, rm)
    assert tiling.decode_grouped_tiling_key(key) == (alg, cls, tiling.TPL_DST_TYPE[dst], rm)


@pytest.mark.parametrize("kw", [
    dict(x_dtype="float32"), dict(group_index_dtype="int16"), dict(y_dtype="float16"), dict(blocksize=64),
    dict(mxscale_shape=(1, 128, 3)), dict(round_mode="floor"), dict(y_dtype="float4_e2m1", scale_alg=1),
    dict(scale_alg=2), dict(y_dtype="float4_e1m2", dst_type_max=1.5), dict(y_dtype="float4_e2m1", dst_type_max=-1),
    dict(dst_type=35),
])
def test_grouped_tiling_failures(kw):
    # the UT's failing cases (wrong dtypes, blocksize 64, mxscale [1, 128, 3]) and the GetAttr rules
    args = dict(x_dtype="bfloat16", y_dtype="float8_e4m3fn")
    args.update(kw)
    with pytest.raises(AclnnError) as e:
        tiling.grouped_tiling(32, 128, 1, **args)
    assert e.value.status == 561103 and "inferred" in e.value.message


def test_grouped_tiling_fp4_odd_and_empty_groups():
    with pytest.raises(AclnnError, match="even"):
        tiling.grouped_tiling(32, 127, 1, x_dtype="bfloat16", y_dtype="float4_e2m1")
    with pytest.raises(AclnnError, match="empty"):
        tiling.grouped_tiling(32, 128, 0, x_dtype="bfloat16", y_dtype="float8_e4m3fn")


def test_process_base_split():
    # grouped_split_base.h ProcessBase, by hand: 3 cores, n = 256 (2 column tiles), groups of 100 rows (2 row
    # tiles each) -> 4 tiles per group. Group 0: head = 4 % 3 = 1 core with 2 tiles: core 0 {0, 1}, core 1 {2},
    # core 2 {3}; the rotating offset becomes 4 % 3 = 1, so group 1 starts at core 1: core 1 {0, 1}, core 2 {2},
    # core 0 {3}.
    tr = tiling.grouped_tiling(200, 256, 2, x_dtype="bfloat16", y_dtype="float8_e4m3fn", core_num=3)
    tab = kernel.grouped_tile_table(tr.tiling, np.array([100, 200], np.int32), tr.block_dim)
    got = {c: [(int(g), int(b)) for cc, _, g, _, _, b in tab if cc == c] for c in range(3)}
    assert got == {0: [(0, 0), (0, 1), (1, 3)], 1: [(0, 2), (1, 0), (1, 1)], 2: [(0, 3), (1, 2)]}


def test_access_pattern_covers_y_once():
    tr = tiling.grouped_tiling(333, 300, 5, x_dtype="bfloat16", y_dtype="float4_e2m1", core_num=7)
    ap = kernel.grouped_access(tr.tiling, np.array([10, 75, 75, 200, 333], np.int32), 333, 300, True, 7)
    from npu_emu.device.validate import validate

    assert validate(ap, ub_size=tr.ub_size).ok


@pytest.mark.parametrize("seed", range(20))
def test_row_records_cover_what_the_tiles_touch(seed):
    # _expand_rows joins a core's back-to-back tiles before expanding rows and merges touching runs after: the
    # records must still cover every element exactly as often per core as the tiles' own rows do (overlaps and
    # ranges past the end included), each record naming a tile of its core that touches its first element.
    rng = np.random.default_rng(seed)
    pitch = int(rng.choice([16, 48, 64]))
    k = int(rng.integers(1, 40))
    core = np.sort(rng.integers(0, 4, k))
    tile = np.arange(k)
    width = rng.choice([0, 8, 16, 24, pitch, pitch + 8], k)
    count = rng.choice([1, 2, 3], k)
    first = rng.integers(-8, 6 * pitch, k)
    cont = rng.random(k) < 0.6                  # mostly tiles continuing the previous one's rows, as the walk does
    for i in range(1, k):
        if cont[i]:
            first[i], count[i] = first[i - 1] + width[i - 1], count[i - 1]
    span = int(first.min()), int((first + (count - 1) * pitch + width).max())

    def coverage(c, a, b):
        cov = np.zeros((4, span[1] - span[0] + 1), np.int64)
        for cc, aa, bb in zip(c, a, b):
            cov[cc, aa - span[0]:bb - span[0]] += 1
        return cov

    rows = [(core[i], first[i] + r * pitch) for i in range(k) for r in range(count[i])]
    want = coverage([c for c, _ in rows], [a for _, a in rows],
                    [a + width[i] for i in range(k) for a in first[i] + pitch * np.arange(count[i])])
    c, t, a, b = kernel._expand_rows(core, tile, first, count, pitch, width)
    assert (coverage(c, a, b) == want).all()
    assert len(c) <= len(rows)
    for cc, tt, aa in zip(c, t, a):
        assert core[tt] == cc and any(first[tt] + r * pitch <= aa < first[tt] + r * pitch + width[tt]
                                      for r in range(count[tt])) or width[tt] == 0


# three back-to-back tiles of one core over n = 300 columns: they form one 300-column rectangle; past the pitch (a
# tail spilling into the next row) they stay apart so that an overlap report names the two tiles; a tile of another
# row count is not part of the same rectangle
@pytest.mark.parametrize("widths, counts, joined", [
    ((128, 128, 44), (64, 64, 64), [(0, 64, 300)]),
    ((128, 128, 100), (64, 64, 64), [(0, 64, 128), (128, 64, 128), (256, 64, 100)]),
    ((128, 128, 44), (64, 64, 7), [(0, 64, 256), (256, 7, 44)]),
])
def test_tiles_join_only_into_rectangles_within_the_pitch(widths, counts, joined):
    widths, counts = np.array(widths), np.array(counts)
    first = np.concatenate(([0], np.cumsum(widths)[:-1]))
    _, tile, f, c, w = kernel._join_tiles(np.zeros(3, np.int64), np.arange(3), first, counts, 300, widths)
    assert list(zip(f.tolist(), c.tolist(), w.tolist())) == joined
    assert tile.tolist() == [int(np.flatnonzero(first == a)[0]) for a, _, _ in joined]


@pytest.mark.parametrize("change, match", [
    (dict(blockRowTailSize=100), "twice|out of|outside|past"),     # a tail tile spilling into the next row
    (dict(usedCoreNum=0), "usedCoreNum"),
    (dict(blockRowSize=120, blockRowCount=3, blockRowTailSize=60), "multiple of 16"),
    (dict(blockColSize=32), "64 rows"),
    # fields the njit tile walk trusts: rejected before it runs (it would read groupIndex past its end, or build
    # tables of 2^31 tiles / 2^40 cores), with validation on or off
    (dict(groupNum=66), "groupNum = 66 but groupIndex holds 5"),
    (dict(groupNum=4), "groupNum = 4 but groupIndex holds 5"),
    (dict(blockRowCount=2 ** 31 - 1), "blockRowCount = 2147483647"),
    (dict(usedCoreNum=2 ** 40, totalCoreNum=2 ** 40), "usedCoreNum"),
    (dict(rowSize=600), "rowSize/colSize = 600/333 but x is"),
])
@pytest.mark.parametrize("validate", [True, False])
def test_bad_user_tiling_is_rejected(change, match, validate):
    x = np.ones((333, 300), np.float32).astype(ml_dtypes.bfloat16)
    gi = np.array([10, 75, 75, 200, 333], np.int32)
    fields = tiling.grouped_tiling(333, 300, 5, x_dtype="bfloat16", y_dtype="float8_e4m3fn").tiling.fields()
    fields.update(change)
    with pytest.raises(AclnnError, match=match) as e:
        api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24, tiling=fields, validate=validate)
    assert e.value.status == 561002


def test_unvalidated_user_tiling_cannot_reach_past_the_rows():
    # validate=False skips the access validator, but column tiles ending past n would read and write out of bounds
    # in njit: 3 tiles of 128 columns over n = 300 end at column 384
    x = np.ones((333, 300), np.float32).astype(ml_dtypes.bfloat16)
    gi = np.array([333], np.int32)
    fields = tiling.grouped_tiling(333, 300, 1, x_dtype="bfloat16", y_dtype="float8_e4m3fn").tiling.fields()
    fields.update(blockRowTailSize=128)
    with pytest.raises(AclnnError, match="end at column 384, past n = 300") as e:
        api.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24, tiling=fields, validate=False)
    assert e.value.status == 561002


# --- DynamicMxQuant unit decomposition ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape, axis, bs", [((8192, 7168), -1, 32), ((8192, 7168), 0, 32), ((3, 70, 6), 1, 64),
                                             ((5,), 0, 32), ((2, 3, 4, 100), 3, 1024)])
def test_dynamic_units_cover_every_block_pair(shape, axis, bs):
    tr = tiling.dynamic_unit_tiling(shape, axis, x_dtype="bfloat16", y_dtype="float4_e2m1", block_size=bs)
    td = tr.tiling
    ax = axis % len(shape)
    assert td.preAxisSize * td.axisSize * td.postAxisSize == int(np.prod(shape))
    assert td.pairNum == -(-(-(-shape[ax] // bs)) // 2)
    assert td.unitNum == td.preAxisSize * td.pairChunkNum * td.postChunkNum
    first, count = tiling.unit_ranges(td)
    assert count.sum() == td.unitNum and first[0] == 0 and (first[1:] == first[:-1] + count[:-1]).all()
    assert count.max() - count.min() <= 1 and td.usedCoreNum <= 56
    assert td.pairChunk * td.pairChunkNum >= td.pairNum and td.postChunk * td.postChunkNum >= td.postAxisSize
    assert any("not reproduced" in n for n in tr.notes)
    access = kernel.dynamic_access(td, True, "bfloat16")
    from npu_emu.device.validate import validate

    assert validate(access, ub_size=tr.ub_size).ok


def test_dynamic_fp4_chunks_never_split_a_byte():
    tr = tiling.dynamic_unit_tiling((64, 5, 1000), 0, x_dtype="float32", y_dtype="float4_e2m1", ub_budget=4096)
    assert tr.tiling.postChunk % 2 == 0 and tr.tiling.postChunk < 5000


def test_dynamic_ub_too_small():
    with pytest.raises(AclnnError, match="UB") as e:
        tiling.dynamic_unit_tiling((4, 64), -1, x_dtype="bfloat16", y_dtype="float8_e4m3fn", ub_size=64)
    assert e.value.status == 561002
