"""npu_emu.frontend.output_cache: large outputs reuse the memory of freed ones, never memory still in use."""

import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.frontend import core, output_cache as oc

BIG = oc.MIN_BYTES


@pytest.fixture(autouse=True)
def empty_cache(monkeypatch):
    monkeypatch.delenv("NPU_EMU_OUTPUT_CACHE", raising=False)
    oc.release()
    yield
    oc.release()


def test_small_outputs_are_plain_arrays():
    a = oc.empty((BIG - 1,), np.uint8)
    assert a.flags.owndata and a.shape == (BIG - 1,)
    del a
    assert oc.cached_bytes() == 0


def test_a_freed_output_is_reused_in_any_dtype_and_shape():
    a = oc.empty(BIG, np.uint8)
    where = a.ctypes.data
    del a
    assert oc.cached_bytes() == BIG
    b = oc.empty((2, BIG // 8), np.float32)
    assert b.ctypes.data == where and b.shape == (2, BIG // 8) and b.dtype == np.float32
    assert b.flags.c_contiguous and b.flags.writeable
    assert oc.cached_bytes() == 0


def test_memory_in_use_is_never_handed_out():
    a = oc.empty(BIG, np.uint8)
    where = a.ctypes.data
    view = a.reshape(4, -1)[1:]           # a view outlives the output
    del a
    b = oc.empty(BIG, np.uint8)
    assert b.ctypes.data != where
    del view
    c = oc.empty(BIG, np.uint8)
    assert c.ctypes.data == where


def test_a_torch_tensor_keeps_its_memory():
    torch = pytest.importorskip("torch")
    a = oc.empty(BIG // 4, np.float32)
    where = a.ctypes.data
    t = torch.from_numpy(a)
    del a
    b = oc.empty(BIG // 4, np.float32)
    assert b.ctypes.data != where
    del t
    assert oc.empty(BIG // 4, np.float32).ctypes.data == where


def test_a_block_much_larger_than_the_request_is_not_used():
    a = oc.empty(4 * BIG, np.uint8)
    where = a.ctypes.data
    del a
    b = oc.empty(BIG, np.uint8)
    assert b.ctypes.data != where
    assert oc.cached_bytes() == 4 * BIG


def test_the_limit(monkeypatch):
    monkeypatch.setenv("NPU_EMU_OUTPUT_CACHE", "0")
    a = oc.empty(BIG, np.uint8)
    assert a.flags.owndata                # no cache: plain np.empty
    del a
    assert oc.cached_bytes() == 0
    monkeypatch.setenv("NPU_EMU_OUTPUT_CACHE", str(BIG + BIG // 2))
    a, b = oc.empty(BIG, np.uint8), oc.empty(BIG, np.uint8)
    kept = b.ctypes.data
    del a, b                               # a first: the older block is the one dropped
    assert oc.cached_bytes() == BIG
    assert oc.empty(BIG, np.uint8).ctypes.data == kept


def test_at_most_half_of_the_available_memory_is_kept(monkeypatch):
    monkeypatch.setattr(core, "available_memory", lambda: 3 * BIG)
    a, b = oc.empty(BIG, np.uint8), oc.empty(BIG, np.uint8)
    del a, b
    assert oc.cached_bytes() == BIG


def test_a_bad_limit_is_refused(monkeypatch):
    monkeypatch.setenv("NPU_EMU_OUTPUT_CACHE", "lots")
    with pytest.raises(AclnnError, match="NPU_EMU_OUTPUT_CACHE"):
        oc.empty(BIG, np.uint8)


def test_release():
    a = oc.empty(BIG, np.uint8)
    del a
    assert oc.release() == BIG and oc.cached_bytes() == 0


def test_torch_npu_empty_cache_releases():
    pytest.importorskip("torch")          # npu_emu.torch needs torch
    from npu_emu.torch import runtime

    a = oc.empty(BIG, np.uint8)
    del a
    runtime.empty_cache()                 # torch_npu.npu.empty_cache() of the emulated module
    assert oc.cached_bytes() == 0


def test_the_memory_guard_frees_the_cache_before_refusing(monkeypatch):
    # the machine's available memory shrinks by what the cache holds, as it does for real
    room = 1 << 40
    monkeypatch.setattr(core, "available_memory", lambda: room - oc._state["cached"])
    monkeypatch.setattr(core, "_memory_limit", None)
    monkeypatch.delenv("NPU_EMU_MEMORY_LIMIT", raising=False)
    a = oc.empty(BIG, np.uint8)
    del a
    assert oc.cached_bytes() == BIG
    assert core.check_memory(room - 1, "an op") == room - 1
    assert oc.cached_bytes() == 0
    with pytest.raises(AclnnError, match="needs"):
        core.check_memory(room + 1, "an op")
