"""aclnn checks and status codes (docs/ops/sign_bits.md §2.3, §3.3, §6 E1–E5) and the torch_npu-level checks."""

import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.aclnn import (
    aclGetRecentErrMsg,
    aclnnSignBitsPack,
    aclnnSignBitsPackGetWorkspaceSize,
    aclnnSignBitsUnpack,
    aclnnSignBitsUnpackGetWorkspaceSize,
)
from npu_emu.ops import npu_sign_bits_pack, npu_sign_bits_unpack

U8 = np.array([159, 15], np.uint8)


def unpack_status(self, size, dtype, out, **kw):
    return aclnnSignBitsUnpackGetWorkspaceSize(self, size, dtype, out, **kw)[0]


def test_unpack_two_phase_success_writes_out():
    out = np.full((2, 8), 7.0, np.float32)
    status, ws, ex = aclnnSignBitsUnpackGetWorkspaceSize(U8, 2, 0, out)
    assert (status, ws) == (0, 16777216)
    assert np.all(out == 7.0)             # phase 1 never touches out
    assert aclnnSignBitsUnpack(None, ws, ex) == 0
    assert out.tolist() == [[1, 1, 1, 1, 1, -1, -1, 1], [1, 1, 1, 1, -1, -1, -1, -1]]
    assert aclnnSignBitsUnpack(None, ws, ex) != 0       # an executor runs once
    assert "once" in aclGetRecentErrMsg()


@pytest.mark.parametrize("args,code", [
    ((None, 2, 0, np.zeros((2, 8), np.float32)), 161001),                     # E3
    ((U8, 2, 0, None), 161001),
    ((U8.astype(np.float32), 2, 0, np.zeros((2, 8), np.float32)), 161002),    # self not uint8
    ((U8, 2, 4, np.zeros((2, 8), np.uint8)), 161002),                         # out uint8
    ((U8, 2, 1, np.zeros((2, 8), np.float32)), 161002),                       # E4 dtype vs out mismatch
    ((U8, 3, 0, np.zeros((3, 5), np.float32)), 161002),                       # E1
    ((U8, 0, 0, np.zeros((0, 8), np.float32)), 161002),                       # E2
    ((U8, -1, 0, np.zeros((1, 16), np.float32)), 161002),
    ((U8, 2, 0, np.zeros((4, 4), np.float32)), 161002),                       # out.dim0 != size
    ((np.zeros((16, 2), np.uint8), 2, 0, np.zeros((2, 128), np.float32)), 161002),   # self rank 2
    ((U8, 2, 0, np.zeros(16, np.float32)), 161002),                           # out rank 1
    ((U8, 2, 0, np.zeros((2, 7), np.float32)), 161002),                       # emulator-added: out too small
])
def test_unpack_status_codes(args, code):
    assert unpack_status(*args) == code
    assert aclGetRecentErrMsg()


def test_unpack_platform_checks():
    out = np.zeros((2, 8), np.float32)
    # the experimental op_api (A) accepts only DAV_2201
    assert unpack_status(U8, 2, 0, out, soc="ascend950pr", api_variant="experimental") == 161002
    # the math op_api (B) accepts 950 and is the default there
    assert unpack_status(U8, 2, 0, out, soc="ascend950pr") == 0
    # 310P passes B's checks but npu-emu has no 310P SignBits kernel
    assert unpack_status(U8, 2, 0, out, soc="ascend310p") == 561003


def test_unpack_empty_shortcut():
    out = np.zeros((2, 0), np.float16)
    status, ws, ex = aclnnSignBitsUnpackGetWorkspaceSize(np.zeros(0, np.uint8), 2, 1, out)
    assert (status, ws) == (0, 0)
    assert aclnnSignBitsUnpack(None, 0, ex) == 0


def test_pack_two_phase_and_codes():
    x = np.array([5, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2], np.float32)
    out = np.zeros((2, 1), np.uint8)
    status, ws, ex = aclnnSignBitsPackGetWorkspaceSize(x, 2, out)
    assert status == 0 and aclnnSignBitsPack(None, ws, ex) == 0
    assert out.tolist() == [[159], [15]]
    assert aclnnSignBitsPackGetWorkspaceSize(None, 2, out)[0] == 161001
    assert aclnnSignBitsPackGetWorkspaceSize(x, 3, np.zeros((3, 1), np.uint8))[0] == 161002     # E5
    assert aclnnSignBitsPackGetWorkspaceSize(x, 0, out)[0] == 161002
    assert aclnnSignBitsPackGetWorkspaceSize(x.astype(np.int32), 2, out)[0] == 161002
    assert aclnnSignBitsPackGetWorkspaceSize(x, 2, out.astype(np.int8))[0] == 161002
    assert aclnnSignBitsPackGetWorkspaceSize(x.reshape(2, 7), 2, out)[0] == 161002
    assert aclnnSignBitsPackGetWorkspaceSize(x, 2, np.zeros(2, np.uint8))[0] == 161002
    assert aclnnSignBitsPackGetWorkspaceSize(x, 2, out, soc="ascend950pr", api_variant="experimental")[0] == 161002


def test_no_partial_write_on_error():
    out = np.full((2, 8), 3.0, np.float32)
    status, _, ex = aclnnSignBitsUnpackGetWorkspaceSize(U8, 2, 1, out)
    assert status == 161002 and ex is None
    assert np.all(out == 3.0)


@pytest.mark.parametrize("call,fragment", [
    (lambda: npu_sign_bits_unpack(U8, 3, 0), "multiple of size"),
    (lambda: npu_sign_bits_unpack(U8, 0, 0), "less than or equal to zero"),
    (lambda: npu_sign_bits_unpack(U8.reshape(1, 2), 1, 0), "1-dimensional"),
    (lambda: npu_sign_bits_unpack(U8.astype(np.int8), 1, 0), "uint8"),
    (lambda: npu_sign_bits_unpack(U8, 1, np.int32), "torch.float32 or torch.float16"),
    (lambda: npu_sign_bits_unpack(None, 1, 0), "None"),
    (lambda: npu_sign_bits_pack(np.ones(14, np.float32), 3), "divisible by size"),
    (lambda: npu_sign_bits_pack(np.ones(14, np.float64), 1), "float16 and torch.float32"),
    (lambda: npu_sign_bits_pack(np.ones((2, 8), np.float32), 1), "one-dimensional"),
    (lambda: npu_sign_bits_pack(np.ones(8, np.float32), 1, nan_bit=2), "nan_bit"),
    (lambda: npu_sign_bits_pack(np.ones(8, np.float32), 1, soc="nosuchchip"), "nosuchchip"),
])
def test_ops_errors_are_aclnn_errors(call, fragment):
    with pytest.raises(AclnnError) as e:
        call()
    assert e.value.status in (161001, 161002)
    assert fragment in str(e.value)


def test_inputs_untouched_and_readonly_ok():
    x = np.array([1, -1, 2, -2, 0, -0.0, 3, -3], np.float32)
    x.setflags(write=False)
    before = x.copy()
    npu_sign_bits_pack(x, 1)
    assert np.array_equal(x.view(np.uint32), before.view(np.uint32))
    u = U8.copy()
    u.setflags(write=False)
    npu_sign_bits_unpack(u, 2, 0)
