"""frontend.write_out: the aclnn phase-2 copy into the caller's out (all checks before the first byte is written)."""

import numpy as np
import pytest

import npu_emu.aclnn as aclnn
from npu_emu.errors import AclnnError
from npu_emu.frontend.core import write_out


def test_read_only_out_is_refused_before_anything_is_written():
    out = np.zeros(4, np.float32)
    out.setflags(write=False)
    with pytest.raises(AclnnError) as e:
        write_out(out, np.ones(4, np.float32))
    assert e.value.status == 161002 and "read-only" in e.value.message
    assert not out.any()


def test_empty_read_only_out_is_accepted():
    """Found by the long fuzz (aclnnGatherDequantInt8 with indices of shape (2, 0, 3) and a read-only out of shape
    (2, 0, 3, 96)): an empty out receives no byte, so it being read-only is no reason to fail the call."""
    out = np.zeros((2, 0, 3), np.float16)
    out.setflags(write=False)
    assert write_out(out, np.zeros((2, 0, 3), np.float16)) is out


def test_gather_aclnn_with_empty_indices_and_read_only_out():
    table, s = np.zeros((1, 96), np.uint8), np.ones(1, np.float16)
    idx = np.zeros((2, 0, 3), np.int32)
    out = np.zeros((2, 0, 3, 96), np.float16)
    out.setflags(write=False)
    st, ws, ex = aclnn.aclnnGatherDequantInt8GetWorkspaceSize(table, idx, s, s, out)
    assert st == 0
    assert aclnn.aclnnGatherDequantInt8(None, ws, ex) == 0
