"""A read-only input runs the kernel a writable one compiled (npu_emu.frontend.core.as_array hands every input over
as a read-only view): numba types read-only arrays apart, so without that a caller's np.frombuffer array, memory map
or Dask chunk compiled the kernel a second time, and missed the kernels a wheel ships."""

import sys

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

from npu_emu.frontend.core import as_array
from npu_emu.frontend.registry import configs

# configurations whose kernels take an input in place and that the suite compiles anyway (each compiled a second
# kernel for read-only inputs before, 0.6-6.7 s cold; so did 62 other configurations of the registry, which go
# through the same as_array)
NAMES = [
    "data_copy_dequant.vdeq8",                  # acc, and the per-channel deq word table
    "dequant_swiglu_quant.nogroup",
    "dynamic_quant.int8_bf16",
    "gather_dequant_int8.fp16",                 # a memory-mapped embedding table is the common case
    "grouped_matmul.w8a16_msd_bf16",
    "sign_bits.unpack_f32",
    "swiglu.bf16",
]


def _signatures():
    """Every signature the dispatchers of npu_emu's modules (specialised copies included) hold, compiled or loaded."""
    n = 0
    for name, mod in list(sys.modules.items()):
        if name.startswith("npu_emu"):
            n += sum(len(o.signatures) for o in list(vars(mod).values())
                     if isinstance(o, CPUDispatcher) and o.py_func.__module__ == name)
    return n


def _read_only(v):
    if isinstance(v, np.ndarray):
        r = np.frombuffer(v.tobytes(), v.dtype).reshape(v.shape)     # read-only, as bytes or a memory map give
        assert not r.flags.writeable
        return r
    if isinstance(v, (list, tuple)):
        return type(v)(_read_only(e) for e in v)
    return v


def _bits(res):
    if isinstance(res, (list, tuple)):
        return [b for r in res for b in _bits(r)]
    if res is None:
        return [None]
    a = np.ascontiguousarray(np.asarray(res))
    return [(a.shape, a.dtype.str, a.view(np.uint8).tobytes())]


@pytest.mark.parametrize("name", NAMES)
def test_read_only_inputs_load_the_same_kernels(name):
    cfg = {c.name: c for c in configs()}[name]
    call = cfg.build()
    cells = [c for c in (call.__closure__ or ()) if isinstance(c.cell_contents, (np.ndarray, list, tuple))]
    assert any(isinstance(c.cell_contents, np.ndarray) for c in cells), "the call closes over no input array"
    first = call()
    n = _signatures()
    for c in cells:
        c.cell_contents = _read_only(c.cell_contents)
    second = call()
    assert _signatures() == n, "the read-only inputs compiled (or loaded) another kernel signature"
    assert _bits(second) == _bits(first)


def test_as_array_is_a_read_only_view_and_leaves_the_callers_array_alone():
    x = np.arange(6, dtype=np.uint16).reshape(2, 3)
    a = as_array(x, "x")
    assert not a.flags.writeable and np.shares_memory(a, x) and x.flags.writeable
    t = as_array(x.T, "x")                                       # the contiguous copy is read-only as well
    assert not t.flags.writeable and t.flags.c_contiguous and np.array_equal(t, x.T)
    assert not as_array([1, 2], "x").flags.writeable
    ro = _read_only(x)
    assert as_array(ro, "x") is ro


def test_as_array_of_a_torch_tensor_is_read_only_and_shares_its_memory():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32)
    a = as_array(t, "x")
    assert not a.flags.writeable and a.ctypes.data == t.data_ptr()
    t[0] = 5                                                     # the caller's tensor stays writable
    assert a[0] == 5
