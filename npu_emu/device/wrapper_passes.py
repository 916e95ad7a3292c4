"""Less LLVM work for the code libraries numba builds around a parallel kernel: a compile-time saving.

numba compiles a function with a ``prange`` loop as four code libraries, each linking everything below it: the
parfor body (``__numba_parfor_gufunc_*``, which links the functions it calls), a ``_GufuncWrapper`` library around
it, a ``parallelgufuncwrapper`` library around that, and the kernel itself. Every library runs LLVM's whole-module
passes over its final module, linked code included, and is turned into machine code. Yet only the kernel's library
runs: the kernel calls the outer wrapper by name, so the wrappers and the body it reaches are the copies linked into
the kernel's module, which the kernel's whole-module passes optimise once more (glue included; not for npu_emu's
own kernels, below) and whose machine code is what runs and what numba caches.

:func:`install` therefore, for a parfor's two wrapper libraries only:

* makes ``_optimize_final_module`` a no-op and marks them ``_npu_emu_passes_skipped`` (their functions still get
  numba's per-function passes);
* gives them no machine code: finalising them no longer adds their module to numba's JIT engine (marked
  ``_npu_emu_no_machine_code``). numba links them by name and never asks for their addresses; a name asked of the
  engine resolves to the copy in the kernel's machine code.

and, for npu_emu's own kernels only (the library of a kernel defined in the npu_emu package that links a parfor's
outer wrapper), skips the kernel library's whole-module passes too (marked ``_npu_emu_passes_skipped``), keeping its
machine code. Everything in that module that does the work arrives already optimised: the parfor body and the
functions it calls were optimised in the body's library, linked in as optimised IR. What the kernel's passes would
still optimise is glue: the kernel function's own code outside the ``prange`` (reading tiling fields, at most a few
loops over groups) and the two wrappers, which hand the loop to the thread pool. A user's ``parallel=True`` function
may do real work outside its loops, so it keeps its passes.

The parfor body's library keeps its whole-module passes: skipping them, tried, crashed numba's own test of a set built
inside a ``prange`` loop (``test_no_hoisting_with_member_function_call``), so numba's code relies on them there.
numba takes the address of its Python wrapper and points its environment through the engine, so a user's parfor body
keeps its machine code; an npu_emu kernel's body gets none (npu_emu/device/lean_compile.py points the environment of
the copy the kernel runs).

The inner wrapper is marked when numba builds it for a parfor (``is_parfors``), the outer one is the
``parallelgufuncwrapper`` library around a marked one. A ``@guvectorize`` function's wrapper, which is the code that
runs for it, keeps its passes and its machine code. Measured (one configuration per fresh process, empty cache,
2-core box): AscendQuantV2 per channel bf16 9.06 -> 8.50 s and DynamicMxQuantWithDualAxis FP4 scale_alg 2
11.35 -> 10.70 s with the wrappers' passes skipped; their machine code then took that configuration from 11.24 to
10.39 s. The kernels' speed is the same (medians of 15-41 calls, fresh caches, interleaved; docs/getting_started.md).
numba's own parfor and prange tests pass with the hook in place.

The wrapper part applies to every ``parallel=True`` function the process compiles (a user's own too: the body's and
the kernel's libraries still optimise everything that works); ``NPU_EMU_WRAPPER_PASSES=0`` leaves numba untouched.
"""

import os

from npu_emu.device import method_hooks

_MARK = "_npu_emu_wrapper_passes"
SKIPPED = "_npu_emu_passes_skipped"
PARFOR = "_npu_emu_parfor_wrapper"
NO_CODE = "_npu_emu_no_machine_code"
ENABLED = os.environ.get("NPU_EMU_WRAPPER_PASSES", "1").strip() not in ("0", "")

# numba 0.68: numba/np/ufunc/parallel.py names the outer wrapper's library so; the inner one is a _GufuncWrapper's
# (numba/np/ufunc/wrappers.py), which serves @guvectorize functions too: only a parfor's is marked (is_parfors)
_PARALLEL_WRAPPER = "parallelgufuncwrapper"


# numba's mangled names of functions defined in the npu_emu package (specialised copies included: their module names
# start with the package's) begin so (numba.core.itanium_mangler: _ZN, then each dotted part as <length><name>)
_OWN_PREFIX = "_ZN7npu_emu"


def is_own_parfor_kernel(lib):
    """The library of a parallel kernel of the npu_emu package: it links a parfor's outer wrapper, and a function it
    defines itself (external linkage: linked-in callees are linkonce_odr) is one of npu_emu's."""
    if not any(sub.name == _PARALLEL_WRAPPER and is_parfor_wrapper(sub) for sub in lib._linking_libraries):
        return False
    from llvmlite import binding as ll

    return any(fn.name.startswith(_OWN_PREFIX) and not fn.is_declaration and fn.linkage == ll.Linkage.external
               for fn in lib._final_module.functions)


def is_parfor_wrapper(lib):
    """The inner wrapper of a parfor, or the outer wrapper around one (never a @guvectorize function's)."""
    if getattr(lib, PARFOR, False):
        return True
    return lib.name == _PARALLEL_WRAPPER and any(getattr(sub, PARFOR, False) for sub in lib._linking_libraries)


def install():
    """Skip the whole-module passes and the machine code of a parfor's two wrapper libraries, and the whole-module
    passes of npu_emu's own parallel kernels; idempotent. Returns True when in place."""
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
            if is_parfor_wrapper(self) or is_own_parfor_kernel(self):
                setattr(self, SKIPPED, True)
                return None
            return optimize(self)
        return optimize_unless_wrapper

    def finalize_without_code(finalize):
        # numba's _finalize_final_module less the JIT engine: its checks, then finalised (finalize() has just
        # linked and verified the module)
        def finalize_unless_wrapper(self):
            if not is_parfor_wrapper(self):
                return finalize(self)
            self._finalize_dynamic_globals()
            self._verify_declare_only_symbols()
            setattr(self, NO_CODE, True)
            self._finalized = True
        return finalize_unless_wrapper

    method_hooks.wrap(wrappers._GufuncWrapper, _MARK, _build_wrapper=mark_parfor)
    return method_hooks.wrap(codegen.CPUCodeLibrary, _MARK, _optimize_final_module=wrapper_aware,
                             _finalize_final_module=finalize_without_code)


def uninstall():
    """Put numba's methods back (the test compares the two)."""
    from numba.core import codegen
    from numba.np.ufunc import wrappers

    method_hooks.unwrap(wrappers._GufuncWrapper, _MARK, "_build_wrapper")
    method_hooks.unwrap(codegen.CPUCodeLibrary, _MARK, "_optimize_final_module", "_finalize_final_module")


def installed():
    from numba.core import codegen

    return method_hooks.wrapped(codegen.CPUCodeLibrary, _MARK)
