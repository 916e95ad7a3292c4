"""Front ends of GatherDequantInt8: ``gather_dequant_int8`` (npu_emu.ops) and the aclnn pair (npu_emu.aclnn).

The op has no torch_npu function and no aclnn entry on the device (it enters models through ONNX,
docs/ops/gather_dequant_int8.md §5): the ops name is the snake_case of the op name and the aclnn pair exists for
uniformity with the other ops (docs/conventions.md §4.1). Call flow (docs/contributing/layout.md): normalise -> checks
-> host tiling -> UB check -> allocate -> launch -> convert back. Switch defaults: docs/ops/gather_dequant_int8.md §0.
"""

import numpy as np

from npu_emu.device import memo
from npu_emu.frontend import output_cache
from npu_emu.frontend.core import (
    Executor,
    Origin,
    Trace,
    as_array,
    as_int,
    check_memory,
    get_workspace,
    run_executor,
    to_user,
    write_out,
)
from npu_emu.kernels.gather_dequant_int8 import checks, kernel, tiling as tiling_mod

DEFAULT_SOC = tiling_mod.SOC
OP = "GatherDequantInt8"


def _prepare(table, indices, scale, zero_point, out, fp16_subnormal, soc, ub_size, core_num, origin=None):
    """Everything before the kernel: returns the arrays, the output shape and the tiling result."""
    t = None if table is None else as_array(table, "table", origin=origin)
    i = None if indices is None else as_array(indices, "indices", origin=origin)
    if i is not None and i.ndim == 1 and np.ndim(indices) == 0:
        i = i.reshape(())                 # as_array's ascontiguousarray makes 0-d arrays 1-d; y is then (E,)
    s = None if scale is None else as_array(scale, "scale", origin=origin)
    z = None if zero_point is None else as_array(zero_point, "zero_point", origin=origin)
    checks.check_switches(fp16_subnormal)
    ub_size = None if ub_size is None else as_int(ub_size, "ub_size")
    core_num = None if core_num is None else as_int(core_num, "core_num")
    _, emb = checks.check_inputs(t, i, s, z, out=out)
    checks.require_kernel(soc)
    tr = memo.call(tiling_mod.gather_dequant_int8_tiling, tuple(t.shape), tuple(i.shape), soc=soc, ub_size=ub_size,
                   core_num=core_num)
    checks.check_ub(tiling_mod.footprint(tr), ub_size)
    return t, i, s, z, tuple(i.shape) + (emb,), tr


def _compute(t, i, s, z, out_shape, tr, fp16_subnormal, faithful, validate):
    """Allocate y (fp16) and run the kernel; empty shapes return without a launch
    (docs/ops/gather_dequant_int8.md §4.1)."""
    check_memory(2 * int(np.prod(out_shape, dtype=np.int64)), f"{OP} output {out_shape}")
    y = output_cache.empty(out_shape, np.float16)
    if y.size:
        kernel.run(t, i.reshape(-1), s.reshape(-1).view(np.uint16), z.reshape(-1).view(np.uint16),
                   y.reshape(-1, out_shape[-1]).view(np.uint16), tr,
                   flush=(fp16_subnormal == "flush"), faithful=faithful, validate=validate)
    return y


def _trace(tr):
    td = tr.tiling
    return Trace(op=OP, soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tiling_mod.footprint(tr), gm_overrun=[], notes=list(tr.notes))


def gather_dequant_int8(table, indices, scale, zero_point, *, fp16_subnormal="keep", soc=DEFAULT_SOC,
                        ub_size=None, core_num=None, faithful=False, validate=True, trace=False):
    """y[..., :] = fp16(fp16(half(table[idx]) - zero_point[idx]) * scale[idx]) for every idx in ``indices``.

    table uint8 [V, E] (E a multiple of 32); indices int32, any shape, all in [0, V); scale and zero_point
    float16 (or uint16 bit views) of shape (V,) or (V, 1). Returns float16 of shape indices.shape + (E,)
    (a torch tensor when the inputs are torch tensors).

    Switches (docs/ops/gather_dequant_int8.md §0): ``fp16_subnormal`` "keep" (IEEE) | "flush"; ``soc`` (only
    "kirin9020" has a kernel); ``ub_size`` (check the kernel's UB footprint against it); ``core_num`` (None = the
    device's single core; k splits the tokens over k emulated cores, same result; the fast path spreads tokens
    over the host threads whatever the split); ``faithful`` (True runs the transliterated per-row instruction
    pipeline, False the per-row 256-entry table path proven identical); ``validate`` (launch-model checks of the
    kernel's accesses); ``trace`` -> (y, Trace).
    """
    origin = Origin()
    t, i, s, z, out_shape, tr = _prepare(table, indices, scale, zero_point, None, fp16_subnormal, soc,
                                         ub_size, core_num, origin)
    y = to_user(_compute(t, i, s, z, out_shape, tr, fp16_subnormal, bool(faithful), validate), origin)
    return (y, _trace(tr)) if trace else y


def aclnnGatherDequantInt8GetWorkspaceSize(table, indices, scale, zeroPoint, out, *, fp16_subnormal="keep",
                                           soc=DEFAULT_SOC, ub_size=None, core_num=None):
    """-> (status, workspace_size, executor). Emulator-provided (the sample has no aclnn entry); out is fp16
    (or a uint16 bit view) of shape indices.shape + (E,). The workspace is 0, as the op's TilingFunc sets."""

    def build():
        for name, a in zip(checks.INPUTS + ("out",), (table, indices, scale, zeroPoint, out)):
            if a is None:
                raise checks.null(name)
        t, i, s, z, out_shape, tr = _prepare(table, indices, scale, zeroPoint, as_array(out, "out"),
                                             fp16_subnormal, soc, ub_size, core_num)

        def run():
            write_out(out, _compute(t, i, s, z, out_shape, tr, fp16_subnormal, False, True))

        return Executor("aclnnGatherDequantInt8", run, tr.workspace_size)

    return get_workspace("aclnnGatherDequantInt8", build)


def aclnnGatherDequantInt8(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGatherDequantInt8")
