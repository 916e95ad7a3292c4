"""The ops' outputs come from npu_emu.frontend.output_cache: a freed output's memory is written over completely by
the next call, and an output still in use is never written by a later call. The cache's size floor is lowered
(the cache_every_output fixture) so that small outputs use it."""

import numpy as np
import pytest

import npu_emu.ops as ops
from npu_emu.kernels.sign_bits import golden


pytestmark = pytest.mark.usefixtures("cache_every_output")     # tests/conftest.py


def _inputs(n, count):
    rng = np.random.default_rng(n)
    return [rng.integers(0, 256, n, dtype=np.uint8) for _ in range(count)]


@pytest.mark.parametrize("dtype, bits", [(0, np.uint32), (1, np.uint16)])
def test_unpack(dtype, bits):
    name = "float32" if dtype == 0 else "float16"
    x1, x2, x3 = _inputs(5000, 3)
    y1 = ops.npu_sign_bits_unpack(x1, 8, dtype)
    where = y1.ctypes.data
    y2 = ops.npu_sign_bits_unpack(x2, 8, dtype)
    assert not np.shares_memory(y1, y2)
    np.testing.assert_array_equal(y1.view(bits), golden.sign_bits_unpack(x1, 8, name).view(bits))
    del y1
    y3 = ops.npu_sign_bits_unpack(x3, 8, dtype)
    assert y3.ctypes.data == where                   # x1's signs were there: every element is written again
    np.testing.assert_array_equal(y3.view(bits), golden.sign_bits_unpack(x3, 8, name).view(bits))
    np.testing.assert_array_equal(y2.view(bits), golden.sign_bits_unpack(x2, 8, name).view(bits))


def test_pack():
    rng = np.random.default_rng(1)
    x1, x2, x3 = (rng.standard_normal(40_003).astype(np.float32) for _ in range(3))
    y1 = ops.npu_sign_bits_pack(x1, 1)
    where = y1.ctypes.data
    y2 = ops.npu_sign_bits_pack(x2, 1)
    del y1
    y3 = ops.npu_sign_bits_pack(x3, 1)
    assert y3.ctypes.data == where
    np.testing.assert_array_equal(y3, golden.sign_bits_pack(x3, 1))
    np.testing.assert_array_equal(y2, golden.sign_bits_pack(x2, 1))
