"""Less LLVM work around a parallel kernel (npu_emu/device/wrapper_passes.py).

A fresh parallel function is compiled with and without the hook; the libraries it links are walked: with the hook
exactly the two wrapper libraries skip the whole-module passes and have no machine code (a user's kernel and the
parfor body keep both; a kernel of the npu_emu package skips its passes and keeps its machine code), without it none
is marked. Results are compared with numpy's, and the two builds with each other
bit for bit.
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


_OWN_SOURCE = """
def k(out, x, s):
    for i in prange(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = np.float32(x[i, j] * s[j] + np.float32(0.5))
"""


def _own_kernel(name):
    # the same kernel as if defined in a module of the npu_emu package (numba mangles the module's name into the
    # kernel's symbol, which is how the hook tells npu_emu's kernels from a user's)
    ns = {"__name__": name, "np": np, "prange": prange}
    exec(compile(_OWN_SOURCE, "<own kernel>", "exec"), ns)
    return njit(parallel=True)(ns["k"])


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
        _build.kernel = k
        return out, x, s, _libraries(cres.library)
    finally:
        wrapper_passes.install()


def _marked(libs, mark):
    return sorted(lib.name.split(" ")[0].split("_0x")[0] for lib in libs if getattr(lib, mark, False))


def test_only_the_two_wrappers_skip_the_module_passes_and_the_machine_code():
    assert wrapper_passes.installed()       # jit_options installs it
    out, x, s, libs = _build(True)
    wrappers = ["<numba.np.ufunc.wrappers._GufuncWrapper", "parallelgufuncwrapper"]
    assert _marked(libs, wrapper_passes.SKIPPED) == wrappers
    assert _marked(libs, wrapper_passes.NO_CODE) == wrappers
    # the kernel's own library (what runs) and the parfor body's keep their passes and their machine code
    assert not getattr(libs[0], wrapper_passes.SKIPPED, False) and not getattr(libs[0], wrapper_passes.NO_CODE, False)
    assert any(lib.name.startswith("__numba_parfor_gufunc_") for lib in libs)
    assert out.tobytes() == (x * s + np.float32(0.5)).astype(np.float32).tobytes()


def test_an_npu_emu_kernel_skips_its_own_module_passes_and_keeps_its_machine_code():
    x = np.random.default_rng(6).standard_normal((64, 48)).astype(np.float32)
    s = np.linspace(-3, 3, 48).astype(np.float32)
    want = (x * s + np.float32(0.5)).astype(np.float32).tobytes()
    results = {}
    for name in ("npu_emu.kernels._probe", "npu_emu_user.kernels"):      # npu_emu's, and a look-alike user module
        for hooked in (True, False):
            if not hooked:
                wrapper_passes.uninstall()
            try:
                k = _own_kernel(name)
                out = np.empty_like(x)
                k(out, x, s)
                (cres,) = k.overloads.values()
                kernel_lib = cres.library
            finally:
                wrapper_passes.install()
            own = hooked and name.startswith("npu_emu.")
            assert getattr(kernel_lib, wrapper_passes.SKIPPED, False) == own, (name, hooked)
            assert not getattr(kernel_lib, wrapper_passes.NO_CODE, False)
            assert wrapper_passes.is_own_parfor_kernel(kernel_lib) == own   # (unhooked: no wrapper marked parfor)
            results[name, hooked] = out.tobytes()
    assert set(results.values()) == {want}


def test_a_wrapper_without_machine_code_still_has_an_address():
    """numba never asks; if something does, the name resolves to the wrapper's copy in the kernel's machine code."""
    out, x, s, libs = _build(True)
    (outer,) = [lib for lib in libs if lib.name == "parallelgufuncwrapper"]
    name = next(fn.name for fn in outer._final_module.functions
                if not fn.is_declaration and fn.name.startswith("__gufunc__"))
    assert getattr(outer, wrapper_passes.NO_CODE)
    assert outer.get_pointer_to_function(name) != 0
    again = np.empty_like(out)
    _build.kernel(again, x, s)
    assert again.tobytes() == out.tobytes() == (x * s + np.float32(0.5)).astype(np.float32).tobytes()


def test_without_the_hook_nothing_is_skipped_and_the_bits_agree():
    hooked, x, s, _ = _build(True)
    plain, x2, s2, libs = _build(False)
    assert not _marked(libs, wrapper_passes.SKIPPED) and not _marked(libs, wrapper_passes.NO_CODE)
    # the names the hook looks for still exist
    assert any(lib.name == "parallelgufuncwrapper" for lib in libs)
    assert any(lib.name.startswith("__numba_parfor_gufunc_") for lib in libs)
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
    assert wrappers and not _marked(wrappers, wrapper_passes.SKIPPED) and not _marked(wrappers, wrapper_passes.NO_CODE)


def _reducing():
    # a reduction returns through both wrappers; two prange loops make two parfors, each with its own libraries
    @njit(parallel=True)
    def k(x, y):
        acc = np.float32(0)
        for i in prange(x.shape[0]):
            acc += x[i] * x[i]
        for i in prange(x.shape[0]):
            y[i] = x[i] - acc
        return acc

    return k


def test_reductions_and_two_parfors_through_code_less_wrappers():
    """Same results with and without the hook; with it, each parfor's two wrappers have no machine code."""
    x = np.arange(-50, 50, dtype=np.float32)      # integer squares: every partial sum exact, in any order
    results = []
    for hooked in (True, False):
        if not hooked:
            wrapper_passes.uninstall()
        try:
            k = _reducing()
            y = np.empty_like(x)
            acc = k(x, y)
            results.append((np.float32(acc).tobytes(), y.tobytes()))
            libs = _libraries(next(iter(k.overloads.values())).library)
            assert len(_marked(libs, wrapper_passes.NO_CODE)) == (4 if hooked else 0)
            assert len(_marked(libs, wrapper_passes.SKIPPED)) == (4 if hooked else 0)
        finally:
            wrapper_passes.install()
    assert results[0] == results[1]
    acc = np.frombuffer(results[0][0], np.float32)[0]
    assert acc == sum(i * i for i in range(-50, 50))
    assert results[0][1] == (x - acc).astype(np.float32).tobytes()


def test_a_set_built_inside_the_prange():
    """numba's own test_no_hoisting_with_member_function_call: the parfor body's reference counting relies on the
    body library's whole-module passes, and crashed when they were skipped as well (they are not)."""
    @njit(parallel=True)
    def k(x):
        acc = 0
        for i in prange(x.shape[0]):
            r = {1, 2, 3}
            r.add(i)
            t = 0
            for v in r:
                t += v
            acc += t
        return acc

    x = np.zeros(128)
    assert k(x) == sum(sum({1, 2, 3} | {i}) for i in range(128))
