"""GroupedMatmul's A16W8-MSD antiquant kernel (docs/ops/grouped_matmul.md §11.5): the host side — the tiling values
the kernel reads, the pre-processing walk of its vector cores, and the three stages of msd_kernel.py.

Sources: ``hicann/ops-transformer: gmm/grouped_matmul/op_host/op_tiling/grouped_matmul_tiling.cpp`` (``Init``:
``isA16W8Msd_``, ``mmDType_`` int8; ``CalMMTiling``: baseN ``BEST_BASEN_MSD`` = 512 for N >= 2048, baseM against
2 x maxM; ``DivideUbAndSetWorkspaceAntiquant``: the UB left after ``baseM / 2 x AlignUp(aicNum, 8)`` floats;
``GMMSetUbDivideBlkAntiquant`` / ``GMMCalUbSize``: ``UB_A16W8_MSD_BLOCK_NUM`` 30, ``UB_A16W8_MSD_BLOCK_ALIGN`` 512;
coreNum = aicNum) and ``op_kernel/grouped_matmul_antiquant_a16w8_msd.h`` (``GMMA16W8MSDProcess::SetMNConfigs`` /
``Process`` / ``PreProcess``, ``GMMA16W8MSDCompute::PreProcess`` / ``PreProcessTiling``).

Which core computes which rows and K chunk changes no value except one: the row sum of x is a sum of per-core
partial sums (ReduceSum of each core's K chunk, then ReduceSum of the row's slots), so the K split of every
pre-processing piece is reproduced exactly (:func:`preprocess_pieces`). The cube's and the post-processing's N / M
tiles, singleN and the UB row batches decide only who computes an element.
"""

import numpy as np

from npu_emu.device import platforms
from npu_emu.device.specialize import load
from npu_emu.device.read_only import read_only as ro
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import check_memory, resolve_dtype
from npu_emu.kernels.grouped_matmul import checks, launch, tiling as tiling_mod
from npu_emu.kernels.quant_matmul import accum

A16W8_MSD_STEP = 2                       # two int8 parts of x
A16W8_MSD_PREPROCESS_MAX_GROUP = 12
ALIGN_UB_BASE_K = 128
BEST_BASEN = 256
BEST_BASEN_MSD = 512
MAX_BASEM = 256
UB_A16W8_MSD_BLOCK_NUM = 30
UB_A16W8_MSD_BLOCK_ALIGN = 512


def _cdiv(a, b):
    return -(-a // b)


def msd_tiling(m, k, n, soc="ascend910b2", core_num=None):
    """The tiling values the MSD kernel reads: dict(coreNum, baseM, baseN, baseK, ubCalSize, singleN)."""
    plat = platforms.get(soc)
    aic = int(core_num) if core_num is not None else plat.GetCoreNumAic()
    if aic < 1:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"core_num={aic}: need at least one cube core")
    l0a, l0b, l0c, ub, _ = tiling_mod.buffer_sizes(plat)
    base_n = BEST_BASEN_MSD if n >= 2048 else BEST_BASEN          # (no transposed weight reaches this kernel here)
    base_k = (l0b // 2 // base_n) & ~15                            # int8 cube: 1 byte an element
    base_m = min(l0a // 2 // base_k, l0c // (base_n * 4))
    base_m = ((A16W8_MSD_STEP * m + 15) & ~15) if base_m > A16W8_MSD_STEP * m else base_m & ~15
    base_m = min(base_m, MAX_BASEM)
    aligned = (aic + 7) & ~7
    ub_left = ub - (base_m // A16W8_MSD_STEP) * aligned * 4
    ub_cal = ub_left // UB_A16W8_MSD_BLOCK_NUM // UB_A16W8_MSD_BLOCK_ALIGN * UB_A16W8_MSD_BLOCK_ALIGN
    if base_m == 0 or ub_cal <= 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"A16W8-MSD tiling: baseM {base_m} / ubCalSize {ub_cal} cannot be 0")
    # SetMNConfigs: singleN of the cube / post-processing blocks
    single_n = 1024 * _cdiv(n // 4, 1024) if n >= 2048 and n // k >= 2 else base_n
    single_n = min(single_n, ub_cal)
    return dict(coreNum=aic, baseM=base_m, baseN=base_n, baseK=base_k, ubCalSize=ub_cal, singleN=single_n)


def _piece(m, cur_core, k, off):
    """PreProcessTiling: (row0, m, baseK, blockDimK, blockDimM, singleM) of one piece run by ``cur_core`` cores."""
    if m < cur_core:
        base_k = _cdiv(k // cur_core, ALIGN_UB_BASE_K) * ALIGN_UB_BASE_K
        dim_k = _cdiv(k, base_k)
        dim_m = cur_core // dim_k
    else:
        base_k, dim_k, dim_m = k, 1, cur_core
    single_m = _cdiv(m, dim_m)
    dim_m = _cdiv(m, single_m)
    return (off, m, base_k, dim_k, dim_m, single_m)


def _round_pieces(valid, max_m, core_num, k):
    """GMMA16W8MSDCompute::PreProcess: one round's groups cut into pieces of at most baseM / 2 rows, the cores
    shared in proportion to the rows (every piece at least one)."""
    split = sum(_cdiv(m, max_m) for _, m in valid)
    unalloc = core_num - split if split <= core_num else 0
    res_tok = sum(m for _, m in valid)
    out = []
    for off, m in valid:
        cur = m
        while cur > max_m:
            cc = _cdiv(unalloc * max_m, res_tok) + 1
            out.append(_piece(max_m, cc, k, off))
            unalloc -= cc - 1
            res_tok -= max_m
            cur -= max_m
            off += max_m
        cc = unalloc * cur // res_tok + 1
        out.append(_piece(cur, cc, k, off))
        unalloc -= cc - 1
        res_tok -= cur
    return out


def preprocess_pieces(ent, k, n, t):
    """GMMA16W8MSDProcess::Process / PreProcess: rounds of up to 12 non-empty groups, a round closed once its cube
    blocks (Ceil(2m, baseM) x Ceil(n, singleN) a group) reach coreNum from where the last round's left off.
    Returns the (P, 6) int64 pieces of msd_kernel.msd_preprocess_kernel."""
    _, rows, ms = ent
    core_num, single_m, single_n = t["coreNum"], t["baseM"], t["singleN"]
    num = ms.size
    pieces, pre_group, pre_count = [], 0, 0
    for g in range(num):
        if pre_group != g:
            continue
        valid = []
        while pre_count < core_num and len(valid) < A16W8_MSD_PREPROCESS_MAX_GROUP and pre_group < num:
            m, r0 = int(ms[pre_group]), int(rows[pre_group])
            pre_group += 1
            if m <= 0:
                continue
            valid.append((r0, m))
            pre_count += _cdiv(A16W8_MSD_STEP * m, single_m) * _cdiv(n, single_n)
        if valid:
            pieces += _round_pieces(valid, t["baseM"] // 2, core_num, k)
            pre_count %= core_num
    return np.array(pieces, np.int64).reshape(-1, 6)


def _err(msg):
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


class MsdSub:
    """One checked single-tensor split-M call of the MSD kernel (api.py's sub interface: args, ent, tr, mode, run)."""

    mode = "antiquant_msd"
    tr = None                      # no TilingResult / trace for this kernel yet

    def __init__(self, args, x, w, scale, offset, bias, ent, t):
        self.args, self.x, self.w, self.scale, self.offset, self.bias = args, x, w, scale, offset, bias
        self.ent, self.t = ent, t

    def run(self, y, float_accum, validate):
        if self.ent is None:
            return y
        run_msd(self.x, self.w, self.scale, self.offset, self.bias, self.ent, self.t, self.args.x_dtype,
                y.view(np.uint16))
        return y


def run_msd(x, w, scale, offset, bias, ent, t, x_name, y):
    """The three stages on every group's rows of ``y`` (uint16 bits, (M, N); other rows untouched)."""
    m, k = x.shape
    n = w.shape[2]
    bf = int(x_name == "bfloat16")
    xb = np.ascontiguousarray(x).view(np.uint16)
    pieces = preprocess_pieces(ent, k, n, t)
    n_sum = (t["coreNum"] + 7) & ~7
    check_memory(2 * m * k + 8 * m * n, "GroupedMatmul A16W8-MSD workspace")
    amax = np.zeros(m, np.float32)
    lsum = np.zeros((m, max(n_sum, t["coreNum"])), np.float32)
    a1 = np.zeros((m, k), np.int8)
    a2 = np.zeros((m, k), np.int8)
    dev = load("npu_emu.kernels.grouped_matmul.msd_kernel", BF16=bf, HAS_BIAS=int(bias is not None))
    dev.msd_preprocess_kernel(ro(xb), ro(pieces), amax, lsum, a1, a2)
    groups = [(int(g), int(r), int(mm)) for g, r, mm in zip(*ent)]
    c1 = np.zeros((m, n), np.int32)
    c2 = np.zeros((m, n), np.int32)
    accum.int_matmul_groups(a1, w, groups, c1)
    accum.int_matmul_groups(a2, w, groups, c2)
    if bias is None:
        bb = np.zeros((0, 0), np.float32 if bf else np.uint16)
    else:
        bb = np.ascontiguousarray(bias).astype(np.float32) if bf else np.ascontiguousarray(bias).view(np.uint16)
    gar = np.array(groups, np.int64).reshape(-1, 3)
    dev.msd_post_kernel(ro(c1), ro(c2), ro(amax), ro(lsum), n_sum, ro(gar),
                        ro(np.ascontiguousarray(scale).view(np.uint16)),
                        ro(np.ascontiguousarray(offset).view(np.uint16)), ro(bb), y)
    return y


def build(xs, ws, biases, gl, y_name, aqs, aqo, *, split_item, group_type, group_list_type, kw):
    """The MSD call (antiquant.check has run): the checks the cast-then-float-cube path runs on its dequantised call
    (checks.check, the group values), then one sub for api.py."""
    x, w = xs[0], ws[0]
    x_name = resolve_dtype(x.dtype)
    bias = None if biases is None or biases[0] is None else np.asarray(biases[0])
    glv = None if gl is None else np.asarray(gl)
    shape = lambda a: None if a is None else tuple(int(d) for d in a.shape)
    args = checks.GmmArgs(x_dtype=x_name, w_dtype=x_name, y_dtype=y_name, x_shape=shape(x), w_shape=shape(w),
                          bias_dtype=None if bias is None else resolve_dtype(bias.dtype), bias_shape=shape(bias),
                          gl_dtype=None if glv is None else resolve_dtype(glv.dtype), gl_shape=shape(glv),
                          split_item=split_item, group_type=group_type, group_list_type=group_list_type,
                          act_type=kw["act_type"], tuning_config=kw["tuning"])
    checks.check(args)
    e, k, n = w.shape
    checks.check_group_values(glv, group_list_type, e, x.shape[0])
    if group_list_type == 2:
        # its pre-processing reads the expert index (entry 2i) as a row count (docs/ops/grouped_matmul.md §11.4)
        _err("npu-emu does not implement the sparse group list (group_list_type 2) of the A16W8-MSD antiquant kernel "
             "(GMMA16W8MSDMSparseProcess), whose pre-processing reads the expert index as the row count "
             "(docs/ops/grouped_matmul.md §11.4); pass group_list_type 0 or 1")
    ent = t = None
    if x.shape[0]:
        t = msd_tiling(x.shape[0], k, n, kw["soc"], kw["core_num"])
        ent = launch.entries(glv, group_list_type, e, x.shape[0])
    sub = MsdSub(args, x, np.asarray(w).astype(np.int8, copy=False), np.asarray(aqs[0]), np.asarray(aqo[0]), bias,
                 ent, t)
    return [sub], (lambda ys: ys), [(x.shape[0], n)]
