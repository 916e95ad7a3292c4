"""pytest plugin: npu-emu's emulated ``torch_npu`` for a test suite (docs/integrations/torch.md §4).

Load it with ``pytest -p npu_emu.pytest_plugin`` (``-p`` loads it before the suite's conftest.py files), or
``pytest_plugins = ["npu_emu.pytest_plugin"]`` in a conftest.py (the options then act from that conftest on).

- fixture ``torch_npu``: the emulated module, in ``sys.modules["torch_npu"]`` for the duration of the test (removed
  afterwards unless the whole session runs with it). Its ops compute the device's bits on CPU tensors, so a test
  can check values where a ``MagicMock`` stub could only check that a call happened.
- option ``--npu-emu-torch-npu``: install it for the whole session in ``pytest_load_initial_conftests``, that is
  before any conftest.py is imported, for code under test that does ``import torch_npu`` at import time (the
  fixture then returns the same module). A conftest that replaces ``sys.modules["torch_npu"]`` with its own stub
  afterwards wins; use the next option for such suites.
- option ``--npu-emu-fill-stub``: leave the suite's own ``torch_npu`` stub in place and, once the conftests have
  run, copy npu-emu's ops, dtype constants, ``npu_format_cast`` and the ``torch_npu.npu`` stream / device names onto
  it (``npu_emu.torch_npu_shim.fill``): tests that mock an op per test keep their mocks, the others get values.
- option ``--npu-emu-soc SOC``: the SoC every op emulates (``npu_emu.torch.set_soc``; e.g. ``ascend950pr`` for the
  MX quantisers and MX matmuls together).

Loading the plugin imports neither torch nor npu-emu's kernels; the fixture or the options do.
"""

import sys

import pytest

_SESSION = "_npu_emu_torch_npu_session"


def pytest_addoption(parser):
    group = parser.getgroup("npu-emu")
    group.addoption("--npu-emu-torch-npu", action="store_true", default=False,
                    help="npu-emu: install the emulated torch_npu module for the whole session, before the "
                         "conftest.py files load, so that `import torch_npu` in the code under test gets npu-emu's "
                         "ops on CPU tensors")
    group.addoption("--npu-emu-fill-stub", action="store_true", default=False,
                    help="npu-emu: after the conftest.py files load, copy npu-emu's ops, dtype constants, "
                         "npu_format_cast and torch_npu.npu streams onto the suite's own torch_npu stub")
    group.addoption("--npu-emu-soc", default=None, metavar="SOC",
                    help="npu-emu: the SoC every emulated op runs as (e.g. ascend950pr); default: each op's own")


def _set_soc(config):
    soc = config.getoption("--npu-emu-soc")
    if soc:
        import npu_emu.torch as emu_torch
        from npu_emu.errors import AclnnError

        try:
            emu_torch.set_soc(soc)
        except AclnnError as e:
            raise pytest.UsageError(f"--npu-emu-soc: {e}") from None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Install before the suite's conftest.py files are imported (this hook runs for plugins named with -p)."""
    # the options are parsed into known_args_namespace at this point; config.option is filled later
    ns = early_config.known_args_namespace
    install, fill = getattr(ns, "npu_emu_torch_npu", False), getattr(ns, "npu_emu_fill_stub", False)
    if install and fill:
        raise pytest.UsageError("--npu-emu-torch-npu and --npu-emu-fill-stub exclude each other: the first installs "
                                "npu-emu's module, the second fills the suite's own stub")
    if install:
        _install(early_config)


def _install(config):
    if getattr(config, _SESSION, False):
        return
    from npu_emu import torch_npu_shim

    try:
        torch_npu_shim.install()
    except RuntimeError as e:
        raise pytest.UsageError(f"--npu-emu-torch-npu: {e}") from None
    setattr(config, _SESSION, True)


def pytest_configure(config):
    # a plugin loaded from a conftest's pytest_plugins has missed pytest_load_initial_conftests: install now
    if config.getoption("--npu-emu-torch-npu"):
        _install(config)
    if config.getoption("--npu-emu-torch-npu") or config.getoption("--npu-emu-fill-stub"):
        _set_soc(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    """--npu-emu-fill-stub: the conftests have run (and installed their stub): fill it."""
    config = session.config
    if not config.getoption("--npu-emu-fill-stub"):
        return
    from npu_emu import torch_npu_shim

    stub = sys.modules.get(torch_npu_shim.NAME)
    if stub is None:
        raise pytest.UsageError("--npu-emu-fill-stub: no torch_npu module was installed by the conftest.py files; "
                                "use --npu-emu-torch-npu to install npu-emu's own")
    if not torch_npu_shim.is_shim(stub):
        torch_npu_shim.fill(stub)


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
    if torch_npu_shim.is_shim(sys.modules.get(torch_npu_shim.NAME)):
        yield sys.modules[torch_npu_shim.NAME]   # installed by someone else (npu-emu exec -m pytest): theirs to remove
        return
    module = torch_npu_shim.install()
    try:
        yield module
    finally:
        torch_npu_shim.uninstall()
