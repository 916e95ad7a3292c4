"""No whole-module LLVM passes for numba's two gufunc wrapper libraries of a parallel kernel: a compile-time saving.

numba compiles a function with a ``prange`` loop as four code libraries, each linking everything below it: the
parfor body (``__numba_parfor_gufunc_*``, which links the functions it calls), a ``_GufuncWrapper`` library around
it, a ``parallelgufuncwrapper`` library around that, and the kernel itself. Every library runs LLVM's whole-module
passes over its final module, linked code included. The two wrapper libraries add a few instructions of glue, yet
re-optimise the whole already-optimised body; the kernel's library then optimises everything once more, the glue
included, and the kernel's machine code (the code that runs, and what numba caches) comes from there.

:func:`install` makes ``_optimize_final_module`` a no-op for those two wrapper libraries of a parfor only, and marks
them ``_npu_emu_passes_skipped``: the inner one is marked when numba builds it for a parfor (``is_parfors``), the
outer one is the ``parallelgufuncwrapper`` library around a marked one. A ``@guvectorize`` function's wrapper,
which is the code that runs for it, keeps its passes. The skipped libraries' functions still get numba's
per-function passes, and they still become machine code as before. Measured (one configuration per fresh process, empty cache,
2-core box): AscendQuantV2 per channel bf16 9.06 -> 8.50 s, DynamicMxQuantWithDualAxis FP4 scale_alg 2 11.35 ->
10.70 s; the kernels' speed the same (AscendQuantV2 bf16 [4096, 7168] 98.5-98.7 ms against 97.9-98.9 ms,
dual-axis E4M3 15.5-16.0 ms against 15.6-15.8 ms, best of 9).

It applies to every ``parallel=True`` function the process compiles (a user's own too: the kernel's library still
optimises everything that runs); ``NPU_EMU_WRAPPER_PASSES=0`` leaves numba untouched.
"""

import os

from npu_emu.device import method_hooks

_MARK = "_npu_emu_wrapper_passes"
SKIPPED = "_npu_emu_passes_skipped"
PARFOR = "_npu_emu_parfor_wrapper"
ENABLED = os.environ.get("NPU_EMU_WRAPPER_PASSES", "1").strip() not in ("0", "")

# numba 0.68: numba/np/ufunc/parallel.py names the outer wrapper's library so; the inner one is a _GufuncWrapper's
# (numba/np/ufunc/wrappers.py), which serves @guvectorize functions too: only a parfor's is marked (is_parfors)
_PARALLEL_WRAPPER = "parallelgufuncwrapper"


def is_parfor_wrapper(lib):
    """The inner wrapper of a parfor, or the outer wrapper around one (never a @guvectorize function's)."""
    if getattr(lib, PARFOR, False):
        return True
    return lib.name == _PARALLEL_WRAPPER and any(getattr(sub, PARFOR, False) for sub in lib._linking_libraries)


def install():
    """Skip the parfor wrapper libraries' whole-module passes; idempotent. Returns True when in place."""
    if not ENABLED:
        return False
    from numba.core import codegen
    from numba.np.ufunc import wrappers

    def mark_parfor(build):
        def build_marking(self, library, name):
            if getattr(self, "is_parfors", False):
                setattr(library, PARFOR, True)
            return build(self, library, name)
        return build_marking

    def wrapper_aware(optimize):
        def optimize_unless_wrapper(self):
            if is_parfor_wrapper(self):
                setattr(self, SKIPPED, True)
                return None
            return optimize(self)
        return optimize_unless_wrapper

    method_hooks.wrap(wrappers._GufuncWrapper, _MARK, _build_wrapper=mark_parfor)
    return method_hooks.wrap(codegen.CPUCodeLibrary, _MARK, _optimize_final_module=wrapper_aware)


def uninstall():
    """Put numba's methods back (the test compares the two)."""
    from numba.core import codegen
    from numba.np.ufunc import wrappers

    method_hooks.unwrap(wrappers._GufuncWrapper, _MARK, "_build_wrapper")
    method_hooks.unwrap(codegen.CPUCodeLibrary, _MARK, "_optimize_final_module")


def installed():
    from numba.core import codegen

    return method_hooks.wrapped(codegen.CPUCodeLibrary, _MARK)
