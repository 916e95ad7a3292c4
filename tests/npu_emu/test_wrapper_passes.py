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
    assert len(skipped) == 2 and "parallelgufuncwrapper" in skipped
    # the kernel's own library and the parfor body keep their passes
    assert not getattr(libs[0], wrapper_passes.SKIPPED, False)
    assert any(lib.name.startswith("__numba_parfor_gufunc") and not getattr(lib, wrapper_passes.SKIPPED, False)
               for lib in libs)
    assert out.tobytes() == (x * s + np.float32(0.5)).astype(np.float32).tobytes()


def test_without_the_hook_nothing_is_skipped_and_the_bits_agree():
    hooked, x, s, _ = _build(True)
    plain, x2, s2, libs = _build(False)
    assert not any(getattr(lib, wrapper_passes.SKIPPED, False) for lib in libs)
    assert any(lib.name == "parallelgufuncwrapper" for lib in libs)     # the name the hook looks for still exists
    assert hooked.tobytes() == plain.tobytes()


def test_a_guvectorize_wrapper_keeps_its_passes():
    """A @guvectorize function's wrapper is the code that runs for it: not skipped."""
    from numba import guvectorize
    from numba.core import codegen

    seen = []
    optimize = codegen.CPUCodeLibrary._optimize_final_module

    def recording(self):
        seen.append(self)
        return optimize(self)

    codegen.CPUCodeLibrary._optimize_final_module = recording
    try:
        @guvectorize(["void(float32[:], float32[:])"], "(n)->(n)")
        def plus_half(x, out):
            for i in range(x.shape[0]):
                out[i] = x[i] + np.float32(0.5)

        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        assert plus_half(x).tobytes() == (x + np.float32(0.5)).tobytes()
    finally:
        codegen.CPUCodeLibrary._optimize_final_module = optimize
    wrappers = [lib for lib in seen if lib.name.startswith("<numba.np.ufunc.wrappers._GufuncWrapper")]
    assert wrappers and not any(getattr(lib, wrapper_passes.SKIPPED, False) for lib in wrappers)
