"""Host launch of the DynamicQuant kernels: tiling in, outputs allocated here (never inside njit), one kernel call.

Compile cost: one specialised copy of kernel.py per (faithful, x format, output format, symmetry, smooth or not,
chunked row walk (keys 6/8) or not), see kernel.device; the tiling key and the other switches are run-time
arguments of that copy.
"""

import numpy as np

from npu_emu.ascendc.constants import DT_BF16, DT_FLOAT16, DT_INT4, DT_INT8
from npu_emu.ascendc.transcendental import DIV_MODELS  # the div_model names every op shares
from npu_emu.device.jit_options import serial_below
from npu_emu.device.read_only import read_only
from npu_emu.errors import AclnnError, ACLNN_ERR_PARAM_INVALID
from npu_emu.kernels.dynamic_quant import kernel as _kernel_mod



def div_model_code(div_model):
    try:
        return DIV_MODELS[div_model]
    except KeyError:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"div_model={div_model!r}; use one of {sorted(DIV_MODELS)}") from None


def run(x_bits, x_dtype, smooth_bits, group, result, *, int4=False, asymmetric=False, div_model="ieee",
        faithful=False, y=None, scale=None, offset=None):
    """Run the kernel of ``result`` (a TilingResult) on x bits [rows, rowLen] (uint16, C-contiguous).

    ``smooth_bits``: uint16 [rowLen] or [groups, rowLen] or None; ``group``: int array or None. Returns
    (y bytes [rows, rowLen] int8-as-uint8 or [rows, rowLen // 2] packed int4, scale [rows], offset [rows] or None);
    ``y`` / ``scale`` / ``offset`` may be given preallocated (uint8 / float32, right sizes).
    """
    td = result.tiling
    rows = x_bits.shape[0] if x_bits.ndim == 2 else x_bits.size // max(td.rowLen, 1)
    L = td.rowLen
    xdt = DT_BF16 if x_dtype == "bfloat16" else DT_FLOAT16
    ycols = L // 2 if int4 else L
    if y is None:
        y = np.empty((rows, ycols), np.uint8)
    if scale is None:
        scale = np.empty(rows, np.float32)
    if asymmetric and offset is None:
        offset = np.empty(rows, np.float32)
    if rows == 0 or L == 0:
        return y, scale, offset
    has_smooth = smooth_bits is not None
    dev = _kernel_mod.device(faithful, xdt, DT_INT4 if int4 else DT_INT8, asymmetric, has_smooth,
                             int(result.tiling_key) in (6, 8), key=int(result.tiling_key))
    sm = np.ascontiguousarray(smooth_bits, np.uint16).reshape(-1) if has_smooth else np.zeros(1, np.uint16)
    gr = (np.ascontiguousarray(group, np.int64).reshape(-1) if group is not None and len(group)
          else np.zeros(1, np.int64))
    off = offset if asymmetric else np.zeros(1, np.float32)
    # on the calling thread when the work is small or other processes hold the cores (npu_emu.device.launch)
    with serial_below(x_bits.nbytes + y.nbytes):
        dev.dynamic_quant_kernel(read_only(x_bits.reshape(-1)), read_only(sm), read_only(gr), y.reshape(-1),
                                 scale.reshape(-1), off.reshape(-1), td.to_numba(), np.int64(result.tiling_key),
                                 has_smooth, np.int64(div_model_code(div_model)))
    return y, scale, offset


def run_arch35(x_bits, x_dtype, smooth_bits, group, result, *, y_dt, asymmetric=False, div_model="ieee",
               faithful=False, y=None):
    """Ascend 950 (arch35): run template ``result.tiling_key`` on x bits [rows, rowLen] (uint16).

    ``y_dt``: DT_INT8 / DT_INT4 / DT_HIFLOAT8 / DT_FLOAT8_E5M2 / DT_FLOAT8_E4M3FN. Returns (y bytes [rows, rowLen]
    or [rows, rowLen // 2] for int4, scale, offset or None); scale / offset have one element per row, or one for
    the pertensor templates; ``y`` may be given preallocated (uint8, right size). The pertensor templates and
    template 12 run in two launches of the kernel (phase 1: every core's partial max / min into the workspace;
    phase 2: the fold and y), which is the kernel's SyncAll."""
    from npu_emu.kernels.dynamic_quant import kernel_arch35 as k35, tiling_arch35 as t35

    td = result.tiling
    tpl = int(result.tiling_key)
    rows = x_bits.shape[0]
    L = td.rowLen
    ycols = L // 2 if y_dt == DT_INT4 else L
    if y is None:
        y = np.empty((rows, ycols), np.uint8)
    per_channel = tpl in t35.PER_CHANNEL
    ns = 1 if tpl in t35.PER_TENSOR else (td.totalBatchLen * L if per_channel else rows)
    scale = np.empty(ns, np.float32)
    offset = np.empty(ns, np.float32) if asymmetric else None
    if rows == 0 or L == 0:
        return y, scale, offset
    has_smooth = smooth_bits is not None
    xdt = DT_BF16 if x_dtype == "bfloat16" else DT_FLOAT16
    dev = k35.device(faithful, xdt, y_dt, asymmetric, has_smooth, per_channel)
    sm = np.ascontiguousarray(smooth_bits, np.uint16).reshape(-1) if has_smooth else np.zeros(1, np.uint16)
    gr = (np.ascontiguousarray(group, np.int64).reshape(-1) if group is not None and len(group)
          else np.zeros(1, np.int64))
    off = offset if asymmetric else np.zeros(1, np.float32)
    # the user workspace: one max (and one min) per core; split-m: per (batch, row block, column), the partials its
    # blocks SetAtomicMax into the [batch, column] workspace (folded in phase 2: max is order-free)
    nws = td.totalBatchLen * td.mBlockNum * L if tpl == t35.TPL_PER_CHANNEL_SPLIT_M else td.coreNum
    wsx = np.empty(nws, np.float32)
    wsn = np.empty(nws, np.float32)
    tdn = td.to_numba()
    dm = np.int64(div_model_code(div_model))
    phases = (1, 2) if tpl in t35.PER_TENSOR + (t35.TPL_PERTEN_LARGE_MULTICORE, t35.TPL_PER_CHANNEL_SPLIT_M) else (0,)
    with serial_below(x_bits.nbytes + y.nbytes):
        for ph in phases:
            dev.dynamic_quant_arch35_kernel(read_only(x_bits.reshape(-1)), read_only(sm), read_only(gr),
                                            y.reshape(-1), scale, off, wsx, wsn, tdn, np.int64(tpl), dm,
                                            np.int64(ph))
    return y, scale, offset
