"""Shared front-end plumbing: input normalisation, dtype resolution and the aclnn executor (``core``), CANN's .bin
files (``binfile``), and the op registry every front end is built from (``registry``). Importing this package
imports nothing: ``registry`` stays free of numpy so that ``import npu_emu.ops`` is cheap."""


def __getattr__(name):
    # npu_emu.frontend.set_memory_limit & co., as documented before the plumbing moved into npu_emu.frontend.core
    # (resolved on use, so that importing the package still imports nothing)
    if name.startswith("__") or name in ("core", "registry", "binfile", "cases", "torch_args"):
        raise AttributeError(name)         # a submodule not imported yet: the import system imports it
    import importlib

    core = importlib.import_module("npu_emu.frontend.core")
    try:
        return getattr(core, name)
    except AttributeError:
        raise AttributeError(f"module 'npu_emu.frontend' has no attribute {name!r}") from None
