"""npu_emu/device/lean_compile.py: npu-emu's functions compile without the cfunc wrapper and cache without the
annotated source, those compiled for jitted callers without the Python wrapper until Python calls them, and these
and npu-emu kernels' parfor bodies without machine code of their own (the bodies without a Python wrapper either),
as the ``@overload`` implementations numba compiles for them; a user's functions keep all of it.

The same function is compiled as if defined in a module of the npu_emu package and in a look-alike user module,
with the hook in place and without it. The wrapper is looked up by name in the function's library; the cache
entry's annotation is what numba's reduction of the compile result would pickle. Results are compared bit for bit.
"""

import importlib
import os
import subprocess
import sys
import textwrap

import numpy as np
from numba import njit, objmode, prange
from numba.extending import overload

from npu_emu.device import lean_compile

# what every kernel module imports first: it installs the hooks
importlib.import_module("npu_emu.device.jit_options")

_SOURCE = """
def f(x, s):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.float32(x[i] * s + np.float32(0.25))
    return out
"""


def _compiled(modname, hooked):
    if not hooked:
        lean_compile.uninstall()
    try:
        ns = {"__name__": modname, "np": np}
        exec(compile(_SOURCE, "<probe>", "exec"), ns)
        f = njit(ns["f"])
        x = np.linspace(-5, 5, 37).astype(np.float32)
        out = f(x, np.float32(1.5))
        (cres,) = f.overloads.values()
        state = cres._reduce()
    finally:
        lean_compile.install()
    return out, cres, state


def _has_cfunc_wrapper(cres):
    name = cres.fndesc.llvm_cfunc_wrapper_name
    return any(fn.name == name and not fn.is_declaration for fn in cres.library._final_module.functions)


def test_installed_by_jit_options():
    assert lean_compile.installed()


def test_own_functions_lose_the_wrapper_and_the_annotation_and_keep_their_bits():
    x = np.linspace(-5, 5, 37).astype(np.float32)
    want = (x * np.float32(1.5) + np.float32(0.25)).astype(np.float32)
    for modname in ("npu_emu.kernels._lean_probe", "npu_emu.kernels._lean_probe[DST=0]", "npu_emu_user.lean"):
        for hooked in (True, False):
            out, cres, state = _compiled(modname, hooked)
            assert out.view(np.uint32).tobytes() == want.view(np.uint32).tobytes(), (modname, hooked)
            own = hooked and modname.startswith("npu_emu.")
            assert _has_cfunc_wrapper(cres) == (not own), (modname, hooked)
            typeann = state[6]          # CompileResult._reduce: (libdata, fndesc, env, sig, objmode, lifted, typeann..)
            assert isinstance(typeann, str)
            if own:
                assert typeann == lean_compile.NOTE
            else:
                # numba's annotation: every variable with its type (the exec'd probe has no source lines)
                assert "x = arg(0, name=x)  :: array(float32, 1d, C)" in typeann, (modname, hooked)


def test_is_own():
    assert lean_compile.is_own("npu_emu") and lean_compile.is_own("npu_emu.kernels.mx_quant.kernel[DST=0,MODE=1]")
    assert not lean_compile.is_own("npu_emu_user.kernels") and not lean_compile.is_own(None)
    assert not lean_compile.is_own("tests.npu_emu.test_lean_compile")


_PAIR = """
def g(x, s):
    return np.float32(x * s + np.float32(0.25))

def f(x, s):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = g(x[i], s)
    return out
"""


def _pair(modname):
    ns = {"__name__": modname, "np": np}
    exec(compile(_PAIR, "<probe>", "exec"), ns)
    ns["g"] = njit(ns["g"])
    ns["f"] = njit(ns["f"])
    return ns["f"], ns["g"]


def test_a_callee_has_no_python_wrapper_until_python_calls_it():
    x = np.linspace(-5, 5, 37).astype(np.float32)
    s = np.float32(1.5)
    want = (x * s + np.float32(0.25)).astype(np.float32)
    for modname in ("npu_emu.kernels._lean_pair", "npu_emu_user.lean_pair"):
        f, g = _pair(modname)
        assert f(x, s).view(np.uint32).tobytes() == want.view(np.uint32).tobytes()
        (gres,) = g.overloads.values()
        own = modname.startswith("npu_emu.")
        assert lean_compile.python_callable(gres) == (not own), modname
        assert lean_compile.python_callable(f.overloads[f.signatures[0]])
        # the Python call compiles g again, with its wrapper, in place of the callers-only one
        got = np.array([g(v, s) for v in x], np.float32)
        assert got.view(np.uint32).tobytes() == want.view(np.uint32).tobytes(), modname
        (gres2,) = g.overloads.values()
        assert lean_compile.python_callable(gres2)
        assert (gres2 is not gres) == own
        # the caller compiled against the first g still runs
        assert f(x, s).view(np.uint32).tobytes() == want.view(np.uint32).tobytes()


_ENV_PAIR = """
def g(x, s):
    with objmode(t="float64"):
        t = float(s)                    # an object-mode block: g's code reads g's environment
    return np.float32(x * np.float32(t) + np.float32(0.25))

def f(x, s):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = g(x[i], s)
    return out
"""


def test_a_callee_gets_no_machine_code_and_its_callers_point_its_environment():
    x = np.linspace(-5, 5, 37).astype(np.float32)
    s = np.float32(1.5)
    want = (x * s + np.float32(0.25)).astype(np.float32)
    for modname in ("npu_emu.kernels._lean_env", "npu_emu_user.lean_env"):
        ns = {"__name__": modname, "np": np, "objmode": objmode}
        exec(compile(_ENV_PAIR, "<probe>", "exec"), ns)
        g = ns["g"] = njit(ns["g"])
        f = njit(ns["f"])
        assert f(x, s).view(np.uint32).tobytes() == want.view(np.uint32).tobytes(), modname
        own = modname.startswith("npu_emu.")
        (gres,) = g.overloads.values()
        in_engine = gres.library._final_module in gres.library.codegen._engine._ee._modules
        assert getattr(gres.library, lean_compile.CALLERS_ONLY, False) == own, modname
        assert in_engine == (not own), modname          # g runs as the copy linked into f's machine code
        # its cache entry: the IR callers link (no object code) for npu-emu's, numba's object code for a user's
        assert gres._reduce()[0][1] == ("bitcode" if own else "object"), modname
        assert lean_compile.python_callable(f.overloads[f.signatures[0]])


_PARFOR = """
def k(x):
    out = np.empty_like(x)
    s = np.float32(0)
    for i in prange(x.shape[0]):
        out[i] = np.float32(x[i] * np.float32(2))
        s += x[i]
    return out, s

def distinct(x):
    out = np.zeros(x.shape[0], np.int64)
    for i in prange(x.shape[0]):
        z = set()
        z.add(x[i])
        z.add(np.float32(1))
        out[i] = len(z)
    return out
"""


def _libraries(library, seen=None):
    seen = set() if seen is None else seen
    if id(library) not in seen:
        seen.add(id(library))
        yield library
        for sub in library._linking_libraries:
            yield from _libraries(sub, seen)


def test_a_parfor_body_of_an_own_kernel_gets_no_machine_code():
    x = np.array([0, 1, 2, 1.5, 1], np.float32)
    for modname in ("npu_emu.kernels._lean_parfor", "npu_emu_user.lean_parfor"):
        ns = {"__name__": modname, "np": np, "prange": prange}
        exec(compile(_PARFOR, "<probe>", "exec"), ns)
        k, distinct = njit(parallel=True)(ns["k"]), njit(parallel=True)(ns["distinct"])
        out, s = k(x)
        assert out.view(np.uint32).tobytes() == (x * np.float32(2)).view(np.uint32).tobytes(), modname
        assert s == np.float32(5.5), modname
        assert distinct(x).tolist() == [2, 1, 2, 2, 1], modname
        own = modname.startswith("npu_emu.")
        for f in (k, distinct):
            (cres,) = f.overloads.values()
            bodies = [lib for lib in _libraries(cres.library) if lib.name.startswith("__numba_parfor_gufunc_")]
            assert len(bodies) == 1, modname
            in_engine = bodies[0]._final_module in bodies[0].codegen._engine._ee._modules
            assert getattr(bodies[0], lean_compile.CALLERS_ONLY, False) == own, modname
            assert in_engine == (not own), modname
            # nor a Python wrapper, which nothing calls: a user's body keeps it (numba points its environment so)
            wrapper = [fn for fn in bodies[0]._final_module.functions
                       if fn.name.startswith("_ZN7cpython") and not fn.is_declaration]
            assert bool(wrapper) == (not own), modname


_IMPL_CALLER = """
def f(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = twice(x[i])
    return out
"""


def test_an_overload_impl_compiled_for_an_own_function_gets_no_cfunc_wrapper_and_no_machine_code():
    x = np.linspace(-5, 5, 37).astype(np.float32)
    for modname in ("npu_emu.kernels._lean_impl", "npu_emu_user.lean_impl"):
        def twice(v):
            pass

        def ol_twice_probe(v):              # another package's @overload: numba compiles its impl for each caller
            def impl(v):
                return v * np.float32(2) + np.float32(0.125)
            return impl

        overload(twice)(ol_twice_probe)
        ns = {"__name__": modname, "np": np, "twice": twice}
        exec(compile(_IMPL_CALLER, "<probe>", "exec"), ns)
        f = njit(ns["f"])
        want = (x * np.float32(2) + np.float32(0.125)).astype(np.float32)
        assert f(x).view(np.uint32).tobytes() == want.view(np.uint32).tobytes(), modname
        (cres,) = f.overloads.values()
        (lib,) = [lib for lib in _libraries(cres.library) if "ol_twice_probe.<locals>.impl" in lib.name]
        own = modname.startswith("npu_emu.")
        cfunc = [fn for fn in lib._final_module.functions if fn.name.startswith("cfunc.") and not fn.is_declaration]
        assert bool(cfunc) == (not own), modname
        assert getattr(lib, lean_compile.CALLERS_ONLY, False) == own, modname
        assert (lib._final_module in lib.codegen._engine._ee._modules) == (not own), modname


_CACHED = textwrap.dedent("""
    import importlib.util, sys
    import numpy as np
    import npu_emu.device.jit_options                      # installs the hooks, as every kernel module does
    from npu_emu.device import lean_compile
    spec = importlib.util.spec_from_file_location("npu_emu.kernels._lean_cached", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    x = np.linspace(-5, 5, 37).astype(np.float32)
    s = np.float32(1.5)
    if sys.argv[2] == "caller":
        y = mod.f(x, s)
    else:
        y = np.array([mod.g(v, s) for v in x], np.float32)
    gres = list(mod.g.overloads.values())
    print(y.view(np.uint32).sum(dtype=np.uint64), [lean_compile.python_callable(c) for c in gres],
          sum(mod.g.stats.cache_misses.values()), sum(mod.g.stats.cache_hits.values()))
""")


def test_a_cached_callee_gets_its_wrapper_when_a_later_process_calls_it(tmp_path):
    src = tmp_path / "lean_cached.py"
    src.write_text("import numpy as np\nfrom numba import njit\n" + _PAIR.replace("def ", "@njit(cache=True)\ndef "))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NPU_EMU_SHIPPED_KERNELS="0")

    def run(how, hooked=True):
        out = subprocess.run([sys.executable, "-c", _CACHED, str(src), how], capture_output=True, text=True,
                             env=dict(env, NPU_EMU_LEAN_COMPILE="1" if hooked else "0"), timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        bits, callable_, misses, hits = out.stdout.split()
        return int(bits), callable_, int(misses), int(hits)

    x = np.linspace(-5, 5, 37).astype(np.float32)
    want = int((x * np.float32(1.5) + np.float32(0.25)).astype(np.float32).view(np.uint32).sum(dtype=np.uint64))
    assert run("caller") == (want, "[False]", 1, 0)     # g compiled for f only, cached under a marked key
    # without the hook numba never sees that entry (it has no Python wrapper; calling it would crash)
    assert run("python", hooked=False) == (want, "[True]", 1, 0)
    assert run("python") == (want, "[True]", 0, 1)      # the entry numba saved, with its wrapper
    assert run("caller") == (want, "[]", 0, 0)          # f from the cache, g's code inside it
    (tmp_path / "cache").rename(tmp_path / "cache_1")
    assert run("caller") == (want, "[False]", 1, 0)
    assert run("python") == (want, "[True]", 1, 0)      # a Python call never loads the callers-only entry
    assert run("python") == (want, "[True]", 0, 1)
    assert run("caller", hooked=False) == (want, "[]", 0, 0)
