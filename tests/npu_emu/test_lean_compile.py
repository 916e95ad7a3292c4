"""npu_emu/device/lean_compile.py: npu-emu's functions compile without the cfunc wrapper and cache without the
annotated source; a user's functions keep both.

The same function is compiled as if defined in a module of the npu_emu package and in a look-alike user module,
with the hook in place and without it. The wrapper is looked up by name in the function's library; the cache
entry's annotation is what numba's reduction of the compile result would pickle. Results are compared bit for bit.
"""

import importlib

import numpy as np
from numba import njit

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
