"""Front ends of the quantised matmul family: torch_npu ``npu_quant_matmul`` / ``npu_trans_quant_param`` and the
aclnn pairs aclnnQuantMatmulV3/V4/V5/WeightNz and aclnnTransQuantParamV2/V3 (docs/ops/quant_matmul.md §2, §4, §11).

Call flow (docs/contributing/layout.md): normalise (dtype relabels, transposed views, sub-byte unpacking) -> the aclnn
checks (checks.py, CANN's order and codes) -> routing (V3 or V4; the V4 modes - int8 G-B, A4W4 K-G, A8W4 MSD, T-CG,
MxA8W4 - are computed by v4.py through ``V4_KERNELS``) -> the V3 plan (routing.plan_v3) -> host tiling -> the
cube accumulation (accum.py: exact; or the faithful per-block integer kernel) -> the per-core epilogue kernel
over the base blocks (kernel.py, launched and validated by npu_emu.device.launch) -> the caller's array type.

Switches (docs/ops/quant_matmul.md §1, docs/conventions.md §3.1): ``soc`` ("ascend910b2"), ``float_accum`` ("exact"),
``fixpipe_round`` ("rne"), ``cast_overflow`` ("inf"), ``tcg_fp8_overflow`` ("nan"; the T-CG weight dequant of v4.py),
``fp4_nibble_order`` ("low_first"), ``e8m0_zero`` ("pow2"), ``group_size_inference`` ("checker"), ``trace``.
npu-emu extras: ``core_num`` (cube cores), ``tiling`` (your QuantBatchMatmulV3TilingData), ``block_dim``,
``faithful`` (integer cube block by block in njit instead of the exact BLAS primitive), ``validate``.
"""

from dataclasses import dataclass, replace

import numpy as np

from npu_emu.device import platforms
from npu_emu.device import memo
from npu_emu.dtypes import scalar
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
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
    resolve_dtype,
    run_executor,
    storage_dtype,
    to_user,
    write_out,
)
from npu_emu.kernels.quant_matmul import accum, checks, kernel, operands, routing, tiling as tiling_mod
from npu_emu.kernels.quant_matmul import trans_quant_param as tqp
from npu_emu.kernels.quant_matmul.checks import QmmArgs
from npu_emu.kernels.quant_matmul.operands import Operand, float_values, int_values, logical
from npu_emu.kernels.quant_matmul.routing import TensorDesc
from npu_emu.device.launch import checked_access, launch

DEFAULT_SOC = "ascend910b2"
FIXPIPE_ROUND = ("rne", "half_away")
CAST_OVERFLOW = ("inf", "saturate")
TCG_FP8_OVERFLOW = ("nan", "saturate")
GROUP_SIZE_INFERENCE = ("checker", "explicit")
MX_GROUP = 32


@dataclass(frozen=True)
class Switches:
    soc: str = DEFAULT_SOC
    float_accum: str = "exact"
    fixpipe_round: str = "rne"
    cast_overflow: str = "inf"
    tcg_fp8_overflow: str = "nan"
    fp4_nibble_order: str = "low_first"
    e8m0_zero: str = "pow2"
    group_size_inference: str = "checker"
    core_num: int = None
    faithful: bool = False
    validate: bool = True


def _switches(soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow, fp4_nibble_order, e8m0_zero,
              group_size_inference, core_num, faithful, validate):
    """The checked switches (a frozen Switches; pure in the arguments, so a repeat takes it from the memo)."""
    return memo.call(_make_switches, soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow,
                     fp4_nibble_order, e8m0_zero, group_size_inference, core_num, faithful, validate)


def _make_switches(soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow, fp4_nibble_order, e8m0_zero,
                   group_size_inference, core_num, faithful, validate):
    platforms.get(soc)  # unknown soc -> the platform module's error
    return Switches(
        soc=soc, float_accum=choice(float_accum, "float_accum", accum.FLOAT_ACCUM),
        fixpipe_round=choice(fixpipe_round, "fixpipe_round", FIXPIPE_ROUND),
        cast_overflow=choice(cast_overflow, "cast_overflow", CAST_OVERFLOW),
        tcg_fp8_overflow=choice(tcg_fp8_overflow, "tcg_fp8_overflow", TCG_FP8_OVERFLOW),
        fp4_nibble_order=choice(fp4_nibble_order, "fp4_nibble_order", operands.FP4_ORDERS),
        e8m0_zero=choice(e8m0_zero, "e8m0_zero", operands.E8M0_ZERO),
        group_size_inference=choice(group_size_inference, "group_size_inference", GROUP_SIZE_INFERENCE),
        core_num=None if core_num is None else as_int(core_num, "core_num"), faithful=bool(faithful),
        validate=bool(validate))


# --------------------------------------------------------------------------------------------------------------
# NZ weights (FRACTAL_NZ storage plus the ND view shape the aclnn tensor carries)
# --------------------------------------------------------------------------------------------------------------

SUB_BYTE_NZ = ("float4_e2m1", "int4", "int32")      # 4-bit elements (int32 = 8 packed int4 per word)


class NzWeight:
    """An x2 in FRACTAL_NZ: ``storage`` (..., N1, M1, 16, c0) plus the ND ``shape`` of its view
    (docs/ops/quant_matmul.md §3.4).

    numpy arrays carry no storage format, so WeightNz callers wrap their NZ bytes in this. ``from_nd(x2, dtype)``
    builds it from an ND weight the way aclnnTransMatmulWeight lays it out (8-bit formats, c0 = 32 elements).
    4-bit weights (fp4 E2M1, int4, int32-packed int4): ``shape`` counts 4-bit elements, the storage holds c0 =
    32 (A8W4 fp4) or 64 elements per fractal row, packed two per byte (even element in the low nibble) or eight
    per int32 word; ``from_nd(values, dtype, c0=...)`` packs one-value-per-byte codes that way.
    """

    def __init__(self, storage, shape, dtype=None, transposed=False):
        self.storage = storage
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        # the caller's x2 is the transpose of this weight, as torch_npu's .transpose(-1, -2) of an NZ tensor: the
        # aclnn layer gets transposeX2 = true (the torch front end's NZ records, docs/integrations/torch.md §3.4)
        self.transposed = bool(transposed)

    @classmethod
    def from_nd(cls, x2, dtype=None, c0=None, transposed=False):
        nz = cls._from_nd(x2, dtype, c0)
        nz.transposed = bool(transposed)
        return nz

    @classmethod
    def _from_nd(cls, x2, dtype=None, c0=None):
        from npu_emu.ascendc.nz import nd_to_nz

        arr = np.asarray(x2)
        name = None if dtype is None else resolve_dtype(dtype, "dtype")
        if name in SUB_BYTE_NZ:
            if arr.dtype.itemsize != 1:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, "NzWeight.from_nd of a 4-bit weight takes one code or value "
                                                          "per byte (uint8 codes or ml_dtypes int4/float4_e2m1fn)")
            c0 = int(c0 or (32 if name == "float4_e2m1" else 64))
            codes = nd_to_nz(arr.view(np.uint8) & np.uint8(0x0F), c0=c0)
            packed = codes[..., 0::2] | (codes[..., 1::2] << np.uint8(4))
            if name == "int32":
                packed = np.ascontiguousarray(packed).view(np.int32)
            return cls(np.ascontiguousarray(packed), arr.shape, name)
        if arr.dtype.itemsize != 1:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "NzWeight.from_nd supports 8-bit weights (int8, fp8, hifloat8) "
                                                      "and 4-bit ones with dtype= (float4_e2m1, int4, int32)")
        return cls(nd_to_nz(arr, c0=32), arr.shape, dtype)


def _nz_operand(w, name, dtype, origin):
    store = as_array(w.storage, name, origin=origin)
    dt = resolve_dtype(dtype if dtype is not None else (w.dtype if w.dtype is not None else store.dtype),
                       f"{name} dtype")
    if dt in SUB_BYTE_NZ:
        per = 8 if store.dtype.itemsize == 4 else (2 if store.dtype in (np.uint8, np.int8) else 1)
        c0 = store.shape[-1] * per if store.ndim else 0
        if store.ndim < 4 or store.shape[-2] != 16 or c0 not in (32, 64):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: a 4-bit FRACTAL_NZ storage must be (..., N1, M1, 16, "
                                                      f"c0) with c0 = 32 or 64 elements, got {store.shape} "
                                                      f"({per} element(s) per item)")
        desc = TensorDesc(dt, w.shape, "NZ", tuple(store.shape[:-1]) + (c0,))
        return Operand(name, store, dt, desc, getattr(w, "transposed", False))
    if store.dtype.itemsize != 1 or dt not in ("int8", "float8_e4m3fn", "float8_e5m2", "hifloat8"):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: npu-emu supports FRACTAL_NZ weights of 8-bit formats "
                                                  f"(int8, fp8, hifloat8) and 4-bit ones (fp4, int4), got {dt}")
    if store.ndim < 4 or store.shape[-2:] != (16, 32):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: FRACTAL_NZ storage must be (..., N1, M1, 16, 32), got "
                                                  f"{store.shape}")
    desc = TensorDesc(dt, w.shape, "NZ", tuple(store.shape))
    return Operand(name, store, dt, desc, getattr(w, "transposed", False))


def _nz_to_storage_nd(op, transposed, fp4_nibble_order="low_first"):
    """NZ storage -> the ND storage layout ((k, n), or (n, k) when transposed). 4-bit formats come back one
    value per byte (ml_dtypes int4 / float4_e2m1fn), which operands.int_values / float_values read directly."""
    from npu_emu.ascendc.nz import nz_to_nd

    rows, cols = op.desc.shape[-2:]
    data = op.data
    if op.dtype in SUB_BYTE_NZ:
        import ml_dtypes

        per = 1 if op.desc.storage_shape[-1] == data.shape[-1] else 0
        codes = (data.view(np.uint8) & np.uint8(0x0F)) if per else \
            operands.nibbles(data, fp4_nibble_order if op.dtype == "float4_e2m1" else "low_first")
        codes = codes.reshape(op.desc.storage_shape)
        nd = np.ascontiguousarray(nz_to_nd(codes, rows, cols))
        data = nd.view(ml_dtypes.float4_e2m1fn if op.dtype == "float4_e2m1" else ml_dtypes.int4)
        return Operand(op.name, data, op.dtype, replace(op.desc, fmt="ND", storage_shape=None))
    nd = nz_to_nd(data, rows, cols)
    return Operand(op.name, np.ascontiguousarray(nd), op.dtype, replace(op.desc, fmt="ND", storage_shape=None))


# --------------------------------------------------------------------------------------------------------------
# the computation (inputs checked)
# --------------------------------------------------------------------------------------------------------------

def _rmode(sw):
    return scalar.CAST_ROUND if sw.fixpipe_round == "half_away" else scalar.CAST_RINT


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


def _broadcast_shapes(a, b):
    """np.broadcast_shapes of two batch shapes as a tuple; equal ones (the 2-D case: both empty) need no numpy call."""
    a, b = tuple(a), tuple(b)
    return a if a == b else tuple(np.broadcast_shapes(a, b))


def _batch_views(x1l, x2l):
    """Logical (b..., m, k) and (b..., k, n) -> lists of 2-D operand views per output batch element."""
    batch = _broadcast_shapes(x1l.shape[:-2], x2l.shape[:-2])
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


def _launch_epilogue(tr, acc, plan, sw, s2, s1, bias_i, bias_f, off9, y8, out_code):
    acc_i32 = acc.reshape(-1) if acc.dtype == np.int32 else np.empty(0, np.int32)
    acc_f32 = acc.reshape(-1) if acc.dtype == np.float32 else np.empty(0, np.float32)
    bias_rows = 1
    if bias_i.size:
        bias_rows = bias_i.shape[0]
    elif bias_f.size:
        bias_rows = bias_f.shape[0]
    cfg = np.zeros(kernel.CFG_LEN, np.int64)
    cfg[kernel.CFG_OUT] = out_code
    cfg[kernel.CFG_RMODE] = _rmode(sw)
    cfg[kernel.CFG_SAT] = int(sw.cast_overflow == "saturate")
    cfg[kernel.CFG_BIAS_ROWS] = bias_rows
    cfg[kernel.CFG_ACC_INT] = int(acc.dtype == np.int32)
    # fresh writeable C copies of the small operands: numba compiles a separate kernel for read-only arrays
    small = lambda x, dt: np.array(x, dtype=dt, copy=True).reshape(-1)
    bufs = [("acc_i32", acc_i32), ("acc_f32", acc_f32), ("s2", small(s2, np.float32)), ("s1", small(s1, np.float32)),
            ("bias_i", small(bias_i, np.int32)), ("bias_f", small(bias_f, np.float32)), ("off9", small(off9, np.int32)),
            ("cfg", cfg), ("y", y8)]
    itemsize = kernel.OUT_ITEMSIZE[out_code]
    access = None
    if sw.validate:
        # the blocks' rows follow the tiling alone; the buffers enter by their sizes (their dtypes are set above,
        # y8's by the caller)
        sizes = tuple([b.size for _, b in bufs])
        access = checked_access(("quant_matmul.epilogue", tr, sizes, y8.dtype, itemsize),
                                lambda: kernel.epilogue_access(tr, bufs, itemsize), ub_size=tr.ub_size,
                                what=f"{kernel.qbmm_epilogue_kernel.__name__} tiling")
    report = launch(kernel.qbmm_epilogue_kernel, tr.block_dim, tr.tiling, *[b for _, b in bufs], ub_size=tr.ub_size,
                    access=access, validate=sw.validate)
    return report


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
    batch = _broadcast_shapes(a.x1.shape[:-2], a.x2.shape[:-2])
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
        x2 = _nz_to_storage_nd(x2, a.transpose_x2, sw.fp4_nibble_order)
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
            launch(kernel.qbmm_cube_faithful_kernel, tr.block_dim, tr.tiling, a_c, b_c, acc.reshape(-1), l0a_nz,
                   ub_size=tr.ub_size, validate=False)
            notes.append("faithful integer cube: per base block and baseK chunk, L0A/L0B loads and Mmad")
        else:
            for i in range(nb):
                acc[i] = accum.int_matmul(a3[i], b3[i])
    else:
        acc = _float_cube(plan, a, x1, x2, ops, sw, tr, m, n, k, nb, notes)

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
    report = _launch_epilogue(tr, acc, plan, sw, s2, s1, bias_i, bias_f, off9, y8, out_code)
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


def _float_cube(plan, a, x1, x2, ops, sw, tr, m, n, k, nb, notes):
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
    batch = _broadcast_shapes(x1v.shape[:-2], x2v.shape[:-2])
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
               np.ascontiguousarray(part, dtype=np.float32).reshape(-1), s1.reshape(-1), s2.reshape(-1), acc, cfg,
               ub_size=tr.ub_size, validate=False)
    return acc.reshape(nb, m, n)


# --------------------------------------------------------------------------------------------------------------
# argument normalisation shared by the front ends
# --------------------------------------------------------------------------------------------------------------

def _op(x, name, dtype=None, origin=None, transpose=False):
    """x1/x2 (``transpose``: transposed views flip the flag) or any other tensor (transposed views are read as
    their storage block, as aclnn's contiguous processing does for scales, bias and offsets)."""
    if isinstance(x, NzWeight):
        return _nz_operand(x, name, dtype, origin)
    return operands.operand(x, name, dtype, origin=origin, detect_transpose=transpose, int32_is_int4=transpose,
                            storage=not transpose)


def _same_transpose(x1, x2, scale, pertoken_scale, pertoken_dtype, a8w4):
    """op-plugin's check that x1 / pertoken_scale and x2 / scale are transposed alike (G-B, B-B, MX;
    ``is_x_scale_same_transpose`` in Ascend/op-plugin: op_plugin/ops/opapi/QuantMatmulKernelNpuOpApi.cpp)."""
    ndim = lambda t: len(t.shape)
    # op-plugin reads torch strides; numpy cannot tell a transposed view from a contiguous array when a compared
    # dim has size 1, so the check applies to torch tensors only (numpy callers get aclnn's reading of the views)
    if pertoken_scale is None or a8w4 or not all(is_torch_tensor(t) for t in (x1, x2, scale, pertoken_scale)):
        return
    mx = pertoken_dtype == "float8_e8m0"
    if not ((ndim(pertoken_scale) == ndim(x1) and ndim(scale) == ndim(x2)) or mx):
        return
    if ndim(pertoken_scale) < 2 or ndim(scale) < 2:
        return
    for x, s, xn, sn in ((x1, pertoken_scale, "x1", "pertoken_scale"), (x2, scale, "x2", "scale")):
        dx = ndim(x) - 2
        ds = 0 if mx else ndim(s) - 2          # op-plugin compares an MX scale's first two dims
        if ndim(x) < dx + 2 or ndim(s) < ds + 2:
            continue
        if (x.shape[dx] == 1 and x.shape[dx + 1] == 1) or (s.shape[ds] == 1 and s.shape[ds + 1] == 1):
            continue
        if operands.transposed_pair(x, dx) != operands.transposed_pair(s, ds):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"Input {xn} tensor and {sn} tensor's transpose are not same: when {xn} is a transposed "
                             f"view, pass {sn} as the same kind of view of its storage (e.g. .transpose(-1, -2), or "
                             f".transpose(-3, -2) for an E8M0 scale), else pass both contiguous")


def _out_desc(out, out_dtype=None):
    if out is None:
        return None
    arr = as_array(out, "out") if (is_torch_tensor(out) or not isinstance(out, np.ndarray)) else out
    dt = resolve_dtype(out_dtype if out_dtype is not None else arr.dtype, "out dtype")
    return TensorDesc(dt, tuple(arr.shape))


def _args(api, ops, out_desc, transpose_x1, transpose_x2, group_size):
    d = lambda key: None if ops.get(key) is None else ops[key].desc
    t1 = bool(transpose_x1) ^ (ops["x1"].flipped if ops.get("x1") else False)
    t2 = bool(transpose_x2) ^ (ops["x2"].flipped if ops.get("x2") else False)
    return QmmArgs(api=api, x1=d("x1"), x2=d("x2"), x2_scale=d("x2_scale"), out=out_desc, x1_scale=d("x1_scale"),
                   y_scale=d("y_scale"), x1_offset=d("x1_offset"), x2_offset=d("x2_offset"), y_offset=d("y_offset"),
                   bias=d("bias"), transpose_x1=t1, transpose_x2=t2, group_size=int(group_size))


def _check(api, a, sw):
    # pure in the tensor descriptions and two switches: a repeated call takes the (frozen) result from the memo,
    # a rejected one is checked and rejected again
    return memo.call(_check_args, api, a, sw.soc, sw.group_size_inference)


def _check_args(api, a, soc, group_size_inference):
    if api == 5:
        return checks.check_v5(a, soc, group_size_inference=group_size_inference)
    if api == "nz":
        return checks.check_weight_nz(a, soc, group_size_inference=group_size_inference)
    return checks.check_v3v4(a, soc, group_size_inference=group_size_inference)


# QuantBatchMatmulV4 modes with an implementation: v4 mode name (routing.V4_MODES) ->
# compute(res, ops, sw, user_tiling=None, block_dim=None) -> (y, Trace), registered by v4.register; a mode
# without an entry is rejected in phase 1 with 561003 "not yet supported".
V4_KERNELS = {}


def _register_v4():
    from npu_emu.kernels.quant_matmul import v4

    v4.register(V4_KERNELS)


_register_v4()


def _gated(res, sw):
    """Phase-1 gate after the checks: the V4 tiling rejections, then a kernel must exist for the route."""
    checks.check_v4_tiling(res, sw.soc)
    if res.op == "QuantBatchMatmulV4" and res.v4_mode in V4_KERNELS:
        return
    checks.require_v3_kernel(res, sw.soc)


def _compute(res, ops, sw, user_tiling=None, block_dim=None, trace=True):
    if res.op == "QuantBatchMatmulV4":
        return V4_KERNELS[res.v4_mode](res, ops, sw, user_tiling=user_tiling, block_dim=block_dim)
    return compute_v3(res, ops, sw, user_tiling=user_tiling, block_dim=block_dim, trace=trace)


def _empty_result(a):
    m, _, _, n = routing.mnk(a.x1, a.x2, a.transpose_x1, a.transpose_x2)
    batch = _broadcast_shapes(a.x1.shape[:-2], a.x2.shape[:-2])
    return np.zeros(batch + (m, n), _out_numpy_dtype(a.out.dtype))


# --------------------------------------------------------------------------------------------------------------
# torch_npu front ends (npu_emu.ops)
# --------------------------------------------------------------------------------------------------------------

def npu_trans_quant_param(scale, offset=None, round_mode=0):
    """torch_npu.npu_trans_quant_param: float32 scale (and offset) -> int64 packed words
    (docs/ops/quant_matmul.md §3.3, TV-K)."""
    origin = Origin()
    s = as_array(scale, "scale", origin=origin)
    o = None if offset is None else as_array(offset, "offset", origin=origin)
    rm = 0 if round_mode is None else as_int(round_mode, "round_mode")
    words = tqp.trans_quant_param(s, o, rm)
    return to_user(words.view(np.int64), origin)


def _group_sizes(group_sizes):
    if group_sizes is None or len(group_sizes) == 0:
        return 0
    if len(group_sizes) != 3:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"group_sizes only supports three elements [gm, gn, gk], got "
                                                  f"{list(group_sizes)}")
    vals = [as_int(v, "group_sizes") for v in group_sizes]
    if any(not 0 <= v <= 65535 for v in vals):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"group param value must conform to range [0, 65535], got {vals}")
    return routing.encode_group_size(*vals)


def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None,
                     x1_dtype=None, x2_dtype=None, pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None,
                     y_scale=None, soc=DEFAULT_SOC, float_accum="exact", fixpipe_round="rne", cast_overflow="inf",
                     tcg_fp8_overflow="nan", fp4_nibble_order="low_first", e8m0_zero="pow2",
                     group_size_inference="checker", core_num=None, tiling=None, block_dim=None, faithful=False,
                     validate=True, trace=False):
    """torch_npu.npu_quant_matmul with op-plugin's mapping (docs/ops/quant_matmul.md §11.1,
    ``QuantMatmulKernelNpuOpApi.cpp``).

    scale -> x2Scale, pertoken_scale -> x1Scale, offset -> x2Offset (yOffset for int8 x int32), y_scale -> yScale;
    ``*_dtype`` relabel the bits (names such as "hifloat8", "float8_e8m0", "float4_e2m1", "int4", aclDataType
    ints, numpy/ml_dtypes/torch dtypes). Output dtype defaults to int8. A float32 scale without pertoken_scale
    and with a non-int32 output (not bf16 unless the V5-only path is taken) is first packed by
    npu_trans_quant_param (FP19 truncation). Transposes come from strides (a transposed view is detected). An
    x2 given as :class:`NzWeight` goes to aclnnQuantMatmulWeightNz. Every switch is a keyword.
    """
    sw = _switches(soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow, fp4_nibble_order, e8m0_zero,
                   group_size_inference, core_num, faithful, validate)
    origin = Origin()
    for arg, name in ((x1, "x1"), (x2, "x2"), (scale, "scale")):
        if arg is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"npu_quant_matmul: {name} is None; pass a tensor")
    gs = _group_sizes(group_sizes)
    out_name = "int8" if output_dtype is None else resolve_dtype(output_dtype, "output_dtype")
    o1 = _op(x1, "x1", x1_dtype, origin, transpose=True)
    o2 = _op(x2, "x2", x2_dtype, origin, transpose=True)
    os2 = _op(scale, "scale", scale_dtype, origin)
    os1 = _op(pertoken_scale, "pertoken_scale", pertoken_scale_dtype, origin)
    if not isinstance(x2, NzWeight):
        _same_transpose(x1, x2, scale, pertoken_scale, None if os1 is None else os1.dtype,
                        (o1.dtype == "int8" and o2.dtype == "int32") or
                        (o1.dtype in ("float8_e4m3fn", "float8_e5m2") and o2.dtype in ("float32", "float4_e2m1")))
    ob = _op(bias, "bias", None, origin)
    oy = _op(y_scale, "y_scale", None, origin)
    ooff = _op(offset, "offset", None, origin)
    a8w4_int = o1.dtype == "int8" and o2.dtype == "int32" and x2_dtype is None
    a8w4_float = o1.dtype == "float8_e4m3fn" and o2.dtype in ("float32", "float4_e2m1")
    use_v5 = x1_dtype is not None or o1.dtype not in ("int32", "int8") or a8w4_int or a8w4_float
    if os2.dtype == "float32" and os1 is None and (out_name != "bfloat16" or use_v5) and out_name != "int32":
        packed = tqp.trans_quant_param(os2.data, None if ooff is None else
                                       np.ascontiguousarray(ooff.data, dtype=np.float32), 0)
        os2 = operands.operand(packed.view(np.int64), "scale")
    ops = {"x1": o1, "x2": o2, "x2_scale": os2, "x1_scale": os1, "bias": ob, "y_scale": oy,
           "y_offset": ooff if a8w4_int else None, "x2_offset": None if a8w4_int else ooff}
    m, _, _, n = routing.mnk(o1.desc, o2.desc, o1.flipped, o2.flipped) if min(o1.desc.ndim, o2.desc.ndim) >= 2 \
        else (0, 0, 0, 0)
    try:
        batch = _broadcast_shapes(o1.desc.shape[:-2], o2.desc.shape[:-2]) if min(o1.desc.ndim, o2.desc.ndim) >= 2 \
            else ()
    except ValueError:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"npu_quant_matmul: the batch dims of x1 {o1.desc.shape[:-2]} and "
                                                  f"x2 {o2.desc.shape[:-2]} do not broadcast") from None
    out_desc = TensorDesc(out_name, tuple(batch) + (m, n))
    api = "nz" if isinstance(x2, NzWeight) else 5
    a = _args(api, ops, out_desc, False, False, gs)
    res = _check(api, a, sw)
    if res.empty:
        y, tr = _empty_result(res.args), None
    else:
        _gated(res, sw)
        y, tr = _compute(res, ops, sw, user_tiling=tiling, block_dim=block_dim, trace=trace)
    y = to_user(y, origin)
    return (y, tr) if trace else y


# --------------------------------------------------------------------------------------------------------------
# aclnn two-phase API (npu_emu.aclnn)
# --------------------------------------------------------------------------------------------------------------

def _out_array(out):
    if out is None:
        return None
    if is_torch_tensor(out):
        return as_array(out, "out")
    if not isinstance(out, np.ndarray):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "out must be a numpy array or a torch CPU tensor")
    return out


def _workspace(api, op_name, tensors, out, transpose_x1, transpose_x2, group_size, dtypes, sw_kwargs):
    def build():
        sw = _switches(**sw_kwargs)
        ops = {}
        for key, (x, name) in tensors.items():
            ops[key] = _op(x, name, dtypes.get(key), None, transpose=key in ("x1", "x2"))
        if "bias" in ops and ops["bias"] is not None and ops["bias"].data.ndim == 0:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "bias must be at least 1-D")
        o = _out_array(out)
        a = _args(api, ops, None if o is None else TensorDesc(resolve_dtype(o.dtype, "out dtype"), tuple(o.shape)),
                  as_bool(transpose_x1, "transposeX1"), as_bool(transpose_x2, "transposeX2"),
                  as_int(group_size, "groupSize"))
        res = _check(api, a, sw)
        if res.empty:
            return Executor(op_name, lambda: None, 0)
        _gated(res, sw)
        m, _, _, n = routing.mnk(res.args.x1, res.args.x2, res.args.transpose_x1, res.args.transpose_x2)
        shape = tiling_mod.MatmulShape(m, n, 1)
        ws = memo.call(tiling_mod.quant_matmul_tiling, shape, soc=sw.soc, core_num=sw.core_num).workspace_size

        def run():
            y, _ = _compute(res, ops, sw, trace=False)
            write_out(out, y.reshape(o.shape))

        return Executor(op_name, run, ws)

    return get_workspace(op_name, build)


def as_bool(v, name):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}={v!r} must be a bool")


def _sw_kwargs(soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow, fp4_nibble_order, e8m0_zero,
               group_size_inference, core_num):
    return dict(soc=soc, float_accum=float_accum, fixpipe_round=fixpipe_round, cast_overflow=cast_overflow,
                tcg_fp8_overflow=tcg_fp8_overflow, fp4_nibble_order=fp4_nibble_order, e8m0_zero=e8m0_zero,
                group_size_inference=group_size_inference, core_num=core_num, faithful=False, validate=True)


_SWITCH_DOC = """Keyword extras: the ``*_dtype`` relabels (uint8 bits as hifloat8 / float8_e8m0 / float4_e2m1 / int4, and
    int32 as int4), and the switches ``soc``, ``float_accum``, ``fixpipe_round``, ``cast_overflow``,
    ``tcg_fp8_overflow``, ``fp4_nibble_order``, ``e8m0_zero``, ``group_size_inference``, ``core_num``."""


def aclnnQuantMatmulV5GetWorkspaceSize(x1, x2, x1Scale, x2Scale, yScale, x1Offset, x2Offset, yOffset, bias,
                                       transposeX1, transposeX2, groupSize, out, *, x1_dtype=None, x2_dtype=None,
                                       x1_scale_dtype=None, x2_scale_dtype=None, soc=DEFAULT_SOC,
                                       float_accum="exact", fixpipe_round="rne", cast_overflow="inf",
                                       tcg_fp8_overflow="nan", fp4_nibble_order="low_first", e8m0_zero="pow2",
                                       group_size_inference="checker", core_num=None):
    """-> (status, workspace_size, executor). """
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x1_scale": (x1Scale, "x1Scale"), "x2_scale": (x2Scale, "x2Scale"),
               "y_scale": (yScale, "yScale"), "x1_offset": (x1Offset, "x1Offset"), "x2_offset": (x2Offset, "x2Offset"),
               "y_offset": (yOffset, "yOffset"), "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x1_scale": x1_scale_dtype, "x2_scale": x2_scale_dtype}
    return _workspace(5, "aclnnQuantMatmulV5", tensors, out, transposeX1, transposeX2, groupSize, dtypes,
                      _sw_kwargs(soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow, fp4_nibble_order,
                                 e8m0_zero, group_size_inference, core_num))


def aclnnQuantMatmulV5(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnQuantMatmulV5")


def aclnnQuantMatmulWeightNzGetWorkspaceSize(x1, x2, x1Scale, x2Scale, yScale, x1Offset, x2Offset, yOffset, bias,
                                             transposeX1, transposeX2, groupSize, out, *, x1_dtype=None,
                                             x2_dtype=None, x1_scale_dtype=None, x2_scale_dtype=None,
                                             soc=DEFAULT_SOC, float_accum="exact", fixpipe_round="rne",
                                             cast_overflow="inf", tcg_fp8_overflow="nan",
                                             fp4_nibble_order="low_first", e8m0_zero="pow2",
                                             group_size_inference="checker", core_num=None):
    """-> (status, workspace_size, executor). x2 must be an :class:`NzWeight` (FRACTAL_NZ storage + view shape)."""
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x1_scale": (x1Scale, "x1Scale"), "x2_scale": (x2Scale, "x2Scale"),
               "y_scale": (yScale, "yScale"), "x1_offset": (x1Offset, "x1Offset"), "x2_offset": (x2Offset, "x2Offset"),
               "y_offset": (yOffset, "yOffset"), "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x1_scale": x1_scale_dtype, "x2_scale": x2_scale_dtype}
    return _workspace("nz", "aclnnQuantMatmulWeightNz", tensors, out, transposeX1, transposeX2, groupSize, dtypes,
                      _sw_kwargs(soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow, fp4_nibble_order,
                                 e8m0_zero, group_size_inference, core_num))


def aclnnQuantMatmulWeightNz(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnQuantMatmulWeightNz")


def aclnnQuantMatmulV4GetWorkspaceSize(x1, x2, scale, offset, pertokenScaleOptional, bias, transposeX1,
                                       transposeX2, out, *, x1_dtype=None, x2_dtype=None, scale_dtype=None,
                                       soc=DEFAULT_SOC, fixpipe_round="rne", cast_overflow="inf", core_num=None):
    """-> (status, workspace_size, executor). Deprecated by CANN in favour of V5; integer inputs on A2/A3."""
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x2_scale": (scale, "scale"), "x2_offset": (offset, "offset"),
               "x1_scale": (pertokenScaleOptional, "pertokenScaleOptional"), "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x2_scale": scale_dtype}
    return _workspace(4, "aclnnQuantMatmulV4", tensors, out, transposeX1, transposeX2, 0, dtypes,
                      _sw_kwargs(soc, "exact", fixpipe_round, cast_overflow, "nan", "low_first", "pow2", "checker",
                                 core_num))


def aclnnQuantMatmulV4(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnQuantMatmulV4")


def aclnnQuantMatmulV3GetWorkspaceSize(x1, x2, scale, offset, bias, transposeX1, transposeX2, out, *, x1_dtype=None,
                                       x2_dtype=None, scale_dtype=None, soc=DEFAULT_SOC, fixpipe_round="rne",
                                       cast_overflow="inf", core_num=None):
    """-> (status, workspace_size, executor). No pertoken scale (aclnnQuantMatmulV3's signature)."""
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x2_scale": (scale, "scale"), "x2_offset": (offset, "offset"),
               "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x2_scale": scale_dtype}
    return _workspace(3, "aclnnQuantMatmulV3", tensors, out, transposeX1, transposeX2, 0, dtypes,
                      _sw_kwargs(soc, "exact", fixpipe_round, cast_overflow, "nan", "low_first", "pow2", "checker",
                                 core_num))


def aclnnQuantMatmulV3(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnQuantMatmulV3")


def _tqp_workspace(op_name, scale, offset, round_mode, out):
    def build():
        if scale is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{op_name}: scale is a null tensor")
        if out is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{op_name}: out is a null tensor")
        s = as_array(scale, "scale")
        off = None if offset is None else as_array(offset, "offset")
        o = _out_array(out)
        if o.dtype not in (np.uint64, np.int64):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op_name}: out dtype must be UINT64 (or INT64), got {o.dtype}")
        rm = as_int(round_mode, "roundMode")
        shape = tqp.check_shapes(tqp._as_f32(s, "scale"), None if off is None else tqp._as_f32(off, "offset"))
        if tuple(o.shape) != tuple(shape):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op_name}: out shape {o.shape} must be {tuple(shape)}")
        if rm not in (0, 1):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{op_name}: roundMode must be 0 or 1, got {rm}")

        def run():
            write_out(out, tqp.trans_quant_param(s, off, rm).view(o.dtype))

        return Executor(op_name, run, 0)

    return get_workspace(op_name, build)


def aclnnTransQuantParamV2GetWorkspaceSize(scale, offset, out):
    """-> (status, workspace_size, executor): FP19 truncation (round mode 0)."""
    return _tqp_workspace("aclnnTransQuantParamV2", scale, offset, 0, out)


def aclnnTransQuantParamV2(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnTransQuantParamV2")


def aclnnTransQuantParamV3GetWorkspaceSize(scale, offset, roundMode, out):
    """-> (status, workspace_size, executor): roundMode 0 truncates, 1 rounds (RNE) the mantissa to 10 bits."""
    return _tqp_workspace("aclnnTransQuantParamV3", scale, offset, roundMode, out)


def aclnnTransQuantParamV3(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnTransQuantParamV3")
