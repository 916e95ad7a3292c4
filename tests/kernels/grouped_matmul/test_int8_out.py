"""A8W8 -> int8 (the cube-only kernel with the uint64 FixPipe scale, ``SetQuantVector``) against the independent
golden (bits), the aclnn and torch entries, and its checks (docs/ops/grouped_matmul.md §3.4)."""

import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, golden
from npu_emu.kernels.quant_matmul.trans_quant_param import trans_quant_param

RNG = np.random.default_rng(41)
E, M, K, N = 3, 90, 80, 56
X = RNG.integers(-128, 128, (M, K), dtype=np.int8)
W = RNG.integers(-128, 128, (E, K, N), dtype=np.int8)
# scales around 1 / (typical |acc| / 100): the requantised values spread over the whole int8 range and saturate
SC = RNG.uniform(1e-3, 6e-3, (E, N)).astype(np.float32)
OFF = RNG.integers(-40, 40, (E, N)).astype(np.float32)
WORDS = trans_quant_param(SC.reshape(-1), OFF.reshape(-1)).reshape(E, N)      # uint64, offsets in bits 37..45
BIAS = RNG.integers(-30000, 30000, (E, N)).astype(np.int32)
GL = np.array([20, 20, 75], np.int64)


def gmm(**kw):
    kw.setdefault("split_item", 3)
    kw.setdefault("group_type", 0)
    kw.setdefault("group_list", GL)
    return api.npu_grouped_matmul([X], [W], **kw)[0]


def same_bits(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype == np.int8
    assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


@pytest.mark.parametrize("words", [WORDS, WORDS.view(np.int64)], ids=["uint64", "int64"])
@pytest.mark.parametrize("bias", [None, BIAS], ids=["nobias", "bias"])
@pytest.mark.parametrize("glt,gl", [(0, GL), (1, np.array([0, 33, 50], np.int64))], ids=["cumsum", "counts"])
def test_int8_out_bits(words, bias, glt, gl):
    y = gmm(scale=[words], bias=None if bias is None else [bias], group_list=gl, group_list_type=glt,
            output_dtype=np.int8)
    g = golden.grouped_matmul_quant(X, W, gl, group_list_type=glt, scale=words, bias=bias, out_dtype="int8")
    same_bits(y, g)
    covered = int(gl[-1]) if glt == 0 else int(gl.sum())
    assert (y[covered:] == 0).all()                         # rows of no group: a fresh y holds zeros
    vals = y[:covered]
    assert (vals == 127).any() and (vals == -128).any() and np.unique(vals).size > 100   # the test reaches saturation


def test_int8_is_the_default_output_of_int8_x():
    """output_dtype None means x's dtype (op-plugin): int8."""
    same_bits(gmm(scale=[WORDS]), golden.grouped_matmul_quant(X, W, GL, scale=WORDS, out_dtype="int8"))


def test_offset_bits_and_t19_scale_are_read_from_the_word():
    """Hand-made words: scale 1.0 + 2^-20 (the 19-bit FixPipe scale truncates it to 1.0), offsets -3 (column 0) and
    -200 (column 1) as int9 in bits 37..45. x row 0 = e_0, row 1 = 25 in k < 16; weight column 0 = 5 at k = 0,
    column 1 = 1 for k < 16. acc = [[5, 1], [125, 400]] -> + offset: [[2, -199 -> -128], [122, ...]]; 400 is first
    clamped to the int9 255, then 255 - 200 = 55 (offset first would give 200 -> 127)."""
    x = np.zeros((2, 32), np.int8)
    x[0, 0] = 1
    x[1, :16] = 25
    w = np.zeros((1, 32, 2), np.int8)
    w[0, 0, 0] = 5
    w[0, :16, 1] = 1
    lo = np.uint64(np.float32(1.0 + 2.0**-20).view(np.uint32))
    words = np.array([[lo | (np.uint64(512 - 3) << np.uint64(37)), lo | (np.uint64(512 - 200) << np.uint64(37))]],
                     np.uint64)
    y = api.npu_grouped_matmul([x], [w], scale=[words], group_list=np.array([2], np.int64), split_item=3,
                               group_type=0)[0]
    assert y.tolist() == [[2, -128], [122, 55]]


def test_aclnn_v4_int8_out_and_errors_leave_out_untouched():
    out = np.full((M, N), 7, np.int8)
    st, ws, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [X], [W], None, [WORDS], None, None, None, None, GL, None, None, None, 3, 0, 0, 0, [out])
    assert st == 0
    assert api.aclnnGroupedMatmulV4(None, ws, ex) == 0
    g = golden.grouped_matmul_quant(X, W, GL, scale=WORDS, out_dtype="int8", fill=7)
    same_bits(out, g)                                      # rows after the last group keep what out held
    bad = np.full((M, N), 7, np.int8)
    st, _, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize(
        [X], [W], None, [SC], None, None, None, None, GL, None, None, None, 3, 0, 0, 0, [bad])
    assert st == 161002 and ex is None and (bad == 7).all()


@pytest.mark.parametrize("kw,words", [
    (dict(scale=[SC]), "int64/uint64 when output is int8"),                 # a float32 scale with int8 out
    (dict(scale=[WORDS], per_token_scale=[np.ones(M, np.float32)]), "per-token quant case only supports"),
    (dict(scale=[WORDS], bias=[BIAS.astype(np.float32)]), "bias dtype"),
    (dict(scale=[WORDS[:2]]), "scale must have shape"),
    (dict(scale=[WORDS], offset=[SC]), "offset must be nullptr"),
    (dict(scale=[WORDS], act_type=5), "dose not support activation (emulator-added"),      # the cube-only kernel
])
def test_int8_out_errors(kw, words):
    with pytest.raises(AclnnError) as ei:
        gmm(output_dtype="int8", **kw)
    assert ei.value.status == 161002 and words in str(ei.value)


def test_torch_int8_out():
    torch = pytest.importorskip("torch")
    y = api.npu_grouped_matmul([torch.from_numpy(X)], [torch.from_numpy(W)],
                               scale=[torch.from_numpy(WORDS.view(np.int64))], group_list=torch.from_numpy(GL),
                               split_item=3, group_type=0, output_dtype=torch.int8)[0]
    assert isinstance(y, torch.Tensor) and y.dtype == torch.int8
    same_bits(y.numpy(), golden.grouped_matmul_quant(X, W, GL, scale=WORDS, out_dtype="int8"))


def test_cli_golden_then_run_int8(tmp_path, capsys):
    """`npu-emu golden grouped_matmul --mode int8` writes uint64 words; `npu-emu run` with them gives its bits."""
    import json

    from npu_emu.cli import main as cli_main

    d = tmp_path / "case"
    assert cli_main(["golden", "grouped_matmul", "--out", str(d), "--mode", "int8", "--e", "3", "--m", "40",
                     "--k", "64", "--n", "32"]) == 0
    man = json.loads((d / "manifest.json").read_text())
    sh = {k: ",".join(map(str, v["shape"])) for k, v in man["inputs"].items()}
    y = tmp_path / "y.bin"
    assert cli_main(["run", "grouped_matmul", "--x", str(d / "x.bin"), "--x-shape", sh["x"],
                     "--weight", str(d / "weight.bin"), "--weight-shape", sh["weight"],
                     "--group-list", str(d / "group_list.bin"), "--group-list-type", "1",
                     "--scale", str(d / "scale.bin"), "--scale-shape", sh["scale"], "--scale-dtype", "uint64",
                     "--output", str(y)]) == 0
    capsys.readouterr()
    assert (d / "golden.bin").read_bytes() == y.read_bytes()
    assert cli_main(["tiling", "grouped_matmul", "--mode", "int8", "--m", "64", "--k", "128", "--n", "64"]) == 0
    assert "int8" in capsys.readouterr().out
