"""Host tiling of GroupedDynamicMxQuant (reproduced) and DynamicMxQuant (npu-emu's unit decomposition).

GroupedDynamicMxQuant: hicann/ops-nn: quant/grouped_dynamic_mx_quant/op_host/arch35/
grouped_dynamic_mx_quant_tiling_arch35.cpp (Tiling4GroupedDynamicMxQuant: CheckDtype, GetAttr, CheckShape,
GetPlatInfo, DoTiling, SetTilingKeyParam), struct op_kernel/arch35/grouped_dynamic_mx_quant_tilingdata.h, template
arguments op_kernel/arch35/grouped_dynamic_mx_quant_struct.h (docs/ops/mx_quant.md §3.10). The tiling's rule checks
(FP8 needs rint, scale_alg per output type, dst_type_max ranges, FP4 needs an even n) make the l0op return null
tensors; aclnn then fails with ACLNN_ERR_INNER_NULLPTR, 561103 (inferred, docs/ops/mx_quant.md §3.2 / §9 M7).

DynamicMxQuant: the device's per-core split (dynamic_mx_quant_tiling_arch35.cpp and its tail/optimize variants)
is not public (docs/conventions.md §8). npu-emu splits the work into independent units
(pre-axis index x chunk of block pairs along the axis x chunk of the post-axis) and spreads them over the cores
with the usual big/small split; blocks never interact, so the values cannot depend on it. The trace says so.
"""

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_INNER_NULLPTR, ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.device.tiling_data import TilingData

try:
    from npu_emu.device.tiling_data import TilingResult
except ImportError:  # TEMPORARY until npu_emu.device.tiling_data provides the CONTRACT's TilingResult
    TilingResult = namedtuple("TilingResult", "tiling block_dim tiling_key workspace_size ub_size core_num soc notes",
                              defaults=((),))

DEFAULT_SOC = "ascend950pr"
BLOCK_SIZE = 32                 # the only blocksize GroupedDynamicMxQuant supports
VREG_SIZE = 256                 # bytes of a vector register on DAV_3510 (Ops::Base::GetVRegSize)
UB_BLOCK = 32
GROUPED_WORKSPACE = 32          # WORKSPACE_SIZE of the grouped tiling (unused by the kernel)
GROUPED_BUFFERS = 3 * 2         # in, mxscale and out queues, double-buffered (combine.h Init)

FP8 = ("float8_e4m3fn", "float8_e5m2")
FP4 = ("float4_e2m1", "float4_e1m2")
Y_DTYPES = FP8 + FP4
ACL_CODE = {"float8_e5m2": 35, "float8_e4m3fn": 36, "float4_e2m1": 40, "float4_e1m2": 41}
ELEM_MAX = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "float4_e2m1": 6.0, "float4_e1m2": 1.75}
EMAX = {"float8_e4m3fn": 8, "float8_e5m2": 15, "float4_e2m1": 2, "float4_e1m2": 0}
ROUND_MODES = ("rint", "round", "floor")

# Template argument values (grouped_dynamic_mx_quant_struct.h). The tiling key packs, low bits first,
# scaleAlg (2 bits), dstTypeMax class (3 bits), dstType (2 bits), roundMode (3 bits), each as the *index* of the
# value in its ASCENDC_TPL_UI_LIST declaration; this reproduces the UT keys 256, 257, 292 and 334.
TPL_ROUND_MODE = {"round": 0, "floor": 1, "rint": 4}
_KEY_FIELDS = (("scaleAlg", 2, (0, 1, 2)), ("dstTypeMax", 3, (0, 1, 2, 3)), ("dstType", 2, (0, 1, 2)),
               ("roundMode", 3, (1, 0, 4)))
TPL_DST_TYPE = {"float8_e4m3fn": 0, "float8_e5m2": 0, "float4_e2m1": 1, "float4_e1m2": 2}

_FLT_EPS = float(np.finfo(np.float32).eps)


def _ceil_div(a, b):
    return -(-a // b)


def _tiling_rule(message):
    """A rule only the tiling enforces: aclnn reports the null l0op result as 561103 (inferred)."""
    return AclnnError(ACLNN_ERR_INNER_NULLPTR,
                      f"{message} (rule enforced by the host tiling; CANN then fails the l0op call and aclnn "
                      f"returns ACLNN_ERR_INNER_NULLPTR, status inferred per docs/ops/mx_quant.md §3.2)")


def is_float_equal(a, b):
    """Ops::Base::IsFloatEqual on float attributes: |a - b| < FLT_EPSILON (tolerance assumed)."""
    return abs(float(np.float32(a)) - float(np.float32(b))) < _FLT_EPS


def inv_dst_type_max(dst, dst_type_max):
    """float(1.0 / (double)(float)dst_type_max), or 1/max of the output type when dst_type_max == 0."""
    d = float(np.float32(dst_type_max))
    if is_float_equal(d, 0.0):
        d = ELEM_MAX[dst]
    return float(np.float32(1.0 / d))


def dst_type_max_class(dst, dst_type_max):
    """TPL_DST_TYPE_MAX_0..3 of SetTilingKeyParam: 1 = (0 with E2M1) or 6, 2 = 7, 3 = 1.875, else 0."""
    if (is_float_equal(dst_type_max, 0.0) and dst == "float4_e2m1") or is_float_equal(dst_type_max, 6.0):
        return 1
    if is_float_equal(dst_type_max, 7.0):
        return 2
    if is_float_equal(dst_type_max, 1.875):
        return 3
    return 0


def grouped_tiling_key(scale_alg, dtm_class, dst, round_mode):
    values = {"scaleAlg": scale_alg, "dstTypeMax": dtm_class, "dstType": TPL_DST_TYPE[dst],
              "roundMode": TPL_ROUND_MODE[round_mode]}
    key, shift = 0, 0
    for name, bits, allowed in _KEY_FIELDS:
        key |= allowed.index(values[name]) << shift
        shift += bits
    return key


def decode_grouped_tiling_key(key):
    """(scale_alg, dst_type_max class, TPL dstType, round_mode name) of a grouped tiling key."""
    out, shift = {}, 0
    for name, bits, allowed in _KEY_FIELDS:
        idx = (int(key) >> shift) & ((1 << bits) - 1)
        if idx >= len(allowed):
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                             f"tiling key {key}: {name} index {idx} is not a compiled template value")
        out[name] = allowed[idx]
        shift += bits
    rm = {v: k for k, v in TPL_ROUND_MODE.items()}[out["roundMode"]]
    return out["scaleAlg"], out["dstTypeMax"], out["dstType"], rm


@dataclass(frozen=True)
class GroupedDynamicMxQuantTilingData(TilingData):
    """op_kernel/arch35/grouped_dynamic_mx_quant_tilingdata.h: ten int64_t then a float (88 bytes with padding).

    Naming as in the kernel: "row" sizes run along n (the last axis), "col" sizes along m.
    """

    totalCoreNum: int
    usedCoreNum: int
    rowSize: int
    colSize: int
    blockRowSize: int
    blockColSize: int
    blockRowTailSize: int
    blockRowCount: int
    groupNum: int
    tilingKey: int
    invDstTypeMax: float

    _ctypes = ("int64",) * 10 + ("float",)


def _core_count(soc, core_num, ub_size=None):
    plat = platforms.get(soc)
    if core_num is not None or ub_size is not None:
        plat = plat.override(core_num=None if core_num is None else int(core_num),
                             ub_size=None if ub_size is None else int(ub_size))
    return plat, plat.GetCoreNumAiv()


def grouped_tiling(m, n, g, *, x_dtype, y_dtype, round_mode="rint", dst_type=None, blocksize=BLOCK_SIZE,
                   scale_alg=0, dst_type_max=0.0, group_index_dtype="int32", mxscale_shape=None,
                   soc=DEFAULT_SOC, core_num=None):
    """Tiling4GroupedDynamicMxQuant for x [m, n] and g groups -> TilingResult.

    ``dst_type`` is the aclDataType attribute (default: the code of ``y_dtype``); ``mxscale_shape`` defaults to
    the required [m // 64 + g, n, 2]. Rule violations raise AclnnError 561103 (see the module docstring).
    """
    # CheckDtype
    if x_dtype not in ("float16", "bfloat16"):
        raise _tiling_rule(f"the dtype of x must be DT_FLOAT16 or DT_BF16, got {x_dtype}")
    if group_index_dtype != "int32":
        raise _tiling_rule(f"group_index must be DT_INT32, got {group_index_dtype}")
    if y_dtype not in Y_DTYPES:
        raise _tiling_rule(f"y must be one of {Y_DTYPES}, got {y_dtype}")
    # GetAttr
    if round_mode not in ROUND_MODES:
        raise _tiling_rule(f"round_mode={round_mode!r}: the value of round_mode must be [rint, round, floor]")
    if y_dtype in FP8 and round_mode != "rint":
        raise _tiling_rule(f"round_mode={round_mode!r}: if the dtype of output y is FLOAT8_E4M3FN/FLOAT8_E5M2, "
                           f"parameter round_mode must be rint")
    dst_type = ACL_CODE[y_dtype] if dst_type is None else int(dst_type)
    if dst_type != ACL_CODE[y_dtype]:
        raise _tiling_rule(f"dst_type={dst_type}: the dtypes of y ({y_dtype}) and dst_type must be the same")
    if blocksize != BLOCK_SIZE:
        raise _tiling_rule(f"block_size={blocksize}: only 32 is supported")
    if not 0 <= scale_alg <= 2:
        raise _tiling_rule(f"scale_alg={scale_alg}: the value of scale_alg must be [0, 1, 2]")
    if scale_alg == 1 and y_dtype in FP4:
        raise _tiling_rule("scale_alg=1: if the dtype of output y is FLOAT4_E2M1/FLOAT_E1M2, parameter scale_alg "
                           "must be 0 or 2")
    if scale_alg == 2 and y_dtype in FP8:
        raise _tiling_rule("scale_alg=2: if the dtype of output y is FLOAT8_E4M3FN/FLOAT8_E5M2, parameter scale_alg "
                           "must be 0 or 1")
    d = float(np.float32(dst_type_max))
    if y_dtype == "float4_e2m1" and (d < 0 or 0 < d < 6 or d > 12):
        raise _tiling_rule(f"dst_type_max={dst_type_max}: if the dtype of output y is FLOAT4_E2M1, parameter "
                           f"dst_type_max must be within the range [6, 12] or equal to 0")
    if y_dtype == "float4_e1m2" and (d < 0 or 0 < d < 1.75 or d > 3.5):
        raise _tiling_rule(f"dst_type_max={dst_type_max}: if the dtype of output y is FLOAT4_E1M2, parameter "
                           f"dst_type_max must be within the range [1.75, 3.5] or equal to 0")
    # CheckShape
    if y_dtype in FP4 and n % 2:
        raise _tiling_rule(f"x shape [{m}, {n}]: when the yDtype is FLOAT4_E2M1 or FLOAT4_E1M2, the tail axis of x "
                           f"must be an even number")
    if g == 0:
        raise _tiling_rule("group_index does not support empty tensor")
    want = (m // (2 * BLOCK_SIZE) + g, n, 2)
    if mxscale_shape is not None and tuple(mxscale_shape) != want:
        raise _tiling_rule(f"mxscale shape {tuple(mxscale_shape)}: the shape of mxscale must be "
                           f"[x.shape[0] / (2 * block_size) + group_index.shape[0], x.shape[1], 2] = {list(want)}")
    # GetPlatInfo / DoTiling
    plat, total = _core_count(soc, core_num)
    ub = plat.GetCoreMemSize("UB")
    block_row_size = VREG_SIZE // 2
    block_row_count = _ceil_div(n, block_row_size)
    tail = n - (block_row_count - 1) * block_row_size
    dtm_class = dst_type_max_class(y_dtype, dst_type_max)
    key = grouped_tiling_key(scale_alg, dtm_class, y_dtype, round_mode)
    td = GroupedDynamicMxQuantTilingData(
        totalCoreNum=total, usedCoreNum=total, rowSize=n, colSize=m, blockRowSize=block_row_size,
        blockColSize=2 * BLOCK_SIZE, blockRowTailSize=tail, blockRowCount=block_row_count, groupNum=g,
        tilingKey=key, invDstTypeMax=inv_dst_type_max(y_dtype, dst_type_max))
    notes = tuple(f"{f}: {why}" for f, why in plat.placeholders if f in ("core_num", "vector_cores"))
    return TilingResult(td, total, key, GROUPED_WORKSPACE, ub, total, plat.name, notes)


def grouped_ub_bytes(td=None):
    """UB bytes a core initialises: 3 queues x 2 buffers of CeilAlign(blockColSize * blockRowSize * 2, 32)."""
    col, row = (2 * BLOCK_SIZE, VREG_SIZE // 2) if td is None else (td.blockColSize, td.blockRowSize)
    return GROUPED_BUFFERS * _ceil_div(col * row * 2, UB_BLOCK) * UB_BLOCK


# ---------------------------------------------------------------------------------------------------------------
# DynamicMxQuant: independent-unit decomposition (not the CANN tiling)
# ---------------------------------------------------------------------------------------------------------------

DYNAMIC_NOTE = ("tiling not reproduced: the DynamicMxQuant per-core split of dynamic_mx_quant_tiling_arch35.cpp is "
                "not specified (docs/conventions.md §8); npu-emu splits the blocks into independent units "
                "(pre-axis index x block-pair chunk x post-axis chunk) over the cores; values do not depend on it")
DYNAMIC_UB_BUDGET = 64 * 1024   # bytes of x, y and scales one unit may stage in UB
DYNAMIC_WORKSPACE = 32          # WORKSPACE_SIZE of the DynamicMxQuant tiling (its odd-scale post pass not modelled)
_X_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}


@dataclass(frozen=True)
class DynamicMxQuantUnitTilingData(TilingData):
    """npu-emu's DynamicMxQuant work split (an emulator struct, not CANN's DynamicMxQuantTilingData).

    The tensor is viewed as [preAxisSize, axisSize, postAxisSize]; blocks of blockSize run along the axis and are
    paired (pairNum = ceil(blockNum / 2)). A unit is (pre index, chunk of pairChunk pairs, chunk of postChunk
    post-axis elements), numbered pre-major; core c runs units [c * unitsPerCore + min(c, bigCoreNum), ...) with
    one extra unit on the first bigCoreNum cores.
    """

    totalCoreNum: int
    usedCoreNum: int
    preAxisSize: int
    axisSize: int
    postAxisSize: int
    blockSize: int
    blockNum: int
    pairNum: int
    pairChunk: int
    pairChunkNum: int
    postChunk: int
    postChunkNum: int
    unitNum: int
    unitsPerCore: int
    bigCoreNum: int

    _ctypes = ("int64",) * 15


def dynamic_unit_tiling(shape, axis, *, x_dtype, y_dtype, block_size=BLOCK_SIZE, soc=DEFAULT_SOC, core_num=None,
                        ub_size=None, ub_budget=DYNAMIC_UB_BUDGET):
    """The unit decomposition for x of ``shape`` quantised along ``axis`` -> TilingResult (tiling key 0)."""
    shape = tuple(int(s) for s in shape)
    ax = axis % len(shape)
    d = shape[ax]
    pre = int(np.prod(shape[:ax], dtype=np.int64))
    post = int(np.prod(shape[ax + 1:], dtype=np.int64))
    if min(pre, d, post) <= 0:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"x shape {shape} is empty: there is nothing to tile")
    plat, total = _core_count(soc, core_num, ub_size)
    nb = _ceil_div(d, block_size)
    npairs = _ceil_div(nb, 2)
    per_elem = _X_BYTES[x_dtype] + 1                 # x in, y out (FP4: half a byte, budgeted as one)
    if post == 1:
        # tail axis: a unit is a run of pairs along one row
        pair_chunk = max(1, min(npairs, ub_budget // (2 * block_size * per_elem)))
        post_chunk = 1
    else:
        pair_chunk = 1
        post_chunk = max(1, min(post, ub_budget // (2 * block_size * per_elem)))
        if post_chunk < post and y_dtype in FP4:
            post_chunk = max(2, post_chunk - post_chunk % 2)    # never split an fp4x2 byte between units
    pair_chunks = _ceil_div(npairs, pair_chunk)
    post_chunks = _ceil_div(post, post_chunk)
    units = pre * pair_chunks * post_chunks
    used = min(total, units)
    td = DynamicMxQuantUnitTilingData(
        totalCoreNum=total, usedCoreNum=used, preAxisSize=pre, axisSize=d, postAxisSize=post,
        blockSize=block_size, blockNum=nb, pairNum=npairs, pairChunk=pair_chunk, pairChunkNum=pair_chunks,
        postChunk=post_chunk, postChunkNum=post_chunks, unitNum=units, unitsPerCore=units // used,
        bigCoreNum=units % used)
    ub = plat.GetCoreMemSize("UB")
    if dynamic_ub_bytes(td, x_dtype, y_dtype in FP4) > ub:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                         f"one unit needs {dynamic_ub_bytes(td, x_dtype, y_dtype in FP4)} UB bytes, more than the "
                         f"{ub} of {plat.name}; pass a larger ub_size")
    notes = (DYNAMIC_NOTE,) + tuple(f"{f}: {why}" for f, why in plat.placeholders if f in ("core_num", "ub_size"))
    return TilingResult(td, used, 0, DYNAMIC_WORKSPACE, ub, total, plat.name, notes)


def _align(b):
    return _ceil_div(b, UB_BLOCK) * UB_BLOCK


def dynamic_ub_bytes(td, x_dtype, fp4=False):
    """UB bytes one unit stages: the x rows (each padded to 32 bytes), the y rows and the scale bytes."""
    rows = 2 * td.blockSize
    if td.postAxisSize == 1:
        elems = rows * td.pairChunk
        y = elems // 2 if fp4 else elems
        return _align(elems * _X_BYTES[x_dtype]) + _align(y) + _align(2 * td.pairChunk)
    ycols = td.postChunk // 2 if fp4 else td.postChunk
    return rows * _align(td.postChunk * _X_BYTES[x_dtype]) + rows * _align(ycols) + _align(2 * td.postChunk)


def unit_ranges(td):
    """(first unit, unit count) of every core of a DynamicMxQuantUnitTilingData, as int64 arrays."""
    cores = np.arange(td.usedCoreNum, dtype=np.int64)
    count = td.unitsPerCore + (cores < td.bigCoreNum)
    first = cores * td.unitsPerCore + np.minimum(cores, td.bigCoreNum)
    return first, count
