"""Front ends of SwiGlu: ``npu_swiglu`` (torch_npu) and the aclnn pair ``aclnnSwiGluGetWorkspaceSize`` /
``aclnnSwiGlu``.

Call flow: normalise -> checks -> host tiling (memoised) -> (user tiling) -> validate -> allocate -> launch ->
convert back. Switches (docs/ops/swiglu.md §6): ``exp_model`` ("correctly_rounded"), ``div_model`` ("ieee"),
``faithful`` (False: the fused kernel, bit-identical), ``soc`` ("ascend910b2").
"""

import numpy as np

from npu_emu.device import memo
from npu_emu.ascendc.transcendental import DIV_MODELS, EXP_MODELS
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
    run_executor,
    to_user,
    write_out,
)
from npu_emu.kernels.swiglu import checks
from npu_emu.kernels.swiglu import tiling as tiling_mod
from npu_emu.kernels.swiglu.launch import run_swiglu
from npu_emu.device.tiling_data import TilingResult

DEFAULT_SOC = "ascend910b2"


def switches(exp_model, div_model):
    """-> (exp model code, div model code); unknown names -> 161002."""
    em = choice(exp_model, "exp_model", tuple(EXP_MODELS))
    dm = choice(div_model, "div_model", tuple(DIV_MODELS))
    return EXP_MODELS[em], DIV_MODELS[dm]


def _tiling_result(shape, d, dn, soc, core_num, ub_size, tiling, block_dim):
    host = tiling_mod.swiglu_tiling(shape, d, dn, soc=soc, core_num=core_num, ub_size=ub_size)
    if tiling is None and block_dim is None:
        return host
    td = host.tiling if tiling is None else tiling_mod.SwiGluTilingData.coerce(tiling)
    bd = host.block_dim if block_dim is None else as_int(block_dim, "block_dim")
    return TilingResult(td, bd, host.tiling_key, host.workspace_size, host.ub_size, host.core_num, host.soc,
                        ("user tiling",))


def _run(xa, dn, d, out_shape, em, dm, soc, core_num, ub_size, tiling, block_dim, validate, faithful):
    """-> (y numpy array of x's dtype and out_shape, TilingResult or None)."""
    if xa.size == 0:
        return np.empty(out_shape, xa.dtype), None
    check_memory(xa.nbytes // 2, "SwiGlu output")          # before allocating: y is half of x
    y = output_cache.empty(out_shape, xa.dtype)
    tr = memo.call(_tiling_result, tuple(xa.shape), d, dn, soc, core_num, ub_size, tiling, block_dim)
    bits = np.float32 if dn == "float32" else np.uint16
    run_swiglu(xa.reshape(-1).view(bits), y.reshape(-1).view(bits), tr, dn, exp_model=em, div_model=dm,
               faithful=bool(faithful), validate=validate)
    return y, tr


def _trace(tr):
    td = tr.tiling
    return Trace(op="SwiGlu", soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tr.ub_size, notes=list(tr.notes))


def _options(core_num, ub_size):
    return (None if core_num is None else as_int(core_num, "core_num"),
            None if ub_size is None else as_int(ub_size, "ub_size"))


def npu_swiglu(self, dim=-1, *, exp_model="correctly_rounded", div_model="ieee", soc=DEFAULT_SOC, core_num=None,
               ub_size=None, tiling=None, block_dim=None, validate=True, faithful=False, trace=False):
    """torch_npu.npu_swiglu(self, dim=-1): Swish(A) * B, A / B the front / back half of ``self`` along ``dim``.

    float32, float16 or bfloat16 in, the same dtype out. Emulator keywords: ``exp_model`` / ``div_model`` (the
    transcendental models, docs/conventions.md), ``soc``, ``core_num``, ``ub_size``, ``tiling`` (your
    SwiGluTilingData, dict or packed bytes) with ``block_dim``, ``validate``, ``faithful`` (stage every tile through
    the UB instead of the fused kernel), ``trace`` (return (y, Trace)).
    """
    origin = Origin()
    xa = as_array(self, "self", origin=origin)
    dn, d, out_shape = checks.check_x(xa, dim)
    em, dm = switches(exp_model, div_model)
    checks.require_kernel(soc, dn)
    cn, ub = _options(core_num, ub_size)
    y, tr = _run(xa, dn, d, out_shape, em, dm, soc, cn, ub, tiling, block_dim, validate, faithful)
    y = to_user(y, origin)
    if trace:
        return y, (None if tr is None else _trace(tr))
    return y


def aclnnSwiGluGetWorkspaceSize(x, dim, out, *, exp_model="correctly_rounded", div_model="ieee", soc=DEFAULT_SOC,
                                core_num=None, ub_size=None):
    """-> (status, workspace_size, executor)."""

    def build():
        xa = as_array(x, "x")
        oa = as_array(out, "out")
        dn, d, out_shape = checks.check_x(xa, dim)
        checks.check_out(oa, dn, out_shape)
        em, dm = switches(exp_model, div_model)
        cn, ub = _options(core_num, ub_size)
        if xa.size == 0:
            return Executor("aclnnSwiGlu", lambda: None, 0)
        checks.require_kernel(soc, dn)
        tr = memo.call(_tiling_result, tuple(xa.shape), d, dn, soc, cn, ub, None, None)

        def run():
            y, _ = _run(xa, dn, d, out_shape, em, dm, soc, cn, ub, None, None, True, False)
            write_out(out, y)

        return Executor("aclnnSwiGlu", run, tr.workspace_size)

    return get_workspace("aclnnSwiGlu", build)


def aclnnSwiGlu(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnSwiGlu")
