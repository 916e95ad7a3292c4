"""The per-call memo (npu_emu.device.memo): a repeated call takes its host tiling, its checks and its checked access pattern
from the memo, and a call that differs in anything they depend on (shape, dtype, option, soc, core count, user
tiling fields or block_dim, group_index values) computes them afresh. Every op's result and trace equal those of
the same call with the memo off; a rejected tiling is rejected again on every repeat, before any kernel runs."""

import threading
import weakref

import ml_dtypes
import numpy as np
import pytest

import npu_emu.aclnn as acl
import npu_emu.ops as ops
from npu_emu.device import memo
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.gather_dequant_int8 import golden as g_gather
from npu_emu.kernels.mx_quant import golden as g_mx
from npu_emu.kernels.quant_matmul import golden as g_qmm
from npu_emu.kernels.sign_bits import golden as g_sign
from npu_emu.kernels.mx_quant import api as mx_api
from npu_emu.kernels.mx_quant import tiling as mx_tiling
from npu_emu.kernels.quant_matmul import tiling as qmm_tiling
from npu_emu.kernels.sign_bits import launch as sign_launch
from npu_emu.kernels.sign_bits.tiling import SignBitsUnpackTilingData

RNG = np.random.default_rng(20240611)


def _bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(_bits(a), _bits(b))


def _trace_fields(tr):
    overruns = [tuple(o) if isinstance(o, tuple) else tuple(vars(o).values()) for o in tr.gm_overrun]
    return (tr.tiling_data_bytes, tr.block_dim, tr.tiling_key, tr.workspace_size, tr.ub_bytes_per_core, overruns,
            tr.notes)


def _misses():
    return memo.stats()[1]


# ---------------------------------------------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------------------------------------------

def test_keys_keep_apart_what_python_equality_merges():
    values = [1, 1.0, True, np.int64(1), np.int32(1), np.uint8(1), np.float32(1), np.float64(1), "1", b"1", (1,),
              [1], 0.0, -0.0, np.float32(0.0), np.float32(-0.0), float("nan"),
              np.frombuffer(np.uint64(0x7FF8000000000001).tobytes(), np.float64)[0]]
    keys = [memo.key_of(v) for v in values]
    assert len(set(keys)) == len(values)


def test_array_keys_follow_dtype_shape_and_every_byte():
    a = np.arange(16, dtype=np.int32)
    base = memo.key_of(a)
    assert memo.key_of(a.copy()) == base
    assert memo.key_of(a.view(np.float32)) != base
    assert memo.key_of(a.reshape(4, 4)) != base
    b = a.copy()
    b[7] += 1
    assert memo.key_of(b) != base
    big = np.arange(memo.INLINE_BYTES, dtype=np.uint16)      # past INLINE_BYTES: a digest of the bytes
    big2 = big.copy()
    big2[-1] ^= 1
    assert memo.key_of(big) == memo.key_of(big.copy()) != memo.key_of(big2)
    assert memo.key_of(big.view(np.int16)) != memo.key_of(big)


def test_keys_hold_no_reference_to_arrays():
    for n in (8, 4 * memo.INLINE_BYTES):
        a = np.arange(n, dtype=np.uint8)
        ref = weakref.ref(a)
        key = memo.key_of(("x", a))
        memo.cached(("test_keys_hold_no_reference", key), lambda: 1)
        del a
        assert ref() is None


def test_unkeyable_arguments_run_uncached_and_errors_are_not_stored():
    calls = []

    def fn(x):
        calls.append(x)
        if isinstance(x, int) and x < 0:
            raise ValueError("negative")
        return len(calls)

    obj = object()
    assert memo.call(fn, obj) == 1 and memo.call(fn, obj) == 2          # an object() has no key: no memo
    for _ in range(2):
        with pytest.raises(ValueError):
            memo.call(fn, -5)
    assert len(calls) == 4                                                # the failure ran twice
    first = memo.call(fn, 7)
    assert memo.call(fn, 7) == first and len(calls) == 5


def _filled(count):
    """A function that records its calls, and the memo cleared and filled with its results for 0 .. count - 1."""
    calls = []

    def square(i):
        calls.append(i)
        return i * i

    memo.clear()
    for i in range(count):
        memo.call(square, i)
    return square, calls


def test_the_memo_is_bounded_least_recently_used_first_out():
    square, calls = _filled(memo.MAX_ENTRIES + 10)
    assert memo.stats()[2] == memo.MAX_ENTRIES
    n = len(calls)
    memo.call(square, memo.MAX_ENTRIES + 9)                              # recent: kept
    assert len(calls) == n
    memo.call(square, 0)                                                  # oldest: evicted
    assert len(calls) == n + 1


def test_a_hit_makes_an_entry_recent():
    square, calls = _filled(memo.MAX_ENTRIES)
    memo.call(square, 0)                                # the oldest entry, used again: now the most recent
    memo.call(square, -1)                               # a new entry evicts the least recently used one: 1
    n = len(calls)
    assert memo.call(square, 0) == 0 and len(calls) == n
    assert memo.call(square, 2) == 4 and len(calls) == n
    memo.call(square, 1)
    assert calls[-1] == 1 and len(calls) == n + 1
    assert memo.stats()[2] == memo.MAX_ENTRIES


def test_concurrent_callers_get_their_own_values():
    def triple(i):
        return 3 * i

    errors = []

    def worker(seed):
        r = np.random.default_rng(seed)
        for i in r.integers(0, 50, 400):
            if memo.call(triple, int(i)) != 3 * int(i):
                errors.append(i)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---------------------------------------------------------------------------------------------------------------
# every op: the same bits and trace with and without the memo, across calls that differ in one thing
# ---------------------------------------------------------------------------------------------------------------

def _check_sequence(calls):
    """Each call twice with the memo (the second from it), then once without: outputs (and traces) identical."""
    for fn in calls:
        first, second = fn(), fn()
        with memo.bypass():
            fresh = fn()
        for got in (first, second):
            if isinstance(fresh, tuple) and len(fresh) == 2 and not isinstance(fresh[1], np.ndarray):
                assert _same(got[0], fresh[0]) and _trace_fields(got[1]) == _trace_fields(fresh[1])
            else:
                assert _same(got, fresh)


def test_sign_bits_changes_miss():
    x64 = RNG.integers(0, 256, 64, dtype=np.uint8)
    x200 = RNG.integers(0, 256, 200, dtype=np.uint8)
    f = RNG.standard_normal(1000).astype(np.float32)
    calls = [
        lambda: ops.npu_sign_bits_unpack(x64, 1, 0, trace=True),
        lambda: ops.npu_sign_bits_unpack(x200, 1, 0, trace=True),                    # shape
        lambda: ops.npu_sign_bits_unpack(x200, 2, 0, trace=True),                    # size
        lambda: ops.npu_sign_bits_unpack(x200, 1, 1, trace=True),                    # dtype
        lambda: ops.npu_sign_bits_unpack(x200, 1, 0, soc="ascend950pr", trace=True),  # soc
        lambda: ops.npu_sign_bits_unpack(x200, 1, 0, core_num=3, trace=True),        # core count
        lambda: ops.npu_sign_bits_unpack(x200, 1, 0, ub_size=4096, trace=True),      # UB size
        lambda: ops.npu_sign_bits_unpack(x200, 1, 0, faithful=True, trace=True),
        lambda: ops.npu_sign_bits_pack(f, 1, trace=True),
        lambda: ops.npu_sign_bits_pack(f.astype(np.float16), 1, trace=True),
        lambda: ops.npu_sign_bits_pack(f, 1, nan_bit=1, trace=True),
        lambda: ops.npu_sign_bits_pack(f, 1, soc="ascend950pr", trace=True),
    ]
    _check_sequence(calls)
    assert _same(ops.npu_sign_bits_unpack(x200, 1, 1), g_sign.sign_bits_unpack(x200, 1, "float16"))
    assert np.array_equal(ops.npu_sign_bits_pack(f, 1, soc="ascend950pr"),
                          g_sign.sign_bits_pack(f, 1, soc="ascend950pr"))
    # the trace of a repeated call says what that call ran
    big = RNG.integers(0, 256, 1 << 16, dtype=np.uint8)
    for _ in range(2):
        for cores in (3, 1, 3):
            assert ops.npu_sign_bits_unpack(big, 1, 0, core_num=cores, trace=True)[1].block_dim == cores


X1000 = RNG.integers(0, 256, 1000, dtype=np.uint8)
GOOD3 = dict(smallCoreDataNum=320, bigCoreDataNum=384, finalBigTileNum=3, finalSmallTileNum=3, tileDataNum=128,
             smallTailDataNum=64, bigTailDataNum=128, tailBlockNum=1, bufferOpen=1)


@pytest.fixture
def launches(monkeypatch):
    """How many kernels sign_bits launched (the real launch runs; the count only watches it)."""
    count = []
    real = sign_launch.launch

    def counting(*args, **kwargs):
        count.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sign_launch, "launch", counting)
    return count


def _rejected(launches, **kw):
    for _ in range(3):
        before = len(launches)
        with pytest.raises(AclnnError) as e:
            ops.npu_sign_bits_unpack(X1000, 1, 0, **kw)
        assert e.value.status == ACLNN_ERR_INNER_TILING_ERROR and len(launches) == before
    return str(e.value)


def test_user_tiling_is_keyed_by_its_bytes_and_block_dim(launches):
    want = g_sign.sign_bits_unpack(X1000, 1, "float32")
    td = SignBitsUnpackTilingData(**GOOD3)
    for tiling in (td, GOOD3, td.to_bytes(), np.frombuffer(td.to_bytes(), np.uint8)):
        assert np.array_equal(ops.npu_sign_bits_unpack(X1000, 1, 0, tiling=tiling, block_dim=3), want)
    assert len(launches) == 4
    assert "unwritten" in _rejected(launches, tiling=td, block_dim=2)          # same bytes, fewer cores: a gap
    assert "core 3" in _rejected(launches, tiling=td.to_bytes(), block_dim=4)  # more cores: out of bounds
    overlap = dict(GOOD3, smallTailDataNum=128)                                 # one field changed: overlaps
    _rejected(launches, tiling=overlap, block_dim=3)
    _rejected(launches, tiling=SignBitsUnpackTilingData(**overlap).to_bytes(), block_dim=3)
    assert np.array_equal(ops.npu_sign_bits_unpack(X1000, 1, 0, tiling=GOOD3, block_dim=3), want)


def test_validate_false_then_true_still_rejects(launches):
    overlap = dict(GOOD3, smallTailDataNum=128)
    ops.npu_sign_bits_unpack(X1000, 1, 0, tiling=overlap, block_dim=3, validate=False)
    assert len(launches) == 1
    _rejected(launches, tiling=overlap, block_dim=3)
    ops.npu_sign_bits_unpack(X1000, 1, 0, tiling=overlap, block_dim=3, validate=False)
    assert len(launches) == 2


def test_a_repeat_hits_and_each_change_misses():
    x = RNG.integers(0, 256, 96, dtype=np.uint8)
    ops.npu_sign_bits_unpack(x, 1, 0)
    m = _misses()
    ops.npu_sign_bits_unpack(x.copy(), 1, 0)                   # other data, same shape: nothing to compute
    assert _misses() == m
    for kw in (dict(core_num=2), dict(ub_size=8192), dict(soc="ascend910b3")):
        ops.npu_sign_bits_unpack(x, 1, 0, **kw)
        assert _misses() > m
        m = _misses()
        ops.npu_sign_bits_unpack(x, 1, 0, **kw)
        assert _misses() == m


def test_gather_changes_miss():
    table = RNG.integers(0, 256, (40, 64), dtype=np.uint8)
    scale = (RNG.random(40) * 0.01 + 1e-4).astype(np.float16)
    zp = (RNG.random(40) * 255).astype(np.float16)
    i1 = RNG.integers(0, 40, 9).astype(np.int32)
    i2 = RNG.integers(0, 40, 9).astype(np.int32)
    calls = [lambda idx=idx, kw=kw: ops.gather_dequant_int8(table, idx, scale, zp, trace=True, **kw)
             for idx in (i1, i2, i1.reshape(3, 3)) for kw in ({}, dict(core_num=2), dict(faithful=True),
                                                            dict(fp16_subnormal="flush"))]
    _check_sequence(calls)
    for idx in (i1, i2):
        want = g_gather.gather_dequant_int8(table, idx, scale, zp)
        assert _same(ops.gather_dequant_int8(table, idx, scale, zp), want)
    m = _misses()
    ops.gather_dequant_int8(table, i2[::-1].copy(), scale, zp)   # new index values: the access pattern is rebuilt
    assert _misses() > m


def _bf16(shape):
    return RNG.standard_normal(shape, dtype=np.float32).astype(ml_dtypes.bfloat16)


def test_mx_quant_changes_miss():
    x = _bf16((64, 64))
    x2 = _bf16((32, 128))
    gis = [np.array([32, 64], np.int32), np.array([5, 64], np.int32), np.array([0, 64], np.int32)]
    calls = [lambda gi=gi: ops.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24, trace=True) for gi in gis]
    calls += [lambda: ops.npu_grouped_dynamic_mx_quant(x, gis[0], dst_type=23, trace=True),
              lambda: ops.npu_grouped_dynamic_mx_quant(x, gis[0], dst_type=24, core_num=3, trace=True),
              lambda: ops.npu_dynamic_mx_quant(x, dst_type=24, trace=True),
              lambda: ops.npu_dynamic_mx_quant(x2, dst_type=24, trace=True),
              lambda: ops.npu_dynamic_mx_quant(x2, axis=0, dst_type=24, trace=True),
              lambda: ops.npu_dynamic_mx_quant(x2, dst_type=296, trace=True),
              lambda: ops.npu_dynamic_mx_quant(x2, dst_type=24, core_num=5, trace=True),
              lambda: ops.npu_dynamic_mx_quant(x2, dst_type=24, ub_size=200_000, trace=True)]
    _check_sequence(calls)
    for gi in gis:
        y, s = ops.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24)
        gy, gs = g_mx.grouped_dynamic_mx_quant(x, gi, dst_type="float8_e4m3fn")
        assert np.array_equal(y.view(np.uint8), gy) and np.array_equal(s, gs)
    y, s = ops.npu_dynamic_mx_quant(x2, axis=0, dst_type=24)
    gy, gs = g_mx.dynamic_mx_quant(x2, axis=0, dst_type="float8_e4m3fn")
    assert np.array_equal(y.view(np.uint8), gy) and np.array_equal(s, gs)
    m = _misses()
    ops.npu_grouped_dynamic_mx_quant(x, np.array([48, 64], np.int32), dst_type=24)   # new group_index values
    assert _misses() > m


def test_grouped_user_tiling_rejected_on_every_repeat():
    x = _bf16((64, 64))
    gi = np.array([32, 64], np.int32)
    host = mx_tiling.grouped_tiling(64, 64, 2, x_dtype="bfloat16", y_dtype="float8_e4m3fn")
    good = host.tiling.fields()
    y, s = ops.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24, tiling=good)
    assert _same((y, s), ops.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24))
    bad = dict(good, blockRowTailSize=good["blockRowTailSize"] - 16)       # the tiles stop short of the last columns
    for tiling in (bad, mx_tiling.GroupedDynamicMxQuantTilingData(**bad).to_bytes(), bad):
        with pytest.raises(AclnnError) as e:
            ops.npu_grouped_dynamic_mx_quant(x, gi, dst_type=24, tiling=tiling)
        assert e.value.status == ACLNN_ERR_INNER_TILING_ERROR
    wrong_groups = np.array([16, 32, 64], np.int32)                        # groupNum no longer matches
    with pytest.raises(AclnnError) as e:
        mx_api._grouped_run(x, "bfloat16", wrong_groups, "float8_e4m3fn", "rint", 0, 0.0,
                            mx_api._user_tiling(good, host), cann_version="master", gap_fill=0, signed_zero=True,
                            ftz=False, nan_in_max="propagate", fp4_nibble_order="low_first", faithful=False,
                            validate=True)
    assert e.value.status == ACLNN_ERR_INNER_TILING_ERROR


def _qmm_inputs(m, k, n):
    x1 = RNG.integers(-128, 128, (m, k), dtype=np.int8)
    x2 = RNG.integers(-128, 128, (k, n), dtype=np.int8)
    s = RNG.uniform(0.0005, 0.005, n).astype(np.float32)
    p = RNG.uniform(0.5, 2.0, m).astype(np.float32)
    return x1, x2, s, p


def test_quant_matmul_changes_miss():
    a = _qmm_inputs(16, 64, 32)
    b = _qmm_inputs(16, 64, 48)
    e4m3 = ml_dtypes.float8_e4m3fn
    f1 = RNG.standard_normal((16, 64), np.float32).astype(e4m3)
    f2 = RNG.standard_normal((64, 32), np.float32).astype(e4m3)
    calls = [
        lambda: ops.npu_quant_matmul(a[0], a[1], a[2], pertoken_scale=a[3], output_dtype="bfloat16", trace=True),
        lambda: ops.npu_quant_matmul(b[0], b[1], b[2], pertoken_scale=b[3], output_dtype="bfloat16", trace=True),
        lambda: ops.npu_quant_matmul(a[0], a[1], a[2], output_dtype="float16", trace=True),
        lambda: ops.npu_quant_matmul(a[0], a[1], a[2], pertoken_scale=a[3], output_dtype="bfloat16", core_num=3,
                                     trace=True),
        lambda: ops.npu_quant_matmul(a[0], a[1], a[2], pertoken_scale=a[3], output_dtype="bfloat16",
                                     fixpipe_round="half_away", trace=True),
        lambda: ops.npu_quant_matmul(f1, f2, a[2], pertoken_scale=a[3], output_dtype="bfloat16", soc="ascend950pr",
                                     trace=True),
    ]
    _check_sequence(calls)
    x1, x2, s, p = b
    want = g_qmm.quant_matmul(x1, x2, s, x1_scale=p, x1_dtype="int8", x2_dtype="int8", scale_dtype="float32",
                              out_dtype="bfloat16")
    assert _same(ops.npu_quant_matmul(x1, x2, s, pertoken_scale=p, output_dtype="bfloat16"), want)


def test_quant_matmul_user_tiling_rejected_on_every_repeat():
    x1, x2, s, p = _qmm_inputs(16, 64, 32)
    kw = dict(pertoken_scale=p, output_dtype="bfloat16")
    _, tr = ops.npu_quant_matmul(x1, x2, s, trace=True, **kw)
    td = qmm_tiling.QuantBatchMatmulV3TilingData.from_bytes(tr.tiling_data_bytes)
    assert _same(ops.npu_quant_matmul(x1, x2, s, tiling=td, **kw), ops.npu_quant_matmul(x1, x2, s, **kw))
    y48 = _qmm_inputs(16, 64, 48)
    for _ in range(2):                       # the tiling of a 32-column output for a 48-column one
        with pytest.raises(AclnnError) as e:
            ops.npu_quant_matmul(y48[0], y48[1], y48[2], pertoken_scale=y48[3], output_dtype="bfloat16",
                                 tiling=td.to_bytes())
        assert e.value.status == ACLNN_ERR_INNER_TILING_ERROR
    more = tr.block_dim + 1
    for bd in (None, more, None, more):      # the same bytes launched on another number of cores and back
        y, tr2 = ops.npu_quant_matmul(x1, x2, s, tiling=td.to_bytes(), block_dim=bd, trace=True, **kw)
        assert tr2.block_dim == (bd or tr.block_dim) and _same(y, ops.npu_quant_matmul(x1, x2, s, **kw))


def test_aclnn_repeats_and_rejections():
    x = RNG.integers(0, 256, 64, dtype=np.uint8)
    out = np.empty((1, 512), np.float32)
    for _ in range(2):
        st, ws, ex = acl.aclnnSignBitsUnpackGetWorkspaceSize(x, 1, 0, out)
        assert st == 0 and acl.aclnnSignBitsUnpack(None, ws, ex) == 0
        assert np.array_equal(out, g_sign.sign_bits_unpack(x, 1, "float32"))
    bad_out = np.empty((1, 256), np.float32)
    for _ in range(2):
        st, _, ex = acl.aclnnSignBitsUnpackGetWorkspaceSize(x, 1, 0, bad_out)
        assert st != 0 and ex is None
    xm = _bf16((32, 64))
    y = np.empty((32, 64), ml_dtypes.float8_e4m3fn)
    s = np.empty((32, 1, 2), np.uint8)
    for x_in in (xm, _bf16((32, 64))):
        st, ws, ex = acl.aclnnDynamicMxQuantV3GetWorkspaceSize(x_in, -1, "rint", 36, 32, 0, 0.0, 0.0, y, s)
        assert st == 0 and acl.aclnnDynamicMxQuantV3(None, ws, ex) == 0
        gy, gs = g_mx.dynamic_mx_quant(x_in, dst_type="float8_e4m3fn")
        assert np.array_equal(y.view(np.uint8), gy) and np.array_equal(s, gs)
