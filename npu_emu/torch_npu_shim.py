"""An emulated ``torch_npu`` module, so that a script doing ``import torch_npu`` runs unmodified on a CPU-only machine.

``install()`` registers npu-emu's ops with torch (``npu_emu.torch.register()``) and puts a module named
``torch_npu`` into ``sys.modules``: its op functions are the ``torch.ops.npu.<op>`` packets themselves (as in
torch_npu, which copies every ``torch.ops.npu`` op onto its module), its dtype constants are torch_npu's integers.
Nothing named ``torch_npu`` is ever written to disk or shipped: the module exists only while installed.

Ways to use it (docs/integrations/torch.md §2):

    npu-emu exec script.py [args]                      # the script runs as __main__
    python -m npu_emu.torch_npu_shim script.py [args]  # the same without the console script
    npu-emu exec -m pytest tests/                      # a module, like python -m
    pytest -p npu_emu.pytest_plugin                    # fixture ``torch_npu`` (npu_emu/pytest_plugin.py)

Importing this module imports neither torch nor npu_emu's kernels; ``install()`` does.
"""

import importlib.machinery
import os
import runpy
import sys
import traceback
import types

from npu_emu import dtype_table

NAME = "torch_npu"

# torch_npu's dtype constants are plain ints: each aclDataType code plus 256 (TORCH_NPU_ENUM_OFFSET in
# Ascend/pytorch torch_npu/csrc/custom_dtype/Init.h), exported from torch_npu._C._cd.DType onto the torch_npu module.
# The ints are what op-plugin's `int dst_type` / `int? scale_dtype` slots take; the offset keeps them apart from
# torch's ScalarType codes (bfloat16 = 15), which the same slots also accept.
DTYPES = {d.torch_npu: d.torch_npu_code for d in dtype_table.TABLE if d.torch_npu}

_MARK = "__npu_emu_shim__"   # on the module object: this copy of the file may run as __main__ (python -m)


def _npu_namespace():
    """``torch_npu.npu`` (also ``torch.npu``): says there is no NPU device, so that device-guarded code takes its
    CPU branch, and holds streams, events and device queries as CPU no-ops (npu_emu/torch/runtime.py,
    docs/integrations/torch.md §3.2)."""
    from npu_emu.torch import runtime

    npu = types.ModuleType(NAME + ".npu", "npu-emu: no NPU device; tensors stay on the CPU.")
    npu.__spec__ = importlib.machinery.ModuleSpec(npu.__name__, None)
    return runtime.populate(npu)


# Submodules vLLM-Ascend imports by name (``from torch_npu.op_plugin.atb._atb_ops import ...``): present as modules
# whose public names are NotEmulatedError stubs, so the import works and a use stops with a clear message.
_SUBMODULES = ("_C", "_C._distributed_c10d", "profiler", "atb", "multiprocessing", "multiprocessing.reductions",
               "op_plugin", "op_plugin.atb", "op_plugin.atb._atb_ops", "_inductor")


def _stub_module(qualname):
    from npu_emu.torch.runtime import not_emulated

    mod = types.ModuleType(qualname, f"npu-emu: {qualname} is not emulated yet (docs/integrations/torch.md §3.3)")
    mod.__spec__ = importlib.machinery.ModuleSpec(qualname, None, is_package=True)
    mod.__path__ = []

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        stub = not_emulated(f"{qualname}.{name}")
        setattr(mod, name, stub)
        return stub

    mod.__getattr__ = __getattr__
    return mod


def _format_enum():
    import enum

    return enum.IntEnum("Format", {"UNDEFINED": -1, "NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4,
                                   "NC1HWC0_C04": 12, "HWCN": 16, "NDHWC": 27, "FRACTAL_NZ": 29, "NCDHW": 30,
                                   "NDC1HWC0": 32, "FRACTAL_Z_3D": 33}, module=NAME)


def _tensor_npu(self, device=None, non_blocking=False, memory_format=None):
    """``Tensor.npu()``: the tensor itself, on the CPU, where npu-emu's kernels read it."""
    return self


def _module_npu(self, device=None):
    """``Module.npu()``: the module itself, its parameters left on the CPU."""
    return self


def build():
    """A new emulated ``torch_npu`` module (registers the ops with torch first; does not install it)."""
    import torch

    import npu_emu.torch as emu_torch

    emu_torch.register()
    ops = tuple(emu_torch.TORCH_NPU_OPS)
    mod = types.ModuleType(NAME, "npu-emu's emulation of torch_npu: torch.ops.npu ops on CPU tensors "
                                 "(docs/integrations/torch.md).")
    # a package spec with no search path: `import torch_npu.contrib` fails with "No module named ...", and
    # importlib.util.find_spec("torch_npu") (how libraries probe for torch_npu) finds this module
    mod.__spec__ = importlib.machinery.ModuleSpec(NAME, None, is_package=True)
    mod.__path__ = []
    for name in ops:
        setattr(mod, name, getattr(torch.ops.npu, name))
    for name, code in DTYPES.items():
        setattr(mod, name, code)
    mod.npu = _npu_namespace()
    from npu_emu.torch import coverage, formats
    from npu_emu.torch.runtime import not_emulated

    mod.npu_format_cast = formats.npu_format_cast
    mod.get_npu_format = formats.get_npu_format
    mod.Format = _format_enum()
    mod.__version__ = "0.0.0+npu_emu"
    subs = {}
    for sub in _SUBMODULES:
        subs[sub] = _stub_module(f"{NAME}.{sub}")
        parent, _, leaf = sub.rpartition(".")
        setattr(subs[parent] if parent else mod, leaf, subs[sub])
    mod.__npu_emu_submodules__ = subs
    # every other name vLLM-Ascend uses: present, raising NotEmulatedError when called
    for name, _status, _note in coverage.NAMES:
        if name not in mod.__dict__:
            setattr(mod, name, not_emulated(f"torch_npu.{name}"))
    mod.__all__ = list(ops)
    setattr(mod, _MARK, True)

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"module 'torch_npu' (npu-emu's emulation) has no attribute {name!r}: npu-emu emulates "
                             f"{', '.join(ops)}, npu_format_cast, torch_npu's dtype constants and torch_npu.npu, and "
                             f"stubs the other names vLLM-Ascend uses; see docs/integrations/torch.md §3.3")

    mod.__getattr__ = __getattr__
    return mod


def _rename_privateuse1():
    import torch

    if torch._C._get_privateuse1_backend_name() != "npu":
        torch.utils.rename_privateuse1_backend("npu")


def fill(stub):
    """Copy the emulated module's ops, dtype constants, format helpers and ``npu`` runtime names onto an existing
    ``torch_npu`` stub (a test suite's own module of MagicMocks), replacing its entries for them. Returns the names
    set. The stub stays the suite's: nothing is removed afterwards (docs/integrations/torch.md §4)."""
    mod = build()
    names = list(mod.__all__) + list(DTYPES) + ["npu_format_cast", "get_npu_format", "Format"]
    for name in names:
        setattr(stub, name, getattr(mod, name))
    npu = getattr(stub, "npu", None)
    if npu is not None:
        for name in ("Stream", "Event", "ExternalEvent", "current_stream", "default_stream", "set_stream", "stream",
                     "synchronize", "current_device", "set_device", "device_count", "is_available"):
            try:
                setattr(npu, name, getattr(mod.npu, name))
            except (AttributeError, TypeError):
                continue
            names.append(f"npu.{name}")
    return names


def is_shim(module):
    return getattr(module, _MARK, False) is True


def install(npu_device=False, soc=None):
    """Put the emulated ``torch_npu`` into ``sys.modules`` (idempotent) and return it.

    Raises RuntimeError when another ``torch_npu`` is already imported (a real one, or a test stub: the emulator
    does not replace it), and, from ``npu_emu.torch.register()``, when a real torch_npu is installed but not yet
    imported (with a real torch_npu, import it and then ``npu_emu.torch``, which adds CPU kernels to its ops).

    ``npu_device=True``: also rename torch's PrivateUse1 backend to "npu", so that ``torch.device("npu")`` parses
    (vLLM's ``VllmConfig()`` asks for it). Irreversible for the process, and tensors are not placed there: creating
    one on "npu" fails in torch with "Could not run ... 'PrivateUse1' backend" (docs/integrations/torch.md §3.2).
    ``soc``: the SoC every op emulates (``npu_emu.torch.set_soc``; NPU_EMU_SOC is read at import).
    """
    current = sys.modules.get(NAME)
    if current is not None:
        if is_shim(current):
            return current
        where = getattr(current, "__file__", None) or repr(current)
        raise RuntimeError(f"a torch_npu module is already imported ({where}); "
                           "npu-emu does not replace it. With a real torch_npu, `import npu_emu.torch` adds CPU "
                           "kernels to its ops instead; a test stub must be removed before installing the emulator")
    import torch

    mod = build()
    if soc is not None:
        import npu_emu.torch as emu_torch

        emu_torch.set_soc(soc)
    undo = []
    sys.modules[NAME] = mod
    sys.modules[NAME + ".npu"] = mod.npu
    undo += [(sys.modules, NAME), (sys.modules, NAME + ".npu")]
    if "torch.npu" not in sys.modules:          # torch imports the device module of a renamed PrivateUse1 by name
        sys.modules["torch.npu"] = mod.npu
        undo.append((sys.modules, "torch.npu"))
    for sub, submod in mod.__npu_emu_submodules__.items():
        if f"{NAME}.{sub}" not in sys.modules:
            sys.modules[f"{NAME}.{sub}"] = submod
            undo.append((sys.modules, f"{NAME}.{sub}"))
    if npu_device:
        _rename_privateuse1()
    # torch_npu adds these on import (torch.npu, Tensor.npu, Module.npu); only absent ones are added, and removed
    # again by uninstall()
    for owner, attr, value in ((torch, "npu", mod.npu), (torch.Tensor, "npu", _tensor_npu),
                               (torch.nn.Module, "npu", _module_npu)):
        if not hasattr(owner, attr):
            setattr(owner, attr, value)
            undo.append((owner, attr))
    # Tensor.record_stream(s) with an emulated Stream: nothing to record (CPU memory is not freed early); other
    # streams go to torch's own method. Restored by uninstall().
    original = torch.Tensor.record_stream
    from npu_emu.torch.runtime import Stream

    def record_stream(self, stream):
        if isinstance(stream, Stream):
            return None
        return original(self, stream)

    torch.Tensor.record_stream = record_stream
    undo.append(("restore", (torch.Tensor, "record_stream", original)))
    mod.__npu_emu_undo__ = undo
    return mod


def uninstall():
    """Remove the emulated ``torch_npu`` and what ``install()`` added to torch. A no-op when it is not installed."""
    mod = sys.modules.get(NAME)
    if mod is None or not is_shim(mod):
        return
    for owner, attr in reversed(mod.__dict__.pop("__npu_emu_undo__", [])):
        if owner == "restore":
            setattr(*attr)
        elif isinstance(owner, dict):
            owner.pop(attr, None)
        else:
            try:
                delattr(owner, attr)
            except AttributeError:
                pass


# ---------------------------------------------------------------------------------------------------------------
# running a script or a module with the emulated torch_npu
# ---------------------------------------------------------------------------------------------------------------

_OWN_FILE = os.path.abspath(__file__)


def _exit_status(exc):
    """The process exit status `python script.py` gives for a SystemExit (a message goes to stderr, status 1)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_script_error(exc):
    """The traceback as `python script.py` prints it: from the script's frames on, without runpy's and ours."""
    tb = exc.__traceback__
    while tb is not None and (tb.tb_frame.f_globals is vars(runpy)
                              or os.path.abspath(tb.tb_frame.f_code.co_filename) == _OWN_FILE):
        tb = tb.tb_next
    # no frame left: runpy itself failed before the target ran (python -m no_such_module prints one line as well)
    traceback.print_exception(type(exc), exc, tb)
    sys.stderr.flush()


def _run(target, args, module, soc=None):
    install(soc=soc)
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    try:
        if module:
            sys.argv = [target, *args]           # run_module(alter_sys=True) puts the module's file in argv[0]
            sys.path[0:1] = [os.getcwd()]        # python -m: the working directory comes first
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            # python script.py: the script's folder comes first (replacing the launcher's own entry)
            sys.path[0:1] = [os.path.dirname(os.path.abspath(target))]
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        return _exit_status(e)
    except Exception as e:  # noqa: BLE001 - any error of the script is the script's, reported as python does
        _print_script_error(e)
        return 1
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        uninstall()
    return 0


def run_script(path, args=(), soc=None):
    """Run the file ``path`` as ``__main__`` with ``sys.argv = [path, *args]`` and the emulated torch_npu installed.
    Returns the exit status ``python path args...`` would give (0, the script's ``sys.exit`` code, or 1 after
    printing the traceback of an uncaught exception). A path that does not exist raises FileNotFoundError."""
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "no such script", path)
    return _run(path, list(args), module=False, soc=soc)


def run_module(name, args=(), soc=None):
    """Run the module ``name`` as ``__main__`` (like ``python -m name args...``) with the emulated torch_npu."""
    return _run(name, list(args), module=True, soc=soc)


USAGE = """\
usage: python -m npu_emu.torch_npu_shim script.py [args ...]
       python -m npu_emu.torch_npu_shim -m module [args ...]

Runs a script (or module) that imports torch_npu on the CPU: `import torch_npu` gets npu-emu's emulation, whose
ops are torch.ops.npu.* with CPU kernels and the device's bits. The same as `npu-emu exec`.
"""


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    try:
        if argv[0] == "-m":
            if len(argv) < 2:
                print("npu_emu.torch_npu_shim: -m needs a module name, e.g. -m pytest", file=sys.stderr)
                return 2
            return run_module(argv[1], argv[2:])
        return run_script(argv[0], argv[1:])
    except FileNotFoundError as e:
        print(f"npu_emu.torch_npu_shim: {e.filename} does not exist; check the script path", file=sys.stderr)
        return 2
    except RuntimeError as e:    # install() refused (a torch_npu is already there)
        print(f"npu_emu.torch_npu_shim: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
