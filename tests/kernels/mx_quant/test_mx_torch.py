"""torch CPU tensors in -> torch tensors out (torch_npu's dtypes: float8 y, uint8 packed FP4 and mxscale)."""

import pytest

torch = pytest.importorskip("torch")

from npu_emu.kernels.mx_quant import api  # noqa: E402


def test_grouped_torch_roundtrip_doc_example():
    x = torch.tensor([0, 8, 64, 512] * 2, dtype=torch.bfloat16).reshape(8, 1)
    y, s = api.npu_grouped_dynamic_mx_quant(x, torch.tensor([4, 8], dtype=torch.int32), dst_type=24)
    assert y.dtype == torch.float8_e4m3fn and s.dtype == torch.uint8
    assert y.view(torch.uint8).flatten().tolist() == [0x00, 0x48, 0x60, 0x78] * 2
    assert s.tolist() == [[[128, 0]], [[128, 0]]]


def test_dynamic_torch_fp4_and_aclnn_outs():
    y, s = api.npu_dynamic_mx_quant(torch.ones(2, 64, dtype=torch.float16))
    assert y.dtype == torch.uint8 and tuple(y.shape) == (2, 32) and tuple(s.shape) == (2, 1, 2)
    # fp16 1.0: E = 127 -> E2M1 code 127 - 2 = 125 for both blocks of the 64 elements; y = 1.0 * 2^2 = 4.0 ->
    # code 6, two per byte: 0x66
    assert (y == 0x66).all() and (s == 125).all()
    x = torch.tensor([[0, 8, 64, 512]], dtype=torch.bfloat16)
    yo = torch.zeros(1, 4, dtype=torch.float8_e4m3fn)
    so = torch.zeros(1, 1, 2, dtype=torch.uint8)
    st, ws, ex = api.aclnnDynamicMxQuantGetWorkspaceSize(x, -1, "rint", 36, 32, 0, yo, so)
    assert st == 0 and api.aclnnDynamicMxQuant(None, ws, ex) == 0
    assert yo.view(torch.uint8).flatten().tolist() == [0x00, 0x48, 0x60, 0x78] and so.flatten().tolist() == [128, 0]


@pytest.mark.parametrize("dst_type, code", [(torch.float8_e4m3fn, 24), (torch.float8_e5m2, 23),
                                            (torch.float4_e2m1fn_x2, 296)])
def test_torch_dtype_as_dst_type(dst_type, code):
    # a torch dtype names the same output format as its torch code; torch x -> torch y / mxscale
    x = torch.linspace(-4, 4, 2 * 64, dtype=torch.float32).to(torch.bfloat16).reshape(2, 64)
    for fn, extra in ((api.npu_dynamic_mx_quant, ()), (api.npu_grouped_dynamic_mx_quant, ([2],))):
        y, s = fn(x, *extra, dst_type=dst_type)
        yr, sr = fn(x, *extra, dst_type=code)
        assert isinstance(y, torch.Tensor) and y.dtype == yr.dtype and s.dtype == torch.uint8
        assert torch.equal(y.view(torch.uint8), yr.view(torch.uint8)) and torch.equal(s, sr)


def test_grouped_aclnn_torch_outs_e8m0():
    # torch outputs including a float8_e8m0fnu mxscale (the codes are copied as bits): docs/ops/mx_quant.md §10 G1
    x = torch.tensor([0, 8, 64, 512] * 2, dtype=torch.bfloat16).reshape(8, 1)
    y = torch.zeros(8, 1, dtype=torch.float8_e4m3fn)
    s = torch.zeros(2, 1, 2, dtype=torch.float8_e8m0fnu)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, torch.tensor([4, 8], dtype=torch.int32), "rint",
                                                                36, 32, y, s)
    assert st == 0 and api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 0
    assert y.view(torch.uint8).flatten().tolist() == [0x00, 0x48, 0x60, 0x78] * 2
    assert s.view(torch.uint8).flatten().tolist() == [128, 0, 128, 0]
