"""Every emulator-added check of docs/ops/gather_dequant_int8.md §2.3 / §6.2: status code and the words that say
what to change. Checks run before any numba code, so these tests compile nothing."""

import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.gather_dequant_int8 import checks

V, E = 4, 64


def inputs(**over):
    a = {
        "table": np.zeros((V, E), np.uint8),
        "indices": np.array([[0, 3], [1, 2]], np.int32),
        "scale": np.ones(V, np.float16),
        "zero_point": np.zeros(V, np.float16),
    }
    a.update(over)
    return a


def status_of(**over):
    a = inputs(**{k: v for k, v in over.items() if k != "out"})
    with pytest.raises(AclnnError) as ei:
        checks.check_inputs(a["table"], a["indices"], a["scale"], a["zero_point"], out=over.get("out"))
    return ei.value


def test_valid_inputs_pass():
    a = inputs()
    assert checks.check_inputs(**a) == (V, E)
    assert checks.check_inputs(**a, out=np.empty((2, 2, E), np.float16)) == (V, E)
    # (V, 1) parameters and uint16 bit views are the same memory as the device's [V] fp16 tensors
    b = inputs(scale=np.ones((V, 1), np.float16), zero_point=np.zeros(V, np.uint16))
    assert checks.check_inputs(**b, out=np.empty((2, 2, E), np.uint16)) == (V, E)


@pytest.mark.parametrize("name", checks.INPUTS)
def test_null(name):
    e = status_of(**{name: None})
    assert e.status == 161001 and name in e.message


@pytest.mark.parametrize("over, words", [
    ({"table": np.zeros((V, E), np.int8)}, "table dtype must be uint8"),
    ({"indices": np.zeros(3, np.int64)}, "indices dtype must be int32"),
    ({"scale": np.ones(V, np.float32)}, "scale dtype must be float16"),
    ({"zero_point": np.ones(V, np.float32)}, "zero_point dtype must be float16"),
    ({"out": np.empty((2, 2, E), np.float32)}, "out dtype must be float16"),
    ({"table": np.zeros((V, E, 1), np.uint8)}, "table must be 2-D"),
    # docs/ops/gather_dequant_int8.md §6.2
    ({"scale": np.ones(V - 1, np.float16)}, "scale must have shape (4,) or (4, 1)"),
    ({"zero_point": np.ones((1, V), np.float16)}, "zero_point must have shape (4,) or (4, 1)"),
    ({"out": np.empty((4, E), np.float16)}, "out must have shape indices.shape + (E,) = (2, 2, 64)"),
    ({"table": np.zeros((V, 48), np.uint8), "out": None}, "embedding dim 48 must be a multiple of 32"),
    ({"indices": np.array([[0, 3], [4, 2]], np.int32)}, "index 4 at position 2 is outside [0, 4) (indices[1, 0]; "),
    ({"indices": np.array([2, -1, 9], np.int32)}, "index -1 at position 1 is outside [0, 4)"),
])
def test_invalid(over, words):
    e = status_of(**over)
    assert e.status == 161002
    assert words in e.message and e.message.startswith("GatherDequantInt8: ")


def test_truncation_message_explains_device():
    e = status_of(table=np.zeros((V, 48), np.uint8))
    assert "silently rounds each row transfer down to 32 bytes" in e.message
    assert "emulator-added" in e.message


def test_order_first_failure_wins():
    # a dtype error is reported before a shape error and before an index error (§2.3 order)
    e = status_of(table=np.zeros((V, 48), np.int8), indices=np.array([9], np.int32))
    assert "table dtype" in e.message
    e = status_of(table=np.zeros((V, 48), np.uint8), indices=np.array([9], np.int32))
    assert "embedding dim 48" in e.message


def test_empty_indices_pass():
    a = inputs(indices=np.zeros((0, 3), np.int32))
    assert checks.check_inputs(**a) == (V, E)


def test_switch_and_soc():
    checks.check_switches("keep")
    checks.check_switches("flush")
    with pytest.raises(AclnnError) as ei:
        checks.check_switches("ftz")
    assert ei.value.status == 161002 and "fp16_subnormal" in ei.value.message
    checks.require_kernel("kirin9020")
    checks.require_kernel("Kirin9020")
    with pytest.raises(AclnnError) as ei:
        checks.require_kernel("ascend910b2")
    assert ei.value.status == 561003 and "kirin9020" in ei.value.message
    with pytest.raises(AclnnError) as ei:
        checks.require_kernel("kirin9999")
    assert ei.value.status == 161002


def test_ub_check():
    checks.check_ub(6272, None)
    checks.check_ub(6272, 6272)
    with pytest.raises(AclnnError) as ei:
        checks.check_ub(6272, 6271)
    assert ei.value.status == 161002 and "6272 bytes of UB" in ei.value.message


def test_wrapped_num_indices_rejected():
    # 2^32 indices wrap numIndices (uint32) to 0 on the device; a zero-stride view avoids allocating them
    huge = np.broadcast_to(np.int32(0), (1 << 16, 1 << 16))
    e = status_of(indices=huge)
    assert e.status == 161002 and "below 2^32" in e.message
