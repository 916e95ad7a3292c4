"""QuantBatchMatmulV4 modes: host tiling and compute (docs/ops/quant_matmul.md §7.4, §7.7, §7.8, §10).

Registered in ``api.V4_KERNELS`` (api.py calls :func:`register`), so aclnnQuantMatmulV5 / WeightNz and
npu_quant_matmul reach them after the checks. Implemented:
* "A8W8-perblock" - int8 G-B -> bf16, A2/A3 (``quant_batch_matmul_v4_perblock.h``, bias first) and 950 per-tile
  (``matmul/common/cmct/epilogue/block_epilogue_pertile.h``, bias last);
* "A4W4-pergroup-asym" - int4 K-G with x2Offset (``quant_batch_matmul_v4_pergroup.h``);
* "A8W4-int" - int8 x int32-packed int4 "MSD" on A2/A3 with the fp16 workspace (``quant_batch_matmul_v4_msd.h``).
* "A8W4-float" - fp8-e4m3 x fp4 on 950: T-CG (``quant_batch_matmul_v4_vf.h`` weight prologue + Fixpipe yScale) and
  MxA8W4 (the golden formula; the Blaze library is not in ops-nn).
FRACTAL_NZ weights (WeightNz, weight_nz.NzWeight, 4-bit storage included) are read back to their ND layout first: the
layout changes where the cube finds an element, not its value.

Tiling: v4_tiling.py fills the real V4 TilingData struct of each template (the MSD, A2 per-block, 950 BasicAPI,
RegBase and SWAT structs, and the QuantBatchMatmulV3TilingData of the per-group kernels), field for field as the
op_host does; the V4 step kernels walk their blocks from it and the trace reports it (tiling_data /
tiling_data_bytes). The final vector steps run on the shared V3 epilogue kernel, which is handed the same blocks in
QuantBatchMatmulV3TilingData form (v4_tiling.epilogue_tiling).

Cube: the int32 result of every k group, computed for the whole matrix by one float32 GEMM per group - exact
because each group's partial sums stay below 2^24 (G-B: 128·128·128 = 2^21; K-G and MSD: 256·8·8 = 2^14) - and
handed to the vector kernels of v4_kernel.py in ascending k order: by default several groups at a time to the
fused kernels (one pass over the accumulator per batch of groups), with ``faithful=True`` group by group to the
per-core step kernels that walk the tiling's base blocks. Both apply the same float32 chain per element.
"""

import ml_dtypes
import numpy as np

from npu_emu.device import platforms
from npu_emu.dtypes import scalar
from npu_emu.errors import ACLNN_ERR_INNER_FIND_KERNEL_ERROR, ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import Trace, check_memory
from npu_emu.kernels.quant_matmul import accum, kernel, operands, routing, tcg_kernel, v4_kernel
from npu_emu.kernels.quant_matmul import v4_tiling as v4t
from npu_emu.kernels.quant_matmul import trans_quant_param as tqp
from npu_emu.kernels.quant_matmul.launch import launch_epilogue, rmode
from npu_emu.kernels.quant_matmul.operands import int_values, logical
from npu_emu.kernels.quant_matmul.v3 import float_cube
from npu_emu.kernels.quant_matmul.weight_nz import nz_to_storage_nd
from npu_emu.device.launch import host_matmul, launch
from npu_emu.device.read_only import read_only as ro

PER_BLOCK = v4t.PER_BLOCK
A4W4_GROUP = v4t.A4W4_GROUP
MSD_GROUP = v4t.MSD_GROUP
GROUP_BATCH_BYTES = 256 << 20      # the cube results of one batch of k groups (the fused kernels' input)


def _arch(soc):
    return platforms.get(soc).npu_arch


def _two_dim(a, mode):
    if a.x1.ndim != 2 or a.x2.ndim != 2:
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                         f"{mode}: npu-emu emulates the 2-D kernel of this QuantBatchMatmulV4 mode; batched inputs "
                         f"(x1 {a.x1.shape}, x2 {a.x2.shape}) are not yet supported - loop over the batch")


def _rmode_sat(sw):
    return rmode(sw), int(sw.cast_overflow == "saturate")


def _finish(tr, acc, sw, s1, bias_f, out_dtype, m, n):
    """The last vector steps (·x1Scale, +bias) and the output cast: the shared V3 epilogue kernel."""
    out_code = kernel.OUT_CODES[out_dtype]
    y8 = np.empty(m * n * 2, np.uint8)
    bias = np.empty((0, 0), np.float32) if bias_f is None else np.ascontiguousarray(bias_f, np.float32).reshape(1, n)
    report = launch_epilogue(tr, acc, None, sw, np.empty(0, np.float32),
                              np.empty(0, np.float32) if s1 is None else s1, np.empty((0, 0), np.int32), bias,
                              np.empty(0, np.int32), y8, out_code)
    y = y8.view(np.float16 if out_dtype == "float16" else ml_dtypes.bfloat16).reshape(m, n)
    return y, report


def _trace(res, tr, sw, mode_label, notes, report):
    return Trace(op="QuantBatchMatmulV4", soc=tr.soc, tiling_data=tr.tiling.fields(),
                 tiling_data_bytes=tr.tiling.to_bytes(), tiling_key=tr.tiling_key, block_dim=tr.block_dim,
                 workspace_size=tr.workspace_size, ub_bytes_per_core=tr.ub_size,
                 gm_overrun=list(report.overruns) if report is not None else [], routed_op=res.op,
                 quant_mode=mode_label, notes=list(tr.notes) + notes)


def _f32_matrices(res, ops):
    a = res.args
    x1 = logical(int_values(ops["x1"]), a.transpose_x1).astype(np.float32)
    x2 = logical(int_values(ops["x2"]), a.transpose_x2).astype(np.float32)
    return x1, x2


def _groups_per_batch(m, n, g):
    return min(g, max(1, GROUP_BATCH_BYTES // max(1, m * n * 4)))


def batch_bytes(m, n, k, gs):
    """Bytes of group_batches' parts buffer (for the check_memory estimates): at least one group's M x N."""
    return _groups_per_batch(m, n, -(-k // gs)) * m * n * 4


def group_batches(x1f, x2f, gs):
    """The cube's int32 results of the k groups, in ascending order and a few groups at a time:
    (j0, parts) with parts[jj] = x1 @ x2 over group j0 + jj, float32 (gb, M, N).

    Exact because every V4 group keeps its partial sums below 2^24 (module docstring). Each group is one GEMM of
    the whole matrix on k-slices of the operands as they are (BLAS takes the strided / transposed views without a
    copy; a short last group is a shorter GEMM) - BLAS calls on row or column panels are many times slower on a
    shared machine - and the batch size keeps the parts buffer (reused between batches) near GROUP_BATCH_BYTES."""
    m, k = x1f.shape
    n = x2f.shape[1]
    g = -(-k // gs)
    gb = _groups_per_batch(m, n, g)
    parts = np.empty((gb, m, n), np.float32)
    for j0 in range(0, g, gb):
        cnt = min(gb, g - j0)
        for jj in range(cnt):
            k0 = (j0 + jj) * gs
            host_matmul(x1f[:, k0:k0 + gs], x2f[k0:k0 + gs], out=parts[jj])
        yield j0, parts[:cnt]


def _scale2d(op, transposed):
    v = operands.scale_values(op)
    return np.swapaxes(v, -1, -2) if transposed else v


# --------------------------------------------------------------------------------------------------------------
# int8 G-B (docs/ops/quant_matmul.md §7.4)
# --------------------------------------------------------------------------------------------------------------

def compute_perblock(res, ops, sw, user_tiling=None, block_dim=None):
    """int8 G-B; batch dims of x1, x2 and the scales broadcast (golden compute_perblock), one 2-D pass each."""
    a = res.args
    m, k, _, n = routing.mnk(a.x1, a.x2, a.transpose_x1, a.transpose_x2)
    gm, gn, gk = routing.decode_group_size(res.group_size)
    gs_m, gs_n = max(gm, 1), max(gn, 1)
    x1, x2 = _f32_matrices(res, ops)
    s1 = _scale2d(ops["x1_scale"], a.transpose_x1)                                  # (..., M1, G)
    s2 = _scale2d(ops["x2_scale"], a.transpose_x2)                                  # (..., G, N1)
    batch = tuple(np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], s1.shape[:-2], s2.shape[:-2]))
    nb = int(np.prod(batch)) if batch else 1
    check_memory(nb * m * n * 14 + (m + n) * k * 4 + batch_bytes(m, n, k, PER_BLOCK),
                 "QuantBatchMatmulV4 per-block output and workspace")
    tr = v4t.with_block_dim(v4t.v4_tiling("A8W8-perblock", m, n, k, sw.soc, sw.core_num, gs=(gm, gn, gk),
                                          has_bias=ops.get("bias") is not None, trans_a=a.transpose_x1,
                                          trans_b=a.transpose_x2), block_dim)
    ep = v4t.epilogue_tiling(tr, sw.soc, sw.core_num, block_dim)
    flat = lambda x: np.broadcast_to(x, batch + x.shape[-2:]).reshape((nb,) + x.shape[-2:])
    x1, x2, s1, s2 = flat(x1), flat(x2), flat(s1), flat(s2)
    bias = None if ops.get("bias") is None else \
        np.ascontiguousarray(operands.scale_values(ops["bias"]), np.float32).reshape(-1, n)
    a2 = _arch(sw.soc) == 2201
    g = -(-k // PER_BLOCK)
    ys, report = [], None
    for bi in range(nb):
        s1e = np.ascontiguousarray(np.repeat(s1[bi], gs_m, axis=0)[:m], np.float32)        # (m, G) per row
        x2e = np.ascontiguousarray(np.repeat(s2[bi], gs_n, axis=1)[:, :n], np.float32)     # (G, n) per column
        b_row = None if bias is None else bias[bi if bias.shape[0] > 1 else 0]
        acc = np.zeros(m * n, np.float32)
        cfg = np.zeros(v4_kernel.PB_LEN, np.int64)
        cfg[v4_kernel.PB_G], cfg[v4_kernel.PB_BIAS_FIRST] = g, int(a2)
        bias_k = ro(b_row if (a2 and b_row is not None) else np.empty(0, np.float32))
        s1e, x2e = ro(s1e), ro(x2e)
        for j0, parts in group_batches(x1[bi], x2[bi], PER_BLOCK):
            if not sw.faithful:
                v4_kernel.perblock_fused_kernel(ro(parts), j0, s1e, x2e, bias_k, a2, acc.reshape(m, n))
                continue
            for jj in range(parts.shape[0]):
                cfg[v4_kernel.PB_J] = j0 + jj
                launch(v4_kernel.perblock_step_kernel, tr.block_dim, tr.tiling, ro(parts[jj].reshape(-1)),
                       s1e.reshape(-1), x2e.reshape(-1), bias_k, acc, ro(cfg), ub_size=tr.ub_size, validate=False)
        y, report = _finish(ep, acc, sw, None, None if a2 else b_row, a.out.dtype, m, n)
        ys.append(y)
    y = np.stack(ys).reshape(batch + (m, n))
    order = "A2/A3: bias is the accumulator's start value" if a2 else "950: bias added after the last k block"
    notes = [order, "int32 block sums per 128-wide k block"] + ([f"batch {batch}: {nb} 2-D passes"] if batch else [])
    return y, _trace(res, tr, sw, "G-B", notes, report)


# --------------------------------------------------------------------------------------------------------------
# A4W4 asymmetric K-G (docs/ops/quant_matmul.md §7.8)
# --------------------------------------------------------------------------------------------------------------

def compute_a4w4_asym(res, ops, sw, user_tiling=None, block_dim=None):
    a = res.args
    _two_dim(a, "A4W4-pergroup-asym")
    m, k, _, n = routing.mnk(a.x1, a.x2, a.transpose_x1, a.transpose_x2)
    gs_k = routing.decode_group_size(res.group_size)[2] or A4W4_GROUP
    check_memory(m * n * 14 + (m + n) * k * 4 + batch_bytes(m, n, k, A4W4_GROUP),
                 "QuantBatchMatmulV4 per-group output and workspace")
    tr = v4t.with_block_dim(v4t.v4_tiling("A4W4-pergroup-asym", m, n, k, sw.soc, sw.core_num, gs=(0, 0, gs_k)),
                            block_dim)
    ep = v4t.epilogue_tiling(tr, sw.soc, sw.core_num, block_dim)
    x1, x2 = _f32_matrices(res, ops)
    s2 = np.ascontiguousarray(operands.scale_values(ops["x2_scale"]), np.float32)        # (G, n)
    off = np.ascontiguousarray(ops["x2_offset"].data.astype(np.float32))                 # (G, n), exact widening
    s1 = np.ascontiguousarray(operands.scale_values(ops["x1_scale"]).reshape(-1), np.float32)
    acc = np.zeros(m * n, np.float32)
    cfg = np.zeros(1, np.int64)
    rowsums = x1.reshape(m, -1, gs_k).sum(axis=2, dtype=np.float32) if k % gs_k == 0 else \
        np.stack([x1[:, g0:g0 + gs_k].sum(axis=1, dtype=np.float32) for g0 in range(0, k, gs_k)], axis=1)
    rowsums = ro(np.ascontiguousarray(rowsums.T))            # (G, m) exact small integers
    off, s2 = ro(off), ro(s2)
    for j0, parts in group_batches(x1, x2, gs_k):
        if not sw.faithful:
            v4_kernel.a4w4_fused_kernel(ro(parts), j0, rowsums, off, s2, acc.reshape(m, n))
            continue
        for jj in range(parts.shape[0]):
            gi = j0 + jj
            launch(v4_kernel.a4w4_group_kernel, tr.block_dim, tr.tiling, ro(parts[jj].reshape(-1)), rowsums[gi],
                   ro(np.ascontiguousarray(off[gi])), ro(np.ascontiguousarray(s2[gi])), acc, ro(cfg),
                   ub_size=tr.ub_size, validate=False)
    y, report = _finish(ep, acc, sw, s1, None, a.out.dtype, m, n)
    return y, _trace(res, tr, sw, "K-G asym", [f"gsK {gs_k}"], report)


# --------------------------------------------------------------------------------------------------------------
# A8W4 int "MSD" (docs/ops/quant_matmul.md §7.7)
# --------------------------------------------------------------------------------------------------------------

def msd_split(x):
    """int8 x -> the 2m-row int4 matrix of QuantBatchMatmulV4MsdPre: per token a hi row floor(x/16) and a lo row
    (x & 0xF) - 8, both in [-8, 7], so that x = 16·hi + lo + 8."""
    xi = x.astype(np.int16)
    out = np.empty((2 * x.shape[0], x.shape[1]), np.int8)
    out[0::2] = xi >> 4
    out[1::2] = (xi & 0xF) - 8
    return out


def compute_msd(res, ops, sw, user_tiling=None, block_dim=None):
    a = res.args
    m, k, _, n = routing.mnk(a.x1, a.x2, a.transpose_x1, a.transpose_x2)
    check_memory(m * n * 16 + (m + n) * k * 8 + batch_bytes(2 * m, n, k, MSD_GROUP),
                 "QuantBatchMatmulV4 MSD output and workspace")
    x2s = ops["x2_scale"]
    per_group = x2s.data.ndim == 2
    gs = MSD_GROUP if per_group else k
    s2 = tqp.deq_scale(x2s.data).reshape(-1 if per_group else 1, n)        # FP19 of the U64 words, (G, n)
    s2 = np.ascontiguousarray(s2, np.float32)
    tr = v4t.with_block_dim(v4t.v4_tiling("A8W4-int", m, n, k, sw.soc, sw.core_num, per_group=per_group), block_dim)
    ep = v4t.epilogue_tiling(tr, sw.soc, sw.core_num, block_dim)
    ops = _x2_nd(ops, a, sw)
    x1 = logical(int_values(ops["x1"]), a.transpose_x1)
    hl = msd_split(np.ascontiguousarray(x1)).astype(np.float32)
    w = logical(int_values(ops["x2"]), a.transpose_x2).astype(np.float32)
    ws = np.zeros(2 * m * n, np.uint16)                     # the fp16 workspace, zeroed before the atomic adds
    rmode, sat = _rmode_sat(sw)
    cfg = ro(np.array([rmode, sat], np.int64))
    s2 = ro(s2)
    rint = rmode == scalar.CAST_RINT and not sat           # the default: kernels with the mode as a constant
    fused = v4_kernel.msd_fused_kernel_rint if rint else v4_kernel.msd_fused_kernel
    group = v4_kernel.msd_group_kernel_rint if rint else v4_kernel.msd_group_kernel
    for j0, parts in group_batches(hl, w, gs):             # |sum| <= k·8·8 < 2^24 for k <= 29576
        if not sw.faithful:
            fused(ro(parts), j0, s2, ws.reshape(2 * m, n), cfg)
            continue
        for jj in range(parts.shape[0]):
            launch(group, tr.block_dim, tr.tiling, ro(parts[jj].reshape(-1)),
                   ro(np.ascontiguousarray(s2[j0 + jj])), ws, cfg, ub_size=tr.ub_size, validate=False)
    y_off = np.ascontiguousarray(operands.scale_values(ops["y_offset"]).reshape(-1), np.float32)
    y = np.empty(m * n, np.float32)
    launch(v4_kernel.msd_combine_kernel, tr.block_dim, tr.tiling, ro(ws), ro(y_off), y, ub_size=tr.ub_size,
           validate=False)
    s1 = np.ascontiguousarray(operands.scale_values(ops["x1_scale"]).reshape(-1), np.float32)
    out, report = _finish(ep, y, sw, s1, None, a.out.dtype, m, n)
    label = "A8W4-int MSD " + ("K-G" if per_group else "K-C")
    return out, _trace(res, tr, sw, label, ["fp16 workspace: Fixpipe fp32 -> fp16, fp16 atomic add per k group "
                                                  "in ascending order (docs/ops/quant_matmul.md §7.7, Q8)"], report)


def _no_user_tiling(compute):
    """The V4 modes compute their own base blocks; a caller's QuantBatchMatmulV3 tiling would be silently wrong."""
    def run(res, ops, sw, user_tiling=None, block_dim=None):
        if user_tiling is not None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"tiling= is a QuantBatchMatmulV3TilingData; {res.v4_mode} "
                                                      f"runs on QuantBatchMatmulV4, whose tiling npu-emu computes "
                                                      f"itself - drop tiling= (block_dim= and core_num= apply)")
        return compute(res, ops, sw, block_dim=block_dim)
    return run


def register(table):
    table["A8W8-perblock"] = _no_user_tiling(compute_perblock)
    table["A4W4-pergroup-asym"] = _no_user_tiling(compute_a4w4_asym)
    table["A8W4-int"] = _no_user_tiling(compute_msd)
    table["A8W4-float"] = _no_user_tiling(compute_a8w4_float)


# --------------------------------------------------------------------------------------------------------------
# A8W4 float on 950: T-CG (docs/ops/quant_matmul.md §7.6) and MxA8W4 (docs/ops/quant_matmul.md §7.5)
# --------------------------------------------------------------------------------------------------------------

def _x2_nd(ops, a, sw):
    """An NZ weight -> its ND storage layout (the cube reads both the same way; values do not change)."""
    if ops["x2"].desc.fmt != "NZ":
        return ops
    return dict(ops, x2=nz_to_storage_nd(ops["x2"], a.transpose_x2, sw.fp4_nibble_order))


def _fp4_codes(op, order):
    d = op.data
    if operands.packing("float4_e2m1", d) == 1:
        return d.view(np.uint8) & np.uint8(0x0F)
    return operands.nibbles(d, order)


def compute_a8w4_float(res, ops, sw, user_tiling=None, block_dim=None):
    a = res.args
    m, k, _, n = routing.mnk(a.x1, a.x2, a.transpose_x1, a.transpose_x2)
    weight_nz = ops["x2"].desc.fmt == "NZ"
    ops = _x2_nd(ops, a, sw)
    check_memory(m * n * 12 + k * n * 10 + m * k * 8, "QuantBatchMatmulV4 A8W4 float output and operands")
    tr = v4t.with_block_dim(v4t.v4_tiling("A8W4-float", m, n, k, sw.soc, sw.core_num, trans_b=a.transpose_x2,
                                          weight_nz=weight_nz, mx=a.x1_scale is not None,
                                          has_bias=a.bias is not None, out_dtype=a.out.dtype, a_dtype=a.x1.dtype),
                            block_dim)
    ep = v4t.epilogue_tiling(tr, sw.soc, sw.core_num, block_dim)
    base_k = ep.tiling.matmulTiling.baseK
    notes = [f"float_accum {sw.float_accum}"]
    if a.x1_scale is not None:                                   # MxA8W4: the V3 MX cube on the same operands
        plan = routing.QuantPlan("MX", "float", "mx", "cube", a.out.dtype)
        acc = float_cube(plan, a, ops["x1"], ops["x2"], ops, sw, ep, m, n, k, 1, notes).reshape(-1)
        bias = None if ops.get("bias") is None else operands.scale_values(ops["bias"]).reshape(-1)
        y, report = _finish(ep, acc, sw, None, bias, a.out.dtype, m, n)
        notes.append("Blaze MatmulWithWeightQuantMx internals undocumented: the golden formula "
                     "(docs/ops/quant_matmul.md §7.5, Q6)")
        return y, _trace(res, tr, sw, "MxA8W4", notes, report)
    # T-CG: the AIV weight prologue, the fp8 cube, the Fixpipe yScale
    codes = np.ascontiguousarray(logical(_fp4_codes(ops["x2"], sw.fp4_nibble_order), a.transpose_x2)).reshape(-1)
    s_op = ops["x2_scale"]
    sv = s_op.data if a.transpose_x2 else np.swapaxes(s_op.data, -1, -2)          # (n, G)
    scale_bits = np.ascontiguousarray(sv).view(np.uint16).reshape(-1)
    cfg = np.zeros(tcg_kernel.TCG_LEN, np.int64)
    cfg[tcg_kernel.TCG_G] = sv.shape[1]
    cfg[tcg_kernel.TCG_RMODE] = rmode(sw)
    cfg[tcg_kernel.TCG_SAT] = int(sw.cast_overflow == "saturate")
    cfg[tcg_kernel.TCG_FP8_SAT] = int(sw.tcg_fp8_overflow == "saturate")
    # the weight is cast to xType, x1's format
    dev = tcg_kernel.device(scale_f16=s_op.dtype == "float16", e5m2=a.x1.dtype == "float8_e5m2")
    w3 = np.empty(k * n, np.uint8)
    launch(dev.tcg_weight_kernel, tr.block_dim, tr.tiling, ro(codes), ro(scale_bits), w3, ro(cfg), ub_size=tr.ub_size,
           validate=False)
    w3v = scalar.DECODE_TABLES[a.x1.dtype][w3].astype(np.float64).reshape(k, n)
    x1v = logical(operands.float_values(ops["x1"]), a.transpose_x1)
    acc = accum.float_matmul(x1v, w3v, operands.SIG_BITS[a.x1.dtype], operands.SIG_BITS[a.x1.dtype],
                             float_accum=sw.float_accum, base_k=base_k)
    acc = np.ascontiguousarray(acc, np.float32).reshape(-1)
    y_scale = np.ascontiguousarray(tqp.deq_scale(ops["y_scale"].data).reshape(-1), np.float32)
    y, report = _finish_scaled(ep, acc, sw, y_scale, a.out.dtype, m, n)
    notes.append(f"weight: fp4 x group scale in bf16/fp16, then x1's format {a.x1.dtype} (tcg_fp8_overflow "
                 f"{sw.tcg_fp8_overflow}); Fixpipe f32(S * t19(yScale))")
    return y, _trace(res, tr, sw, "T-CG", notes, report)


def _finish_scaled(tr, acc, sw, s2, out_dtype, m, n):
    """The Fixpipe f32(acc·s2[n]) and the output cast: the shared V3 epilogue kernel."""
    y8 = np.empty(m * n * 2, np.uint8)
    report = launch_epilogue(tr, acc, None, sw, s2, np.empty(0, np.float32), np.empty((0, 0), np.int32),
                              np.empty((0, 0), np.float32), np.empty(0, np.int32), y8, kernel.OUT_CODES[out_dtype])
    return y8.view(np.float16 if out_dtype == "float16" else ml_dtypes.bfloat16).reshape(m, n), report
