"""Read-only inputs (np.frombuffer, a read-only memory map, a broadcast) reach the kernel that writeable ones do.

numba compiles a read-only array as another type, so a kernel handed the caller's arrays as they come would compile
again for such a caller, and miss the kernels a wheel ships. Every kernel call hands its inputs over read-only
(npu_emu.device.read_only); these tests call a compile configuration, then the same call with its inputs made
read-only, and count what numba compiled in between. The installed-bundle test (test_shipped_kernels) does the
same for every configuration against the kernels a wheel ships.
"""

import sys

import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

from npu_emu.cli import op_configs
from npu_emu.device.read_only import read_only
from npu_emu.errors import AclnnError


def signatures():
    """Every compiled signature of every npu_emu dispatcher in this process (op kernels' copies included)."""
    n = 0
    for name, mod in list(sys.modules.items()):
        if name.startswith("npu_emu") and mod is not None:
            for obj in list(vars(mod).values()):
                if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                    n += len(obj.signatures)
    return n


def frozen(v):
    """``v`` with every ndarray in it read-only (lists, tuples and dicts followed)."""
    if isinstance(v, np.ndarray):
        w = v.view()
        w.flags.writeable = False
        return w
    if isinstance(v, (list, tuple)) and any(isinstance(e, np.ndarray) for e in v):
        return type(v)(frozen(e) for e in v)
    if isinstance(v, dict) and any(isinstance(e, np.ndarray) for e in v.values()):
        return {k: frozen(e) for k, e in v.items()}
    return v


def with_read_only_inputs(call):
    """The configuration's call with the arrays it closes over (its inputs: a configuration allocates its
    outputs in the call) made read-only."""
    changed = 0
    for cell in call.__closure__ or ():
        new = frozen(cell.cell_contents)
        if new is not cell.cell_contents:
            cell.cell_contents, changed = new, changed + 1
    assert changed, "the configuration closes over no array: nothing to make read-only"
    return call


def test_read_only_is_a_view_of_the_same_memory():
    a = np.arange(6, dtype=np.float32)
    v = read_only(a)
    assert not v.flags.writeable and a.flags.writeable
    assert np.shares_memory(a, v) and v.base is a
    assert read_only(v) is v                                  # already read-only: handed on as it is
    with pytest.raises(ValueError):
        v[0] = 1


def test_read_only_of_a_memory_map_is_a_plain_array(tmp_path):
    path = tmp_path / "x.bin"
    np.arange(4, dtype=np.uint16).tofile(path)
    for mode in ("r", "r+"):
        m = np.memmap(path, np.uint16, mode=mode)
        v = read_only(m)
        assert type(v) is np.ndarray and not v.flags.writeable and v.tolist() == [0, 1, 2, 3]


# cheap configurations (cold: 1-4 s each) of each kind of kernel entry: through launch with an access pattern
# (sign_bits, swiglu), through the grouped matmul epilogue, the codecs' direct calls, a host helper
# (trans_quant_param), the data-copy instruction's matrix form
CHEAP = ["sign_bits.unpack_f32", "swiglu.f32", "grouped_matmul.int8_int32", "quant_matmul.trans_quant_param",
         "data_copy_dequant.deq8", "codecs.encode_float8_e4m3fn", "codecs.encode_float8_e4m3fn_f16",
         "codecs.decode_float8_e4m3fn", "codecs.to_bfloat16"]


@pytest.mark.parametrize("name", CHEAP)
def test_read_only_inputs_compile_nothing_new(name):
    call = op_configs.CONFIGS[name].build()
    want = call()
    before = signatures()
    got = with_read_only_inputs(call)()
    assert signatures() == before, f"{name}: read-only inputs compiled another kernel"
    for w, g in zip(want if isinstance(want, tuple) else (want,), got if isinstance(got, tuple) else (got,)):
        if isinstance(w, np.ndarray):
            assert np.array_equal(np.asarray(w).view(np.uint8), np.asarray(g).view(np.uint8))


def test_a_launch_without_validation_gets_the_types_a_validated_one_does():
    # quant_matmul's epilogue launch builds no access pattern with validate=False, so launch cannot check its
    # inputs there: both calls must still reach one compiled kernel
    from npu_emu.ops import npu_quant_matmul

    rng = np.random.default_rng(0)
    x1 = rng.integers(-128, 128, (8, 32), dtype=np.int8)
    x2 = rng.integers(-128, 128, (32, 16), dtype=np.int8)
    scale = (rng.random(16) * 0.01).astype(np.float32)
    y = npu_quant_matmul(x1, x2, scale, output_dtype="bfloat16")
    before = signatures()
    y2 = npu_quant_matmul(x1, x2, scale, output_dtype="bfloat16", validate=False)
    assert signatures() == before
    assert np.array_equal(np.asarray(y).view(np.uint16), np.asarray(y2).view(np.uint16))


def test_a_read_only_output_is_still_refused():
    from npu_emu.dtypes import encode

    out = read_only(np.empty(4, np.uint8))
    with pytest.raises(AclnnError, match="writeable"):
        encode(np.ones(4, np.float32), "float8_e4m3fn", out=out)
