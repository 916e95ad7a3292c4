"""torch.library registration of npu-emu's ops: ``torch.ops.npu.*`` (op-plugin's schemas) and ``torch.ops.npu_emu.*``
on CPU tensors, eager, under torch.compile and torch.export.

Opt-in: importing this module calls :func:`register`; ``import npu_emu`` never imports torch. Each op's declaration
(kernels/<op>/op.py: TorchOp) names its schema, its CPU kernel (which calls npu_emu.ops) and its fake kernel.

Coexistence with a real torch_npu, whose C++ registration defines ``npu::`` when it is imported:

- torch_npu already imported (the op exists in ``torch.ops.npu``): only a CPU kernel is added; the op keeps
  torch_npu's schema and its Meta kernels. An op this torch_npu lacks is defined as below.
- torch_npu installed but not imported: :func:`register` raises RuntimeError and defines nothing. Defining
  ``npu::`` first would make torch_npu's own ``TORCH_LIBRARY(npu, ...)`` abort the process at its later import.
- no torch_npu: the ops are defined in a FRAGMENT library; npu-emu never holds the ``npu`` DEF library.
"""

import importlib.util
import sys

import torch

from npu_emu.frontend import registry, torch_args
from npu_emu.frontend.torch_args import dtype_arg, scalar_type_code, scalar_types
from npu_emu.torch.schemas import (
    NPU_EMU_OPS,
    NPU_EMU_SCHEMAS,
    OP_PLUGIN_VERSION,
    TORCH_NPU_OPS,
    TORCH_NPU_SCHEMAS,
)

__all__ = ["NPU_EMU_OPS", "OP_PLUGIN_VERSION", "STATUS", "TORCH_NPU_OPS", "dtype_arg", "register", "set_soc",
           "scalar_type_code", "scalar_types"]

# name -> "defined" (npu-emu defined npu::<name>) or "kernel" (the op was there: npu-emu added its CPU kernel)
STATUS = {}
_LIBS = []           # a Library deregisters what it holds when collected: keep them for the process' lifetime


def _npu_has(name):
    try:
        getattr(torch.ops.npu, name)
    except AttributeError:
        return False
    return True


def _refuse_if_torch_npu_pending(missing):
    if not missing or "torch_npu" in sys.modules:
        return
    try:
        spec = importlib.util.find_spec("torch_npu")
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = spec.origin or (list(spec.submodule_search_locations or []) or ["?"])[0]
        raise RuntimeError(
            f"npu_emu.torch.register(): torch_npu is installed ({where}) but not imported. Registering "
            f"torch.ops.npu now would make torch_npu abort the process when it is imported later (its C++ library "
            f"defines the same npu:: names). Import torch_npu first (npu-emu then adds CPU kernels to its ops), or "
            f"run where torch_npu is not on sys.path; nothing was registered.")


def register():
    """Register the ops (idempotent). Returns STATUS: {npu op name: "defined" | "kernel"}."""
    if STATUS:
        return STATUS
    missing = [name for name in TORCH_NPU_OPS if not _npu_has(name)]
    _refuse_if_torch_npu_pending(missing)
    scalar_types()                       # the dtype-code table, built once outside any tracing mode
    npu = torch.library.Library("npu", "FRAGMENT")
    emu = torch.library.Library("npu_emu", "FRAGMENT")
    _LIBS.extend((npu, emu))
    status = {}
    for name in TORCH_NPU_OPS:
        if name in missing:
            _define(npu, name, TORCH_NPU_SCHEMAS[name])
            status[name] = "defined"
        else:
            torch.library.register_kernel(f"npu::{name}", "cpu", _kernel(name), lib=npu)
            status[name] = "kernel"
    for name in NPU_EMU_OPS:
        _define(emu, name, NPU_EMU_SCHEMAS[name])
    STATUS.update(status)
    return STATUS


def set_soc(soc):
    """The SoC every registered op emulates from now on (None: each op's own default; NPU_EMU_SOC sets it at
    import). A real machine is one SoC: a script that quantises to MXFP8 and multiplies with MX scales needs
    "ascend950pr" for both."""
    from npu_emu.device import platforms

    if soc is not None:
        platforms.get(soc)               # an unknown key raises with the list of known ones
    torch_args.SOC = soc


def _binding(name):
    for t, _ in registry.torch_ops():
        if t.name == name:
            return t
    raise KeyError(name)


def _kernel(name):
    return registry.load(_binding(name).kernel)


def _define(lib, name, schema):
    lib.define(schema)
    qualname = f"{lib.ns}::{name}"
    torch.library.register_kernel(qualname, "cpu", _kernel(name), lib=lib)
    torch.library.register_fake(qualname, registry.load(_binding(name).fake), lib=lib)


register()
