"""Two things numba makes for every function it compiles that npu-emu's own functions never use: a compile-time
saving, and smaller cache entries.

* **The C-callable wrapper.** Besides the function and its Python wrapper, numba lowers a ``cfunc`` wrapper for
  every compiled function, parses it, optimises it and turns it into machine code. It is only used when the
  function is handed to other jitted code as a first-class function object (``types.FunctionType``). npu-emu's
  functions call one another directly and are called from Python, so its functions are compiled without it
  (numba's own ``no_cfunc_wrapper`` flag). Such an object made of an npu-emu function would not link; none is made.
* **The annotated source in a cache entry.** Saving a compiled function to numba's cache writes
  ``str(type_annotation)``: the function's source with every variable's type, built at save time. It is read back
  only by ``inspect_types()`` on a function loaded from the cache. For npu-emu's functions the entry keeps a
  one-line note instead (``NOTE`` below): building the text was 2.7 % of a first call's time in a sampling profile
  of DynamicMxQuant E4M3, and the text was 18 % of the bytes of mx_quant's cache files (5.6 of 31.8 MB after the
  test suite). A function compiled in the process keeps its full annotation.

Measured together (one configuration per fresh process, empty cache, 2-core box, with and without in turn):
docs/contributing/numba_rules.md. Both apply to functions defined in the npu_emu package only
(specialised copies included: their module names start with the package's); a user's own numba functions in the
same process are compiled and cached as numba does. ``NPU_EMU_LEAN_COMPILE=0`` leaves numba untouched.
"""

import os

from npu_emu.device import method_hooks

_MARK = "_npu_emu_lean_compile"
ENABLED = os.environ.get("NPU_EMU_LEAN_COMPILE", "1").strip() not in ("0", "")
NOTE = ("npu-emu keeps no type annotation in its cache entries; to see one, compile with an empty NUMBA_CACHE_DIR "
        "and NPU_EMU_SHIPPED_KERNELS=0 and inspect the function in that process")


def is_own(modname):
    """A module of the npu_emu package, or a specialised copy of one (npu_emu/device/specialize.py)."""
    return isinstance(modname, str) and (modname == "npu_emu" or modname.startswith("npu_emu."))


class _Note:
    def __str__(self):
        return NOTE


def install():
    """Compile npu_emu's functions without the cfunc wrapper and cache them without the annotated source;
    idempotent. Returns True when in place."""
    if not ENABLED:
        return False
    from numba.core import compiler, dispatcher

    def own_flags(customize):
        def customize_own(self, flags):
            flags = customize(self, flags)
            if is_own(getattr(self.py_func, "__module__", None)):
                flags.no_cfunc_wrapper = True
            return flags
        return customize_own

    def reduce_noted(reduce):
        def reduce_own(self):
            if is_own(self.fndesc.modname):
                return reduce(self._replace(type_annotation=_Note()))
            return reduce(self)
        return reduce_own

    method_hooks.wrap(dispatcher._FunctionCompiler, _MARK, _customize_flags=own_flags)
    return method_hooks.wrap(compiler.CompileResult, _MARK, _reduce=reduce_noted)


def uninstall():
    """Put numba's methods back (the tests compare the two)."""
    from numba.core import compiler, dispatcher

    method_hooks.unwrap(dispatcher._FunctionCompiler, _MARK, "_customize_flags")
    method_hooks.unwrap(compiler.CompileResult, _MARK, "_reduce")


def installed():
    from numba.core import compiler, dispatcher

    return method_hooks.wrapped(dispatcher._FunctionCompiler, _MARK) and method_hooks.wrapped(compiler.CompileResult,
                                                                                               _MARK)
