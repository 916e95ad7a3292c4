"""GroupedMatmul MX modes on the Ascend 950 (docs/ops/grouped_matmul.md §10): MXFP8 x and weight (FLOAT8_E4M3FN /
FLOAT8_E5M2) with FLOAT8_E8M0 scales per 32 values of K, split M (group_type 0) and split K (group_type 2); MXFP4
(FLOAT4_E2M1 x and weight, split M, an optional float32 bias).

Source: ``hicann/ops-transformer: gmm/grouped_matmul/op_api/grouped_matmul_950_checker.cpp``
(``CheckGroupedMatmulDAV3510``, ``CheckFp8Params``, ``CheckGroupedMatmulMxfp8``, ``CheckGroupedMatmulMxDtype``,
``CheckGroupedMatmulPerGroupDim``, ``CheckMxTypeMCaseInputShape``, ``CheckMxFp8TypeKCaseInputShape``) and the kernel
``op_kernel/arch35/quant_adaptive_sliding_window_templates/gqmm_cgmct_mx_kernel.h`` -> ``KernelQGmmMx``
(cgmct ``kernel_qgmm_mx.h``: ``UpdateOffset``, ``SetMNK``, ``GetSplitValueFromGroupList``). The kernel is AIC only:
per group the MX MMAD (E8M0 scales applied per 32 values of K inside the cube) into L0C, the FixPipe writes y
(``BlockEpilogueEmpty``: no vector epilogue).

What npu-emu reuses: quant_matmul's MX cube (``v3._mx_expand`` applies the E8M0 scales exactly, ``accum.float_matmul``
sums under ``float_accum``) and GroupedMatmul's per-core walk (``launch.run_epilogue`` in its plain-float form: the
fp32 L0C value cast to y). The arch35 tiling (``grouped_quant_basic_api_matmul_tiling.cpp``) and its ASWT scheduler
with tail split are not reproduced: the walk is the A2/A3 one (it decides which core writes which block, never a
value; ``float_accum="kchunk"`` takes its baseK).
"""

import dataclasses

import ml_dtypes
import numpy as np

from npu_emu.device import memo, platforms
from npu_emu.dtypes import scalar
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from npu_emu.frontend.core import check_memory, resolve_dtype, storage_dtype
from npu_emu.kernels.grouped_matmul import api_forms as forms, checks, launch, tiling as tiling_mod
from npu_emu.kernels.quant_matmul import accum, operands
from npu_emu.kernels.quant_matmul.api import NzWeight
from npu_emu.kernels.quant_matmul.switches import DEFAULTS as QMM_DEFAULTS
from npu_emu.kernels.quant_matmul.v3 import _mx_expand

FP8 = ("float8_e4m3fn", "float8_e5m2")
FP4 = ("float4_e2m1", "float4_e1m2")
E8M0 = "float8_e8m0"
MXFP_DIVISOR_SIZE = 64          # one scale row holds the two E8M0 codes of 64 values of K
MXFP_MULTI_BASE_SIZE = 2
MX_OUT = ("float16", "bfloat16", "float32")
SPLIT_M, SPLIT_N, SPLIT_K = 0, 1, 2
API = "aclnnGroupedMatmul"


def _err(msg):
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{API}: {msg}")


def is_arch35(soc):
    return platforms.get(soc).npu_arch == 3510


_name = forms.dtype_name


def handles(xs, ws, soc):
    """True when the call is one of the 950 float8 / float4 quant cases this module owns. On A2/A3 the dtypes fall
    to aclnn_grouped_matmul.cpp's 'no matching xDtype and weightDtype pattern' (checks.mode_of)."""
    if not is_arch35(soc):
        return False
    x_name, w_name = _name(xs[0]), _name(ws[0])
    return x_name in FP8 + FP4 and w_name in FP8 + FP4


def relabel(arrs, dtype, what):
    """``scale_dtype`` / ``per_token_scale_dtype`` of npu_grouped_matmul: the bits of each array read as that dtype
    (uint8 codes as FLOAT8_E8M0)."""
    if dtype is None or arrs is None:
        return arrs
    name = resolve_dtype(dtype, what)
    dt = np.dtype(ml_dtypes.float8_e8m0fnu) if name == E8M0 else storage_dtype(name)
    return [a if a is None else np.ascontiguousarray(a).view(dt) for a in arrs]


class _Codes:
    """The one field operands.e8m0_values reads."""

    def __init__(self, data):
        self.data = data


def e8m0(codes):
    """E8M0 codes -> exact float64 powers of two (quant_matmul's table; 0xFF is NaN, 0x00 per its e8m0_zero default)."""
    return operands.e8m0_values(_Codes(np.ascontiguousarray(codes).view(np.uint8)), QMM_DEFAULTS["e8m0_zero"])


def fp4_values(codes, name):
    """fp4 codes (one a byte, or ml_dtypes float4_e2m1fn) -> exact float64 values by dtypes' decode table (E2M1
    bias 1, E1M2 bias 1: 0, 0.25 .. 1.75)."""
    return _fp4_table(name)[np.ascontiguousarray(codes).view(np.uint8) & np.uint8(0x0F)]


_FP4_TABLES = {}


def _fp4_table(name):
    t = _FP4_TABLES.get(name)
    if t is None:
        t = _FP4_TABLES[name] = scalar.DECODE_TABLES[name].astype(np.float64)
    return t


def _values(a, name):
    """Exact float64 values of an fp8 array, or of an fp4 one (one code a byte: ml_dtypes float4_e2m1fn, or the
    uint8 codes of an NzWeight read back)."""
    if name in FP4:
        return fp4_values(a, name)
    return np.asarray(a).astype(np.float64)


def _shape(a):
    return tuple(int(d) for d in a.shape)


def _check_group_list(gl, n_groups_expected, group_type):
    if gl is None:
        _err("in quant case, the value of groupList cannot be nullptr")
    glv = np.asarray(gl)
    if resolve_dtype(glv.dtype) != "int64":
        _err("Invalid dtype: Only int64 is supported for groupList.")
    if glv.ndim != 1:
        _err(f"groupList must be 1-D in the MX case, got shape {glv.shape} (the MX kernel reads one value a group: "
             f"GetSplitValueFromGroupList has no [e, 2] form)")
    if glv.shape[0] > checks.MAX_GROUP_LIST_SIZE_TENSOR or glv.shape[0] < 1:
        _err(f"groupList must have 1 .. {checks.MAX_GROUP_LIST_SIZE_TENSOR} entries, got {glv.shape[0]}")
    if group_type == SPLIT_M and n_groups_expected is not None and glv.shape[0] != n_groups_expected \
            and n_groups_expected != 1:
        _err(f"When groupList is not null, size of groupList(tensor) {glv.shape[0]} should be equal to weight dim 0 "
             f"{n_groups_expected} with groupType 0.")
    return glv


NZ_C0 = {"float8_e4m3fn": 32, "float4_e2m1": 64, "float4_e1m2": 64}   # CUBE_BLOCK_SIZE_32 / _64, in elements


def check_weight_nz(w, x_name, w_name, view_shape, scale, pt, y_name, api):
    """CheckWeightNzSpecialParams of grouped_matmul_950_checker.cpp for the single NZ weight (view (E, K, N)), in its
    order: the entry, the dtype pair, E8M0 scale and perTokenScale, y, then CheckWeightNzTensorShape /
    CheckWeightStorageShape (5-D storage, c0 = 32 fp8 / 64 fp4 elements, 16 rows, the two outer dims)."""
    if api != WEIGHT_NZ:
        _err(f"apiVersion {api or 'aclnnGroupedMatmulV4'}, expected aclnnGroupedMatmulWeightNz: a FRACTAL_NZ weight "
             f"goes through aclnnGroupedMatmulWeightNz")
    fp8 = x_name == "float8_e4m3fn" and w_name == "float8_e4m3fn"
    fp4 = x_name in FP4 and w_name in FP4
    if not (fp8 or fp4):
        _err(f"x and weight x={x_name}, weight={w_name}: when the format of weight is FRACTAL_NZ, the dtypes of x and "
             f"weight must be within the range INT8, FLOAT8_E4M3FN, FLOAT4_E2M1, FLOAT4_E1M2, INT4")
    if pt is None:
        _err("perTokenScale is nullptr, expected not nullptr")
    if _name(scale) != E8M0 or _name(pt) != E8M0:
        _err(f"scale and perTokenScale scale={_name(scale)}, perTokenScale={_name(pt)}: when the format of weight is "
             f"FRACTAL_NZ and when the dtypes of x and weight are FLOAT8_E4M3FN/FLOAT8_E4M3FN or "
             f"FLOAT4_E2M1|FLOAT4_E1M2 combinations, the dtypes of scale and perTokenScale must be within the range "
             f"FLOAT8_E8M0")
    if y_name == "int8":
        _err("y int8: when the format of weight is FRACTAL_NZ, the dtype of y must be within the range FLOAT16, "
             "BFLOAT16, FLOAT32, INT32")
    if len(view_shape) < 2:
        _err(f"weight has {len(view_shape)} dims, expected 2")
    k, n = view_shape[-2:]
    if k == 1 or n == 1:
        _err(f"weight {tuple(view_shape)}: the logical K and N dimensions of an NZ weight must not be 1")
    store = np.asarray(w.storage)
    per = 2 if w_name in FP4 and store.dtype.itemsize == 1 else 1         # fp4 storage: two codes a byte
    st = tuple(int(d) for d in store.shape[:-1]) + ((int(store.shape[-1]) * per,) if store.ndim else ())
    if len(st) != 5:
        _err(f"weight storage shape {st} has {len(st)} dims, expected 5")
    c0 = NZ_C0.get(w_name, 32)
    if st[-1] != c0:
        _err(f"weight storage shape {st}: when the format of weight is FRACTAL_NZ, storage shape last dim of weight "
             f"must be equal to 32 for fp8 dtype, 32 or 64 for int4 dtype, or 64 for mxfp4 dtype")
    if st[-2] != 16:
        _err(f"weight storage shape {st}: when the format of weight is FRACTAL_NZ, storage shape last second dim of "
             f"weight must be equal to 16")
    outer, inner = (k, n) if w.transposed else (n, k)
    if st[-4] != -(-outer // c0):
        _err(f"weight storage shape {st}: when the format of weight is FRACTAL_NZ and transposition is "
             f"{str(w.transposed).lower()}, storage shape second dim of weight must be equal to "
             f"ceil({'k' if w.transposed else 'n'}/{c0}) [{-(-outer // c0)}]")
    if st[-3] != -(-inner // 16):
        _err(f"weight storage shape {st}: when the format of weight is FRACTAL_NZ and transposition is "
             f"{str(w.transposed).lower()}, storage shape third dim of weight must be equal to "
             f"ceil({'n' if w.transposed else 'k'}/16) [{-(-inner // 16)}]")


def check(x, w_nd, w_name, scale, pt, bias, gl, y_name, *, has_offset, has_antiquant, group_type, group_list_type,
          n_x, n_w, n_y, act_type, nz=None, api=None):
    """CheckGroupedMatmulDAV3510 for the MXFP8 / MXFP4 cases, in CANN's order (161002 unless said). ``nz``: the
    NzWeight when the weight is FRACTAL_NZ (``w_nd`` then holds its logical (E, K, N) values)."""
    x_name = _name(x)
    if y_name != "int32" and scale is None:
        _err("scale is nullptr: in quant case and when the output dtype is not int32, the value of scale cannot be "
             "nullptr")
    if gl is None:
        _err("groupList is nullptr: in quant case, the value of groupList cannot be nullptr")
    if has_offset:
        _err("offset is nonnull, expected nullptr")
    if group_type == SPLIT_N or group_type not in (SPLIT_M, SPLIT_K):
        _err(f"groupType is {group_type}: the value of groupType must be in 0 or 2")
    if not (n_x == 1 and n_w == 1 and n_y == 1):
        _err(f"x, weight and y have x={n_x}, weight={n_w}, y={n_y} tensors: in quant case, only single-single-single "
             f"or weightNz single-multi-single tensor layout is supported (npu-emu: single-single-single)")
    if has_antiquant:
        _err("antiquantScale / antiquantOffset must be nullptr in the quant case (emulator-added)")
    if act_type != 0:
        _err(f"actType {act_type}: the MX case has no activation (KernelQGmmMx has no epilogue)")
    if nz is not None:
        check_weight_nz(nz, x_name, w_name, w_nd.shape, scale, pt, y_name, api)
    fp4 = x_name in FP4 and w_name in FP4
    if not fp4 and x_name in FP4:
        _err(f"x={x_name}, weight={w_name}: an fp4 x takes an fp4 weight (CheckFp4Params)")
    # CheckGeneralQuantShape
    m = x.shape[0] if x.ndim >= 1 else 0
    n = w_nd.shape[-1] if w_nd.ndim >= 1 else 0
    if m and n:
        if group_type == SPLIT_M:
            if x.ndim < 2 or x.shape[1] <= 0:
                _err(f"x shape {_shape(x)}: when groupType is 0 (split M) and when the M or N value is not 0, axis K "
                     f"of x must be a positive number")
            if w_nd.ndim < 2 or w_nd.shape[-2] <= 0:
                _err(f"weight shape {_shape(w_nd)}: when groupType is 0 (split M) and when the M or N value is not 0, "
                     f"axis K of weight must be a positive number")
    scale_name = _name(scale) if scale is not None else "uint64"
    if fp4:
        # CheckFp4Params
        if group_type != SPLIT_M:
            _err(f"groupType is {group_type}, expected 0 (the float4 MX case splits M only)")
        if "float4_e1m2" in (x_name, w_name) and nz is None:
            _err("weight format ND, expected FRACTAL_NZ: an FLOAT4_E1M2 x or weight takes an NZ weight (pass the "
                 "weight as npu_emu.ops.NzWeight through aclnnGroupedMatmulWeightNz)")
        if scale_name != E8M0:
            _err(f"scale {scale_name}: with float4 case, the dtype of scale must be within the range {{FLOAT8_E8M0}}")
    elif scale_name != E8M0:
        if scale_name in ("float32", "uint64", "int64"):
            _err(f"scale {scale_name}: the float8 per-tensor / per-channel / per-tile quant cases "
                 f"(CheckFp8Hif8QuantParams) are not implemented in npu-emu yet; pass FLOAT8_E8M0 scales for MX "
                 f"(docs/ops/grouped_matmul.md §10.5)")
        _err(f"scale {scale_name}: with float8 case, the dtype of scale must be within the range {{FLOAT8_E8M0, "
             f"FLOAT32, UINT64, INT64}}")
    # CheckGroupedMatmulMxfp8 / CheckGroupedMatmulMxfp4 -> CheckGroupedMatmulMxDtype
    if bias is not None and not fp4:
        _err("bias is nonnull, expected nullptr (MXFP8 takes no bias)")
    if pt is None:
        _err("perTokenScale is nullptr: in mx case, the value of perTokenScale cannot be nullptr")
    if bias is not None and _name(bias) != "float32":
        _err(f"bias has dtype {_name(bias)}, expected FLOAT32")
    if _name(pt) != E8M0:
        _err(f"perTokenScale has dtype {_name(pt)}, expected FLOAT8_E8M0")
    if y_name not in MX_OUT:
        _err(f"y has dtype {y_name}, expected FLOAT16, BFLOAT16 or FLOAT32")
    # CheckGroupedMatmulMxScaleTranspose: npu-emu's scales are contiguous (not transposed), so a transposed weight
    # never matches them
    if nz is not None and nz.transposed:
        _err(f"scale and weight: scale={_shape(scale)}, weight={_shape(w_nd)}: in mx case, the values of scale and "
             f"weight transposition must be the same (npu-emu takes an untransposed NZ weight here)")
    # CheckGroupedMatmulPerGroupDim
    if x.ndim != 2:
        _err(f"x has {x.ndim} dims, expected 2")
    if group_type == SPLIT_M:
        if w_nd.ndim != 3:
            _err(f"weight has {w_nd.ndim} dims, expected 3")
        if scale.ndim != 4:
            _err(f"scale has {scale.ndim} dims, expected 4")
        if pt.ndim != 3:
            _err(f"perTokenScale has {pt.ndim} dims, expected 3")
    elif w_nd.ndim != 2:
        _err(f"weight has {w_nd.ndim} dims, expected 2")
    glv = _check_group_list(gl, w_nd.shape[0] if group_type == SPLIT_M else None, group_type)
    g_num = int(glv.shape[0])
    m, k = x.shape
    if group_type == SPLIT_M:
        _check_split_m_shapes(x, w_nd, scale, pt, g_num, bias)
        if w_nd.shape[1] != k:
            _err(f"k dim value of x and weight is not matched: x has K={k}, weight has K={w_nd.shape[1]}.")
        if fp4:                                   # CheckGroupedMatmulFp4MxDimValue
            if w_nd.shape[2] % 2:
                _err(f"weight shape {_shape(w_nd)}: when the weight is not transposed, axis N of weight must be an "
                     f"even number")
            if k % 2:
                _err(f"x shape {_shape(x)}: when the dtypes of x and weight inputs are fp4, axis K of x must be an "
                     f"even number")
            if k == 2:
                _err("when the dtypes of x and weight inputs are fp4, all axes K of x and weight must not be equal "
                     "to 2")
        if group_list_type not in (0, 1):
            _err(f"groupListType {group_list_type}: the MX kernel reads the group list as cumulative (0) or counts "
                 f"(1) only (emulator-added)")
    else:
        _check_split_k_shapes(x, w_nd, scale, pt, g_num)
        if w_nd.shape[0] != k:
            _err(f"K dim value of x and weight is not matched: x has K={k}, weight has K={w_nd.shape[0]}.")
    return glv


def _check_split_m_shapes(x, w, scale, pt, g_num, bias=None):
    """CheckMxTypeMCaseInputShape: x (M, K), weight (E, K, N), scale (E, ceil(K/64), N, 2), perTokenScale
    (M, ceil(K/64), 2); CheckMxBiasInputShape: bias (G, N)."""
    m, k = x.shape
    n = w.shape[-1]
    kp = -(-k // MXFP_DIVISOR_SIZE)
    if bias is not None:
        if bias.ndim != 2:
            _err(f"bias has {bias.ndim} dims, expected 2")
        if bias.shape[0] != g_num:
            _err(f"bias shape {_shape(bias)}: axis group of bias must be equal to axis 0 of groupTensor [{g_num}]")
        if bias.shape[1] != n:
            _err(f"bias shape {_shape(bias)}: axis N of bias must be equal to axis N of weight [{n}]")
    if m != pt.shape[0]:
        _err(f"x shape {_shape(x)}: axis M of x must be equal to axis M of perTokenScale [{pt.shape[0]}]")
    if scale.shape[2] != n:
        _err(f"weight shape {_shape(w)}: axis N of weight must be equal to axis N of scale [{scale.shape[2]}]")
    if scale.shape[0] != g_num:
        _err(f"scale shape {_shape(scale)}: axis group of scale must be equal to axis 0 of groupTensor [{g_num}]")
    if scale.shape[1] != kp:
        _err(f"scale shape {_shape(scale)}: axis K of scale must be equal to ceil(k/64) [{kp}]")
    if pt.shape[1] != kp:
        _err(f"perTokenScale shape {_shape(pt)}: axis K of perTokenScale must be equal to ceil(k/64) [{kp}]")
    if pt.shape[-1] != MXFP_MULTI_BASE_SIZE:
        _err(f"perTokenScale shape {_shape(pt)}: current perTokenScale last axis is {pt.shape[-1]}, expected 2")
    if scale.shape[-1] != MXFP_MULTI_BASE_SIZE:
        _err(f"scale shape {_shape(scale)}: current scale last axis is {scale.shape[-1]}, expected 2")


def _check_split_k_shapes(x, w, scale, pt, g_num):
    """CheckMxFp8TypeKCaseInputShape: x (M, K), weight (K, N), scale (K/64 + G, N, 2), perTokenScale
    (M, K/64 + G, 2): each group's scales start at a row of their own (UpdateOffset)."""
    if scale.ndim != 3:
        _err(f"scale has {scale.ndim} dims, expected 3")
    if pt.ndim != 3:
        _err(f"perTokenScale has {pt.ndim} dims, expected 3")
    m, k = x.shape
    n = w.shape[1]
    rows = k // MXFP_DIVISOR_SIZE + g_num
    if m != pt.shape[0]:
        _err(f"x shape {_shape(x)}: axis M of x must be equal to axis M of perTokenScale [{pt.shape[0]}]")
    if n != scale.shape[1]:
        _err(f"weight shape {_shape(w)}: axis N of weight must be equal to axis N of scale [{scale.shape[1]}]")
    if pt.shape[1] != rows:
        _err(f"perTokenScale shape {_shape(pt)}: axis K of perTokenScale must be equal to axis K of x divided by 64, "
             f"plus groupSize [{rows}]")
    if scale.shape[0] != rows:
        _err(f"scale shape {_shape(scale)}: axis K of scale must be equal to axis K of x divided by 64, plus "
             f"groupSize [{rows}]")
    if scale.shape[-1] != MXFP_MULTI_BASE_SIZE:
        _err(f"scale shape {_shape(scale)}: when split K in MX quant mode, current scale last axis is "
             f"{scale.shape[-1]}, expected 2")
    if pt.shape[-1] != MXFP_MULTI_BASE_SIZE:
        _err(f"perTokenScale shape {_shape(pt)}: when split K in MX quant mode, current perTokenScale last axis is "
             f"{pt.shape[-1]}, expected 2")


def split_k_scale_row(k0, group):
    """UpdateOffset (split K): the first scale row of a group whose K values start at ``k0``."""
    return k0 // MXFP_DIVISOR_SIZE + group


def mx_cube(xv, s1, wv, s2, k, sig_x, sig_w, float_accum, base_k, bias=None):
    """The fp32 L0C value of one group's MX MMAD: x (m, k) x weight (k, n) with their E8M0 scales (x: (m, kp, 2),
    weight: (kp, n, 2)) applied exactly, summed under ``float_accum`` (quant_matmul's MX cube,
    docs/ops/quant_matmul.md §7.5)."""
    xe = _mx_expand(xv, s1, k, False, True)
    we = _mx_expand(wv, s2, k, False, False)
    a32 = b32 = None
    if float_accum in ("numpy", "sequential"):
        a32 = _mx_expand(xv.astype(np.float32), s1.astype(np.float32), k, False, True)
        b32 = _mx_expand(wv.astype(np.float32), s2.astype(np.float32), k, False, False)
    return accum.float_matmul(xe, we, sig_x, sig_w, float_accum=float_accum, base_k=base_k, bias=bias, a32=a32,
                              b32=b32)


class MxSub:
    """One MX launch writing a (M, N) y: split M (all groups) or one group of split K. The interface of api._Sub."""

    mode = "mx"

    def __init__(self, args, x, w, s1, s2, ent, tr, k_ranges, bias=None, fixpipe_scale=None):
        self.args, self.x, self.w, self.s1, self.s2, self.ent, self.tr = args, x, w, s1, s2, ent, tr
        self.k_ranges = k_ranges           # per entry: (k0, k1, first scale row) for split K, None for split M
        self.bias = bias                   # (G, N) float32: the L0C start value (BiasTable), MXFP4 / W4A8-MX
        self.fixpipe_scale = fixpipe_scale  # W4A8-MX: the FixPipe's float32 scalar (64.0) applied to L0C

    def run(self, y, float_accum, validate):
        if self.tr is None:
            return y
        a = self.args
        m_x, n = a.x_shape[0], a.w_shape[2]
        sig_x, sig_w = operands.SIG_BITS[a.x_dtype], operands.SIG_BITS[a.w_dtype]
        base_k = int(self.tr.tiling.mmTilingData.baseK)
        check_memory(4 * m_x * n, "GroupedMatmul MX fp32 L0C values")
        acc = np.zeros((m_x, n), np.float32)
        w_idx, row, ms = self.ent
        for i in range(w_idx.size):
            mg = int(ms[i])
            if mg <= 0:
                continue
            r0, g = int(row[i]), int(w_idx[i])
            if self.k_ranges is None:
                k = a.x_shape[1]
                b = None if self.bias is None else self.bias[g:g + 1]
                acc[r0:r0 + mg] = mx_cube(self.x[r0:r0 + mg], self.s1[r0:r0 + mg], self.w[g], self.s2[g], k, sig_x,
                                          sig_w, float_accum, base_k, b)
            else:
                k0, k1, s0 = self.k_ranges
                kp = -(-(k1 - k0) // MXFP_DIVISOR_SIZE)
                acc[r0:r0 + mg] = mx_cube(self.x[r0:r0 + mg, k0:k1], self.s1[r0:r0 + mg, s0:s0 + kp],
                                          self.w[k0:k1], self.s2[s0:s0 + kp], k1 - k0, sig_x, sig_w, float_accum,
                                          base_k)
        if self.fixpipe_scale is not None:
            # a float32 product by a power of two: exact, or inf past FLT_MAX, as the FixPipe's multiply
            with np.errstate(over="ignore"):
                acc = (acc * np.float32(self.fixpipe_scale)).astype(np.float32)
        e = self.ent[0].size
        empty_f = np.zeros((max(e, 1), 0), np.float32)
        empty_i = np.zeros((max(e, 1), 0), np.int32)
        launch.run_epilogue(self.tr, self.ent, a, np.zeros(0, np.int32), acc, empty_f, np.zeros(0, np.float32),
                            empty_i, empty_f, launch.OUT_CODES[a.y_dtype], y, validate)
        return y


def _tiling(args, soc, core_num, k):
    s = tiling_mod.GmmShape(group_num=args.w_shape[0], m=args.x_shape[0], k=k, n=args.w_shape[2],
                            x_dtype=args.x_dtype, w_dtype=args.w_dtype, y_dtype=args.y_dtype, scale_dtype=None,
                            per_token=False, has_bias=False, weight_nz=False, group_type=0,
                            group_list_type=args.group_list_type, act_type=0, tuning_config=0)
    tr = memo.call(tiling_mod.grouped_matmul_tiling, s, soc=soc, core_num=core_num)
    return dataclasses.replace(tr, notes=tuple(tr.notes) + (
        "MX: the arch35 tiling (grouped_quant_basic_api_matmul_tiling.cpp, ASWT scheduler with tail split) is not "
        "reproduced; the A2/A3 walk writes the blocks (no effect on values; float_accum='kchunk' uses its baseK)",))


def _args(x_name, w_name, y_name, x_shape, w_shape, gl, group_list_type, group_type, split_item):
    return checks.GmmArgs(x_dtype=x_name, w_dtype=w_name, y_dtype=y_name, x_shape=x_shape, w_shape=w_shape,
                          scale_dtype=E8M0, pt_dtype=E8M0, gl_dtype="int64", gl_shape=_shape(gl),
                          split_item=split_item, group_type=group_type, group_list_type=group_list_type)


def build(xs, ws, biases, scales, pts, gl, y_name, n_y, *, split_item, group_type, group_list_type, kw, weight_nd):
    """(subs, assemble, out_shapes) of an MX call (api._build's contract), after the checks."""
    if kw.get("user_tiling") is not None:
        _err("tiling=: the arch35 GroupedMatmul tiling is not modelled for the MX modes; leave tiling None")
    if _name(xs[0]) in FP8 and _name(ws[0]) in FP4:
        return build_a8w4(xs, ws, biases, scales, pts, gl, y_name, n_y, split_item=split_item,
                          group_type=group_type, group_list_type=group_list_type, kw=kw)
    x, w = xs[0], ws[0]
    nz = w if isinstance(w, NzWeight) else None
    if nz is not None and _name(w) in FP4:
        # packed fp4 NZ storage (c0 = 64): read back through quant_matmul's NZ reader, values (E, K, N)
        w_name = _name(w)
        w_nd = _fp4_nz_weight(w, kw["origin"]) if len(w.shape) == 3 else np.zeros(w.shape, np.float64)
    else:
        w_nd, w_name, _ = weight_nd(w, kw["origin"])
    one = lambda v: None if v is None else v[0]
    scale, pt, bias = one(scales), one(pts), one(biases)
    n_s = 0 if scales is None else len(scales)
    if scales is not None and n_s != 1:
        _err(f"scale has {n_s} tensors: in quant case, only single-single-single tensor layout is supported")
    glv = check(x, w_nd, w_name, scale, pt, bias, gl, y_name, has_offset=kw["has_offset"],
                has_antiquant=kw["has_antiquant"], group_type=group_type, group_list_type=group_list_type,
                n_x=len(xs), n_w=len(ws), n_y=n_y, act_type=kw["act_type"], nz=nz, api=kw.get("api"))
    x_name = _name(x)
    xv = _values(x, x_name)
    s1 = e8m0(pt)
    s2 = e8m0(scale)
    m, k = x.shape
    if group_type == SPLIT_M:
        e, _, n = w_nd.shape
        checks.check_group_values(glv, group_list_type, e, m)
        args = _args(x_name, w_name, y_name, (m, k), (e, k, n), glv, group_list_type, 0, split_item)
        tr = ent = None
        if m and n and k:
            tr = _tiling(args, kw["soc"], kw["core_num"], k)
            ent = launch.entries(glv, group_list_type, e, m)
            launch.validate_launch(tr, ent, args, "acc_f", launch.epilogue_decl(args, "float", ent),
                                   storage_dtype(y_name).itemsize, kw["validate"])
        b = None if bias is None else np.ascontiguousarray(bias, np.float32)
        wv = w_nd if nz is not None and w_name in FP4 else _values(w_nd, w_name)
        sub = MxSub(args, xv, wv, s1, s2, ent, tr, None, b)
        return [sub], (lambda ys: ys), [(m, n)]
    # split K: one y (G, M, N); group g reads x[:, K_g], weight[K_g] and its scale rows from k0 // 64 + g
    ranges = forms.split_k_groups(glv, group_list_type, k)
    n = w_nd.shape[1]
    wv = _values(w_nd, w_name)
    subs = []
    for g, (k0, k1) in enumerate(ranges):
        kg = k1 - k0
        args = _args(x_name, w_name, y_name, (m, kg), (1, kg, n), np.zeros(1, np.int64), 1, 0, split_item)
        tr = ent = None
        if m and n and kg > 0:                     # KernelQGmmMx skips a group of no K: its y[g] is not written
            tr = _tiling(args, kw["soc"], kw["core_num"], kg)
            ent = (np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([m], np.int64))
            launch.validate_launch(tr, ent, args, "acc_f", launch.epilogue_decl(args, "float", ent),
                                   storage_dtype(y_name).itemsize, kw["validate"])
        subs.append(MxSub(args, xv, wv, s1, s2, ent, tr, (k0, k1, split_k_scale_row(k0, g))))
    g_num = len(ranges)
    return subs, (lambda ys: [np.stack(ys)]), [(g_num, m, n)]


def trace_mode(args):
    return f"mx:{args.x_dtype}x{args.w_dtype}->{args.y_dtype}"



# ------------------------------------------------------------------------------------------------------------------
# W4A8-MX: float8_e4m3fn x, FRACTAL_NZ transposed float4_e2m1 weight (docs/ops/grouped_matmul.md §10.7)
# ------------------------------------------------------------------------------------------------------------------
# Source: op_api/grouped_matmul_weight_quant_950_checker.cpp (CheckGroupedMatmulWeightQuantDAV3510, IsMxA8W4NZ) and
# the kernel op_kernel/arch35/quant_adaptive_sliding_window_templates/gmm_weight_quant_tensor_api_mx_kernel.h ->
# blaze GmmWeightQuantMxKernel: the vector cores' prologue (GroupedWeightPrologueMx, tile shift_w4_to_w8.h) puts each
# e2m1 code into an e4m3 byte, which is the value times 2^-6, and scales the bias by 0.015625 in its own dtype
# (scale_mx_bias.h, MX_BIAS_FACTOR); the cube (block_mmad_wqgmm_mx_mix.h) runs the MX MMAD of x with those bytes and
# the E8M0 scales, the bias as the L0C start value, and CopyCL0c2Gm's FixPipe multiplies by the float32 scalar
# 0x42800000 = 64.0 while casting to y.
A8W4_SHIFT = 2.0 ** -6                 # the e2m1 -> e4m3 byte embedding (exact)
A8W4_FIXPIPE_SCALE = 64.0              # FP32_64_AS_UINT64
A8W4_GROUP_SIZE = 32
A8W4_NK_ALIGN = 64                     # N_K_ALIGN_VALUE_WEIGHT_QUANT_4BIT
A8W4_OUT = ("bfloat16", "float16")
WEIGHT_NZ = "aclnnGroupedMatmulWeightNz"


def _a8w4_err(msg, status=ACLNN_ERR_PARAM_INVALID):
    raise AclnnError(status, f"{API}: {msg}")


def _fp4_nz_weight(w, origin):
    """A FRACTAL_NZ fp4 weight -> its logical (..., K, N) values (float64, exact). A transposed NzWeight's ``shape``
    is the stored (..., N, K) matrix (quant_matmul's convention for a transposed NZ x2)."""
    from npu_emu.kernels.quant_matmul import weight_nz

    op = weight_nz.nz_operand(w, "weight", None, origin)
    nd = weight_nz.nz_to_storage_nd(op, w.transposed)
    v = fp4_values(nd.data, op.dtype)
    return np.swapaxes(v, -1, -2) if w.transposed else v


def check_a8w4(xs, ws, biases, scales, pts, aq_scales, aq_offsets, gl, y_name, n_y, *, has_offset, group_type,
               group_list_type, split_item, api, act_type):
    """CheckGroupedMatmulWeightQuantDAV3510 for IsMxA8W4NZ (E2M1 or E1M2 weight), in CANN's order (161002 unless
    said), for the single-weight form and the separated one (a list of E 2-D weights). Returns (group list as an
    array, separated)."""
    x_name, w_name = _name(xs[0]), _name(ws[0])
    flow = f"when the dtype of x is {x_name} and the dtype of weight is {w_name}"
    # CheckGroupTypeScenario
    if group_type != SPLIT_M:
        _a8w4_err(f"groupType is {group_type}: weight quant cases with x dtype [{x_name}] and weight dtype "
                  f"[{w_name}] only support groupType 0 (split M)")
    if not (len(xs) == 1 and n_y == 1 and len(ws) >= 1):
        _a8w4_err(f"x size: {len(xs)}, weight size: {len(ws)}, y size: {n_y}: when groupType is 0 (split M), when "
                  f"the quant mode is A8W4 MX, x and y size must be 1, weight size must be >= 1")
    # CheckUnsupportedApi
    if api != WEIGHT_NZ:
        _a8w4_err("Only AclnnGroupedMatmulNz supports fp16/bf16-fp4_e2m1, fp8_e4m3fn-fp4_e2m1/fp4_e1m2 and int8-int4 "
                  "for xDtype-weightDtype (call aclnnGroupedMatmulWeightNz, or npu_grouped_matmul with an NzWeight)")
    # CheckGroupListAndSplitItem
    if gl is None:
        _a8w4_err("GroupListOptional should not be nullptr when groupType is 0.")
    if split_item not in (2, 3):
        _a8w4_err(f"splitItem {split_item}: when y is not separated, splitItem must be 2 or 3")
    # CheckAntiQuantParams, CheckQuantParams
    if aq_scales is None:
        _a8w4_err("AntiquantScale must not be nullptr in antiquant, but now is nullptr.", ACLNN_ERR_PARAM_NULLPTR)
    if aq_offsets is not None:
        _a8w4_err("In weight quant case, antiquantOffsetOptional is not supported when weightDtype is fp8/fp4 or "
                  "xDtype-weightDtype is int8-int4.")
    if scales is not None:
        _a8w4_err("In weight quant case, scale must be null when xDtype-weightDtype is not int8-int4.")
    if has_offset:
        _a8w4_err("In WeightQuant case, offset must be null.")
    if pts is None:
        _a8w4_err("In WeightQuant case, perTokenScale must not be null when xDtype-weightDtype is "
                  "float8_e4m3fn-float4_e2m1 or int8-int4.")
    # CheckTensorListSize
    for lst, nm, ref, rn in ((aq_scales, "antiquantScaleOptional", ws, "weight"),
                             (biases, "biasOptional", ws, "weight"), (pts, "perTokenScaleOptional", xs, "x")):
        if lst is not None and len(lst) != len(ref):
            _a8w4_err(f"{nm} size: {len(lst)}, {rn} size: {len(ref)}: {nm} size must be equal to {rn} size")
    # CheckYDtype, CheckQuantDtype, CheckBiasDtype
    if y_name not in A8W4_OUT:
        _a8w4_err(f"y {y_name}: the dtype of y must be float16 or bfloat16, {flow}")
    pt = pts[0]
    if pt is None or _name(pt) != E8M0:
        _a8w4_err(f"perTokenScale {_name(pt)}: the dtype of pertokenScale must be float8_e8m0, {flow}")
    bias_dt = None if biases is None or biases[0] is None else _name(biases[0])
    if bias_dt is not None and bias_dt != y_name:
        _a8w4_err(f"bias, y: {bias_dt}, {y_name}: the dtype of bias must be equal to the dtype of y, {flow}")
    # CheckTransposeStatus: transposeWeight is one flag for the list (op-plugin reads it off weight[0]); an ND array
    # carries no NZ format, so CheckWeightFormat's refusal is reported here
    if not isinstance(ws[0], NzWeight):
        _a8w4_err(f"weight ND: the format of weight must be NZ {flow} (wrap it in npu_emu.ops.NzWeight)")
    if not ws[0].transposed:
        _a8w4_err("transposeWeight false: in weight quant case fp16/bf16-int8, fp16/bf16-fp8/hif8 and "
                  "fp8_e4m3-fp4_e2m1/fp4_e1m2, weight must be transposed (NzWeight(..., transposed=True))")
    # CheckScaleAndPerTokenScaleShape
    x = xs[0]
    if pt.ndim != 3:
        _a8w4_err(f"perTokenScale has {pt.ndim} dims: the shape dim of perTokenScale must be 3")
    if x.ndim != 2:
        _a8w4_err(f"x has {x.ndim} dims: the shape dim of x[0] must be 2")
    m, k = x.shape
    if pt.shape[0] != m:
        _a8w4_err(f"perTokenScale {_shape(pt)}: the first dim of perTokenScale must be equal to the first dim of x")
    if k != pt.shape[1] * MXFP_DIVISOR_SIZE:
        _a8w4_err(f"perTokenScale {_shape(pt)}: the second dim of x ({k}) must be 64 times the second dim of "
                  f"perTokenScale")
    # per weight (the loop of CheckGroupedMatmulWeightQuantDAV3510); IsMultiTensorWeight: weight[0] is 2-D (the
    # separated form: E weights (K, N) viewed, (N, K) stored, one (K/64, N, 2) antiquantScale and one (N,) bias each)
    multi = len(ws[0].shape) == 2 if isinstance(ws[0], NzWeight) else False
    for i, w in enumerate(ws):
        if w is None:
            _a8w4_err(f"weight[{i}] is null, which is not supported", ACLNN_ERR_PARAM_NULLPTR)
        wi_name = _name(w)
        if wi_name != w_name:
            _a8w4_err(f"The dtype of each tensor in weight tensor list must be consistent. weight[{i}]'s dtype "
                      f"[{wi_name}] is different from the expected dtype [{w_name}]")
        if not isinstance(w, NzWeight):                                      # CheckWeightFormat
            _a8w4_err(f"weight[{i}] ND: the format of weight must be NZ {flow}")
        if len(w.shape) not in (2, 3):                                       # CheckDimNumByGroupType
            _a8w4_err(f"weight[{i}] has {len(w.shape)} dims: in weight quant case fp8_e4m3-fp4_e2m1/fp4_e1m2, the "
                      f"shape dim of weight[{i}] must be 2 or 3")
        if len(ws) > 1 and len(w.shape) != 2:
            _a8w4_err(f"weight[{i}] has {len(w.shape)} dims: a list of {len(ws)} weights is the separated form, one "
                      f"2-D (K, N) weight a group (emulator-added: the kernel's per-group lookup of a 3-D weight "
                      f"is not defined)")
        if w.transposed != ws[0].transposed:
            _a8w4_err(f"weight[{i}]: The transpose state must be the same for each tensor in weight")
        n, kw_ = w.shape[-2:]                            # the stored (..., N, K); the view is (..., K, N)
        if kw_ != k:                                                         # CheckDimMatching
            _a8w4_err(f"x[0] dim k value {k} must be equal to weight[{i}] dim k value {kw_}")
        if n % A8W4_NK_ALIGN or k % A8W4_NK_ALIGN:
            _a8w4_err(f"weight[{i}] n={n}, k={k}: the value of dim n, k should be an integer multiple of "
                      f"{A8W4_NK_ALIGN}")
        batch = None if multi else w.shape[0]
        if biases is not None:                                               # bias: CheckTensorShape
            b = biases[i]
            if b is None:
                _a8w4_err(f"bias[{i}] is null, which is not supported", ACLNN_ERR_PARAM_NULLPTR)
            if _name(b) != bias_dt:
                _a8w4_err(f"The dtype of each tensor in bias tensor list must be consistent. bias[{i}]'s dtype "
                          f"[{_name(b)}] is different from the expected dtype [{bias_dt}]")
            want = 1 if multi else 2
            if b.ndim != want:
                _a8w4_err(f"bias[{i}] has {b.ndim} dims: Dim must be [{want}]")
            if batch is not None and b.shape[0] != batch:
                _a8w4_err(f"bias batch size[{b.shape[0]}] should be equal with groupList length[{batch}]")
            if b.shape[-1] != n:
                _a8w4_err(f"NDim[{b.shape[-1]}] of bias must be equal to NDim[{n}] of weight")
        aq = aq_scales[i]                            # CheckAntiQuantDtype, CheckAntiQuantShape, CheckGroupSize
        if aq is None:
            _a8w4_err(f"antiquantScale[{i}] is null, which is not supported", ACLNN_ERR_PARAM_NULLPTR)
        if _name(aq) != E8M0:
            _a8w4_err(f"antiquantScale {_name(aq)}: the dtype of each tensor in antiquantScale tensor list must be "
                      f"FLOAT8_E8M0")
        want = 3 if multi else 4
        if aq.ndim != want:
            _a8w4_err(f"antiquantScale has {aq.ndim} dims: Dim must be [{want}] "
                      f"({'(K/64, N, 2)' if multi else '(E, K/64, N, 2)'})")
        if batch is not None and aq.shape[0] != batch:
            _a8w4_err(f"antiquantScale batch size[{aq.shape[0]}] should be equal with groupList length[{batch}]")
        if aq.shape[-2] != n:
            _a8w4_err(f"NDim[{aq.shape[-2]}] of antiquantScale must be equal to NDim[{n}] of weight")
        groups = aq.shape[-3] * MXFP_MULTI_BASE_SIZE
        if groups <= 0:
            _a8w4_err(f"groupNum {groups}: the value of groupNum must be greater than 0")
        if k % groups:
            _a8w4_err(f"kSize: {k}, groupNum: {groups}: kSize must be a multiple of groupNum")
        if k // groups != A8W4_GROUP_SIZE:
            _a8w4_err(f"groupSize {k // groups}: the value of groupSize must be 32")
        if aq.shape[-1] != MXFP_MULTI_BASE_SIZE:
            _a8w4_err(f"antiquantScale {_shape(aq)}: the last dim holds the 2 E8M0 codes of 64 values of K "
                      f"(emulator-added)")
    if pt.shape[2] != MXFP_MULTI_BASE_SIZE:
        _a8w4_err(f"perTokenScale {_shape(pt)}: the last dim holds the 2 E8M0 codes of 64 values of K "
                  f"(emulator-added)")
    if act_type != 0:
        _a8w4_err(f"actType {act_type}: GmmWeightQuantMxKernel has no epilogue (emulator-added)")
    if group_list_type not in (0, 1):
        _a8w4_err(f"groupListType {group_list_type}: GmmWeightQuantMxKernel reads the group list as cumulative (0) "
                  f"or counts (1) only (emulator-added)")
    e = len(ws) if multi else ws[0].shape[0]
    glv = np.asarray(gl)
    if resolve_dtype(glv.dtype) != "int64" or glv.ndim != 1 or glv.shape[0] != e:
        _a8w4_err(f"groupList {glv.dtype} {glv.shape}: an int64 (E,) = ({e},) list, one entry per "
                  f"{'weight tensor' if multi else 'expert of the weight'} (emulator-added)")
    return glv, multi


def a8w4_bias(bias, y_name):
    """ScaleMxBias: bias * 0.015625 in the bias's dtype (one RNE rounding of the exact product, which for float16
    loses the bits that fall below its subnormal step 2^-24) -> the float32 BiasTable values."""
    if bias is None:
        return None
    b = np.asarray(bias).astype(np.float64) * A8W4_SHIFT
    with np.errstate(over="ignore", under="ignore"):
        r = b.astype(np.float16) if y_name == "float16" else b.astype(np.float32).astype(ml_dtypes.bfloat16)
    return np.ascontiguousarray(r.astype(np.float32))


def build_a8w4(xs, ws, biases, scales, pts, gl, y_name, n_y, *, split_item, group_type, group_list_type, kw):
    """(subs, assemble, out_shapes) of a W4A8-MX call (api._build's contract), after the checks."""
    aq_scales, aq_offsets, _ = kw["antiquant"]
    glv, multi = check_a8w4(xs, ws, biases, scales, pts, aq_scales, aq_offsets, gl, y_name, n_y,
                     has_offset=kw["has_offset"], group_type=group_type, group_list_type=group_list_type,
                     split_item=split_item, api=kw.get("api"), act_type=kw["act_type"])
    x = xs[0]
    x_name, w_name = _name(x), _name(ws[0])
    m, k = x.shape
    # the separated form (IsSingleMultiSingle) reads weight g, antiquantScale g and bias g per group: the same
    # values as the (E, ...) stack of the single-weight form
    if multi:
        wv = np.stack([_fp4_nz_weight(w, kw["origin"]) for w in ws])
        aq = np.stack([np.asarray(a) for a in aq_scales])
        b_in = None if biases is None else np.stack([np.asarray(b) for b in biases])
    else:
        wv, aq, b_in = _fp4_nz_weight(ws[0], kw["origin"]), aq_scales[0], (None if biases is None else biases[0])
    e, _, n = wv.shape
    checks.check_group_values(glv, group_list_type, e, m)
    args = _args(x_name, w_name, y_name, (m, k), (e, k, n), glv, group_list_type, 0, split_item)
    tr = ent = None
    if m and n and k:
        tr = _tiling(args, kw["soc"], kw["core_num"], k)
        note = ("W4A8-MX: GmmWeightQuantMxKernel (BlockSchedulerWqgmmNResplit, the vector prologue) is not "
                "reproduced as a walk; the values are its arithmetic (docs/ops/grouped_matmul.md §10.7)")
        tr = dataclasses.replace(tr, notes=tuple(tr.notes) + (note,))
        ent = launch.entries(glv, group_list_type, e, m)
        launch.validate_launch(tr, ent, args, "acc_f", launch.epilogue_decl(args, "float", ent),
                               storage_dtype(y_name).itemsize, kw["validate"])
    # the e4m3 bytes the cube reads: E2M1 s e e m -> s 0 0 e e m 0 0, E1M2 s e m m -> s 0 0 0 e m m 0 (shift 3,
    # mask 0x8E); read with e4m3's bias 7 both are 2^-6 x the fp4 value, subnormals included (exact)
    wv = wv * A8W4_SHIFT
    bias = a8w4_bias(b_in, y_name)
    sub = MxSub(args, _values(x, x_name), wv, e8m0(pts[0]), e8m0(aq), ent, tr, None, bias,
                fixpipe_scale=A8W4_FIXPIPE_SCALE)
    return [sub], (lambda ys: ys), [(m, n)]
