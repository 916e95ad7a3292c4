"""npu-emu: bit-exact CPU emulation of Ascend C (CANN) kernels.

Submodules are imported lazily so that ``import npu_emu`` stays cheap (no numba compile at import).
"""

from npu_emu.errors import AclnnError

__version__ = "0.1.0"
__all__ = ["AclnnError", "__version__"]

_LAZY = {"dtypes", "ascendc", "ops", "aclnn", "kernels", "device", "frontend", "cli"}
# the device model's modules, reachable as npu_emu.<name> attributes as before they moved into npu_emu.device
_DEVICE = {"platforms", "launch"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"npu_emu.{name}")
    if name in _DEVICE:
        import importlib

        return importlib.import_module(f"npu_emu.device.{name}")
    raise AttributeError(f"module 'npu_emu' has no attribute {name!r}")
