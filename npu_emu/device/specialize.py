"""Compile only what a call needs: one copy of a kernel module per specialisation, with its switches as constants.

numba compiles every branch it types, so a kernel that chooses its output format or its path (fused or the
UB-staged transliteration) at run time compiles the loops of every format and path on its first call, whichever
one the call takes. numba does prune a branch whose condition compares module-level constants (its dead-branch
pass runs before type inference), so a kernel module written with ``if DST == D_E4M3:`` compiles one format when
``DST`` is a constant. :func:`load` executes the module's source once per specialisation as a module of its own,
with the switches as its globals:

    dev = load("npu_emu.kernels.mx_quant.kernel", DST=0, MODE=1)     # the E4M3 fused kernels only
    dev.dynamic_mx_quant_kernel(...)

In that source the switches are read with :func:`const` at the top (``DST = const("DST", None)``); a plain import
gives the defaults, under which nothing depending on a switch may be compiled. The module's njit functions are
decorated with this module's :func:`njit`, which tags their ``__qualname__`` with the specialisation, so each copy
of a function gets numba cache files of its own (numba names a cache file after the source file, the qualified
name and the line; the index key holds only the bytecode, identical in every copy, so untagged copies would share
one index and could load each other's machine code). Cache freshness is still the source file's hash.
"""

import ast
import importlib.util
import inspect
import sys
import textwrap
import threading
import types

_state = threading.local()
_lock = threading.RLock()


def const(name, default=None):
    """The value of switch ``name`` in the module :func:`load` is executing, or ``default`` in a plain import or
    when the load does not name it (a switch added later keeps the tags, and so the cache files, of the copies
    that existed before it)."""
    consts = getattr(_state, "consts", None)
    if consts is None:
        return default
    return consts.get(name, default)


def tag_of(consts):
    return ",".join(f"{k}={v}" for k, v in sorted(consts.items()))


def njit(*args, **options):
    """numba.njit, with the specialisation's tag in the function's qualified name (see the module docstring)."""
    import numba

    def deco(fn):
        tag = fn.__globals__.get("__spec_tag__")
        if tag:
            fn.__qualname__ = f"{fn.__qualname__}[{tag}]"
        return numba.njit(**options)(fn)

    if args and callable(args[0]) and not options:
        return deco(args[0])
    if args:
        raise TypeError("npu_emu.device.specialize.njit takes keyword options only")
    return deco


def load(modname, **consts):
    """The copy of module ``modname`` whose switches have the values ``consts`` (executed once per process)."""
    tag = tag_of(consts)
    name = f"{modname}[{tag}]"
    mod = sys.modules.get(name)
    # the copy is in sys.modules while its source still runs (numba needs it findable): without the lock, return
    # only finished copies, or a second thread (Dask's threaded scheduler) gets a module without its kernels yet
    if mod is not None and mod.__dict__.get("__spec_ready__"):
        return mod
    with _lock:
        mod = sys.modules.get(name)
        if mod is not None:
            return mod
        spec = importlib.util.find_spec(modname)
        source = spec.loader.get_source(modname)
        mod = types.ModuleType(name, f"{modname} specialised for {tag}")
        mod.__file__ = spec.origin
        mod.__package__ = modname.rpartition(".")[0]
        mod.__spec_tag__ = tag
        # numba rebuilds a cached function's environment by importing its module's name: the copy must be findable
        sys.modules[name] = mod
        _state.consts = dict(consts)
        try:
            exec(compile(source, spec.origin, "exec"), mod.__dict__)
            mod.__spec_ready__ = True
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            _state.consts = None
    return mod


def _bind_constants(fn, values):
    """A copy of ``fn`` whose body reads the parameters named in ``values`` as module-level constants of those
    values (the parameters stay, unused: numba checks an overload's signature), so numba's dead-branch pass prunes a
    test on one before typing."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    fdef = tree.body[0]
    fdef.decorator_list = []
    renamed = {name: f"__{name}_const__" for name in values}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in renamed:
                return ast.copy_location(ast.Name(id=renamed[node.id], ctx=node.ctx), node)
            return node

    fdef.body = [Rename().visit(stmt) for stmt in fdef.body]
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - 1)
    namespace = dict(fn.__globals__)
    namespace.update({renamed[k]: v for k, v in values.items()})
    exec(compile(tree, fn.__code__.co_filename, "exec"), namespace)
    bound = namespace[fn.__name__]
    bound.__qualname__, bound.__module__ = fn.__qualname__, fn.__module__
    return bound


def _reassigned(fn):
    """Names the body of ``fn`` assigns to (a parameter among them cannot become a constant)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def literal_args(**options):
    """Decorator: the function becomes an njit-only function (``options`` as numba.njit's) compiled once per set of
    constant arguments, with each constant integer or bool argument a constant of the compiled copy.

    numba prunes a branch that compares module-level constants before typing (and before inlining the helpers in
    it), but not one on an argument, literal or not: ``numba.literally`` only makes the argument's *type* a literal,
    after typing the whole function once with every branch. Here numba types the call with the constant arguments
    as literals on the first try (an overload with ``prefer_literal``), and the implementation is a copy of the
    function in which those parameters are module-level constants: ``if dst == DT_INT4:`` compiles one side only.
    Non-constant arguments give the function itself, with the same results. Called from Python (e.g. under
    NUMBA_DISABLE_JIT=1) it runs as plain Python.
    """
    from numba.core import types as nbtypes     # (this module's `types` is Python's)
    from numba.extending import overload

    def deco(fn):
        params = list(inspect.signature(fn).parameters)
        fixed = set(params) - _reassigned(fn)
        copies = {}

        def stub(*args):
            return fn(*args)

        def typing(*args):
            values = {name: ty.literal_value for name, ty in zip(params, args)
                      if name in fixed and isinstance(ty, (nbtypes.IntegerLiteral, nbtypes.BooleanLiteral))}
            if not values:
                return fn
            key = tuple(sorted(values.items()))
            if key not in copies:
                copies[key] = _bind_constants(fn, values)
            return copies[key]

        typing.__signature__ = inspect.signature(fn)
        stub.__name__, stub.__qualname__, stub.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        tag = fn.__globals__.get("__spec_tag__")
        if tag:
            fn.__qualname__ = f"{fn.__qualname__}[{tag}]"
        overload(stub, prefer_literal=True, jit_options=options)(typing)
        return stub

    return deco
