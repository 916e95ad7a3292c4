"""Shared fixtures of the torch-interop tests. torch is optional: every torch test takes the ``torch`` fixture,
which skips when torch is absent (CI installs the CPU build: pip install torch==2.13.0)."""

import numpy as np
import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "uses(*names): npu_emu.ops functions a torch_npu drop-in script calls")


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch", reason="torch is not installed (CI: pip install torch==2.13.0, the CPU build)")


def _bits(a):
    if not isinstance(a, np.ndarray):
        import torch

        a = a.detach().contiguous()
        a = a.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]).numpy()
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


@pytest.fixture(scope="session")
def bits():
    """The raw bits of a numpy array or a torch tensor as an unsigned numpy array (bit-exact comparisons)."""
    return _bits


@pytest.fixture(scope="session")
def need():
    """``need(module, name)``: the attribute, or skip the test (a front end not exported yet is not an interop
    failure; the test runs once the op family's owner exports it)."""

    def get(module, name):
        fn = getattr(module, name, None)
        if fn is None:
            pytest.skip(f"{module.__name__} has no {name} yet")
        return fn

    return get
