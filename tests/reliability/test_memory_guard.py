"""Memory guard (issue 11): an op whose estimated allocation exceeds the cap (npu_emu.frontend.core.set_memory_limit or
NPU_EMU_MEMORY_LIMIT, else the machine's available memory) raises AclnnError 361001 naming the size and the cap
before it allocates -- the torch_npu-style function raises, the aclnn pair returns the status with out untouched.

Each op is called once just above a limit derived from its own output size (so the estimate, which counts at least
the output, must exceed it) and once with the limit lifted (the same call then succeeds).
"""

import re

import numpy as np
import pytest

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.frontend import core as frontend
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_RUNTIME_ERROR, AclnnError

MX_HOME = "npu_emu.kernels.mx_quant.api"


def _mx(name):
    return H.public(ops, name, MX_HOME)


def _unpack():
    return ops.npu_sign_bits_unpack, (np.arange(64, dtype=np.uint8), 1, np.float32), {}, 8 * 64 * 4


def _gather():
    table = np.arange(4 * 32, dtype=np.uint8).reshape(4, 32)
    idx = np.arange(40, dtype=np.int32) % 4
    s = np.ones(4, np.float16)
    return ops.gather_dequant_int8, (table, idx, s, s), {}, 40 * 32 * 2


def _deq():
    acc = np.arange(64 * 16, dtype=np.int32).reshape(64, 16)
    return ops.data_copy_dequant, (acc, 0x3F800000), dict(mode="DEQ16"), 64 * 16 * 2


def _qmm():
    x1 = np.ones((32, 64), np.int8)
    x2 = np.ones((64, 16), np.int8)
    return ops.npu_quant_matmul, (x1, x2, np.full(16, 0.01, np.float32)), dict(output_dtype="float16"), 32 * 16 * 2


def _dyn_mx():
    x = np.ones((16, 64), np.float16)
    return _mx("npu_dynamic_mx_quant"), (x,), dict(dst_type=292), 16 * 64


def _grp_mx():
    x = np.ones((64, 32), np.float16)
    return _mx("npu_grouped_dynamic_mx_quant"), (x, np.array([32, 64], np.int32)), {}, 64 * 32


CALLS = {"npu_sign_bits_unpack": _unpack, "gather_dequant_int8": _gather, "data_copy_dequant": _deq,
         "npu_quant_matmul": _qmm, "npu_dynamic_mx_quant": _dyn_mx, "npu_grouped_dynamic_mx_quant": _grp_mx}


def _assert_names_size(err, cap):
    assert err.status == ACLNN_ERR_RUNTIME_ERROR, err
    m = re.search(r"needs ([\d,]+) bytes", err.message)
    assert m, f"the message does not name the size: {err.message}"
    assert int(m.group(1).replace(",", "")) > cap
    assert f"{cap:,} bytes" in err.message, err.message


@pytest.mark.parametrize("op", sorted(CALLS))
def test_limit_refuses_before_allocating_and_lifting_it_succeeds(op, fresh_memory_limit):
    fn, args, kw, out_bytes = CALLS[op]()
    cap = out_bytes - 1                          # any estimate of this call (>= its output) is above the cap
    frontend.set_memory_limit(cap)
    with pytest.raises(AclnnError) as e:
        fn(*args, **kw)
    _assert_names_size(e.value, cap)
    assert "set_memory_limit" in e.value.message
    frontend.set_memory_limit(None)
    fn(*args, **kw)                              # the same call fits without the cap


@pytest.mark.parametrize("spelling,cap", [("1K", 1024), ("1 KiB", 1024), ("1000", 1000), ("1.5k", 1536)])
def test_environment_variable_limit(spelling, cap, monkeypatch, fresh_memory_limit):
    frontend.set_memory_limit(None)
    monkeypatch.setenv("NPU_EMU_MEMORY_LIMIT", spelling)
    fn, args, kw, _ = _unpack()                  # 2048 output bytes
    with pytest.raises(AclnnError) as e:
        fn(*args, **kw)
    _assert_names_size(e.value, cap)
    assert "NPU_EMU_MEMORY_LIMIT" in e.value.message
    frontend.set_memory_limit(1 << 30)           # the user's limit wins over the environment's
    fn(*args, **kw)


def test_bad_environment_limit_is_a_clear_error(monkeypatch, fresh_memory_limit):
    frontend.set_memory_limit(None)
    monkeypatch.setenv("NPU_EMU_MEMORY_LIMIT", "lots")
    with pytest.raises(AclnnError) as e:
        ops.npu_sign_bits_unpack(np.arange(8, dtype=np.uint8), 1, np.float32)
    assert e.value.status == ACLNN_ERR_PARAM_INVALID and "NPU_EMU_MEMORY_LIMIT" in e.value.message


@pytest.mark.parametrize("bad", [-1, "x", "1Q", float("inf"), True, [1], "-5M"])
def test_set_memory_limit_rejects_non_byte_counts(bad, fresh_memory_limit):
    with pytest.raises(AclnnError) as e:
        frontend.set_memory_limit(bad)
    assert e.value.status == ACLNN_ERR_PARAM_INVALID


def test_set_memory_limit_returns_the_previous_cap(fresh_memory_limit):
    frontend.set_memory_limit(None)
    assert frontend.set_memory_limit("2M") is None
    assert frontend.set_memory_limit(5) == 2 << 20


def test_aclnn_returns_361001_and_leaves_out_untouched(fresh_memory_limit):
    x = np.arange(64, dtype=np.uint8)
    out = H.sentinel_like((1, 512), np.float32)
    frontend.set_memory_limit(1000)
    res = H.call_aclnn("aclnnSignBitsUnpack", (x, 1, 0, out), outs=(out,))
    assert res.status == ACLNN_ERR_RUNTIME_ERROR and "needs 2,048 bytes" in res.message
    table = np.zeros((4, 32), np.uint8)
    idx = np.zeros(40, np.int32)
    s = np.ones(4, np.float16)
    out = H.sentinel_like((40, 32), np.float16)
    res = H.call_aclnn("aclnnGatherDequantInt8", (table, idx, s, s, out), outs=(out,))
    assert res.status == ACLNN_ERR_RUNTIME_ERROR and "needs 2,560 bytes" in res.message


_CHILD = """
import resource, sys, numpy as np
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))   # a safety net: nothing here may really allocate
import npu_emu.ops as ops
from npu_emu.errors import AclnnError
case = sys.argv[1]
try:
    if case == "broadcast":
        ops.npu_sign_bits_unpack(np.broadcast_to(np.uint8(0x5A), (1 << 36,)), 1, np.float32)
    else:
        x1, x2 = np.ones((1 << 18, 1), np.int8), np.ones((1, 1 << 18), np.int8)
        ops.npu_quant_matmul(x1, x2, np.float32(0.5).reshape(1), output_dtype="float16")
except AclnnError as e:
    print("STATUS", e.status, e.message)
"""


def _child(case):
    import os
    import subprocess
    import sys
    import tempfile

    env = dict(os.environ)
    env.pop("NPU_EMU_MEMORY_LIMIT", None)
    # cwd: `python -c` puts its working directory first on sys.path, where the repository's source folder would
    # shadow the installed npu_emu
    return subprocess.run([sys.executable, "-c", _CHILD, case], capture_output=True, text=True, timeout=300, env=env,
                          cwd=tempfile.gettempdir())


def test_machine_memory_caps_an_impossible_output():
    """No user limit: an output no machine holds (a 2^18 x 2^18 fp16 matmul from two 256 KiB operands) fails with
    361001 naming the machine's memory, not numpy's MemoryError or the OOM killer. Run in a child with an
    address-space limit, so that a missing guard fails fast instead of swapping the shared machine."""
    r = _child("matmul")
    assert r.returncode == 0 and "STATUS 361001" in r.stdout, r.stdout + r.stderr[-2000:]
    assert "the memory available on this machine" in r.stdout and "needs" in r.stdout


def test_machine_memory_caps_the_copy_of_a_broadcast_input():
    """A broadcast (stride 0) input costs nothing to pass; the contiguous copy the front end makes must be guarded
    like an output."""
    r = _child("broadcast")
    assert r.returncode == 0 and "STATUS 361001" in r.stdout, r.stdout + r.stderr[-2000:]
