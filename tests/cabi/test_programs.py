"""C++ programs written like CANN's examples/test_aclnn_<op>.cpp, built with g++ against `npu-emu cabi build`'s
prefix and run as subprocesses: their printed outputs equal npu_emu.ops on the same inputs, bit for bit."""

import numpy as np

from npu_emu import ops


def _check(values, name, expected):
    got = np.frombuffer(values[name], np.uint8)
    want = np.ascontiguousarray(expected).view(np.uint8).reshape(-1)
    np.testing.assert_array_equal(got, want, err_msg=name)


def test_sign_bits_unpack_and_pack(programs, run):
    rc, v, text = run(programs["test_aclnn_sign_bits"])
    assert rc == 0, text
    x = np.frombuffer(v["unpack_x"], np.uint8)
    _check(v, "unpack_out", ops.npu_sign_bits_unpack(x, 2, 0))
    h = np.frombuffer(v["pack_x"], np.float16)
    _check(v, "pack_out", ops.npu_sign_bits_pack(h, 2))


def test_dynamic_mx_quant_and_grouped(programs, run):
    import ml_dtypes

    rc, v, text = run(programs["test_aclnn_dynamic_mx_quant"])
    assert rc == 0, text
    x = np.frombuffer(v["mx_x"], ml_dtypes.bfloat16).reshape(2, 64)
    y, scale = ops.npu_dynamic_mx_quant(x, axis=-1, dst_type=24)       # torch_npu code of float8_e4m3fn
    _check(v, "mx_y", y)
    _check(v, "mx_scale", scale)
    x = np.frombuffer(v["grouped_x"], ml_dtypes.bfloat16).reshape(64, 32)
    y, scale = ops.npu_grouped_dynamic_mx_quant(x, np.array([16, 64], np.int32), dst_type=24)
    _check(v, "grouped_y", y)
    _check(v, "grouped_scale", scale)
