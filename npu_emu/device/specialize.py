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

A function of the copy that reads only some of the switches is shared by the copies that agree on them: ``load``
binds in each copy the function of the copy made with just those switches (see ``_share`` below), so it is compiled
once per value of what it reads, not once per copy.
"""

import ast
import importlib
import importlib.util
import inspect
import os
import sys
import textwrap
import threading
import types

import numpy as np

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


_READY = {}      # (modname, the switches in the caller's order, their types) -> the finished copy


def load(modname, **consts):
    """The copy of module ``modname`` whose switches have the values ``consts`` (executed once per process)."""
    fast = (modname, tuple(consts.items()), tuple(map(type, consts.values())))   # True and 1: two copies
    mod = _READY.get(fast)
    if mod is not None:
        return mod
    mod = _load(modname, consts)
    _READY[fast] = mod
    return mod


def _load(modname, consts):
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
        except BaseException:
            del sys.modules[name]
            raise
        finally:
            _state.consts = None
        try:
            _share(modname, source, mod, consts)
        except BaseException:
            del sys.modules[name]
            raise
        mod.__spec_ready__ = True
    return mod


# ---- one compile per value of the switches a function reads ----------------------------------------------------
#
# A copy's functions that read only some of its switches (directly, through module constants computed from them, or
# through the functions they call) compile to the same code in every copy that agrees on those switches. Without
# sharing, each copy compiled them again: DynamicQuant's row loader once per output format, though it reads only the
# input format. Such a function is taken from the copy made with just the switches it reads (its own tag, so its own
# numba cache files, named the same in every process), and a copy binds that one in its namespace before anything
# compiles. Which switches a function reads comes from the module's source; the values it sees are then compared
# with the full copy's, and any difference keeps the copy's own function.

SHARING = os.environ.get("NPU_EMU_SPEC_SHARING", "1").strip() not in ("", "0")
_SWITCH = "const:"      # how _loads marks a switch read (no Python name holds a colon)
_deps_cache = {}
unshared = []           # (copy, function) pairs the value check refused: the source analysis missed a switch


def _loads(node):
    """Names a statement reads (every ``Name`` load, nested functions included) and the switches it reads with
    ``const("NAME", ...)``, the latter as ``_SWITCH + "NAME"``."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "const" and n.args
              and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)):
            out.add(_SWITCH + n.args[0].value)
    return out


def _binds(stmt):
    """Module-level names a statement binds or changes (``x[i] = ...`` changes ``x``); a function's or class's own
    locals are not module-level."""
    out = set()
    todo = [stmt]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
            continue
        if isinstance(n, ast.Lambda):
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            root = n.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name):
                out.add(root.id)
        elif isinstance(n, ast.alias):
            out.add((n.asname or n.name).split(".")[0])
        todo.extend(ast.iter_child_nodes(n))
    return out


def _switch_deps(modname, source):
    """{module-level name: (the switches its value or code depends on, every name it reads directly or through the
    module-level names it reads)}, or None where the module does something at top level this analysis does not
    follow (then nothing of it is shared)."""
    hit = _deps_cache.get(modname)
    if hit is not None and hit[0] == source:
        return hit[1]
    tree = ast.parse(source)
    reads = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue                                               # a docstring
        if (isinstance(stmt, (ast.Expr, ast.Delete))
                or any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(stmt))):
            _deps_cache[modname] = (source, None)                 # a call for its effect, a rebinding from inside
            return None
        r = _loads(stmt)                                           # a def: its body, decorators and defaults
        for name in _binds(stmt):
            reads.setdefault(name, set()).update(r)
    switches = {name: {r[len(_SWITCH):] for r in rs if r.startswith(_SWITCH)} for name, rs in reads.items()}
    names = {name: {r for r in rs if r in reads and r != name} for name, rs in reads.items()}
    changed = True
    while changed:
        changed = False
        for name in reads:
            add = set().union(*(switches[r] for r in names[name])) - switches[name]
            if add:
                switches[name] |= add
                changed = True
    # every name a name reads, through the module-level names it reads (for the value check: this includes names
    # the module binds in ways the analysis does not see)
    closure = {}
    for name in reads:
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            for r in reads.get(n, ()):
                if r not in seen and not r.startswith(_SWITCH):
                    seen.add(r)
                    todo.append(r)
        closure[name] = seen
    deps = {name: (frozenset(switches[name]), frozenset(closure[name])) for name in reads}
    _deps_cache[modname] = (source, deps)
    return deps


def _same_value(a, b, modname):
    """Whether a name has the same value in two copies of module ``modname`` (a function defined by the module
    counts as the same: what it reads is checked by name)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, types.ModuleType):
        return a.__name__ == b.__name__
    if callable(a):
        fa, fb = getattr(a, "py_func", a), getattr(b, "py_func", b)
        ma, mb = (getattr(f, "__module__", None) or "" for f in (fa, fb))
        return (ma.partition("[")[0] == modname == mb.partition("[")[0]
                and getattr(fa, "__name__", None) == getattr(fb, "__name__", 0))
    try:
        if isinstance(a, np.ndarray):
            return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())
        return bool(a == b)
    except Exception:           # noqa: BLE001 - not comparable: not shared
        return False


def _share(modname, source, mod, consts):
    if not SHARING or not consts:
        return
    from numba.core.registry import CPUDispatcher

    deps = _switch_deps(modname, source)
    if deps is None:
        return
    ns = mod.__dict__
    own = dict(ns)              # the copy's own values: the loop below rebinds functions in ns
    for name, obj in own.items():
        if not (isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod.__name__) or name not in deps:
            continue
        reads = {k: v for k, v in consts.items() if k in deps[name][0]}
        if len(reads) == len(consts):
            continue
        sub = load(modname, **reads) if reads else importlib.import_module(modname)
        shared = sub.__dict__.get(name)
        if not isinstance(shared, CPUDispatcher):
            continue
        if all(_same_value(own[r], sub.__dict__.get(r), modname) for r in deps[name][1] if r in own):
            ns[name] = shared
        else:
            unshared.append((mod.__name__, name))


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
