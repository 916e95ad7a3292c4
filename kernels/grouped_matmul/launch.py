"""Host side of a GroupedMatmul launch (docs/ops/grouped_matmul.md §6, §7): the group entries from the group list,
the cube's L0C values per group (kernels/quant_matmul/accum.py: exact int32, or the float accumulation models),
and the per-core epilogue kernel (kernel.py) over the groups' output blocks.
"""

from dataclasses import replace

import numpy as np

from npu_emu.device.launch import MAX_BLOCK_DIM, checked_access, launch
from npu_emu.device.read_only import read_only
from npu_emu.device.specialize import load
from npu_emu.device.validate import AccessPattern
from npu_emu.dtypes import scalar
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.kernels.grouped_matmul import tiling as tiling_mod
from npu_emu.kernels.quant_matmul import accum
from npu_emu.kernels.quant_matmul import kernel as qmm_kernel

OUT_CODES = qmm_kernel.OUT_CODES
# the epilogue's cfg: quant_matmul's fields, then the Exp / Div models of the activation (kernel.py ACT)
CFG_EXP_MODEL, CFG_DIV_MODEL, GMM_CFG_LEN = qmm_kernel.CFG_LEN, qmm_kernel.CFG_LEN + 1, qmm_kernel.CFG_LEN + 2


def entries(group_list, group_list_type, num_groups, m_x):
    """(weight index, first row, rows) arrays of the groups the kernel visits (GetSplitValueFromGroupList, the
    sparse [e, 2] walk of GMMGroupMSparseProcess). Inputs already checked: rows >= 0, total <= m_x."""
    gl = np.asarray(group_list, dtype=np.int64)
    if group_list_type == 2:
        idx, ms = [], []
        for e in range(gl.shape[0]):
            if gl[e, 1] <= 0:
                break
            idx.append(int(gl[e, 0]))
            ms.append(int(gl[e, 1]))
        w = np.array(idx, np.int64)
        m = np.array(ms, np.int64)
    else:
        g = min(num_groups, gl.shape[0])
        m = gl[:g].copy()
        if group_list_type == 0 and g > 1:
            m[1:] -= gl[:g - 1]                           # (np.diff and np.concatenate cost 10 us a call)
        w = np.arange(g, dtype=np.int64)
    row = np.zeros(m.size, np.int64)
    np.cumsum(m[:-1], out=row[1:])
    return w, row, m


def check_int32(tr, ent, args, m_x, n, validate=True):
    """The int32-out path (the cube's FixPipe writes y): its walk checked like the epilogue's, before the cube runs."""
    if not validate:
        return None
    bufs = [("acc_i", m_x * n, np.int32), ("y", covered_rows(ent) * n * 4, np.uint8)]
    return validate_launch(tr, ent, args, "acc_i", bufs, 4, validate)


def int_cube(x, weight_nd, ent, acc):
    """The int32 L0C value of every computed row: acc[rows of g] = x[rows of g] @ weight[g] exactly
    (accum.int_matmul_groups, whose value does not depend on the block split: K is never split across cores)."""
    w_idx, row, m = ent
    accum.int_matmul_groups(x, weight_nd, [(int(w), int(r), int(mm)) for w, r, mm in zip(w_idx, row, m)], acc)


def float_cube(x64, weight64, ent, acc, sig, float_accum, base_k, bias, x32=None, w32=None):
    """The fp32 L0C value of every computed row under ``float_accum`` (accum.float_matmul): the cube of a plain
    bf16 / fp16 matmul, the bias (fp32 values) as the L0C start value."""
    w_idx, row, m = ent
    for g in range(w_idx.size):
        if m[g] > 0:
            r0, r1 = int(row[g]), int(row[g] + m[g])
            gi = int(w_idx[g])
            b = None if bias is None else bias[gi:gi + 1]
            acc[r0:r1] = accum.float_matmul(x64[r0:r1], weight64[gi], sig, sig, float_accum=float_accum,
                                            base_k=base_k, bias=b,
                                            a32=None if x32 is None else x32[r0:r1],
                                            b32=None if w32 is None else w32[gi])


def _align16(v):
    return -(-v // 16) * 16


def walk_array(td, vec_m=None, diag=tiling_mod.THRESHOLD_DIM_M):
    """The walk constants the kernel reads, from the tiling data alone (a GMMTilingData or its numba namedtuple):
    singleM = baseM, singleN (baseN when 0), baseN, vecBaseM (``vec_m``; by default from ubCalSize), coreNum and
    n = nList[0] (the row stride of y and of the L0C workspace)."""
    from npu_emu.kernels.grouped_matmul import kernel as k

    base, cube = td.gmmBaseParams, td.mmTilingData
    single_m, base_n = int(cube.baseM), int(cube.baseN)
    single_n = int(base.singleN) if base.singleN > 0 else base_n
    if vec_m is None:
        vec_m = vec_base_m(td)
    walk = np.zeros(k.W_LEN, np.int64)
    walk[k.W_SINGLE_M] = single_m
    walk[k.W_SINGLE_N] = single_n
    walk[k.W_BASE_N] = base_n
    walk[k.W_VEC_M] = max(1, min(vec_m, single_m))
    walk[k.W_CORES] = int(base.coreNum)
    walk[k.W_DIAG] = diag
    walk[k.W_N] = int(td.gmmArray.nList[0])
    return walk


def vec_base_m(td):
    """VectorTilingCalc: vecBaseM = ubCalSize / AlignUp(baseN, 16) (before the min with the block's rows)."""
    base_n = int(td.mmTilingData.baseN)
    cal = int(td.gmmBaseParams.ubCalSize)
    if cal == 0:
        return int(td.mmTilingData.baseM)
    return max(1, cal // _align16(base_n))


# --------------------------------------------------------------------------------------------------------------
# user tiling and the access pattern (what npu_emu.device.validate checks before anything runs)
# --------------------------------------------------------------------------------------------------------------

def user_tiling(value, host_tr, args, mode, nz):
    """A caller's GMMTilingData (instance, dict of its fields or packed bytes) in place of the host's: the fields the
    access pattern cannot show are checked here (AclnnError 561002 naming each), the rest by :func:`gmm_access`."""
    if isinstance(value, dict):                              # nested dicts (GMMTilingData.fields()) -> the structs
        nested = {"gmmBaseParams": tiling_mod.GMMBaseParams, "gmmArray": tiling_mod.GMMArray,
                  "mmTilingData": tiling_mod.TCubeTiling}
        value = {k: nested[k].coerce(v) if k in nested and isinstance(v, dict) else v for k, v in value.items()}
    td = tiling_mod.GMMTilingData.coerce(value)
    base, arr, cube = td.gmmBaseParams, td.gmmArray, td.mmTilingData
    e, k, n = args.w_shape
    errs = []
    if base.groupNum != e:
        errs.append(f"groupNum = {base.groupNum} but weight has {e} groups")
    if not 1 <= base.coreNum <= MAX_BLOCK_DIM:
        errs.append(f"coreNum = {base.coreNum}; use 1 .. {MAX_BLOCK_DIM} cube cores")
    if min(cube.baseM, cube.baseN, cube.baseK) < 1:
        errs.append(f"baseM / baseN / baseK = {cube.baseM} / {cube.baseN} / {cube.baseK}; all must be positive")
    if cube.baseM % 16 or cube.baseN % 16:
        errs.append(f"baseM / baseN = {cube.baseM} / {cube.baseN}; the cube's fractal needs multiples of 16")
    if base.singleN and base.singleN % max(1, cube.baseN):
        errs.append(f"singleN = {base.singleN} is not a multiple of baseN = {cube.baseN}")
    if arr.kList[0] != k or cube.Ka != k or cube.Kb != k or cube.singleCoreK != k:
        errs.append(f"kList[0] / Ka / Kb / singleCoreK = {arr.kList[0]} / {cube.Ka} / {cube.Kb} / {cube.singleCoreK} "
                    f"but x and weight have K = {k} (GroupedMatmul never splits K)")
    if arr.mList[0] != -1:
        errs.append(f"mList[0] = {arr.mList[0]}; the split-M form takes m from the group list (mList[0] = -1)")
    if base.m != args.x_shape[0]:
        errs.append(f"m = {base.m} but x has {args.x_shape[0]} rows")
    if base.groupType != args.group_type or base.groupListType != args.group_list_type:
        errs.append(f"groupType / groupListType = {base.groupType} / {base.groupListType} but the call has "
                    f"{args.group_type} / {args.group_list_type}")
    if base.activeType != args.act_type:
        errs.append(f"activeType = {base.activeType} but the call has act_type {args.act_type}")
    if base.hasBias != int(args.bias_dtype is not None) or base.quantParam != int(args.pt_dtype is not None):
        errs.append(f"hasBias / quantParam = {base.hasBias} / {base.quantParam} but the call has "
                    f"{int(args.bias_dtype is not None)} / {int(args.pt_dtype is not None)}")
    if mode == "quant" and args.y_dtype != "int32" and base.ubCalSize < _align16(max(1, cube.baseN)):
        errs.append(f"ubCalSize = {base.ubCalSize} holds no row of baseN = {cube.baseN} (vecBaseM would be 0)")
    if errs:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "GroupedMatmul tiling rejected: " + "; ".join(errs))
    return replace(host_tr, tiling=td, block_dim=int(base.coreNum),
                                     notes=tuple(host_tr.notes) + ("user tiling",))


def ub_bytes(td, args):
    """UB of one core in the per-token / per-channel dequant (GMMQuantMixCoreCompute's queues): the scale queue
    (and the per-token one), double buffered, the in/out queues of one vector tile (vecBaseM x AlignUp(baseN, 16)
    elements, ``io`` bytes each) and the temporaries (ubRestBytes). 0 for int32, int8 and plain float out (the cube
    writes y through the FixPipe)."""
    if args.x_dtype != "int8" or args.y_dtype in ("int32", "int8"):
        return 0
    base, cube = td.gmmBaseParams, td.mmTilingData
    per_token = args.pt_dtype is not None
    ssize = 2 if args.scale_dtype == "bfloat16" else 4
    queues = (cube.baseN * ssize + (cube.baseM * 4 if per_token else 0)) * tiling_mod.QUEUE_DOUBLE_BUFFER
    # an activation takes the per-token UB division (GMMSetUbDivideBlkQuant), with or without per_token_scale
    io = (tiling_mod.UB_DYNAMIC_QUANT_IO_USED_BLOCK if per_token or args.act_type != 0
          else tiling_mod.UB_STATIC_QUANT_IO_USED_BLOCK)
    vec_m = min(vec_base_m(td), cube.baseM)
    return int(queues + io * vec_m * _align16(cube.baseN) + base.ubRestBytes)


def covered_rows(ent):
    _, row, m = ent
    return int(row[-1] + m[-1]) if m.size else 0


def gmm_access(tr, ent, args, acc_name, buffers, out_itemsize):
    # buffers: (name, size, dtype) of the kernel's GM arguments in order
    """AccessPattern of one GroupedMatmul launch, from the tiling data and the group sizes alone: per block of the
    round-robin walk (kernel.walk_blocks), its rows of the L0C workspace read and of y written (bytes); y is the
    groups' rows only (rows after the last group are not the kernel's), and every element of them must be written
    exactly once; the UB of :func:`ub_bytes` per core."""
    td = tr.tiling
    tab = block_table(tr, ent)
    single_m, single_n = int(td.mmTilingData.baseM), int(walk_array(td, 1)[1])
    n = int(td.gmmArray.nList[0])
    ap = AccessPattern(tr.block_dim)
    for name, size, dtype in buffers:
        ap.gm(name, size, dtype, output=(name == "y"))
    if tab.shape[0]:
        core, g, mi, ni = tab.T
        _, row, m = ent
        tile = np.zeros(core.size, np.int64)                  # the block's position in its core's walk
        order = np.argsort(core, kind="stable")
        first = np.searchsorted(core[order], core[order])
        tile[order] = np.arange(core.size) - first
        r0 = row[g] + mi * single_m
        rows = np.minimum(single_m, m[g] - mi * single_m)
        c0 = ni * single_n
        cols = np.minimum(single_n, n - c0)
        rows = np.maximum(rows, 0)
        rc, rt = np.repeat(core, rows), np.repeat(tile, rows)
        offs = np.arange(int(rows.sum())) - np.repeat(np.cumsum(rows) - rows, rows)
        start = (np.repeat(r0, rows) + offs) * n + np.repeat(c0, rows)
        stop = start + np.repeat(cols, rows)
        ap.read(acc_name, rc, rt, start, stop)
        ap.write("y", rc, rt, start * out_itemsize, stop * out_itemsize)
    ap.ub(np.arange(tr.block_dim), -1, ub_bytes(td, args))
    return ap


def epilogue_decl(args, mode, ent):
    """(name, size, dtype) of the epilogue kernel's GM arguments, from the call's shapes (what run_epilogue passes)."""
    g = ent[0].size
    m_x, n = args.x_shape[0], args.w_shape[2]
    quant = mode == "quant"
    itemsize = {"bfloat16": 2, "float16": 2, "float32": 4, "int32": 4, "int8": 1}[args.y_dtype]
    bias_int = quant and args.bias_dtype == "int32"
    bias_flt = quant and args.bias_dtype is not None and not bias_int
    return [("group_m", g, np.int64), ("group_row", g, np.int64), ("acc_i", m_x * n if quant else 0, np.int32),
            ("acc_f", 0 if quant else m_x * n, np.float32), ("scale", g * n if quant else 0, np.float32),
            ("pt", m_x if args.pt_dtype is not None else 0, np.float32), ("bias_i", g * n if bias_int else 0, np.int32),
            ("bias_f", g * n if bias_flt else 0, np.float32),
            ("off9", g * n if args.y_dtype == "int8" else 0, np.int32), ("cfg", GMM_CFG_LEN, np.int64),
            ("y", covered_rows(ent) * n * itemsize, np.uint8)]


def validate_launch(tr, ent, args, acc_name, buffers, out_itemsize, validate):
    """``buffers``: (name, array) or (name, size, dtype) in the kernel's argument order.

    The checked access of one launch (memoised per tiling, group sizes and buffer sizes); raises 561002 for a
    tiling whose walk leaves the buffers, writes an element twice, misses one or overflows the UB."""
    if not validate:
        return None
    decl = tuple((b[0], int(b[1].size), np.dtype(b[1].dtype)) if len(b) == 2 else (b[0], int(b[1]), np.dtype(b[2]))
                 for b in buffers)
    # the buffers flat, their numeric dtypes by their codes: a key of plain values (the memo converts each
    # np.dtype on its own: a third of a small call's time)
    flat = tuple(v for name, size, dt in decl for v in (name, size, dt.str))
    key = ("grouped_matmul", tr, ent[1].tobytes(), ent[2].tobytes(), flat, out_itemsize, args.x_dtype,
           args.y_dtype, args.scale_dtype, args.pt_dtype)
    return checked_access(key, lambda: gmm_access(tr, ent, args, acc_name, decl, out_itemsize),
                          ub_size=tr.ub_size, validate=True, what="gmm_epilogue_kernel tiling")


def gmm_epilogue(block_dim, td, ub_size, group_m, group_row, acc_i, acc_f, scale, pt, bias_i, bias_f, off9, cfg,
                 y8):
    """The launch entry (``launch`` calls it with the tiling data as a namedtuple): the copy of kernel.py for cfg's
    output type and accumulator and the tiling's activeType, on the walk that the tiling data gives."""
    sw = dict(OUT=int(cfg[qmm_kernel.CFG_OUT]), ACC_INT=int(cfg[qmm_kernel.CFG_ACC_INT]), RINT=1)
    act = int(td.gmmBaseParams.activeType)
    if act:
        sw.update(ACT=act, EXP_MODEL=int(cfg[CFG_EXP_MODEL]), DIV_MODEL=int(cfg[CFG_DIV_MODEL]))
    dev = load("npu_emu.kernels.grouped_matmul.kernel", **sw)
    dev.gmm_epilogue_kernel(walk_array(td), group_m, group_row, acc_i, acc_f, scale, pt, bias_i, bias_f, off9, cfg,
                            y8)


def run_epilogue(tr, ent, args, acc_i, acc_f, scale, pt, bias_i, bias_f, out_code, y, validate=True, off9=None,
                 exp_model=0, div_model=0):
    """The per-core epilogue over the groups' blocks, through ``npu_emu.device.launch`` with the access pattern.

    scale (G, N) fp32 or (G, 0); pt (M,) fp32 or empty; bias_i (G, N) int32 or (G, 0); bias_f (G, N) fp32 or
    (G, 0); off9 (G, N) int32 (int8 out: the words' int9 offsets) or None, all indexed by the weight index of each
    entry; y: the output array (rows of no group untouched); exp_model / div_model: the codes of the activation's
    Exp and Div (transcendental.EXP_MODELS, DIV_MODELS)."""
    w_idx, row, m = ent
    acc_int = acc_i.size > 0
    cfg = np.zeros(GMM_CFG_LEN, np.int64)
    cfg[qmm_kernel.CFG_OUT] = out_code
    cfg[qmm_kernel.CFG_RMODE] = scalar.CAST_RINT
    cfg[qmm_kernel.CFG_ACC_INT] = int(acc_int)
    cfg[qmm_kernel.CFG_BIAS_ROWS] = 1
    cfg[CFG_EXP_MODEL] = exp_model
    cfg[CFG_DIV_MODEL] = div_model

    def per_entry(a, dt):
        a = np.asarray(a, dt)
        return np.ascontiguousarray(a[w_idx]) if a.shape[1] else np.zeros((w_idx.size, 0), dt)

    itemsize = y.dtype.itemsize
    y8 = y.reshape(-1).view(np.uint8)[:covered_rows(ent) * y.shape[1] * itemsize]
    bufs = [("group_m", np.ascontiguousarray(m, np.int64)), ("group_row", np.ascontiguousarray(row, np.int64)),
            ("acc_i", acc_i.reshape(-1)), ("acc_f", acc_f.reshape(-1)), ("scale", per_entry(scale, np.float32)),
            ("pt", np.array(pt, np.float32, copy=True).reshape(-1)), ("bias_i", per_entry(bias_i, np.int32)),
            ("bias_f", per_entry(bias_f, np.float32)),
            ("off9", per_entry(np.zeros((1, 0), np.int32) if off9 is None else off9, np.int32)), ("cfg", cfg),
            ("y", y8)]
    bufs = [(name, b if name == "y" else read_only(b)) for name, b in bufs]
    access = validate_launch(tr, ent, args, "acc_i" if acc_int else "acc_f", bufs, itemsize, validate)
    return launch(gmm_epilogue, tr.block_dim, tr.tiling, *[b for _, b in bufs], ub_size=tr.ub_size, access=access,
                  validate=validate, work=4 * int(m.sum()) * y.shape[1])


def block_table(tr, ent, n=None):
    """Every visited block as int64 rows (core, entry, mIdx, nIdx), from the tiling data and the group sizes
    (``n``: the tiling's nList[0] unless given)."""
    from npu_emu.kernels.grouped_matmul import kernel as k

    walk = walk_array(tr.tiling, 1)
    if n is not None:
        walk[k.W_N] = n
    _, _, m = ent
    single_m, single_n, n = int(walk[k.W_SINGLE_M]), int(walk[k.W_SINGLE_N]), int(walk[k.W_N])
    total = sum(-(-int(v) // single_m) * -(-n // single_n) for v in m if v > 0)
    out = np.zeros((total, 4), np.int64)
    got = k.walk_blocks(walk, np.ascontiguousarray(m, dtype=np.int64), out)
    return out[:got]
