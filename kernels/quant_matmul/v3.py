"""QuantBatchMatmulV3 on checked operands (docs/ops/quant_matmul.md §7, §10): the host path of every V3 route.

The V3 plan (routing.plan_v3) -> the host tiling (tiling.py, or the caller's QuantBatchMatmulV3TilingData) -> the
cube accumulation (accum.py: exact; or, with ``faithful``, kernel.qbmm_cube_faithful_kernel block by block; fp8 /
hif8 / fp4 / MX in :func:`float_cube`, the 950 per-block sum through kernel.qbmm_perblock_kernel) -> the per-core
epilogue (launch.launch_epilogue). v4.py takes :func:`float_cube` for MxA8W4 and its blocks for the final vector
steps.
"""

import numpy as np

from npu_emu.device import memo, platforms
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import Trace, as_int, check_memory, storage_dtype
from npu_emu.kernels.quant_matmul import accum, kernel, operands, routing, tiling as tiling_mod
from npu_emu.kernels.quant_matmul import trans_quant_param as tqp
from npu_emu.kernels.quant_matmul.launch import launch_epilogue
from npu_emu.kernels.quant_matmul.operands import float_values, int_values, logical
from npu_emu.kernels.quant_matmul.weight_nz import nz_to_storage_nd
from npu_emu.device.launch import launch
from npu_emu.device.read_only import read_only

MX_GROUP = 32


def _out_numpy_dtype(name):
    return storage_dtype(name)


def _bias_rows(op):
    """(Bb, N) bias rows: 1-D (n,) -> 1 row; 3-D (batch, 1, n) -> batch rows."""
    return 1 if op.data.ndim == 1 else op.data.shape[0]


def _scale_vec(op, truncate):
    """x2 scale -> float32 values as the dequant reads them (U64: FP19 of bits 0..31; float: t19 if truncated)."""
    if op.dtype in routing.U64:
        return tqp.deq_scale(op.data).reshape(-1)
    v = operands.scale_values(op).reshape(-1)
    return tqp.t19_f32(v) if truncate else np.ascontiguousarray(v, dtype=np.float32)


def broadcast_shapes(a, b):
    """np.broadcast_shapes of two batch shapes as a tuple; equal ones (the 2-D case: both empty) need no numpy call."""
    a, b = tuple(a), tuple(b)
    return a if a == b else tuple(np.broadcast_shapes(a, b))


def _batch_views(x1l, x2l):
    """Logical (b..., m, k) and (b..., k, n) -> lists of 2-D operand views per output batch element."""
    batch = broadcast_shapes(x1l.shape[:-2], x2l.shape[:-2])
    if not batch:                                    # 2-D operands: no broadcast_to (two of them cost 10 us)
        return batch, 1, read_only(x1l[None]), read_only(x2l[None])
    a = np.broadcast_to(x1l, batch + x1l.shape[-2:])
    b = np.broadcast_to(x2l, batch + x2l.shape[-2:])
    nb = int(np.prod(batch)) if batch else 1
    return batch, nb, a.reshape((nb,) + x1l.shape[-2:]), b.reshape((nb,) + x2l.shape[-2:])


def _mx_expand(vals, scale_vals, k, transposed_x, is_x1):
    """Apply the E8M0 group scales exactly: x1 (…, m, k) * S1[…, m, k//32]; x2 (…, k, n) * S2[…, k//32, n].

    Scale layouts (docs/ops/quant_matmul.md §5): x1Scale (…, m, ⌈k/64⌉, 2), transposed x1
    (…, ⌈k/64⌉, m, 2); x2Scale (…, ⌈k/64⌉, n, 2), transposed x2 (…, n, ⌈k/64⌉, 2). Group g sits at
    [g // 2, g % 2]; an odd group count ignores the last half.
    """
    g = -(-k // MX_GROUP)
    s = scale_vals
    # The checker accepts both orders of (rows, ceil(k/64)) when one of them is 1 - the same bytes - so read the
    # scale in the order the transpose flag names.
    rows = vals.shape[-2] if is_x1 else vals.shape[-1]
    kp = s.shape[-3] * s.shape[-2] // max(rows, 1)
    k_first = transposed_x if is_x1 else not transposed_x
    if rows and s.shape[-3] * s.shape[-2] == rows * kp:
        s = s.reshape(s.shape[:-3] + ((kp, rows) if k_first else (rows, kp)) + s.shape[-1:])
    if is_x1:
        if transposed_x:
            s = np.swapaxes(s, -3, -2)                      # (…, m, kp, 2)
        s = s.reshape(s.shape[:-2] + (-1,))[..., :g]         # (…, m, g)
        full = np.repeat(s, MX_GROUP, axis=-1)[..., :k]
        return vals * full
    if not transposed_x:
        s = np.swapaxes(s, -3, -2)                          # (…, n, kp, 2)
    s = s.reshape(s.shape[:-2] + (-1,))[..., :g]             # (…, n, g)
    full = np.repeat(np.swapaxes(s, -1, -2), MX_GROUP, axis=-2)[..., :k, :]
    return vals * full


def _tiling_for(shape, plan, soc, core_num, bias_three_dim, user_tiling, block_dim):
    """The host tiling, or the user's in its place, on ``block_dim`` cores (pure: compute_v3 memoises it)."""
    tr = tiling_mod.quant_matmul_tiling(shape, soc=soc, core_num=core_num, plan=plan, bias_three_dim=bias_three_dim)
    if user_tiling is not None:
        td = user_tiling
        if isinstance(td, (bytes, bytearray, memoryview)):
            td = tiling_mod.QuantBatchMatmulV3TilingData.from_bytes(bytes(td))
        if not isinstance(td, tiling_mod.QuantBatchMatmulV3TilingData):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "tiling must be a QuantBatchMatmulV3TilingData or its packed "
                                                      "bytes (build one with tiling.quant_matmul_tiling)")
        tiling_mod.check_user_tiling(td, shape)
        tr = tiling_mod.with_overrides(tr, tiling=td, block_dim=max(1, td.matmulTiling.usedCoreNum),
                                       notes=tuple(tr.notes) + ("user tiling",))
    if block_dim is not None:
        tr = tiling_mod.with_overrides(tr, block_dim=as_int(block_dim, "block_dim"))
    return tr


def _v3_setup(res):
    """(m, k, n, plan, out code, batch, nb, out itemsize, MatmulShape) of a checked V3 call."""
    a = res.args
    m, k, _, n = routing.mnk(a.x1, a.x2, a.transpose_x1, a.transpose_x2)
    plan = routing.plan_v3(a.x1.dtype, a.x2_scale, a.x1_scale, a.bias.dtype if a.bias else None, a.out.dtype, m, n,
                           res.group_size)
    out_code = kernel.OUT_CODES[a.out.dtype]
    batch = broadcast_shapes(a.x1.shape[:-2], a.x2.shape[:-2])
    nb = int(np.prod(batch)) if batch else 1
    shape = tiling_mod.MatmulShape(m, n, k, batch=nb, trans_a=a.transpose_x1, trans_b=a.transpose_x2,
                                   a_dtype=a.x1.dtype, b_dtype=a.x2.dtype, is_mx=plan.quant_mode == "MX",
                                   perblock=plan.quant_mode == "B-B", gs_m=plan.gs_m)
    return m, k, n, plan, out_code, batch, nb, kernel.OUT_ITEMSIZE[out_code], shape


def compute_v3(res, ops, sw, *, user_tiling=None, block_dim=None, trace=True):
    """QuantBatchMatmulV3 on checked operands -> (y (numpy, out dtype, out shape), Trace, or None unless
    ``trace``)."""
    a = res.args
    x1, x2 = ops["x1"], ops["x2"]
    if x2.desc.fmt == "NZ":
        x2 = nz_to_storage_nd(x2, a.transpose_x2, sw.fp4_nibble_order)
    bias_op = ops.get("bias")
    # the plan, the sizes and the tiling follow from the checked descriptions (res) and the switches alone
    m, k, n, plan, out_code, batch, nb, osize, shape = memo.call(_v3_setup, res)
    check_memory(nb * m * n * (osize + 4) + (a.x1.size + a.x2.size) * 8, "QuantBatchMatmulV3 output and operands")
    bias3d = bias_op is not None and bias_op.data.ndim == 3
    tr = memo.cached(("quant_matmul.v3_tiling", res, sw.soc, sw.core_num, bias3d, user_tiling, block_dim),
                     lambda: _tiling_for(shape, plan, sw.soc, sw.core_num, bias3d, user_tiling, block_dim))
    notes = list(tr.notes)

    # ---- cube: the L0C value of every base block ---------------------------------------------------------------
    if plan.accum == "int":
        x1l = logical(int_values(x1), a.transpose_x1)
        x2l = logical(int_values(x2), a.transpose_x2)
        _, nbb, a3, b3 = _batch_views(x1l, x2l)
        acc = np.empty((nb, m, n), np.int32)
        if sw.faithful:
            a_c = np.array(a3, copy=True).reshape(-1)
            b_c = np.array(b3, copy=True).reshape(-1)
            l0a_nz = np.array([int(platforms.get(sw.soc).npu_arch == 3510)], np.int64)
            launch(kernel.qbmm_cube_faithful_kernel, tr.block_dim, tr.tiling, read_only(a_c), read_only(b_c),
                   acc.reshape(-1), read_only(l0a_nz),
                   ub_size=tr.ub_size, validate=False)
            notes.append("faithful integer cube: per base block and baseK chunk, L0A/L0B loads and Mmad")
        else:
            for i in range(nb):
                acc[i] = accum.int_matmul(a3[i], b3[i])
    else:
        acc = float_cube(plan, a, x1, x2, ops, sw, tr, m, n, k, nb, notes)

    # ---- epilogue operands ---------------------------------------------------------------------------------------
    empty_f = np.empty(0, np.float32)
    s2 = s1 = empty_f
    bias_i = np.empty((0, 0), np.int32)
    bias_f = np.empty((0, 0), np.float32)
    off9 = np.empty(0, np.int32)
    x2s, x1s = ops["x2_scale"], ops.get("x1_scale")
    if plan.epilogue in ("dequant", "requant"):
        if plan.merge_scales:
            merged = (operands.scale_values(x2s).reshape(-1)[:1] * operands.scale_values(x1s).reshape(-1)[:1])
            s2 = tqp.t19_f32(merged.astype(np.float32))
        else:
            s2 = _scale_vec(x2s, plan.truncate_scale)
            if plan.use_pertoken and x1s is not None:
                s1 = np.ascontiguousarray(operands.scale_values(x1s).reshape(-1), dtype=np.float32)
    if plan.epilogue == "requant" and x2s.dtype in routing.U64:
        off9 = tqp.deq_offset(x2s.data).reshape(-1)
    if bias_op is not None:
        rows = _bias_rows(bias_op)
        if plan.bias_stage == "l0c_int":
            bias_i = np.ascontiguousarray(bias_op.data.reshape(rows, -1), dtype=np.int32)
        elif plan.bias_stage == "epilogue":
            bias_f = np.ascontiguousarray(operands.scale_values(bias_op).reshape(rows, -1), dtype=np.float32)
    y8 = np.empty(nb * m * n * osize, np.uint8)
    report = launch_epilogue(tr, acc, plan, sw, s2, s1, bias_i, bias_f, off9, y8, out_code)
    y = y8.view(_out_numpy_dtype(a.out.dtype)).reshape(batch + (m, n))
    if not trace:
        return y, None
    trace = Trace(op="QuantBatchMatmulV3", soc=tr.soc, tiling_data=tr.tiling.fields(),
                  tiling_data_bytes=tr.tiling.to_bytes(), tiling_key=tr.tiling_key, block_dim=tr.block_dim,
                  workspace_size=tr.workspace_size, ub_bytes_per_core=tr.ub_size,
                  gm_overrun=list(report.overruns) if report is not None else [], routed_op=res.op,
                  quant_mode=plan.label, notes=notes + [f"path {plan.path}, epilogue {plan.epilogue}, "
                                                       f"bias {plan.bias_stage}, float_accum {sw.float_accum}"])
    return y, trace


def float_cube(plan, a, x1, x2, ops, sw, tr, m, n, k, nb, notes):
    """fp8 / hif8 / fp4 / MX cube results as float32 (nb, m, n) - or, for B-B, the finished per-block sum."""
    x1v = logical(float_values(x1, sw.fp4_nibble_order), a.transpose_x1)
    x2v = logical(float_values(x2, sw.fp4_nibble_order), a.transpose_x2)
    sig1, sig2 = operands.SIG_BITS[x1.dtype], operands.SIG_BITS[x2.dtype]
    base_k = tr.tiling.matmulTiling.baseK
    if plan.quant_mode == "MX":
        s1v = operands.e8m0_values(ops["x1_scale"], sw.e8m0_zero)
        s2v = operands.e8m0_values(ops["x2_scale"], sw.e8m0_zero)
        x1e = _mx_expand(x1v, s1v, k, a.transpose_x1, True)
        x2e = _mx_expand(x2v, s2v, k, a.transpose_x2, False)
        a32 = b32 = None
        if sw.float_accum in ("numpy", "sequential"):
            # the golden multiplies in float32 (exact unless it over/underflows)
            a32 = _mx_expand(x1v.astype(np.float32), s1v.astype(np.float32), k, a.transpose_x1, True)
            b32 = _mx_expand(x2v.astype(np.float32), s2v.astype(np.float32), k, a.transpose_x2, False)
        y = accum.float_matmul(x1e, x2e, sig1, sig2, float_accum=sw.float_accum, base_k=base_k, a32=a32, b32=b32)
        return np.ascontiguousarray(y.reshape(nb, m, n), dtype=np.float32)
    if plan.quant_mode == "B-B":
        return _perblock(plan, a, x1v, x2v, sig1, sig2, ops, sw, tr, m, n, k, nb)
    bias = None
    if plan.bias_stage == "l0c_float":
        b = ops["bias"]
        bias = np.ascontiguousarray(operands.scale_values(b).reshape(_bias_rows(b), -1), dtype=np.float32)
    y = accum.float_matmul(x1v, x2v, sig1, sig2, float_accum=sw.float_accum, base_k=base_k, bias=bias)
    return np.ascontiguousarray(y.reshape(nb, m, n), dtype=np.float32)


def _perblock(plan, a, x1v, x2v, sig1, sig2, ops, sw, tr, m, n, k, nb):
    """950 per-block (docs/ops/quant_matmul.md §7.4): per 128-wide k block the exact (or float_accum) block sum, scaled
    and added."""
    s1 = operands.scale_values(ops["x1_scale"])
    s2 = operands.scale_values(ops["x2_scale"])
    s1 = np.swapaxes(s1, -1, -2) if a.transpose_x1 else s1          # (…, M1, G)
    s2 = np.swapaxes(s2, -1, -2) if a.transpose_x2 else s2          # (…, G, N1)
    batch = broadcast_shapes(x1v.shape[:-2], x2v.shape[:-2])
    s1 = np.array(np.broadcast_to(s1, batch + s1.shape[-2:]), dtype=np.float32, copy=True)
    s2 = np.array(np.broadcast_to(s2, batch + s2.shape[-2:]), dtype=np.float32, copy=True)
    g = -(-k // 128)
    acc = np.zeros(nb * m * n, np.float32)
    cfg = np.array([0, plan.gs_m, plan.gs_n, g, s1.shape[-2], s2.shape[-1]], np.int64)
    for j in range(g):
        k0, k1 = j * 128, min(k, (j + 1) * 128)
        part = accum.float_matmul(x1v[..., k0:k1], x2v[..., k0:k1, :], sig1, sig2, float_accum=sw.float_accum,
                                  base_k=128)
        cfg[0] = j
        launch(kernel.qbmm_perblock_kernel, tr.block_dim, tr.tiling,
               read_only(np.ascontiguousarray(part, dtype=np.float32).reshape(-1)), read_only(s1.reshape(-1)),
               read_only(s2.reshape(-1)), acc, read_only(cfg),
               ub_size=tr.ub_size, validate=False)
    return acc.reshape(nb, m, n)
