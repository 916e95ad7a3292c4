"""One untyped-pipeline run per inlined function (npu_emu/device/inline_reuse.py).

Fresh functions are defined in a namespace of their own (so a test can rebind their globals) and inlined at several
call sites; the runs of numba's untyped pipeline over the callee are counted: one with the hook, one per call site
without, the same results. A global rebound between two compiles, of the callee or of a function inlined into it,
is seen by the later compile.
"""

import importlib

import numpy as np
import pytest
from numba import njit
from numba.core import inline_closurecall

from npu_emu.device import inline_reuse

# what every kernel module imports first: it installs the hooks
importlib.import_module("npu_emu.device.jit_options")

_SOURCE = """
@njit(inline="always")
def inner(x):
    return x * SCALE

@njit(inline="always")
def outer(x):
    return inner(x) + np.float32(1.0)

@njit
def three_sites(a):
    return outer(a[0]) + outer(a[1]) * np.float32(2.0) - outer(a[2])

@njit
def one_site(a):
    return outer(a[0])
"""


def _namespace(scale):
    ns = {"np": np, "njit": njit, "SCALE": np.float32(scale)}
    exec(compile(_SOURCE, "<inline reuse probe>", "exec"), ns)
    return ns


class _Runs:
    """Counts InlineWorker.run_untyped_passes calls per function name while installed."""

    def __enter__(self):
        self.counts = {}
        self.original = inline_closurecall.InlineWorker.run_untyped_passes
        counts, original = self.counts, self.original

        def counting(worker, func, enable_ssa=False):
            counts[func.__name__] = counts.get(func.__name__, 0) + 1
            return original(worker, func, enable_ssa)

        inline_closurecall.InlineWorker.run_untyped_passes = counting
        return self

    def __exit__(self, *exc):
        inline_closurecall.InlineWorker.run_untyped_passes = self.original


@pytest.mark.parametrize("hooked", [True, False])
def test_three_call_sites_run_the_untyped_passes_once(hooked):
    a = np.array([1.5, -2.25, 3.0], np.float32)
    ns = _namespace(3.0)
    if not hooked:
        inline_reuse.uninstall()
    try:
        with _Runs() as runs:
            got = ns["three_sites"](a)
    finally:
        inline_reuse.install()
    s = np.float32(3.0)
    want = (a[0] * s + np.float32(1)) + (a[1] * s + np.float32(1)) * np.float32(2) - (a[2] * s + np.float32(1))
    assert np.float32(got).tobytes() == np.float32(want).tobytes()
    # outer once per call site without the hook (inner once inside each of those runs), once in all with it
    assert runs.counts == ({"outer": 1, "inner": 1} if hooked else {"outer": 3, "inner": 3})


def test_a_rebound_global_is_seen_by_the_next_compile():
    assert inline_reuse.installed()
    ns = _namespace(3.0)
    a = np.array([2.0, 0.0, 0.0], np.float32)
    assert ns["one_site"](a) == np.float32(7.0)          # 2 * 3 + 1
    with _Runs() as runs:
        again = njit(ns["one_site"].py_func)             # a new compile, nothing changed: reused
        assert again(a) == np.float32(7.0)
    assert runs.counts == {}
    ns["SCALE"] = np.float32(5.0)                        # inner's global, read through outer's inlining
    with _Runs() as runs:
        fresh = njit(ns["one_site"].py_func)
        assert fresh(a) == np.float32(11.0)              # 2 * 5 + 1
    assert runs.counts == {"outer": 1, "inner": 1}
