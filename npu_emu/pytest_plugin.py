"""pytest plugin: npu-emu's emulated ``torch_npu`` for a test suite (docs/integrations/torch.md §4).

Load it with ``pytest -p npu_emu.pytest_plugin`` or ``pytest_plugins = ["npu_emu.pytest_plugin"]`` in a conftest.py.

- fixture ``torch_npu``: the emulated module, in ``sys.modules["torch_npu"]`` for the duration of the test (removed
  afterwards unless the whole session runs with it). Its ops compute the device's bits on CPU tensors, so a test
  can check values where a ``MagicMock`` stub could only check that a call happened.
- option ``--npu-emu-torch-npu``: install it for the whole session, before collection, for code under test that does
  ``import torch_npu`` at import time (the fixture then returns the same module).

Loading the plugin imports neither torch nor npu-emu's kernels; the fixture or the option does.
"""

import pytest

_SESSION = "_npu_emu_torch_npu_session"


def pytest_addoption(parser):
    parser.addoption("--npu-emu-torch-npu", action="store_true", default=False,
                     help="npu-emu: install the emulated torch_npu module for the whole session (before collection), "
                          "so that `import torch_npu` in the code under test gets npu-emu's ops on CPU tensors")


def pytest_configure(config):
    if config.getoption("--npu-emu-torch-npu"):
        from npu_emu import torch_npu_shim

        try:
            torch_npu_shim.install()
        except RuntimeError as e:
            raise pytest.UsageError(f"--npu-emu-torch-npu: {e}") from None
        setattr(config, _SESSION, True)


def pytest_unconfigure(config):
    if getattr(config, _SESSION, False):
        from npu_emu import torch_npu_shim

        torch_npu_shim.uninstall()


@pytest.fixture
def torch_npu(request):
    """The emulated ``torch_npu`` module, installed as ``sys.modules["torch_npu"]`` while the test runs."""
    pytest.importorskip("torch", reason="the emulated torch_npu needs torch (the CPU build: pip install torch)")
    from npu_emu import torch_npu_shim

    if getattr(request.config, _SESSION, False):
        yield torch_npu_shim.install()       # already there: the same module, left in place
        return
    import sys

    if torch_npu_shim.is_shim(sys.modules.get(torch_npu_shim.NAME)):
        yield sys.modules[torch_npu_shim.NAME]   # installed by someone else (npu-emu exec -m pytest): theirs to remove
        return
    module = torch_npu_shim.install()
    try:
        yield module
    finally:
        torch_npu_shim.uninstall()
