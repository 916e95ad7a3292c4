"""Suite-wide pytest settings."""

import gc
import importlib.util
import os
import pathlib
import sys

import pytest

# modules of shared test inputs and references that the test files of one folder import by name: with
# --import-mode=importlib a test module cannot import its siblings, so pytest_configure registers them before
# collection (after OMP_WAIT_POLICY: they import the kernels)
_SHARED = ("kernels/dynamic_mx_quant_with_dual_axis/dual_cases.py", "kernels/mx_quant/mx_refs.py")


def _register_shared():
    here = pathlib.Path(__file__).resolve().parent
    for rel in _SHARED:
        path = here / rel
        if path.stem in sys.modules or not path.exists():
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)


def pytest_configure(config):
    # Each xdist worker has its own numba OpenMP pool as wide as the machine. With libgomp's default wait policy a
    # pool's threads spin for a while after every parallel kernel, on CPU the other worker is compiling or running
    # on; passive threads sleep at once. The bits do not depend on it. Whole suite with a warm cache on the 2-core
    # box, 2026-12-05: 211.8 / 211.4 s by default, 201.4 s passive. Runs in the controller before the workers
    # start (they inherit it) and before any OpenMP runtime is loaded; an OMP_WAIT_POLICY you set wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # the controller of an xdist run collects nothing itself: only the processes that import test modules need them
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        _register_shared()


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject.toml's addopts): one worker per core this process may use, at most 4; each worker
    holds numba, numpy and the compiled kernels (about 1 GB), and a box with many cores gains little past four."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def xdist_unit(file):
    """The xdist work unit of the test file ``file`` (its path from the repository root, with slashes)."""
    parts = file.split("/")
    return "/".join(parts[:3]) if parts[:2] == ["tests", "kernels"] and len(parts) > 3 else file


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (pyproject.toml's addopts) with one change to its work units: the files of one op's folder
    under tests/kernels are one unit (:func:`xdist_unit`), every other file its own. An op's test files compile the
    same specialised kernel copies; in one worker the later files find them compiled in the process, while two
    workers that run two such files at the same time both compile them. Measured in a cold run of the suite on the
    2-core box, 2026-12-05: 67 s of compile paid twice across the two workers, 63 s of it by test_dual_golden.py
    and test_dual_vs_dynamic.py. Another ``--dist`` mode is left to xdist. (xdist's ``loadgroup`` marks would do
    this, but xdist 3.8 names a marked test's unit through a pytest attribute pytest 9 no longer reads.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class OpFolderScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return xdist_unit(super()._split_scope(nodeid))

    return OpFolderScheduling(config, log)


@pytest.fixture
def cache_every_output(monkeypatch):
    """npu_emu.frontend.output_cache with no size floor, empty before and after: a test's small outputs come from
    the memory of the outputs it freed (the ops must write every byte of a reused output)."""
    from npu_emu.frontend import output_cache

    monkeypatch.setattr(output_cache, "MIN_BYTES", 1)
    monkeypatch.delenv("NPU_EMU_OUTPUT_CACHE", raising=False)
    # an output of an earlier test caught in a reference cycle would otherwise return its block when a collection
    # runs inside this test (a cold first call compiles, and allocates enough to start one), ahead of this test's
    # own freed block
    gc.collect()
    output_cache.release()
    yield output_cache
    output_cache.release()
