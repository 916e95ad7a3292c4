"""Front ends of the quantised matmul family: torch_npu ``npu_quant_matmul`` / ``npu_trans_quant_param`` and the
aclnn pairs aclnnQuantMatmulV3/V4/V5/WeightNz and aclnnTransQuantParamV2/V3 (docs/ops/quant_matmul.md §2, §4, §11).

Call flow (docs/contributing/layout.md): normalise (dtype relabels, transposed views, sub-byte unpacking; NZ weights
through weight_nz.py) -> the aclnn checks (checks.py, CANN's order and codes) -> routing (V3 or V4) -> the V3 path
(v3.py: plan, host tiling, cube accumulation) or a V4 mode (v4.py through ``V4_KERNELS``: int8 G-B, A4W4 K-G, A8W4
MSD, T-CG, MxA8W4) -> the per-core epilogue kernel over the base blocks (kernel.py, launched and validated by
launch.py) -> the caller's array type.

Switches (docs/ops/quant_matmul.md §1, docs/conventions.md §3.1), their defaults in one table, switches.DEFAULTS:
``soc``, ``float_accum``, ``fixpipe_round``, ``cast_overflow``, ``tcg_fp8_overflow`` (the T-CG weight dequant of
v4.py), ``fp4_nibble_order``, ``e8m0_zero``, ``group_size_inference``, ``trace``. npu-emu extras: ``core_num`` (cube
cores), ``tiling`` (your QuantBatchMatmulV3TilingData), ``block_dim``, ``faithful`` (integer cube block by block in
njit instead of the exact BLAS primitive), ``validate``.
"""

import numpy as np

from npu_emu.device import memo
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from npu_emu.frontend.core import (
    Executor,
    Origin,
    as_array,
    as_int,
    get_workspace,
    is_torch_tensor,
    resolve_dtype,
    run_executor,
    storage_dtype,
    to_user,
    write_out,
)
from npu_emu.kernels.quant_matmul import checks, operands, routing, tiling as tiling_mod, v4
from npu_emu.kernels.quant_matmul import trans_quant_param as tqp
from npu_emu.kernels.quant_matmul.checks import QmmArgs
from npu_emu.kernels.quant_matmul.routing import TensorDesc
from npu_emu.kernels.quant_matmul.switches import DEFAULTS, switches
from npu_emu.kernels.quant_matmul.v3 import broadcast_shapes, compute_v3
from npu_emu.kernels.quant_matmul.weight_nz import NzWeight, nz_operand  # noqa: F401  (NzWeight: npu_emu.ops)


# --------------------------------------------------------------------------------------------------------------
# argument normalisation shared by the front ends
# --------------------------------------------------------------------------------------------------------------

def _op(x, name, dtype=None, origin=None, transpose=False):
    """x1/x2 (``transpose``: transposed views flip the flag) or any other tensor (transposed views are read as
    their storage block, as aclnn's contiguous processing does for scales, bias and offsets)."""
    if isinstance(x, NzWeight):
        return nz_operand(x, name, dtype, origin)
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
v4.register(V4_KERNELS)


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
    batch = broadcast_shapes(a.x1.shape[:-2], a.x2.shape[:-2])
    return np.zeros(batch + (m, n), storage_dtype(a.out.dtype))


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
                     y_scale=None, soc=DEFAULTS["soc"], float_accum=DEFAULTS["float_accum"],
                     fixpipe_round=DEFAULTS["fixpipe_round"], cast_overflow=DEFAULTS["cast_overflow"],
                     tcg_fp8_overflow=DEFAULTS["tcg_fp8_overflow"], fp4_nibble_order=DEFAULTS["fp4_nibble_order"],
                     e8m0_zero=DEFAULTS["e8m0_zero"], group_size_inference=DEFAULTS["group_size_inference"],
                     core_num=DEFAULTS["core_num"], tiling=None, block_dim=None, faithful=DEFAULTS["faithful"],
                     validate=DEFAULTS["validate"], trace=False):
    """torch_npu.npu_quant_matmul with op-plugin's mapping (docs/ops/quant_matmul.md §11.1,
    ``QuantMatmulKernelNpuOpApi.cpp``).

    scale -> x2Scale, pertoken_scale -> x1Scale, offset -> x2Offset (yOffset for int8 x int32), y_scale -> yScale;
    ``*_dtype`` relabel the bits (names such as "hifloat8", "float8_e8m0", "float4_e2m1", "int4", aclDataType
    ints, numpy/ml_dtypes/torch dtypes). Output dtype defaults to int8. A float32 scale without pertoken_scale
    and with a non-int32 output (not bf16 unless the V5-only path is taken) is first packed by
    npu_trans_quant_param (FP19 truncation). Transposes come from strides (a transposed view is detected). An
    x2 given as :class:`NzWeight` goes to aclnnQuantMatmulWeightNz. Every switch is a keyword; the defaults are
    switches.DEFAULTS.
    """
    sw = switches(soc=soc, float_accum=float_accum, fixpipe_round=fixpipe_round, cast_overflow=cast_overflow,
                  tcg_fp8_overflow=tcg_fp8_overflow, fp4_nibble_order=fp4_nibble_order, e8m0_zero=e8m0_zero,
                  group_size_inference=group_size_inference, core_num=core_num, faithful=faithful, validate=validate)
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
        batch = broadcast_shapes(o1.desc.shape[:-2], o2.desc.shape[:-2]) if min(o1.desc.ndim, o2.desc.ndim) >= 2 \
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
        sw = switches(**sw_kwargs)
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


_SWITCH_DOC = """Keyword extras: the ``*_dtype`` relabels (uint8 bits as hifloat8 / float8_e8m0 / float4_e2m1 / int4,
    and int32 as int4), and the switches ``soc``, ``float_accum``, ``fixpipe_round``, ``cast_overflow``,
    ``tcg_fp8_overflow``, ``fp4_nibble_order``, ``e8m0_zero``, ``group_size_inference``, ``core_num``."""


def aclnnQuantMatmulV5GetWorkspaceSize(x1, x2, x1Scale, x2Scale, yScale, x1Offset, x2Offset, yOffset, bias,
                                       transposeX1, transposeX2, groupSize, out, *, x1_dtype=None, x2_dtype=None,
                                       x1_scale_dtype=None, x2_scale_dtype=None, soc=DEFAULTS["soc"],
                                       float_accum=DEFAULTS["float_accum"], fixpipe_round=DEFAULTS["fixpipe_round"],
                                       cast_overflow=DEFAULTS["cast_overflow"],
                                       tcg_fp8_overflow=DEFAULTS["tcg_fp8_overflow"],
                                       fp4_nibble_order=DEFAULTS["fp4_nibble_order"], e8m0_zero=DEFAULTS["e8m0_zero"],
                                       group_size_inference=DEFAULTS["group_size_inference"],
                                       core_num=DEFAULTS["core_num"]):
    """-> (status, workspace_size, executor). """
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x1_scale": (x1Scale, "x1Scale"), "x2_scale": (x2Scale, "x2Scale"),
               "y_scale": (yScale, "yScale"), "x1_offset": (x1Offset, "x1Offset"), "x2_offset": (x2Offset, "x2Offset"),
               "y_offset": (yOffset, "yOffset"), "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x1_scale": x1_scale_dtype, "x2_scale": x2_scale_dtype}
    return _workspace(5, "aclnnQuantMatmulV5", tensors, out, transposeX1, transposeX2, groupSize, dtypes,
                      dict(soc=soc, float_accum=float_accum, fixpipe_round=fixpipe_round,
                           cast_overflow=cast_overflow, tcg_fp8_overflow=tcg_fp8_overflow,
                           fp4_nibble_order=fp4_nibble_order, e8m0_zero=e8m0_zero,
                           group_size_inference=group_size_inference, core_num=core_num))


def aclnnQuantMatmulV5(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnQuantMatmulV5")


def aclnnQuantMatmulWeightNzGetWorkspaceSize(x1, x2, x1Scale, x2Scale, yScale, x1Offset, x2Offset, yOffset, bias,
                                             transposeX1, transposeX2, groupSize, out, *, x1_dtype=None,
                                             x2_dtype=None, x1_scale_dtype=None, x2_scale_dtype=None,
                                             soc=DEFAULTS["soc"], float_accum=DEFAULTS["float_accum"],
                                             fixpipe_round=DEFAULTS["fixpipe_round"],
                                             cast_overflow=DEFAULTS["cast_overflow"],
                                             tcg_fp8_overflow=DEFAULTS["tcg_fp8_overflow"],
                                             fp4_nibble_order=DEFAULTS["fp4_nibble_order"],
                                             e8m0_zero=DEFAULTS["e8m0_zero"],
                                             group_size_inference=DEFAULTS["group_size_inference"],
                                             core_num=DEFAULTS["core_num"]):
    """-> (status, workspace_size, executor). x2 must be an :class:`NzWeight` (FRACTAL_NZ storage + view shape)."""
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x1_scale": (x1Scale, "x1Scale"), "x2_scale": (x2Scale, "x2Scale"),
               "y_scale": (yScale, "yScale"), "x1_offset": (x1Offset, "x1Offset"), "x2_offset": (x2Offset, "x2Offset"),
               "y_offset": (yOffset, "yOffset"), "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x1_scale": x1_scale_dtype, "x2_scale": x2_scale_dtype}
    return _workspace("nz", "aclnnQuantMatmulWeightNz", tensors, out, transposeX1, transposeX2, groupSize, dtypes,
                      dict(soc=soc, float_accum=float_accum, fixpipe_round=fixpipe_round,
                           cast_overflow=cast_overflow, tcg_fp8_overflow=tcg_fp8_overflow,
                           fp4_nibble_order=fp4_nibble_order, e8m0_zero=e8m0_zero,
                           group_size_inference=group_size_inference, core_num=core_num))


def aclnnQuantMatmulWeightNz(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnQuantMatmulWeightNz")


def aclnnQuantMatmulV4GetWorkspaceSize(x1, x2, scale, offset, pertokenScaleOptional, bias, transposeX1,
                                       transposeX2, out, *, x1_dtype=None, x2_dtype=None, scale_dtype=None,
                                       soc=DEFAULTS["soc"], fixpipe_round=DEFAULTS["fixpipe_round"],
                                       cast_overflow=DEFAULTS["cast_overflow"], core_num=DEFAULTS["core_num"]):
    """-> (status, workspace_size, executor). Deprecated by CANN in favour of V5; integer inputs on A2/A3."""
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x2_scale": (scale, "scale"), "x2_offset": (offset, "offset"),
               "x1_scale": (pertokenScaleOptional, "pertokenScaleOptional"), "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x2_scale": scale_dtype}
    return _workspace(4, "aclnnQuantMatmulV4", tensors, out, transposeX1, transposeX2, 0, dtypes,
                      dict(soc=soc, fixpipe_round=fixpipe_round, cast_overflow=cast_overflow, core_num=core_num))


def aclnnQuantMatmulV4(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnQuantMatmulV4")


def aclnnQuantMatmulV3GetWorkspaceSize(x1, x2, scale, offset, bias, transposeX1, transposeX2, out, *, x1_dtype=None,
                                       x2_dtype=None, scale_dtype=None, soc=DEFAULTS["soc"],
                                       fixpipe_round=DEFAULTS["fixpipe_round"],
                                       cast_overflow=DEFAULTS["cast_overflow"], core_num=DEFAULTS["core_num"]):
    """-> (status, workspace_size, executor). No pertoken scale (aclnnQuantMatmulV3's signature)."""
    tensors = {"x1": (x1, "x1"), "x2": (x2, "x2"), "x2_scale": (scale, "scale"), "x2_offset": (offset, "offset"),
               "bias": (bias, "bias")}
    dtypes = {"x1": x1_dtype, "x2": x2_dtype, "x2_scale": scale_dtype}
    return _workspace(3, "aclnnQuantMatmulV3", tensors, out, transposeX1, transposeX2, 0, dtypes,
                      dict(soc=soc, fixpipe_round=fixpipe_round, cast_overflow=cast_overflow, core_num=core_num))


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
