"""GroupedMatmul's epilogue activations (act_type 1 RELU, 2 GELU_TANH, 4 FASTGELU, 5 SILU; docs/ops/grouped_matmul.md
§13): the instruction layer's activation rows against the golden's step-by-step float32 formulas over every bf16 value
and a dense float32 set, the A8W8 -> bf16 / fp16 epilogue with each activation against golden.grouped_matmul_quant
(bits), and the actType checks in CANN's order."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.ascendc import activation as act
from npu_emu.kernels.grouped_matmul import api, golden

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(2026)
E, M, K, N = 4, 70, 96, 40
ACTS = (golden.RELU, golden.GELU_TANH, golden.FASTGELU, golden.SILU)
MODELS = {"correctly_rounded": 0, "exp2": 1, "ieee": 0, "reciprocal": 1}


def same_bits(a, b):
    """Bits equal, NaN compares as NaN (as swiglu's tests): which operand's NaN an IEEE operation returns is not fixed
    by LLVM (it may swap the operands of a commutative multiply), and the device's NaN encoding is not public."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize
    u = {2: np.uint16, 4: np.uint32}[a.dtype.itemsize]
    na, nb = np.isnan(a.astype(np.float32)), np.isnan(b.astype(np.float32))
    assert np.array_equal(na, nb)
    bad = np.flatnonzero((a.view(u) != b.view(u)).ravel() & ~na.ravel())
    assert bad.size == 0, f"{bad.size} differ, first at {bad[:5]}: {a.ravel()[bad[:5]]} vs {b.ravel()[bad[:5]]}"


def _row(kind, src, em=0, dm=0):
    dst = np.empty_like(src)
    if kind == golden.RELU:
        act.Relu(dst, src, src.size)
    elif kind == golden.SILU:
        act.Silu(dst, src, src.size, em, dm)
    elif kind == golden.FASTGELU:
        act.FasterGelu(dst, src, dst, src.size, em, dm)
    else:
        act.Gelu(dst, src, dst, src.size, em, dm)
    return dst


# every bf16 bit pattern (as float32: every sign, exponent and the top mantissa bits, inf and NaN included) and a
# dense log-uniform float32 set around the activations' bends (|x| from 2^-30 to 2^20, both signs)
ALL_BF16 = np.arange(65536, dtype=np.uint32).__lshift__(16).view(np.float32)
DENSE = (np.exp2(RNG.uniform(-30, 20, 200_000)) * RNG.choice([-1.0, 1.0], 200_000)).astype(np.float32)
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.0, -88.0, 104.0, -104.0, 1e-45, -1e-45, 3.4e38, -3.4e38,
                    51.5, -51.5, 60.0, -60.0], np.float32)


# Relu uses neither Exp nor Div: one model pair is all it has
@pytest.mark.parametrize("kind,models", [(k, m) for k in ACTS for m in
                                         [("correctly_rounded", "ieee"), ("exp2", "reciprocal")]
                                         if k != golden.RELU or m == ("correctly_rounded", "ieee")])
def test_activation_rows_match_the_golden_formula(kind, models):
    em, dm = models
    src = np.concatenate([ALL_BF16, DENSE, SPECIAL])
    same_bits(_row(kind, src, MODELS[em], MODELS[dm]), golden.activation(src, kind, em, dm))


def test_activation_special_values():
    # derived by hand from the sequences (docs/ops/grouped_matmul.md §13): Relu(-0) = +0 (max(-0, +0) = +0);
    # Silu / FasterGelu(-inf) = -inf / (e^inf + 1) = -inf / inf = NaN; Silu(-100) = -100 / (e^100 + 1) = -0 once
    # e^100 + 1 rounds to a finite float32 (it overflows only past 88.7); Gelu(-inf) = (-inf / 1) * e^-inf = NaN;
    # Gelu(large) = x (e^-|u| + 1 = 1, e^min(u, 0) = 1) even when u overflows to inf
    x = np.array([-0.0, -np.inf, -100.0, 1e20, -1e20, 0.0], np.float32)
    relu = _row(golden.RELU, x)
    assert relu.view(np.uint32)[0] == 0 and relu[1] == 0 and relu[3] == 1e20
    silu = _row(golden.SILU, x)
    assert np.isnan(silu[1]) and silu.view(np.uint32)[2] == 0x80000000 and silu[3] == np.float32(1e20)
    gelu = _row(golden.GELU_TANH, x)
    assert np.isnan(gelu[1]) and gelu[3] == np.float32(1e20) and gelu.view(np.uint32)[4] == 0x80000000
    fg = _row(golden.FASTGELU, x)
    assert np.isnan(fg[1]) and fg.view(np.uint32)[5] == 0


# ---- the A8W8 epilogue with an activation ------------------------------------------------------------------------

X = RNG.integers(-128, 128, (M, K), dtype=np.int8)
X[12:15] = 0                                           # zero rows: acc = 0, the activations at +0 / -0
W = RNG.integers(-128, 128, (E, K, N), dtype=np.int8)
# scales of both signs and of three magnitudes: |v| ~ 1e-2 (around the bends), ~ 10 and ~ 1e4 (the saturated and
# overflowing regions: e^(1.702 * 1e4) = inf, fp16 outputs past 65504)
_MAG = np.array([1e-6, 1e-3, 0.1], np.float32)[RNG.integers(0, 3, (E, N))]
SCALE_F32 = (RNG.uniform(-1, 1, (E, N)) * _MAG).astype(np.float32)
SCALE_BF16 = SCALE_F32.astype(BF16)
PT = RNG.uniform(0.25, 4, M).astype(np.float32)
PT[3], PT[4], PT[5], PT[6], PT[7] = np.inf, np.nan, 0.0, -1.5, 1e36   # inf / NaN / overflow out of the dequant
BIAS_BF16 = RNG.uniform(-8, 8, (E, N)).astype(BF16)
BIAS_I32 = RNG.integers(-2**20, 2**20, (E, N), dtype=np.int32)
GL = np.array([10, 10, 35, 70], np.int64)              # cumulative, with an empty group


def _scales(out, per_channel_special):
    s = SCALE_BF16.copy() if out == "bfloat16" else SCALE_F32.copy()
    if per_channel_special:                            # inf / NaN / huge scales: the per-channel path's specials
        s[0, 0], s[1, 1], s[2, 2], s[3, 3] = np.inf, np.nan, -np.inf, 3e38
    return s


@pytest.mark.parametrize("kind", ACTS)
@pytest.mark.parametrize("out", ["bfloat16", "float16"])
@pytest.mark.parametrize("per_token", [True, False])
def test_activation_epilogue_bits(kind, out, per_token):
    s = _scales(out, not per_token)
    kw = dict(scale=[s], group_list=GL, output_dtype=out, act_type=kind, split_item=3, group_type=0)
    gkw = dict(scale=s, out_dtype=out, act_type=kind)
    if per_token:
        kw.update(per_token_scale=[PT], bias=[BIAS_BF16])
        gkw.update(per_token_scale=PT, bias=BIAS_BF16)
    else:
        kw.update(bias=[BIAS_I32])
        gkw.update(bias=BIAS_I32)
    y = api.npu_grouped_matmul([X], [W], **kw)[0]
    ref = golden.grouped_matmul_quant(X, W, GL, **gkw)
    same_bits(y, ref)
    # the activation is not the identity on these inputs (the test can fail)
    plain = golden.grouped_matmul_quant(X, W, GL, **dict(gkw, act_type=0))
    assert not np.array_equal(np.asarray(plain).view(np.uint16), np.asarray(ref).view(np.uint16))


@pytest.mark.parametrize("kind", [golden.SILU, golden.GELU_TANH, golden.FASTGELU])
def test_activation_models_and_core_count(kind):
    # the Exp / Div models change about 3 in 10^5 bf16 outputs of values in the bends (|v| < 20): 256k outputs
    # show some, so the switch is seen to reach the kernel
    rng = np.random.default_rng(kind)
    m, k, n = 4000, 32, 64
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (1, k, n), dtype=np.int8)
    s = rng.uniform(-2e-4, 2e-4, (1, n)).astype(BF16)
    pt = rng.uniform(0.5, 2, m).astype(np.float32)
    gl = np.array([m], np.int64)
    y = api.npu_grouped_matmul([x], [w], scale=[s], per_token_scale=[pt], group_list=gl, output_dtype="bfloat16",
                               act_type=kind, split_item=3, group_type=0, exp_model="exp2", div_model="reciprocal",
                               core_num=3)[0]
    gkw = dict(scale=s, per_token_scale=pt, out_dtype="bfloat16", act_type=kind)
    ref = golden.grouped_matmul_quant(x, w, gl, exp_model="exp2", div_model="reciprocal", **gkw)
    same_bits(y, ref)
    default = golden.grouped_matmul_quant(x, w, gl, **gkw)
    assert (np.asarray(default).view(np.uint16) != np.asarray(ref).view(np.uint16)).sum() > 0


@pytest.mark.parametrize("entry", ["V4", "V5"])
def test_aclnn_act_type(entry):
    out = np.full((M, N), 7, np.float16)
    args = ([X], [W], None, [SCALE_F32], None, None, None, [PT], GL, None, None, None, 3, 0, 0, golden.FASTGELU)
    if entry == "V4":
        st, ws, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(*args, [out])
        assert st == 0 and api.aclnnGroupedMatmulV4(None, ws, ex) == 0
    else:
        st, ws, ex = api.aclnnGroupedMatmulV5GetWorkspaceSize(*args, None, [out])
        assert st == 0 and api.aclnnGroupedMatmulV5(None, ws, ex) == 0
    ref = golden.grouped_matmul_quant(X, W, GL, scale=SCALE_F32, per_token_scale=PT, out_dtype="float16",
                                      act_type=golden.FASTGELU)
    same_bits(out, ref)


def test_weight_nz_entry_with_relu():
    from npu_emu.kernels.quant_matmul.api import NzWeight

    n = 32                                        # an int8 NZ weight fills whole fractals: n % 32 == 0
    w, b, s = (np.ascontiguousarray(a[..., :n]) for a in (W, BIAS_BF16, SCALE_BF16))
    out = np.zeros((M, n), BF16)
    st, ws, ex = api.aclnnGroupedMatmulWeightNzGetWorkspaceSize(
        [X], [NzWeight.from_nd(w)], [b], [s], None, None, None, [PT], GL, None, None, None, 3, 0, 0,
        golden.RELU, None, 0, [out])
    assert st == 0 and api.aclnnGroupedMatmulWeightNz(None, ws, ex) == 0
    same_bits(out, golden.grouped_matmul_quant(X, w, GL, scale=s, per_token_scale=PT, bias=b,
                                               out_dtype="bfloat16", act_type=golden.RELU))


def test_tiling_carries_act_type_and_user_tiling_must_agree():
    kw = dict(scale=[SCALE_BF16], group_list=GL, output_dtype="bfloat16", act_type=golden.RELU, split_item=3,
              group_type=0)
    _, tr = api.npu_grouped_matmul([X], [W], trace=True, **kw)
    base = tr.tiling_data["gmmBaseParams"]
    assert base["activeType"] == golden.RELU
    bad = dict(tr.tiling_data, gmmBaseParams=dict(base, activeType=0))
    with pytest.raises(AclnnError, match="activeType = 0 but the call has act_type 1") as e:
        api.npu_grouped_matmul([X], [W], tiling=bad, **kw)
    assert e.value.status == 561002


# ---- checks (aclnn_grouped_matmul.cpp: CheckCommonParam, then CheckFunctionParams' branches) ------------------

@pytest.mark.parametrize("a,msg", [
    (-1, "actType must be larger or equal to 0"),
    (3, "Activation function not support GELU_ERR_FUNC now."),
    (6, "Activation function only support RELU/GELU_TANH/FASTGELU/SILU."),
])
def test_common_act_type_checks(a, msg):
    with pytest.raises(AclnnError, match=msg.replace(".", r"\.").replace("(", r"\(")) as e:
        api.npu_grouped_matmul([X], [W], scale=[SCALE_BF16], group_list=GL, output_dtype="bfloat16", act_type=a,
                               split_item=3, group_type=0)
    assert e.value.status == 161002


def test_common_check_comes_before_the_mode_checks():
    # an antiquant call with GELU_ERR_FUNC gets CheckCommonParam's message, not the antiquant branch's
    x = RNG.standard_normal((8, 32)).astype(np.float16)
    w = RNG.integers(-8, 8, (2, 32, 16), dtype=np.int8)
    s = np.ones((2, 16), np.float16)
    with pytest.raises(AclnnError, match="GELU_ERR_FUNC"):
        api.npu_grouped_matmul([x], [w], antiquant_scale=[s], antiquant_offset=[s], group_list=np.array([4, 8]),
                               act_type=3, split_item=3, group_type=0)
    with pytest.raises(AclnnError, match="antiquant case dose not support activation"):
        api.npu_grouped_matmul([x], [w], antiquant_scale=[s], antiquant_offset=[s], group_list=np.array([4, 8]),
                               act_type=golden.SILU, split_item=3, group_type=0)


def test_float_and_int32_refuse_an_activation():
    xf = RNG.standard_normal((8, 32)).astype(np.float16)
    wf = RNG.standard_normal((2, 32, 16)).astype(np.float16)
    with pytest.raises(AclnnError, match="non quant case dose not support activation") as e:
        api.npu_grouped_matmul([xf], [wf], group_list=np.array([4, 8]), act_type=golden.RELU, split_item=3,
                               group_type=0)
    assert e.value.status == 161002
    with pytest.raises(AclnnError, match="emulator-added") as e:
        api.npu_grouped_matmul([X], [W], group_list=GL, output_dtype=np.int32, act_type=golden.SILU, split_item=3,
                               group_type=0)
    assert e.value.status == 161002


def test_bad_model_name():
    with pytest.raises(AclnnError, match="exp_model"):
        api.npu_grouped_matmul([X], [W], scale=[SCALE_BF16], group_list=GL, output_dtype="bfloat16", act_type=5,
                               split_item=3, group_type=0, exp_model="fast")


def test_cli_run_with_act_type(tmp_path, capsys):
    from npu_emu.cli import main as cli_main

    y = tmp_path / "y.bin"
    files = {}
    for name, arr in (("x", X), ("weight", W), ("group_list", GL), ("scale", SCALE_BF16), ("per_token_scale", PT)):
        files[name] = tmp_path / f"{name}.bin"
        np.ascontiguousarray(arr).tofile(files[name])
    argv = ["run", "grouped_matmul", "--output", str(y), "--output-dtype", "bfloat16", "--act-type", "5"]
    for name, arr in (("x", X), ("weight", W), ("group_list", GL), ("scale", SCALE_BF16), ("per_token_scale", PT)):
        flag = "--" + name.replace("_", "-")
        argv += [flag, str(files[name]), flag + "-shape", ",".join(map(str, arr.shape))]
    argv += ["--scale-dtype", "bfloat16"]
    assert cli_main(argv) == 0, capsys.readouterr()
    ref = golden.grouped_matmul_quant(X, W, GL, scale=SCALE_BF16, per_token_scale=PT, out_dtype="bfloat16",
                                      act_type=golden.SILU)
    same_bits(np.fromfile(y, np.uint16).reshape(M, N).view(BF16), ref)


def test_torch_binding_passes_act_type():
    torch = pytest.importorskip("torch")
    import npu_emu.torch  # noqa: F401

    y = torch.ops.npu.npu_grouped_matmul([torch.from_numpy(X)], [torch.from_numpy(W)],
                                         scale=[torch.from_numpy(SCALE_F32)], per_token_scale=[torch.from_numpy(PT)],
                                         group_list=torch.from_numpy(GL), split_item=3, group_type=0,
                                         output_dtype=torch.float16, act_type=golden.GELU_TANH)[0]
    ref = golden.grouped_matmul_quant(X, W, GL, scale=SCALE_F32, per_token_scale=PT, out_dtype="float16",
                                      act_type=golden.GELU_TANH)
    same_bits(y.numpy(), ref)


def test_dask_chunks_with_an_activation():
    da = pytest.importorskip("dask.array")
    import npu_emu.dask as nd

    got = nd.grouped_matmul(da.from_array(X, chunks=(16, K)), [W], group_list=GL, scale=[SCALE_BF16],
                            per_token_scale=[PT], bias=[BIAS_BF16], output_dtype="bfloat16",
                            act_type=golden.FASTGELU).compute(scheduler="sync")
    same_bits(np.asarray(got), golden.grouped_matmul_quant(X, W, GL, scale=SCALE_BF16, per_token_scale=PT,
                                                           bias=BIAS_BF16, out_dtype="bfloat16",
                                                           act_type=golden.FASTGELU))
