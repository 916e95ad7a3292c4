"""C++ programs written like CANN's examples/test_aclnn_<op>.cpp, built with g++ against `npu-emu cabi build`'s
prefix and run as subprocesses: their printed outputs equal npu_emu.ops on the same inputs, bit for bit."""

import numpy as np

from npu_emu import ops


def _buf(data, dtype):
    """A program's printed bytes as a writable array: numba types a read-only array (np.frombuffer of bytes) as a
    new signature, and the kernels npu-emu compile precompiled would be compiled again here for it."""
    return np.frombuffer(bytearray(data), dtype)


def _check(values, name, expected):
    got = np.frombuffer(values[name], np.uint8)
    want = np.ascontiguousarray(expected).view(np.uint8).reshape(-1)
    np.testing.assert_array_equal(got, want, err_msg=name)


def test_sign_bits_unpack_and_pack(programs, run):
    rc, v, text = run(programs["test_aclnn_sign_bits"])
    assert rc == 0, text
    x = _buf(v["unpack_x"], np.uint8)
    _check(v, "unpack_out", ops.npu_sign_bits_unpack(x, 2, 0))
    f = _buf(v["pack_x"], np.float32)
    _check(v, "pack_out", ops.npu_sign_bits_pack(f, 2))


def test_dynamic_mx_quant_and_grouped(programs, run):
    import ml_dtypes

    rc, v, text = run(programs["test_aclnn_dynamic_mx_quant"])
    assert rc == 0, text
    x = _buf(v["mx_x"], ml_dtypes.bfloat16).reshape(2, 64)
    y, scale = ops.npu_dynamic_mx_quant(x, axis=-1, dst_type=24)       # torch_npu code of float8_e4m3fn
    _check(v, "mx_y", y)
    _check(v, "mx_scale", scale)
    x = _buf(v["grouped_x"], ml_dtypes.bfloat16).reshape(64, 32)
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
        return _buf(v[name], dtype).reshape(shape)

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
    # aclnnPermute + aclnnTransMatmulWeight: the weight's bytes are npu-emu's FRACTAL_NZ layout of the transpose
    from npu_emu.ascendc.nz import nd_to_nz

    x2 = np.ascontiguousarray(arr("tw_x2t", np.int8, (n, k)).T)
    _check(v, "tw_weight_nz", nd_to_nz(x2, c0=32))
    assert "weight_format=29" in text and "weight_storage_dims=4" in text and f"weight_elements={k * n}" in text
    _check(v, "tw_out", ops.npu_quant_matmul(arr("tw_x1", np.int8, (m, k)), x2, arr("tw_scale", np.float32, (n,)),
                                             pertoken_scale=arr("tw_pertoken", np.float32, (m,)),
                                             output_dtype="float16"))


def test_gather_dequant_int8(programs, run):
    rc, v, text = run(programs["test_aclnn_gather_dequant_int8"])
    assert rc == 0, text
    table = _buf(v["table"], np.uint8).reshape(16, 256)
    idx = _buf(v["indices"], np.int32).reshape(2, 4)
    scale = _buf(v["scale"], np.float16)
    zp = _buf(v["zero_point"], np.float16)
    _check(v, "out", ops.gather_dequant_int8(table, idx, scale, zp))


def test_threads_share_the_interpreter(programs, run):
    """Four threads with their own streams call aclnn at once: each gets its own result."""
    rc, v, text = run(programs["test_aclnn_threads"])
    assert rc == 0, text
    for i in range(4):
        _check(v, f"out{i}", ops.npu_sign_bits_unpack(_buf(v[f"x{i}"], np.uint8), 2, 0))


ERRORS = {
    "null_tensor": 161001, "null_out": 161001, "wrong_dtype": 161002, "bad_dtype_arg": 161002,
    "null_workspace_size_ptr": 161001, "view_past_allocation": 161002, "destroyed_tensor": 161002,
    "unsupported_format": 161002, "null_executor": 161001, "get_workspace": 0, "null_workspace": 161001,
    "short_workspace_size": 161002, "short_workspace_allocation": 161002, "bad_stream": 161002, "run": 0,
    "executor_reused": 161002, "synchronize": 0,
    "gather_get_workspace": 0, "launch_failure": 161002, "synchronize_after_failure": 161002, "synchronize_again": 0,
    "weight_size_null": 161001, "weight_size_bad_dtype": 161002, "weight_size": 0,
    "trans_weight_short_allocation": 161002, "permute_bad_dims": 161002, "permute_null": 161001,
    "sparse_not_sparse": 161002, "sparse_null": 561103, "sparse_outputs_untouched": 0,
    "malloc_small": 0,
    # the acl runtime's own code for every bad argument, ACL_ERROR_INVALID_PARAM
    "memcpy_count_over_destmax": 100000, "memcpy_into_padding": 0, "memcpy_past_allocation": 100000,
    "memcpy_read_past_allocation": 100000, "malloc_align32": 0, "memcpy_align32_past": 100000, "free_align32": 0,
    "memcpy_null": 100000, "memcpy_host_as_device": 100000, "memcpy_bad_kind": 100000, "memcpy_ok": 0,
    "malloc_null": 100000, "free_foreign": 100000, "free_ok": 0, "free_twice": 100000, "set_device_1": 100000,
    "destroy_stream_null": 100000, "end": 0,
}


def test_error_paths_return_cann_statuses(programs, run):
    rc, v, text = run(programs["test_aclnn_errors"])
    assert rc == 0, text
    got = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and value.lstrip("-").isdigit():
            got[name] = int(value)
    assert got == {**ERRORS, "workspace_size": got.get("workspace_size"), "weight_elements": 48 * 64}, text
    assert got["workspace_size"] > 0
    # a refused launch wrote nothing: the output still holds the zeros it was created with
    assert v["out_after_refused"] == bytes(64 * 4)
    # every failure came with a message saying what was wrong
    for name, status in ERRORS.items():
        if status:
            assert f"#{name}: " in text and f"#{name}: \n" not in text, name


def test_sparse4to2_quant_matmul(programs, run):
    """aclnnTransSparse4to2Para on the host (new[] outputs), then the op on tensors with the compressed storage."""
    rc, v, text = run(programs["test_aclnn_sparse4to2quant_matmul"])
    assert rc == 0, text
    m, k, n = 8, 128, 32
    w = _buf(v["weight"], np.int8).reshape(n, k)
    sw, idx = ops.trans_sparse4to2_para(w)
    want = ops.sparse4to2_quant_matmul(_buf(v["x"], np.int8).reshape(m, k), sw, idx,
                                       _buf(v["x_scale"], np.float32),
                                       _buf(v["weight_scale"], np.float32))
    _check(v, "out", want)


def test_npu_emu_soc_selects_the_emulated_soc(programs, run, monkeypatch):
    """NPU_EMU_SOC reaches the embedded interpreter: ascend950pr's arch35 kernels pack MSB first."""
    monkeypatch.setenv("NPU_EMU_SOC", "ascend950pr")
    rc, v, text = run(programs["test_aclnn_sign_bits"])
    assert rc == 0, text
    x = _buf(v["unpack_x"], np.uint8)
    _check(v, "unpack_out", ops.npu_sign_bits_unpack(x, 2, 0, soc="ascend950pr"))
    f = _buf(v["pack_x"], np.float32)
    want = ops.npu_sign_bits_pack(f, 2, soc="ascend950pr")
    assert not np.array_equal(want, ops.npu_sign_bits_pack(f, 2))       # the test can tell the SoCs apart
    _check(v, "pack_out", want)


def test_grouped_matmul_v4_tensor_lists(programs, run):
    """aclnnGroupedMatmulV4 / V5 with aclTensorList (and aclIntArray) arguments: one (E, K, N) weight, then E separated (K, N) views;
    rows after the last group keep what y held; a destroyed list is a status."""
    rc, v, text = run(programs["test_aclnn_grouped_matmul"])
    assert rc == 0, text
    e, m, k, n = 3, 20, 32, 16
    x = _buf(v["x"], np.int8).reshape(m, k)
    w = _buf(v["weight"], np.int8).reshape(e, k, n)
    gl = _buf(v["group_list"], np.int64)
    want = ops.npu_grouped_matmul([x], [w], group_list=gl, group_list_type=1, split_item=3, group_type=0,
                                  output_dtype="int32")[0]
    _check(v, "y", want)
    _check(v, "y_separated", want)
    _check(v, "y_v5", want)                         # aclnnGroupedMatmulV5 with an aclIntArray tuning config
    assert "stale_list_status:161002" in text


def test_grouped_matmul_mx_and_antiquant(programs, run, monkeypatch):
    """docs/ops/grouped_matmul.md §2.3: MXFP8 through aclnnGroupedMatmulV4 on ascend950pr (NPU_EMU_SOC), W8A16
    through aclnnGroupedMatmulV5 on the default SoC; each y is npu_emu.ops' bits, rows after the last group zeros."""
    import ml_dtypes

    e, m, n = 3, 20, 16
    prog = programs["test_aclnn_grouped_matmul_modes"]
    rc, v, text = run(prog, "antiquant")
    assert rc == 0, text
    k = 32
    x = _buf(v["x"], np.float16).reshape(m, k)
    w = _buf(v["weight"], np.int8).reshape(e, k, n)
    s = _buf(v["antiquant_scale"], np.float16).reshape(e, n)
    o = _buf(v["antiquant_offset"], np.float16).reshape(e, n)
    gl = _buf(v["group_list"], np.int64)
    want = ops.npu_grouped_matmul([x], [w], antiquant_scale=[s], antiquant_offset=[o], group_list=gl,
                                  group_list_type=1, split_item=3, group_type=0)[0]
    want[17:] = 0                                   # rows outside every group: what y held
    _check(v, "y", want)

    monkeypatch.setenv("NPU_EMU_SOC", "ascend950pr")
    rc, v, text = run(prog, "mx")
    assert rc == 0, text
    k = 96
    kp = -(-k // 64)
    x = _buf(v["x"], np.uint8).reshape(m, k).view(ml_dtypes.float8_e4m3fn)
    w = _buf(v["weight"], np.uint8).reshape(e, k, n).view(ml_dtypes.float8_e4m3fn)
    s2 = _buf(v["scale"], np.uint8).reshape(e, kp, n, 2).view(ml_dtypes.float8_e8m0fnu)
    s1 = _buf(v["per_token_scale"], np.uint8).reshape(m, kp, 2).view(ml_dtypes.float8_e8m0fnu)
    want = ops.npu_grouped_matmul([x], [w], scale=[s2], per_token_scale=[s1], group_list=gl, group_list_type=1,
                                  split_item=3, group_type=0, output_dtype="bfloat16", soc="ascend950pr")[0]
    want[17:] = 0
    _check(v, "y", want)
