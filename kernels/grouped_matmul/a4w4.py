"""GroupedMatmul A4W4 on A2/A3 (docs/ops/grouped_matmul.md §14): int4 x, int4 weight, uint64 FixPipe scale words per
channel (E, N) or per K group (E, G, N), float32 per-token scale, bfloat16 / float16 y.

Sources: ``hicann/ops-transformer: gmm/grouped_matmul/op_host/op_api/aclnn_grouped_matmul.cpp`` (``CheckFunctionParams``
routes int4 x with an int4 weight to ``CheckA4W4QuantParams`` / ``CheckA4W4ParamsShape``; ``UnpackInt32ToInt4`` turns
an INT32 x / weight list into INT4 with 8 values a word first), ``op_kernel/grouped_matmul.cpp`` (``GMM_A4W4`` ->
``GMM_A4W4_IMP(GMMA4W4Compute, transA false, transB false)``), ``op_kernel/grouped_matmul_a4w4.h`` (``GMMA4W4Compute``)
and ``op_host/op_tiling/grouped_matmul_tiling.cpp`` (``isA4W4_``: quantGroupNum from the scale's dim 1, the fp16
workspace).

npu-emu: per K group the exact int32 cube (quant_matmul's ``accum``, via ``launch.int_cube``), the FixPipe stage of
``a4w4_kernel`` (fp16 workspace, fp16 atomic adds across K groups), then GroupedMatmul's own epilogue walk
(``launch.run_epilogue``: Cast half -> float, Mul by the per-token scale, Cast with CAST_RINT), which is
``ComputeDequantAndActivate`` of the A4W4 kernel.
"""

from dataclasses import replace

import ml_dtypes
import numpy as np

from npu_emu.device import memo
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import check_memory, resolve_dtype
from npu_emu.device.launch import serial_below
from npu_emu.device.read_only import read_only as ro
from npu_emu.kernels.grouped_matmul import api_forms as forms, checks, launch, mx, tiling as tiling_mod
from npu_emu.kernels.quant_matmul import operands
from npu_emu.kernels.quant_matmul import trans_quant_param as tqp
from npu_emu.kernels.quant_matmul.api import NzWeight

INT4_NAMES = ("int4", "int32")      # INT32 x / weight: 8 int4 values a word (aclnn's UnpackInt32ToInt4)
PER_CHANNEL_SCALE_DIM, PER_GROUP_SCALE_DIM = 2, 3


def _err(msg):
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


_name = forms.dtype_name


def handles(xs, ws):
    """int4 x with an int4 weight (ml_dtypes.int4 values, or INT32 words of 8): CheckFunctionParams' A4W4 branch."""
    if not xs or not ws or xs[0] is None or ws[0] is None:
        return False
    return _name(xs[0]) in INT4_NAMES and _name(ws[0]) in INT4_NAMES


def _unpack(a, name, label):
    """One caller array relabelled int4 -> its values as ml_dtypes.int4 (one a byte); INT32 words stay (aclnn
    unpacks them itself)."""
    if isinstance(a, NzWeight) or a is None:
        return a
    own = resolve_dtype(a.dtype)
    if own in INT4_NAMES:
        return a
    if own not in ("uint8", "int8"):
        _err(f"{name}: cannot relabel a {own} array as int4; pass int32 words (8 int4 values each, the first in "
             f"the low nibble), uint8 / int8 bytes (2 each) or ml_dtypes.int4 values")
    return operands.int_values(operands.operand(a, name, label)).astype(ml_dtypes.int4)


def relabel(xs, ws, x_dtype, weight_dtype):
    """npu_grouped_matmul's x_dtype / weight_dtype = int4 (torch.quint4x2, "int4", aclDataType 29): the x of
    ``npu_dynamic_quant(..., dst_type=torch.quint4x2)`` is INT32 with 8 values a word; bytes carry 2 each. Only for an
    int4 x (the A4W4 call); other calls keep their relabelling. Returns (xs, ws, x_dtype, weight_dtype) with the
    consumed dtypes set to None."""
    if x_dtype is None or not xs or resolve_dtype(x_dtype, "x_dtype") != "int4":
        return xs, ws, x_dtype, weight_dtype
    xs = [_unpack(a, f"x[{i}]", "int4") for i, a in enumerate(xs)]
    if weight_dtype is not None and ws and resolve_dtype(weight_dtype, "weight_dtype") == "int4":
        ws = [_unpack(w, f"weight[{i}]", "int4") for i, w in enumerate(ws)]
        weight_dtype = None
    return xs, ws, None, weight_dtype


def values(a, name):
    """int8 values (sign-extended) of an int4 operand: ml_dtypes.int4 one a byte, or INT32 words of 8 (LSB first)."""
    if _name(a) == "int32":
        return operands.int_values(operands.operand(a, name, "int32", int32_is_int4=True))
    return np.asarray(a).astype(np.int8)


def logical_shape(a):
    """The int4 view shape (an INT32 tensor's last dim counts 8 values a word)."""
    sh = tuple(int(d) for d in a.shape)
    return sh[:-1] + (sh[-1] * 8,) if _name(a) == "int32" and sh else sh


def check(xs, ws, biases, scales, pts, gl, y_name, *, split_item, group_type, group_list_type, n_y, kw):
    """CheckA4W4QuantParams and CheckA4W4ParamsShape in CANN's order, then the split-M shape and group list checks of
    the single-tensor form (checks.check) and npu-emu's own. Returns the K groups of the scale (1: per channel)."""
    offs = kw.get("has_offset")
    aq = kw.get("has_antiquant")
    if group_list_type not in (0, 1):
        _err(f"GMM A4W4: groupListType only support 0 or 1, but now is {group_list_type}.")
    if y_name not in ("float16", "bfloat16"):
        _err(f"GMM A4W4: output y dtype should be float16 or bfloat16, current dtype is {y_name}.")
    if offs:
        _err("GMM A4W4: offset must be null.")
    if biases is not None:
        _err("GMM A4W4: bias must be null.")
    if scales is None or scales[0] is None:
        _err("GMM A4W4: scale must not be null.")
    s = scales[0]
    sd = _name(s)
    sd = "uint64" if sd == "int64" else sd     # the entry relabels every INT64 scale UINT64 before CheckParam
    if sd != "uint64":
        _err(f"GMM A4W4: scale dtype does not match with required dtype uint64, current dtype is {sd}.")
    single = len(xs) == 1 and n_y == 1
    if pts is not None:
        if pts[0] is not None and _name(pts[0]) != "float32":
            _err(f"GMM A4W4: perTokenScale dtype does not match with required dtype float32, current dtype is "
                 f"{_name(pts[0])}.")
        # CheckPerTokenScale
        if not single:
            _err(f"per-token quant case is only supported when x, weight and y are all single tensor, but now x size "
                 f"is {len(xs)}, weight size is {len(ws)}, y size is {n_y}")
        if len(pts) != 1:
            _err(f"perTokenScaleOptional size[{len(pts)}] must be 1 and equal with x size[{len(xs)}].")
        if pts[0] is None:
            _err("perTokenScaleOptional[0] must not be nullptr, but now is nullptr.")
        if pts[0].ndim != 1:
            _err(f"perTokenScaleOptional dim num must be 1 when x is single tensor, but now is {pts[0].ndim}.")
        m_x = logical_shape(xs[0])[0]
        if pts[0].shape[0] != m_x:
            _err(f"MDim[{pts[0].shape[0]}] of perTokenScaleOptional should be equal with MDim[{m_x}] of x.")
    # CheckA4W4ParamsShape (CANN's message says 16 for the 8-alignment it checks)
    if s.ndim not in (PER_CHANNEL_SCALE_DIM, PER_GROUP_SCALE_DIM):
        _err(f"GMM A4W4: scale dim only support 2/3 for perchannel/pergroup, but now is {s.ndim}.")
    n_s = int(s.shape[-1])
    if n_s % 8:
        _err(f"A4W4 n axis should align with 16, but now is {n_s}")
    groups = 1
    if s.ndim == PER_GROUP_SCALE_DIM:
        k = logical_shape(xs[0])[1] if len(logical_shape(xs[0])) > 1 else 0
        groups = int(s.shape[1])
        if groups == 0 or k % groups:
            _err(f"Pergroup A4W4: while scale shape is [e, G, n], x shape is [m,k], k needs to be divisible by G,but "
                 f"now k is {k}, G is {groups}.")
        if (k // groups) % 2:
            _err(f"Pergroup A4W4: while scale shape is [e, G, n], x shape is [m,k],pergroup num(k/G) needs to be "
                 f"divisible by 2, but now pergroupNum is {k // groups}.")
    if aq:
        _err("GMM A4W4: Detected quant, but antiquant inputs is not empty!")
    if not (group_type == 0 and len(xs) == 1 and len(ws) == 1 and n_y == 1):
        _err("A4W4 only support split m, single x, single weight, single y.")
    if pts is None:
        _err("GMM A4W4: npu-emu needs per_token_scale: the A4W4 kernel (GMMA4W4Compute::DataCopyPerTokenScaleAndBrcb) "
             "reads perTokenScale for every tile whether or not it was given, so without it the device reads address "
             "0; pass per_token_scale=[np.ones(M, np.float32)] for no per-token scale (emulator-added)")
    return groups


def _check_shapes(x, w, s, groups, pt, gl, y_name, split_item, group_list_type, kw, nz):
    """The single-tensor split-M checks (SplitMSingleXSingleWeightSingleY, CheckGroupListCommonTensor, tuningConfig,
    the NZ fractal alignment) through checks.check with the int4 shapes (its dtype rules are the plain float ones,
    which the A4W4 checks above have replaced), WeightNz's dtype pairs, then npu-emu's own. ``w``: the ND values."""
    xs_, ws_ = logical_shape(x), logical_shape(w)
    if kw["act_type"] != 0:
        _err(f"npu-emu does not implement A4W4 with an activation (act_type={kw['act_type']}): "
             "GMMA4W4Compute's activation step is not modelled (docs/ops/grouped_matmul.md §14)")
    args = checks.GmmArgs(
        x_dtype="float16", w_dtype="float16", y_dtype="float16", x_shape=xs_, w_shape=ws_,
        gl_dtype=None if gl is None else resolve_dtype(gl.dtype), gl_shape=None if gl is None else tuple(gl.shape),
        split_item=split_item, group_type=0, group_list_type=group_list_type, act_type=0,
        tuning_config=kw["tuning"], transpose_w=bool(kw.get("transpose_w")))
    checks.check(args)
    if nz:
        checks._check_nz_align("int4", ws_[1], ws_[2], False)      # TransWeightFormat: int4 fractals (16, 64)
        if kw.get("api") == "aclnnGroupedMatmulWeightNz":
            checks.weight_nz_dtypes("int4", "int4", y_name)
    e, k, n = ws_
    if n % 2:
        _err(f"weight's inner axis size[{n}] is not even!")
    if kw.get("transpose_w"):
        _err("npu-emu does not implement A4W4 with a transposed weight: the kernel is instantiated with transB false "
             "only (grouped_matmul.cpp GMM_A4W4_IMP); pass the (E, K, N) weight contiguous "
             "(docs/ops/grouped_matmul.md §14)")
    want = (e, n) if groups == 1 and s.ndim == PER_CHANNEL_SCALE_DIM else (e, groups, n)
    if tuple(s.shape) != want:
        _err(f"scale must have shape {want} for x {xs_} and weight {ws_}, got {tuple(s.shape)} (emulator-added: "
             f"the kernel reads scale[g * n * G + k * n + j] without a shape check)")
    if kw.get("user_tiling") is not None:
        _err("tiling= is not modelled for A4W4 (its tiling is not reproduced, docs/ops/grouped_matmul.md §14); drop "
             "tiling= (core_num= applies)")
    checks.check_group_values(gl, group_list_type, e, xs_[0])
    return replace(args, x_dtype="int4", w_dtype="int4", y_dtype=y_name, scale_dtype="uint64", scale_shape=tuple(
        s.shape), pt_dtype=None if pt is None else "float32", pt_shape=None if pt is None else tuple(pt.shape))


class _Sub:
    """The checked, tiled A4W4 call (api._Sub's interface: run, args, mode, tr, ent)."""
    mode = "a4w4"

    def __init__(self, args, x, w, scale, pt, groups, tr, ent):
        self.args, self.x, self.w, self.scale, self.pt = args, x, w, scale, pt
        self.groups, self.tr, self.ent = groups, tr, ent

    def run(self, y, float_accum, validate):
        if self.tr is not None:
            compute(self.args, self.x, self.w, self.scale, self.pt, self.groups, self.ent, self.tr, y, validate)
        return y


def compute(args, x, w, scale, pt, groups, ent, tr, y, validate=True):
    """Write every group's rows of ``y`` (other rows untouched)."""
    from npu_emu.kernels.grouped_matmul import a4w4_kernel

    m_x, k = args.x_shape
    e, _, n = args.w_shape
    check_memory(m_x * n * 10 + (m_x + e * n) * k, "GroupedMatmul A4W4 workspace")
    x8, w8 = values(x, "x"), values(w, "weight")
    s32 = np.ascontiguousarray(tqp.deq_scale(scale).reshape(e, groups, n))        # t19 of bits 0..31
    w_idx, row, m = ent
    row_w = np.full(m_x, -1, np.int64)
    for g, r0, mg in zip(w_idx, row, m):
        row_w[r0:r0 + mg] = g
    gs = k // groups
    part = np.zeros((m_x, n), np.int32)
    ws = np.zeros((m_x, n), np.uint16)                     # the fp16 GM workspace (cT = half)
    for kg in range(groups):                               # MMComputePerGroup's loopK, ascending
        k0 = kg * gs
        launch.int_cube(np.ascontiguousarray(x8[:, k0:k0 + gs]), np.ascontiguousarray(w8[:, k0:k0 + gs]), ent, part)
        with serial_below(part.nbytes + 2 * ws.nbytes):    # a small stage: no pool waking between the GEMMs
            a4w4_kernel.fixpipe_group_kernel(ro(part), ro(np.ascontiguousarray(s32[:, kg])), ro(row_w), kg == 0, ws)
    acc_f = ws.view(np.float16).astype(np.float32)         # Cast half -> float (CAST_NONE): exact
    empty_f, empty_i = np.zeros((e, 0), np.float32), np.zeros((e, 0), np.int32)
    launch.run_epilogue(tr, ent, args, np.zeros(0, np.int32), acc_f, empty_f, pt, empty_i, empty_f,
                        launch.OUT_CODES[args.y_dtype], y, validate)


def build(xs, ws, biases, scales, pts, gl, y_name, n_y, *, split_item, group_type, group_list_type, kw, weight_nd):
    """api._build's A4W4 branch -> (subs, assemble, out_shapes); ``weight_nd``: api's reader of an NZ weight."""
    if mx.is_arch35(kw["soc"]):
        _err(f"npu-emu implements the A2/A3 A4W4 kernel (grouped_matmul_a4w4.h); the Ascend 950's (arch35 "
             f"qgmm_s4s4_kernel.h, int4 widened to int8 first) is not implemented for soc={kw['soc']!r} "
             f"(docs/ops/grouped_matmul.md §14)")
    groups = check(xs, ws, biases, scales, pts, gl, y_name, split_item=split_item, group_type=group_type,
                   group_list_type=group_list_type, n_y=n_y, kw=kw)
    x, s = xs[0], np.asarray(scales[0])
    nz = isinstance(ws[0], NzWeight)
    w = weight_nd(ws[0], kw["origin"])[0] if nz else ws[0]        # FRACTAL_NZ: where the cube finds a value
    pt = np.asarray(pts[0], np.float32)
    args = _check_shapes(x, w, s, groups, pt, gl, y_name, split_item, group_list_type, kw, nz)
    m_x, k = args.x_shape
    e, _, n = args.w_shape
    tr = ent = None
    if m_x and n and k:
        shape = tiling_mod.GmmShape(group_num=e, m=m_x, k=k, n=n, x_dtype="int4", w_dtype="int4", y_dtype=y_name,
                                    scale_dtype="uint64", per_token=True, has_bias=False, weight_nz=False,
                                    group_type=0, group_list_type=group_list_type, act_type=0,
                                    tuning_config=args.tuning_config, transpose_w=False)
        tr = memo.call(tiling_mod.grouped_matmul_tiling, shape, soc=kw["soc"], core_num=kw["core_num"])
        tr = replace(tr, notes=tuple(tr.notes) + (
            "A4W4 tiling not reproduced (baseN 512 for tuning_config <= 64, the A4W4 UB division, the fp16 "
            "workspace size): the walk is the int4 CalMMTiling's, which decides who writes a block, never its value",
            f"fp16 workspace: FixPipe int32 x t19 -> fp16, fp16 atomic add over {groups} K group(s) in ascending "
            f"order (docs/ops/grouped_matmul.md §14)"))
        ent = launch.entries(gl, group_list_type, e, m_x)
        launch.validate_launch(tr, ent, args, "acc_f", launch.epilogue_decl(args, "float", ent), 2, kw["validate"])
    sub = _Sub(args, x, w, s, pt, groups, tr, ent)
    return [sub], (lambda ys: ys), [(m_x, n)]
