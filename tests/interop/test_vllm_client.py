"""vLLM-Ascend 0.23.0's own quantised linear layers, and the W8A8_DYNAMIC MoE method's expert MLP, on CPU tensors
through npu-emu, nothing stubbed (docs/integrations/torch.md §8). Marker ``vllm``: not in the default run; it needs
the venv that tests/interop/make_vllm_client_venv.sh builds, named by NPU_EMU_VLLM_PYTHON (its python). Each
output must equal, bit for bit, npu_emu.ops called directly on the same operands, and lie within bf16 output
rounding of the exact product of the dequantised operands. The MoE method's other stages are probed: they must stop
where §8.1 says."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.vllm

PYTHON = os.environ.get("NPU_EMU_VLLM_PYTHON")
SCRIPT = Path(__file__).with_name("vllm_client_script.py")
METHODS = ("W8A8_MXFP8", "W4A4_MXFP4", "W4A8_MXFP", "W8A8", "W8A8_DYNAMIC", "W8A8_DYNAMIC_MOE_MLP")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    if not PYTHON or not Path(PYTHON).exists():
        pytest.skip("NPU_EMU_VLLM_PYTHON does not name a python with vllm-ascend 0.23.0 (make_vllm_client_venv.sh)")
    out = tmp_path_factory.mktemp("vllm") / "out.npz"
    proc = subprocess.run([PYTHON, str(SCRIPT), str(out), *METHODS, "MOE_PROBE"], capture_output=True, text=True,
                          timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return dict(np.load(out))


def _bf16(u16):
    return (np.asarray(u16, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("method", METHODS)
def test_method_equals_npu_emu_and_exact_product(results, method):
    y, direct, exact = results[f"{method}.y"], results[f"{method}.direct"], results[f"{method}.exact"]
    assert y.shape == direct.shape == exact.shape
    assert np.array_equal(y.view(np.uint16), direct.view(np.uint16))
    # bf16 output: one rounding of the fp32 result, at most 2^-8 relative (plus the fp32 sum's own rounding)
    got = _bf16(y)
    assert np.all(np.abs(got - exact) <= np.abs(exact) * 2.0 ** -8 + 1e-30 + np.abs(exact).max() * 2.0 ** -20)


def test_moe_method_needs_what_the_docs_say(results):
    """The W8A8_DYNAMIC MoE method's stages on one A2 card stop where npu_emu.torch.coverage.MOE_W8A8_DYNAMIC_A2
    (and docs/integrations/torch.md §8.1) say, and the others run: when an op lands, this fails until both are
    updated."""
    from npu_emu.torch.coverage import MOE_W8A8_DYNAMIC_A2

    got = list(zip(results["MOE_PROBE.stage"], results["MOE_PROBE.status"], results["MOE_PROBE.where"]))
    want = [(stage, status, "" if status == "works" else where) for stage, _, where, status in MOE_W8A8_DYNAMIC_A2]
    assert [tuple(map(str, g)) for g in got] == want

