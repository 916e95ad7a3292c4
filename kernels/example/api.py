"""Front end of the example op: check, tile, describe the access pattern, allocate, launch."""

import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import Trace
from npu_emu.kernels.example.kernel import add_one_access, add_one_kernel
from npu_emu.kernels.example.tiling import add_one_tiling
from npu_emu.device.launch import launch
from npu_emu.device.read_only import read_only


def add_one(x, *, soc="ascend910b2", core_num=None, ub_size=None, validate=True, trace=False):
    """y = x + 1 for a float32 array of any shape; ``trace=True`` -> (y, Trace)."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"add_one: x has dtype {x.dtype}; pass float32")
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    if x.size == 0:                                       # aclnn empty-tensor shortcut: no kernel
        return (y, Trace(op="AddOne", soc=soc)) if trace else y
    tr = add_one_tiling(x.size, soc=soc, core_num=core_num, ub_size=ub_size)
    access = add_one_access(tr.tiling, tr.block_dim, x.size)
    report = launch(add_one_kernel, tr.block_dim, tr.tiling, read_only(x.reshape(-1)), y.reshape(-1),
                    ub_size=tr.ub_size, access=access, validate=validate)
    if not trace:
        return y
    return y, Trace(op="AddOne", soc=tr.soc, tiling_data=tr.tiling.fields(), tiling_data_bytes=tr.tiling.to_bytes(),
                    tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                    ub_bytes_per_core=tr.ub_size, gm_overrun=list(report.overruns) if report is not None else [],
                    notes=list(tr.notes))
