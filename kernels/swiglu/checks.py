"""SwiGlu parameter checks with CANN's statuses (docs/ops/swiglu.md §5).

aclnnSwiGlu is generated from the op definition (op-plugin yaml ``gen_opapi``), so its checks are the op's:
hicann/ops-nn activation/swi_glu/op_host/swi_glu_def.cpp (dtypes float32 / float16 / bfloat16, ND; SoCs 910B,
910_93, 950, and 310P / Kirin without bf16), swi_glu_infershape.cpp (dim in range, x.shape[dim] even, y = x with
that dim halved) and swi_glu_tiling.cpp (same two conditions on the flattened shape). The torch_npu front end
(op-plugin ``npu_swiglu(Tensor self, int dim=-1)``) runs the same checks.
"""

import numpy as np

from npu_emu.errors import ACLNN_ERR_INNER_FIND_KERNEL_ERROR, ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import dtype_name_of

DTYPES = ("float32", "float16", "bfloat16")
KERNEL_SOCS = ("ascend910b", "ascend910_93")


def _dtype(arr, name):
    try:
        dn = dtype_name_of(arr)
    except AclnnError:
        dn = str(arr.dtype)
    if dn not in DTYPES:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: {name} has dtype {dn}; pass float32, float16 or "
                                                  f"bfloat16")
    return dn


def check_x(x, dim):
    """-> (dtype name, normalised dim, output shape)."""
    dn = _dtype(x, "x")
    if x.ndim < 1:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "SwiGlu: x is 0-d; pass a tensor with at least one dimension")
    nd = x.ndim
    if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: dim must be an int, not {type(dim).__name__}")
    if dim < -nd or dim >= nd:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: dim={dim} is out of range for a {nd}-D x; pass a dim in "
                                                  f"[{-nd}, {nd - 1}]")
    d = int(dim) % nd
    if x.shape[d] % 2 != 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: x.shape[{d}] = {x.shape[d]} is odd (x shape "
                                                  f"{tuple(x.shape)}); the split dim must have an even length")
    out_shape = tuple(x.shape[:d]) + (x.shape[d] // 2,) + tuple(x.shape[d + 1:])
    return dn, d, out_shape


def check_out(out, dn, out_shape):
    on = _dtype(out, "out")
    if on != dn:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: out has dtype {on} but x has {dn}; pass an out of "
                                                  f"x's dtype")
    if tuple(out.shape) != tuple(out_shape):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: out has shape {tuple(out.shape)}; pass shape "
                                                  f"{tuple(out_shape)} (x with dim halved)")


def require_kernel(soc, dn):
    """A kernel binary exists for the 910B / 910_93 (the emulated kernel); other SoCs -> 561003."""
    s = str(soc).lower()
    if not any(s.startswith(k) for k in KERNEL_SOCS):
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR, f"SwiGlu: soc={soc!r} is not emulated (the 950's "
                                                            f"regbase kernel and the 310P / Kirin kernels are not "
                                                            f"reproduced); use an ascend910b* or ascend910_93 soc")
