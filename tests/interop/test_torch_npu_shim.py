"""Unmodified torch_npu code on the CPU: the emulated ``torch_npu`` module (npu_emu.torch_npu_shim), ``npu-emu exec``,
``python -m npu_emu.torch_npu_shim`` and the pytest plugin (docs/integrations/torch.md §2 - §4).

The one subprocess run is tests/interop/torch_npu_script.py, a script written as for an Ascend device, through the
``npu-emu`` console script; its saved results are compared bit for bit with npu_emu.ops called on the same inputs.
Everything else runs in this process on tiny inputs.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import npu_emu.ops
from npu_emu import cli, torch_npu_shim

pytest_plugins = ("pytester",)

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "torch_npu_script.py"


@pytest.fixture
def shim(torch):
    """The emulated torch_npu installed for one test (this file tests install() itself, so not via the plugin)."""
    module = torch_npu_shim.install()
    yield module
    torch_npu_shim.uninstall()


def _npu_emu_command():
    exe = Path(sys.executable).with_name("npu-emu")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "npu_emu.cli"]


def _int_view(torch, t):
    t = t.contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _same_bits(torch, got, want):
    return got.dtype == want.dtype and got.shape == want.shape and torch.equal(_int_view(torch, got),
                                                                               _int_view(torch, want))


# ---------------------------------------------------------------------------------------------------------------
# the torch_npu-style script through `npu-emu exec`
# ---------------------------------------------------------------------------------------------------------------

def test_torch_npu_script_through_npu_emu_exec_is_bit_exact(torch, tmp_path):
    out = tmp_path / "results.pt"
    proc = subprocess.run([*_npu_emu_command(), "exec", str(SCRIPT), str(out), "--world-size", "4"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"saved 13 results to {out}"
    saved = torch.load(out)
    assert saved["device"] == "cpu"              # torch_npu.npu.is_available() is False: the script's CPU branch
    i, o = saved["inputs"], saved["outputs"]
    ops = npu_emu.ops

    packed = ops.npu_sign_bits_pack(i["buffer_m"], 4).type(torch.int8)
    want = {
        "packed": packed,
        "signs": ops.npu_sign_bits_unpack(packed.type(torch.uint8).flatten(), 4, torch.float32),
    }
    want["x_fp8"], want["x_fp8_scale"] = ops.npu_dynamic_mx_quant(i["x"], dst_type="float8_e4m3fn")
    want["x_e5m2"], want["x_e5m2_scale"] = ops.npu_dynamic_mx_quant(i["x"], axis=-1, dst_type="float8_e5m2")
    want["x_fp4"], want["x_fp4_scale"] = ops.npu_dynamic_mx_quant(i["x"], dst_type="float4_e2m1")
    want["tokens_fp8"], want["tokens_scale"] = ops.npu_grouped_dynamic_mx_quant(
        i["tokens"], i["group_index"], round_mode="rint", dst_type="float8_e4m3fn", blocksize=32)
    want["y_dynamic"] = ops.npu_quant_matmul(i["xq"], i["wq"].t(), i["w_scale"], pertoken_scale=i["pertoken"],
                                             output_dtype=torch.bfloat16)
    want["deq_scale"] = ops.npu_trans_quant_param(i["w_scale"])
    want["y_static"] = ops.npu_quant_matmul(i["xq"], i["wq"].t(), want["deq_scale"], bias=i["bias"],
                                            output_dtype=torch.float16)
    assert sorted(o) == sorted(want)
    differ = [name for name in want if not _same_bits(torch, o[name], want[name])]
    assert not differ, f"results that differ from npu_emu.ops: {differ}"
    # torch_npu's result dtypes: FP8 as torch's FP8, packed FP4 and E8M0 scales as uint8
    assert o["x_fp8"].dtype == torch.float8_e4m3fn and o["x_e5m2"].dtype == torch.float8_e5m2
    assert o["x_fp4"].dtype == torch.uint8 and tuple(o["x_fp4"].shape) == (16, 64)
    assert o["x_fp8_scale"].dtype == torch.uint8 and o["tokens_fp8"].dtype == torch.float8_e4m3fn
    # unpack(pack(x)) is the sign, x >= 0 -> +1 (docs/ops/sign_bits.md §3.1)
    assert torch.equal(o["signs"].flatten(), torch.where(i["buffer_m"] >= 0, 1.0, -1.0))


# ---------------------------------------------------------------------------------------------------------------
# the module
# ---------------------------------------------------------------------------------------------------------------

def test_the_module_is_torch_ops_npu_with_torch_npus_constants(shim, torch):
    import torch_npu

    import npu_emu.torch

    assert torch_npu is shim and sys.modules["torch_npu"] is shim
    for name in npu_emu.torch.TORCH_NPU_OPS:
        assert getattr(torch_npu, name) is getattr(torch.ops.npu, name)
    # torch_npu/csrc/custom_dtype/Init.h: aclDataType + 256, exported as ints (docs/integrations/torch.md §3.1)
    assert (torch_npu.hifloat8, torch_npu.float8_e5m2, torch_npu.float8_e4m3fn, torch_npu.float8_e8m0fnu,
            torch_npu.float4_e2m1fn_x2, torch_npu.float4_e1m2fn_x2) == (290, 291, 292, 293, 296, 297)
    assert (torch_npu.float32, torch_npu.bfloat16, torch_npu.int4) == (256, 283, 285)
    assert all(type(v) is int for v in torch_npu_shim.DTYPES.values())
    for name in ("hifloat8", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu", "float4_e2m1fn_x2", "float4_e1m2fn_x2"):
        assert getattr(npu_emu.ops, name) == getattr(torch_npu, name)   # the module swap's constants agree
    # the constants work where torch_npu users pass them
    y, s = torch_npu.npu_dynamic_mx_quant(torch.ones(2, 32, dtype=torch.bfloat16), dst_type=torch_npu.float8_e5m2)
    assert y.dtype == torch.float8_e5m2 and s.dtype == torch.uint8


def test_imports_and_attributes_a_script_probes(shim, torch):
    import importlib.util

    import torch_npu.npu
    from torch_npu import npu_quant_matmul

    assert npu_quant_matmul is torch.ops.npu.npu_quant_matmul
    assert importlib.util.find_spec("torch_npu") is shim.__spec__
    with pytest.raises(ModuleNotFoundError, match="torch_npu.contrib"):
        import torch_npu.contrib
    # names vLLM-Ascend uses are all present (test_torch_npu_coverage.py); any other is an AttributeError
    with pytest.raises(AttributeError, match="npu_no_such_op.*npu_quant_matmul"):
        torch_npu.npu_no_such_op  # noqa: B018
    assert not hasattr(torch_npu, "npu_no_such_op")


def test_devices_stay_on_the_cpu(shim, torch):
    x = torch.arange(4.0)
    assert x.npu() is x and torch.nn.Linear(2, 2).npu().weight.device.type == "cpu"
    assert torch.npu is shim.npu and not torch.npu.is_available() and torch.npu.device_count() == 0
    assert torch.npu.synchronize() is None
    # no fake device (docs/integrations/torch.md §3.2): an accelerator index still fails as on any CPU-only torch
    with pytest.raises(RuntimeError):
        torch.zeros(1, device=torch.device(0))


def test_uninstall_removes_everything_install_added(torch):
    had = {(owner, "npu"): hasattr(owner, "npu") for owner in (torch, torch.Tensor, torch.nn.Module)}
    torch_npu_shim.install()
    assert torch_npu_shim.install() is sys.modules["torch_npu"]          # idempotent
    torch_npu_shim.uninstall()
    assert "torch_npu" not in sys.modules and "torch_npu.npu" not in sys.modules
    assert {key: hasattr(*key) for key in had} == had
    with pytest.raises(ModuleNotFoundError):
        import torch_npu  # noqa: F401
    torch_npu_shim.uninstall()                                            # a no-op when not installed


def test_install_does_not_replace_another_torch_npu(torch, monkeypatch):
    import types

    stub = types.ModuleType("torch_npu")
    monkeypatch.setitem(sys.modules, "torch_npu", stub)
    with pytest.raises(RuntimeError, match="already imported"):
        torch_npu_shim.install()
    torch_npu_shim.uninstall()
    assert sys.modules["torch_npu"] is stub
    assert cli.main(["exec", str(SCRIPT), "unused.pt"]) == 2


# ---------------------------------------------------------------------------------------------------------------
# npu-emu exec and python -m npu_emu.torch_npu_shim: the script's arguments, errors and exit status
# ---------------------------------------------------------------------------------------------------------------

def _script(tmp_path, body, name="user_script.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def test_exec_runs_the_script_as_main_with_its_args(torch, tmp_path, capsys):
    _script(tmp_path, "VALUE = 7\n", name="sibling.py")
    path = _script(tmp_path, """
        import sys
        import torch
        import torch_npu
        import sibling                      # the script's folder is on sys.path, as with python script.py

        x = torch.tensor([5, 4, 3, 2, 0, -1, -2, 4, 3, 2, 1, 0, -1, -2], dtype=torch.float32)
        print(__name__, sys.argv[1:], sibling.VALUE, torch_npu.npu_sign_bits_pack(x, 2).flatten().tolist())
    """)
    argv, path0 = sys.argv[:], sys.path[:]
    assert cli.main(["exec", str(path), "--flag", "-x", "value"]) == 0
    # torch_npu's own documentation example of npu_sign_bits_pack (docs/ops/sign_bits.md §4)
    assert capsys.readouterr().out == "__main__ ['--flag', '-x', 'value'] 7 [159, 15]\n"
    assert (sys.argv, sys.path) == (argv, path0) and "torch_npu" not in sys.modules


@pytest.mark.parametrize("body, status, stderr", [
    ("import sys\nsys.exit(3)\n", 3, ""),
    ("import sys\nsys.exit('stopped: no data')\n", 1, "stopped: no data\n"),
    ("import sys\nsys.exit()\n", 0, ""),
])
def test_exec_returns_the_scripts_exit_status(tmp_path, capsys, body, status, stderr, torch):
    assert cli.main(["exec", str(_script(tmp_path, body))]) == status
    assert capsys.readouterr().err == stderr


def test_exec_reports_an_uncaught_exception_like_python(torch, tmp_path, capsys):
    path = _script(tmp_path, """
        import torch
        import torch_npu

        def step():
            return torch_npu.npu_sign_bits_pack(torch.ones(14), 3)     # 14 values do not split into 3 rows
        step()
    """)
    assert cli.main(["exec", str(path)]) == 1
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith(f'  File "{path}", line 7, in <module>')   # from the script's frame on
    assert "runpy" not in err and "torch_npu_shim" not in err
    assert "AclnnError" in lines[-1] and "161002" in lines[-1]


def test_exec_module_and_python_m_entry(torch, tmp_path, capsys, monkeypatch):
    _script(tmp_path, "import sys, torch_npu\nprint(__name__, sys.argv[1:], torch_npu.float8_e8m0fnu)\n",
            name="user_mod.py")
    monkeypatch.chdir(tmp_path)                         # python -m: the working directory is on sys.path
    assert cli.main(["exec", "-m", "user_mod", "-q", "a"]) == 0
    assert capsys.readouterr().out == "__main__ ['-q', 'a'] 293\n"
    assert torch_npu_shim.main(["-m", "user_mod", "b"]) == 0
    assert capsys.readouterr().out == "__main__ ['b'] 293\n"
    assert torch_npu_shim.main([str(tmp_path / "user_mod.py"), "c"]) == 0
    assert capsys.readouterr().out == "__main__ ['c'] 293\n"
    assert "torch_npu" not in sys.modules


def test_exec_usage_errors(tmp_path, capsys):
    assert cli.main(["exec", str(tmp_path / "missing.py")]) == 2
    assert "missing.py does not exist" in capsys.readouterr().err
    assert cli.main(["exec"]) == 2
    assert "needs a script" in capsys.readouterr().err
    assert torch_npu_shim.main([str(tmp_path / "missing.py")]) == 2
    assert torch_npu_shim.main([]) == 2


# ---------------------------------------------------------------------------------------------------------------
# the pytest plugin, in a pytest run of its own
# ---------------------------------------------------------------------------------------------------------------

def test_pytest_plugin_fixture_and_session_option(torch, pytester):
    pytester.makepyfile(test_user="""
        import sys

        import torch

        import npu_emu.ops


        def test_values_not_mock_calls(torch_npu):
            x = torch.randn(256, generator=torch.Generator().manual_seed(1))
            got = torch_npu.npu_sign_bits_pack(x, 2)
            assert sys.modules["torch_npu"] is torch_npu
            assert torch.equal(got, npu_emu.ops.npu_sign_bits_pack(x, 2))


        def test_removed_after_the_test_that_asked_for_it():
            assert "torch_npu" not in sys.modules
    """)
    result = pytester.runpytest_inprocess("-p", "npu_emu.pytest_plugin", "-q")
    result.assert_outcomes(passed=2)
    assert "torch_npu" not in sys.modules

    pytester.makepyfile(test_user="""
        import torch
        import torch_npu                         # at import time, as the code under test does


        def test_module_level_import(torch_npu):
            assert torch_npu is __import__("sys").modules["torch_npu"]
            assert torch_npu.npu_sign_bits_unpack(torch.tensor([159, 15], dtype=torch.uint8), 2,
                                                  torch.float32).tolist()[0] == [1, 1, 1, 1, 1, -1, -1, 1]
    """)
    result = pytester.runpytest_inprocess("-p", "npu_emu.pytest_plugin", "--npu-emu-torch-npu", "-q")
    result.assert_outcomes(passed=1)
    assert "torch_npu" not in sys.modules
