"""Mmad: the cube matrix multiply-accumulate L0A x L0B -> L0C, with the fractal layouts of the buffers.

Layouts (docs/ops/data_copy_dequant.md §6; ``cannmirror/asc-devkit:
docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）/Mmad计算/
Mmad.md`` 表1/表2), with K0 = 32 bytes / sizeof(input) (32 for int8 / fp8 / HiF8, 16 for half / bf16, 8 for
float32, 64 for packed int4), M1 = ceil(m/16), N1 = ceil(n/16), K1 = ceil(k/K0):

* L0A (fm, A = m x k): ``Zz`` = [M1, K1, 16, K0] on A2/A3 (fractals row-major, rows inside a fractal row-major);
  ``Nz`` = [K1, M1, 16, K0] on Ascend 950 (``l0a_nz=True``). With m == 1 the cube runs GEMV and reads A as k
  contiguous elements (``关键特性说明/GEMV.md``; disable with ``disableGemv``, 950 only).
* L0B (filter, B = k x n): ``Zn`` = [K1, N1, 16 (n), K0]: each fractal stores 16 columns of B, K0 elements each.
* L0C (dst, C = m x n): ``Nz`` = [N1, M1, 16, 16], element C[i, j] at ``(j//16)*M1*256 + i*16 + j%16``; always
  16 x 16 fractals (int32 or float32).
* float32 inputs with ``kDirectionAlign=True`` (A2/A3) align K to 16: K1 = 2*ceil(k/16) (``K-方向对齐约束.md``).

Only the m x n valid elements of C are written (the padded rows/columns of the fractals are left untouched: on the
device they hold products of the buffers' padding) and only k products enter each sum.

Arithmetic:
* int8 x int8, uint8 / int4 x int4 -> int32: exact integer dot products; the int32 accumulator wraps (products are
  summed in int64, the total is stored modulo 2^32).
* half / bf16 / float32 / FP8 (e4m3fn, e5m2, mixed) / HiF8 -> float32: every product is exact in float64 (at most
  2 x 24 significand bits); the sum runs in float64 in increasing k starting from the initial C value, and is
  rounded to float32 once. The device's summation order inside the cube is not public (docs/ops/quant_matmul.md §7.9):
  this is the simple reference path, exact whenever the float64 sum is exact (e.g. FP8 / HiF8 products, short k); the
  quant-matmul kernels choose their own ``float_accum`` model.

Initial value of C (``MmadParams``): ``bias`` given -> C = bias[j] broadcast over the rows (the Mmad overload with a
bias tensor, BT buffer); else ``cmatrixInitVal`` -> C = 0; else ``cmatrixSource`` -> needs the bias tensor;
else C accumulates onto the L0C contents (C += A x B).
"""

from dataclasses import dataclass

import numpy as np
from numba import njit

from npu_emu.ascendc._elem import is_float_array, itemsize, u16_to_f32
from npu_emu.ascendc.constants import (
    DT_AUTO,
    DT_BF16,
    DT_FLOAT,
    DT_FLOAT8_E4M3FN,
    DT_FLOAT8_E5M2,
    DT_FLOAT16,
    DT_HIFLOAT8,
    DT_INT4,
)
from npu_emu.ascendc.nz import nd_to_nz, nz_to_nd
from npu_emu.dtypes.scalar import decode_e4m3fn, decode_e5m2, decode_hif8
from npu_emu.errors import invalid

_JIT = dict(inline="always", cache=True, error_model="numpy")


@njit(**_JIT)
def _k0(arr, t):
    if t == DT_INT4:
        return 64
    if t == DT_FLOAT16 or t == DT_BF16:
        return 16
    if t == DT_FLOAT8_E4M3FN or t == DT_FLOAT8_E5M2 or t == DT_HIFLOAT8:
        return 32
    return 32 // itemsize(arr)


@njit(**_JIT)
def _fval(arr, i, t):
    """Exact float64 value of element i of an L0 buffer in format t."""
    if t == DT_FLOAT16 or t == DT_BF16:
        return np.float64(u16_to_f32(arr[i], t))
    if t == DT_FLOAT8_E4M3FN:
        return np.float64(decode_e4m3fn(arr[i]))
    if t == DT_FLOAT8_E5M2:
        return np.float64(decode_e5m2(arr[i]))
    if t == DT_HIFLOAT8:
        return np.float64(decode_hif8(arr[i]))
    return np.float64(arr[i])


@njit(**_JIT)
def _ival(arr, i, t):
    """Integer value of element i (packed int4: two's complement nibble, element 2j in the low nibble)."""
    if t == DT_INT4:
        b = np.int64(arr[i >> 1])
        v = (b >> 4) & 0xF if (i & 1) else b & 0xF
        return v - 16 if v >= 8 else v
    return np.int64(arr[i])


@njit(**_JIT)
def _a_base(mi, k1, m, K1, M1, K0, l0a_nz, gemv):
    """Offset of A[mi, k1*K0] in L0A (the K0 elements of a fractal row are contiguous in every layout)."""
    if gemv:
        return k1 * K0
    if l0a_nz:
        return ((k1 * M1 + mi // 16) * 16 + mi % 16) * K0
    return (((mi // 16) * K1 + k1) * 16 + mi % 16) * K0


@njit(cache=True, error_model="numpy")
def _mmad_loop(dst, fm, filter, m, n, k, init, bias, fm_type, filter_type, K0, K1, l0a_nz, gemv):
    """init: 0 = zero, 1 = from bias, 2 = accumulate onto dst."""
    M1 = (m + 15) // 16
    N1 = (n + 15) // 16
    int_path = fm_type == DT_INT4 or (fm_type == DT_AUTO and not is_float_array(fm))
    for j in range(n):
        b_col = (j % 16) * K0
        for i in range(m):
            c = (j // 16) * M1 * 256 + i * 16 + j % 16
            if int_path:
                acc = np.int64(0)
                if init == 1:
                    acc = np.int64(bias[j])
                elif init == 2:
                    acc = np.int64(dst[c])
                for k1 in range(K1):
                    a0 = _a_base(i, k1, m, K1, M1, K0, l0a_nz, gemv)
                    b0 = (k1 * N1 + j // 16) * 16 * K0 + b_col
                    for k0 in range(min(K0, k - k1 * K0)):
                        acc += _ival(fm, a0 + k0, fm_type) * _ival(filter, b0 + k0, filter_type)
                dst[c] = acc
            else:
                facc = np.float64(0.0)
                if init == 1:
                    facc = np.float64(bias[j])
                elif init == 2:
                    facc = np.float64(dst[c])
                for k1 in range(K1):
                    a0 = _a_base(i, k1, m, K1, M1, K0, l0a_nz, gemv)
                    b0 = (k1 * N1 + j // 16) * 16 * K0 + b_col
                    for k0 in range(min(K0, k - k1 * K0)):
                        facc += _fval(fm, a0 + k0, fm_type) * _fval(filter, b0 + k0, filter_type)
                dst[c] = np.float32(facc)


@njit(**_JIT)
def Mmad(dst, fm, filter, m, n, k, cmatrixInitVal=True, cmatrixSource=False, bias=None,
         fm_type=DT_AUTO, filter_type=DT_AUTO, kDirectionAlign=False, l0a_nz=False, disableGemv=False):
    """AscendC::Mmad(dst, fm, filter[, bias], mmadParams) with MmadParams unpacked (m, n, k, cmatrixInitVal,
    cmatrixSource, kDirectionAlign, disableGemv); layouts and arithmetic in the module docstring.

    ``fm`` / ``filter``: 1-D L0A / L0B views (int8, uint8, float32, or uint16 / uint8 bit views with
    ``fm_type`` / ``filter_type`` = DT_FLOAT16, DT_BF16, DT_FLOAT8_E4M3FN, DT_FLOAT8_E5M2, DT_HIFLOAT8, DT_INT4).
    ``dst``: 1-D int32 or float32 L0C view. ``bias``: 1-D int32 / float32 of length >= n (the bias overload).
    m, n or k == 0 is a no-op (``Mmad.md`` 约束说明). The views are not bounds-checked here (``mmad`` checks them).
    """
    if m == 0 or n == 0 or k == 0:
        return
    K0 = _k0(fm, fm_type)
    K1 = (k + K0 - 1) // K0
    if kDirectionAlign and K0 == 8:
        K1 = 2 * ((k + 15) // 16)
    gemv = m == 1 and not disableGemv
    if bias is not None:
        _mmad_loop(dst, fm, filter, m, n, k, 1, bias, fm_type, filter_type, K0, K1, l0a_nz, gemv)
    elif cmatrixInitVal:
        _mmad_loop(dst, fm, filter, m, n, k, 0, dst, fm_type, filter_type, K0, K1, l0a_nz, gemv)
    elif cmatrixSource:
        raise ValueError("Mmad: cmatrixSource=True initialises C from the bias table; pass the bias tensor")
    else:
        _mmad_loop(dst, fm, filter, m, n, k, 2, dst, fm_type, filter_type, K0, K1, l0a_nz, gemv)


# ----------------------------------------------------------------------------------------------------------------
# Python level: the MmadParams struct and layout helpers (built on npu_emu.ascendc.nz).


@dataclass(frozen=True)
class MmadParams:
    """AscendC::MmadParams (``kernel_struct_mm.h``; fields used by the emulator)."""

    m: int = 0
    n: int = 0
    k: int = 0
    cmatrixInitVal: bool = True
    cmatrixSource: bool = False
    kDirectionAlign: bool = False
    disableGemv: bool = False

    def __post_init__(self):
        for name in ("m", "n", "k"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v <= 4095:
                raise invalid(f"MmadParams.{name}={v!r} is out of range; use an int in [0, 4095]")


def mmad(dst, fm, filter, params, bias=None, *, fm_type=DT_AUTO, filter_type=DT_AUTO, l0a_nz=False):
    """``Mmad(dst, fm, filter[, bias], MmadParams)`` called from Python: checks the buffer sizes, then runs the
    njit instruction."""
    if not isinstance(params, MmadParams):
        raise invalid("Mmad: params must be a MmadParams")
    for name, a in (("dst", dst), ("fm", fm), ("filter", filter)):
        if not isinstance(a, np.ndarray) or a.ndim != 1:
            raise invalid(f"Mmad: {name} must be a 1-D numpy array (an L0A / L0B / L0C view)")
    if bias is None and not params.cmatrixInitVal and params.cmatrixSource:
        raise invalid("Mmad: cmatrixSource=True initialises C from the bias table; pass bias")
    m, n, k = params.m, params.n, params.k
    c0 = 64 if fm_type == DT_INT4 else 32 // fm.dtype.itemsize
    k1 = -(-k // c0)
    if params.kDirectionAlign and c0 == 8:
        k1 = 2 * -(-k // 16)
    m_rows = 1 if (m == 1 and not params.disableGemv) else 16 * -(-m // 16)
    per = 2 if fm_type == DT_INT4 else 1
    need = {"fm": (fm, m_rows * k1 * c0 // per if m_rows > 1 else k1 * c0 // per),
            "filter": (filter, k1 * 16 * -(-n // 16) * c0 // per),
            "dst": (dst, 256 * -(-m // 16) * -(-n // 16))}
    for name, (a, size) in need.items():
        if m and n and k and a.size < size:
            raise invalid(f"Mmad: {name} holds {a.size} elements, the {m}x{n}x{k} fractals need {size}")
    Mmad(dst, fm, filter, m, n, k, params.cmatrixInitVal, params.cmatrixSource, bias,
         fm_type, filter_type, params.kDirectionAlign, l0a_nz, params.disableGemv)


def nd_to_l0a(a, c0=None, *, layout="Zz"):
    """A [m, k] (ND) -> flat L0A image: ``"Zz"`` [M1, K1, 16, K0] (A2/A3) or ``"Nz"`` [K1, M1, 16, K0] (950)."""
    nz = nd_to_nz(a, c0)  # [K1, M1, 16, K0]
    if layout == "Nz":
        return nz.reshape(-1)
    if layout != "Zz":
        raise invalid(f"nd_to_l0a: layout={layout!r}; use 'Zz' or 'Nz'")
    return np.ascontiguousarray(nz.transpose(1, 0, 2, 3)).reshape(-1)


def nd_to_l0b(b, c0=None):
    """B [k, n] (ND) -> flat L0B image in ``Zn`` [K1, N1, 16, K0]: the NZ image of B^T (element B[k, n] at
    [k // K0, n // 16, n % 16, k % K0])."""
    return nd_to_nz(np.ascontiguousarray(np.asarray(b).T), c0).reshape(-1)


def l0c_to_nd(c, m, n):
    """Flat L0C image [N1, M1, 16, 16] -> C [m, n]."""
    m1 = -(-m // 16)
    n1 = -(-n // 16)
    return nz_to_nd(np.asarray(c)[: n1 * m1 * 256].reshape(n1, m1, 16, 16), m, n)
