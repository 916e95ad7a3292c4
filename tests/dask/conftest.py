"""One real LocalCluster of 2 worker processes per test module that asks for it; registers helpers.py as the
module ``dask_test_helpers`` (with --import-mode=importlib, test modules cannot import their siblings by name)."""

import importlib.util
import pathlib
import sys

import pytest

_spec = importlib.util.spec_from_file_location("dask_test_helpers", pathlib.Path(__file__).with_name("helpers.py"))
_module = importlib.util.module_from_spec(_spec)
sys.modules["dask_test_helpers"] = _module
_spec.loader.exec_module(_module)


@pytest.fixture(scope="module")
def client():
    """One real dask.distributed LocalCluster of 2 worker processes for the module (workers start once: with a
    warm numba cache they load the kernels instead of compiling them)."""
    import distributed

    from npu_emu import dask as nd

    cluster = nd.local_cluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
