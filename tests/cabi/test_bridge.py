"""npu_emu.cabi.bridge on its own: aclTensor descriptions of memory this process owns -> numpy views."""

import numpy as np
import pytest

from npu_emu.cabi import bridge
from npu_emu.cabi.signatures import BY_NAME, Param
from npu_emu.errors import AclnnError

T = Param("t", "tensor")


def desc(buf, shape, strides=None, offset=0, code=0, fmt=2, storage=None, extent=None):
    if strides is None:
        strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return (buf.ctypes.data, tuple(shape), tuple(strides), offset, code, fmt,
            tuple(storage if storage is not None else shape), buf.nbytes if extent is None else extent)


def test_contiguous_view_shares_the_memory():
    buf = np.arange(12, dtype=np.float32)
    v = bridge.tensor_view(desc(buf, (3, 4)), T, "op")
    assert v.shape == (3, 4) and v.dtype == np.float32
    assert v.__array_interface__["data"][0] == buf.ctypes.data           # no copy
    v[1, 2] = -1.0
    assert buf[6] == -1.0                                                  # writes land in the program's memory


def test_strided_view_with_offset():
    buf = np.arange(24, dtype=np.int32)
    # the transposed [4, 3] view of the 3x4 block that starts at element 2 (strides and offset in elements)
    v = bridge.tensor_view(desc(buf, (4, 3), strides=(1, 4), offset=2, code=3, storage=(24,)), T, "op")
    np.testing.assert_array_equal(v, buf[2:14].reshape(3, 4).T)
    assert np.shares_memory(v, buf)


def test_carriers_and_packed_fp4():
    buf = np.arange(16, dtype=np.uint8)
    e8m0 = bridge.tensor_view(desc(buf, (4, 4), code=37), T, "op")       # FLOAT8_E8M0: uint8 bits
    assert e8m0.dtype == np.uint8
    fp4 = bridge.tensor_view(desc(buf, (2, 16), code=40), T, "op")       # FLOAT4_E2M1: two per byte
    assert fp4.shape == (2, 8) and fp4.dtype == np.uint8
    values, kwargs = bridge._arguments("aclnnDynamicMxQuant", (
        desc(np.zeros((2, 32), np.float32), (2, 32)), -1, "rint", 40, 32, 0,
        desc(buf, (2, 16), code=40), desc(np.zeros(2, np.uint8), (2, 1, 1), code=37)))
    assert kwargs == {"y_dtype": 40}                                     # the op learns the carrier's type


@pytest.mark.parametrize("case, status", [
    (dict(shape=(4, 4), extent=15), 161002),                             # past the allocation
    (dict(shape=(4, 4), storage=(15,)), 161002),                         # past the storage
    (dict(shape=(4, 4), code=99), 161002),                               # unknown aclDataType
    (dict(shape=(4, 4), fmt=3), 161002),                                 # NC1HWC0
    (dict(shape=(2, 3), code=40), 161002),                               # odd 4-bit last dim
    (dict(shape=(4, -1)), 161002),
])
def test_bad_descriptions_are_statuses(case, status):
    buf = np.zeros(16, np.uint8)
    with pytest.raises(AclnnError) as e:
        bridge.tensor_view(desc(buf, code=case.pop("code", 4), **case), T, "op")
    assert e.value.status == status


def test_null_data_pointer():
    d = (0, (2,), (1,), 0, 0, 2, (2,), -1)
    with pytest.raises(AclnnError) as e:
        bridge.tensor_view(d, T, "op")
    assert e.value.status == 161001


def test_workspace_returns_the_status_and_message():
    op = BY_NAME["aclnnSignBitsUnpack"]
    assert [p.name for p in op.params] == ["self", "size", "dtype", "out"]
    res = bridge.workspace("aclnnSignBitsUnpack", (None, 2, 0, desc(np.zeros(16, np.float32), (2, 8))))
    assert res[0] == 161001 and "self" in res[-1]
