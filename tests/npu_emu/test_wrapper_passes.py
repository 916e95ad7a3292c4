"""numba's gufunc wrapper libraries without whole-module passes (npu_emu/device/wrapper_passes.py).

A fresh parallel function is compiled with and without the hook; the libraries it links are walked: with the hook
exactly the two wrapper libraries are marked skipped (the kernel and the parfor body are not), without it none is.
Results are compared with the interpreted function, and the two builds with each other bit for bit.
"""

import importlib

import numpy as np
from numba import njit, prange

from npu_emu.device import wrapper_passes

# what every kernel module imports first: it installs the hooks
importlib.import_module("npu_emu.device.jit_options")


def _kernel():
    # a fresh function per build: numba compiles each once per process
    @njit(parallel=True)
    def k(out, x, s):
        for i in prange(x.shape[0]):
            for j in range(x.shape[1]):
                out[i, j] = np.float32(x[i, j] * s[j] + np.float32(0.5))

    return k


def _libraries(lib, seen=None):
    seen = [] if seen is None else seen
    if any(lib is s for s in seen):
        return seen
    seen.append(lib)
    for sub in lib._linking_libraries:
        _libraries(sub, seen)
    return seen


def _build(hooked):
    if not hooked:
        wrapper_passes.uninstall()
    try:
        k = _kernel()
        x = np.random.default_rng(5).standard_normal((64, 48)).astype(np.float32)
        s = np.linspace(-3, 3, 48).astype(np.float32)
        out = np.empty_like(x)
        k(out, x, s)
        (cres,) = k.overloads.values()
        return out, x, s, _libraries(cres.library)
    finally:
        wrapper_passes.install()


def test_only_the_two_wrapper_libraries_skip_the_module_passes():
    assert wrapper_passes.installed()       # jit_options installs it
    out, x, s, libs = _build(True)
    skipped = [lib.name for lib in libs if getattr(lib, wrapper_passes.SKIPPED, False)]
    assert len(skipped) == 2 and all(wrapper_passes.is_wrapper(n) for n in skipped)
    assert any(n == "parallelgufuncwrapper" for n in skipped)
    # the kernel's own library and the parfor body keep their passes
    assert not getattr(libs[0], wrapper_passes.SKIPPED, False)
    assert any(lib.name.startswith("__numba_parfor_gufunc") and not getattr(lib, wrapper_passes.SKIPPED, False)
               for lib in libs)
    assert out.tobytes() == (x * s + np.float32(0.5)).astype(np.float32).tobytes()


def test_without_the_hook_nothing_is_skipped_and_the_bits_agree():
    hooked, x, s, _ = _build(True)
    plain, x2, s2, libs = _build(False)
    assert not any(getattr(lib, wrapper_passes.SKIPPED, False) for lib in libs)
    assert any(wrapper_passes.is_wrapper(lib.name) for lib in libs)     # the names the hook looks for still exist
    assert hooked.tobytes() == plain.tobytes()

