"""Front ends of GroupedMatmul: torch_npu ``npu_grouped_matmul`` and aclnnGroupedMatmulV4 / V5 / WeightNz
(docs/ops/grouped_matmul.md §2).

Call flow: normalise (tensor lists, NZ weights to their ND values, dtype names) -> the aclnn checks (checks.py) ->
the group entries from the group list -> host tiling (tiling.py) -> the cube (kernels/quant_matmul/accum.py: exact
int32, or the float accumulation models) -> the per-core epilogue over the groups' output blocks (kernel.py via
launch.py) -> the caller's array type.

Switches: ``soc`` ("ascend910b2"), ``float_accum`` ("exact"; plain bf16 / fp16 modes, as quant_matmul's),
``core_num``, ``exp_model`` ("correctly_rounded") and ``div_model`` ("ieee") for the activations (act_type), ``trace``.
Rows of y after the last group: a fresh y (npu_grouped_matmul) holds zeros there, an
aclnn ``out`` keeps what it held (the kernel writes only the groups' rows).
"""

import math

import numpy as np

from npu_emu.ascendc.transcendental import DIV_MODELS, EXP_MODELS
from npu_emu.device import memo
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
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
from npu_emu.kernels.grouped_matmul import a4w4, a8w4, antiquant, api_forms as forms, checks, launch, mx
from npu_emu.kernels.grouped_matmul import tiling as tiling_mod
from npu_emu.kernels.quant_matmul import accum
from npu_emu.kernels.quant_matmul import trans_quant_param as tqp
from npu_emu.kernels.quant_matmul import weight_nz
from npu_emu.kernels.quant_matmul.api import NzWeight

DEFAULT_SOC = "ascend910b2"
_SIG = {"bfloat16": 8, "float16": 11, "float32": 24}


def _list(v, name):
    """A Tensor[] argument: None, one array, or a list / tuple of arrays (None entries refused)."""
    if v is None:
        return None
    if isinstance(v, (list, tuple)) and not (len(v) and np.isscalar(v[0])):
        if len(v) == 0:
            return None
        return list(v)
    return [v]


def _one(v, name, origin):
    """The single tensor of a single-tensor list (npu-emu implements the single-tensor split-M form)."""
    lst = _list(v, name)
    if lst is None:
        return None
    if len(lst) != 1:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}: npu-emu implements the single-tensor form (a list of one "
                                                  f"tensor), got a list of {len(lst)} (docs/ops/grouped_matmul.md §9)")
    if isinstance(lst[0], NzWeight):
        return lst[0]
    return as_array(lst[0], name, origin=origin)


def _name(a, relabel=None):
    if relabel is not None:
        return resolve_dtype(relabel, "dtype")
    return resolve_dtype(a.dtype)


def _weight_nd(w, origin):
    """(ND logical weight (E, K, N), dtype name, is_nz). NZ storage (E, N1, K1, 16, 32) -> ND values; a transposed
    NzWeight stores the (E, N, K) matrix (its ``shape``), read back and transposed to (E, K, N)."""
    if isinstance(w, NzWeight):
        from npu_emu.ascendc.nz import nz_to_nd

        if w.dtype is not None and resolve_dtype(w.dtype, "dtype") in weight_nz.SUB_BYTE_NZ:
            # 4-bit NZ (packed two a byte or eight an int32): quant_matmul's reader, one value an element
            op = weight_nz.nz_to_storage_nd(weight_nz.nz_operand(w, "weight", None, origin), w.transposed)
            if len(w.shape) != 3:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"weight: an NZ weight must have an (E, K, N) view shape, "
                                                          f"got {w.shape}")
            nd = np.ascontiguousarray(np.swapaxes(op.data, 1, 2)) if w.transposed else op.data
            return nd, "int4" if op.dtype == "int32" else op.dtype, True
        store = as_array(w.storage, "weight", origin=origin)
        if len(w.shape) != 3 or store.ndim != 5:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"weight: an NZ weight must be (E, N1, K1, 16, c0) storage with "
                                                      f"an (E, K, N) view shape, got {store.shape} / {w.shape}")
        nd = nz_to_nd(store, w.shape[1], w.shape[2])
        if w.transposed:
            nd = np.ascontiguousarray(np.swapaxes(nd, 1, 2))
        return nd, _name(store, w.dtype), True
    return w, _name(w), False


def _out_dtype(output_dtype, x_name):
    """output_dtype: a numpy / torch dtype, a name or an aclDataType code (the npu_emu.ops convention; the torch
    binding turns torch's ScalarType codes into dtypes first). None: x's dtype (int8 for the quant modes)."""
    if output_dtype is None:
        return x_name
    return resolve_dtype(output_dtype, "output_dtype")


def _shape(a):
    return None if a is None else tuple(int(d) for d in a.shape)


def _dt(a):
    return None if a is None else _name(a)


def _relabel(a, dtype, what):
    """x_dtype / weight_dtype: the array's bytes read as that dtype. int32 words stay int32 (labelled int4 or not:
    the aclnn entries unpack an INT32 x / weight to 8 int4 values a word, api_forms.unpack_int32_int4)."""
    if a is None or isinstance(a, NzWeight):
        return a
    name = None if dtype is None else resolve_dtype(dtype, what)
    if name is None or (name == "int4" and a.dtype == np.int32):
        return a
    return a.view(storage_dtype(name))


def _transposes(x, weight, group_type):
    """(transposeX, transposeWeight, the weight list) from the caller's tensors, before any contiguous copy: the
    device reads transposition from the view strides (a numpy / torch view made with .transpose / .mT; an
    NzWeight(..., transposed=True))."""
    xs, ws = _list(x, "x"), _list(weight, "weight")
    if not xs or not ws or any(v is None for v in xs) or any(v is None for v in ws):
        return False, False, ws or []
    try:
        gt = int(group_type) if group_type is not None else -1
    except (TypeError, ValueError):
        gt = -1
    tx, tw = forms.transpose_status(xs, ws, gt)
    return tx, tw, ws


def _prepare(x, w, bias, scale, pt, gl, y_name, *, has_offset, has_antiquant, split_item, group_type,
             group_list_type, act_type, tuning_config, origin, transpose_w=False):
    checks.null_check(x, w)
    wnd, w_name, nz = _weight_nd(w, origin)
    args = checks.GmmArgs(
        x_dtype=_name(x), w_dtype=w_name, y_dtype=y_name, x_shape=_shape(x), w_shape=_shape(wnd),
        scale_dtype=_dt(scale), scale_shape=_shape(scale), pt_dtype=_dt(pt), pt_shape=_shape(pt),
        bias_dtype=_dt(bias), bias_shape=_shape(bias), gl_dtype=_dt(gl), gl_shape=_shape(gl), has_offset=has_offset,
        has_antiquant=has_antiquant, split_item=split_item, group_type=group_type, group_list_type=group_list_type,
        act_type=act_type, tuning_config=tuning_config, transpose_w=bool(transpose_w), weight_nz=nz)
    mode = checks.check(args)
    checks.check_group_values(gl, group_list_type, wnd.shape[0], x.shape[0])
    return args, mode, wnd, nz


def _tiling(args, nz, soc, core_num, user=None, mode=None):
    s = tiling_mod.GmmShape(group_num=args.w_shape[0], m=args.x_shape[0], k=args.x_shape[1], n=args.w_shape[2],
                            x_dtype=args.x_dtype, w_dtype=args.w_dtype, y_dtype=args.y_dtype,
                            scale_dtype=args.scale_dtype, per_token=args.pt_dtype is not None,
                            has_bias=args.bias_dtype is not None, weight_nz=nz, group_type=args.group_type,
                            group_list_type=args.group_list_type, act_type=args.act_type,
                            tuning_config=args.tuning_config, transpose_w=args.transpose_w)
    tr = memo.call(tiling_mod.grouped_matmul_tiling, s, soc=soc, core_num=core_num)
    if user is not None:
        tr = launch.user_tiling(user, tr, args, mode, nz)
    return tr


def _plan(args, mode, gl, tr, validate):
    """The group entries, and the launch's access pattern checked (561002) before anything is computed."""
    m_x, n = args.x_shape[0], args.w_shape[2]
    ent = launch.entries(gl, args.group_list_type, args.w_shape[0], m_x)
    if mode == "quant" and args.y_dtype == "int32":
        launch.check_int32(tr, ent, args, m_x, n, validate)
    else:
        launch.validate_launch(tr, ent, args, "acc_i" if mode == "quant" else "acc_f",
                               launch.epilogue_decl(args, mode, ent), storage_dtype(args.y_dtype).itemsize, validate)
    return ent


def _compute(args, mode, x, wnd, bias, scale, pt, ent, tr, y, float_accum, validate=True, models=(0, 0)):
    """Write every group's rows of ``y`` (other rows untouched)."""
    m_x, n = args.x_shape[0], args.w_shape[2]
    e = args.w_shape[0]
    empty_f = np.zeros((e, 0), np.float32)
    empty_i = np.zeros((e, 0), np.int32)
    if mode == "quant":
        if args.y_dtype == "int32":
            launch.int_cube(x, wnd, ent, y)
            if bias is not None:
                for g, r0, mg in zip(*ent):
                    if mg > 0:
                        rows = y[r0:r0 + mg]
                        rows[...] = (rows.astype(np.int64) + bias[g].astype(np.int64)).astype(np.int32)
            return
        check_memory(4 * m_x * n, "GroupedMatmul int32 workspace")
        acc = np.empty((m_x, n), np.int32)
        launch.int_cube(x, wnd, ent, acc)
        off9 = None
        if args.y_dtype == "int8":           # the uint64 FixPipe words: t19 scale (bits 0..31), int9 offset
            s32, off9 = tqp.deq_scale(scale), tqp.deq_offset(scale)
        else:
            s32 = scale.astype(np.float32)
        bias_i = bias if bias is not None and bias.dtype == np.int32 else empty_i
        bias_f = bias.astype(np.float32) if bias is not None and bias.dtype != np.int32 else empty_f
        ptv = np.zeros(0, np.float32) if pt is None else pt
        launch.run_epilogue(tr, ent, args, acc, np.zeros(0, np.float32), s32, ptv, bias_i, bias_f,
                            launch.OUT_CODES[args.y_dtype], y, validate, off9=off9, exp_model=models[0],
                            div_model=models[1])
        return
    check_memory(4 * m_x * n, "GroupedMatmul fp32 workspace")
    acc = np.empty((m_x, n), np.float32)
    sig = _SIG[args.x_dtype]
    x64 = x.astype(np.float64)
    w64 = wnd.astype(np.float64)
    bias32 = None if bias is None else bias.astype(np.float32)
    launch.float_cube(x64, w64, ent, acc, sig, float_accum, tr.tiling.mmTilingData.baseK, bias32,
                      x32=x.astype(np.float32), w32=wnd.astype(np.float32))
    launch.run_epilogue(tr, ent, args, np.zeros(0, np.int32), acc, empty_f, np.zeros(0, np.float32), empty_i, empty_f,
                        launch.OUT_CODES[args.y_dtype], y, validate)


def _make_trace(tr, mode, args):
    td = tr.tiling
    return Trace(op="GroupedMatmul", soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tr.ub_size, routed_op="GroupedMatmul",
                 quant_mode=f"{mode}:{args.x_dtype}x{args.w_dtype}->{args.y_dtype}", notes=list(tr.notes))


class _Sub:
    """One checked, tiled single-tensor split-M call (what the kernel runs)."""

    def __init__(self, args, mode, x, wnd, bias, scale, pt, gl, tr, ent, models=(0, 0)):
        self.args, self.mode, self.x, self.wnd = args, mode, x, wnd
        self.bias, self.scale, self.pt, self.gl, self.tr, self.ent = bias, scale, pt, gl, tr, ent
        self.models = models                 # (exp_model, div_model) codes of the activation (§13)

    def run(self, y, float_accum, validate):
        if self.tr is not None:
            _compute(self.args, self.mode, self.x, self.wnd, self.bias, self.scale, self.pt, self.ent, self.tr, y,
                     float_accum, validate, self.models)
        return y


def _sub(x, w, bias, scale, pt, gl, y_name, kw):
    args, mode, wnd, nz = _prepare(x, w, bias, scale, pt, gl, y_name, has_offset=kw["has_offset"],
                                   has_antiquant=kw["has_antiquant"], split_item=kw["split_item"],
                                   group_type=kw["group_type"], group_list_type=kw["group_list_type"],
                                   act_type=kw["act_type"], tuning_config=kw["tuning"], origin=kw["origin"],
                                   transpose_w=kw.get("transpose_w", False))
    if nz and kw.get("api") == "aclnnGroupedMatmulWeightNz":          # ParamsWeightNzDtype, after the checks
        checks.weight_nz_dtypes(args.x_dtype, args.w_dtype, args.y_dtype)
    tr = ent = None
    if args.x_shape[0] and args.w_shape[2] and args.x_shape[1]:
        tr = _tiling(args, nz, kw["soc"], kw["core_num"], kw["user_tiling"], mode)
        ent = _plan(args, mode, gl, tr, kw["validate"])
    return _Sub(args, mode, x, wnd, bias, scale, pt, gl, tr, ent, kw.get("models", (0, 0)))


def _arrays(v, name, origin):
    """A Tensor[] argument as a list of arrays (NzWeight kept), or None."""
    lst = _list(v, name)
    if lst is None:
        return None
    return [None if a is None else (a if isinstance(a, NzWeight) else as_array(a, f"{name}[{i}]", origin=origin))
            for i, a in enumerate(lst)]


def _counts(n):
    return np.array(n, np.int64)


def _build(xs, ws, biases, scales, pts, gl, y_name, n_y, *, split_item, group_type, group_list_type, kw):
    """The form of the call (api_forms.py) -> (subs, assemble, out_shapes): ``assemble(ys)`` gives the outputs from
    the subs' ys, ``out_shapes`` the shape of every output."""
    forms.not_null(xs, ws)
    xs, ws = forms.unpack_int32_int4(xs), forms.unpack_int32_int4(ws)      # UnpackInt32ToInt4 of the entries
    checks.check_act_type(kw["act_type"])                   # CheckCommonParam, before every mode's checks
    if kw.get("transpose") is not None:             # the callers' view strides (CheckTransposeStatus), checked once
        tx, tw = kw["transpose"]
        if not mx.handles(xs, ws, kw["soc"]):
            forms.check_transposes(kw["raw_weight"], tx, tw, group_type, kw.get("api"), len(ws) == 1)
        kw = dict(kw, transpose=None, raw_weight=None, transpose_w=tw)
    if a4w4.handles(xs, ws):                                 # A4W4: int4 x and weight (a4w4.py)
        return a4w4.build(xs, ws, biases, scales, pts, gl, y_name, n_y, split_item=split_item, group_type=group_type,
                          group_list_type=group_list_type, kw=kw, weight_nd=_weight_nd)
    if a8w4.handles(xs, ws):                                # int8 x, int4 weight on A2/A3 (a8w4.py)
        return a8w4.build(xs, ws, biases, scales, pts, gl, y_name, n_y, split_item=split_item, group_type=group_type,
                          group_list_type=group_list_type, kw=kw, rebuild=_build, weight_nd=_weight_nd)
    if kw.get("antiquant") is not None and antiquant.handles(xs, ws):     # W8A16 / W4A16 (antiquant.py)
        return antiquant.build(xs, ws, biases, scales, pts, gl, y_name, n_y, split_item=split_item,
                               group_type=group_type, group_list_type=group_list_type, kw=kw, rebuild=_build,
                               weight_nd=_weight_nd)
    if mx.handles(xs, ws, kw["soc"]):                       # the 950 float8 quant cases (mx.py)
        return mx.build(xs, ws, biases, scales, pts, gl, y_name, n_y, split_item=split_item, group_type=group_type,
                        group_list_type=group_list_type, kw=kw, weight_nd=_weight_nd)
    form = forms.form_of(len(xs), len(ws), n_y, split_item, group_type)
    pt = None if pts is None else pts
    forms.no_per_token_with_lists(pt, len(xs), len(ws), n_y)
    for lst, nm in ((xs, "x"), (ws, "weight")):
        if lst is not None and len(lst) > 1:
            forms.same_dtype([w.storage if isinstance(w, NzWeight) else w for w in lst], nm,
                             lambda a: resolve_dtype(a.dtype))
    single_w = len(ws) == 1
    biases = forms.per_group_list(biases, len(ws), "bias", single_w)
    scales = forms.per_group_list(scales, len(ws), "scale", single_w)
    one = lambda v: None if v is None else v[0]
    sub_kw = dict(kw, split_item=3, group_type=0)
    if form == "sss":
        sub_kw.update(split_item=split_item)
        sub = _sub(xs[0], ws[0], one(biases), one(scales), one(pt), gl, y_name, sub_kw)
        return [sub], (lambda ys: ys), [(sub.args.x_shape[0], sub.args.w_shape[2])]
    if any(isinstance(w, NzWeight) for w in ws):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "npu-emu takes an NzWeight only as the single (E, K, N) weight "
                                                  "(group_type 0, one x, one weight, one y)")
    stack = lambda lst: None if lst is None else np.ascontiguousarray(np.stack(lst))
    if form in ("sms", "mms"):
        if form == "mms":
            for i, x in enumerate(xs):
                if x.ndim != 2:
                    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"x[{i}] dim num should be 2 in this case, but now is "
                                                              f"{x.ndim}.")
                if x.shape[1] != xs[0].shape[1]:
                    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"Dim 1 value of x[{i}] {x.shape[1]} should be equal "
                                                              f"with dim 1 value of x[0] {xs[0].shape[1]}.")
            sizes = [x.shape[0] for x in xs]
            if gl is not None:
                glv = np.asarray(gl)
                checks.check_list_gl_for_x(glv, group_list_type, sizes)
            gl, sub_kw["group_list_type"] = _counts(sizes), 1
            x = np.ascontiguousarray(np.concatenate(xs)) if len(xs) > 1 else xs[0]
        else:
            x = xs[0]
            if gl is None:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, "GroupListOptional(tensor) is required in this case, but "
                                                          "get nullptr.")
        if x.ndim != 2:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"x[0] dim num should be 2 in this case, but now is {x.ndim}.")
        w = forms.stack_weights(ws, x.shape[1])
        sub = _sub(x, w, stack(biases), stack(scales), one(pt), gl, y_name, sub_kw)
        return [sub], (lambda ys: ys), [(sub.args.x_shape[0], sub.args.w_shape[2])]
    if form == "nosplit":
        if gl is not None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "GroupListOptional should be nullptr when groupType is -1.")
        subs, shapes = [], []
        for i, (x, w) in enumerate(zip(xs, ws)):
            if not 2 <= x.ndim <= 6:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"X[{i}] dimNum is {x.ndim} , but only support 2-6.")
            if w.ndim != 2:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"Weight[{i}] dimNum is {w.ndim} , but only support 2 when "
                                                          f"weight separated.")
            if x.shape[-1] != w.shape[0]:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"X[{i}] dim {x.ndim - 1} value {x.shape[-1]} should equal "
                                                          f"to weight[{i}] dim 0 value {w.shape[0]}.")
            if x.shape[-1] > forms.MAX_INNER_AXIS or w.shape[1] > forms.MAX_INNER_AXIS:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"X[{i}] / W[{i}] inner dims {x.shape[-1]} / {w.shape[1]} "
                                                          f"should less or equal to 65535.")
            x2 = np.ascontiguousarray(x.reshape(-1, x.shape[-1]))
            m = x2.shape[0]
            kw_i = dict(sub_kw, group_list_type=1, tuning=min(kw["tuning"], m))
            subs.append(_sub(x2, w[None], None if biases is None else biases[i][None],
                             None if scales is None else scales[i][None], None, _counts([m]), y_name, kw_i))
            shapes.append(tuple(x.shape[:-1]) + (w.shape[1],))
        return subs, (lambda ys: [y.reshape(sh) for y, sh in zip(ys, shapes)]), shapes
    # split K (group_type 2): y[e] = x[:, K_e] @ weight[K_e]
    x, w = xs[0], ws[0]
    x_name, w_name = resolve_dtype(x.dtype), resolve_dtype(w.dtype)
    if x_name == "int8" or (x_name != w_name and w_name in ("int8", "int4")):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "GMM: quant cases do not support splited axis is K."
                         if x_name == "int8" else "GMM: antiquant cases do not support splited axis is k.")
    if biases is not None:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "When groupType is 2, bias must be empty.")
    if x.ndim != 2 or w.ndim != 2:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"x and weight must be 2-D when groupType is 2 (x (M, K), weight "
                                                  f"(K, N)), got {x.shape} and {w.shape}.")
    if x.shape[1] != w.shape[0]:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"K dim value of x and weight is not matched: x has K={x.shape[1]}, "
                                                  f"weight has K={w.shape[0]}.")
    if gl is None:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "GroupListOptional(tensor) is required in this case, but get nullptr.")
    glv = np.asarray(gl)
    if resolve_dtype(glv.dtype) != "int64":
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, "Invalid dtype: Only int64 is supported for groupList.")
    if glv.ndim != 1 or glv.shape[0] > checks.MAX_GROUP_LIST_SIZE_TENSOR or glv.shape[0] < 1:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"groupList must be 1-D with 1 .. 1024 entries when groupType is 2, "
                                                  f"got shape {glv.shape}.")
    ranges = forms.split_k_groups(glv, group_list_type, x.shape[1])
    m = x.shape[0]
    subs = []
    for k0, k1 in ranges:
        xk = np.ascontiguousarray(x[:, k0:k1])
        subs.append(_sub(xk, np.ascontiguousarray(w[k0:k1])[None], None, None, None, _counts([m]), y_name,
                         dict(sub_kw, group_list_type=1, tuning=min(kw["tuning"], m))))
    e, n = len(ranges), w.shape[1]
    return subs, (lambda ys: [np.stack(ys) if ys else np.zeros((0, m, n), ys[0].dtype)]), [(e, m, n)]


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
                       per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
                       activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0,
                       tuning_config=None, output_dtype=None, x_dtype=None, weight_dtype=None, scale_dtype=None,
                       per_token_scale_dtype=None, soc=DEFAULT_SOC, core_num=None, float_accum="exact",
                       exp_model="correctly_rounded", div_model="ieee", tiling=None, validate=True, trace=False):
    """torch_npu.npu_grouped_matmul: one matmul per expert group -> a list of y.

    Forms (docs/ops/grouped_matmul.md §2.1): group_type 0 with one x (M, K) and one weight (E, K, N) (or an
    NzWeight), E weights (K, N) or E x (m_i, K) with E weights (split_item 2 / 3: one y (M, N)); group_type -1
    with E x, E weights (split_item 0 / 1: E y); group_type 2 (split K, plain float: one y (E, M, N)).
    Modes: A8W8 -> int32; A8W8 with scale [+ per_token_scale (M,)] [+ bias] -> bfloat16 / float16; plain
    bfloat16 / float16 / float32 (+ bias).
    ``act_type`` (A8W8 -> bfloat16 / float16): 1 RELU, 2 GELU_TANH, 4 FASTGELU, 5 SILU after the dequant (§13).
    Extra keywords: ``soc``, ``core_num``, ``float_accum`` (plain float modes), ``exp_model`` / ``div_model``
    (the activations' Exp and Div, docs/conventions.md), ``tiling`` (a GMMTilingData, a
    dict of its fields or its packed bytes, in place of the host's; it runs on its coreNum cores), ``validate``
    (check the walk's accesses and UB before anything runs; 561002 otherwise), ``trace``.
    """
    origin = Origin()
    trans = _transposes(x, weight, group_type)
    xs = _arrays(x, "x", origin)
    ws = _arrays(weight, "weight", origin)
    xs, ws, x_dtype, weight_dtype = a4w4.relabel(xs, ws, x_dtype, weight_dtype)   # int4 x (a4w4.py)
    if x_dtype is not None and xs:
        xs = [_relabel(a, x_dtype, "x_dtype") for a in xs]
    if ws:
        ws = [_relabel(a, weight_dtype, "weight_dtype") for a in ws]
    gl = None if group_list is None else as_array(group_list, "group_list", origin=origin)
    scale = mx.relabel(_arrays(scale, "scale", origin), scale_dtype, "scale_dtype")
    per_token_scale = mx.relabel(_arrays(per_token_scale, "per_token_scale", origin), per_token_scale_dtype,
                                 "per_token_scale_dtype")
    split_item = as_int(split_item if split_item is not None else 0, "split_item")
    group_type = as_int(group_type if group_type is not None else -1, "group_type")
    group_list_type = as_int(group_list_type if group_list_type is not None else 0, "group_list_type")
    act_type = as_int(act_type if act_type is not None else 0, "act_type")
    tuning = tuning_len = 0
    if tuning_config is not None:
        tc = list(tuning_config) if isinstance(tuning_config, (list, tuple)) else [tuning_config]
        tuning = as_int(tc[0], "tuning_config[0]") if tc else 0
        tuning_len = len(tc)
    float_accum = choice(float_accum, "float_accum", accum.FLOAT_ACCUM)
    models = _models(exp_model, div_model)
    for v, nm in ((activation_input, "activation_input"), (activation_quant_scale, "activation_quant_scale"),
                  (activation_quant_offset, "activation_quant_offset")):
        if _list(v, nm) is not None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{nm} is reserved and must be None")
    forms.not_null(xs, ws)
    x0 = xs[0].storage if isinstance(xs[0], NzWeight) else xs[0]
    y_name = _out_dtype(output_dtype, _name(x0))
    kw = dict(has_offset=_list(offset, "offset") is not None,
              has_antiquant=(_list(antiquant_scale, "antiquant_scale") is not None
                             or _list(antiquant_offset, "antiquant_offset") is not None),
              group_list_type=group_list_type, act_type=act_type, tuning=tuning, origin=origin, soc=soc,
              core_num=core_num, user_tiling=tiling, validate=validate, models=models,
              # op-plugin sends NZ weights to aclnnGroupedMatmulWeightNz (some checks name the entry)
              api=("aclnnGroupedMatmulWeightNz" if any(isinstance(w, NzWeight) for w in ws)
                   else "aclnnGroupedMatmulV4"), transpose=trans[:2], raw_weight=trans[2],
              tuning_len=tuning_len, offset=_arrays(offset, "offset", origin))
    kw["antiquant"] = (_arrays(antiquant_scale, "antiquant_scale", origin),
                       _arrays(antiquant_offset, "antiquant_offset", origin), kw["has_offset"])
    n_y = forms.y_count(split_item, group_type, len(xs))
    subs, assemble, shapes = _build(xs, ws, _arrays(bias, "bias", origin), _arrays(scale, "scale", origin),
                                    _arrays(per_token_scale, "per_token_scale", origin), gl, y_name, n_y,
                                    split_item=split_item, group_type=group_type, group_list_type=group_list_type,
                                    kw=kw)
    sdt = storage_dtype(y_name)
    check_memory(sum(math.prod(sh) for sh in shapes) * sdt.itemsize, "GroupedMatmul output")
    ys = [sub.run(np.zeros((sub.args.x_shape[0], sub.args.w_shape[2]), sdt), float_accum, validate) for sub in subs]
    out = [to_user(y, origin) for y in assemble(ys)]
    if trace:
        if hasattr(subs[0], "make_trace"):
            return out, subs[0].make_trace()
        tr = next((s for s in subs if s.tr is not None), None)
        return out, (None if tr is None else _make_trace(tr.tr, tr.mode, tr.args))
    return out


# --------------------------------------------------------------------------------------------------------------
# aclnn two-phase API
# --------------------------------------------------------------------------------------------------------------

def _workspace(op, x, weight, bias, scale, offset, aq_scale, aq_offset, pt, group_list, act_in, act_qs, act_qo,
               split_item, group_type, group_list_type, act_type, tuning, out, soc, core_num, float_accum,
               user_tiling=None, validate=True, exp_model="correctly_rounded", div_model="ieee",
               tuning_len=0):
    def build():
        origin = Origin()
        models = _models(exp_model, div_model)
        for v, nm in ((act_in, "activationInputOptional"), (act_qs, "activationQuantScaleOptional"),
                      (act_qo, "activationQuantOffsetOptional")):
            if _list(v, nm) is not None:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{nm} is reserved and must be nullptr")
        trans = _transposes(x, weight, group_type)
        xs = _arrays(x, "x", origin)
        ws = _arrays(weight, "weight", origin)
        outs = _list(out, "out")
        forms.not_null(xs, ws, y_given=outs is not None)
        if any(o is None for o in outs):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "Y must not be nullptr.")
        o_arrs = [as_array(o, "out") if is_torch_tensor(o) else o for o in outs]
        if op == "aclnnGroupedMatmulWeightNz" and not all(isinstance(w, NzWeight) for w in ws):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "aclnnGroupedMatmulWeightNz: weight must be in FRACTAL_NZ (wrap "
                                                      "its storage in npu_emu.ops.NzWeight)")
        y_names = [resolve_dtype(o.dtype) for o in o_arrs]
        for i, nm in enumerate(y_names):
            if nm != y_names[0]:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"Output tensorlist has different data type, y[0] data type "
                                                          f"is {y_names[0]}, and y[{i}] data type id {nm}.")
        gl = None if group_list is None else as_array(group_list, "groupList", origin=origin)
        kw = dict(has_offset=_list(offset, "offset") is not None,
                  has_antiquant=_list(aq_scale, "antiquantScale") is not None
                  or _list(aq_offset, "antiquantOffset") is not None, group_list_type=as_int(group_list_type,
                                                                                            "groupListType"),
                  act_type=as_int(act_type, "actType"), tuning=tuning, origin=origin, soc=soc, core_num=core_num,
                  user_tiling=user_tiling, validate=validate, api=op, models=models, transpose=trans[:2],
                  raw_weight=trans[2],
                  tuning_len=tuning_len, offset=_arrays(offset, "offsetOptional", origin))
        kw["antiquant"] = (_arrays(aq_scale, "antiquantScale", origin), _arrays(aq_offset, "antiquantOffset", origin),
                           kw["has_offset"])
        subs, assemble, shapes = _build(xs, ws, _arrays(bias, "bias", origin), _arrays(scale, "scale", origin),
                                        _arrays(pt, "perTokenScale", origin), gl, y_names[0], len(o_arrs),
                                        split_item=as_int(split_item, "splitItem"),
                                        group_type=as_int(group_type, "groupType"),
                                        group_list_type=kw["group_list_type"], kw=kw)
        for i, (o, sh) in enumerate(zip(o_arrs, shapes)):
            if tuple(o.shape) != tuple(sh):
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"y[{i}] must have shape {tuple(sh)} (M dim value of x and "
                                                          f"y / N dim value of weight and y), got {tuple(o.shape)}.")
        sdt = storage_dtype(y_names[0])

        def run():
            ys = []
            for sub, sh in zip(subs, [(s.args.x_shape[0], s.args.w_shape[2]) for s in subs]):
                ys.append(sub.run(np.zeros(sh, sdt), float_accum, validate))
            results = assemble(ys)
            if len(subs) == 1 and len(o_arrs) == 1 and subs[0].ent is not None:
                # rows after the last group keep what out held (the kernel writes only the groups' rows)
                o_bits = np.array(o_arrs[0], copy=True).view(sdt).reshape(results[0].shape)
                keep = launch.covered_rows(subs[0].ent)
                o_bits[:keep] = results[0][:keep]
                results = [o_bits]
            for o, r in zip(outs, results):
                write_out(o, r)

        ws_size = max([s.tr.workspace_size if s.tr is not None else getattr(s, "workspace_size", 0) for s in subs]
                      or [0])
        return Executor(op, run, ws_size)

    return get_workspace(op, build)


def _models(exp_model, div_model):
    """The (exp_model, div_model) codes of the switches (docs/conventions.md, "Transcendental models")."""
    return (EXP_MODELS[choice(exp_model, "exp_model", tuple(EXP_MODELS))],
            DIV_MODELS[choice(div_model, "div_model", tuple(DIV_MODELS))])


def _tuning(t):
    if t is None:
        return 0
    t = list(t) if isinstance(t, (list, tuple, np.ndarray)) else [t]
    return int(t[0]) if t else 0


def _tuning_len(t):
    if t is None:
        return 0
    return len(list(t)) if isinstance(t, (list, tuple, np.ndarray)) else 1


def aclnnGroupedMatmulV4GetWorkspaceSize(x, weight, biasOptional, scaleOptional, offsetOptional,
                                         antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional,
                                         groupListOptional, activationInputOptional, activationQuantScaleOptional,
                                         activationQuantOffsetOptional, splitItem, groupType, groupListType, actType,
                                         out, activationFeatureOutOptional=None, dynQuantScaleOutOptional=None, *,
                                         soc=DEFAULT_SOC, core_num=None, float_accum="exact", tiling=None,
                                         validate=True, exp_model="correctly_rounded", div_model="ieee"):
    """-> (status, workspace_size, executor)."""
    return _workspace("aclnnGroupedMatmulV4", x, weight, biasOptional, scaleOptional, offsetOptional,
                      antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional, groupListOptional,
                      activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                      groupType, groupListType, actType, 0, out, soc, core_num, float_accum, tiling, validate,
                      exp_model, div_model)


def aclnnGroupedMatmulV4(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedMatmulV4")


def aclnnGroupedMatmulV5GetWorkspaceSize(x, weight, biasOptional, scaleOptional, offsetOptional,
                                         antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional,
                                         groupListOptional, activationInputOptional, activationQuantScaleOptional,
                                         activationQuantOffsetOptional, splitItem, groupType, groupListType, actType,
                                         tuningConfigOptional, out, activationFeatureOutOptional=None,
                                         dynQuantScaleOutOptional=None, *, soc=DEFAULT_SOC, core_num=None,
                                         float_accum="exact", tiling=None, validate=True,
                                         exp_model="correctly_rounded", div_model="ieee"):
    """-> (status, workspace_size, executor)."""
    return _workspace("aclnnGroupedMatmulV5", x, weight, biasOptional, scaleOptional, offsetOptional,
                      antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional, groupListOptional,
                      activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                      groupType, groupListType, actType, _tuning(tuningConfigOptional), out, soc, core_num,
                      float_accum, tiling, validate, exp_model, div_model,
                      tuning_len=_tuning_len(tuningConfigOptional))


def aclnnGroupedMatmulV5(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedMatmulV5")


def aclnnGroupedMatmulWeightNzGetWorkspaceSize(x, weight, biasOptional, scaleOptional, offsetOptional,
                                               antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional,
                                               groupListOptional, activationInputOptional,
                                               activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                                               groupType, groupListType, actType, tuningConfigOptional,
                                               quantGroupSize, out, activationFeatureOutOptional=None,
                                               dynQuantScaleOutOptional=None, *, soc=DEFAULT_SOC, core_num=None,
                                               float_accum="exact", tiling=None, validate=True,
                                               exp_model="correctly_rounded", div_model="ieee"):
    """-> (status, workspace_size, executor); weight: an NzWeight."""
    return _workspace("aclnnGroupedMatmulWeightNz", x, weight, biasOptional, scaleOptional, offsetOptional,
                      antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional, groupListOptional,
                      activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                      groupType, groupListType, actType, _tuning(tuningConfigOptional), out, soc, core_num,
                      float_accum, tiling, validate, exp_model, div_model,
                      tuning_len=_tuning_len(tuningConfigOptional))


def aclnnGroupedMatmulWeightNz(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedMatmulWeightNz")
