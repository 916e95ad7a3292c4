"""Host side of the DynamicMxQuantWithDualAxis launch: the switch vectors of both axes, the GM access pattern the
tiling implies (validated before the kernel runs), and the launch itself. Device code: kernel.py."""

import numpy as np

from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import kernel, tiling as tiling_mod
from npu_emu.kernels.mx_quant.common import ALG_OCP, ALG_RANGE, ALG_RCEIL, ALG_RCEIL_NOSUB, P_ALG, P_DST, D_E2M1, \
    make_params
from npu_emu.kernels.mx_quant.kernel import M_FAITHFUL, M_FAST
from npu_emu.kernels.mx_quant.launch import _expand_rows, mode_of
from npu_emu.kernels.mx_quant.tiling import inv_dst_type_max
from npu_emu.device.launch import checked_access, launch
from npu_emu.device.read_only import read_only
from npu_emu.device.validate import AccessPattern
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError


def scale_alg_of(scale_alg, y_dtype, dst_type_max):
    """(ALG_* rule, dst_type_max class, fl32 R) of ComputeAll's scale template: 0 OCP; 1 cuBLAS with R = fl32(1/448)
    or fl32(1/57344) (invDtypeMax_, FP8 only); 2 the bump rule for dst_type_max 0 / 6 (class 1) or 7 (class 2),
    else ComputeScaleDynamicCustom with the tiling's invDstTypeMax and no subnormal round-up."""
    if scale_alg == 0:
        return ALG_OCP, 0, 0.0
    if scale_alg == 1:
        return ALG_RCEIL, 0, inv_dst_type_max(y_dtype, 0.0)
    d = float(np.float32(dst_type_max))
    if d in (0.0, 6.0):
        return ALG_RANGE, 1, 0.0
    if d == 7.0:
        return ALG_RANGE, 2, 0.0
    return ALG_RCEIL_NOSUB, 0, float(np.float32(1.0 / d))


def make_axis_params(*, x_dtype, y_dtype, round_mode, scale_alg, dst_type_max, signed_zero, ftz, fp4_nibble_order,
                     faithful=False):
    """(p1, p2, r32): the mx_quant switch vectors of axis -1 and axis -2. Both: no tiny-block flush (legacy OCP
    reciprocal 2^127; the non-dynamic zero tests), the integer maximum (NaN propagates). y1 multiplies BF16 inputs in
    BF16 (ComputeY1ToFP8, ComputeYBF16ToFP4); y2 in FP32 for FP8 (ComputeY2ToFP8 casts x first) and in BF16 for FP4
    (ComputeYBF16ToFP4)."""
    alg, cls, r32 = scale_alg_of(scale_alg, y_dtype, dst_type_max)
    common = dict(x_dtype=x_dtype, y_dtype=y_dtype, round_mode=round_mode, alg=alg, dtm_class=cls, legacy=True,
                  signed_zero=signed_zero, ftz=ftz, nan_in_max="propagate", fp4_nibble_order=fp4_nibble_order,
                  dynamic=False, faithful=faithful)
    p1 = make_params(bf16_mul=True, **common)
    p2 = make_params(bf16_mul=y_dtype in tiling_mod.FP4, **common)
    return p1, p2, r32


def dual_access(td, fp4):
    """AccessPattern of the kernel (x, y1, mxscale1, y2, mxscale2): every task's rows of x read, its y rows, scale1
    row pieces and scale2 pair rows written; every output byte exactly once."""
    ntask = td.dim0 * td.blockCountPerBatch
    used = td.usedCoreNum
    cores = np.arange(used, dtype=np.int64)
    count = np.where(cores < td.headCoreNum, td.blockPerHeadCore, td.blockPerTailCore).astype(np.int64)
    first = np.where(cores < td.headCoreNum, cores * td.blockPerHeadCore,
                     td.headCoreNum * td.blockPerHeadCore + (cores - td.headCoreNum) * td.blockPerTailCore)
    core = np.repeat(cores, count)
    t = np.concatenate([np.arange(f, f + c) for f, c in zip(first, count)]) if ntask else np.empty(0, np.int64)
    tile = t - np.repeat(first, count)
    m, n, bs, w = td.dimNeg2, td.dimNeg1, td.blockSize, td.blockW
    cb = t % td.dimNeg1BlockNum
    rb = (t // td.dimNeg1BlockNum) % td.dimNeg2SplitBlockNum
    batch = t // td.blockCountPerBatch
    ncols = np.where(cb == td.dimNeg1BlockNum - 1, td.dimNeg1Tail, w)
    nrows = np.where(rb == td.dimNeg2SplitBlockNum - 1, td.dimNeg2Tail, td.splitBlockH)
    c0 = cb * w
    r0 = rb * td.splitBlockH
    total = td.dim0 * m * n
    s1c, s2p = td.scale1ColCountPerBatch, td.scale2RowCountPerBatch // 2
    ap = AccessPattern(used)
    ap.gm("x", total, np.uint16)
    ap.gm("y1", total // 2 if fp4 else total, np.uint8, output=True)
    ap.gm("mxscale1", td.dim0 * m * s1c, np.uint8, output=True)
    ap.gm("y2", total // 2 if fp4 else total, np.uint8, output=True)
    ap.gm("mxscale2", td.dim0 * s2p * n * 2, np.uint8, output=True)
    x0 = (batch * m + r0) * n + c0
    ap.read("x", *_expand_rows(core, tile, x0, nrows, n, ncols))
    half = 2 if fp4 else 1
    for name in ("y1", "y2"):
        ap.write(name, *_expand_rows(core, tile, x0 // half, nrows, n // half, ncols // half))
    nblk = -(-ncols // bs)
    ap.write("mxscale1", *_expand_rows(core, tile, (batch * m + r0) * s1c + c0 // bs, nrows, s1c, nblk + nblk % 2))
    pairs = -(-nrows // (2 * bs))
    ap.write("mxscale2", *_expand_rows(core, tile, ((batch * s2p + r0 // (2 * bs)) * n + c0) * 2, pairs, 2 * n,
                                       2 * ncols))
    ap.ub(cores, -1, tiling_mod.ub_bytes(td.splitBlockH, td.blockW, td.blockSize))
    return ap


def fused_walk(p1, mode):
    """Whether a call takes the fused one-pass walk (kernel._fused_slice): M_FAST with OCP scales."""
    return mode == M_FAST and p1[P_ALG] == ALG_OCP


def run(x_bits, y1, s1, y2, s2, tr, p1, p2, r32, *, merge=None, fused=None, validate=True):
    """Launch the kernel on uint16 x words and uint8 output buffers -> the GM overrun records (none expected).
    ``merge``: how many of a core's consecutive tasks of one row block run as one segment (kernel._core; None:
    a whole row block, the fast walk); 1 walks the tasks one by one as the device does. ``fused``: take the fused
    walk (None: when fused_walk says it applies; False: the per-axis mx_quant helpers). The values are the same."""
    td = tr.tiling
    if td.blockSize != tiling_mod.BLOCK_SIZE:     # the kernel copies are compiled for 32-element blocks only
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"tiling blockSize={td.blockSize}: the MX block of "
                                                       f"DynamicMxQuantWithDualAxis is {tiling_mod.BLOCK_SIZE}")
    fp4 = p1[P_DST] >= D_E2M1
    mode = mode_of(p1)
    if mode == M_FAITHFUL:
        merge, fused = 1, False             # the staged path runs the device's tasks one by one
    merge = td.dimNeg1BlockNum if merge is None else int(merge)
    access = checked_access(("dynamic_mx_quant_with_dual_axis", tr, bool(fp4)), lambda: dual_access(td, fp4),
                            ub_size=tr.ub_size, what="dynamic_mx_quant_with_dual_axis tiling") if validate else None
    dev = kernel.device(int(p1[P_DST]), mode, fused=fused_walk(p1, mode) if fused is None else bool(fused),
                        ocp=bool(p1[P_ALG] == ALG_OCP))
    p1, p2 = read_only(p1), read_only(p2)

    def dynamic_mx_quant_with_dual_axis(block_dim, tdn, ub_size, x_gm, y1_gm, s1_gm, y2_gm, s2_gm):
        dev.dynamic_mx_quant_with_dual_axis_kernel(block_dim, tdn, np.int64(merge), x_gm, y1_gm, s1_gm, y2_gm, s2_gm,
                                                   p1, p2, np.float32(r32), np.float32(0.0))

    report = launch(dynamic_mx_quant_with_dual_axis, tr.block_dim, td, read_only(x_bits), y1, s1, y2, s2,
                    ub_size=tr.ub_size, access=access, validate=validate)
    return list(report.overruns) if report is not None else []
