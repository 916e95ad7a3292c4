"""GroupedMatmul's user tiling and launch validation (docs/ops/grouped_matmul.md §5): a caller's GMMTilingData is
checked field by field and its walk by npu_emu.device.validate (coverage, overlap, bounds, UB) before anything runs;
a refused tiling leaves an aclnn ``out`` untouched."""

import dataclasses

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, golden, launch, tiling

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(3737)
E, M, K, N = 3, 50, 64, 48
X = RNG.integers(-128, 128, (M, K), dtype=np.int16).astype(np.int8)
W = RNG.integers(-128, 128, (E, K, N), dtype=np.int16).astype(np.int8)
SCALE = RNG.uniform(1e-3, 1e-2, (E, N)).astype(BF16)
PT = RNG.uniform(1e-2, 1e-1, M).astype(np.float32)
GL = np.array([7, 7, 41], np.int64)                     # an empty group; rows 41.. belong to no group


def host_td(y_dtype="bfloat16", per_token=True):
    s = tiling.GmmShape(group_num=E, m=M, k=K, n=N, x_dtype="int8", w_dtype="int8", y_dtype=y_dtype,
                        scale_dtype="bfloat16" if y_dtype != "int32" else None, per_token=per_token)
    return tiling.grouped_matmul_tiling(s).tiling


def with_fields(td, base=None, cube=None, arr=None):
    return dataclasses.replace(
        td, gmmBaseParams=dataclasses.replace(td.gmmBaseParams, **(base or {})),
        mmTilingData=dataclasses.replace(td.mmTilingData, **(cube or {})),
        gmmArray=dataclasses.replace(td.gmmArray, **(arr or {})))


def gmm_bf16(**kw):
    return api.npu_grouped_matmul([X], [W], scale=[SCALE], per_token_scale=[PT], group_list=GL, split_item=3,
                                  group_type=0, output_dtype="bfloat16", **kw)[0]


def bits(a):
    return np.asarray(a).view(np.uint16)


GOLD = golden.grouped_matmul_quant(X, W, GL, scale=SCALE, per_token_scale=PT, out_dtype="bfloat16")


@pytest.mark.parametrize("form", ["instance", "dict", "bytes"])
def test_host_tiling_given_back_gives_the_same_bits(form):
    td = host_td()
    user = {"instance": td, "dict": td.fields(), "bytes": td.to_bytes()}[form]
    assert np.array_equal(bits(gmm_bf16(tiling=user)), bits(GOLD))


@pytest.mark.parametrize("cores,base_m,single_n", [(1, 16, 0), (5, 32, 0), (7, 16, 32), (40, 64, 0)])
def test_other_valid_tilings_give_the_same_bits(cores, base_m, single_n):
    td = with_fields(host_td(), base={"coreNum": cores, "singleN": single_n}, cube={"baseM": base_m, "baseN": 16})
    y, tr = api.npu_grouped_matmul([X], [W], scale=[SCALE], per_token_scale=[PT], group_list=GL, split_item=3,
                                   group_type=0, output_dtype="bfloat16", tiling=td, trace=True)
    assert tr.block_dim == cores and "user tiling" in tr.notes
    assert np.array_equal(bits(y[0]), bits(GOLD))


@pytest.mark.parametrize("base,cube,arr,words", [
    ({"groupNum": 4}, None, None, "groupNum = 4"),
    ({"coreNum": 0}, None, None, "coreNum = 0"),
    (None, {"baseM": 0}, None, "all must be positive"),
    (None, {"baseN": 24}, None, "multiples of 16"),
    ({"singleN": 40}, {"baseN": 16}, None, "singleN = 40"),
    (None, None, {"kList": (32,) + (0,) * 127}, "never splits K"),
    (None, None, {"mList": (5,) + (0,) * 127}, "mList[0] = 5"),
    ({"m": 49}, None, None, "x has 50 rows"),
    ({"quantParam": 0}, None, None, "hasBias / quantParam"),
    ({"ubCalSize": 8}, None, None, "ubCalSize = 8"),
])
def test_fields_the_walk_cannot_show(base, cube, arr, words):
    with pytest.raises(AclnnError) as ei:
        gmm_bf16(tiling=with_fields(host_td(), base, cube, arr))
    assert ei.value.status == 561002 and words in str(ei.value)


def test_wrong_n_is_caught_by_the_access_check():
    # nList[0] is the row stride of the workspace and of y: 40 leaves elements unwritten, 56 writes past y
    for n, words in ((40, "unwritten"), (56, "out of bounds")):
        with pytest.raises(AclnnError) as ei:
            gmm_bf16(tiling=with_fields(host_td(), arr={"nList": (n,) + (0,) * 127}))
        assert ei.value.status == 561002 and words in str(ei.value), str(ei.value)


def test_ub_overflow_is_caught():
    td = host_td()
    with pytest.raises(AclnnError) as ei:
        gmm_bf16(tiling=with_fields(td, base={"ubCalSize": 64 * 1024, "ubRestBytes": 0}))
    assert ei.value.status == 561002 and "UB" in str(ei.value)


def test_validate_false_skips_the_access_check_but_not_the_field_checks():
    td = with_fields(host_td(), base={"ubCalSize": 64 * 1024})
    assert np.array_equal(bits(gmm_bf16(tiling=td, validate=False)), bits(GOLD))     # UB is not modelled in bytes
    with pytest.raises(AclnnError):
        gmm_bf16(tiling=with_fields(host_td(), cube={"baseM": 0}), validate=False)


def test_int32_out_walk_is_checked_too():
    td = host_td("int32", per_token=False)
    y = api.npu_grouped_matmul([X], [W], group_list=GL, split_item=3, group_type=0, output_dtype="int32",
                               tiling=td)[0]
    assert np.array_equal(y, golden.grouped_matmul_quant(X, W, GL, out_dtype="int32"))
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([X], [W], group_list=GL, split_item=3, group_type=0, output_dtype="int32",
                               tiling=with_fields(td, arr={"nList": (40,) + (0,) * 127}))
    assert ei.value.status == 561002 and "unwritten" in str(ei.value)


def test_walk_blocks_cover_the_groups_exactly_once():
    tr = tiling.grouped_matmul_tiling(tiling.GmmShape(group_num=E, m=M, k=K, n=N, x_dtype="int8", w_dtype="int8",
                                                      y_dtype="int32"), core_num=5)
    ent = launch.entries(GL, 0, E, M)
    ap = launch.gmm_access(tr, ent, api.checks.GmmArgs("int8", "int8", "int32", (M, K), (E, K, N)), "acc_i",
                           [("acc_i", M * N, np.int32), ("y", 41 * N * 4, np.uint8)], 4)
    w = ap.records[ap.records["mode"] == 1]
    cover = np.zeros(41 * N * 4, np.int64)
    for a, b in zip(w["start"], w["stop"]):
        cover[a:b] += 1
    assert (cover == 1).all()


def test_aclnn_refused_tiling_leaves_out_untouched():
    out = np.full((M, N), 7, np.uint16).view(BF16)
    st, _, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [X], [W], None, [SCALE], None, None, None, [PT], GL, None, None, None, 3, 0, 0, 0, [out],
        tiling=with_fields(host_td(), arr={"nList": (56,) + (0,) * 127}))
    assert st == 561002 and ex is None and (out.view(np.uint16) == 7).all()


@pytest.mark.parametrize("gl, kind, groups, want", [
    # cumulative sizes (type 0): an empty group, rows past the last value in no group; only the first `groups` count
    ([7, 7, 41], 0, 3, ([0, 1, 2], [0, 7, 7], [7, 0, 34])),
    ([5, 9, 12, 20], 0, 2, ([0, 1], [0, 5], [5, 4])),
    ([6], 0, 1, ([0], [0], [6])),
    ([], 0, 3, ([], [], [])),
    # counts (type 1)
    ([3, 0, 4], 1, 3, ([0, 1, 2], [0, 3, 3], [3, 0, 4])),
    ([2], 1, 1, ([0], [0], [2])),
    # sparse [weight, count] rows (type 2), up to the first non-positive count
    ([[2, 3], [0, 5], [1, 0], [2, 9]], 2, 3, ([2, 0], [0, 3], [3, 5])),
])
def test_group_entries(gl, kind, groups, want):
    w, row, m = launch.entries(np.array(gl, np.int64).reshape(-1, 2) if kind == 2 else np.array(gl, np.int64),
                               kind, groups, 64)
    for got, exp in zip((w, row, m), want):
        assert got.dtype == np.int64 and got.tolist() == exp
