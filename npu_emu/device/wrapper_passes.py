"""No whole-module LLVM passes for numba's two gufunc wrapper libraries of a parallel kernel: a compile-time saving.

numba compiles a function with a ``prange`` loop as four code libraries, each linking everything below it: the
parfor body (``__numba_parfor_gufunc_*``, which links the functions it calls), a ``_GufuncWrapper`` library around
it, a ``parallelgufuncwrapper`` library around that, and the kernel itself. Every library runs LLVM's whole-module
passes over its final module, linked code included. The two wrapper libraries add a few instructions of glue, yet
re-optimise the whole already-optimised body; the kernel's library then optimises everything once more, the glue
included, and the kernel's machine code (the code that runs, and what numba caches) comes from there.

:func:`install` makes ``_optimize_final_module`` a no-op for those two wrapper libraries only (recognised by the
names numba gives them) and marks them ``_npu_emu_passes_skipped``. Their functions still get numba's per-function
passes, and they still become machine code as before. Measured (one configuration per fresh process, empty cache,
2-core box): AscendQuantV2 per channel bf16 9.06 -> 8.50 s, DynamicMxQuantWithDualAxis FP4 scale_alg 2 11.35 ->
10.70 s; the kernels' speed the same (AscendQuantV2 bf16 [4096, 7168] 98.5-98.7 ms against 97.9-98.9 ms,
dual-axis E4M3 15.5-16.0 ms against 15.6-15.8 ms, best of 9).

It applies to every parallel function the process compiles (a user's own too, with the same machine code where
it runs); ``NPU_EMU_WRAPPER_PASSES=0`` leaves numba untouched.
"""

import os

from npu_emu.device import method_hooks

_MARK = "_npu_emu_wrapper_passes"
SKIPPED = "_npu_emu_passes_skipped"
ENABLED = os.environ.get("NPU_EMU_WRAPPER_PASSES", "1").strip() not in ("0", "")

# the names numba 0.63-0.68 gives them: numba/np/ufunc/parallel.py (build_gufunc_wrapper) and
# numba/np/ufunc/wrappers.py (_GufuncWrapper._compile_wrapper: str(self) for a parfor's wrapper)
_PARALLEL_WRAPPER = "parallelgufuncwrapper"
_GUFUNC_WRAPPER = "<numba.np.ufunc.wrappers._GufuncWrapper "


def is_wrapper(name):
    return name == _PARALLEL_WRAPPER or name.startswith(_GUFUNC_WRAPPER)


def install():
    """Skip the wrapper libraries' whole-module passes; idempotent. Returns True when in place."""
    if not ENABLED:
        return False
    from numba.core import codegen

    def wrapper_aware(optimize):
        def optimize_unless_wrapper(self):
            if is_wrapper(self.name):
                setattr(self, SKIPPED, True)
                return None
            return optimize(self)
        return optimize_unless_wrapper

    return method_hooks.wrap(codegen.CPUCodeLibrary, _MARK, _optimize_final_module=wrapper_aware)


def uninstall():
    """Put numba's method back (the test compares the two)."""
    from numba.core import codegen

    method_hooks.unwrap(codegen.CPUCodeLibrary, _MARK, "_optimize_final_module")


def installed():
    from numba.core import codegen

    return method_hooks.wrapped(codegen.CPUCodeLibrary, _MARK)
