"""DynamicQuant host tiling: the key choice at every boundary of op_host/dynamic_quant_tiling.cpp, the core splits.

Expected values derived by hand from the C++ on ascend910b2 (48 AIV, UB 196608 - 256 = 196352 bytes):
maxUbLen (key 10) = min((196352 - 1024 - 3392) // 11 // 64 * 64, 16320) = 16320, with smooth // 15 -> 12736;
maxUse = 195328; key 6 when 11 * align16(rowLen) > 195328 (rowLen > 17744), with smooth 17 * align16 > 195328
(rowLen > 11488); DB (2/3) when 13 * align16(rowLen) < 195328 (rowLen <= 15024), with smooth 19 * align16.
"""

import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.dynamic_quant import tiling as T


@pytest.mark.parametrize("rows, L, smooth, key", [
    (4, 4096, False, 100), (384, 4096, False, 100), (3, 4096, False, 10), (385, 4096, False, 10),
    (4, 5120, True, 100), (10, 10240, False, 100), (4, 4104, False, 10), (4, 10240, True, 100),
    (5, 127, False, 2), (5, 128, False, 10), (5, 136, False, 10), (5, 130, False, 2), (5, 100, False, 2),
    (5, 16320, False, 10), (5, 16328, False, 0), (5, 16384, False, 0), (5, 15022, False, 2), (5, 15026, False, 0),
    (5, 12736, True, 10), (5, 12744, True, 6), (5, 12800, True, 6), (5, 11484, True, 0), (5, 11490, True, 6),
    (5, 10000, True, 10), (5, 10004, True, 2),
    (3, 17744, False, 0), (3, 17752, False, 6), (3, 20000, False, 6),
])
def test_key_bf16(rows, L, smooth, key):
    assert T.tiling(rows, L, has_smooth=smooth).tiling_key == key


def test_key_half_and_groups():
    assert T.tiling(5, 130, x_dtype="float16").tiling_key == 3
    assert T.tiling(5, 16384, x_dtype="float16").tiling_key == 1
    assert T.tiling(5, 256, has_smooth=True, has_group=True, group_num=3).tiling_key == 7
    assert T.tiling(5, 4096, has_smooth=True, has_group=True, group_num=3).tiling_key == 7   # no 100 with groups
    assert T.tiling(5, 11490, has_smooth=True, has_group=True, group_num=3).tiling_key == 8  # 32+17*11504 > 195328
    assert T.tiling(5, 11488, has_smooth=True, has_group=True, group_num=3).tiling_key == 7  # = 195328
    # group_index without smooth_scales: groupNum stays 0, keys 100 / 10 excluded, the plain keys run
    assert T.tiling(5, 4096, has_group=True, group_num=3).tiling_key == 2
    assert T.tiling(5, 4096, asymmetric=True).tiling_key == 2                               # V2: no 100 / 10
    assert T.tiling(5, 4096, y_int4=True).tiling_key == 10                                   # int4: no 100


def test_splits():
    r = T.tiling(100, 130)             # 48 cores: 4 heads of 3 rows, 44 tails of 2
    td = r.tiling
    assert (td.coreNum, td.headCoreNum, td.rowPerHeadCore, td.rowPerTailCore) == (48, 4, 3, 2)
    assert (td.multiRowNumHeadCore, td.multiRowNumTailCore) == (3, 2)
    r = T.tiling(300, 256)             # key 10: 63 rows per UB, 4 loops -> 4 cores, extra 48 -> 12 each
    td = r.tiling
    assert r.tiling_key == 10 and (td.coreNum, td.headCoreNum, td.rowPerHeadCore) == (4, 0, 76)
    r = T.tiling(10, 4096)             # key 100: 4 rows per UB, 3 loops -> 3 cores of 4, 4, 2
    td = r.tiling
    assert (td.coreNum, td.headCoreNum, td.rowPerHeadCore, td.rowPerTailCore, td.multiRowNumHeadCore) == (3, 2, 4, 2, 4)
    r = T.tiling(3, 20000)             # key 6: chunks of 195328 // 19 // 128 * 128 = 10240
    td = r.tiling
    assert (td.innerLoopEle, td.innerLoopTimes, td.innerLoopTail) == (10240, 1, 9760)
    for rows, L in ((100, 130), (300, 256), (10, 4096), (3, 20000), (1000, 512), (47, 128)):
        res = T.tiling(rows, L)
        T.validate(res, rows, L, False)
        starts = [T.core_rows(res.tiling, res.tiling_key, b) for b in range(res.block_dim)]
        assert sum(n for _, n, _ in starts) == rows


def test_validate_rejects():
    import dataclasses
    res = T.tiling(100, 130)
    bad = dataclasses.replace(res, tiling=dataclasses.replace(res.tiling, rowPerTailCore=3))
    with pytest.raises(AclnnError) as e:
        T.validate(bad, 100, 130, False)
    assert e.value.status == 161002 and "cover" in str(e.value)
    with pytest.raises(AclnnError):
        T.validate(dataclasses.replace(res, tiling_key=5), 100, 130, False)
    with pytest.raises(AclnnError):
        T.validate(res, 100, 130, True)
