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


def test_quant_matmul_family(programs, run):
    """TransQuantParamV2 then QuantMatmulV3 on one stream (the second reads what the first wrote), V4 with a
    per-token scale, WeightNz with x2 in FRACTAL_NZ."""
    rc, v, text = run(programs["test_aclnn_quant_matmul"])
    assert rc == 0, text
    m, k, n = 16, 64, 32

    def arr(name, dtype, shape):
        return np.frombuffer(v[name], dtype).reshape(shape)

    packed = ops.npu_trans_quant_param(arr("v3_scale", np.float32, (n,)))
    _check(v, "v3_scale_u64", packed)
    _check(v, "v3_out", ops.npu_quant_matmul(arr("v3_x1", np.int8, (m, k)), arr("v3_x2", np.int8, (k, n)), packed,
                                             output_dtype="float16"))
    _check(v, "v4_out", ops.npu_quant_matmul(arr("v4_x1", np.int8, (m, k)), arr("v4_x2", np.int8, (k, n)),
                                             arr("v4_scale", np.float32, (n,)),
                                             pertoken_scale=arr("v4_pertoken", np.float32, (m,)),
                                             output_dtype="float16"))
    _check(v, "nz_out", ops.npu_quant_matmul(arr("nz_x1", np.int8, (m, k)), arr("nz_x2", np.int8, (k, n)),
                                             arr("nz_scale", np.float32, (n,)),
                                             pertoken_scale=arr("nz_pertoken", np.float32, (m,)),
                                             output_dtype="bfloat16"))
