"""Host tiling vectors of docs/ops/sign_bits.md §2.5, §2.8, §3.4 and §6 (T1–T6)."""

import pytest

from npu_emu.kernels.sign_bits.tiling import pack_tiling, unpack_tiling, unpack_tiling_950


def _values(tr):
    return list(tr.tiling.fields().values())


@pytest.mark.parametrize("n,dtype,soc,kw,expect,block_dim,key", [
    # T1: the ops-math host-tiling UT (faker: 64 cores, ub 262144) expects "128 192 1 1 5312 128 192 0 0".
    (128, "float32", "ascend910b2", dict(core_num=64, ub_size=262144), [128, 192, 1, 1, 5312, 128, 192, 0, 0], 1, 0),
    # T2 / the aclnn sample: N = 2 on 910B.
    (2, "float32", "ascend910b2", {}, [64, 128, 1, 1, 3968, 64, 128, 0, 0], 1, 0),
    # T3: 1-bit Adam on 1e9 parameters.
    (125_000_000, "float32", "ascend910b2", {}, [2604160, 2604224, 1100, 1100, 2368, 1728, 1792, 5, 1], 48, 0),
    (125_000_000, "float16", "ascend910b2", {}, [2604160, 2604224, 453, 453, 5760, 640, 704, 5, 1], 48, 1),
    # T4
    (8192, "float32", "ascend910b2", {}, [128, 192, 1, 1, 3968, 128, 192, 32, 0], 48, 0),
    # §2.5 worked examples
    (100, "float32", "ascend910b2", {}, [128, 192, 1, 1, 3968, 128, 192, 0, 0], 1, 0),
    (8192, "float16", "ascend910b2", {}, [8192, 8256, 1, 1, 11520, 8192, 8256, 0, 0], 1, 1),
    (1_000_000, "float32", "ascend910b2", {}, [20800, 20864, 9, 9, 2368, 1856, 1920, 25, 1], 48, 0),
    (552_960, "float16", "ascend910b2", {}, [11520, 11584, 3, 2, 5760, 5760, 64, 0, 1], 48, 1),
])
def test_unpack_tiling_vectors(n, dtype, soc, kw, expect, block_dim, key):
    tr = unpack_tiling(n, dtype, soc=soc, **kw)
    assert _values(tr) == expect
    assert tr.block_dim == block_dim
    assert tr.tiling_key == key
    assert tr.workspace_size == 16777216


@pytest.mark.parametrize("dtype,single_max", [("float32", 190400), ("float16", 552896)])
def test_unpack_buffer_threshold_48_cores(dtype, single_max):
    # §2.5: single buffer iff ceil64(N) < 48 * tileDataNum(single).
    assert unpack_tiling(single_max, dtype).tiling.bufferOpen == 0
    assert unpack_tiling(single_max + 1, dtype).tiling.bufferOpen == 1


@pytest.mark.parametrize("dtype,single_max", [("float32", 158656), ("float16", 460736)])
def test_unpack_buffer_threshold_40_cores(dtype, single_max):
    assert unpack_tiling(single_max, dtype, soc="ascend910b3").tiling.bufferOpen == 0
    assert unpack_tiling(single_max + 1, dtype, soc="ascend910b3").tiling.bufferOpen == 1


def test_unpack_struct_bytes():
    tr = unpack_tiling(2, "float32")
    b = tr.tiling.to_bytes()
    assert len(b) == 72
    assert b[:8] == (64).to_bytes(8, "little") and b[32:40] == (3968).to_bytes(8, "little")


@pytest.mark.parametrize("n,dtype,cores,u64,u32,block_dim", [
    # T5: the ops-math UT (N = 14) prints "128 256 2 1 128 128 128 0 60129542144 274877906946".
    (14, "float32", 48, [128, 256, 2, 1, 128, 128, 128, 0], [0, 14, 2, 64], 1),
    (14, "float32", 64, [128, 256, 2, 1, 128, 128, 128, 0], [0, 14, 2, 64], 1),
    # T6
    (1_000_000_000, "float32", 48, [20833280, 20833408, 1131, 1131, 18432, 5120, 5248, 20], [1, 5120, 0, 5120], 48),
    # §3.4 worked examples
    (100, "float16", 48, [256, 512, 2, 1, 256, 256, 256, 0], [0, 100, 12, 128], 1),
    (9216, "float32", 48, [4608, 4736, 2, 1, 4608, 4608, 128, 0], [0, 4608, 0, 4608], 2),
    (100_000, "float32", 48, [16640, 16768, 2, 2, 8448, 8192, 8320, 2], [1, 8096, 0, 8128], 6),
    (1_000_000, "float32", 48, [35712, 35840, 2, 2, 17920, 17792, 17920, 1], [1, 17728, 0, 17728], 28),
    (1_000_000_000, "float16", 48, [20833280, 20833536, 566, 566, 36864, 5120, 5376, 10], [1, 5120, 0, 5120], 48),
])
def test_pack_tiling_vectors(n, dtype, cores, u64, u32, block_dim):
    tr = pack_tiling(n, dtype, core_num=cores)
    assert _values(tr) == u64 + u32
    assert tr.block_dim == block_dim
    assert tr.tiling_key == 0 and tr.workspace_size == 16777216


def test_pack_struct_bytes_match_ut_words():
    # The UT printer dumps 8-byte words: the four uint32 fields pack little-endian into two of them.
    b = pack_tiling(14, "float32").tiling.to_bytes()
    assert len(b) == 80
    assert int.from_bytes(b[64:72], "little") == 60129542144
    assert int.from_bytes(b[72:80], "little") == 274877906946


def test_unpack_950_tiling():
    # §2.9: 65 B per group for f32; blockFactor = max(16, ceil16(ceil(N / coreNum))).
    tr = unpack_tiling_950(1000, "float32", core_num=56, ub_size=262144)
    f = tr.tiling.fields()
    assert f["blockFactor"] == 32 and tr.block_dim == 32
    avail = 262144 - -(-262144 // 65) * 64
    assert f["ubFactor"] == avail * 8 // 128 * 128


def test_traces_carry_the_size_field_and_the_tiling_notes():
    # the 950 unpack struct holds the op's size attribute; the host tiling's notes reach the trace
    import numpy as np

    from npu_emu.kernels.sign_bits.api import npu_sign_bits_pack, npu_sign_bits_unpack

    _, tr = npu_sign_bits_unpack(np.zeros(64, np.uint8), 2, 0, soc="ascend950pr", trace=True)
    assert tr.tiling_data["size"] == 2
    _, tr = npu_sign_bits_pack(np.ones(64, np.float32), 1, soc="ascend950pr", trace=True)
    assert any("decomposition" in note for note in tr.notes)
