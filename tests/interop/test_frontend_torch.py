"""npu_emu.frontend.core's torch interop: torch CPU tensors in (zero-copy when contiguous), torch out with torch_npu's
dtypes, out= tensors written bit for bit, and no torch import unless the caller brought a tensor."""

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.frontend.core import Origin, as_array, is_torch_tensor, to_user, write_out


def test_torch_is_not_imported_by_the_package(tmp_path):
    # a fresh interpreter: numpy-only use of every front-end module must not pull torch in (every name of npu_emu.ops
    # and npu_emu.aclnn is resolved: they import their op families on first use)
    code = (
        "import sys, numpy as np\n"
        "import npu_emu, npu_emu.ops, npu_emu.aclnn, npu_emu.cli, npu_emu.cli.demo, npu_emu.frontend.core as f\n"
        "for m in (npu_emu.ops, npu_emu.aclnn):\n"
        "    [getattr(m, n) for n in m.__all__]\n"
        "a = f.as_array(np.arange(4, dtype=np.uint8), 'x')\n"
        "assert f.to_user(a, f.Origin()) is a and not f.is_torch_tensor(a)\n"
        "f.write_out(np.empty(4, np.uint8), a)\n"
        "print('torch' in sys.modules)\n"
    )
    # cwd: not the repository root, whose source folder would shadow the installed npu_emu
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "False"


def test_is_torch_tensor(torch):
    assert is_torch_tensor(torch.zeros(2))
    assert is_torch_tensor(torch.nn.Parameter(torch.zeros(2)))          # a subclass from torch.nn
    assert not is_torch_tensor(np.zeros(2))
    assert not is_torch_tensor([1, 2])


# torch dtype -> (numpy dtype as_array gives, torch dtype to_user gives back); the torch_npu carriers stay uint8
DTYPES = [
    ("float32", np.float32, "float32"),
    ("float16", np.float16, "float16"),
    ("bfloat16", ml_dtypes.bfloat16, "bfloat16"),
    ("int8", np.int8, "int8"),
    ("uint8", np.uint8, "uint8"),
    ("int32", np.int32, "int32"),
    ("int64", np.int64, "int64"),
    ("uint64", np.uint64, "uint64"),
    ("float8_e4m3fn", ml_dtypes.float8_e4m3fn, "float8_e4m3fn"),
    ("float8_e5m2", ml_dtypes.float8_e5m2, "float8_e5m2"),
    ("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, "float8_e8m0fnu"),
    ("float4_e2m1fn_x2", np.uint8, "uint8"),                             # packed FP4: torch_npu hands out uint8
]


@pytest.mark.parametrize("tname,npdt,back", DTYPES, ids=[d[0] for d in DTYPES])
def test_as_array_is_zero_copy_and_round_trips(torch, tname, npdt, back):
    raw = torch.arange(24, dtype=torch.uint8).reshape(4, 6)
    size = torch.empty((), dtype=getattr(torch, tname)).element_size()
    t = torch.arange(24 * size, dtype=torch.uint8).view(getattr(torch, tname)).reshape(4, 6) if size > 1 \
        else raw.view(getattr(torch, tname))
    origin = Origin()
    a = as_array(t, "x", origin=origin)
    assert origin.torch
    assert a.dtype == np.dtype(npdt) and a.shape == (4, 6)
    assert a.ctypes.data == t.data_ptr()                                   # no copy
    assert np.array_equal(a.view(np.uint8).reshape(-1), t.view(torch.uint8).reshape(-1).numpy())
    back_t = to_user(a, origin)
    assert back_t.dtype == getattr(torch, back)
    assert back_t.data_ptr() == t.data_ptr()                               # no copy on the way out either
    assert torch.equal(back_t.view(torch.uint8), t.view(torch.uint8))


def test_non_contiguous_input_is_made_contiguous(torch):
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for view in (t.t(), t[:, ::2], t[1:3].unsqueeze(0).expand(2, 2, 6)):
        a = as_array(view, "x")
        assert a.flags.c_contiguous and a.shape == tuple(view.shape)
        assert np.array_equal(a, view.contiguous().numpy())
    bf = torch.randn(4, 6).to(torch.bfloat16).t()                       # a bit-view dtype, transposed
    assert np.array_equal(as_array(bf, "x").view(np.uint16), bf.contiguous().view(torch.int16).numpy().view(np.uint16))


def test_grad_and_zero_dim_tensors(torch):
    p = torch.ones(3, requires_grad=True)
    assert np.array_equal(as_array(p, "x"), np.ones(3, np.float32))
    z = as_array(torch.tensor(7, dtype=torch.int32), "x")
    assert z.shape == () and int(z) == 7
    assert to_user(np.float32(2.5), Origin(torch=True)).item() == 2.5


def test_unusable_tensors_are_rejected_with_what_to_do(torch):
    with pytest.raises(AclnnError, match=r"x.cpu\(\)") as e:
        as_array(torch.zeros(2, device="meta"), "x")
    assert e.value.status == 161002
    with pytest.raises(AclnnError, match="to_dense"):
        as_array(torch.zeros(2, 2).to_sparse(), "x")
    with pytest.raises(AclnnError, match="cannot read"):
        as_array(torch.empty(2, dtype=torch.bits8), "x")
    with pytest.raises(AclnnError) as e:
        as_array(None, "x")
    assert e.value.status == 161001


def test_to_user_makes_torch_owned_memory_out_of_read_only_and_reversed_arrays(torch):
    o = Origin(torch=True)
    ro = np.broadcast_to(np.float32(3), (4,))                            # read-only view
    t = to_user(ro, o)
    assert t.tolist() == [3.0] * 4 and t.dtype == torch.float32
    rev = np.arange(5, dtype=np.int16)[::-1]                              # negative stride
    assert to_user(rev, o).tolist() == [4, 3, 2, 1, 0]
    assert to_user(np.arange(3), Origin()) is not None and isinstance(to_user(np.arange(3), Origin()), np.ndarray)


def test_write_out_copies_bits_into_torch_out(torch):
    # a uint8 E8M0 result into a float8_e8m0fnu out keeps the codes (copy_ would convert 127 -> 2^127 ...)
    out = torch.empty(3, dtype=torch.float8_e8m0fnu)
    assert write_out(out, np.array([127, 128, 1], np.uint8)) is out
    assert out.view(torch.uint8).tolist() == [127, 128, 1]
    # a non-contiguous out is honoured element by element
    base = torch.zeros(6, 4)
    out = base.t()                                                        # (4, 6), strides (1, 4)
    res = np.arange(24, dtype=np.float32).reshape(4, 6)
    write_out(out, res)
    assert torch.equal(out, torch.from_numpy(res)) and torch.equal(base, torch.from_numpy(res).t())
    # bfloat16 result into a bfloat16 tensor; a leaf that requires grad is written in place too
    out = torch.zeros(4, dtype=torch.bfloat16, requires_grad=True)
    write_out(out, np.array([1, -2, 0.5, 3], ml_dtypes.bfloat16))
    assert out.detach().tolist() == [1.0, -2.0, 0.5, 3.0]


def test_write_out_with_a_numpy_out_still_works():
    out = np.zeros(4, ml_dtypes.float8_e4m3fn)
    write_out(out, np.array([0x38, 0x40, 0, 0x80], np.uint8))
    assert out.view(np.uint8).tolist() == [0x38, 0x40, 0, 0x80]
