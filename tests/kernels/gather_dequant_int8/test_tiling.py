"""Host tiling of GatherDequantInt8 (docs/ops/gather_dequant_int8.md §3.1, §3.2) and the npu-emu core split."""

import struct

import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.gather_dequant_int8 import tiling as T


def test_default_sample():
    tr = T.gather_dequant_int8_tiling((1024, 256), (1, 30))
    assert tr.tiling.fields() == {"numIndices": 30, "embDim": 256, "vocab": 1024}
    assert tr.tiling.to_bytes() == struct.pack("<3I", 30, 256, 1024)       # three uint32_t, 12 bytes
    assert T.GatherDequantInt8TilingData.from_bytes(tr.tiling.to_bytes()) == tr.tiling
    assert (tr.block_dim, tr.tiling_key, tr.workspace_size, tr.soc) == (1, 0, 0, "kirin9020")
    # docs/ops/gather_dequant_int8.md §3.2: 128 + 2048 + 2048 + 512 + 1024 + 512
    assert T.footprint(tr) == tr.ub_size == 6272
    assert any("not public" in n for n in tr.notes)


def test_ub_layout_in_init_buffer_order():
    lay = T.ub_layout(30, 256, 1024)
    assert (lay.idx, lay.scale, lay.zp, lay.row_in, lay.row_out, lay.calc) == (0, 128, 2176, 4224, 4736, 5760)
    assert (lay.row_in_bytes, lay.row_out_bytes, lay.total) == (256, 512, 6272)
    odd = T.ub_layout(3, 32, 5)            # 12 -> 32, 10 -> 32 (twice), 32 x 2, 64 x 2, 64
    assert (odd.scale, odd.zp, odd.row_in, odd.row_out, odd.calc, odd.total) == (32, 64, 96, 160, 288, 352)


@pytest.mark.parametrize("shape, num, wrapped", [
    ((), 1, False),                      # a scalar index: the empty product
    ((0, 7), 0, False),
    ((2, 3, 4), 24, False),
    ((65536, 65536), 0, True),           # 2^32 tokens wrap to 0 in the uint32 field
    ((3, 1 << 31), 1 << 31, True),
])
def test_num_indices_uint32(shape, num, wrapped):
    tr = T.gather_dequant_int8_tiling((8, 32), shape)
    assert tr.tiling.numIndices == num
    assert any("wraps" in n for n in tr.notes) == wrapped


def test_device_launch_is_one_core():
    tr = T.gather_dequant_int8_tiling((8, 32), (1000,))
    assert tr.block_dim == 1 and T.core_range(1000, 1, 0) == (0, 1000)


@pytest.mark.parametrize("core_num, n, block_dim", [(2, 5, 2), (8, 3, 3), (4, 0, 1), (1, 9, 1), (3, 9, 3)])
def test_core_split(core_num, n, block_dim):
    tr = T.gather_dequant_int8_tiling((8, 32), (n,), core_num=core_num)
    assert tr.block_dim == block_dim
    assert tr.tiling.numIndices == n                      # the struct stays the device's
    assert any("extension" in note for note in tr.notes)
    ranges = [T.core_range(n, block_dim, c) for c in range(block_dim)]
    # contiguous, in order, no gap, no overlap; big cores first
    pos = 0
    for start, count in ranges:
        assert start == pos
        pos += count
    assert pos == n
    counts = [c for _, c in ranges]
    assert counts == sorted(counts, reverse=True) and max(counts) - min(counts) <= 1
    # UB holds only the busiest core's share of the indices
    assert T.footprint(tr) == T.ub_layout(counts[0], 32, 8).total


def test_options():
    tr = T.gather_dequant_int8_tiling((1024, 256), (1, 30), ub_size=262144)
    assert tr.ub_size == 262144 and T.footprint(tr) == 6272
    with pytest.raises(AclnnError) as ei:
        T.gather_dequant_int8_tiling((8, 32), (4,), core_num=0)
    assert ei.value.status == 561002
    with pytest.raises(AclnnError) as ei:
        T.gather_dequant_int8_tiling((8, 32), (4,), soc="kirin9999")
    assert ei.value.status == 161002
