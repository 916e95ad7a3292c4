"""Front ends of GroupedMatmul: torch_npu ``npu_grouped_matmul`` and aclnnGroupedMatmulV4 / V5 / WeightNz
(docs/ops/grouped_matmul.md §2).

Call flow: normalise (tensor lists, NZ weights to their ND values, dtype names) -> the aclnn checks (checks.py) ->
the group entries from the group list -> host tiling (tiling.py) -> the cube (kernels/quant_matmul/accum.py: exact
int32, or the float accumulation models) -> the per-core epilogue over the groups' output blocks (kernel.py via
launch.py) -> the caller's array type.

Switches: ``soc`` ("ascend910b2"), ``float_accum`` ("exact"; plain bf16 / fp16 modes, as quant_matmul's),
``core_num``, ``trace``. Rows of y after the last group: a fresh y (npu_grouped_matmul) holds zeros there, an
aclnn ``out`` keeps what it held (the kernel writes only the groups' rows).
"""

import numpy as np

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
from npu_emu.kernels.grouped_matmul import checks, launch, tiling as tiling_mod
from npu_emu.kernels.quant_matmul import accum
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
    """(ND logical weight (E, K, N), dtype name, is_nz). NZ storage (E, N1, K1, 16, 32) -> ND values."""
    if isinstance(w, NzWeight):
        from npu_emu.ascendc.nz import nz_to_nd

        store = as_array(w.storage, "weight", origin=origin)
        if len(w.shape) != 3 or store.ndim != 5:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"weight: an NZ weight must be (E, N1, K1, 16, c0) storage with "
                                                      f"an (E, K, N) view shape, got {store.shape} / {w.shape}")
        nd = nz_to_nd(store, w.shape[1], w.shape[2])
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


def _prepare(x, w, bias, scale, pt, gl, y_name, *, has_offset, has_antiquant, split_item, group_type,
             group_list_type, act_type, tuning_config, origin):
    checks.null_check(x, w)
    wnd, w_name, nz = _weight_nd(w, origin)
    args = checks.GmmArgs(
        x_dtype=_name(x), w_dtype=w_name, y_dtype=y_name, x_shape=_shape(x), w_shape=_shape(wnd),
        scale_dtype=_dt(scale), scale_shape=_shape(scale), pt_dtype=_dt(pt), pt_shape=_shape(pt),
        bias_dtype=_dt(bias), bias_shape=_shape(bias), gl_dtype=_dt(gl), gl_shape=_shape(gl), has_offset=has_offset,
        has_antiquant=has_antiquant, split_item=split_item, group_type=group_type, group_list_type=group_list_type,
        act_type=act_type, tuning_config=tuning_config)
    mode = checks.check(args)
    checks.check_group_values(gl, group_list_type, wnd.shape[0], x.shape[0])
    return args, mode, wnd, nz


def _tiling(args, nz, soc, core_num, user=None, mode=None):
    s = tiling_mod.GmmShape(group_num=args.w_shape[0], m=args.x_shape[0], k=args.x_shape[1], n=args.w_shape[2],
                            x_dtype=args.x_dtype, w_dtype=args.w_dtype, y_dtype=args.y_dtype,
                            scale_dtype=args.scale_dtype, per_token=args.pt_dtype is not None,
                            has_bias=args.bias_dtype is not None, weight_nz=nz, group_type=args.group_type,
                            group_list_type=args.group_list_type, act_type=args.act_type,
                            tuning_config=args.tuning_config)
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


def _compute(args, mode, x, wnd, bias, scale, pt, ent, tr, y, float_accum, validate=True):
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
        s32 = scale.astype(np.float32)
        bias_i = bias if bias is not None and bias.dtype == np.int32 else empty_i
        bias_f = bias.astype(np.float32) if bias is not None and bias.dtype != np.int32 else empty_f
        ptv = np.zeros(0, np.float32) if pt is None else pt
        launch.run_epilogue(tr, ent, args, acc, np.zeros(0, np.float32), s32, ptv, bias_i, bias_f,
                            launch.OUT_CODES[args.y_dtype], y, validate)
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


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
                       per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
                       activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0,
                       tuning_config=None, output_dtype=None, x_dtype=None, weight_dtype=None, scale_dtype=None,
                       per_token_scale_dtype=None, soc=DEFAULT_SOC, core_num=None, float_accum="exact",
                       tiling=None, validate=True, trace=False):
    """torch_npu.npu_grouped_matmul: one matmul per expert group -> a list of one y (M, N).

    Implemented: the single-tensor split-M form (x (M, K), weight (E, K, N) or an NzWeight, split_item 2 / 3,
    group_type 0, group_list_type 0 / 1 / 2): A8W8 -> int32; A8W8 with scale (E, N) [+ per_token_scale (M,)]
    [+ bias (E, N) int32 or bfloat16] -> bfloat16 / float16; plain bfloat16 / float16 / float32 (+ bias).
    Extra keywords: ``soc``, ``core_num``, ``float_accum`` (plain float modes), ``tiling`` (a GMMTilingData, a
    dict of its fields or its packed bytes, in place of the host's; it runs on its coreNum cores), ``validate``
    (check the walk's accesses and UB before anything runs; 561002 otherwise), ``trace``.
    """
    origin = Origin()
    xa = _one(x, "x", origin)
    wa = _one(weight, "weight", origin)
    if x_dtype is not None and xa is not None:
        xa = xa.view(storage_dtype(resolve_dtype(x_dtype, "x_dtype")))
    if weight_dtype is not None and wa is not None and not isinstance(wa, NzWeight):
        wa = wa.view(storage_dtype(resolve_dtype(weight_dtype, "weight_dtype")))
    bias_a = _one(bias, "bias", origin)
    scale_a = _one(scale, "scale", origin)
    pt_a = _one(per_token_scale, "per_token_scale", origin)
    gl = None if group_list is None else as_array(group_list, "group_list", origin=origin)
    split_item = as_int(split_item if split_item is not None else 0, "split_item")
    group_type = as_int(group_type if group_type is not None else -1, "group_type")
    group_list_type = as_int(group_list_type if group_list_type is not None else 0, "group_list_type")
    act_type = as_int(act_type if act_type is not None else 0, "act_type")
    tuning = 0
    if tuning_config is not None:
        tc = list(tuning_config) if isinstance(tuning_config, (list, tuple)) else [tuning_config]
        tuning = as_int(tc[0], "tuning_config[0]") if tc else 0
    float_accum = choice(float_accum, "float_accum", accum.FLOAT_ACCUM)
    x_name = None if xa is None else _name(xa)
    y_name = _out_dtype(output_dtype, x_name)
    for v, nm in ((activation_input, "activation_input"), (activation_quant_scale, "activation_quant_scale"),
                  (activation_quant_offset, "activation_quant_offset")):
        if _list(v, nm) is not None:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{nm} is reserved and must be None")
    args, mode, wnd, nz = _prepare(xa, wa, bias_a, scale_a, pt_a, gl, y_name,
                                   has_offset=_list(offset, "offset") is not None,
                                   has_antiquant=(_list(antiquant_scale, "antiquant_scale") is not None
                                                  or _list(antiquant_offset, "antiquant_offset") is not None),
                                   split_item=split_item, group_type=group_type, group_list_type=group_list_type,
                                   act_type=act_type, tuning_config=tuning, origin=origin)
    m_x, n = args.x_shape[0], args.w_shape[2]
    check_memory(m_x * n * storage_dtype(y_name).itemsize, "GroupedMatmul output")
    y = np.zeros((m_x, n), storage_dtype(y_name))
    tr = None
    if m_x and n and args.x_shape[1]:
        tr = _tiling(args, nz, soc, core_num, tiling, mode)
        ent = _plan(args, mode, gl, tr, validate)
        _compute(args, mode, xa, wnd, bias_a, scale_a, pt_a, ent, tr, y, float_accum, validate)
    elif m_x and n:
        pass                                                     # K = 0: the cube adds nothing; y stays 0
    out = [to_user(y, origin)]
    if trace:
        return out, (None if tr is None else _make_trace(tr, mode, args))
    return out


# --------------------------------------------------------------------------------------------------------------
# aclnn two-phase API
# --------------------------------------------------------------------------------------------------------------

def _workspace(op, x, weight, bias, scale, offset, aq_scale, aq_offset, pt, group_list, act_in, act_qs, act_qo,
               split_item, group_type, group_list_type, act_type, tuning, out, soc, core_num, float_accum,
               user_tiling=None, validate=True):
    def build():
        origin = Origin()
        for v, nm in ((act_in, "activationInputOptional"), (act_qs, "activationQuantScaleOptional"),
                      (act_qo, "activationQuantOffsetOptional")):
            if _list(v, nm) is not None:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{nm} is reserved and must be nullptr")
        if out is None:
            raise AclnnError(161001, "y must not be nullptr.")
        xa = _one(x, "x", origin)
        wa = _one(weight, "weight", origin)
        outs = _list(out, "out")
        if len(outs) != 1:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "out: npu-emu implements the single-tensor form (one y)")
        o = outs[0]
        o_arr = o if not is_torch_tensor(o) else as_array(o, "out")
        if op == "aclnnGroupedMatmulWeightNz" and not isinstance(wa, NzWeight):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, "aclnnGroupedMatmulWeightNz: weight must be in FRACTAL_NZ (wrap "
                                                      "its storage in npu_emu.ops.NzWeight)")
        bias_a = _one(bias, "bias", origin)
        scale_a = _one(scale, "scale", origin)
        pt_a = _one(pt, "perTokenScale", origin)
        gl = None if group_list is None else as_array(group_list, "groupList", origin=origin)
        y_name = resolve_dtype(o_arr.dtype)
        args, mode, wnd, nz = _prepare(
            xa, wa, bias_a, scale_a, pt_a, gl, y_name, has_offset=_list(offset, "offset") is not None,
            has_antiquant=_list(aq_scale, "antiquantScale") is not None or _list(aq_offset, "antiquantOffset")
            is not None, split_item=as_int(split_item, "splitItem"), group_type=as_int(group_type, "groupType"),
            group_list_type=as_int(group_list_type, "groupListType"), act_type=as_int(act_type, "actType"),
            tuning_config=tuning, origin=origin)
        m_x, n = args.x_shape[0], args.w_shape[2]
        if tuple(o_arr.shape) != (m_x, n):
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"m dim value of x and y is not matched: y must have shape "
                                                      f"({m_x}, {n}), got {tuple(o_arr.shape)}.")
        if not (m_x and n and args.x_shape[1]):
            return Executor(op, lambda: None, 0)
        tr = _tiling(args, nz, soc, core_num, user_tiling, mode)
        ent = _plan(args, mode, gl, tr, validate)

        def run():
            y = np.array(o_arr.view(storage_dtype(y_name)) if not is_torch_tensor(o) else o_arr, copy=True)
            _compute(args, mode, xa, wnd, bias_a, scale_a, pt_a, ent, tr, y, float_accum, validate)
            write_out(o, y)

        return Executor(op, run, tr.workspace_size)

    return get_workspace(op, build)


def _tuning(t):
    if t is None:
        return 0
    t = list(t) if isinstance(t, (list, tuple, np.ndarray)) else [t]
    return int(t[0]) if t else 0


def aclnnGroupedMatmulV4GetWorkspaceSize(x, weight, biasOptional, scaleOptional, offsetOptional,
                                         antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional,
                                         groupListOptional, activationInputOptional, activationQuantScaleOptional,
                                         activationQuantOffsetOptional, splitItem, groupType, groupListType, actType,
                                         out, activationFeatureOutOptional=None, dynQuantScaleOutOptional=None, *,
                                         soc=DEFAULT_SOC, core_num=None, float_accum="exact", tiling=None,
                                         validate=True):
    """-> (status, workspace_size, executor)."""
    return _workspace("aclnnGroupedMatmulV4", x, weight, biasOptional, scaleOptional, offsetOptional,
                      antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional, groupListOptional,
                      activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                      groupType, groupListType, actType, 0, out, soc, core_num, float_accum, tiling, validate)


def aclnnGroupedMatmulV4(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedMatmulV4")


def aclnnGroupedMatmulV5GetWorkspaceSize(x, weight, biasOptional, scaleOptional, offsetOptional,
                                         antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional,
                                         groupListOptional, activationInputOptional, activationQuantScaleOptional,
                                         activationQuantOffsetOptional, splitItem, groupType, groupListType, actType,
                                         tuningConfigOptional, out, activationFeatureOutOptional=None,
                                         dynQuantScaleOutOptional=None, *, soc=DEFAULT_SOC, core_num=None,
                                         float_accum="exact", tiling=None, validate=True):
    """-> (status, workspace_size, executor)."""
    return _workspace("aclnnGroupedMatmulV5", x, weight, biasOptional, scaleOptional, offsetOptional,
                      antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional, groupListOptional,
                      activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                      groupType, groupListType, actType, _tuning(tuningConfigOptional), out, soc, core_num,
                      float_accum, tiling, validate)


def aclnnGroupedMatmulV5(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedMatmulV5")


def aclnnGroupedMatmulWeightNzGetWorkspaceSize(x, weight, biasOptional, scaleOptional, offsetOptional,
                                               antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional,
                                               groupListOptional, activationInputOptional,
                                               activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                                               groupType, groupListType, actType, tuningConfigOptional,
                                               quantGroupSize, out, activationFeatureOutOptional=None,
                                               dynQuantScaleOutOptional=None, *, soc=DEFAULT_SOC, core_num=None,
                                               float_accum="exact", tiling=None, validate=True):
    """-> (status, workspace_size, executor); weight: an NzWeight."""
    return _workspace("aclnnGroupedMatmulWeightNz", x, weight, biasOptional, scaleOptional, offsetOptional,
                      antiquantScaleOptional, antiquantOffsetOptional, perTokenScaleOptional, groupListOptional,
                      activationInputOptional, activationQuantScaleOptional, activationQuantOffsetOptional, splitItem,
                      groupType, groupListType, actType, _tuning(tuningConfigOptional), out, soc, core_num,
                      float_accum, tiling, validate)


def aclnnGroupedMatmulWeightNz(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedMatmulWeightNz")
