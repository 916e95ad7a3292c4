"""npu_emu/device/gc_pause.py: Python's cyclic collector is off while a function of the npu_emu package compiles
(its callees' compiles included) and on again afterwards; a user's functions compile with it on; a process that
turned it off keeps it off.

The probe functions are compiled as if defined in a module of the package (and in a look-alike user module), fresh
for each test; numba's compile events say when each compile starts, and the listener reads the collector's state
there."""

import gc
import importlib
import threading

import numpy as np
from numba import njit
from numba.core import event

from npu_emu.device import gc_pause

# what every kernel module imports first: it installs the hooks
importlib.import_module("npu_emu.device.jit_options")

_SOURCE = """
def g(v):
    return v * np.float32(2.0)

def f(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = g(x[i]) + np.float32(0.25)
    return out
"""


class _Seen(event.Listener):
    """(function name, collector on) at the start of each numba compile."""

    def __init__(self):
        self.seen = []

    def on_start(self, ev):
        self.seen.append((ev.data["dispatcher"].py_func.__name__, gc.isenabled()))

    def on_end(self, ev):
        pass


def _probe(modname):
    ns = {"__name__": modname, "np": np, "njit": njit}
    exec(compile(_SOURCE, "<gc probe>", "exec"), ns)
    ns["g"] = njit(ns["g"])
    return njit(ns["f"])


def _run(f):
    x = np.linspace(-3, 3, 29).astype(np.float32)
    listener = _Seen()
    with event.install_listener("numba:compile", listener):
        out = f(x)
    want = (x * np.float32(2.0) + np.float32(0.25)).astype(np.float32)
    assert out.view(np.uint32).tobytes() == want.view(np.uint32).tobytes()
    return listener.seen


def test_installed_by_jit_options():
    assert gc_pause.installed()


def test_off_while_an_own_function_and_its_callee_compile_then_on():
    assert gc.isenabled()
    seen = _run(_probe("npu_emu.kernels._gc_probe"))
    # the callee compiles while the caller is being typed, as do numba's implementations of np.empty_like and the like
    assert [name for name, _ in seen if name in ("f", "g")] == ["f", "g"]
    assert not any(on for _, on in seen)
    assert gc.isenabled() and not gc_pause.paused()


def test_a_users_function_compiles_with_the_collector_on():
    seen = _run(_probe("npu_emu_user.gc_probe"))
    assert [name for name, _ in seen if name in ("f", "g")] == ["f", "g"] and all(on for _, on in seen)
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_process_stays_off():
    gc.disable()
    try:
        seen = _run(_probe("npu_emu.kernels._gc_probe"))
        assert not any(on for _, on in seen)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_compiles_on_two_threads_leave_the_collector_on():
    fs = [_probe(f"npu_emu.kernels._gc_probe{i}") for i in range(2)]
    x = np.linspace(-3, 3, 29).astype(np.float32)
    start = threading.Barrier(2)
    outs = [None, None]

    def work(i):
        start.wait()
        outs[i] = fs[i](x)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want = (x * np.float32(2.0) + np.float32(0.25)).astype(np.float32)
    assert all(o.view(np.uint32).tobytes() == want.view(np.uint32).tobytes() for o in outs)
    assert gc.isenabled() and not gc_pause.paused()
