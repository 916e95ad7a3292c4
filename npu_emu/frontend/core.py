"""Shared front-end plumbing: input normalisation, dtype names, the aclnn executor, traces, memory guard.

Every public entry (npu_emu.ops, npu_emu.aclnn, the CLI) goes through these so that bad input is rejected with
an AclnnError before any numba code runs (docs/conventions.md §4).
"""

import os
import sys
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from npu_emu import dtype_table

from npu_emu.errors import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    ACLNN_SUCCESS,
    AclnnError,
)

# ---------------------------------------------------------------------------------------------------------------
# dtype names
# ---------------------------------------------------------------------------------------------------------------

# Names, codes and aliases come from the one dtype table (npu_emu.dtype_table, docs/conventions.md §5).
def _storage_of(spec):
    if spec.startswith("ml_dtypes."):
        return np.dtype(getattr(ml_dtypes, spec[len("ml_dtypes."):]))
    return np.dtype(spec)


# aclDataType value -> name, for the dtypes npu-emu holds in arrays
ACL_DTYPES = {d.acl: d.name for d in dtype_table.TABLE if d.storage}
ACL_CODES = {v: k for k, v in ACL_DTYPES.items()}

# Storage dtype of each name on the numpy side: ml_dtypes where it has the type, else the uint8 bit view that
# torch_npu also uses (HiF8, E8M0, packed FP4 / FP6, int4).
_STORAGE = {d.name: _storage_of(d.storage) for d in dtype_table.TABLE if d.storage}

_NUMPY_NAMES = {
    np.dtype(ml_dtypes.float8_e8m0fnu): "float8_e8m0",
    np.dtype(ml_dtypes.float4_e2m1fn): "float4_e2m1",
    np.dtype(ml_dtypes.int4): "int4",
}


def _torch_dtype_name(d):
    s = str(d)
    if not s.startswith("torch."):
        return None
    return dtype_table.canonical(s) or s[len("torch."):]


# numpy dtypes and names -> canonical names, filled as they are met: str() of a numpy dtype and the alias lookups
# cost microseconds, several times per op call. Only names that resolve are kept, and at most _RESOLVED_MAX.
_RESOLVED = {}
_RESOLVED_MAX = 1024


def resolve_dtype(d, what="dtype"):
    """Canonical dtype name for a numpy/ml_dtypes dtype, a torch dtype, an aclDataType int or a name."""
    t = type(d)
    if t is str or t is type or isinstance(d, np.dtype):         # type: np.float32, ml_dtypes.bfloat16, ...
        name = _RESOLVED.get((t, d))
        if name is None:
            name = _resolve_dtype(d, what)
            if len(_RESOLVED) < _RESOLVED_MAX:
                _RESOLVED[(t, d)] = name
        return name
    return _resolve_dtype(d, what)


def _resolve_dtype(d, what):
    if d is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{what} is None; pass a dtype")
    if isinstance(d, (bool, np.bool_)):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}={d!r} is not a dtype")
    if isinstance(d, (int, np.integer)):
        if int(d) in ACL_DTYPES:
            return ACL_DTYPES[int(d)]
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{what}={int(d)} is not an aclDataType value this emulator knows; "
                         f"use one of {sorted(ACL_DTYPES)} or a name such as 'float16'")
    if isinstance(d, str):
        key = dtype_table.canonical(d)
        if key in _STORAGE:
            return key
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{what}={d!r} is not a known dtype name; use one of {sorted(_STORAGE)}")
    name = _torch_dtype_name(d)
    if name is not None:
        return resolve_dtype(name, what)
    try:
        nd = np.dtype(d)
    except TypeError:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}={d!r} is not a dtype") from None
    if nd in _NUMPY_NAMES:
        return _NUMPY_NAMES[nd]
    if nd.name in _STORAGE and _STORAGE[nd.name] == nd:      # a plain numpy / ml_dtypes type is its own name
        return nd.name
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}={nd} is not supported by npu-emu")


# torch / torch_npu dtype codes, as torch_npu's `dst_type` arguments take them. They are NOT aclDataType values
# (docs/conventions.md §5): 23/24 are torch's float8_e5m2/e4m3fn, 285-297 torch_npu's own (aclDataType + 256:
# torch_npu.hifloat8 = 290, float8_e8m0fnu = 293, float4_e2m1fn_x2 = 296, ...; 291/292 e5m2/e4m3fn, accepted by the
# meta functions, docs/ops/mx_quant.md §7).
TORCH_NPU_DTYPES = dict(sorted(dtype_table.TORCH_NPU_CODES.items()))


def resolve_torch_npu_dtype(d, what="dst_type"):
    """Canonical name of a torch_npu-style dtype argument: a torch / torch_npu int code, a torch dtype or a name."""
    if isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
        if int(d) in TORCH_NPU_DTYPES:
            return TORCH_NPU_DTYPES[int(d)]
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{what}={int(d)} is not a torch_npu dtype code; use one of "
                         f"{ {k: v for k, v in TORCH_NPU_DTYPES.items()} }, a torch dtype or a name "
                         f"(aclDataType values belong to the aclnn layer)")
    return resolve_dtype(d, what)


def storage_dtype(name):
    """numpy dtype used to hold values of the canonical dtype ``name``."""
    return _STORAGE[resolve_dtype(name)]


def dtype_name_of(arr):
    """Canonical name of an array's own dtype (uint8 stays uint8: relabel with an explicit dtype argument)."""
    return resolve_dtype(arr.dtype)


def acl_code(name):
    return ACL_CODES[resolve_dtype(name)]


# ---------------------------------------------------------------------------------------------------------------
# arrays in and out (numpy, ml_dtypes, torch CPU tensors)
# ---------------------------------------------------------------------------------------------------------------

def is_torch_tensor(x):
    """True for a torch.Tensor (or subclass) without importing torch: no tensor can exist before torch is."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


# torch dtypes numpy cannot hold, carried through as bit views: str(torch dtype) -> (bits, numpy view dtype).
# torch_npu hands FP4 over packed two per byte (float4_e2m1fn_x2), which npu-emu keeps as uint8.
_TORCH_BITS = {
    "torch.bfloat16": (np.uint16, ml_dtypes.bfloat16),
    "torch.float8_e4m3fn": (np.uint8, ml_dtypes.float8_e4m3fn),
    "torch.float8_e5m2": (np.uint8, ml_dtypes.float8_e5m2),
    "torch.float8_e8m0fnu": (np.uint8, ml_dtypes.float8_e8m0fnu),
    "torch.float8_e4m3fnuz": (np.uint8, ml_dtypes.float8_e4m3fnuz),
    "torch.float8_e5m2fnuz": (np.uint8, ml_dtypes.float8_e5m2fnuz),
    "torch.float4_e2m1fn_x2": (np.uint8, np.uint8),
}


@dataclass
class Origin:
    """How an argument arrived, so the result goes back the same way (torch in -> torch out)."""

    torch: bool = False


def _torch_to_numpy(x, name):
    """A numpy array sharing the tensor's memory when it is C-contiguous (else one contiguous copy)."""
    import torch  # already imported by the caller's process: x is a torch tensor

    t = x.detach()
    if t.device.type != "cpu":
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} is on device '{t.device}'; npu-emu runs on the CPU: pass {name}.cpu()")
    if t.layout != torch.strided:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has layout {t.layout}; pass a dense tensor ({name}.to_dense())")
    # aclnn's Contiguous step; also folds a pending conj/neg bit, which .numpy() refuses
    t = t.resolve_conj().resolve_neg().contiguous()
    key = str(t.dtype)
    try:
        if key in _TORCH_BITS:
            bits, view = _TORCH_BITS[key]
            itype = torch.uint8 if np.dtype(bits).itemsize == 1 else torch.int16
            return t.view(itype).numpy().view(bits).view(view)
        return t.numpy()
    except (TypeError, RuntimeError):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has torch dtype {t.dtype}, which npu-emu cannot read; pass the raw bits as a "
                         f"uint8/int16/int32 tensor together with the op's dtype argument") from None


def as_array(x, name, *, origin=None):
    """A C-contiguous numpy array for ``x``; None -> 161001 (aclnn's null check).

    Non-contiguous inputs are copied, as the aclnn layer's Contiguous step does; the caller's data is never
    modified (results are always written to fresh arrays first). A contiguous torch CPU tensor is not copied:
    the returned array shares its memory (bfloat16 / float8 as ml_dtypes views of the same bytes).
    """
    if x is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} is None (a null tensor in aclnn); pass an array")
    if is_torch_tensor(x):
        if origin is not None:
            origin.torch = True
        return _torch_to_numpy(x, name)
    if isinstance(x, (np.ndarray, list, tuple, int, float, np.generic)):
        a = np.asarray(x)
        if a.flags.c_contiguous:
            return a
        check_memory(a.nbytes, f"the contiguous copy of {name} (shape {a.shape})")   # a broadcast view is free
        return a.copy(order="C")        # (np.ascontiguousarray would turn a 0-d array into shape (1,))
    raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                     f"{name} must be a numpy array or a torch CPU tensor, not {type(x).__name__}")


_TORCH_DTYPE_FOR = []


def _torch_dtype_for(nd, torch):
    """(numpy bits dtype, torch dtype) for numpy dtypes torch.from_numpy cannot take, else None."""
    if not _TORCH_DTYPE_FOR:                 # built once, after torch is imported (every torch output asks)
        _TORCH_DTYPE_FOR.append(_torch_dtype_table(torch))
    return _TORCH_DTYPE_FOR[0].get(nd)


def _torch_dtype_table(torch):
    return {
        np.dtype(ml_dtypes.bfloat16): (np.int16, torch.bfloat16),
        np.dtype(ml_dtypes.float8_e4m3fn): (np.uint8, torch.float8_e4m3fn),
        np.dtype(ml_dtypes.float8_e5m2): (np.uint8, torch.float8_e5m2),
        np.dtype(ml_dtypes.float8_e8m0fnu): (np.uint8, torch.float8_e8m0fnu),
        np.dtype(ml_dtypes.float8_e4m3fnuz): (np.uint8, torch.float8_e4m3fnuz),
        np.dtype(ml_dtypes.float8_e5m2fnuz): (np.uint8, torch.float8_e5m2fnuz),
        # no unpacked FP4 / INT4 dtype in torch: the codes (one per byte) as torch_npu's uint8 / int8 carriers
        np.dtype(ml_dtypes.float4_e2m1fn): (np.uint8, torch.uint8),
        np.dtype(ml_dtypes.int4): (np.int8, torch.int8),
    }


def to_user(arr, origin):
    """Return ``arr`` as the caller's array type (numpy or torch), zero-copy where possible.

    torch out gets the dtype torch_npu returns: float8 outputs as torch.float8_e4m3fn / float8_e5m2, bfloat16 as
    torch.bfloat16, and the uint8 carriers (HiF8, E8M0 scales, packed FP4) stay uint8.
    """
    if origin is None or not origin.torch:
        return arr
    import torch

    a = np.asarray(arr)
    if not a.flags.writeable or not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="), order="C")   # torch cannot wrap read-only or swapped memory
    if any(st < 0 for st in a.strides):
        a = np.ascontiguousarray(a)                            # torch has no negative strides
    special = _torch_dtype_for(a.dtype, torch)
    if special is not None:
        bits, tdt = special
        a = np.ascontiguousarray(a)
        return torch.from_numpy(a.view(bits)).view(tdt)
    return torch.from_numpy(a)


# ---------------------------------------------------------------------------------------------------------------
# scalar arguments
# ---------------------------------------------------------------------------------------------------------------

def as_int(v, name):
    if v is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} is None; pass an integer")
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}={v!r} must be an integer")
    v = int(v)
    if not -(2 ** 63) <= v < 2 ** 63:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}={v} does not fit an int64_t")
    return v


def choice(v, name, allowed):
    if v not in allowed:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}={v!r} is not valid; use one of {list(allowed)}")
    return v


# ---------------------------------------------------------------------------------------------------------------
# memory guard
# ---------------------------------------------------------------------------------------------------------------
# Ops call check_memory(bytes, what) with their estimate (outputs + temporaries) before allocating, so a shape that
# cannot fit fails with an AclnnError naming the size instead of a numpy MemoryError or the OOM killer. The cap is
# the smaller of the user's limit (set_memory_limit, else the NPU_EMU_MEMORY_LIMIT environment variable) and the
# memory the machine and the process's cgroup can still give (available_memory). Both are read at every call, the
# machine's only for estimates above MACHINE_CHECK_FLOOR: reading it costs five /proc and cgroup files (tens of
# microseconds, more than a tiny op's kernel), and a process that cannot get a mebibyte more is past saving anyway.

_memory_limit = None
MACHINE_CHECK_FLOOR = 1 << 20
_UNIT_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_BYTES_PATTERN = r"\s*([0-9]+(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?)\s*([kmgtp]?)(?:i?b)?\s*"


def _parse_bytes(value, what):
    """Bytes of an int, a float or a string such as "512M", "1.5 GiB", "2e9" (units are binary: K = 1024)."""
    bad = AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what}={value!r} is not a byte count; use a non-negative integer or "
                                              f"a string such as '512M' or '8GiB'")
    if isinstance(value, (bool, np.bool_)):
        raise bad
    if isinstance(value, (int, np.integer)):
        n = int(value)
    elif isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            raise bad
        n = int(value)
    elif isinstance(value, str):
        import re  # the guard's only string parsing; kept here so the section stays self-contained

        m = re.fullmatch(_BYTES_PATTERN, value, re.IGNORECASE)
        if m is None:
            raise bad
        n = int(float(m.group(1)) * 1024 ** _UNIT_POWERS[m.group(2).lower()])
    else:
        raise bad
    if n < 0:
        raise bad
    return n


def set_memory_limit(nbytes):
    """Cap the bytes one op call may allocate: an integer, or a string such as "512M" / "8GiB" (binary units).

    ``None`` removes the cap (NPU_EMU_MEMORY_LIMIT, if set, applies again). The machine's available memory caps
    every call anyway. Returns the previous cap (an int or None), so a caller can restore it.
    """
    global _memory_limit
    new = None if nbytes is None else _parse_bytes(nbytes, "set_memory_limit")
    old, _memory_limit = _memory_limit, new
    return old


def _read_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _read_int(path):
    """An integer control file; None when missing, unreadable or "max" (unlimited)."""
    text = _read_text(path)
    try:
        return None if text is None else int(text.strip())
    except ValueError:
        return None


def _stat_field(path, key):
    for line in (_read_text(path) or "").splitlines():
        k, _, v = line.partition(" ")
        if k == key and v.strip().isdigit():
            return int(v)
    return 0


def _cgroup_available():
    """Bytes the process's memory cgroup still grants (limit - usage + reclaimable page cache), None if unlimited.

    cgroup v2: memory.max / memory.current of the process's group (from /proc/self/cgroup "0::<path>");
    cgroup v1: memory.limit_in_bytes / memory.usage_in_bytes. Containers and CI runners are capped this way while
    /proc/meminfo still shows the whole host.
    """
    root = "/sys/fs/cgroup"
    rel = ""
    for line in (_read_text("/proc/self/cgroup") or "").splitlines():
        hid, _, rest = line.partition(":")
        ctrl, _, path = rest.partition(":")
        if hid == "0" and ctrl == "":
            rel = path.strip().lstrip("/")
    found = []
    for d in dict.fromkeys([os.path.join(root, rel), root]):
        limit = _read_int(os.path.join(d, "memory.max"))
        if limit is not None:
            used = _read_int(os.path.join(d, "memory.current")) or 0
            found.append(limit - used + _stat_field(os.path.join(d, "memory.stat"), "inactive_file"))
            break
    v1 = os.path.join(root, "memory")
    limit = _read_int(os.path.join(v1, "memory.limit_in_bytes"))
    if limit is not None and limit < 2 ** 60:            # v1 writes a page-rounded 2^63 for "unlimited"
        used = _read_int(os.path.join(v1, "memory.usage_in_bytes")) or 0
        found.append(limit - used + _stat_field(os.path.join(v1, "memory.stat"), "total_inactive_file"))
    return max(min(found), 0) if found else None


def available_memory():
    """Bytes this process can still allocate: /proc/meminfo MemAvailable, lowered to what the process's memory
    cgroup allows. None when neither is known (non-Linux): then only a user limit applies."""
    avail = None
    for line in (_read_text("/proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            avail = int(line.split()[1]) * 1024
            break
    cg = _cgroup_available()
    if cg is not None:
        avail = cg if avail is None else min(avail, cg)
    return avail


def _memory_cap(nbytes=None):
    """(bytes, where the cap comes from) of the limit check_memory applies now to an estimate of ``nbytes``
    (None: any size); (None, "") when unknown."""
    caps = []
    if _memory_limit is not None:
        caps.append((_memory_limit, "the limit set with npu_emu.frontend.core.set_memory_limit()"))
    else:
        env = os.environ.get("NPU_EMU_MEMORY_LIMIT", "").strip()
        if env:
            caps.append((_parse_bytes(env, "NPU_EMU_MEMORY_LIMIT"), "NPU_EMU_MEMORY_LIMIT"))
    avail = available_memory() if nbytes is None or nbytes > MACHINE_CHECK_FLOOR else None
    if avail is not None:
        caps.append((avail, "the memory available on this machine"))
    return min(caps, key=lambda c: c[0]) if caps else (None, "")


def _fmt_bytes(n):
    return f"{n:,} bytes ({n / 2 ** 30:.2f} GiB)"


def check_memory(nbytes, what):
    """Refuse, before allocating, an op whose estimate ``nbytes`` (outputs + temporaries) exceeds the cap.

    Raises AclnnError 361001 (ACLNN_ERR_RUNTIME_ERROR, CANN's code for a failed runtime allocation) naming the
    size, the cap and where the cap comes from, instead of a numpy MemoryError or being OOM-killed. Returns the
    estimate as an int.
    """
    if isinstance(nbytes, (bool, np.bool_)) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        raise AclnnError(ACLNN_ERR_INNER, f"memory estimate of {what} is {nbytes!r}; an op must pass a "
                                          f"non-negative integer byte count to check_memory")
    n = int(nbytes)
    limit, source = _memory_cap(n)
    if limit is not None and n > limit:
        # Freed outputs kept for reuse never make a call fail. The cache exists only once an op has imported it
        # (it imports this module: no import back).
        cache = sys.modules.get("npu_emu.frontend.output_cache")
        if cache is not None and cache.release():
            limit, source = _memory_cap(n)
    if limit is not None and n > limit:
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR,
                         f"{what} needs {_fmt_bytes(n)} but {source} allows {_fmt_bytes(limit)}; use a smaller "
                         f"shape or split the call (the cap is the smaller of set_memory_limit() / "
                         f"NPU_EMU_MEMORY_LIMIT and the memory available on this machine)")
    return n


# ---------------------------------------------------------------------------------------------------------------
# trace (docs/conventions.md §4.4)
# ---------------------------------------------------------------------------------------------------------------

@dataclass
class Trace:
    op: str
    soc: str
    tiling_data: dict = field(default_factory=dict)
    tiling_data_bytes: bytes = b""
    tiling_key: int = 0
    block_dim: int = 0
    workspace_size: int = 0
    ub_bytes_per_core: int = 0
    gm_overrun: list = field(default_factory=list)
    routed_op: str = ""
    quant_mode: str = ""
    notes: list = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------------
# aclnn two-phase API
# ---------------------------------------------------------------------------------------------------------------

_recent_error = [""]


def recent_error():
    """The message of the last failed aclnn call (CANN: aclGetRecentErrMsg)."""
    return _recent_error[0]


class Executor:
    """aclOpExecutor: built by GetWorkspaceSize, run once by the second phase."""

    def __init__(self, op, run, workspace_size=0):
        self.op = op
        self._run = run
        self.workspace_size = int(workspace_size)
        self.used = False

    def __repr__(self):
        return f"<aclOpExecutor {self.op}{' (used)' if self.used else ''}>"


def get_workspace(op, build):
    """Run phase 1: ``build()`` checks and returns an Executor; errors become the status (first failure wins)."""
    try:
        ex = build()
    except AclnnError as e:
        _recent_error[0] = str(e)
        return e.status, 0, None
    _recent_error[0] = ""
    return ACLNN_SUCCESS, ex.workspace_size, ex


def run_executor(executor, workspace_size, op):
    """Run phase 2 once; reusing or mixing up executors is an error, not a silent re-run."""
    if executor is None:
        _recent_error[0] = f"{op}: executor is null; call {op}GetWorkspaceSize first and check its status"
        return ACLNN_ERR_PARAM_NULLPTR
    if not isinstance(executor, Executor) or executor.op != op:
        _recent_error[0] = f"{op}: the executor was made by {getattr(executor, 'op', '?')}"
        return ACLNN_ERR_PARAM_INVALID
    if executor.used:
        _recent_error[0] = f"{op}: this executor has already run; an aclOpExecutor runs once"
        return ACLNN_ERR_INNER
    if int(workspace_size) < executor.workspace_size:
        _recent_error[0] = (f"{op}: workspaceSize {workspace_size} is smaller than the "
                            f"{executor.workspace_size} bytes GetWorkspaceSize asked for")
        return ACLNN_ERR_PARAM_INVALID
    executor.used = True
    try:
        executor._run()
    except AclnnError as e:
        _recent_error[0] = str(e)
        return e.status
    return ACLNN_SUCCESS


def write_out(out, result, name="out"):
    """Copy a finished result into the caller's ``out`` (only after everything succeeded: no partial writes)."""
    if is_torch_tensor(out):
        import torch

        src = to_user(result, Origin(torch=True)).reshape(out.shape)
        # same element size: copy the bits (a uint8 E8M0 result into a float8_e8m0fnu out stays the same codes),
        # as the numpy branch does; copy_ would convert values. copy_ honours a non-contiguous out.
        dst = out.detach()
        if src.dtype != dst.dtype and src.element_size() == dst.element_size():
            dst = dst.view(src.dtype)
        with torch.no_grad():
            dst.copy_(src)
        return out
    if not isinstance(out, np.ndarray):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name} must be a numpy array or a torch CPU tensor")
    if out.size == 0:                                # receives nothing: read-only or not does not matter
        return out
    if not out.flags.writeable:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name} is read-only; pass a writeable array")
    out[...] = result.reshape(out.shape).view(out.dtype) if result.dtype.itemsize == out.dtype.itemsize \
        else result.reshape(out.shape)
    return out
