"""FRACTAL_NZ layout helpers (docs/conventions.md §7 glossary; docs/ops/data_copy_dequant.md NZ section).

A matrix [R, C] is stored as [ceil(C / c0), ceil(R / 16), 16, c0]: fractals of 16 rows x c0 columns, ordered
down the rows first. c0 = 32 bytes / element size (16 for fp16, 8 for fp32, 32 for int8/fp8); the L0C
accumulator uses 16 x 16 fractals whatever its element size. Padding is zero-filled.
"""

import numpy as np

FRACTAL_ROWS = 16


def c0_for(dtype):
    """Fractal width for a dtype under the 32-byte rule."""
    itemsize = np.dtype(dtype).itemsize
    return max(1, 32 // itemsize)


def nd_to_nz(mat, c0=None, rows_per_fractal=FRACTAL_ROWS):
    """[..., R, C] -> [..., ceil(C/c0), ceil(R/16), 16, c0] (zero padded)."""
    mat = np.asarray(mat)
    if mat.ndim < 2:
        raise ValueError("nd_to_nz needs a matrix (ndim >= 2)")
    if c0 is None:
        c0 = c0_for(mat.dtype)
    *batch, r, c = mat.shape
    n1 = -(-c // c0)
    m1 = -(-r // rows_per_fractal)
    padded = np.zeros((*batch, m1 * rows_per_fractal, n1 * c0), dtype=mat.dtype)
    padded[..., :r, :c] = mat
    blocks = padded.reshape(*batch, m1, rows_per_fractal, n1, c0)
    nb = len(batch)
    order = list(range(nb)) + [nb + 2, nb + 0, nb + 1, nb + 3]
    return np.ascontiguousarray(blocks.transpose(order))


def nz_to_nd(nz, rows, cols):
    """[..., N1, M1, 16, c0] -> [..., rows, cols] (drops the padding)."""
    nz = np.asarray(nz)
    if nz.ndim < 4:
        raise ValueError("nz_to_nd needs an array of shape [..., N1, M1, 16, c0]")
    *batch, n1, m1, r0, c0 = nz.shape
    if rows > m1 * r0 or cols > n1 * c0:
        raise ValueError(f"NZ array {nz.shape} cannot hold a {rows} x {cols} matrix")
    nb = len(batch)
    order = list(range(nb)) + [nb + 1, nb + 2, nb + 0, nb + 3]
    full = nz.transpose(order).reshape(*batch, m1 * r0, n1 * c0)
    return np.ascontiguousarray(full[..., :rows, :cols])
