"""Random inputs of every V3 mode against the independent golden (kernels/quant_matmul/golden.py), bit-exact."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.quant_matmul import golden as golden
from npu_emu.kernels.quant_matmul.api import NzWeight, npu_quant_matmul, npu_trans_quant_param

E4M3, E5M2, BF16 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.bfloat16
SOC950 = "ascend950pr"


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.array_equal(bits(got), bits(want))


def rng_for(seed):
    return np.random.default_rng(seed)


def int8s(rng, shape, lo=-128, hi=128):
    return rng.integers(lo, hi, shape, dtype=np.int8)


def scales(rng, n, lo=0.001, hi=0.05):
    s = rng.uniform(lo, hi, n).astype(np.float32)
    return s * np.where(rng.random(n) < 0.2, -1, 1).astype(np.float32)


# --- integer inputs (910B and 950) ----------------------------------------------------------------------------

INT_CASES = [
    # (name, out dtype, scale kind, pertoken, bias dtype)
    ("T-T u64 f16", "float16", "u64-t", False, None),
    ("T-C u64 f16 bias", "float16", "u64-c", False, "int32"),
    ("requant T-C offsets", "int8", "u64-c-off", False, "int32"),
    ("T-T f32 bf16 (truncated)", "bfloat16", "f32-t", False, None),
    ("T-T f32 bf16 int32 bias (truncated)", "bfloat16", "f32-t", False, "int32"),
    ("T-T f32 bf16 f32 bias (not truncated)", "bfloat16", "f32-t", False, "float32"),
    ("T-C f32 bf16 bf16 bias", "bfloat16", "f32-c", False, "bfloat16"),
    ("T-C bf16 scale bf16", "bfloat16", "bf16-c", False, None),
    ("int32 out", "int32", "f32-t", False, "int32"),
    ("K-C f16", "float16", "f32-c", True, None),
    ("K-C f16 f16 bias", "float16", "f32-c", True, "float16"),
    ("K-C f16 int32 bias", "float16", "f32-c", True, "int32"),
    ("K-T bf16 f32 bias", "bfloat16", "f32-t", True, "float32"),
    ("K-C bf16 bf16 scale", "bfloat16", "bf16-c", True, "bfloat16"),
]


def _int_case(rng, m, k, n, kind, pertoken, bias_dt):
    """Inputs of one INT_CASES row. "u64-*" scales are float32 here: the front end packs them (FP19 truncation,
    offset in bits 37..45) exactly like npu_trans_quant_param; the golden packs them with its own code."""
    x1, x2 = int8s(rng, (m, k)), int8s(rng, (k, n))
    c = n if kind.endswith("c") or kind.endswith("off") else 1
    s = scales(rng, c)
    off = rng.uniform(-20, 20, c).astype(np.float32) if kind.endswith("off") else None
    if kind.startswith("bf16"):
        s = s.astype(BF16)
    p1 = rng.uniform(0.5, 2.0, m).astype(np.float32) if pertoken else None
    bias = None
    if bias_dt == "int32":
        bias = rng.integers(-5000, 5000, n).astype(np.int32)
    elif bias_dt:
        bias = rng.uniform(-3, 3, n).astype(np.float32).astype(np.dtype(BF16) if bias_dt == "bfloat16" else bias_dt)
    return x1, x2, s, off, p1, bias


@pytest.mark.parametrize("soc", ["ascend910b2", SOC950])
@pytest.mark.parametrize("case", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_int8_modes_vs_golden(case, soc):
    name, out, kind, pertoken, bias_dt = case
    rng = rng_for(sum(map(ord, name)))
    m, k, n = 37, 300, 45
    x1, x2, s, off, p1, bias = _int_case(rng, m, k, n, kind, pertoken, bias_dt)
    got = npu_quant_matmul(x1, x2, s, offset=off, pertoken_scale=p1, bias=bias, output_dtype=out, soc=soc)
    if kind.startswith("u64"):
        gold_s, gold_dt = golden.trans_quant_param(s, off), "uint64"
    else:
        gold_s, gold_dt = s, ("bfloat16" if kind.startswith("bf16") else "float32")
    want = golden.quant_matmul(x1, x2, gold_s, x1_dtype="int8", x2_dtype="int8", scale_dtype=gold_dt, out_dtype=out,
                               x1_scale=p1, bias=bias, bias_dtype=bias_dt)
    same(got, np.asarray(want))


def test_int4_packed_and_int32_packed():
    rng = rng_for(3)
    m, k, n = 9, 64, 16
    v1 = rng.integers(-8, 8, (m, k)).astype(np.int8)
    v2 = rng.integers(-8, 8, (k, n)).astype(np.int8)
    pack = lambda v: ((v[..., 0::2] & 0xF) | ((v[..., 1::2] & 0xF) << 4)).astype(np.uint8)   # even index low
    s = scales(rng, n)
    want = golden.quant_matmul(v1, v2, golden.trans_quant_param(s), x1_dtype="int4", x2_dtype="int4",
                               scale_dtype="uint64", out_dtype="float16")
    got = npu_quant_matmul(pack(v1), pack(v2), s, x1_dtype="int4", x2_dtype="int4", output_dtype="float16")
    same(got, want)
    got32 = npu_quant_matmul(pack(v1).view(np.int32), pack(v2).view(np.int32), s, output_dtype="float16")
    same(got32, want)
    got_ml = npu_quant_matmul(v1.astype(ml_dtypes.int4), v2.astype(ml_dtypes.int4), s, output_dtype="float16")
    same(got_ml, want)


# --- batch, transposes, NZ ------------------------------------------------------------------------------------

def test_batch_broadcast_and_3d_bias():
    rng = rng_for(4)
    x1 = int8s(rng, (3, 1, 8, 40))
    x2 = int8s(rng, (2, 40, 24))
    s = scales(rng, 24)
    got = npu_quant_matmul(x1, x2, s, output_dtype="float16")
    assert got.shape == (3, 2, 8, 24)
    for i in range(3):
        for j in range(2):
            same(got[i, j], golden.quant_matmul(x1[i, 0], x2[j], golden.trans_quant_param(s), x1_dtype="int8",
                                                x2_dtype="int8", scale_dtype="uint64", out_dtype="float16"))
    x1b = int8s(rng, (4, 8, 40))
    bias3 = rng.integers(-100, 100, (4, 1, 24)).astype(np.int32)
    got = npu_quant_matmul(x1b, x2[0], s, bias=bias3, output_dtype="float16")
    for i in range(4):
        same(got[i], golden.quant_matmul(x1b[i], x2[0], golden.trans_quant_param(s), x1_dtype="int8",
                                         x2_dtype="int8", scale_dtype="uint64", out_dtype="float16",
                                         bias=bias3[i, 0], bias_dtype="int32"))


@pytest.mark.parametrize("t1, t2", [(False, True), (True, False), (True, True)])
def test_transposed_views(t1, t2):
    rng = rng_for(5)
    m, k, n = 20, 48, 33
    x1, x2 = int8s(rng, (m, k)), int8s(rng, (k, n))
    s = scales(rng, n)
    a = np.ascontiguousarray(x1.T).T if t1 else x1            # same values, column-major storage
    b = np.ascontiguousarray(x2.T).T if t2 else x2
    assert a.flags.c_contiguous != t1 and b.flags.c_contiguous != t2
    y, tr = npu_quant_matmul(a, b, s, output_dtype="bfloat16", trace=True)
    same(y, npu_quant_matmul(x1, x2, s, output_dtype="bfloat16"))
    assert tr.tiling_data["matmulTiling"]["M"] == m


def test_nz_weight():
    rng = rng_for(6)
    m, k, n = 16, 96, 40
    x1, x2 = int8s(rng, (m, k)), int8s(rng, (k, n))
    s = scales(rng, n)
    got = npu_quant_matmul(x1, NzWeight.from_nd(x2), s, output_dtype="float16")
    same(got, npu_quant_matmul(x1, x2, s, output_dtype="float16"))


# --- fp8 / hif8 (Ascend 950) -------------------------------------------------------------------------------------

def fp8s(rng, shape, dt, lo=-6.0, hi=6.0):
    v = rng.uniform(lo, hi, shape).astype(np.float32)
    return v.astype(dt)


def hif8s(rng, shape):
    codes = rng.integers(0, 256, shape).astype(np.uint8)
    codes[(codes & 0x7F) == 0x6F] = 0x08                        # no infinities
    codes[codes == 0x80] = 0x09                                 # no NaN
    # keep magnitudes moderate so the products stay in range of the outputs
    big = (codes & 0x60) == 0x60
    codes[big & ((codes & 0x7F) < 0x70)] = 0x20
    return codes


FP_CASES = [
    ("static u64 f16 bias", "u64", None, "float32", "float16"),
    ("static u64 bf16", "u64", None, None, "bfloat16"),
    ("static u64 f32 bias", "u64", None, "float32", "float32"),
    ("doublescale T-T cube", "f32-t", "t", None, "float16"),
    ("doublescale T-T mix bias", "f32-t", "t", "float32", "bfloat16"),
    ("doublescale T-C", "f32-c", "t", "float32", "float16"),
    ("K-C", "f32-c", "k", "float32", "float32"),
    ("K-T", "f32-t", "k", None, "bfloat16"),
]


@pytest.mark.parametrize("dts", [(E4M3, E4M3), (E4M3, E5M2), (E5M2, E5M2), ("hif8", "hif8")],
                         ids=["e4m3", "e4m3xe5m2", "e5m2", "hif8"])
@pytest.mark.parametrize("case", FP_CASES, ids=[c[0] for c in FP_CASES])
def test_fp8_hif8_modes_vs_golden(case, dts):
    name, skind, pkind, bias_dt, out = case
    rng = rng_for(sum(map(ord, name + str(dts))))
    m, k, n = 6, 40, 7
    kw = {}
    if dts[0] == "hif8":
        x1, x2 = hif8s(rng, (m, k)), hif8s(rng, (k, n))
        kw = dict(x1_dtype="hifloat8", x2_dtype="hifloat8")
        gd = ("hifloat8", "hifloat8")
    else:
        x1, x2 = fp8s(rng, (m, k), dts[0]), fp8s(rng, (k, n), dts[1])
        gd = tuple("float8_e4m3fn" if d is E4M3 else "float8_e5m2" for d in dts)
    c = n if skind.endswith("c") else 1
    s = scales(rng, c, 0.01, 0.3)
    if skind == "u64":
        emu_s, gold_s, gold_dt = npu_trans_quant_param(s), golden.trans_quant_param(s), "uint64"
    else:
        emu_s = gold_s = s
        gold_dt = "float32"
    p1 = None
    if pkind == "t":
        p1 = np.array([rng.uniform(0.5, 2)], np.float32)
    elif pkind == "k":
        p1 = rng.uniform(0.5, 2, m).astype(np.float32)
    bias = None if bias_dt is None else rng.uniform(-2, 2, n).astype(np.float32)
    got = npu_quant_matmul(x1, x2, emu_s, pertoken_scale=p1, bias=bias, output_dtype=out, soc=SOC950, **kw)
    want = golden.quant_matmul(x1, x2, gold_s, x1_dtype=gd[0], x2_dtype=gd[1], scale_dtype=gold_dt, out_dtype=out,
                               x1_scale=p1, bias=bias, bias_dtype=bias_dt)
    same(got, np.asarray(want))


def test_fp8_float_accum_numpy_matches_golden_literal():
    rng = rng_for(7)
    x1, x2 = fp8s(rng, (5, 64), E4M3), fp8s(rng, (64, 6), E4M3)
    s = scales(rng, 6, 0.01, 0.3)
    bias = rng.uniform(-2, 2, 6).astype(np.float32)
    got = npu_quant_matmul(x1, x2, npu_trans_quant_param(s), bias=bias, output_dtype="float32",
                           float_accum="numpy", soc=SOC950)
    # golden script: f32(x1 @ x2) + bias, then * scale (same BLAS call on the same float32 operands)
    y = (np.matmul(x1.astype(np.float32), x2.astype(np.float32)) + bias).astype(np.float32)
    want = (y * golden.deq_scale(golden.trans_quant_param(s))).astype(np.float32)
    same(got, want)


# --- MX (fp8 and fp4) ------------------------------------------------------------------------------------------------

def _pairs(codes_groups, lead_first=True):
    """(rows, G) group codes -> the (rows, ceil(G/2), 2) pair layout (padding 127)."""
    rows, g = codes_groups.shape
    gp = -(-g // 2)
    out = np.full((rows, gp * 2), 127, np.uint8)
    out[:, :g] = codes_groups
    return out.reshape(rows, gp, 2)


@pytest.mark.parametrize("k", [64, 96, 160])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2", "fp4"])
@pytest.mark.parametrize("t2", [True, False])
def test_mx_vs_golden(k, fmt, t2):
    rng = rng_for(k * 7 + len(fmt) + int(t2))
    m, n = 5, 6
    g = -(-k // 32)
    if fmt == "fp4":
        x1v = rng.choice([-6, -3, -1.5, -0.5, 0, 0.5, 1, 2, 4], (m, k)).astype(ml_dtypes.float4_e2m1fn)
        x2v = rng.choice([-4, -2, -1, 0, 0.5, 1.5, 3, 6], (k, n)).astype(ml_dtypes.float4_e2m1fn)
        gd = "float4_e2m1"
    else:
        dt = E4M3 if fmt == "e4m3" else E5M2
        x1v, x2v = fp8s(rng, (m, k), dt, -40, 40), fp8s(rng, (k, n), dt, -40, 40)
        gd = "float8_e4m3fn" if fmt == "e4m3" else "float8_e5m2"
    e1 = rng.integers(115, 135, (m, g)).astype(np.uint8)
    e2 = rng.integers(115, 135, (g, n)).astype(np.uint8)
    s1 = _pairs(e1)                                             # (m, ceil(k/64), 2)
    s2 = _pairs(e2.T)                                           # (n, ceil(k/64), 2) for a transposed x2
    if t2:
        x2_arg = np.ascontiguousarray(x2v.T).T                  # transposed storage (n, k)
        s2_arg = np.swapaxes(np.ascontiguousarray(s2), 0, 1)    # its scale transposed alike: a view of (n, g, 2)
    else:
        x2_arg = x2v
        s2_arg = np.ascontiguousarray(np.swapaxes(s2, 0, 1))   # (ceil(k/64), n, 2)
    bias = rng.uniform(-4, 4, n).astype(np.float32)
    got = npu_quant_matmul(x1v, x2_arg, s2_arg, pertoken_scale=s1, scale_dtype="float8_e8m0",
                           pertoken_scale_dtype="float8_e8m0", bias=bias, output_dtype="bfloat16",
                           group_sizes=[1, 1, 32], soc=SOC950)
    want = golden.quant_matmul(x1v, x2v, e2, x1_scale=e1, x1_dtype=gd, x2_dtype=gd, scale_dtype="float8_e8m0",
                               out_dtype="bfloat16", bias=bias, bias_dtype="float32")
    same(got, want)


def test_mx_fp4_packed_nibble_order():
    rng = rng_for(8)
    m, k, n = 3, 64, 4
    codes1 = rng.integers(0, 16, (m, k)).astype(np.uint8)
    codes2 = rng.integers(0, 16, (k, n)).astype(np.uint8)     # x2 (k, n): packed along n
    pack_lo = lambda c: (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)
    pack_hi = lambda c: ((c[..., 0::2] << 4) | c[..., 1::2]).astype(np.uint8)
    s1 = np.full((m, 1, 2), 127, np.uint8)
    s2 = np.full((1, n, 2), 127, np.uint8)                     # (ceil(k/64), n, 2) for a non-transposed x2
    kw = dict(pertoken_scale=s1, scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
              x1_dtype="float4_e2m1", x2_dtype="float4_e2m1", output_dtype="float32", group_sizes=[1, 1, 32],
              soc=SOC950)
    lo = npu_quant_matmul(pack_lo(codes1), pack_lo(codes2), s2, **kw)
    hi = npu_quant_matmul(pack_hi(codes1), pack_hi(codes2), s2, fp4_nibble_order="high_first", **kw)
    v1 = codes1.view(ml_dtypes.float4_e2m1fn)
    v2 = codes2.view(ml_dtypes.float4_e2m1fn)
    want = golden.quant_matmul(v1, v2, np.full((2, n), 127, np.uint8), x1_scale=np.full((m, 2), 127, np.uint8),
                               x1_dtype="float4_e2m1", x2_dtype="float4_e2m1", scale_dtype="float8_e8m0",
                               out_dtype="float32")
    same(lo, want)
    same(hi, want)
    # reading low-first bytes high-first swaps neighbouring elements (x1 along k, x2 along n): another result
    swapped = npu_quant_matmul(pack_lo(codes1), pack_lo(codes2), s2, fp4_nibble_order="high_first", **kw)
    assert not np.array_equal(bits(swapped), bits(want))


# --- per-block (G-B / B-B, fp8 on 950) --------------------------------------------------------------------------

@pytest.mark.parametrize("gs_m", [1, 128])
def test_perblock_vs_golden(gs_m):
    rng = rng_for(gs_m)
    m, k, n = (130 if gs_m == 128 else 9), 260, 129           # tails in m (B-B), k and n
    x1, x2 = fp8s(rng, (m, k), E4M3), fp8s(rng, (k, n), E4M3)
    gk = -(-k // 128)
    s1 = rng.uniform(0.01, 0.2, (-(-m // gs_m), gk)).astype(np.float32)
    s2 = rng.uniform(0.01, 0.2, (gk, -(-n // 128))).astype(np.float32)
    got, tr = npu_quant_matmul(x1, x2, s2, pertoken_scale=s1, output_dtype="bfloat16", group_sizes=[gs_m, 128, 128],
                               soc=SOC950, trace=True)
    assert tr.quant_mode == ("G-B" if gs_m == 1 else "B-B")
    want = golden.quant_matmul(x1, x2, s2, x1_scale=s1, x1_dtype="float8_e4m3fn", x2_dtype="float8_e4m3fn",
                               scale_dtype="float32", out_dtype="bfloat16", group_size=(gs_m, 128, 128))
    same(got, want)


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    x1 = torch.randint(-128, 128, (8, 64), dtype=torch.int8, generator=g)
    x2t = torch.randint(-128, 128, (32, 64), dtype=torch.int8, generator=g)
    scale = torch.rand(32, generator=g) * 0.01
    pt = torch.rand(8, generator=g) + 0.5
    y = npu_quant_matmul(x1, x2t.t(), scale, pertoken_scale=pt, output_dtype=torch.bfloat16)   # a transposed view
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16 and tuple(y.shape) == (8, 32)
    want = golden.quant_matmul(x1.numpy(), x2t.numpy().T, scale.numpy(), x1_scale=pt.numpy(), x1_dtype="int8",
                               x2_dtype="int8", scale_dtype="float32", out_dtype="bfloat16")
    assert np.array_equal(y.view(torch.int16).numpy().view(np.uint16), bits(want))
    w = npu_trans_quant_param(scale)
    assert isinstance(w, torch.Tensor) and w.dtype == torch.int64


def test_mx_scale_transpose_must_follow_x_in_torch():
    # op-plugin is_x_scale_same_transpose: with torch tensors, a transposed x2 needs its E8M0 scale transposed alike
    # (.transpose(-3, -2) of the (n, ceil(k/64), 2) storage); a contiguous scale is refused with 161002.
    torch = pytest.importorskip("torch")
    from npu_emu.errors import AclnnError

    rng = rng_for(99)
    m, k, n = 4, 160, 6
    g = -(-k // 32)
    x1v, x2v = fp8s(rng, (m, k), E4M3, -40, 40), fp8s(rng, (k, n), E4M3, -40, 40)
    s1 = _pairs(rng.integers(115, 135, (m, g)).astype(np.uint8))
    s2 = np.ascontiguousarray(_pairs(rng.integers(115, 135, (g, n)).astype(np.uint8).T))   # (n, 3, 2) storage
    kw = dict(scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0", output_dtype="bfloat16",
              group_sizes=[1, 1, 32], soc=SOC950)
    want = npu_quant_matmul(x1v, np.ascontiguousarray(x2v.T).T, s2, pertoken_scale=s1, **kw)   # numpy reference
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a).view(np.uint8))
    x2t = t(x2v.T).view(torch.float8_e4m3fn).t()                                   # (k, n) view of (n, k)
    x1t = t(x1v).view(torch.float8_e4m3fn)
    got = npu_quant_matmul(x1t, x2t, t(s2).transpose(-3, -2), pertoken_scale=t(s1), **kw)
    assert np.array_equal(bits(got.view(torch.int16).numpy()), bits(want))
    with pytest.raises(AclnnError, match="x2 tensor and scale tensor's transpose are not same") as e:
        npu_quant_matmul(x1t, x2t, t(s2), pertoken_scale=t(s1), **kw)
    assert e.value.status == 161002
