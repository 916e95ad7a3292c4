"""CANN parameter checks of SignBitsUnpack / SignBitsPack (docs/ops/sign_bits.md §2.3, §3.3, §4).

aclnn order (first failure wins): null -> dtype/platform -> format -> value -> shape. numpy arrays are always ND,
so the format step cannot fail here. The torch_npu checks (op-plugin) are a different, smaller set used by
npu_emu.ops.
"""

import numpy as np

from npu_emu.device import platforms
from npu_emu.errors import (
    ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    AclnnError,
)
from npu_emu.frontend.core import resolve_dtype

API_VARIANTS = ("experimental", "math")


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def soc_family(soc):
    """'910b' (DAV_2201 kernels of hicann/ops-math experimental/), '950' (arch35 kernels) or the short version."""
    plat = platforms.get(soc)
    arch = plat.npu_arch
    if arch == 2201:
        return "910b"
    if arch == 3510:
        return "950"
    return plat.name


def resolve_api_variant(api_variant, soc):
    """The experimental op_api exists only for DAV_2201; elsewhere the math/ op_api is the one installed."""
    if api_variant is None:
        return "experimental" if soc_family(soc) == "910b" else "math"
    if api_variant not in API_VARIANTS:
        raise _bad(f"api_variant={api_variant!r} is not valid; use one of {API_VARIANTS}")
    return api_variant


def _platform_ok(op, soc, api_variant):
    plat = platforms.get(soc)
    short = plat.soc_version
    if op == "unpack":
        ok = plat.npu_arch == 2201 if api_variant == "experimental" else \
            short in ("Ascend910B", "Ascend310P", "Ascend950")
        if not ok:
            raise _bad(f"SignBitsUnpack is not supported on this device ({plat.name}, api_variant={api_variant!r}).")
    else:
        allowed = ("Ascend910B", "Ascend310P") + (("Ascend950",) if api_variant == "math" else ())
        if short not in allowed:
            raise _bad(f"SignBitsPack is unsupported by the current SOC version [{plat.name}] "
                       f"(api_variant={api_variant!r}).")


def require_kernel(op, soc):
    """After the checks, CANN looks for a kernel binary; npu-emu emulates the 910B and 950 ones."""
    if soc_family(soc) not in ("910b", "950"):
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                         f"no SignBits{op.capitalize()} kernel for {platforms.get(soc).name}: npu-emu emulates the "
                         f"ascend910b*/ascend910_93 and ascend950* kernels; pass one of those as soc=")


def _dim0(a):
    return a.shape[0] if a.ndim else 1


def check_unpack_aclnn(self, size, dtype, out, *, soc, api_variant):
    """aclnnSignBitsUnpackGetWorkspaceSize CheckParams. Returns the output dtype name."""
    if self is None or out is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{'self' if self is None else 'out'} is a null tensor")
    _platform_ok("unpack", soc, api_variant)
    if self.dtype != np.uint8:
        raise _bad(f"self dtype must be UINT8, got {self.dtype}; pass the packed sign bytes as uint8")
    out_name = resolve_dtype(out.dtype, "out dtype")
    if out_name not in ("float32", "float16"):
        raise _bad(f"out dtype must be FLOAT or FLOAT16, got {out_name}")
    want = resolve_dtype(dtype, "dtype")
    if want != out_name:
        raise _bad(f"out dtype {out_name} does not match dtype {want}; they must be the same")
    if size <= 0:
        raise _bad(f"Size value must bigger than zero. (size={size})")
    if (_dim0(self) * 8) % size != 0:
        raise _bad(f"The number of elements in self * 8 cannot be divided by size. "
                   f"({_dim0(self)} * 8 = {_dim0(self) * 8}, size = {size})")
    if out.ndim < 1 or _dim0(out) != size:
        raise _bad("The value of the first dimension of 'out' is incorrect and should be equal to size. "
                   f"(out.shape = {out.shape}, size = {size})")
    if self.ndim != 1:
        raise _bad(f"Self dims {self.ndim} should be 1.")
    if out.ndim != 2:
        raise _bad(f"Out dims {out.ndim} should be 2.")
    n_out = self.shape[0] * 8
    if out.size != n_out:
        raise _bad(f"out has shape {out.shape} but the result has {size} x {n_out // size} elements "
                   "(emulator-added check: CANN leaves out.dim(1) unchecked)")
    return out_name


def check_pack_aclnn(self, size, out, *, soc, api_variant):
    """aclnnSignBitsPackGetWorkspaceSize CheckParams (A = experimental, B = math). Returns the input dtype name."""
    if self is None or out is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{'self' if self is None else 'out'} is a null tensor")
    _platform_ok("pack", soc, api_variant)
    in_name = resolve_dtype(self.dtype, "self dtype")
    if in_name not in ("float32", "float16"):
        raise _bad(f"self dtype must be FLOAT or FLOAT16, got {in_name}")
    if out.dtype != np.uint8:
        raise _bad(f"out dtype must be UINT8, got {out.dtype}")
    packed = -(-_dim0(self) // 8)
    if size <= 0:
        raise _bad("size value must bigger zero." if api_variant == "experimental"
                   else "size value must bigger than zero.")
    if packed % size != 0:
        raise _bad("all must need be divisible by size" if api_variant == "experimental" else
                   f"The number of packed bytes {packed} cannot be divided by size {size}.")
    if api_variant == "math" and (out.ndim < 1 or _dim0(out) != size):
        raise _bad("The value of the first dimension of 'out' is incorrect and should be equal to size.")
    if self.ndim != 1:
        raise _bad(f"Self dims {self.ndim} should be 1.")
    if out.ndim != 2:
        raise _bad(f"Out dims {out.ndim} should be 2.")
    if out.size != packed or _dim0(out) != size:
        raise _bad(f"out has shape {out.shape} but the result has shape ({size}, {packed // size}) "
                   "(emulator-added check: the ViewCopy into a mismatched out is unspecified)")
    return in_name


# torch_npu (op-plugin aclops) checks for npu_emu.ops ------------------------------------------------------------

def check_unpack_torch(x, size, dtype):
    if x.ndim != 1:
        raise _bad(f"input value should be a 1-dimensional tensor (got shape {x.shape})")
    if x.dtype != np.uint8:
        raise _bad(f"sign_bits_unpack input only supports torch.uint8 (got {x.dtype})")
    if size <= 0:
        raise _bad(f"The argument 'size' is not valid because it is less than or equal to zero (size={size})")
    if (x.size * 8) % size != 0:
        raise _bad(f"input value length*8 must be multiple of size ({x.size}*8 = {x.size * 8}, size={size})")
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool) and int(dtype) in (0, 1):
        return "float32" if int(dtype) == 0 else "float16"   # IR codes: 0 = DT_FLOAT, 1 = DT_FLOAT16
    name = resolve_dtype(dtype, "dtype")
    if name not in ("float32", "float16"):
        raise _bad(f"The argument 'dtype'  must be torch.float32 or torch.float16 (got {name})")
    return name


def check_pack_torch(x, size):
    if x.ndim != 1:
        raise _bad(f"input must be one-dimensional (got shape {x.shape})")
    name = resolve_dtype(x.dtype, "input dtype")
    if name not in ("float32", "float16"):
        raise _bad(f"all only supports torch.float16 and torch.float32 dtypes (got {name})")
    ysize = (x.size + 7) // 8
    if size == 0 or ysize % size != 0:
        raise _bad(f"all must be divisible by size (ceil({x.size}/8) = {ysize}, size={size})")
    if size < 0:
        raise _bad(f"size={size} must be positive (torch_npu fails at allocation)")
    return name
