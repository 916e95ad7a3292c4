"""Host side of a SwiGlu launch: the access pattern from the tiling data, the swish table, the launch.

The access pattern reads the same fields as the kernel (tile walk of glu_tiling_kernel.hpp), one range per tile
row, so a wrong baseRowLen / baseColLen shows up as a gap, an overlap or an access out of bounds before the kernel
runs (npu_emu.launch).
"""

import numpy as np

from npu_emu.device import memo
from npu_emu.ascendc.constants import DT_BF16, DT_FLOAT16
from npu_emu.kernels.swiglu import kernel as K
from npu_emu.kernels.swiglu.tiling import ITEMSIZE, kernel_tiling, ub_bytes
from npu_emu.device.jit_options import is_contended
from npu_emu.device.launch import checked_access, launch
from npu_emu.device.read_only import read_only
from npu_emu.device.validate import AccessPattern

_GM_DTYPE = {"float32": np.float32, "float16": np.uint16, "bfloat16": np.uint16}


def contended_work():
    """The ``work`` to hand :func:`~npu_emu.device.launch.launch`: 0 (the calling thread alone) while other processes
    hold the cores (``is_contended``), else None (the GM bytes decide). These kernels run one parallel region whose
    cores get equal shares: a worker whose core another process holds finishes last, so the region took longer on
    two threads than on one (asv, load average 6.4 on 2 cores: DequantSwigluQuant [8192, 4096] int32 258 against
    165 ms; SwiGLU likewise, docs/ops/swiglu.md §7). Shared by the SwiGLU and DequantSwigluQuant launches.."""
    return 0 if is_contended() else None


def tiling_problems(td):
    """Fields an access pattern cannot show: zero base lengths (the kernel would divide by zero)."""
    out = []
    if td.baseRowLen < 1 or td.baseColLen < 1:
        out.append(f"baseRowLen={td.baseRowLen}, baseColLen={td.baseColLen}: both must be >= 1")
    if td.rowLen < 1 or td.colLen < 1:
        out.append(f"rowLen={td.rowLen}, colLen={td.colLen}: both must be >= 1 (empty tensors launch no kernel)")
    return out


def swiglu_access(tr, dtype, x_size, y_size):
    """What the kernel touches: per tile, ``rows`` ranges of A, B and y; the UB the kernel's InitUbBuffer takes.
    ``x_size`` / ``y_size``: the GM tensors' element counts (a user tiling may not match them)."""
    td = tr.tiling
    bd = tr.block_dim
    ap = AccessPattern(bd)
    gdt = _GM_DTYPE[dtype]
    ap.gm("x", x_size, gdt)
    ap.gm("y", y_size, gdt, output=True)
    c = np.arange(bd, dtype=np.int64)
    ap.ub(c, -1, ub_bytes(td, dtype))
    if td.baseRowLen < 1 or td.baseColLen < 1:
        return ap
    kt = kernel_tiling(td, ITEMSIZE[dtype])
    t = np.arange(kt.totalTileNum, dtype=np.int64)
    core = t % bd
    tile = t // bd
    r = t // kt.colTileNum
    cc = t % kt.colTileNum
    rows = np.where(r < kt.baseRowTileNum, td.baseRowLen, kt.tailRowLen)
    cols = np.where(cc < kt.baseColTileNum, td.baseColLen, kt.tailColLen)
    rep = np.repeat(np.arange(t.size), rows)
    i = np.arange(rep.size) - np.repeat(np.cumsum(rows) - rows, rows)
    grow = r[rep] * td.baseRowLen + i
    gcol = cc[rep] * td.baseColLen
    n = cols[rep]
    a0 = grow * 2 * td.colLen + gcol
    ap.read("x", core[rep], tile[rep], a0, a0 + n)
    ap.read("x", core[rep], tile[rep], a0 + td.colLen, a0 + td.colLen + n)
    y0 = grow * td.colLen + gcol
    ap.write("y", core[rep], tile[rep], y0, y0 + n)
    return ap


def _table(dtype, exp_model, div_model):
    table = np.empty(65536, np.float32)
    K.swish_table(table, DT_BF16 if dtype == "bfloat16" else DT_FLOAT16, exp_model, div_model)
    return table


def swish_table(dtype, exp_model, div_model):
    """The 65,536-entry A / (1 + Exp(-A)) table of a 16-bit dtype under the given models (computed once)."""
    return memo.cached(("swiglu.table", dtype, int(exp_model), int(div_model)),
                       lambda: _table(dtype, int(exp_model), int(div_model)))


def run_swiglu(x_flat, y_flat, tr, dtype, *, exp_model, div_model, faithful=False, validate=True):
    """Launch SwiGlu on the flat GM buffers (16-bit formats as uint16 bits). Returns nothing: y is written."""
    td = tr.tiling
    em, dm = int(exp_model), int(div_model)
    if dtype == "float32":
        kern = K.swiglu_faithful_f32 if faithful else K.swiglu_fused_f32

        def kernel(block_dim, tdn, ub_size, x_gm, y_gm):
            kern(block_dim, tdn, ub_size, em, dm, x_gm, y_gm)
    elif faithful:
        kern = K.swiglu_faithful_bf16 if dtype == "bfloat16" else K.swiglu_faithful_f16

        def kernel(block_dim, tdn, ub_size, x_gm, y_gm):
            kern(block_dim, tdn, ub_size, em, dm, x_gm, y_gm)
    else:
        kern = K.swiglu_fused_bf16 if dtype == "bfloat16" else K.swiglu_fused_f16
        table = read_only(swish_table(dtype, em, dm))

        def kernel(block_dim, tdn, ub_size, x_gm, y_gm):
            kern(block_dim, tdn, ub_size, table, x_gm, y_gm)

    kernel.__name__ = kern.__name__
    xs, ys = x_flat.size, y_flat.size
    checked = checked_access(("swiglu", tr, dtype, xs, ys),
                             lambda: swiglu_access(tr, dtype, xs, ys), ub_size=tr.ub_size,
                             validate=validate, what=f"{kern.__name__} tiling", problems=lambda: tiling_problems(td))
    launch(kernel, tr.block_dim, td, read_only(x_flat), y_flat, ub_size=tr.ub_size, access=checked, validate=False,
           work=contended_work())
