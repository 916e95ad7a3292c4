"""Three things numba makes for the functions it compiles that npu-emu's own functions never use: a compile-time
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
* **The Python wrapper of a function only other jitted code calls.** numba gives every compiled function a CPython
  wrapper (unboxing each argument, boxing the result) and optimises it and turns it into machine code, then links it
  into every caller's module, where it is dead code. A kernel's helpers are compiled because a kernel calls them
  (numba compiles a callee while typing its caller, in ``Dispatcher.get_call_template``) and are never called from
  Python; for the npu_emu package's functions such a compile skips the wrapper (numba's ``no_cpython_wrapper``, the
  flag its ``@overload`` implementations compile with). The compiled function is then kept for callers only, not
  entered in the dispatcher's table of Python-callable signatures, so a Python call with that signature (a test
  calling a helper, a later process loading the entry from the cache) comes to ``Dispatcher.compile``, which
  compiles that one function again with its wrapper, in place of the wrapperless one in the process and in the
  cache.

Measured together (one configuration per fresh process, empty cache, 2-core box, with and without in turn):
docs/contributing/numba_rules.md. All three apply to functions defined in the npu_emu package only
(specialised copies included: their module names start with the package's); a user's own numba functions in the
same process are compiled and cached as numba does. ``NPU_EMU_LEAN_COMPILE=0`` leaves numba untouched.
"""

import os
import threading

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


# per thread: how many calls numba is typing, each of which may compile the function called
_typing = threading.local()


def _for_callers():
    """Whether this thread compiles a function because jitted code calls it."""
    return getattr(_typing, "depth", 0) > 0


def python_callable(cres):
    """Whether the compiled function ``cres`` has its CPython wrapper (object mode always has)."""
    return cres.objectmode or bool(cres.library.get_pointer_to_function(cres.fndesc.llvm_cpython_wrapper_name))


class _NoLoad:
    """A dispatcher's cache that loads nothing and saves as the cache does: the wrapperless entry it holds is
    replaced."""

    def __init__(self, cache):
        self._cache = cache

    def load_overload(self, sig, target_context):
        return None

    def __getattr__(self, name):
        return getattr(self._cache, name)


def install():
    """Compile npu_emu's functions without the cfunc wrapper, and without the Python wrapper when jitted code calls
    them, and cache them without the annotated source; idempotent. Returns True when in place."""
    if not ENABLED:
        return False
    from numba.core import compiler, dispatcher, sigutils
    from numba.core.compiler_lock import global_compiler_lock

    def own_flags(customize):
        def customize_own(self, flags):
            flags = customize(self, flags)
            if is_own(getattr(self.py_func, "__module__", None)):
                flags.no_cfunc_wrapper = True
                if _for_callers():
                    flags.no_cpython_wrapper = True
            return flags
        return customize_own

    def typing_a_call(get_call_template):
        def get_call_template_own(self, args, kws):
            _typing.depth = getattr(_typing, "depth", 0) + 1
            try:
                return get_call_template(self, args, kws)
            finally:
                _typing.depth -= 1
        return get_call_template_own

    def callers_only(add_overload):
        def add_overload_own(self, cres):
            if python_callable(cres):
                return add_overload(self, cres)
            # kept for jitted callers (typing reads self.overloads), out of the table Python calls are matched in
            self.overloads[tuple(cres.signature.args)] = cres
        return add_overload_own

    def with_wrapper(compile_):
        def compile_own(self, sig):
            entry = compile_(self, sig)
            if _for_callers():
                return entry
            # called from Python (or asked for by name): a callers-only function gets its wrapper now
            with global_compiler_lock:
                key = tuple(sigutils.normalize_signature(sig)[0])
                cres = self.overloads.get(key)
                if cres is None or python_callable(cres):
                    return entry
                del self.overloads[key]
                cache, self._cache = self._cache, _NoLoad(self._cache)
                try:
                    return compile_(self, sig)
                finally:
                    self._cache = cache
        return compile_own

    def reduce_noted(reduce):
        def reduce_own(self):
            if is_own(self.fndesc.modname):
                return reduce(self._replace(type_annotation=_Note()))
            return reduce(self)
        return reduce_own

    method_hooks.wrap(dispatcher._FunctionCompiler, _MARK, _customize_flags=own_flags)
    method_hooks.wrap(dispatcher.Dispatcher, _MARK, get_call_template=typing_a_call, add_overload=callers_only,
                      compile=with_wrapper)
    return method_hooks.wrap(compiler.CompileResult, _MARK, _reduce=reduce_noted)


def uninstall():
    """Put numba's methods back (the tests compare the two)."""
    from numba.core import compiler, dispatcher

    method_hooks.unwrap(dispatcher._FunctionCompiler, _MARK, "_customize_flags")
    method_hooks.unwrap(dispatcher.Dispatcher, _MARK, "get_call_template", "add_overload", "compile")
    method_hooks.unwrap(compiler.CompileResult, _MARK, "_reduce")


def installed():
    from numba.core import compiler, dispatcher

    return all(method_hooks.wrapped(cls, _MARK) for cls in (dispatcher._FunctionCompiler, dispatcher.Dispatcher,
                                                             compiler.CompileResult))
