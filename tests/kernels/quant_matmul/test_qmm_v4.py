"""QuantBatchMatmulV4 modes (docs/ops/quant_matmul.md §7.4, §7.7, §7.8): the hand-checked vectors TV-F, TV-G, TV-H,
random inputs against the independent golden (bit-exact), the A2 / 950 G-B orders, the MSD fp16 workspace, the
aclnn pair, the V4 tiling rejections and thread-count invariance."""

import ml_dtypes
import numba
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.frontend.core import recent_error
from npu_emu.kernels.quant_matmul import golden as golden
from npu_emu.kernels.quant_matmul import api
from npu_emu.kernels.quant_matmul.api import npu_quant_matmul, npu_trans_quant_param

BF16 = ml_dtypes.bfloat16
E4M3, FP4 = ml_dtypes.float8_e4m3fn, ml_dtypes.float4_e2m1fn
A2, A5 = "ascend910b2", "ascend950pr"
GS_GB = [1, 128, 128]
OUT_NP = {"bfloat16": BF16, "float16": np.float16}


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    assert np.array_equal(bits(got), bits(want))


def pack_int32(w):
    """int4 values (r, c) -> int32 (r, c/8), element 8j + t in nibble t (LSB first, docs/ops/quant_matmul.md §3.1)."""
    u = (w.astype(np.int64) & 0xF).reshape(w.shape[0], -1, 8)
    return (u << (4 * np.arange(8))).sum(-1).astype(np.uint32).view(np.int32)


def pack_bytes(w):
    """int4 values (r, c) -> int8 bytes (r, c/2), even element in the low nibble."""
    u = (w.astype(np.int16) & 0xF).astype(np.uint8).reshape(w.shape[0], -1, 2)
    return np.ascontiguousarray((u[..., 0] | (u[..., 1] << 4)).astype(np.int8))


def int4s(rng, shape):
    return rng.integers(-8, 8, shape).astype(np.int8)


def int8s(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int16).astype(np.int8)


# --- A8W4 int "MSD" (A2/A3) ---------------------------------------------------------------------------------

def msd(x1, w, s2_words, y_offset, x1_scale, out="bfloat16", **kw):
    return npu_quant_matmul(x1, pack_int32(w), s2_words, pertoken_scale=x1_scale, offset=y_offset,
                            output_dtype=OUT_NP[out], **kw)


@pytest.mark.parametrize("out", ["bfloat16", "float16"])
def test_tv_h(out):
    # vector TV-H: x1 = [-3, 100] -> hi [-1, 6], lo [5, -4]; W = [2, -1]; H = -8, L = 14; (16·-8 + 14 + 8)·0.5 = -53
    x1 = np.array([[-3, 100]], np.int8)
    w = np.zeros((2, 8), np.int8)
    w[:, 0] = [2, -1]
    s = npu_trans_quant_param(np.ones(8, np.float32))
    y = msd(x1, w, s, np.array([8] + [0] * 7, np.float32), np.array([0.5], np.float32), out)
    assert y.dtype == OUT_NP[out] and float(y[0, 0]) == -53.0
    assert float(golden.a8w4_msd(x1, w, s, np.array([8] + [0] * 7, np.float32), np.array([0.5], np.float32),
                                 out_dtype=out)[0, 0]) == -53.0


@pytest.mark.parametrize("m, k, n, per_group, out", [
    (3, 512, 16, True, "bfloat16"),
    (17, 768, 40, True, "float16"),
    (5, 70, 24, False, "bfloat16"),
    (33, 256, 8, False, "float16"),
])
def test_msd_random_vs_golden(m, k, n, per_group, out):
    rng = np.random.default_rng(m * k + n)
    x1 = int8s(rng, (m, k))
    w = int4s(rng, (k, n))
    g = -(-k // 256)
    sf = rng.uniform(0.001, 0.05, (g, n) if per_group else (n,)).astype(np.float32)
    words = npu_trans_quant_param(sf.reshape(-1)).reshape(sf.shape)
    s19 = golden.deq_scale(words).reshape(-1, n)
    # yOffset = 8·Σ_k W·x2Scale (the documented precomputation), in float32
    y_off = (8 * (w.reshape(-1 if per_group else 1, min(k, 256) if per_group else k, n).astype(np.float32)
                  * s19[:, None, :]).sum(axis=(0, 1))).astype(np.float32)
    x1s = rng.uniform(0.5, 2, (m, 1) if per_group else (m,)).astype(np.float32)
    kw = dict(group_sizes=[0, 0, 256]) if per_group else {}
    y, tr = msd(x1, w, words, y_off, x1s, out, trace=True, **kw)
    want = golden.a8w4_msd(x1, w, words, y_off, x1s, out_dtype=out)
    same(y, want)
    assert tr.op == "QuantBatchMatmulV4" and tr.quant_mode.startswith("A8W4-int MSD")


def test_msd_fp16_workspace_is_modelled():
    # The per-group results pass through an fp16 workspace (Fixpipe fp16 cast, fp16 atomic add), and the hi plane
    # is then scaled by 16, so its fp16 rounding errors reach the output at the output's own ulp: the result must
    # differ from the exactly computed dequant (Σ_g (x1_g @ W_g)·s_g, rounded once to fp16) somewhere, and match
    # the golden's step-by-step fp16 chain bit for bit.
    rng = np.random.default_rng(1)
    m, k, n = 32, 1024, 16
    x1 = int8s(rng, (m, k))
    w = int4s(rng, (k, n))
    sf = rng.uniform(0.01, 0.05, (4, n)).astype(np.float32)
    words = npu_trans_quant_param(sf.reshape(-1)).reshape(4, n)
    s19 = golden.deq_scale(words).reshape(4, n).astype(np.float64)
    y_off = (8 * (w.reshape(4, 256, n).astype(np.float64) * s19[:, None, :]).sum(axis=(0, 1))).astype(np.float32)
    x1s = np.ones((m, 1), np.float32)
    y = msd(x1, w, words, y_off, x1s, "float16", group_sizes=[0, 0, 256])
    same(y, golden.a8w4_msd(x1, w, words, y_off, x1s, out_dtype="float16"))
    exact = sum((x1[:, g * 256:(g + 1) * 256].astype(np.float64) @ w[g * 256:(g + 1) * 256].astype(np.float64))
                * s19[g] for g in range(4)).astype(np.float16)
    assert np.count_nonzero(bits(y) != bits(exact)) > 0


def test_msd_tiling_rejection():
    x1 = np.ones((1, 2, 256), np.int8)           # MSD: x1 must be 2-D (quant_batch_matmul_v4_msd_tiling.cpp)
    st, _, _ = api.aclnnQuantMatmulV5GetWorkspaceSize(
        x1, np.zeros((256, 1), np.int32), np.ones((2, 1), np.float32), npu_trans_quant_param(np.ones(8, np.float32)),
        None, None, None, np.ones(8, np.float32), None, False, False, 0, np.zeros((1, 2, 8), BF16))
    assert st in (161002, 561002)


# --- int8 G-B per-block (A2/A3 bias first, 950 bias last) ---------------------------------------------------

def test_tv_g_both_orders():
    # vector TV-G: out[0] = 128·1.875 + 1 = 241, out[1] = 240, out[128] = -128·1.875·2 = -480 (orders agree)
    m, k, n = 1, 512, 256
    x1 = np.ones((m, k), np.int8)
    x2 = np.ones((n, k), np.int8)
    x2[128:] = -1
    x1s = np.array([[1, 0.5, 0.25, 0.125]], np.float32)
    x2s = np.array([[1, 1, 1, 1], [2, 2, 2, 2]], np.float32)
    b = np.zeros(n, np.float32)
    b[0] = 1
    for soc in (A2, A5):
        y, tr = npu_quant_matmul(x1, x2.T, x2s, pertoken_scale=x1s, bias=b, output_dtype=BF16, group_sizes=GS_GB,
                                 soc=soc, trace=True)
        assert [float(y[0, 0]), float(y[0, 1]), float(y[0, 128])] == [241.0, 240.0, -480.0]
        assert tr.op == "QuantBatchMatmulV4" and tr.quant_mode == "G-B"


@pytest.mark.parametrize("soc, m, k, n, with_bias", [
    (A2, 5, 512, 256, True), (A2, 130, 1024, 512, False), (A5, 7, 300, 200, True), (A5, 3, 128, 64, False),
])
def test_perblock_random_vs_golden(soc, m, k, n, with_bias):
    rng = np.random.default_rng(m + k + n)
    x1 = int8s(rng, (m, k))
    x2 = int8s(rng, (n, k))                       # stored (n, k): transposeX2 by stride
    g, n1 = -(-k // 128), -(-n // 128)
    x1s = (rng.uniform(0.001, 0.02, (m, g)) * rng.choice([-1, 1], (m, g))).astype(np.float32)
    x2s = rng.uniform(0.001, 0.02, (n1, g)).astype(np.float32)
    bias = rng.normal(0, 50, n).astype(np.float32) if with_bias else None
    y = npu_quant_matmul(x1, x2.T, x2s, pertoken_scale=x1s, bias=bias, output_dtype=BF16, group_sizes=GS_GB,
                         soc=soc)
    want = golden.perblock_int8(x1, x2.T, x1s, x2s.T, bias=bias, order="a2" if soc == A2 else "950")
    same(y, want)


def test_perblock_950_batch_broadcast():
    # 950 G-B with batch dims: x1 (2, m, k), x2 (1, k, n) and the scales broadcast numpy-style (§8); each
    # output batch element is the 2-D golden of its broadcast operands
    rng = np.random.default_rng(21)
    m, k, n = 3, 256, 200
    x1 = int8s(rng, (2, m, k))
    x2 = int8s(rng, (1, k, n))
    x1s = rng.uniform(0.01, 0.02, (2, m, 2)).astype(np.float32)
    x2s = rng.uniform(0.01, 0.02, (1, 2, 2)).astype(np.float32)
    y = npu_quant_matmul(x1, x2, x2s, pertoken_scale=x1s, output_dtype=BF16, group_sizes=GS_GB, soc=A5)
    assert y.shape == (2, m, n)
    for b in range(2):
        same(y[b], golden.perblock_int8(x1[b], x2[0], x1s[b], x2s[0], order="950"))


def test_perblock_orders_differ_on_signed_zero():
    # A zero row gives block sums P_j = 0; with a negative x1Scale every p_j is -0.0. The 950 order keeps acc =
    # p_0 = -0 (bf16 0x8000); the A2/A3 kernel starts its UB accumulator at 0.0 (no bias) and 0.0 + -0.0 = +0.0.
    m, k, n = 2, 512, 256
    x1 = np.zeros((m, k), np.int8)
    x2 = np.ones((n, k), np.int8)
    x1s = np.full((m, 4), -1.0, np.float32)
    x2s = np.ones((2, 4), np.float32)
    y2 = npu_quant_matmul(x1, x2.T, x2s, pertoken_scale=x1s, output_dtype=BF16, group_sizes=GS_GB, soc=A2)
    y5 = npu_quant_matmul(x1, x2.T, x2s, pertoken_scale=x1s, output_dtype=BF16, group_sizes=GS_GB, soc=A5)
    assert np.all(bits(y2) == 0x0000) and np.all(bits(y5) == 0x8000)
    same(y2, golden.perblock_int8(x1, x2.T, x1s, x2s.T, order="a2"))
    same(y5, golden.perblock_int8(x1, x2.T, x1s, x2s.T, order="950"))


# --- A4W4 asymmetric K-G ----------------------------------------------------------------------------------------

def a4w4(x1, x2, x1s, x2s, off, out="bfloat16", soc=A2, **kw):
    # 950 wants transposeX2 = true here (stored (n, k), passed as its transposed view); A2 takes (k, n)
    w = pack_bytes(x2.T).T if soc == A5 else pack_bytes(x2)
    return npu_quant_matmul(pack_bytes(x1), w, x2s, soc=soc, pertoken_scale=x1s, offset=off, x1_dtype="int4",
                            x2_dtype="int4", output_dtype=OUT_NP[out], group_sizes=[0, 0, 256], **kw)


def test_tv_f():
    # vector TV-F: acc = 96 + 192 + 768 + 1024 = 2080; ·0.1f = 208.0000031 -> fp32 208.0 -> bf16 208
    x1 = np.ones((1, 1024), np.int8)
    x2 = np.full((1024, 256), 2, np.int8)
    off = np.tile(np.array([0.5, 0.5, -1, 0], np.float16)[:, None], (1, 256))
    sc = np.tile(np.array([0.25, 0.5, 1, 2], np.float32)[:, None], (1, 256))
    for soc in (A2, A5):
        y, tr = a4w4(x1, x2, np.array([[0.1]], np.float32), sc, off, soc=soc, trace=True)
        assert np.all(y.astype(np.float32) == 208.0) and tr.quant_mode == "K-G asym"


@pytest.mark.parametrize("soc, m, out", [(A2, 3, "bfloat16"), (A2, 20, "float16"), (A5, 9, "bfloat16")])
def test_a4w4_random_vs_golden(soc, m, out):
    rng = np.random.default_rng(m)
    k, n = 1024, 256
    x1, x2 = int4s(rng, (m, k)), int4s(rng, (k, n))
    x1s = rng.uniform(0.01, 0.1, (m, 1)).astype(np.float32)
    x2s = rng.uniform(0.01, 0.1, (4, n)).astype(np.float32)
    off = rng.uniform(-8, 8, (4, n)).astype(np.float16)
    y = a4w4(x1, x2, x1s, x2s, off, out, soc=soc)
    same(y, golden.a4w4_pergroup_asym(x1, x2, x1s, x2s, off, out_dtype=out))


# --- front ends, routing, threads -------------------------------------------------------------------------------

def test_v5_aclnn_pair_perblock():
    rng = np.random.default_rng(3)
    m, k, n = 4, 512, 256
    x1, x2 = int8s(rng, (m, k)), int8s(rng, (n, k))
    x1s = rng.uniform(0.01, 0.02, (m, 4)).astype(np.float32)
    x2s = rng.uniform(0.01, 0.02, (2, 4)).astype(np.float32)
    out = np.zeros((m, n), BF16)
    st, ws, ex = api.aclnnQuantMatmulV5GetWorkspaceSize(x1, x2, x1s, x2s, None, None, None, None, None, False, True,
                                                        (1 << 32) | (128 << 16) | 128, out)
    assert st == 0
    assert api.aclnnQuantMatmulV5(None, ws, ex) == 0
    same(out, golden.perblock_int8(x1, x2.T, x1s, x2s.T, order="a2"))


def wnz(x1, x2, x1s, x2s, ys, yo, bias, t2, gs, out, **kw):
    st, ws, ex = api.aclnnQuantMatmulWeightNzGetWorkspaceSize(x1, x2, x1s, x2s, ys, None, None, yo, bias, False, t2, gs,
                                                              out, **kw)
    assert st == 0, recent_error()
    assert api.aclnnQuantMatmulWeightNz(None, ws, ex) == 0, recent_error()
    return out


@pytest.mark.parametrize("out", ["bfloat16", "float16"])
def test_msd_weight_nz(out):
    # aclnnQuantMatmulWeightNz, A8W4 int per-channel: x2 int32-packed int4 (k, n) in FRACTAL_NZ (c0 = 64 int4 = 8
    # int32 words, SelectNzK0Value); a UINT64 x2Scale is allowed with a BF16 out for A8W4
    # (CheckDtypeValidInBf16OutScenario)
    rng = np.random.default_rng(11)
    m, k, n = 5, 64, 128
    x1 = int8s(rng, (m, k))
    w = int4s(rng, (k, n))
    words = npu_trans_quant_param(rng.uniform(0.01, 0.02, n).astype(np.float32)).view(np.uint64)
    yo = rng.uniform(-1, 1, n).astype(np.float32)
    x1s = rng.uniform(0.5, 1, m).astype(np.float32)
    nz = api.NzWeight.from_nd(w.view(np.uint8), "int32")
    assert nz.storage.shape == (2, 4, 16, 8) and nz.storage.dtype == np.int32
    y = wnz(x1, nz, x1s, words, None, yo, None, False, 0, np.zeros((m, n), OUT_NP[out]))
    same(y, golden.a8w4_msd(x1, w, words, yo, x1s, out_dtype=out))


def test_tcg_weight_nz():
    # T-CG with an NZ fp4 weight: transposeX2 = false, (k, n) stored (n/32, k/16, 16, 32 fp4 = 16 bytes) (§3.4)
    rng = np.random.default_rng(12)
    m, k, n = 5, 96, 64
    x1 = rng.normal(0, 2, (m, k)).astype(E4M3)
    w = rng.choice(FP4_VALUES, (k, n)).astype(FP4)
    s = rng.uniform(0.1, 2, (k // 32, n)).astype(BF16)
    ys = npu_trans_quant_param(rng.uniform(0.5, 1.5, n).astype(np.float32)).reshape(1, n)
    nz = api.NzWeight.from_nd(w, "float4_e2m1")
    assert nz.storage.shape == (2, 6, 16, 16)
    y = wnz(x1, nz, None, s, ys, None, None, False, 32, np.zeros((m, n), BF16), soc=A5)
    same(y, golden.t_cg(x1, w.astype(np.float32), s.T, ys, out_dtype="bfloat16"))
    y2 = npu_quant_matmul(x1, nz, s, y_scale=ys, output_dtype=BF16, group_sizes=[0, 0, 32], soc=A5)
    same(y2, y)


def test_mxa8w4_weight_nz():
    rng = np.random.default_rng(13)
    m, k, n, g = 4, 128, 32, 4
    x1 = rng.normal(0, 3, (m, k)).astype(E4M3)
    w = rng.choice(FP4_VALUES, (n, k)).astype(FP4)             # transposeX2 = true: (n, k)
    s1 = rng.integers(120, 134, (m, 2, 2)).astype(np.uint8)
    s2 = rng.integers(120, 134, (n, 2, 2)).astype(np.uint8)
    y = wnz(x1, api.NzWeight.from_nd(w, "float4_e2m1"), s1, s2, None, None, None, True, 32, np.zeros((m, n), BF16),
            soc=A5, x1_scale_dtype="float8_e8m0", x2_scale_dtype="float8_e8m0")
    want = golden.quant_matmul(x1, w.T, s2.reshape(n, -1)[:, :g].T, x1_dtype="float8_e4m3fn", x2_dtype="float4_e2m1",
                               scale_dtype="float8_e8m0", out_dtype="bfloat16", x1_scale=s1.reshape(m, -1)[:, :g])
    same(y, want)


def test_user_tiling_rejected_for_v4():
    from npu_emu.errors import AclnnError
    from npu_emu.kernels.quant_matmul import tiling as tiling_mod

    tr = tiling_mod.quant_matmul_tiling(tiling_mod.MatmulShape(1, 8, 2))
    x1 = np.array([[-3, 100]], np.int8)
    with pytest.raises(AclnnError) as e:
        npu_quant_matmul(x1, pack_int32(np.zeros((2, 8), np.int8)), npu_trans_quant_param(np.ones(8, np.float32)),
                         pertoken_scale=np.ones(1, np.float32), offset=np.zeros(8, np.float32), output_dtype=BF16,
                         tiling=tr.tiling)
    assert e.value.status == 161002


def _invariance_cases():
    rng = np.random.default_rng(9)
    m, k, n = 40, 512, 256
    x1, w = int8s(rng, (m, k)), int4s(rng, (k, 48))
    words = npu_trans_quant_param(rng.uniform(0.01, 0.02, 96).astype(np.float32)).reshape(2, 48)
    msd_call = lambda **kw: msd(x1, w, words, np.zeros(48, np.float32), np.ones((m, 1), np.float32),
                                group_sizes=[0, 0, 256], **kw)
    x2 = int8s(rng, (n, k))
    x1s = rng.uniform(0.01, 0.02, (m, 4)).astype(np.float32)
    x2s = rng.uniform(0.01, 0.02, (2, 4)).astype(np.float32)
    gb_call = lambda soc: lambda **kw: npu_quant_matmul(x1, x2.T, x2s, pertoken_scale=x1s, output_dtype=BF16,
                                                        group_sizes=GS_GB, soc=soc, **kw)
    xf = rng.normal(0, 2, (m, 96)).astype(E4M3)
    wf = rng.choice(np.array([0, 0.5, 1, -2, 6], np.float32), (64, 96)).astype(FP4)
    sf = rng.uniform(0.1, 2, (64, 3)).astype(BF16)
    ys = npu_trans_quant_param(np.ones(64, np.float32)).reshape(1, 64)
    tcg_call = lambda **kw: npu_quant_matmul(xf, pack_fp4(wf).T, sf, y_scale=ys, x2_dtype="float4_e2m1",
                                             output_dtype=BF16, group_sizes=[0, 0, 32], soc=A5, **kw)
    return {"msd": msd_call, "gb-a2": gb_call(A2), "gb-950": gb_call(A5), "tcg": tcg_call}


@pytest.mark.parametrize("case", ["msd", "gb-a2", "gb-950", "tcg"])
def test_thread_and_core_invariance(case):
    call = _invariance_cases()[case]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        y1 = call(core_num=1)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        y2 = call(core_num=20)
        y3 = call(block_dim=3)
    finally:
        numba.set_num_threads(before)
    same(y1, y2)
    same(y1, y3)


# --- A8W4 float (950): T-CG and MxA8W4 ---------------------------------------------------------------------------

def pack_fp4(v):
    """fp4 values (r, c) -> uint8 (r, c/2), even element in the low nibble (fp4_nibble_order "low_first")."""
    c = (np.asarray(v, FP4).view(np.uint8) & 0xF).reshape(v.shape[0], -1, 2)
    return np.ascontiguousarray((c[..., 0] | (c[..., 1] << 4)).astype(np.uint8))


FP4_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def tcg(x1, w_nk, scale, y_scale, out, **kw):
    """T-CG through npu_quant_matmul: the (n, k) fp4 weight passed as its transposed view (transposeX2 = true)."""
    return npu_quant_matmul(x1, pack_fp4(w_nk).T, scale, y_scale=y_scale, x2_dtype="float4_e2m1",
                            output_dtype=OUT_NP[out], group_sizes=[0, 0, 32], soc=A5, **kw)


@pytest.mark.parametrize("sdt, out", [(BF16, "bfloat16"), (np.float16, "float16")])
def test_tv_i(sdt, out):
    # vector TV-I: fp4 6.0 x scale 0.1 -> bf16 0.6015625 (bf16 scale) or fp16 0.599609375 (fp16 tie) -> e4m3 0.625;
    # with x1 = one 1.0 and yScale 1.0 the output is that weight: 0.625
    k, n = 64, 8
    x1 = np.zeros((1, k), E4M3)
    x1[0, 0] = 1.0
    w = np.full((n, k), 6.0, np.float32).astype(FP4)
    y = tcg(x1, w, np.full((n, 2), 0.1, sdt), npu_trans_quant_param(np.ones(n, np.float32)).reshape(1, n), out)
    assert np.all(y.astype(np.float32) == 0.625)


@pytest.mark.parametrize("sdt, out, float_accum", [
    (BF16, "bfloat16", "exact"), (np.float16, "float16", "exact"), (BF16, "bfloat16", "kchunk"),
    (BF16, "float16", "sequential"),
])
def test_tcg_random_vs_golden(sdt, out, float_accum):
    rng = np.random.default_rng(7)
    m, k, n = 5, 160, 24
    x1 = rng.normal(0, 3, (m, k)).astype(E4M3)
    w = rng.choice(FP4_VALUES, (n, k)).astype(FP4)
    s = rng.uniform(0.01, 4, (n, k // 32)).astype(sdt)
    ys = npu_trans_quant_param(rng.uniform(0.5, 1.5, n).astype(np.float32)).reshape(1, n)
    y, tr = tcg(x1, w, s, ys, out, float_accum=float_accum, trace=True)
    base_k = tr.tiling_data["matmulTiling"]["baseK"]
    same(y, golden.t_cg(x1, w.T.astype(np.float32), s, ys, out_dtype=out, float_accum=float_accum, base_k=base_k))
    assert tr.quant_mode == "T-CG"


def test_tcg_fp8_overflow_switch():
    # fp4 6 x scale 100 = 600 > 448: CAST_RINT NO_SAT gives NaN (then NaN out); "saturate" gives 448
    k, n = 64, 8
    x1 = np.zeros((1, k), E4M3)
    x1[0, 0] = 1.0
    w = np.full((n, k), 6.0, np.float32).astype(FP4)
    s = np.full((n, 2), 100, BF16)
    ys = npu_trans_quant_param(np.ones(n, np.float32)).reshape(1, n)
    assert np.all(np.isnan(tcg(x1, w, s, ys, "bfloat16").astype(np.float32)))
    y = tcg(x1, w, s, ys, "bfloat16", tcg_fp8_overflow="saturate")
    assert np.all(y.astype(np.float32) == 448.0)
    same(y, golden.t_cg(x1, w.T.astype(np.float32), s, ys, out_dtype="bfloat16", tcg_fp8_overflow="saturate"))


@pytest.mark.parametrize("m, k, n, with_bias, out", [(4, 128, 16, True, "bfloat16"), (3, 96, 8, False, "float16")])
def test_mxa8w4_random_vs_golden(m, k, n, with_bias, out):
    rng = np.random.default_rng(m * k)
    g = -(-k // 32)
    p = -(-g // 2)
    x1 = rng.normal(0, 3, (m, k)).astype(E4M3)
    w = rng.choice(FP4_VALUES, (n, k)).astype(FP4)
    s1 = rng.integers(120, 134, (m, p, 2)).astype(np.uint8)
    s2 = rng.integers(120, 134, (n, p, 2)).astype(np.uint8)
    bias = rng.normal(0, 4, (1, n)).astype(OUT_NP[out]) if with_bias else None
    y, tr = npu_quant_matmul(x1, pack_fp4(w).T, s2, pertoken_scale=s1, bias=bias, x2_dtype="float4_e2m1",
                             scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
                             output_dtype=OUT_NP[out], group_sizes=[1, 1, 32], soc=A5, trace=True)
    want = golden.quant_matmul(x1, w.T, s2.reshape(n, -1)[:, :g].T, x1_dtype="float8_e4m3fn",
                               x2_dtype="float4_e2m1", scale_dtype="float8_e8m0", out_dtype=out,
                               x1_scale=s1.reshape(m, -1)[:, :g],
                               bias=None if bias is None else bias.reshape(-1).astype(np.float32),
                               bias_dtype=None if bias is None else out)
    same(y, want)
    assert tr.quant_mode == "MxA8W4"


# --- A8W4 float with an E5M2 x1 (issue 41) ------------------------------------------------------------------------
# aclnnQuantMatmulV5 accepts x1 FLOAT8_E5M2 for T-CG and MxA8W4 (CheckBasicInputDtypes: {E4M3FN, E5M2}); its
# CheckA8W4KDim names T-CG and MX for an E4M3FN x1 only, so an E5M2 x1 takes the generic k % 64 check. The T-CG
# kernel casts the dequantised weight to xType, x1's format (quant_batch_matmul_v4_vf.h), as the V4 golden does.

E5M2 = ml_dtypes.float8_e5m2


@pytest.mark.parametrize("fmt, want", [(E5M2, 1.0), (E4M3, 1.125)])
def test_tcg_weight_takes_x1_format(fmt, want):
    # fp4 3.0 x scale 0.375 = 1.125 (exact in bf16): E4M3 holds 1.125 (3 mantissa bits); in E5M2 it lies halfway
    # between 1.0 and 1.25 and rounds to the even 1.0. x1 = one 1.0 and yScale 1.0 give that weight as the output.
    k, n = 64, 8
    x1 = np.zeros((1, k), fmt)
    x1[0, 0] = 1.0
    w = np.full((n, k), 3.0, np.float32).astype(FP4)
    y = tcg(x1, w, np.full((n, 2), 0.375, BF16), npu_trans_quant_param(np.ones(n, np.float32)).reshape(1, n),
            "bfloat16")
    assert np.array_equal(bits(y), np.full((1, n), want, BF16).view(np.uint16))


@pytest.mark.parametrize("sdt, out", [(BF16, "bfloat16"), (np.float16, "float16")])
def test_tcg_e5m2_random_vs_golden(sdt, out):
    rng = np.random.default_rng(41)
    m, k, n = 5, 128, 24
    x1 = rng.normal(0, 3, (m, k)).astype(E5M2)
    w = rng.choice(FP4_VALUES, (n, k)).astype(FP4)
    s = rng.uniform(0.01, 4, (n, k // 32)).astype(sdt)
    ys = npu_trans_quant_param(rng.uniform(0.5, 1.5, n).astype(np.float32)).reshape(1, n)
    y, tr = tcg(x1, w, s, ys, out, trace=True)
    base_k = tr.tiling_data["matmulTiling"]["baseK"]
    same(y, golden.t_cg(x1, w.T.astype(np.float32), s, ys, out_dtype=out, base_k=base_k))
    assert tr.quant_mode == "T-CG"


def test_tcg_e5m2_overflow_switch():
    # fp4 6 x scale 16384 = 98304 > 57344: E5M2 NO_SAT gives Inf weights (the zeros of x1 times Inf make the sums
    # NaN); "saturate" gives 57344 (E4M3FN would give NaN / 448)
    k, n = 64, 8
    x1 = np.zeros((1, k), E5M2)
    x1[0, 0] = 1.0
    w = np.full((n, k), 6.0, np.float32).astype(FP4)
    s = np.full((n, 2), 16384, BF16)
    ys = npu_trans_quant_param(np.ones(n, np.float32)).reshape(1, n)
    assert np.all(np.isnan(tcg(x1, w, s, ys, "bfloat16").astype(np.float32)))
    y = tcg(x1, w, s, ys, "bfloat16", tcg_fp8_overflow="saturate")
    assert np.all(y.astype(np.float32) == 57344.0)
    same(y, golden.t_cg(x1, w.T.astype(np.float32), s, ys, out_dtype="bfloat16", tcg_fp8_overflow="saturate"))


@pytest.mark.parametrize("fmt, k, ok", [(E4M3, 96, True), (E5M2, 96, False), (E5M2, 192, True)])
def test_tcg_k_alignment_by_x1_format(fmt, k, ok):
    n = 8
    x1 = np.ones((2, k), fmt)
    w = np.ones((n, k), np.float32).astype(FP4)
    call = lambda: tcg(x1, w, np.ones((n, k // 32), BF16), npu_trans_quant_param(np.ones(n, np.float32)).reshape(1, n),
                       "bfloat16")
    if ok:
        assert call().shape == (2, n)
    else:
        with pytest.raises(AclnnError) as e:
            call()
        assert e.value.status == 161002 and f"the k dim must be align to 64, which is {k}" in str(e.value)


@pytest.mark.parametrize("fmt, k, ok", [(E4M3, 32, True), (E5M2, 32, False), (E5M2, 64, True)])
def test_mxa8w4_e5m2_x1(fmt, k, ok):
    # MxA8W4 applies the E8M0 scales to x1 and the fp4 weight as they are: x1's format needs no cast
    rng = np.random.default_rng(k)
    m, n = 3, 8
    g = k // 32
    p = -(-g // 2)
    x1 = rng.normal(0, 3, (m, k)).astype(fmt)
    w = rng.choice(FP4_VALUES, (n, k)).astype(FP4)
    s1 = rng.integers(120, 134, (m, p, 2)).astype(np.uint8)
    s2 = rng.integers(120, 134, (n, p, 2)).astype(np.uint8)
    call = lambda: npu_quant_matmul(x1, pack_fp4(w).T, s2, pertoken_scale=s1, x2_dtype="float4_e2m1",
                                    scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
                                    output_dtype=BF16, group_sizes=[1, 1, 32], soc=A5)
    if not ok:
        with pytest.raises(AclnnError) as e:
            call()
        assert e.value.status == 161002 and f"the k dim must be align to 64, which is {k}" in str(e.value)
        return
    want = golden.quant_matmul(x1, w.T, s2.reshape(n, -1)[:, :g].T, x1_dtype=np.dtype(fmt).name,
                               x2_dtype="float4_e2m1", scale_dtype="float8_e8m0", out_dtype="bfloat16",
                               x1_scale=s1.reshape(m, -1)[:, :g])
    same(call(), want)


# --- fused fast path vs the per-core step kernels (faithful=True) -----------------------------------------------

def _fast_vs_faithful_cases(m, k, n):
    """case -> (call(**kw), golden(rows)): the golden of the selected output rows (rows are independent)."""
    rng = np.random.default_rng(m * 7 + k + n)
    x1, x2 = int8s(rng, (m, k)), int8s(rng, (n, k))
    g, n1 = -(-k // 128), -(-n // 128)
    x1s = (rng.uniform(0.001, 0.02, (m, g)) * rng.choice([-1, 1], (m, g))).astype(np.float32)
    x2s = rng.uniform(0.001, 0.02, (n1, g)).astype(np.float32)
    bias = rng.normal(0, 50, n).astype(np.float32)
    gb = lambda soc: (
        lambda **kw: npu_quant_matmul(x1, x2.T, x2s, pertoken_scale=x1s, bias=bias, output_dtype=BF16,
                                      group_sizes=GS_GB, soc=soc, **kw),
        lambda r: golden.perblock_int8(x1[r], x2.T, x1s[r], x2s.T, bias=bias, order="a2" if soc == A2 else "950"))
    g4 = -(-k // 256)
    a1, a2 = int4s(rng, (m, k)), int4s(rng, (k, n))
    a1s = rng.uniform(0.01, 0.1, (m, 1)).astype(np.float32)
    a2s = rng.uniform(0.01, 0.1, (g4, n)).astype(np.float32)
    off = rng.uniform(-8, 8, (g4, n)).astype(np.float16)
    w = int4s(rng, (k, n))
    words = npu_trans_quant_param(rng.uniform(0.001, 0.05, g4 * n).astype(np.float32)).reshape(g4, n)
    y_off = rng.uniform(-1, 1, n).astype(np.float32)
    ms1 = rng.uniform(0.5, 2, (m, 1)).astype(np.float32)
    return {
        "gb-a2": gb(A2), "gb-950": gb(A5),
        "a4w4": (lambda **kw: a4w4(a1, a2, a1s, a2s, off, **kw),
                 lambda r: golden.a4w4_pergroup_asym(a1[r], a2, a1s[r], a2s, off)),
        "msd": (lambda **kw: msd(x1, w, words, y_off, ms1, group_sizes=[0, 0, 256], **kw),
                lambda r: golden.a8w4_msd(x1[r], w, words, y_off, ms1[r])),
    }


@pytest.mark.parametrize("case", ["gb-a2", "gb-950", "a4w4", "msd"])
def test_fused_equals_faithful_over_group_batches(case, monkeypatch):
    # The fused kernels apply several k groups per pass (v4.group_batches); with the batch buffer shrunk to three
    # (m, n) groups, k = 1024 gives G-B 8 blocks of 128 in batches of 3 + 3 + 2, A4W4 4 groups of 256 in 3 + 1
    # and MSD (2m rows per group) 4 batches of 1. Fast, faithful (per-core step kernels, one group at a time) and
    # the golden agree bit for bit. (A2 tiling: K a multiple of 1024 and N of 256 for A4W4.)
    from npu_emu.kernels.quant_matmul import v4

    m, k, n = 24, 1024, 256
    call, want = _fast_vs_faithful_cases(m, k, n)[case]
    monkeypatch.setattr(v4, "GROUP_BATCH_BYTES", 3 * m * n * 4)
    fast = call()
    same(fast, want(np.arange(m)))
    same(call(faithful=True), fast)


@pytest.mark.parametrize("fixpipe_round, cast_overflow", [("half_away", "inf"), ("rne", "saturate"),
                                                          ("half_away", "saturate")])
def test_msd_other_fixpipe_modes(fixpipe_round, cast_overflow):
    # The default Fixpipe cast (RNE, overflow to Inf) takes the kernels with the mode as a constant; the others take
    # the general kernels (v4.compute_msd picks). Scales large enough that fp16 workspace values overflow 65504
    # and round on half-way ties; fast, faithful and the golden agree bit for bit.
    rng = np.random.default_rng(7)
    m, k, n = 6, 512, 32
    x1 = int8s(rng, (m, k))
    w = int4s(rng, (k, n))
    words = npu_trans_quant_param(rng.uniform(1.0, 40.0, 2 * n).astype(np.float32)).reshape(2, n)
    y_off = rng.uniform(-1, 1, n).astype(np.float32)
    x1s = rng.uniform(0.5, 2, (m, 1)).astype(np.float32)
    kw = dict(group_sizes=[0, 0, 256], fixpipe_round=fixpipe_round, cast_overflow=cast_overflow)
    fast = msd(x1, w, words, y_off, x1s, "float16", **kw)
    same(fast, golden.a8w4_msd(x1, w, words, y_off, x1s, out_dtype="float16", fixpipe_round=fixpipe_round,
                               cast_overflow=cast_overflow))
    same(msd(x1, w, words, y_off, x1s, "float16", faithful=True, **kw), fast)


@pytest.mark.parametrize("m", [1, 2, 5])
@pytest.mark.parametrize("per_group", [True, False])
def test_msd_extreme_group_sums(m, per_group):
    # The largest group sums the fp32 cube results must hold exactly: x1 = -128 (hi = lo = -8) against W = -8
    # makes every group sum 64·256 = 2^14; x1 = 127 (hi = lo = 7) the most negative products. Per-channel
    # (gs = k = 512) doubles them. Fast, faithful and golden agree bit for bit.
    rng = np.random.default_rng(m)
    k, n = 512, 24
    x1 = np.where(rng.random((m, k)) < 0.5, -128, 127).astype(np.int8)
    x1[0, :256] = -128
    w = np.where(rng.random((k, n)) < 0.5, -8, 7).astype(np.int8)
    w[:, 0] = -8
    g = -(-k // 256)
    sf = rng.uniform(0.001, 0.05, (g, n) if per_group else (n,)).astype(np.float32)
    words = npu_trans_quant_param(sf.reshape(-1)).reshape(sf.shape)
    y_off = rng.uniform(-1, 1, n).astype(np.float32)
    x1s = rng.uniform(0.5, 2, (m, 1) if per_group else (m,)).astype(np.float32)
    kw = dict(group_sizes=[0, 0, 256]) if per_group else {}
    fast = msd(x1, w, words, y_off, x1s, **kw)
    same(fast, golden.a8w4_msd(x1, w, words, y_off, x1s))
    same(msd(x1, w, words, y_off, x1s, faithful=True, **kw), fast)


@pytest.mark.parametrize("case", ["gb-a2", "gb-950", "a4w4", "msd"])
def test_fused_larger_shape_vs_golden_rows(case):
    # A larger shape with one batch of all groups and several column tiles of the fused kernels (n = 1280: two full
    # 512-column tiles and a 256-column tail); rows are independent, so the golden runs on a sample of rows only.
    m, k, n = 256, 2048, 1280
    rows = np.sort(np.random.default_rng(5).choice(m, 12, replace=False))
    call, want = _fast_vs_faithful_cases(m, k, n)[case]
    same(call()[rows], want(rows))
