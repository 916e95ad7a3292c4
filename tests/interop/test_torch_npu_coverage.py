"""The emulated torch_npu beyond its ops (docs/integrations/torch.md §3.2-§3.4, §4, §5.1): streams and events,
vLLM-Ascend's 81 names, npu_format_cast, filling a suite's stub, the plugin's early install, PrivateUse1-only ops."""

import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

# npu_emu.torch registers its ops with torch when imported (the README's install has no torch: skip, as the other
# torch tests do)
pytest.importorskip("torch", reason="torch is not installed (CI: pip install torch==2.13.0, the CPU build)")
from npu_emu.torch import coverage  # noqa: E402


@pytest.fixture
def shim(torch):
    from npu_emu import torch_npu_shim

    mod = torch_npu_shim.install()
    yield mod
    torch_npu_shim.uninstall()


def test_names_table_is_vllm_ascends_81():
    names = [n for n, _, _ in coverage.NAMES]
    assert len(names) == len(set(names)) == 81
    assert set(coverage.STATUS.values()) <= {"works", "namespace", "no-op", "not emulated"}


def test_every_name_present_and_not_emulated_ones_say_so(shim):
    from npu_emu.torch.runtime import NotEmulatedError

    for name, status, _ in coverage.NAMES:
        value = getattr(shim, name)                       # never AttributeError
        if status == "not emulated" and callable(value) and not isinstance(value, types.ModuleType):
            with pytest.raises(NotEmulatedError, match=f"torch_npu.{name} is not emulated yet.*torch.md"):
                value()


def test_submodules_import(shim):
    from torch_npu._C._distributed_c10d import ProcessGroupHCCL        # noqa: F401
    from torch_npu.op_plugin.atb._atb_ops import _register_atb_extensions
    import torch_npu._inductor  # noqa: F401

    with pytest.raises(NotImplementedError, match="not emulated yet"):
        _register_atb_extensions()


def test_streams_and_events(shim, torch):
    npu = torch.npu
    s = npu.Stream()
    assert isinstance(s, npu.Stream) and isinstance(npu.current_stream(), npu.Stream)
    with npu.stream(s):
        assert npu.current_stream() is s
    assert npu.current_stream() is npu.default_stream()
    npu.current_stream().wait_stream(s)
    e = npu.Event(enable_timing=True)
    e.record()
    e2 = s.record_event()
    e.wait(s)
    assert e.query() and e.elapsed_time(e2) >= 0.0
    t = torch.ones(3)
    assert t.record_stream(s) is None
    npu.synchronize()
    assert npu.current_device() == 0 and npu.device_count() == 0 and not npu.is_available()
    free, total = npu.mem_get_info()
    assert free > 0 and free == total


def test_record_stream_restored(torch):
    from npu_emu import torch_npu_shim

    before = torch.Tensor.record_stream
    torch_npu_shim.install()
    assert torch.Tensor.record_stream is not before
    torch_npu_shim.uninstall()
    assert torch.Tensor.record_stream is before


def test_format_cast_records_nz(shim, torch):
    w = torch.arange(64 * 32, dtype=torch.int32).remainder(255).sub(127).to(torch.int8).reshape(64, 32)
    assert shim.get_npu_format(w) == 2
    w2 = shim.npu_format_cast(w, 29)
    assert w2 is w and shim.get_npu_format(w) == 29 and shim.get_npu_format(w.t()) == 29
    p = torch.nn.Parameter(torch.zeros(1, dtype=torch.int8), requires_grad=False)
    p.data = w2                                        # what vLLM-Ascend does: shares the storage
    assert shim.get_npu_format(p) == 29
    from npu_emu.torch import formats

    nz = formats.nz_operand(p)
    assert nz is not None and nz.shape == (64, 32)
    # the WeightNz path gives the ND path's bits
    x = torch.randint(-127, 128, (4, 64), dtype=torch.int8)
    scale = torch.rand(32) * 1e-2 + 1e-3
    y_nz = shim.npu_quant_matmul(x, p, scale, output_dtype=torch.bfloat16)
    y_nd = shim.npu_quant_matmul(x, w.clone(), scale, output_dtype=torch.bfloat16)
    assert torch.equal(y_nz.view(torch.int16), y_nd.view(torch.int16))


def test_fill_a_stub(torch):
    from unittest.mock import MagicMock

    from npu_emu import torch_npu_shim

    stub = types.ModuleType("torch_npu")
    stub.npu = MagicMock()
    stub.npu_quant_matmul = MagicMock()
    names = torch_npu_shim.fill(stub)
    assert stub.npu_quant_matmul is torch.ops.npu.npu_quant_matmul
    assert stub.float8_e8m0fnu == 293 and "npu.Stream" in names
    assert isinstance(stub.npu.Stream(), stub.npu.Stream)


def test_npu_device_opt_in(tmp_path):
    # irreversible for the process: its own interpreter
    code = textwrap.dedent("""
        from npu_emu import torch_npu_shim
        torch_npu_shim.install(npu_device=True)
        import torch
        assert torch.device("npu").type == "npu"
        try:
            torch.empty(1, device="npu")
        except (RuntimeError, NotImplementedError) as e:
            print("refused:", type(e).__name__)
    """)
    # cwd outside the checkout: `python -c` puts it first on sys.path, where the source folder npu_emu/ (no kernels/
    # under it) would shadow the installed package
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "refused" in out.stdout


def test_cpu_kernels_for_privateuse1_ops(torch):
    from npu_emu.torch.custom_ops import add_cpu_kernels

    lib = torch.library.Library("npu_emu_t40", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "PrivateUse1")
    with pytest.raises(NotImplementedError):
        torch.ops.npu_emu_t40.twice(torch.ones(2))
    assert add_cpu_kernels("npu_emu_t40") == ["npu_emu_t40::twice"]
    assert torch.ops.npu_emu_t40.twice(torch.ones(2)).tolist() == [2.0, 2.0]
    assert add_cpu_kernels("npu_emu_t40") == []


CONFTEST_STUB = """
import sys, types
from unittest.mock import MagicMock
stub = types.ModuleType("torch_npu")
stub.npu = MagicMock()
stub.npu_quant_matmul = MagicMock()
sys.modules["torch_npu"] = stub
"""

TEST_VALUES = """
import numpy as np
import torch
import torch_npu

def test_values():
    assert torch_npu.npu_quant_matmul is torch.ops.npu.npu_quant_matmul
    x = torch.ones(2, 32, dtype=torch.int8)
    y = torch_npu.npu_quant_matmul(x, torch.ones(32, 16, dtype=torch.int8), torch.ones(16), output_dtype=torch.bfloat16)
    assert y.float().eq(32).all()
"""

TEST_EARLY = """
import sys

def test_installed_before_conftest():
    from npu_emu import torch_npu_shim
    assert torch_npu_shim.is_shim(sys.modules["torch_npu"])
"""

CONFTEST_EARLY = """
import sys
from npu_emu import torch_npu_shim
assert torch_npu_shim.is_shim(sys.modules.get("torch_npu")), "conftest ran before the plugin installed torch_npu"
"""


@pytest.mark.parametrize("mode,conftest,test", [
    ("--npu-emu-fill-stub", CONFTEST_STUB, TEST_VALUES),
    ("--npu-emu-torch-npu", CONFTEST_EARLY, TEST_EARLY),
])
def test_plugin_modes(tmp_path, torch, mode, conftest, test):
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_it.py").write_text(test)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "npu_emu.pytest_plugin", mode,
                          "--npu-emu-soc", "ascend910b2", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "1 passed" in out.stdout


def test_mx_refusal_names_the_switch():
    from npu_emu import ops
    from npu_emu.errors import AclnnError

    x = np.zeros((4, 64), np.float32)
    with pytest.raises(AclnnError, match="NPU_EMU_SOC=ascend950pr.*--soc ascend950pr.*--npu-emu-soc"):
        ops.npu_dynamic_mx_quant(x, dst_type=24, soc="ascend910b2")
