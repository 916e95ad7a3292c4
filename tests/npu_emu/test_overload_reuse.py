"""One compile of an @overload implementation per set of inherited options (npu_emu/device/overload_reuse.py).

Each test registers an overload of its own and counts the compiles of its implementation through numba's compile
events: called in a prange body it compiles once with the hook and twice without (the kernel's typing and the
body's have different flags), with the same results; callers with another error_model still get their own compile,
with their own division-by-zero behaviour (so a hook that keyed on too little fails here).
"""

import importlib

import numpy as np
import pytest
from numba import njit, prange
from numba.core import event
from numba.extending import overload

from npu_emu.device import overload_reuse

# what every kernel module imports first: it installs the hooks
importlib.import_module("npu_emu.device.jit_options")


class _Compiles(event.Listener):
    """Counts the compiles of functions whose qualified name starts with ``prefix``."""

    def __init__(self, prefix):
        self.prefix, self.count = prefix, 0

    def on_start(self, ev):
        fn = getattr(ev.data.get("dispatcher"), "py_func", None)
        if fn is not None and fn.__qualname__.startswith(self.prefix):
            self.count += 1

    def on_end(self, ev):
        pass


def _new_overload(tag):
    """A fresh function with an @overload implementation (qualified name ``tag``), scaling by 3."""
    def stub(x):
        raise NotImplementedError

    def typer(x):
        def impl(x):
            return x * 3
        impl.__qualname__ = tag
        return impl

    overload(stub)(typer)
    return stub


def _prange_user(stub, error_model):
    @njit(parallel=True, error_model=error_model)
    def k(x, y):
        # no views in the body: numba compiles it with noalias, the one flag that differs from the kernel's
        for i in prange(y.shape[0]):
            y[i] = stub(x[i])
    return k


@pytest.mark.parametrize("hooked, error_model, compiles", [(True, "numpy", 1), (False, "numpy", 2),
                                                             (True, "python", 2)])
def test_an_overload_in_a_prange_body_compiles_once(hooked, error_model, compiles):
    """npu_emu's kernels use error_model='numpy', as numba compiles every prange body: one compile with the hook,
    where the kernel's typing and the body's used to compile one each. A kernel with the 'python' model still
    compiles the implementation once per model."""
    x = np.arange(24, dtype=np.float32)
    tag = f"reuse_probe_{hooked}_{error_model}"
    stub = _new_overload(tag)
    counter = _Compiles(tag)
    if not hooked:
        overload_reuse.uninstall()
    try:
        with event.install_listener("numba:compile", counter):
            y = np.empty_like(x)
            _prange_user(stub, error_model)(x, y)
    finally:
        overload_reuse.install()
    assert y.tobytes() == (x * np.float32(3)).tobytes()
    assert counter.count == compiles


def _floordiv_overload(tag):
    def stub(a, b):
        raise NotImplementedError

    def typer(a, b):
        def impl(a, b):
            return a // b
        impl.__qualname__ = tag
        return impl

    overload(stub)(typer)
    return stub


def test_callers_with_another_error_model_get_their_own_compile():
    """error_model is inherited: 1 // 0 raises under 'python' and gives 0 under 'numpy', in the implementation."""
    assert overload_reuse.installed()
    tag = "reuse_probe_floordiv"
    stub = _floordiv_overload(tag)
    counter = _Compiles(tag)

    @njit(error_model="numpy")
    def numpy_model(a, b):
        return stub(a, b)

    @njit(error_model="python")
    def python_model(a, b):
        return stub(a, b)

    with event.install_listener("numba:compile", counter):
        assert numpy_model(7, 2) == 3 and numpy_model(1, 0) == 0
        assert python_model(7, 2) == 3
        with pytest.raises(ZeroDivisionError):
            python_model(1, 0)
    assert counter.count == 2


def test_the_key_is_the_inherited_options_only():
    from numba.core.compiler import Flags

    a, b = Flags(), Flags()
    b.auto_parallel = True
    b.noalias = True
    b.no_cpython_wrapper = True
    assert a != b and overload_reuse.inherited_key(a) == overload_reuse.inherited_key(b)
    b.error_model = "numpy"
    assert overload_reuse.inherited_key(a) != overload_reuse.inherited_key(b)
    b.error_model, b.fastmath = a.error_model, True
    assert overload_reuse.inherited_key(a) != overload_reuse.inherited_key(b)
    assert overload_reuse.inherited_key(None) is None
