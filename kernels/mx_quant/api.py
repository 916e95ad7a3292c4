"""Front ends of GroupedDynamicMxQuant and DynamicMxQuant: torch_npu-style functions and the aclnn two-phase API.

Call flow (docs/contributing/layout.md): normalise -> checks (torch_npu's, then aclnn's in CANN order) -> host tiling
(its rules give 561103) -> emulator-added group_index check -> allocate -> launch -> convert back. Defaults:
docs/ops/mx_quant.md §1 (soc ascend950pr, cann_version "master", gap_fill 0x00, signed zeros, no FTZ, NaN propagating
through the floating Max, FP4 low nibble first).

Outputs: y is an ml_dtypes float8 array [.., n] (FP8) or packed uint8 [.., n/2] (FP4, two codes per byte), mxscale
uint8 E8M0 codes (view as ml_dtypes.float8_e8m0fnu for values).
"""

import ml_dtypes
import numpy as np

from npu_emu.device import memo
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend import output_cache
from npu_emu.frontend.core import (
    Executor,
    Origin,
    Trace,
    as_array,
    as_int,
    check_memory,
    get_workspace,
    is_torch_tensor,
    resolve_dtype,
    run_executor,
    to_user,
    write_out,
)
from npu_emu.kernels.mx_quant import checks, common, launch, tiling as tiling_mod
from npu_emu.kernels.mx_quant.checks import Desc
from npu_emu.kernels.mx_quant.tiling import FP4, FP8

DEFAULT_SOC = tiling_mod.DEFAULT_SOC
# Names the lead re-exports from npu_emu.ops (torch_npu-style) and npu_emu.aclnn (two-phase aclnn API).
OPS_EXPORTS = ["npu_grouped_dynamic_mx_quant", "npu_dynamic_mx_quant", "mx_dequantize"]
ACLNN_EXPORTS = [
    "aclnnGroupedDynamicMxQuantGetWorkspaceSize", "aclnnGroupedDynamicMxQuant",
    "aclnnGroupedDynamicMxQuantV2GetWorkspaceSize", "aclnnGroupedDynamicMxQuantV2",
    "aclnnDynamicMxQuantGetWorkspaceSize", "aclnnDynamicMxQuant",
    "aclnnDynamicMxQuantV2GetWorkspaceSize", "aclnnDynamicMxQuantV2",
    "aclnnDynamicMxQuantV3GetWorkspaceSize", "aclnnDynamicMxQuantV3",
]
_ML_FP8 = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}
_X_NAMES = ("float16", "bfloat16", "float32")


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def _empty(nbytes):
    """An output buffer before the kernel runs: uninitialised, like the device's GM. The kernels must write every
    byte the op returns (pads included); the tests swap in a poisoned allocator to prove it."""
    return output_cache.empty(nbytes, np.uint8)


# ---------------------------------------------------------------------------------------------------------------
# argument plumbing
# ---------------------------------------------------------------------------------------------------------------

def _x_name(arr, what="x"):
    try:
        name = resolve_dtype(arr.dtype, f"{what} dtype")
    except AclnnError:
        name = str(arr.dtype)
    return name


def _float_arg(v, name):
    if v is None:
        raise AclnnError(161001, f"{name} is None; pass a number")
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise _bad(f"{name}={v!r} must be a number")
    v = float(v)
    if not np.isfinite(v):
        raise _bad(f"{name}={v!r} must be finite (emulator-added check: the float attribute would hold "
                   f"Inf/NaN and the kernel's scale arithmetic has no defined result for it)")
    return v


def _group_index_array(group_index):
    if isinstance(group_index, (list, tuple)):
        vals = np.asarray(group_index)
        if vals.size and (vals.dtype.kind not in "iu" or vals.min() < -2**31 or vals.max() >= 2**31):
            raise _bad("group_index values must be int32 integers")
        return vals.astype(np.int32)
    return as_array(group_index, "group_index")


def _out_desc(arr, label, default_name, name):
    """Desc of an output tensor and how its bytes hold codes ("plain", "packed" FP4 pairs, or "unpacked" FP4 in an
    ml_dtypes.float4_e2m1fn array). ``label`` (aclDataType code, name or dtype) tags uint8 bit views, whose dtype
    defaults to ``default_name``. Packed FP4 counts two elements per byte: aclTensor shapes are in elements."""
    if is_torch_tensor(arr):
        contiguous, view = bool(arr.is_contiguous()), as_array(arr, name)
    elif isinstance(arr, np.ndarray):
        if not arr.flags.writeable:
            raise _bad(f"{name} is a read-only array; pass a writable one (emulator-added check: the result is "
                       f"copied into it after the kernel ran)")
        contiguous, view = bool(arr.flags.c_contiguous), arr
    else:
        raise _bad(f"{name} must be a numpy array or a torch CPU tensor, not {type(arr).__name__}")
    shape, dt = tuple(view.shape), view.dtype
    if label is None and dt == np.dtype(ml_dtypes.float4_e2m1fn):
        return Desc("float4_e2m1", shape, contiguous), "unpacked"
    if label is not None:
        dname = resolve_dtype(label, f"{name}_dtype")
    elif dt == np.uint8:
        dname = default_name
    else:
        dname = resolve_dtype(dt, f"{name} dtype")
    if dname in FP4 or dname == "float8_e8m0" or dname in FP8:
        if dt.itemsize != 1:
            raise _bad(f"{name} holds {dt} ({dt.itemsize} bytes per element); {dname} needs one byte per "
                       f"element (uint8 bits or the ml_dtypes type)")
    if dname in FP4:
        return Desc(dname, shape[:-1] + (2 * shape[-1],) if shape else shape, contiguous), "packed"
    return Desc(dname, shape, contiguous), "plain"


def _array_view(arr):
    """A numpy view of the caller's output (torch tensors: their numpy bits), for reading the current content."""
    if is_torch_tensor(arr):
        return as_array(arr, "out")
    return arr


def _switches(cann_version, gap_fill, signed_zero, ftz, nan_in_max, fp4_nibble_order):
    checks.check_cann_version(cann_version)
    checks.check_switches(gap_fill=gap_fill, signed_zero=signed_zero, ftz=ftz, nan_in_max=nan_in_max,
                          fp4_nibble_order=fp4_nibble_order)


def _make_trace(op, tr, overruns, notes=()):
    td = tr.tiling
    return Trace(op=op, soc=tr.soc, tiling_data=td.fields(), tiling_data_bytes=td.to_bytes(),
                 tiling_key=tr.tiling_key, block_dim=tr.block_dim, workspace_size=tr.workspace_size,
                 ub_bytes_per_core=tr.ub_size, gm_overrun=list(overruns), notes=list(tr.notes) + list(notes))


def _x_bits(xa):
    """The input as flat uint16 words (FP32: two little-endian words per element), the kernels' one x type."""
    return np.ascontiguousarray(xa).reshape(-1).view(np.uint16)


# ---------------------------------------------------------------------------------------------------------------
# GroupedDynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

def _grouped_alg(scale_alg, y_dtype, dst_type_max):
    if scale_alg == 0:
        return common.ALG_OCP, 0
    cls = tiling_mod.dst_type_max_class(y_dtype, dst_type_max)
    if scale_alg == 2 and cls:
        return common.ALG_RANGE, cls
    return (common.ALG_RCEIL if scale_alg == 1 else common.ALG_RCEIL_NOSUB), 0


def _user_tiling(tiling, host):
    """A user's GroupedDynamicMxQuantTilingData (instance, dict of fields or packed bytes) replacing the host's."""
    if tiling is None:
        return host
    td = tiling_mod.GroupedDynamicMxQuantTilingData.coerce(tiling)
    return tiling_mod.TilingResult(td, td.usedCoreNum, td.tilingKey, host.workspace_size, host.ub_size,
                                   host.core_num, host.soc, tuple(host.notes) + ("user tiling data",))


def _grouped_run(xa, x_dtype, gi, y_dtype, round_mode, scale_alg, dst_type_max, tr, *, cann_version, gap_fill,
                 signed_zero, ftz, nan_in_max, fp4_nibble_order, faithful, validate, scale_init=None):
    """Kernel launch on checked inputs -> (y codes flat uint8, mxscale flat uint8, overruns)."""
    m, n = xa.shape
    g = gi.shape[0]
    td = tr.tiling
    # the kernel template comes from the tiling key, as on the device
    key_alg, key_cls, key_dst, key_rm = tiling_mod.decode_grouped_tiling_key(td.tilingKey)
    if key_dst != tiling_mod.TPL_DST_TYPE[y_dtype]:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                         f"tiling key {td.tilingKey} selects output template {key_dst} but y is {y_dtype}")
    alg, cls = _grouped_alg(key_alg, y_dtype, dst_type_max)
    if key_alg == 2 and alg != common.ALG_RANGE and key_cls:
        alg, cls = common.ALG_RANGE, key_cls
    legacy = cann_version in checks.GROUPED_LEGACY
    params = common.make_params(x_dtype=x_dtype, y_dtype=y_dtype, round_mode=key_rm, alg=alg, dtm_class=cls,
                                legacy=legacy, signed_zero=signed_zero, ftz=ftz, nan_in_max=nan_in_max,
                                fp4_nibble_order=fp4_nibble_order, dynamic=False, faithful=faithful)
    # v9.1 and earlier kernels use the constant 1/448 or 1/57344 for RCEIL; master reads invDstTypeMax
    r32 = tiling_mod.inv_dst_type_max(y_dtype, 0.0) if legacy else td.invDstTypeMax
    ybytes = m * n // 2 if y_dtype in FP4 else m * n
    sbytes = (m // 64 + g) * n * 2
    check_memory(ybytes + sbytes, "GroupedDynamicMxQuant outputs")
    y = _empty(ybytes)
    s = _empty(sbytes)
    rows = m // 64 + g
    # the kernel writes every byte of the rows the groups own (pad slots included) and nothing else (§3.6)
    owned = np.zeros(rows, bool)
    start = 0
    for k, end in enumerate(gi.tolist()):
        if end - start > 0:
            r0 = start // 64 + k
            owned[r0:r0 + -(-(end - start) // 64)] = True
        start = end
    if scale_init is not None:
        s[:] = np.asarray(scale_init, np.uint8).reshape(-1)
    if gap_fill is not None or scale_init is None:
        # gap_fill=None keeps the caller's bytes (aclnn); the torch_npu-style function has none and gives 0x00
        s.reshape(rows, 2 * n)[~owned] = 0 if gap_fill is None else gap_fill
    overruns = launch.run_grouped(_x_bits(xa), np.ascontiguousarray(gi, np.int32), y, s, tr, params, r32,
                                  shape=(m, n), validate=validate)
    return y, s, overruns


def _grouped_common(xa, gi, round_mode, dst_type, blocksize, scale_alg, dst_type_max, y_desc, s_desc, *, version,
                    soc, cann_version, core_num, tiling):
    """aclnn checks + tiling + group_index values. Returns (x_dtype, tiling result or None when x is empty)."""
    x_dtype = None if xa is None else _x_name(xa)
    x_desc = None if xa is None else Desc(x_dtype, tuple(xa.shape))
    gi_desc = None if gi is None else Desc(_x_name(gi, "groupIndex"), tuple(gi.shape))
    empty = checks.check_grouped_aclnn(x_desc, gi_desc, round_mode, dst_type, blocksize, scale_alg, y_desc, s_desc,
                                       version=version, soc=soc, cann_version=cann_version)
    if empty:
        # CANN returns success here without launching (aclnn_grouped_dynamic_mx_quant[_v2].cpp: the x->IsEmpty()
        # early return comes after CheckParams); the emulator-added groupIndex value check still applies, so that a
        # wrong groupIndex is reported whatever the size of x
        checks.check_group_index_values(gi, xa.shape[0])
        return x_dtype, None
    m, n = xa.shape
    tr = memo.call(tiling_mod.grouped_tiling, m, n, gi.shape[0], x_dtype=x_dtype, y_dtype=y_desc.dtype,
                   round_mode=round_mode, dst_type=dst_type, blocksize=blocksize, scale_alg=scale_alg,
                   dst_type_max=dst_type_max, group_index_dtype=gi_desc.dtype, mxscale_shape=s_desc.shape, soc=soc,
                   core_num=core_num)
    checks.check_grouped_mxscale_contiguous(s_desc)
    checks.check_group_index_values(gi, m)
    return x_dtype, memo.call(_user_tiling, tiling, tr)


def npu_grouped_dynamic_mx_quant(x, group_index, *, round_mode="rint", dst_type=23, blocksize=32, scale_alg=0,
                                 dst_type_max=0.0, soc=DEFAULT_SOC, cann_version="master", gap_fill=0,
                                 signed_zero=True, ftz=False, nan_in_max="propagate", fp4_nibble_order="low_first",
                                 core_num=None, tiling=None, faithful=False, validate=True, trace=False):
    """torch_npu.npu_grouped_dynamic_mx_quant(x, group_index, ...) -> (y, mxscale).

    x: float16/bfloat16 [m, n]; group_index: int32 [g], cumulative END offsets (last == m). dst_type is a torch
    dtype code: 23 float8_e5m2, 24 float8_e4m3fn, 296 float4_e2m1fn_x2, 297 float4_e1m2fn_x2 (torch_npu's 291 / 292
    too), or a torch / ml_dtypes dtype or a name such as "float8_e4m3fn" (checks.torch_dst_type). Returns y (ml_dtypes
    float8 [m, n], or packed uint8 [m, n/2] for FP4) and mxscale uint8 [m // 64 + g, n, 2]; mxscale rows no group
    owns get ``gap_fill`` (default 0x00; None also gives 0x00 here, as there is no caller buffer to keep; the
    device leaves them undefined). An empty x gives an all-gap mxscale: the device launches no kernel and leaves
    the fresh buffer undefined. Emulator keywords: ``soc``, ``cann_version``,
    ``gap_fill``, ``signed_zero``, ``ftz``, ``nan_in_max``, ``fp4_nibble_order`` (docs/ops/mx_quant.md §1),
    ``core_num``, ``tiling`` (your own GroupedDynamicMxQuantTilingData), ``faithful`` (stage every tile through UB with
    DataCopyPad), ``validate`` (check the tiling's GM/UB accesses first), ``trace``.
    """
    origin = Origin()
    xa = as_array(x, "x", origin=origin)
    gi = _group_index_array(group_index)
    _switches(cann_version, gap_fill, signed_zero, ftz, nan_in_max, fp4_nibble_order)
    blocksize, scale_alg = as_int(blocksize, "blocksize"), as_int(scale_alg, "scale_alg")
    dst_type_max = _float_arg(dst_type_max, "dst_type_max")
    y_dtype = checks.check_grouped_torch(Desc(_x_name(xa), tuple(xa.shape)), Desc(_x_name(gi), tuple(gi.shape)),
                                         dst_type, blocksize, scale_alg, dst_type_max, cann_version)
    version = "v2" if cann_version in checks.GROUPED_HAS_V2 else "v1"
    acl = tiling_mod.ACL_CODE[y_dtype]
    m, n = xa.shape
    g = gi.shape[0]
    s_desc = Desc("float8_e8m0", (m // 64 + g, n, 2))
    x_dtype, tr = _grouped_common(xa, gi, round_mode, acl, blocksize, scale_alg, dst_type_max,
                                  Desc(y_dtype, (m, n)), s_desc, version=version, soc=soc, cann_version=cann_version,
                                  core_num=core_num, tiling=tiling)
    if tr is None:
        y = np.zeros(m * n // 2 if y_dtype in FP4 else m * n, np.uint8)
        s = np.full((m // 64 + g) * n * 2, 0 if gap_fill is None else gap_fill, np.uint8)
        overruns = []
    else:
        y, s, overruns = _grouped_run(xa, x_dtype, gi, y_dtype, round_mode, scale_alg, dst_type_max, tr,
                                      cann_version=cann_version, gap_fill=gap_fill, signed_zero=signed_zero, ftz=ftz,
                                      nan_in_max=nan_in_max, fp4_nibble_order=fp4_nibble_order, faithful=faithful,
                                      validate=validate)
    y_out = y.reshape(m, n // 2) if y_dtype in FP4 else y.reshape(m, n).view(_ML_FP8[y_dtype])
    s_out = s.reshape(m // 64 + g, n, 2)
    result = (to_user(y_out, origin), to_user(s_out, origin))
    if trace:
        notes = () if cann_version == "master" else (
            f"cann_version {cann_version}: that release's kernel numerics on the master host tiling and split "
            f"(the v9.0/9.1 split differs but not the values, docs/ops/mx_quant.md §3.10)",)
        return result, (_make_trace("GroupedDynamicMxQuant", tr, overruns, notes) if tr is not None else None)
    return result


def _grouped_workspace(op, version, x, groupIndex, roundMode, dstType, blocksize, scaleAlg, dstTypeMax, y, mxscale,
                       soc, cann_version, gap_fill, signed_zero, ftz, nan_in_max, fp4_nibble_order, core_num, y_dtype,
                       faithful):
    def build():
        _switches(cann_version, gap_fill, signed_zero, ftz, nan_in_max, fp4_nibble_order)
        if version == "v2" and cann_version not in checks.GROUPED_HAS_V2:
            raise _bad(f"aclnnGroupedDynamicMxQuantV2 is not part of CANN {cann_version} (it first ships with "
                       f"9.1.0); call aclnnGroupedDynamicMxQuant or pick another cann_version")
        xa = None if x is None else as_array(x, "x")
        gi = None if groupIndex is None else as_array(groupIndex, "groupIndex")
        dt = as_int(dstType, "dstType")
        bs = as_int(blocksize, "blocksize")
        alg = as_int(scaleAlg, "scaleAlg")
        dtm = _float_arg(dstTypeMax, "dstTypeMax")
        y_desc = s_desc = y_form = None
        if y is not None:
            y_desc, y_form = _out_desc(y, y_dtype, checks.ACL_NAME.get(dt, "uint8"), "y")
        if mxscale is not None:
            s_desc, _ = _out_desc(mxscale, None, "float8_e8m0", "mxscale")
        x_dtype, tr = _grouped_common(xa, gi, roundMode, dt, bs, alg, dtm, y_desc, s_desc, version=version, soc=soc,
                                      cann_version=cann_version, core_num=core_num, tiling=None)
        if tr is None:
            return Executor(op, lambda: None, 0)

        def run():
            init = None if gap_fill is not None else np.array(_array_view(mxscale)).view(np.uint8)
            yb, sb, _ = _grouped_run(xa, x_dtype, gi, y_desc.dtype, roundMode, alg, dtm, tr,
                                     cann_version=cann_version, gap_fill=gap_fill, signed_zero=signed_zero, ftz=ftz,
                                     nan_in_max=nan_in_max, fp4_nibble_order=fp4_nibble_order, faithful=faithful,
                                     validate=True, scale_init=init)
            _write_y(y, yb, y_desc, y_form, fp4_nibble_order)
            write_out(mxscale, sb.reshape(s_desc.shape), "mxscale")

        return Executor(op, run, tr.workspace_size)

    return get_workspace(op, build)


def _write_y(y, codes, desc, form, nibble_order):
    """Copy finished codes into the caller's y (FP8 as its float8 type, FP4 packed or one code per byte)."""
    if form == "unpacked":
        from npu_emu import dtypes

        packed = codes.reshape(desc.shape[:-1] + (desc.shape[-1] // 2,))
        full = dtypes.unpack_fp4(packed, desc.shape[-1], fp4_nibble_order=nibble_order)
        write_out(y, full.view(ml_dtypes.float4_e2m1fn), "y")
    elif desc.dtype in FP8:
        write_out(y, codes.reshape(desc.shape).view(_ML_FP8[desc.dtype]), "y")
    else:
        write_out(y, codes.reshape(desc.shape[:-1] + (desc.shape[-1] // 2,)), "y")


def aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, groupIndex, roundMode, dstType, blocksize, y, mxscale, *,
                                               soc=DEFAULT_SOC, cann_version="master", gap_fill=0, signed_zero=True,
                                               ftz=False, nan_in_max="propagate", fp4_nibble_order="low_first",
                                               core_num=None, y_dtype=None, faithful=False):
    """-> (status, workspace_size, executor). dstType is an aclDataType (35 FLOAT8_E5M2, 36 FLOAT8_E4M3FN); V1 runs
    scale_alg 0. y: ml_dtypes float8 array, or uint8 bits labelled by ``y_dtype`` (default: dstType's type);
    mxscale: uint8 or ml_dtypes.float8_e8m0fnu [m // 64 + g, n, 2]. ``gap_fill=None`` leaves mxscale gap rows as
    they are in the caller's buffer.

    Empty x (m or n is 0): status 0, workspace 0 and an executor that launches nothing, so y and mxscale keep the
    caller's bytes, ``gap_fill`` notwithstanding (mxscale is [g, n, 2] and not empty when m = 0 < n). This is what
    CANN does: hicann/ops-nn: quant/grouped_dynamic_mx_quant/op_api/aclnn_grouped_dynamic_mx_quant.cpp returns
    ACLNN_SUCCESS on x->IsEmpty() before l0op::GroupedDynamicMxQuant and the ViewCopy into mxscale (docs/ops/mx_quant.md
    §3.2 item 5). The checks before that return (null, dtypes, shapes, empty groupIndex -> 161002) and the
    emulator-added groupIndex value check still apply."""
    return _grouped_workspace("aclnnGroupedDynamicMxQuant", "v1", x, groupIndex, roundMode, dstType, blocksize, 0,
                              0.0, y, mxscale, soc, cann_version, gap_fill, signed_zero, ftz, nan_in_max,
                              fp4_nibble_order, core_num, y_dtype, faithful)


def aclnnGroupedDynamicMxQuant(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedDynamicMxQuant")


def aclnnGroupedDynamicMxQuantV2GetWorkspaceSize(x, groupIndex, roundMode, dstType, blocksize, scaleAlg, dstTypeMax,
                                                 y, mxscale, *, soc=DEFAULT_SOC, cann_version="master", gap_fill=0,
                                                 signed_zero=True, ftz=False, nan_in_max="propagate",
                                                 fp4_nibble_order="low_first", core_num=None, y_dtype=None,
                                                 faithful=False):
    """-> (status, workspace_size, executor). V2 adds scaleAlg (0 OCP, 1 RCEIL for FP8, 2 for FP4), dstTypeMax and
    FP4 outputs (dstType 40 FLOAT4_E2M1 / 41 FLOAT4_E1M2: y packed uint8 [m, n/2] with ``y_dtype=40/41``, or an
    ml_dtypes.float4_e2m1fn [m, n] array holding one code per byte). Empty x: as V1 (status 0, nothing written;
    aclnn_grouped_dynamic_mx_quant_v2.cpp has the same early return)."""
    return _grouped_workspace("aclnnGroupedDynamicMxQuantV2", "v2", x, groupIndex, roundMode, dstType, blocksize,
                              scaleAlg, dstTypeMax, y, mxscale, soc, cann_version, gap_fill, signed_zero, ftz,
                              nan_in_max, fp4_nibble_order, core_num, y_dtype, faithful)


def aclnnGroupedDynamicMxQuantV2(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnGroupedDynamicMxQuantV2")


# ---------------------------------------------------------------------------------------------------------------
# DynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

def _dynamic_alg(scale_alg, y_dtype, dst_type_max):
    if scale_alg == 0:
        return common.ALG_OCP, 0, tiling_mod.inv_dst_type_max(y_dtype, 0.0)
    if scale_alg == 1:
        return common.ALG_RCEIL, 0, tiling_mod.inv_dst_type_max(y_dtype, 0.0)
    d = float(np.float32(dst_type_max))
    if d in (0.0, 6.0):
        return common.ALG_RANGE, 1, 0.0
    if d == 7.0:
        return common.ALG_RANGE, 2, 0.0
    return common.ALG_RCEIL_NOSUB, 0, tiling_mod.inv_dst_type_max(y_dtype, d)


def _dynamic_run(xa, x_dtype, axis, y_dtype, round_mode, block_size, scale_alg, dst_type_max, max_low_bound, *,
                 soc, cann_version, signed_zero, ftz, fp4_nibble_order, core_num, ub_size, faithful, validate):
    """-> (y codes flat, mxscale flat, TilingResult, overruns) for checked, non-empty input."""
    tr = memo.call(tiling_mod.dynamic_unit_tiling, tuple(xa.shape), axis, x_dtype=x_dtype, y_dtype=y_dtype,
                   block_size=block_size, soc=soc, core_num=core_num, ub_size=ub_size)
    td = tr.tiling
    alg, cls, r32 = _dynamic_alg(scale_alg, y_dtype, dst_type_max)
    params = common.make_params(x_dtype=x_dtype, y_dtype=y_dtype, round_mode=round_mode, alg=alg, dtm_class=cls,
                                legacy=cann_version in checks.DYNAMIC_LEGACY, signed_zero=signed_zero, ftz=ftz,
                                nan_in_max="propagate", fp4_nibble_order=fp4_nibble_order, dynamic=True,
                                faithful=faithful)
    total = xa.size
    ybytes = total // 2 if y_dtype in FP4 else total
    sbytes = td.preAxisSize * td.pairNum * td.postAxisSize * 2
    check_memory(ybytes + sbytes, "DynamicMxQuant outputs")
    y = _empty(ybytes)
    s = _empty(sbytes)
    mlb32 = float(np.float32(max_low_bound))
    overruns = launch.run_dynamic(_x_bits(xa), y, s, tr, params, r32, mlb32, x_dtype, validate=validate)
    return y, s, tr, overruns


def _dynamic_shapes(shape, axis, block_size, y_dtype):
    ax = axis % len(shape)
    s_shape = list(shape)
    s_shape[ax] = -(-(-(-shape[ax] // block_size)) // 2)
    y_shape = tuple(shape[:-1]) + (shape[-1] // 2,) if y_dtype in FP4 else tuple(shape)
    return y_shape, tuple(s_shape) + (2,)


def npu_dynamic_mx_quant(input, *, axis=-1, round_mode="rint", dst_type=296, block_size=32, scale_alg=0,
                         dst_type_max=0.0, max_low_bound=0.0, soc=DEFAULT_SOC, cann_version="master",
                         signed_zero=True, ftz=False, fp4_nibble_order="low_first", core_num=None, ub_size=None,
                         faithful=False, validate=True, trace=False):
    """torch_npu.npu_dynamic_mx_quant(input, ...) -> (y, mxscale): MX quantisation in blocks of ``block_size`` along
    ``axis`` of an fp16/bf16/fp32 tensor of rank 1-7.

    dst_type is a torch dtype code (23, 24, 296 default, 297; 291 / 292), a torch / ml_dtypes dtype or a name.
    y: ml_dtypes float8 (input shape) or packed uint8 (last dim halved) for FP4; mxscale uint8 with
    ceil(ceil(d / block_size) / 2) at ``axis`` and a trailing 2: mxscale[..., p, ..., k] = scale of block 2p + k
    (odd block counts padded with 0x00). Emulator keywords as for
    npu_grouped_dynamic_mx_quant (``ub_size`` instead of ``tiling``; the per-core split is npu-emu's own, see the
    trace notes).
    """
    origin = Origin()
    xa = as_array(input, "input", origin=origin)
    _switches(cann_version, 0, signed_zero, ftz, "propagate", fp4_nibble_order)
    axis, block_size = as_int(axis, "axis"), as_int(block_size, "block_size")
    scale_alg = as_int(scale_alg, "scale_alg")
    dst_type_max = _float_arg(dst_type_max, "dst_type_max")
    max_low_bound = _float_arg(max_low_bound, "max_low_bound")
    x_desc = Desc(_x_name(xa, "input"), tuple(xa.shape))
    if x_desc.ndim == 0:
        raise _bad("input must have at least one dimension")
    y_dtype = checks.check_dynamic_torch(x_desc, axis, dst_type, block_size)
    y_shape, s_shape = _dynamic_shapes(xa.shape, axis, block_size, y_dtype)
    acl = tiling_mod.ACL_CODE[y_dtype]
    round_mode, empty = checks.check_dynamic_aclnn(x_desc, axis, round_mode, acl, block_size, scale_alg,
                                                   dst_type_max, max_low_bound, Desc(y_dtype, tuple(xa.shape)),
                                                   Desc("float8_e8m0", s_shape), version="v3", soc=soc)
    tr, overruns = None, []
    if empty:
        y = np.zeros(int(np.prod(y_shape)), np.uint8)
        s = np.zeros(int(np.prod(s_shape)), np.uint8)
    else:
        y, s, tr, overruns = _dynamic_run(xa, x_desc.dtype, axis, y_dtype, round_mode, block_size, scale_alg,
                                          dst_type_max, max_low_bound, soc=soc, cann_version=cann_version,
                                          signed_zero=signed_zero, ftz=ftz, fp4_nibble_order=fp4_nibble_order,
                                          core_num=core_num, ub_size=ub_size, faithful=faithful, validate=validate)
    y_out = y.reshape(y_shape) if y_dtype in FP4 else y.reshape(y_shape).view(_ML_FP8[y_dtype])
    result = (to_user(y_out, origin), to_user(s.reshape(s_shape), origin))
    if trace:
        return result, (_make_trace("DynamicMxQuant", tr, overruns) if tr is not None else None)
    return result


def _dynamic_workspace(op, version, x, axis, roundModeOptional, dstType, blocksize, scaleAlg, dstTypeMax,
                       maxLowBound, yOut, mxscaleOut, soc, cann_version, signed_zero, ftz, fp4_nibble_order,
                       core_num, ub_size, y_dtype, faithful):
    def build():
        _switches(cann_version, 0, signed_zero, ftz, "propagate", fp4_nibble_order)
        xa = None if x is None else as_array(x, "x")
        ax = as_int(axis, "axis")
        dt = as_int(dstType, "dstType")
        bs = as_int(blocksize, "blocksize")
        alg = as_int(scaleAlg, "scaleAlg")
        dtm = _float_arg(dstTypeMax, "dstTypeMax")
        mlb = _float_arg(maxLowBound, "maxLowBound")
        y_desc = s_desc = y_form = None
        if yOut is not None:
            y_desc, y_form = _out_desc(yOut, y_dtype, checks.ACL_NAME.get(dt, "uint8"), "yOut")
        if mxscaleOut is not None:
            s_desc, _ = _out_desc(mxscaleOut, None, "float8_e8m0", "mxscaleOut")
        x_desc = None if xa is None else Desc(_x_name(xa), tuple(xa.shape))
        rm, empty = checks.check_dynamic_aclnn(x_desc, ax, roundModeOptional, dt, bs, alg, dtm, mlb, y_desc, s_desc,
                                               version=version, soc=soc)
        if empty:
            return Executor(op, lambda: None, 0)
        y_name = y_desc.dtype

        def run():
            yb, sb, _, _ = _dynamic_run(xa, x_desc.dtype, ax, y_name, rm, bs, alg, dtm, mlb, soc=soc,
                                        cann_version=cann_version, signed_zero=signed_zero, ftz=ftz,
                                        fp4_nibble_order=fp4_nibble_order, core_num=core_num, ub_size=ub_size,
                                        faithful=faithful, validate=True)
            _write_y(yOut, yb, y_desc, y_form, fp4_nibble_order)
            write_out(mxscaleOut, sb.reshape(s_desc.shape), "mxscaleOut")

        return Executor(op, run, tiling_mod.DYNAMIC_WORKSPACE)

    return get_workspace(op, build)


def aclnnDynamicMxQuantGetWorkspaceSize(x, axis, roundModeOptional, dstType, blocksize, scaleAlg, yOut, mxscaleOut,
                                        *, soc=DEFAULT_SOC, cann_version="master", signed_zero=True, ftz=False,
                                        fp4_nibble_order="low_first", core_num=None, ub_size=None, y_dtype=None,
                                        faithful=False):
    """-> (status, workspace_size, executor). dstType: aclDataType 35/36/40/41; scaleAlg 0 or 1 (FP8 only).
    yOut: ml_dtypes float8, uint8 bits labelled by ``y_dtype`` (FP4: packed, last dim halved) or an
    ml_dtypes.float4_e2m1fn array with one code per byte; mxscaleOut: uint8 / float8_e8m0fnu."""
    return _dynamic_workspace("aclnnDynamicMxQuant", "v1", x, axis, roundModeOptional, dstType, blocksize, scaleAlg,
                              0.0, 0.0, yOut, mxscaleOut, soc, cann_version, signed_zero, ftz, fp4_nibble_order,
                              core_num, ub_size, y_dtype, faithful)


def aclnnDynamicMxQuant(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnDynamicMxQuant")


def aclnnDynamicMxQuantV2GetWorkspaceSize(x, axis, roundModeOptional, dstType, blocksize, scaleAlg, dstTypeMax,
                                          yOut, mxscaleOut, *, soc=DEFAULT_SOC, cann_version="master",
                                          signed_zero=True, ftz=False, fp4_nibble_order="low_first", core_num=None,
                                          ub_size=None, y_dtype=None, faithful=False):
    """V2 adds scaleAlg 2 (FLOAT4_E2M1) and dstTypeMax (0 or [6, 12], FLOAT4_E2M1 with blocksize 32)."""
    return _dynamic_workspace("aclnnDynamicMxQuantV2", "v2", x, axis, roundModeOptional, dstType, blocksize, scaleAlg,
                              dstTypeMax, 0.0, yOut, mxscaleOut, soc, cann_version, signed_zero, ftz,
                              fp4_nibble_order, core_num, ub_size, y_dtype, faithful)


def aclnnDynamicMxQuantV2(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnDynamicMxQuantV2")


def aclnnDynamicMxQuantV3GetWorkspaceSize(x, axis, roundModeOptional, dstType, blocksize, scaleAlg, dstTypeMax,
                                          maxLowBound, yOut, mxscaleOut, *, soc=DEFAULT_SOC, cann_version="master",
                                          signed_zero=True, ftz=False, fp4_nibble_order="low_first", core_num=None,
                                          ub_size=None, y_dtype=None, faithful=False):
    """V3 adds maxLowBound (>= 0; only with scaleAlg 1): the block maximum is raised to it before the scale."""
    return _dynamic_workspace("aclnnDynamicMxQuantV3", "v3", x, axis, roundModeOptional, dstType, blocksize, scaleAlg,
                              dstTypeMax, maxLowBound, yOut, mxscaleOut, soc, cann_version, signed_zero, ftz,
                              fp4_nibble_order, core_num, ub_size, y_dtype, faithful)


def aclnnDynamicMxQuantV3(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnDynamicMxQuantV3")


# ---------------------------------------------------------------------------------------------------------------
# helper: values back from (y, mxscale)
# ---------------------------------------------------------------------------------------------------------------

def mx_dequantize(y, mxscale, *, dst_type, axis=-1, block_size=32, group_index=None, e8m0_zero="pow2",
                  fp4_nibble_order="low_first"):
    """float32 values y * scale of an MX pair (DynamicMxQuant layout, or the grouped layout with ``group_index``).

    dst_type: torch code (23/24/296/297), aclDataType or name of y's format; FP4 y is packed uint8. ``e8m0_zero``:
    decode scale code 0x00 as 2^-127 ("pow2", OCP) or 0.0 ("zero", the opbase host helper), docs/codecs.md §6.1.
    """
    from npu_emu import dtypes

    if isinstance(dst_type, (int, np.integer)) and int(dst_type) in checks.ACL_NAME:
        dst_type = checks.ACL_NAME[int(dst_type)]          # aclDataType 35/36/40/41 (no overlap with torch codes)
    name = checks.torch_dst_type(dst_type)
    codes = np.asarray(as_array(y, "y")).view(np.uint8)
    if name in FP4:
        codes = dtypes.unpack_fp4(codes, 2 * codes.shape[-1], fp4_nibble_order=fp4_nibble_order)
    vals = dtypes.decode(codes, name)
    sv = dtypes.decode(np.asarray(as_array(mxscale, "mxscale")).view(np.uint8), "float8_e8m0", e8m0_zero=e8m0_zero)
    if group_index is not None:
        m = vals.shape[0]
        per_row = np.empty((m,) + sv.shape[1:-1])
        start = 0
        for g, end in enumerate(np.asarray(group_index).reshape(-1).tolist()):
            r = np.arange(start, end)
            t, k = np.divmod(r - start, 64)
            per_row[start:end] = sv[start // 64 + g + t, :, k // 32]
            start = end
        return (vals * per_row).astype(np.float32)
    ax = axis % vals.ndim
    blocks = np.moveaxis(sv, -1, ax + 1)                         # [..., p, 2, ...]
    shp = blocks.shape
    blocks = blocks.reshape(shp[:ax] + (shp[ax] * 2,) + shp[ax + 2:])
    per_elem = np.take(np.repeat(blocks, block_size, axis=ax), np.arange(vals.shape[ax]), axis=ax)
    with np.errstate(over="ignore"):                  # a product past float32's range is +-inf, as on the device
        return (vals * per_elem).astype(np.float32)


def npu_anti_mx_quant(x, mxscale, *, axis=-1, dst_type=15, src_type=292, e8m0_zero="pow2",
                      fp4_nibble_order="low_first"):
    """torch_npu.npu_anti_mx_quant(x, mxscale, ...) -> y: AntiMxQuant, y = x * 2^(scale - 127) in blocks of 32
    along the last axis, written as float32 / float16 / bfloat16 (docs/ops/mx_quant.md §7.4).

    x: FP8 codes (float8_e4m3fn / float8_e5m2) or FP4 codes packed in uint8 (two per byte); mxscale: E8M0 codes in
    DynamicMxQuant's layout. dst_type: torch code 15 (bfloat16, default), 5 (float16), 6 (float32), a dtype or a
    name; src_type: 292/24 float8_e4m3fn (default), 291/23 float8_e5m2, 296 float4_e2m1, 297 float4_e1m2.
    The kernel's arithmetic: FP8 x in float32 times the scale, cast to y with RINT and saturation; FP4 x in
    bfloat16 times the scale (stored as it is for a bfloat16 y, else cast with RINT and saturation).
    """
    from npu_emu import dtypes

    origin = Origin()
    xa = as_array(x, "x", origin=origin)
    sa = as_array(mxscale, "mxscale")
    axis, out, src, _ = checks.check_anti(xa, sa, axis, dst_type, src_type)
    # the products are exact in float32 (and, for FP4, in bfloat16) except where they leave the format's range,
    # so mx_dequantize's one rounding to float32 is the device's float32 product
    y32 = mx_dequantize(xa, sa, dst_type=src, axis=axis, block_size=32, e8m0_zero=e8m0_zero,
                        fp4_nibble_order=fp4_nibble_order)
    if src in FP4:
        y16 = dtypes.to_bfloat16(y32)                    # the bfloat16 multiply: IEEE overflow to +-inf
        if out == "bfloat16":
            return to_user(y16, origin)
        y32 = y16.astype(np.float32)
    if out == "float32":
        return to_user(y32, origin)
    cast = dtypes.to_float16 if out == "float16" else dtypes.to_bfloat16
    return to_user(cast(y32, round_mode="rint", saturate=True), origin)
