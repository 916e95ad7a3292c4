"""Parallel element loops over the scalar codecs (1-D, contiguous; outputs preallocated by the caller).

Inputs are already validated by ``npu_emu.dtypes``: the modes are legal for the format and every array is
C-contiguous with the dtype named in each signature comment.
"""

import numpy as np
from numba import njit, prange

from npu_emu.dtypes import scalar as S
from npu_emu.device.jit_options import PARALLEL

_PAR = dict(parallel=PARALLEL, cache=True, error_model="numpy")


@njit(**_PAR)
def widen_f16(h, out):  # uint16 -> float32
    for i in prange(h.size):
        out[i] = S.f16_to_f32(h[i])


@njit(**_PAR)
def f64_to_f32_odd(x, out):  # float64 -> float32
    for i in prange(x.size):
        out[i] = S.f64_to_f32_odd(x[i])


@njit(**_PAR)
def to_f16(x, out, rmode, sat):  # float32 -> uint16
    for i in prange(x.size):
        out[i] = S.f32_to_f16(x[i], rmode, sat)


@njit(**_PAR)
def to_bf16(x, out, rmode, sat):  # float32 -> uint16
    for i in prange(x.size):
        out[i] = S.f32_to_bf16(x[i], rmode, sat)


@njit(**_PAR)
def encode_e4m3fn(x, out, sat, keep_nan):  # float32 -> uint8
    for i in prange(x.size):
        out[i] = S.encode_e4m3fn(x[i], sat, keep_nan)


@njit(**_PAR)
def encode_e5m2(x, out, sat, keep_nan):  # float32 -> uint8
    for i in prange(x.size):
        out[i] = S.encode_e5m2(x[i], sat, keep_nan)


@njit(**_PAR)
def encode_hif8(x, out, rmode, sat, hybrid_script):  # float32 -> uint8
    for i in prange(x.size):
        out[i] = S.encode_hif8(x[i], rmode, sat, hybrid_script)


@njit(**_PAR)
def encode_hif8_f16(h, out, rmode, sat, hybrid_script, f16_sub_raw):  # uint16 (fp16 bits) -> uint8
    for i in prange(h.size):
        out[i] = S.encode_hif8_f16(h[i], rmode, sat, hybrid_script, f16_sub_raw)


@njit(**_PAR)
def encode_fp4_e2m1(x, out, rmode, nan_sign):  # float32 -> uint8
    for i in prange(x.size):
        out[i] = S.encode_fp4_e2m1(x[i], rmode, nan_sign)


@njit(**_PAR)
def encode_fp4_e1m2(x, out, rmode, nan_sign):  # float32 -> uint8
    for i in prange(x.size):
        out[i] = S.encode_fp4_e1m2(x[i], rmode, nan_sign)


@njit(**_PAR)
def encode_e8m0(x, out):  # float32 -> uint8
    for i in prange(x.size):
        out[i] = S.encode_e8m0_f32(x[i])


@njit(**_PAR)
def decode_lut(codes, lut, out):  # uint8 codes, 256-entry float32 table -> float32
    for i in prange(codes.size):
        out[i] = lut[codes[i]]


def lut256(table):
    """A decode table extended to 256 entries so that any byte indexes it (FP4/FP6 codes are range-checked
    before the call; the extension only removes the possibility of an out-of-bounds read)."""
    if table.size == 256:
        return table
    return np.resize(table, 256).astype(np.float32)
