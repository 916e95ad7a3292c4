"""A script written against ``torch_npu.npu_*`` runs on npu-emu after swapping the module object
(``import npu_emu.ops as torch_npu``), with torch CPU tensors in and out in torch_npu's dtypes.

Each ``user_*`` function below is written the way the cited public code calls torch_npu; the tests run it with
``torch_npu = npu_emu.ops`` and check (1) the dtypes and shapes torch_npu returns, (2) the bits against the same op
called with numpy arrays (whose values the op owners test against the independent goldens), and (3) where a
closed-form expectation exists, the values themselves. An op whose front end is not exported from npu_emu.ops yet
is exercised through its own api module (``_fn``) and its drop-in test skips until the export lands.
"""

import importlib

import ml_dtypes
import numpy as np
import pytest

import npu_emu.ops

API = {  # where each front end lives until npu_emu.ops re-exports it
    "npu_sign_bits_pack": "npu_emu.kernels.sign_bits.api",
    "npu_sign_bits_unpack": "npu_emu.kernels.sign_bits.api",
    "gather_dequant_int8": "npu_emu.kernels.gather_dequant_int8.api",
    "npu_dynamic_mx_quant": "npu_emu.kernels.mx_quant.api",
    "npu_grouped_dynamic_mx_quant": "npu_emu.kernels.mx_quant.api",
    "npu_quant_matmul": "npu_emu.kernels.quant_matmul.api",
    "npu_trans_quant_param": "npu_emu.kernels.quant_matmul.api",
    "data_copy_dequant": "npu_emu.kernels.data_copy_dequant.api",
}


def _fn(name):
    fn = getattr(npu_emu.ops, name, None)
    if fn is None:
        try:
            fn = getattr(importlib.import_module(API[name]), name, None)
        except ImportError:
            fn = None
    if fn is None:
        pytest.skip(f"{name} is not implemented yet")
    return fn


@pytest.fixture
def torch_npu(need, request):
    """npu_emu.ops as the torch_npu module object; skips unless it exports every name the test's script uses."""
    for name in request.node.get_closest_marker("uses").args:
        need(npu_emu.ops, name)
    return npu_emu.ops


uses = pytest.mark.uses


# ---------------------------------------------------------------------------------------------------------------
# SignBits: DeepSpeed 1-bit Adam (microsoft/DeepSpeed: deepspeed/runtime/comm/hccl.py, compressed_allreduce)
# ---------------------------------------------------------------------------------------------------------------

def user_onebit_compress(torch, torch_npu, buffer_m, world_size):
    """One rank's side of HcclBackend.compressed_allreduce, without the collectives."""
    sign_list_packed = torch_npu.npu_sign_bits_pack(buffer_m, world_size)         # (W, n / (8W)) uint8
    recv = sign_list_packed.type(torch.int8)                                        # what all_to_all carries
    unpacked = torch_npu.npu_sign_bits_unpack(recv.type(torch.uint8).flatten(), world_size, torch.float32)
    return sign_list_packed, unpacked


@uses("npu_sign_bits_pack", "npu_sign_bits_unpack")
def test_deepspeed_onebit_script(torch, torch_npu, bits):
    world, n = 4, 4096
    buffer_m = torch.randn(n, generator=torch.Generator().manual_seed(0))
    buffer_m[:3] = torch.tensor([0.0, -0.0, -1e-30])
    packed, unpacked = user_onebit_compress(torch, torch_npu, buffer_m, world)
    assert packed.dtype == torch.uint8 and tuple(packed.shape) == (world, n // (8 * world))
    assert unpacked.dtype == torch.float32 and tuple(unpacked.shape) == (world, n // world)
    # unpack(pack(x)) is the sign with x >= 0 -> +1 (-0.0 included), else -1 (docs/ops/sign_bits.md §3.1)
    want = np.where(buffer_m.numpy() >= 0, 1.0, -1.0).astype(np.float32).reshape(world, -1)
    assert np.array_equal(unpacked.numpy(), want)
    assert np.array_equal(bits(packed), bits(_fn("npu_sign_bits_pack")(buffer_m.numpy(), world)))


@uses("npu_sign_bits_pack", "npu_sign_bits_unpack")
def test_torch_npu_doc_examples(torch, torch_npu):
    # Ascend/op-plugin docs "(beta) torch_npu.npu_sign_bits_pack / _unpack" (docs/ops/sign_bits.md §4)
    a = torch.tensor([5, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2], dtype=torch.float32)
    assert torch_npu.npu_sign_bits_pack(a, 2).tolist() == [[159], [15]]
    b = torch.tensor([159, 15], dtype=torch.uint8)
    y = torch_npu.npu_sign_bits_unpack(b, 2, torch.float32)
    assert y.tolist() == [[1, 1, 1, 1, 1, -1, -1, 1], [1, 1, 1, 1, -1, -1, -1, -1]]
    h = torch_npu.npu_sign_bits_unpack(b, 1, torch.float16)
    assert h.dtype == torch.float16 and h.shape == (1, 16)


def test_sign_bits_non_contiguous_and_half(torch, bits):
    pack, unpack = _fn("npu_sign_bits_pack"), _fn("npu_sign_bits_unpack")
    base = torch.randn(2, 1024, generator=torch.Generator().manual_seed(1)).to(torch.float16)
    x = base[:, ::2].reshape(-1)[::2]                                # a strided view (aclnn: made contiguous)
    assert not x.is_contiguous()
    got = pack(x, 1)
    assert got.dtype == torch.uint8
    assert np.array_equal(bits(got), bits(pack(np.ascontiguousarray(x.numpy()), 1)))
    u = unpack(got.reshape(-1), 1, 1)                                 # dtype as the IR code 1 = float16
    assert u.dtype == torch.float16


# ---------------------------------------------------------------------------------------------------------------
# MX quantisation: MindSpeed MXFP8 recipe (Ascend MindSpeed: te/pytorch/fp8/recipes/mxfp8_scaling_recipe.py)
# ---------------------------------------------------------------------------------------------------------------

def user_mxfp8_quantization(torch, torch_npu, tensor, fp8_dtype):
    """MXFP8ScalingRecipe.quantization: the tensor along -1, and its transpose (a non-contiguous view)."""
    y, mx_scale = torch_npu.npu_dynamic_mx_quant(tensor, axis=-1, dst_type=fp8_dtype)
    y_t, mx_scale_t = torch_npu.npu_dynamic_mx_quant(tensor.t(), axis=-1, dst_type=fp8_dtype)
    return y, mx_scale, y_t, mx_scale_t


def _check_mxfp8(torch, bits, tensor, dst, y, s, y_t, s_t):
    np_dyn = _fn("npu_dynamic_mx_quant")
    xb = tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    m, n = xb.shape
    assert y.dtype == torch.float8_e4m3fn and tuple(y.shape) == (m, n)
    assert s.dtype == torch.uint8 and tuple(s.shape) == (m, -(-n // 64), 2)    # torch_npu: uint8 scales
    assert s.view(torch.float8_e8m0fnu).dtype == torch.float8_e8m0fnu           # ... viewed as E8M0 by users
    want_y, want_s = np_dyn(xb, axis=-1, dst_type=dst)
    assert np.array_equal(bits(y), bits(want_y)) and np.array_equal(bits(s), bits(want_s))
    want_yt, want_st = np_dyn(np.ascontiguousarray(xb.T), axis=-1, dst_type=dst)
    assert np.array_equal(bits(y_t), bits(want_yt)) and np.array_equal(bits(s_t), bits(want_st))


@uses("npu_dynamic_mx_quant")
def test_mindspeed_mxfp8_script_with_dtype_code(torch, torch_npu, bits):
    tensor = torch.randn(64, 128, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    out = user_mxfp8_quantization(torch, torch_npu, tensor, 24)                   # 24 = torch.float8_e4m3fn
    _check_mxfp8(torch, bits, tensor, 24, *out)


@uses("npu_dynamic_mx_quant")
def test_mindspeed_mxfp8_script_with_torch_dtype(torch, torch_npu, bits):
    # MindSpeed passes the torch dtype object itself (dst_type=torch.float8_e4m3fn)
    tensor = torch.randn(64, 128, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    try:
        out = user_mxfp8_quantization(torch, torch_npu, tensor, torch.float8_e4m3fn)
    except npu_emu.AclnnError as e:
        pytest.skip(f"dst_type does not take torch dtype objects yet (mx_quant owner): {e}")
    _check_mxfp8(torch, bits, tensor, 24, *out)


def test_dynamic_mx_quant_torch_out_dtypes(torch, bits):
    dyn = _fn("npu_dynamic_mx_quant")
    # 128 columns = an even block count: an odd one leaves the pad scale slot unwritten today (mx_quant owner)
    x = torch.randn(8, 128, generator=torch.Generator().manual_seed(3)).to(torch.float16)
    y, s = dyn(x, dst_type=296)                                     # float4_e2m1fn_x2: packed, uint8, last dim / 2
    assert y.dtype == torch.uint8 and tuple(y.shape) == (8, 64) and s.dtype == torch.uint8
    wy, ws = dyn(x.numpy(), dst_type=296)
    assert np.array_equal(bits(y), bits(wy)) and np.array_equal(bits(s), bits(ws))
    y5, _ = dyn(x, dst_type=23)
    assert y5.dtype == torch.float8_e5m2


def test_grouped_mx_quant_torch_npu_graph_example(torch, bits):
    # torch_npu graph-mode example (docs/ops/mx_quant.md §7): x [64, 256] fp16 randn, group_index [32, 64]
    grouped = _fn("npu_grouped_dynamic_mx_quant")
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(4)).to(torch.float16)
    gi = torch.tensor([32, 64], dtype=torch.int32)
    y, s = grouped(x, gi, round_mode="rint", dst_type=23, blocksize=32)
    assert y.dtype == torch.float8_e5m2 and tuple(y.shape) == (64, 256)
    assert s.dtype == torch.uint8 and tuple(s.shape) == (64 // 64 + 2, 256, 2)
    wy, ws = grouped(x.numpy(), gi.numpy(), round_mode="rint", dst_type=23, blocksize=32)
    assert np.array_equal(bits(y), bits(wy)) and np.array_equal(bits(s), bits(ws))
    # the example's gap row 2 (no group owns it) is all zero, as the doc's output shows
    assert not s[2].any()


# ---------------------------------------------------------------------------------------------------------------
# Quantised matmul: a W8A8 linear layer (vllm-ascend style: weight stored (n, k), passed transposed)
# ---------------------------------------------------------------------------------------------------------------

def user_w8a8_linear(torch, torch_npu, x, weight, weight_scale, pertoken_scale, bias=None):
    return torch_npu.npu_quant_matmul(x, weight.t(), weight_scale, pertoken_scale=pertoken_scale, bias=bias,
                                      output_dtype=torch.bfloat16)


def user_w8a8_static(torch, torch_npu, x, weight, weight_scale, deq_bias):
    deq_scale = torch_npu.npu_trans_quant_param(weight_scale)                   # float32 -> int64 words
    return torch_npu.npu_quant_matmul(x, weight.t(), deq_scale, bias=deq_bias, output_dtype=torch.float16)


def _w8a8_inputs(torch, m=24, k=64, n=40, seed=5):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-128, 128, (m, k), dtype=torch.int8, generator=g)
    w = torch.randint(-128, 128, (n, k), dtype=torch.int8, generator=g)
    scale = (torch.rand(n, generator=g) * 0.004 + 0.0005).float()
    pertoken = (torch.rand(m, generator=g) * 1.5 + 0.5).float()
    bias = torch.randint(-5000, 5000, (n,), dtype=torch.int32, generator=g)
    return x, w, scale, pertoken, bias


@uses("npu_quant_matmul")
def test_w8a8_dynamic_script(torch, torch_npu, bits):
    x, w, scale, pertoken, _ = _w8a8_inputs(torch)
    y = user_w8a8_linear(torch, torch_npu, x, w, scale, pertoken)
    assert y.dtype == torch.bfloat16 and tuple(y.shape) == (24, 40)
    want = _fn("npu_quant_matmul")(x.numpy(), np.ascontiguousarray(w.numpy().T), scale.numpy(),
                                   pertoken_scale=pertoken.numpy(), output_dtype="bfloat16")
    assert np.array_equal(bits(y), bits(want))


@uses("npu_quant_matmul", "npu_trans_quant_param")
def test_w8a8_static_script(torch, torch_npu, bits):
    x, w, scale, _, bias = _w8a8_inputs(torch, seed=6)
    y = user_w8a8_static(torch, torch_npu, x, w, scale, bias)
    assert y.dtype == torch.float16
    # the same words the wrapper would pack itself from the float32 scale (docs/ops/quant_matmul.md §11.1)
    want = _fn("npu_quant_matmul")(x.numpy(), np.ascontiguousarray(w.numpy().T), scale.numpy(), bias=bias.numpy(),
                                   output_dtype="float16")
    assert np.array_equal(bits(y), bits(want))


def test_quant_matmul_torch_in_torch_out(torch, bits):
    qmm, tqp = _fn("npu_quant_matmul"), _fn("npu_trans_quant_param")
    x, w, scale, pertoken, bias = _w8a8_inputs(torch, seed=7)
    words = tqp(scale)
    assert words.dtype == torch.int64 and tuple(words.shape) == (40,)
    assert np.array_equal(bits(words), bits(tqp(scale.numpy())))
    y = qmm(x, w.t(), scale, pertoken_scale=pertoken, output_dtype=torch.bfloat16)
    y_contig = qmm(x, w.t().contiguous(), scale, pertoken_scale=pertoken, output_dtype=torch.bfloat16)
    assert y.dtype == torch.bfloat16 and np.array_equal(bits(y), bits(y_contig))
    y8 = qmm(x, w.t(), words)                                              # default output: int8, as torch_npu
    assert y8.dtype == torch.int8


def test_quant_matmul_fp8_tensors(torch, bits):
    qmm = _fn("npu_quant_matmul")
    g = torch.Generator().manual_seed(8)
    x1 = torch.randn(8, 64, generator=g).to(torch.float8_e4m3fn)
    x2 = torch.randn(64, 16, generator=g).to(torch.float8_e4m3fn)
    scale = torch.rand(16, generator=g) * 0.1 + 0.01
    pertoken = torch.rand(8, generator=g) + 0.5
    # fp8 runs on the Ascend 950 only: the emulator keyword soc= says so (torch_npu has no such argument)
    y = qmm(x1, x2, scale, pertoken_scale=pertoken, output_dtype=torch.bfloat16, soc="ascend950pr")
    assert y.dtype == torch.bfloat16
    want = qmm(x1.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn),
               x2.view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn), scale.numpy(),
               pertoken_scale=pertoken.numpy(), output_dtype="bfloat16", soc="ascend950pr")
    assert np.array_equal(bits(y), bits(want))


# ---------------------------------------------------------------------------------------------------------------
# ops without a torch_npu function: torch in -> torch out all the same
# ---------------------------------------------------------------------------------------------------------------

def test_gather_dequant_int8_torch(torch, bits):
    op = _fn("gather_dequant_int8")
    g = torch.Generator().manual_seed(9)
    table = torch.randint(0, 256, (50, 64), dtype=torch.uint8, generator=g)
    scale = (torch.rand(50, generator=g) * 0.01).half()
    zp = (torch.rand(50, generator=g) * 255).half()
    idx = torch.randint(0, 50, (3, 5), dtype=torch.int32, generator=g)
    y = op(table, idx, scale, zp)
    assert y.dtype == torch.float16 and tuple(y.shape) == (3, 5, 64)
    assert np.array_equal(bits(y), bits(op(table.numpy(), idx.numpy(), scale.numpy(), zp.numpy())))


def test_data_copy_dequant_torch(torch, bits):
    op = _fn("data_copy_dequant")
    acc = torch.randint(-(1 << 15), 1 << 15, (16, 32), dtype=torch.int32, generator=torch.Generator().manual_seed(10))
    # scale 2^-7 in bits 0..31, bit 46: signed int8 output (docs/ops/data_copy_dequant.md §3)
    word = int(np.float32(2.0 ** -7).view(np.uint32)) | (1 << 46)
    y = op(acc, word, mode="DEQ8")
    assert y.dtype == torch.int8 and tuple(y.shape) == (16, 32)
    assert np.array_equal(bits(y), bits(op(acc.numpy(), word, mode="DEQ8")))
    # a scale of 2^-7 with no offset: y = clamp(rint(acc / 128), -128, 127) (RNE, the default switches)
    want = np.clip(np.rint(acc.numpy() / 128.0), -128, 127).astype(np.int8)
    assert np.array_equal(y.numpy(), want)


# ---------------------------------------------------------------------------------------------------------------
# the aclnn layer writes torch out tensors in place (after success only)
# ---------------------------------------------------------------------------------------------------------------

def test_aclnn_two_phase_writes_a_torch_out(torch):
    from npu_emu import aclnn

    x = torch.tensor([159, 15], dtype=torch.uint8)
    base = torch.zeros(8, 2)
    out = base.t()                                                   # a non-contiguous (2, 8) out
    status, ws, ex = aclnn.aclnnSignBitsUnpackGetWorkspaceSize(x, 2, 0, out)
    assert status == 0
    assert not out.any()                                             # phase 1 does not touch out
    assert aclnn.aclnnSignBitsUnpack(None, ws, ex) == 0
    # the torch_npu doc example (docs/ops/sign_bits.md §4)
    assert out.tolist() == [[1, 1, 1, 1, 1, -1, -1, 1], [1, 1, 1, 1, -1, -1, -1, -1]]
    assert base.t().tolist() == out.tolist()
    # a rejected call leaves out alone: 16 outputs do not split into 3 rows
    bad = torch.full((3, 5), 7.0)
    status, _, ex = aclnn.aclnnSignBitsUnpackGetWorkspaceSize(x, 3, 0, bad)
    assert status == 161002 and ex is None and bool((bad == 7).all())
