"""Front ends of SignBitsUnpack / SignBitsPack: torch_npu-style functions and the aclnn two-phase API.

Call flow (docs/contributing/layout.md): normalise -> checks -> host tiling -> (user tiling) -> validate -> allocate ->
launch -> convert back. Defaults: docs/ops/sign_bits.md §1 (soc ascend910b2, nan_bit 0, denormal_compare "ieee").
"""

import numpy as np

from npu_emu.device import memo
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend import output_cache
from npu_emu.frontend.core import (
    Executor,
    Origin,
    Trace,
    as_array,
    as_int,
    check_memory,
    choice,
    get_workspace,
    is_torch_tensor,
    run_executor,
    to_user,
    write_out,
)
from npu_emu.kernels.sign_bits import checks, launch, tiling as tiling_mod

DEFAULT_SOC = "ascend910b2"


def _options(soc, core_num, ub_size):
    core_num = None if core_num is None else as_int(core_num, "core_num")
    ub_size = None if ub_size is None else as_int(ub_size, "ub_size")
    return soc, core_num, ub_size


def _user_tiling(tiling, cls, host):
    """A user's tiling data (dataclass, dict of fields, or the packed struct bytes) in place of the host's."""
    if tiling is None:
        return host
    return tiling_mod.TilingResult(cls.coerce(tiling), host.block_dim, host.tiling_key, host.workspace_size,
                                   host.ub_size, host.core_num, host.soc)


def _make_trace(op, tr, overruns):
    td = tr.tiling
    return Trace(op=op, soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tr.ub_size, gm_overrun=list(overruns), notes=list(tr.notes))


# ---------------------------------------------------------------------------------------------------------------
# the computations shared by both front ends (inputs already checked)
# ---------------------------------------------------------------------------------------------------------------

def _tiling_result(op, n, name, soc, core_num, ub_size, tiling, block_dim, size=1):
    """The host tiling (or the user's ``tiling`` in its place) launched on ``block_dim`` cores; pure in its
    arguments, so the front ends take it from npu_emu.device.memo (a user tiling by its fields or packed bytes).
    ``size``: the op attribute, a field of the 950 unpack struct (the 910B structs do not carry it)."""
    family = checks.soc_family(soc)
    extra = {}
    if op == "unpack":
        host = tiling_mod.unpack_tiling_950 if family == "950" else tiling_mod.unpack_tiling
        cls = tiling_mod.SignBitsUnpackTilingData950 if family == "950" else tiling_mod.SignBitsUnpackTilingData
        if family == "950":
            extra["size"] = size
    else:
        host = tiling_mod.pack_tiling_950 if family == "950" else tiling_mod.pack_tiling
        cls = tiling_mod.SignBitsPackTilingData950 if family == "950" else tiling_mod.SignBitsPackTilingData
    tr = _user_tiling(tiling, cls, host(n, name, soc=soc, core_num=core_num, ub_size=ub_size, **extra))
    return launch.with_block_dim(tr, block_dim)


def _unpack(x, size, out_name, soc, core_num, ub_size, tiling, block_dim, validate, faithful=False):
    """-> (y, TilingResult or None, overruns); the trace is made from them only when asked for."""
    n = x.shape[0]
    out_dtype = np.float16 if out_name == "float16" else np.float32
    if n == 0:
        return np.empty((size, 0), out_dtype), None, []
    family = checks.soc_family(soc)
    check_memory(8 * n * np.dtype(out_dtype).itemsize, "SignBitsUnpack output")
    y = output_cache.empty(8 * n, out_dtype)
    tr = memo.call(_tiling_result, "unpack", n, out_name, soc, core_num, ub_size, tiling, block_dim, size)
    overruns = launch.run_unpack(x, y, tr, family, validate=validate, faithful=faithful)
    return y.reshape(size, -1), tr, overruns


def _pack(x, size, in_name, soc, core_num, ub_size, nan_bit, denormal_compare, tiling, block_dim, validate):
    """-> (y, TilingResult or None, overruns)."""
    n = x.shape[0]
    packed = -(-n // 8)
    if n == 0:
        return np.empty((size, 0), np.uint8), None, []
    family = checks.soc_family(soc)
    y = output_cache.empty(packed, np.uint8)
    tr = memo.call(_tiling_result, "pack", n, in_name, soc, core_num, ub_size, tiling, block_dim)
    bits = x.view(np.uint16 if in_name == "float16" else np.uint32)
    overruns = launch.run_pack(bits, y, tr, family, nan_bit=nan_bit, ftz=(denormal_compare == "ftz"),
                               validate=validate)
    return y.reshape(size, -1), tr, overruns


def _switches(nan_bit, denormal_compare):
    nan_bit = choice(nan_bit if not isinstance(nan_bit, bool) else int(nan_bit), "nan_bit", (0, 1))
    denormal_compare = choice(denormal_compare, "denormal_compare", ("ieee", "ftz"))
    return nan_bit, denormal_compare


# ---------------------------------------------------------------------------------------------------------------
# torch_npu-style front ends (npu_emu.ops)
# ---------------------------------------------------------------------------------------------------------------

def npu_sign_bits_unpack(x, size, dtype, *, soc=DEFAULT_SOC, core_num=None, ub_size=None, tiling=None,
                         block_dim=None, validate=True, faithful=False, trace=False):
    """torch_npu.npu_sign_bits_unpack(x, size, dtype): uint8 1-D -> (size, 8N/size) of +-1.0.

    dtype: 0 = float32, 1 = float16 (IR codes), or a numpy / torch dtype. Extra keywords: ``soc``, ``core_num``,
    ``ub_size`` (tiling inputs), ``tiling`` (your own SignBitsUnpackTilingData, dict or packed bytes) with
    ``block_dim``, ``validate`` (check the tiling's coverage, bounds, overlaps and UB use), ``faithful`` (run the
    910B kernel's UB stages tile by tile instead of the fused kernel proven bit-identical to it), ``trace``.
    """
    origin = Origin()
    xa = as_array(x, "x", origin=origin)
    size = as_int(size, "size")
    out_name = checks.check_unpack_torch(xa, size, dtype)
    soc, core_num, ub_size = _options(soc, core_num, ub_size)
    checks.require_kernel("unpack", soc)
    y, tr, overruns = _unpack(xa, size, out_name, soc, core_num, ub_size, tiling, block_dim, validate,
                              bool(faithful))
    y = to_user(y, origin)
    if trace:
        return y, (None if tr is None else _make_trace("SignBitsUnpack", tr, overruns))
    return y


def npu_sign_bits_pack(x, size, *, soc=DEFAULT_SOC, nan_bit=0, denormal_compare="ieee", core_num=None,
                       ub_size=None, tiling=None, block_dim=None, validate=True, trace=False):
    """torch_npu.npu_sign_bits_pack(x, size): float32/float16 1-D -> (size, ceil(N/8)/size) uint8.

    910B: bit = (x >= 0), LSB first, tail padded with -1.0 (0 bits). ``soc="ascend950pr"``: the arch35 kernel's
    MSB-first, x < 0 encoding (docs/ops/sign_bits.md §3.9). Switches ``nan_bit`` (0), ``denormal_compare`` ("ieee").
    """
    origin = Origin()
    xa = as_array(x, "x", origin=origin)
    size = as_int(size, "size")
    in_name = checks.check_pack_torch(xa, size)
    nan_bit, denormal_compare = _switches(nan_bit, denormal_compare)
    soc, core_num, ub_size = _options(soc, core_num, ub_size)
    checks.require_kernel("pack", soc)
    y, tr, overruns = _pack(xa, size, in_name, soc, core_num, ub_size, nan_bit, denormal_compare, tiling,
                            block_dim, validate)
    y = to_user(y, origin)
    if trace:
        return y, (None if tr is None else _make_trace("SignBitsPack", tr, overruns))
    return y


# ---------------------------------------------------------------------------------------------------------------
# aclnn two-phase API (npu_emu.aclnn)
# ---------------------------------------------------------------------------------------------------------------

def aclnnSignBitsUnpackGetWorkspaceSize(self, size, dtype, out, *, soc=DEFAULT_SOC, api_variant=None,
                                        core_num=None, ub_size=None):
    """-> (status, workspace_size, executor). ``dtype`` is an aclDataType (0 ACL_FLOAT, 1 ACL_FLOAT16)."""

    def build():
        s = None if self is None else as_array(self, "self")
        o = None if out is None else _out_array(out)
        sz = as_int(size, "size")
        variant = checks.resolve_api_variant(api_variant, soc)
        out_name = checks.check_unpack_aclnn(s, sz, dtype, o, soc=soc, api_variant=variant)
        _, cn, ub = _options(soc, core_num, ub_size)
        if s.size == 0 or o.size == 0:
            return Executor("aclnnSignBitsUnpack", lambda: None, 0)
        checks.require_kernel("unpack", soc)
        tr = memo.call(_tiling_result, "unpack", s.shape[0], out_name, soc, cn, ub, None, None, sz)

        def run():
            y, _, _ = _unpack(s, sz, out_name, soc, cn, ub, None, None, True)
            write_out(out, y)

        return Executor("aclnnSignBitsUnpack", run, tr.workspace_size)

    return get_workspace("aclnnSignBitsUnpack", build)


def aclnnSignBitsUnpack(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnSignBitsUnpack")


def aclnnSignBitsPackGetWorkspaceSize(self, size, out, *, soc=DEFAULT_SOC, api_variant=None, nan_bit=0,
                                      denormal_compare="ieee", core_num=None, ub_size=None):
    """-> (status, workspace_size, executor)."""

    def build():
        s = None if self is None else as_array(self, "self")
        o = None if out is None else _out_array(out)
        sz = as_int(size, "size")
        variant = checks.resolve_api_variant(api_variant, soc)
        in_name = checks.check_pack_aclnn(s, sz, o, soc=soc, api_variant=variant)
        nb, dc = _switches(nan_bit, denormal_compare)
        _, cn, ub = _options(soc, core_num, ub_size)
        if s.size == 0 or o.size == 0:
            return Executor("aclnnSignBitsPack", lambda: None, 0)
        checks.require_kernel("pack", soc)
        tr = memo.call(_tiling_result, "pack", s.shape[0], in_name, soc, cn, ub, None, None)

        def run():
            y, _, _ = _pack(s, sz, in_name, soc, cn, ub, nb, dc, None, None, True)
            write_out(out, y)

        return Executor("aclnnSignBitsPack", run, tr.workspace_size)

    return get_workspace("aclnnSignBitsPack", build)


def aclnnSignBitsPack(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnSignBitsPack")


def _out_array(out):
    """The caller's out as an array we can read the dtype/shape of (written only at the end, in place)."""
    if is_torch_tensor(out):
        return as_array(out, "out")
    if not isinstance(out, np.ndarray):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "out must be a numpy array or a torch CPU tensor")
    return out
