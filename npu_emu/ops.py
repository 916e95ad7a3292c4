"""torch_npu-compatible functions (``import npu_emu.ops as torch_npu``-style drop-in).

Built from the op registry (npu_emu/frontend/registry.py): every op folder's declaration, and any other package's
through the ``npu_emu.ops`` entry-point group, names its functions here. A name's module is imported on its first
use (PEP 562 ``__getattr__``), so ``import npu_emu.ops`` imports no kernel, no numba and no ml_dtypes, and a script
that uses one op loads only that op's family.
"""

from npu_emu import dtype_table as _dtype_table
from npu_emu.frontend import registry as _registry

# torch_npu's own dtype constants (aclDataType + 256), so `torch_npu.float4_e2m1fn_x2` etc. in a swapped-in script
# keep their values (every dst_type argument resolves them through the dtype table)
_CONSTANTS = {d.torch_npu: d.torch_npu_code for d in _dtype_table.TABLE if d.codec and d.torch_npu and d.bits != 6}
globals().update(_CONSTANTS)


def _index():
    return _registry.index("ops")


def __getattr__(name):
    if name == "__all__":         # computed from the registry on first use (``from npu_emu.ops import *``)
        value = sorted([*_CONSTANTS, *_index()])
        globals()[name] = value
        return value
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    ref = _index().get(name)
    if ref is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _registry.load(ref)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(_CONSTANTS) | set(_index()))
