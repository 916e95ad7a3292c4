"""Per-core kernel of Quantize (aclnnQuantize, npu_quantize div_mode=True) on the Ascend 950, on the launch model and
the instruction layer (docs/ops/ascend_quant.md §9).

Source: hicann/ops-nn quant/quantize/op_kernel/arch35/quantize.h (QuantizeBase: ParseCoreBlocks, the CAST_TRAIT_*
constants), quantize_per_tensor[_no_offset]_regbase.h, quantize_per_channel[_nddma][_no_offset]_regbase.h,
quantize_per_head[_no_offset]_regbase.h (Process, CopyXAndCompute, Compute). The tiling key carries
TPL_DIV_MODE_DIV, TPL_ROUND_MODE_NONE and TPL_NO_SQRT_MODE, so per element, in the order of Compute:

    xf = float32(x)                        (half / bf16: exact widening)
    sf = float32(scale)                    (bf16: exact widening; a half scale was cast to float32 by aclnn)
    t  = Div(xf, sf)                       (MicroAPI::Div, ZEROING; the rounding is the div_model switch)
    t  = Add(t, float32(zero_point))       (int8 / uint8 -> half -> float32; int32 -> float32 CAST_RINT; bf16 exact)
    int8 / uint8: Cast float32 -> int16 (CAST_RINT), int16 -> half (CAST_RINT), half -> int8 / uint8 (CAST_RINT)
    int32:        Cast float32 -> int32 (CAST_RINT)

The walk: each core takes its block from ParseCoreBlocks (tensor / channel: rows or columns of the merged
(dim0, dim1); head: dim0, (dim0, dim1) or (dim0 * dim1, dim2) with blockUnion), and walks it in tiles of baseN rows
of baseLen elements. GM buffers travel as bytes; ``tags`` = (mode, scale type, zero-point type, div model).
"""

import numpy as np
from numba import njit, prange

from npu_emu.ascendc.cast import Cast
from npu_emu.ascendc.constants import (
    CAST_NONE,
    CAST_RINT,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT16,
    DT_INT8,
    DT_INT16,
    DT_INT32,
    DT_UINT8,
)
from npu_emu.ascendc.vector import Add, Adds, Div
from npu_emu.device.jit_options import PARALLEL

_KJ = dict(parallel=PARALLEL, cache=True, error_model="numpy")
_INL = dict(inline="always", cache=True, error_model="numpy")
# helpers whose Cast dtypes are constants: compiled once and shared by the nine kernels (inlined, they were compiled
# into each: one cold call 65.7 CPU-s inlined, 42-53 not)
_HELPER = dict(inline="never", cache=True, error_model="numpy")

# tags[1]: scale type; tags[2]: zero-point type (-1 none)
S_F32, S_BF16 = 0, 1
Z_NONE, Z_F32, Z_BF16, Z_INT8, Z_UINT8, Z_INT32 = -1, 0, 1, 2, 3, 4


@njit(**_HELPER)
def _widen_scale(dst, s_gm, start, n, st):
    """CopyInScale + the load's cast: n scales from element ``start`` to float32."""
    if st == S_BF16:
        Cast(dst, s_gm.view(np.uint16)[start:start + n], CAST_NONE, n, DT_FLOAT, DT_BF16)
    else:
        dst[:n] = s_gm.view(np.float32)[start:start + n]


@njit(**_HELPER)
def _widen_zp(dst, z_gm, start, n, zt, h_tmp):
    """CopyInOffset + the load's casts: n zero points to float32."""
    if zt == Z_BF16:
        Cast(dst, z_gm.view(np.uint16)[start:start + n], CAST_NONE, n, DT_FLOAT, DT_BF16)
    elif zt == Z_INT8:
        Cast(h_tmp, z_gm.view(np.int8)[start:start + n], CAST_NONE, n, DT_FLOAT16, DT_INT8)
        Cast(dst, h_tmp, CAST_NONE, n, DT_FLOAT, DT_FLOAT16)
    elif zt == Z_UINT8:
        Cast(h_tmp, z_gm[start:start + n], CAST_NONE, n, DT_FLOAT16, DT_UINT8)
        Cast(dst, h_tmp, CAST_NONE, n, DT_FLOAT, DT_FLOAT16)
    elif zt == Z_INT32:
        Cast(dst, z_gm.view(np.int32)[start:start + n], CAST_RINT, n, DT_FLOAT, DT_INT32)
    else:
        dst[:n] = z_gm.view(np.float32)[start:start + n]


@njit(**_INL)
def _load_x(dst, x_gm, start, n, XT):
    if XT == DT_FLOAT:
        dst[:n] = x_gm.view(np.float32)[start:start + n]
    else:
        Cast(dst, x_gm.view(np.uint16)[start:start + n], CAST_NONE, n, DT_FLOAT, XT)


@njit(**_INL)
def _store_y(y_gm, start, t, n, i16, h16, YT):
    if YT == DT_INT32:
        Cast(y_gm.view(np.int32)[start:start + n], t, CAST_RINT, n, DT_INT32, DT_FLOAT)
    else:
        Cast(i16, t, CAST_RINT, n, DT_INT16, DT_FLOAT)
        Cast(h16, i16, CAST_RINT, n, DT_FLOAT16, DT_INT16)
        if YT == DT_INT8:
            Cast(y_gm.view(np.int8)[start:start + n], h16, CAST_RINT, n, DT_INT8, DT_FLOAT16)
        else:
            Cast(y_gm[start:start + n], h16, CAST_RINT, n, DT_UINT8, DT_FLOAT16)


@njit(**_HELPER)
def _block(td, mode, b):
    """ParseCoreBlocks (+ the per-head blockUnion split) -> (a0, a_n, r0, r_n, c0, c_n) over (outer, rows, cols)."""
    last = b == td.numCore - 1
    if mode != 2:           # tensor / channel: rows dim0, cols dim1
        if td.blockAxis == 0:
            n = td.blockTailFactor if last else td.blockFactor
            return 0, 1, b * td.blockFactor, n, 0, td.dim1
        n = td.blockTailFactor if last else td.blockFactor
        return 0, 1, 0, td.dim0, b * td.blockFactor, n
    if td.blockAxis == 0:   # head: outer dim0, rows dim1, cols dim2
        n = td.blockTailFactor if last else td.blockFactor
        return b * td.blockFactor, n, 0, td.dim1, 0, td.dim2
    u = td.blockUnion
    r = b % u
    n = td.blockTailFactor if r == u - 1 else td.blockFactor
    if td.blockAxis == 1:
        return b // u, 1, r * td.blockFactor, n, 0, td.dim2
    flat = b // u
    return flat // td.dim1, 1, flat % td.dim1, 1, r * td.blockFactor, n


@njit(**_INL)
def _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, XT, YT):
    mode = tags[0]
    st = tags[1]
    zt = tags[2]
    dm = tags[3]
    base = td.baseLen
    rows_c = td.dim1 if mode == 2 else td.dim0
    cols_c = td.dim2 if mode == 2 else td.dim1
    for b in prange(block_dim):
        if b >= td.numCore:
            continue
        a0, a_n, r0, r_n, c0, c_n = _block(td, mode, b)
        # UB (float32 registers of one tile, the scale / zero-point vectors, the cast stages)
        t = np.empty(base, np.float32)
        sv = np.empty(max(base, td.baseN), np.float32)
        zv = np.empty(max(base, td.baseN), np.float32)
        h_tmp = np.empty(max(base, td.baseN), np.uint16)
        i16 = np.empty(base, np.int16)
        h16 = np.empty(base, np.uint16)
        if mode == 0:
            _widen_scale(sv, s_gm, 0, 1, st)
            if zt != Z_NONE:
                _widen_zp(zv, z_gm, 0, 1, zt, h_tmp)
        for a in range(a0, a0 + a_n):
            for cc in range(c0, c0 + c_n, base):
                count = min(base, c0 + c_n - cc)
                if mode == 1:
                    _widen_scale(sv, s_gm, cc, count, st)
                    if zt != Z_NONE:
                        _widen_zp(zv, z_gm, cc, count, zt, h_tmp)
                for rr in range(r0, r0 + r_n, td.baseN):
                    rows = min(td.baseN, r0 + r_n - rr)
                    if mode == 2:
                        _widen_scale(sv, s_gm, rr, rows, st)
                        if zt != Z_NONE:
                            _widen_zp(zv, z_gm, rr, rows, zt, h_tmp)
                    for j in range(rows):
                        off = (a * rows_c + rr + j) * cols_c + cc
                        _load_x(t, x_gm, off, count, XT)
                        if mode == 1:
                            Div(t, t, sv, count, DT_FLOAT, dm)
                            if zt != Z_NONE:
                                Add(t, t, zv, count)
                        else:
                            k = j if mode == 2 else 0
                            Div(t, t, sv[k], count, DT_FLOAT, dm)
                            if zt != Z_NONE:
                                Adds(t, t, zv[k], count)
                        _store_y(y_gm, off, t, count, i16, h16, YT)


@njit(**_KJ)
def quantize_f32_i8(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_FLOAT, DT_INT8)


@njit(**_KJ)
def quantize_f16_i8(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_FLOAT16, DT_INT8)


@njit(**_KJ)
def quantize_bf16_i8(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_BF16, DT_INT8)


@njit(**_KJ)
def quantize_f32_u8(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_FLOAT, DT_UINT8)


@njit(**_KJ)
def quantize_f16_u8(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_FLOAT16, DT_UINT8)


@njit(**_KJ)
def quantize_bf16_u8(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_BF16, DT_UINT8)


@njit(**_KJ)
def quantize_f32_i32(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_FLOAT, DT_INT32)


@njit(**_KJ)
def quantize_f16_i32(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_FLOAT16, DT_INT32)


@njit(**_KJ)
def quantize_bf16_i32(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags):
    _quantize(block_dim, td, ub_size, x_gm, s_gm, z_gm, y_gm, tags, DT_BF16, DT_INT32)


KERNELS = {
    ("float32", "int8"): quantize_f32_i8, ("float16", "int8"): quantize_f16_i8, ("bfloat16", "int8"): quantize_bf16_i8,
    ("float32", "uint8"): quantize_f32_u8, ("float16", "uint8"): quantize_f16_u8,
    ("bfloat16", "uint8"): quantize_bf16_u8, ("float32", "int32"): quantize_f32_i32,
    ("float16", "int32"): quantize_f16_i32, ("bfloat16", "int32"): quantize_bf16_i32,
}
