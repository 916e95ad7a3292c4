"""Things numba makes for the functions it compiles that npu-emu's own functions never use: a compile-time saving,
and smaller cache entries.

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
  calling a helper) comes to ``Dispatcher.compile``, which compiles that one function again with its wrapper, in
  place of the wrapperless one. In numba's cache such an entry is saved under a marked index key
  (:func:`callers_key`), which only a load for jitted callers tries: a Python call, in this process or a later one,
  with the hook or without it, never loads a function that has no wrapper; it loads or compiles the full one.
* **The machine code of a function only other jitted code calls.** Such a function (a library without the Python
  wrapper, marked ``CALLERS_ONLY``) is still optimised, since its callers link its optimised IR, but it is not added
  to numba's JIT engine, so LLVM never turns it into machine code. What runs is the copy linked into each caller's
  machine code, which is also what runs when that caller is loaded from numba's cache; before, a caller compiled in
  the process called the callee's own machine code wherever it had not inlined it. The callee's environment pointer
  (which object-mode blocks and boxing read) lives in those copies, so once a library is in the engine the
  environments it links and nobody set are pointed, as numba does for a function loaded from its cache
  (``_point_environments``); numba's ``set_env`` skips a name the engine does not define. Its cache entry holds the
  IR callers link (numba's ``bitcode`` kind, named with ``_IR_ONLY``) in place of object code, under the marked key
  of the previous point. The parfor body of an npu-emu kernel is treated so too: numba gives it a Python wrapper
  but never calls it, and the kernel runs the body's copy linked in through the gufunc wrappers
  (npu_emu/device/wrapper_passes.py); the hook leaves that wrapper out as well.
* **The same for the ``@overload`` implementations an npu-emu function calls.** numba compiles the implementation
  of ``np.empty``, ``min`` and the like for each new signature while typing the call, once per process (they are
  not cached), with a ``cfunc`` wrapper and machine code of its own that no caller uses: callers link its IR. One
  compiled for an npu-emu function (:func:`_impl_for_own`) gets neither; numba shares it with every later caller
  in the process, a user's included, which links its IR as before.

Measured together (one configuration per fresh process, empty cache, 2-core box, with and without in turn):
docs/contributing/numba_rules.md. All of them apply to functions defined in the npu_emu package only
(specialised copies included: their module names start with the package's) and to what numba compiles for them; a
user's own numba functions in the same process are compiled and cached as numba does. ``NPU_EMU_LEAN_COMPILE=0``
leaves numba untouched.
"""

import os
import threading

from npu_emu.device import method_hooks

_MARK = "_npu_emu_lean_compile"
CALLERS_ONLY = "_npu_emu_callers_only"
_IR_ONLY = " [npu-emu: IR only]"
CALLERS_KEY = "npu-emu: for jitted callers only"
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


def callers_key(key):
    """numba's cache index key ``(signature, target, hashes)`` marked for a compile kept for jitted callers: a process
    with the hook off (``NPU_EMU_LEAN_COMPILE=0``) looks up unmarked keys only, so it never loads a function without
    its Python wrapper into its table of Python-callable signatures."""
    return key[0], key[1], tuple(key[2]) + (CALLERS_KEY,)


def keys_to_load(key):
    """The index keys a load tries, in turn: a callers-only entry serves a compile for jitted callers only."""
    return (key, callers_key(key)) if _for_callers() else (key,)


# per thread: for each dispatcher compiling, innermost last, whether it is one of npu_emu's
_compiling = threading.local()
# numba 0.68 names a parfor's body function so (numba/parfors/parfor_lowering.py)
_PARFOR_BODY = "__numba_parfor_gufunc_"

# per thread: whether numba's _index_key gives the marked key (set around a load's second try and a callers-only save)
_keys = threading.local()


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
    """Compile npu_emu's functions without the cfunc wrapper, and without the Python wrapper or machine code of their
    own when only jitted code calls them (npu_emu kernels' parfor bodies too), the ``@overload`` implementations they
    call without cfunc wrapper or machine code, and cache them without the annotated source; idempotent. Returns True
    when in place."""
    if not ENABLED:
        return False
    from numba.core import caching, codegen, compiler, cpu, dispatcher, sigutils
    from numba.core.compiler_lock import global_compiler_lock

    def own_flags(customize):
        def customize_own(self, flags):
            flags = customize(self, flags)
            if is_own(getattr(self.py_func, "__module__", None)):
                flags.no_cfunc_wrapper = True
                if _for_callers():
                    flags.no_cpython_wrapper = True
            elif flags.no_cpython_wrapper and _impl_for_own():
                flags.no_cfunc_wrapper = True
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
            _compiling.own = getattr(_compiling, "own", ()) + (is_own(getattr(self.py_func, "__module__", None)),)
            try:
                return compile_own_wrapped(self, sig)
            finally:
                _compiling.own = _compiling.own[:-1]

        def compile_own_wrapped(self, sig):
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

    def executable_without_code(get_executable):
        def get_executable_own(self, library, fndesc, env):
            if _callers_only(library, fndesc):
                setattr(library, CALLERS_ONLY, True)
            cfunc = get_executable(self, library, fndesc, env)
            _point_environments(library)
            return cfunc
        return get_executable_own

    def body_without_wrapper(create_cpython_wrapper):
        def create_cpython_wrapper_own(self, library, fndesc, *args, **kwargs):
            # the parfor body of an npu_emu kernel: numba never calls its Python wrapper, and it gets no machine code
            if not (fndesc.qualname.startswith(_PARFOR_BODY) and _own_kernel()):
                return create_cpython_wrapper(self, library, fndesc, *args, **kwargs)
        return create_cpython_wrapper_own

    def environment_if_defined(set_env):
        def set_env_own(self, env_name, env):
            # a callers-only library is not in the engine: its environment pointer lives in each caller's copy
            if self._engine.get_global_value_address(env_name):
                return set_env(self, env_name, env)
        return set_env_own

    def finalize_without_code(finalize):
        def finalize_own(self):
            if not getattr(self, CALLERS_ONLY, False):
                return finalize(self)
            self._finalize_dynamic_globals()
            self._verify_declare_only_symbols()
            self._finalized = True
        return finalize_own

    def serialize_ir(serialize):
        def serialize_own(self):
            if not getattr(self, CALLERS_ONLY, False):
                return serialize(self)
            return (self.name + _IR_ONLY, "bitcode", self._get_module_for_linking().as_bitcode())
        return serialize_own

    def ir_loaded(unserialize):
        def unserialize_own(cls, codegen, state):
            name, kind, data = state
            if kind != "bitcode" or not name.endswith(_IR_ONLY):
                return unserialize(cls, codegen, state)
            from llvmlite import binding as ll

            self = codegen.create_library(name[:-len(_IR_ONLY)])
            self._final_module = self._shared_module = ll.parse_bitcode(data)
            setattr(self, CALLERS_ONLY, True)
            self._finalize_final_module()
            return self
        return unserialize_own

    def marked_key(index_key):
        def index_key_own(self, sig, codegen):
            key = index_key(self, sig, codegen)
            return callers_key(key) if getattr(_keys, "callers", False) else key
        return index_key_own

    def load_either(load_overload):
        def load_overload_own(self, sig, target_context):
            data = load_overload(self, sig, target_context)
            if data is None and _for_callers() and is_own(getattr(self._py_func, "__module__", None)):
                _keys.callers = True
                try:
                    data = load_overload(self, sig, target_context)
                finally:
                    _keys.callers = False
            return data
        return load_overload_own

    def save_marked(save_overload):
        def save_overload_own(self, sig, data):
            if not is_own(data.fndesc.modname) or python_callable(data):
                return save_overload(self, sig, data)
            _keys.callers = True
            try:
                return save_overload(self, sig, data)
            finally:
                _keys.callers = False
        return save_overload_own

    method_hooks.wrap(caching.Cache, _MARK, _index_key=marked_key, _load_overload=load_either,
                      _save_overload=save_marked)
    method_hooks.wrap(dispatcher._FunctionCompiler, _MARK, _customize_flags=own_flags)
    method_hooks.wrap(dispatcher.Dispatcher, _MARK, get_call_template=typing_a_call, add_overload=callers_only,
                      compile=with_wrapper)
    method_hooks.wrap(cpu.CPUContext, _MARK, get_executable=executable_without_code,
                      create_cpython_wrapper=body_without_wrapper)
    method_hooks.wrap(codegen.JITCPUCodegen, _MARK, set_env=environment_if_defined)
    method_hooks.wrap(codegen.CPUCodeLibrary, _MARK, _finalize_final_module=finalize_without_code,
                      serialize_using_object_code=serialize_ir, _unserialize=ir_loaded)
    return method_hooks.wrap(compiler.CompileResult, _MARK, _reduce=reduce_noted)


def _callers_only(library, fndesc):
    """Whether a library being compiled serves jitted callers only: an npu_emu function without its Python wrapper, or
    the parfor body of an npu_emu kernel (its Python wrapper is never called: the kernel links the body through the
    gufunc wrappers, npu_emu/device/wrapper_passes.py)."""
    if library._finalized:
        return False
    if fndesc.qualname.startswith(_PARFOR_BODY):
        return _own_kernel()
    if is_own(fndesc.modname):
        return not _defines(library, fndesc)
    return _impl_for_own() and not _defines(library, fndesc)


def _own_kernel():
    """Whether the dispatcher this thread compiles innermost is one of npu_emu's (a parfor body is compiled inside its
    kernel's compile, not through a dispatcher of its own)."""
    own = getattr(_compiling, "own", ())
    return bool(own) and own[-1]


def _impl_for_own():
    """Whether this thread compiles an ``@overload`` implementation of numba's (or another package's) for an npu_emu
    function: a dispatcher outside the package, innermost, compiled while one of npu_emu's is. numba compiles it while
    typing the call (``_OverloadFunctionTemplate._build_impl``), once per signature and process, without a Python
    wrapper, and never caches it; callers link its IR."""
    own = getattr(_compiling, "own", ())
    return len(own) > 1 and not own[-1] and any(own)


def _defines(library, fndesc):
    """Whether the library defines the function's Python wrapper."""
    try:
        return not library._final_module.get_function(fndesc.llvm_cpython_wrapper_name).is_declaration
    except NameError:
        return False


def _point_environments(library):
    """Point the environment pointers of the callers-only functions linked into ``library``'s machine code, as numba
    does for a function loaded from its cache (``CompileResult._rebuild``); the others are already set."""
    if getattr(library, CALLERS_ONLY, False) or not library._finalized:
        return
    import ctypes

    from numba.core.environment import lookup_environment

    engine = library.codegen._engine
    for gv in library._final_module.global_variables:
        if not gv.name.startswith("_ZN08NumbaEnv"):
            continue
        env = lookup_environment(gv.name)
        address = env is not None and engine.get_global_value_address(gv.name)
        if address and ctypes.c_void_p.from_address(address).value is None:
            library.codegen.set_env(gv.name, env)


def uninstall():
    """Put numba's methods back (the tests compare the two)."""
    from numba.core import caching, codegen, compiler, cpu, dispatcher

    method_hooks.unwrap(caching.Cache, _MARK, "_index_key", "_load_overload", "_save_overload")
    method_hooks.unwrap(dispatcher._FunctionCompiler, _MARK, "_customize_flags")
    method_hooks.unwrap(dispatcher.Dispatcher, _MARK, "get_call_template", "add_overload", "compile")
    method_hooks.unwrap(cpu.CPUContext, _MARK, "get_executable", "create_cpython_wrapper")
    method_hooks.unwrap(codegen.JITCPUCodegen, _MARK, "set_env")
    method_hooks.unwrap(codegen.CPUCodeLibrary, _MARK, "_finalize_final_module", "serialize_using_object_code",
                        "_unserialize")
    method_hooks.unwrap(compiler.CompileResult, _MARK, "_reduce")


def installed():
    from numba.core import caching, codegen, compiler, cpu, dispatcher

    return all(method_hooks.wrapped(cls, _MARK) for cls in (caching.Cache, dispatcher._FunctionCompiler,
                                                             dispatcher.Dispatcher, cpu.CPUContext,
                                                             codegen.CPUCodeLibrary, codegen.JITCPUCodegen,
                                                             compiler.CompileResult))
