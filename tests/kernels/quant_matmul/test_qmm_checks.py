"""The aclnn checks and their status codes (docs/ops/quant_matmul.md §9; hicann/ops-nn aclnn_quant_matmul_v5.cpp,
aclnn_quant_matmul_v4.cpp, quant_matmul_checker.cpp), the V4 routing, the empty-tensor shortcuts and the front-end
argument checks."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.frontend.core import recent_error
from npu_emu.kernels.quant_matmul import api
from npu_emu.kernels.quant_matmul.api import NzWeight, npu_quant_matmul, npu_trans_quant_param

E4M3, BF16 = ml_dtypes.float8_e4m3fn, ml_dtypes.bfloat16
A2, A5 = "ascend910b2", "ascend950pr"
NULL, INVALID, RUNTIME, TILING, NO_KERNEL = 161001, 161002, 361001, 561002, 561003


def i8(*shape):
    return np.ones(shape, np.int8)


def u64(n):
    return npu_trans_quant_param(np.full(n, 0.01, np.float32))


def v5(x1=None, x2=None, x1s=None, x2s=None, ys=None, x1o=None, x2o=None, yo=None, bias=None, t1=False, t2=False,
       gs=0, out=None, **kw):
    return api.aclnnQuantMatmulV5GetWorkspaceSize(x1, x2, x1s, x2s, ys, x1o, x2o, yo, bias, t1, t2, gs, out, **kw)


def status(ret):
    return ret[0]


OK_ARGS = dict(x1=i8(4, 32), x2=i8(32, 16), x2s=u64(16), out=np.zeros((4, 16), np.float16))


def test_valid_call_runs_once():
    st, ws, ex = v5(**OK_ARGS)
    assert st == 0 and ws == 16 * 1024 * 1024
    out = OK_ARGS["out"]
    assert api.aclnnQuantMatmulV5(None, ws, ex) == 0
    # acc = 32 everywhere; * t19(0.01f) = 0.0099945068359375 -> 0.31982421875 -> fp16 0.31982421875 (exact)
    assert np.all(out == np.float16(0.31982421875))
    assert api.aclnnQuantMatmulV5(None, ws, ex) == 561000        # an executor runs once


@pytest.mark.parametrize("missing", ["x1", "x2", "x2s", "out"])
def test_v5_nullptr(missing):
    assert status(v5(**{**OK_ARGS, missing: None})) == NULL


def test_v5_unsupported_present_arguments_are_nullptr_status():
    # CheckInputExistence fails with ACLNN_ERR_PARAM_NULLPTR for every failure (§14 says 161002 for x1Offset;
    # aclnn_quant_matmul_v5.cpp returns CHECK_RET(..., ACLNN_ERR_PARAM_NULLPTR))
    assert status(v5(**OK_ARGS, x1o=np.ones(1, np.float32))) == NULL
    assert status(v5(**OK_ARGS, ys=np.ones((1, 16), np.uint64))) == NULL
    assert status(v5(**OK_ARGS, yo=np.ones(16, np.float32))) == NULL
    assert status(v5(**OK_ARGS, x1o=np.ones(0, np.float32))) == 0   # empty tensors count as absent


@pytest.mark.parametrize("change, code", [
    (dict(x1=i8(32)), INVALID),                                      # x1 must be at least 2-D
    (dict(x1=i8(2, 2, 2, 2, 2, 2, 4, 32)), INVALID),                 # at most 6-D
    (dict(x2=i8(31, 16)), INVALID),                                  # K mismatch
    (dict(x2s=np.full(16, 0.5, np.float32)), INVALID),               # fp16 out on A2 needs a UINT64 scale
    (dict(x2s=u64(3)), INVALID),                                     # scale length n or 1
    (dict(out=np.zeros((4, 15), np.float16)), INVALID),              # out shape
    (dict(out=np.zeros((4, 16), np.float32)), INVALID),              # fp32 out is not an int8 output dtype on A2
    (dict(bias=np.ones(15, np.int32)), INVALID),                     # bias shape
    (dict(bias=np.ones(16, np.float32)), INVALID),                   # fp16 out: bias must be INT32
    (dict(x2o=np.ones(16, np.float32)), INVALID),                    # offset only with an int8 output
    (dict(x1=i8(0, 32), out=np.zeros((0, 16), np.float16)), INVALID),  # A2: empty x1 rejected
])
def test_v5_invalid_a2(change, code):
    assert status(v5(**{**OK_ARGS, **change})) == code


def test_v5_batch_broadcast_rules():
    assert status(v5(x1=i8(3, 4, 32), x2=i8(2, 32, 16), x2s=u64(16), out=np.zeros((3, 4, 16), np.float16))) == INVALID
    assert status(v5(x1=i8(3, 4, 32), x2=i8(1, 32, 16), x2s=u64(16), out=np.zeros((3, 4, 16), np.float16))) == 0
    # 2-D inputs with a (m, 1, n)-style 3-D out of M = 1 is the special case CheckOutShape lets through
    assert status(v5(x1=i8(1, 32), x2=i8(32, 16), x2s=u64(16), out=np.zeros((1, 1, 16), np.float16))) == 0


def test_v5_dtype_rules_a2():
    kc = dict(x1=i8(4, 32), x2=i8(32, 16), x1s=np.ones(4, np.float32), x2s=np.ones(16, np.float32))
    assert status(v5(**kc, out=np.zeros((4, 16), BF16))) == 0
    assert status(v5(**kc, out=np.zeros((4, 16), np.float16))) == 0
    assert status(v5(**kc, out=np.zeros((4, 16), np.int8))) == INVALID          # K-C: fp16/bf16 only
    assert status(v5(**kc, bias=np.ones(16, np.float16), out=np.zeros((4, 16), BF16))) == INVALID
    assert status(v5(**{**kc, "x1s": np.ones(5, np.float32)}, out=np.zeros((4, 16), BF16))) == INVALID
    fp8 = dict(x1=np.ones((4, 32), E4M3), x2=np.ones((32, 16), E4M3), x2s=u64(16))
    assert status(v5(**fp8, out=np.zeros((4, 16), np.float16))) == INVALID       # fp8 is a 950 mode
    assert status(v5(**fp8, out=np.zeros((4, 16), np.float16), soc=A5)) == 0


def test_v5_950_rules():
    fp8 = dict(x1=np.ones((4, 32), E4M3), x2=np.ones((32, 16), E4M3), soc=A5)
    out = np.zeros((4, 16), BF16)
    assert status(v5(**fp8, x2s=u64(16), bias=np.ones(16, np.int32), out=out)) == INVALID     # bias FLOAT
    assert status(v5(**fp8, x2s=u64(16), gs=32, out=out)) == INVALID                          # groupSize 0 here
    assert status(v5(**fp8, x2s=u64(16), out=np.zeros((4, 16), np.int8))) == INVALID         # fp8 out dtypes
    assert status(v5(**fp8, x2s=np.ones(16, np.float32), x1s=np.ones(4, np.float32), out=out)) == 0
    # G-B / B-B: bias must be null, group size [1|128, 128, 128]
    pb = dict(x1s=np.ones((4, 1), np.float32), x2s=np.ones((1, 1), np.float32), out=out)
    assert status(v5(**fp8, **pb, gs=(1 << 32) | (128 << 16) | 128)) == 0
    assert status(v5(**fp8, **pb, gs=(1 << 32) | (64 << 16) | 128)) == INVALID
    assert status(v5(**fp8, **pb, gs=(1 << 32) | (128 << 16) | 128, bias=np.ones(16, np.float32))) == INVALID
    # NZ x2 is not accepted by V5 on 950
    assert status(v5(x1=i8(4, 32), x2=NzWeight.from_nd(i8(32, 16)), x2s=u64(16), out=np.zeros((4, 16), np.float16),
                     soc=A5)) == INVALID


def _mx(k=64, gs=(1 << 32) | (1 << 16) | 32, x1s_k=None):
    g = -(-k // 64)
    return dict(x1=np.ones((4, k), E4M3), x2=np.ones((16, k), E4M3).T,
                x1s=np.full((4, g if x1s_k is None else x1s_k, 2), 127, np.uint8),
                x2s=np.full((16, g, 2), 127, np.uint8), gs=gs, out=np.zeros((4, 16), BF16), soc=A5,
                x1_scale_dtype="float8_e8m0", x2_scale_dtype="float8_e8m0")


def test_v5_mx_rules():
    assert status(v5(**_mx())) == 0
    assert status(v5(**_mx(gs=0))) == 0                                   # inferred: k / (2 * pairs) = 32, m, n
    assert status(v5(**_mx(gs=(1 << 32) | (1 << 16) | 64))) == INVALID    # MX needs [1, 1, 32]
    assert status(v5(**_mx(x1s_k=3))) == INVALID                          # ceil(k / 64) pairs
    assert status(v5(**_mx(gs=0), group_size_inference="explicit")) == INVALID


@pytest.mark.parametrize("soc, code", [(A5, RUNTIME), (A2, 0)])      # A2: the emulated V4 MSD kernel (issue 8)
def test_a8w4_int_routes_to_v4(soc, code):
    # int8 x int32-packed int4, per-channel UINT64 x2Scale, x1Scale, yOffset: the V4 MSD path (A2/A3 only)
    args = dict(x1=i8(4, 64), x2=np.zeros((64, 2), np.int32), x1s=np.ones(4, np.float32), x2s=u64(16),
                yo=np.ones(16, np.float32), out=np.zeros((4, 16), np.float16), soc=soc)
    assert status(v5(**args)) == code


def test_a8w4_int_through_v4_needs_the_y_offset_it_cannot_pass():
    # aclnnQuantMatmulV4 has no yOffset, which the MSD kernel adds: rejected in phase one (it used to pass the checks
    # and fail in phase two with a KeyError)
    out = np.zeros((2, 8), np.float16)
    ret = api.aclnnQuantMatmulV4GetWorkspaceSize(i8(2, 256), np.ones((256, 1), np.int32), u64(8).view(np.uint64), None,
                                                np.ones(2, np.float32), None, False, False, out, soc=A2)
    assert status(ret) == INVALID and "yOffset" in recent_error()
    assert not out.any()


def _a8w4_float(**kw):
    k, n = 64, 16
    d = dict(x1=np.ones((4, k), E4M3), x2=np.zeros((n, k // 2), np.uint8), x1s=None,
             x2s=np.ones((n, k // 32), BF16), ys=np.ones((1, n), np.uint64), t2=True, gs=32,
             out=np.zeros((4, n), BF16), x2_dtype="float4_e2m1")
    d.update(kw)
    return d


def test_a8w4_float_rules():
    assert status(v5(**_a8w4_float(soc=A2))) == RUNTIME                  # "A8W4 only Support NpuArch DAV3510"
    assert status(v5(**_a8w4_float(soc=A5))) == 0                        # valid T-CG: the emulated V4 kernel
    assert status(v5(**_a8w4_float(soc=A5, bias=np.ones((1, 16), BF16)))) == INVALID   # T-CG: no bias
    assert status(v5(**_a8w4_float(soc=A5, gs=64))) == INVALID           # groupSizeK 32
    assert status(v5(**_a8w4_float(soc=A5, t2=False))) == INVALID        # ND x2 needs transposeX2
    assert status(v5(**_a8w4_float(soc=A5, x2s=np.ones((16, 2), np.float32)))) == INVALID  # MX or T-CG only


def test_a2_perblock_tiling_rejections():
    def pb(n, k=512):
        return v5(x1=i8(4, k), x2=i8(n, k), x1s=np.ones((4, k // 128), np.float32),
                  x2s=np.ones((n // 128, k // 128), np.float32), t2=True, gs=(1 << 32) | (128 << 16) | 128,
                  bias=np.ones(n, np.float32), out=np.zeros((4, n), BF16), soc=A2)
    # docs/ops/quant_matmul.md §14: N = 128 -> 561002
    assert status(pb(128)) == TILING
    assert status(pb(256)) == 0                                           # valid: the emulated V4 per-block kernel


def test_empty_shortcuts():
    # 950: m == 0 (ND) returns success without a kernel; A2 rejects empty tensors
    args = dict(x1=i8(0, 32), x2=i8(32, 16), x2s=u64(16), out=np.zeros((0, 16), np.float16))
    st, ws, ex = v5(**args, soc=A5)
    assert st == 0 and ws == 0 and api.aclnnQuantMatmulV5(None, 0, ex) == 0
    assert status(v5(**args, soc=A2)) == INVALID
    y = npu_quant_matmul(i8(0, 32), i8(32, 16), np.full(16, 0.1, np.float32), output_dtype="float16", soc=A5)
    assert y.shape == (0, 16) and y.dtype == np.float16


def _v3(x1, x2, scale, out, soc):
    return api.aclnnQuantMatmulV3GetWorkspaceSize(x1, x2, scale, None, None, False, False, out, soc=soc)


def _v4(x1, x2, scale, out, soc):
    return api.aclnnQuantMatmulV4GetWorkspaceSize(x1, x2, scale, None, None, None, False, False, out, soc=soc)


def _v5(x1, x2, scale, out, soc):
    return v5(x1=x1, x2=x2, x2s=scale, out=out, soc=soc)


F16_X2 = np.ones((32, 16), np.float16)                  # not a quant matmul x2 dtype


@pytest.mark.parametrize("call", [_v3, _v4, _v5])
def test_empty_inputs_a2_are_checked_before_rejection(call):
    # A2/A3 has no empty shortcut: CheckParams runs CheckDtypeValid, CheckShape, CheckFormat and only then
    # CheckEmptyTensor (161002) (hicann/ops-nn: matmul/quant_batch_matmul_v3/op_api/aclnn_quant_matmul_v4.cpp
    # CheckParams steps 1-4; V5 reaches the same QuantMatmulChecker, whose CheckParams ends in CheckEmptyTensor).
    # So an empty call with a wrong dtype or shape fails on that check, not on the emptiness.
    assert status(call(i8(0, 32), F16_X2, u64(16), np.zeros((0, 16), np.float16), A2)) == INVALID
    assert "FLOAT16" in recent_error()
    assert status(call(i8(0, 32), i8(32, 16), u64(16), np.zeros((3, 16), np.float16), A2)) == INVALID
    assert "empty" not in recent_error()                 # out's M (3) != x1's M (0): a shape error
    for x1, x2, out in ((i8(0, 32), i8(32, 16), (0, 16)), (i8(4, 32), i8(32, 0), (4, 0)),
                        (i8(4, 0), i8(0, 16), (4, 16))):
        assert status(call(x1, x2, u64(max(1, x2.shape[1])), np.zeros(out, np.float16), A2)) == INVALID
        assert "empty" in recent_error()


@pytest.mark.parametrize("call", [_v3, _v4, _v5])
def test_empty_m_or_n_on_950_returns_before_the_checks(call):
    # Ascend 950 (DAV_3510), not A8W4: M == 0 or N == 0 (ND x2) returns ACLNN_SUCCESS right after the null /
    # existence checks and before TensorPreProcess / PreMatmulCalcProcess / CheckParams, so even a wrong dtype
    # or out shape passes (hicann/ops-nn: aclnn_quant_matmul_v4.cpp and
    # matmul/quant_batch_matmul_v4/op_host/op_api/aclnn_quant_matmul_v5.cpp,
    # aclnnQuantMatmulGetWorkspaceSizeCommonProcess, "aclnnV4 nd m/n=0" / "aclnnV5 nd m/n=0").
    st, ws, ex = call(i8(0, 32), F16_X2, u64(16), np.zeros((0, 16), np.float16), A5)
    assert st == 0 and ws == 0
    assert status(call(i8(0, 32), i8(32, 16), u64(16), np.zeros((3, 16), np.float16), A5)) == 0
    assert status(call(i8(4, 32), np.ones((32, 0), np.float16), u64(1), np.zeros((4, 0), np.float16), A5)) == 0
    # K is not part of the shortcut: the checks run and QuantMatmulChecker::CheckEmptyTensor rejects it
    assert status(call(i8(4, 0), i8(0, 16), u64(16), np.zeros((4, 16), np.float16), A5)) == INVALID
    assert "empty" in recent_error()


def test_empty_shortcut_exceptions_on_950():
    # V5's CheckInputExistence runs before the shortcut (its failures are 161001) ...
    assert status(v5(x1=i8(0, 32), x2=i8(32, 16), x2s=u64(16), x1o=np.ones(1, np.float32),
                     out=np.zeros((0, 16), np.float16), soc=A5)) == NULL
    # ... A8W4 (pseudo quant) never takes it: the checks run - A8W4 int is A2/A3 only, so on 950 the soc check
    # fires (361001) where a non-A8W4 call would have returned success; on A2 its own empty-scale check fires
    words = npu_trans_quant_param(np.full(16, 0.01, np.float32)).reshape(1, 16)
    a8w4 = dict(x1=i8(0, 256), x2=np.ones((256, 2), np.int32), x1s=np.ones((0, 1), np.float32), x2s=words,
                yo=np.ones(16, np.float32), gs=256, out=np.zeros((0, 16), BF16))
    assert status(v5(**a8w4, soc=A5)) == RUNTIME
    assert status(v5(**a8w4, soc=A2)) == INVALID and "x1Scale" in recent_error()
    # ... and WeightNz runs CheckWeightNzParamsDAV3510 (x2 must be FRACTAL_NZ) before the common process
    st, _, _ = api.aclnnQuantMatmulWeightNzGetWorkspaceSize(i8(0, 64), i8(64, 32), None, u64(32), None, None, None,
                                                           None, None, False, False, 0, np.zeros((0, 32), np.float16),
                                                           soc=A5)
    assert st == INVALID and "format" in recent_error()
    # NZ x2: only M == 0 is a shortcut, N == 0 goes through the checks
    nz_n0 = api.aclnnQuantMatmulWeightNzGetWorkspaceSize(i8(4, 64), NzWeight.from_nd(i8(64, 0)), None, u64(1), None,
                                                         None, None, None, None, False, False, 0,
                                                         np.zeros((4, 0), np.float16), soc=A5)
    assert status(nz_n0) == INVALID


def test_npu_quant_matmul_empty_inputs():
    # torch_npu's npu_quant_matmul adds no empty-tensor rule of its own (op-plugin QuantMatmulKernelNpuOpApi.cpp
    # checks dims and group sizes, then calls aclnnQuantMatmulV4/V5): the aclnn behaviour above shows through.
    f16 = np.full(16, 0.1, np.float32)
    with pytest.raises(AclnnError) as e:
        npu_quant_matmul(i8(0, 32), F16_X2, f16, output_dtype="float16", soc=A2)
    assert e.value.status == INVALID and "FLOAT16" in str(e.value)
    y = npu_quant_matmul(i8(0, 32), F16_X2, f16, output_dtype="float16", soc=A5)
    assert y.shape == (0, 16) and y.dtype == np.float16
    with pytest.raises(AclnnError) as e:
        npu_quant_matmul(i8(4, 0), i8(0, 16), f16, output_dtype="float16", soc=A5)
    assert e.value.status == INVALID and "empty" in str(e.value)
    with pytest.raises(AclnnError) as e:                    # group_sizes is op-plugin's own check, before aclnn
        npu_quant_matmul(i8(0, 32), i8(32, 16), f16, output_dtype="float16", soc=A5, group_sizes=[1, 2])
    assert e.value.status == INVALID


def test_unsupported_socs():
    assert status(v5(**OK_ARGS, soc="kirin9020")) == RUNTIME             # no QuantMatmul on this arch
    args = dict(x1=i8(4, 32), x2=i8(32, 16), x2s=np.ones(16, np.float32), x1s=np.ones(4, np.float32),
                out=np.zeros((4, 16), np.float16))
    assert status(v5(**args, soc="ascend310p")) == INVALID                # 310P wants an NZ x2 ...
    assert status(v5(**{**args, "x2": NzWeight.from_nd(i8(32, 16))}, soc="ascend310p")) == NO_KERNEL


# --- aclnnQuantMatmulV3 / V4 / WeightNz ------------------------------------------------------------------------

def test_v3_v4_apis():
    out = np.zeros((4, 16), np.float16)
    st, ws, ex = api.aclnnQuantMatmulV3GetWorkspaceSize(i8(4, 32), i8(32, 16), u64(16), None, None, False, False, out)
    assert st == 0 and api.aclnnQuantMatmulV3(None, ws, ex) == 0
    assert np.array_equal(out, npu_quant_matmul(i8(4, 32), i8(32, 16), np.full(16, 0.01, np.float32),
                                                output_dtype="float16"))
    fp8 = (np.ones((4, 32), E4M3), np.ones((32, 16), E4M3), u64(16))
    # the legacy APIs take integer inputs on A2/A3 ...
    assert status(api.aclnnQuantMatmulV3GetWorkspaceSize(*fp8, None, None, False, False, out)) == INVALID
    # ... but on 950 CheckParamsDAV3510 hands them to the V3 checker as interface type 5, which accepts fp8
    assert status(api.aclnnQuantMatmulV3GetWorkspaceSize(*fp8, None, None, False, False, out, soc=A5)) == 0
    # V4 legacy A2 rules: pertoken needs fp16/bf16 out; no pertoken + fp16 out forbids a FLOAT scale
    pt = np.ones(4, np.float32)
    assert status(api.aclnnQuantMatmulV4GetWorkspaceSize(i8(4, 32), i8(32, 16), np.ones(16, np.float32), None, pt,
                                                         None, False, False, np.zeros((4, 16), np.int8))) == INVALID
    assert status(api.aclnnQuantMatmulV4GetWorkspaceSize(i8(4, 32), i8(32, 16), np.ones(16, np.float32), None, None,
                                                         None, False, False, out)) == INVALID
    assert status(api.aclnnQuantMatmulV4GetWorkspaceSize(i8(4, 32), i8(32, 16), np.ones(16, np.float32), None, pt,
                                                         None, False, False, out)) == 0
    assert status(api.aclnnQuantMatmulV3GetWorkspaceSize(None, i8(32, 16), u64(16), None, None, False, False,
                                                         out)) == NULL


def test_weight_nz_api():
    x1, x2 = np.random.default_rng(0).integers(-5, 5, (4, 64)).astype(np.int8), \
        np.random.default_rng(1).integers(-5, 5, (64, 32)).astype(np.int8)
    out = np.zeros((4, 32), np.float16)
    args = (x1, NzWeight.from_nd(x2), None, u64(32), None, None, None, None, None, False, False, 0, out)
    st, ws, ex = api.aclnnQuantMatmulWeightNzGetWorkspaceSize(*args)
    assert st == 0 and api.aclnnQuantMatmulWeightNz(None, ws, ex) == 0
    assert np.array_equal(out, npu_quant_matmul(x1, x2, np.full(32, 0.01, np.float32), output_dtype="float16"))
    nd = list(args)
    nd[1] = x2
    assert status(api.aclnnQuantMatmulWeightNzGetWorkspaceSize(*nd)) == INVALID          # not NZ
    x1o = list(args)
    x1o[5] = np.ones(1, np.float32)
    assert status(api.aclnnQuantMatmulWeightNzGetWorkspaceSize(*x1o)) == INVALID         # checkNotSupportParam
    bad = list(args)
    bad[1] = NzWeight(NzWeight.from_nd(x2).storage[:, :2], (64, 32))
    assert status(api.aclnnQuantMatmulWeightNzGetWorkspaceSize(*bad)) == INVALID         # storage size


# --- trans quant param ------------------------------------------------------------------------------------------

def test_trans_quant_param_checks():
    s = np.array([0.5, 0.25], np.float32)
    out = np.zeros(2, np.uint64)
    st, ws, ex = api.aclnnTransQuantParamV2GetWorkspaceSize(s, None, out)
    assert st == 0 and api.aclnnTransQuantParamV2(None, ws, ex) == 0 and out[0] == (1 << 46) | 0x3F000000
    assert status(api.aclnnTransQuantParamV2GetWorkspaceSize(None, None, out)) == NULL
    assert status(api.aclnnTransQuantParamV2GetWorkspaceSize(s, None, np.zeros(3, np.uint64))) == INVALID
    assert status(api.aclnnTransQuantParamV3GetWorkspaceSize(s, None, 2, out)) == INVALID
    assert status(api.aclnnTransQuantParamV2GetWorkspaceSize(s.astype(np.float16), None, out)) == INVALID
    assert status(api.aclnnTransQuantParamV2GetWorkspaceSize(s, np.ones(3, np.float32),
                                                             np.zeros(3, np.uint64))) == INVALID
    with pytest.raises(AclnnError) as e:
        npu_trans_quant_param(s, None, 3)
    assert e.value.status == INVALID


# --- torch_npu front-end argument checks ------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(group_sizes=[1, 2]), dict(group_sizes=[0, 0, 70000]),
                                dict(float_accum="fast"), dict(fixpipe_round="up"), dict(cast_overflow="wrap"),
                                dict(output_dtype="float64"), dict(x1_dtype="float16")])
def test_npu_quant_matmul_argument_errors(kw):
    with pytest.raises(AclnnError) as e:
        npu_quant_matmul(i8(4, 32), i8(32, 16), np.full(16, 0.1, np.float32), **kw)
    assert e.value.status == INVALID


def test_npu_quant_matmul_none_input():
    with pytest.raises(AclnnError) as e:
        npu_quant_matmul(None, i8(32, 16), np.full(16, 0.1, np.float32))
    assert e.value.status == NULL
