"""npu-emu: bit-exact CPU emulation of Ascend C (CANN) kernels.

Submodules are imported lazily so that ``import npu_emu`` stays cheap (no numba compile at import).
"""

from npu_emu.errors import AclnnError

__version__ = "0.1.0"
__all__ = ["AclnnError", "__version__"]

_LAZY = {"dtypes", "platforms", "ascendc", "ops", "aclnn", "kernels", "goldens", "launch", "cli"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"npu_emu.{name}")
    raise AttributeError(f"module 'npu_emu' has no attribute {name!r}")
