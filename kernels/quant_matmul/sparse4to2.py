"""Sparse4to2QuantMatmul (Atlas A2/A3): int8 x 4:2-sparse int8 weight -> bf16, and its host compressor.

Docs: docs/ops/sparse4to2_quant_matmul.md; sources ``hicann/ops-nn: matmul/sparse4to2quant_matmul/`` (``op_host/op_api/
aclnn_trans_sparse4to2_para.cpp`` for the compression format,
``op_host/op_api/aclnn_sparse4to2quant_matmul_weight_nz.cpp`` for the checks, ``op_host/op_tiling/sparse4to2quant_matmul_tiling.cpp`` for the base blocks,
``op_kernel/sparse4to2quant_matmul.h`` for the epilogue), read and re-expressed.

Flow: checks (CANN order and codes) -> tiling (base block 128 x 256, or 256 x 256 with a 256 KB L0C) ->
decompression of the NZ-placed kept values with the 4-bit codes (what the cube's sparse B path selects) -> the
exact int32 cube (accum.int_matmul) -> the per-core AIV epilogue ``f32(acc)·sparseWeightScale[n]·xScale[m] + bias``
-> bf16 (CAST_RINT). The epilogue is the V3 mix-path kernel (kernel.qbmm_epilogue_kernel): the same vector chain.

Public names (re-exported by the lead): ``OPS_EXPORTS``, ``ACLNN_EXPORTS``.
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from npu_emu.frontend.core import (
    Executor,
    Origin,
    Trace,
    as_array,
    check_memory,
    choice,
    get_workspace,
    resolve_dtype,
    run_executor,
    to_user,
    write_out,
)
from npu_emu.kernels.quant_matmul import accum, kernel
from npu_emu.kernels.quant_matmul import tiling as tiling_mod

OP = "Sparse4to2QuantMatmul"
CAST_OVERFLOW = ("inf", "saturate")
LAST_DIM_LIMIT = 65535
SPARSE_WEIGHT_RATIO = 0.625      # the tiling cost model's weight traffic relative to dense (informational)

# aclnnTransSparse4to2Para's table (hicann/ops-nn: matmul/sparse4to2quant_matmul/op_api/
# aclnn_trans_sparse4to2_para.cpp, SPARSE_MAP; docs/ops/sparse4to2_quant_matmul.md §2): mask
# p = (w0!=0)<<3 | (w1!=0)<<2 | (w2!=0)<<1 | (w3!=0) -> (first kept, second kept, 4-bit code c1 << 2 | c0);
# code -1 = more than two non-zeros. The cube reads the kept values back at positions c0 and c1 + 1, which are not
# always where they came from: for 0100 and 0010 the second kept value is a zero that decodes to position 1, so a
# decoder must add each kept value into its position (decompress), never overwrite.
_SPARSE_MAP = np.array([
    (0, 0, 0b0000),   # 0000: two zeros; positions 0, 1
    (0, 3, 0b1000),   # 0001: positions 0, 3
    (2, 3, 0b0010),   # 0010: positions 2, 1 (the kept w3 = 0 lands on position 1)
    (2, 3, 0b1010),   # 0011: positions 2, 3
    (1, 2, 0b0001),   # 0100: positions 1, 1 (the kept w2 = 0 adds into position 1)
    (1, 3, 0b1001),   # 0101: positions 1, 3
    (1, 2, 0b0101),   # 0110: positions 1, 2
    (0, 0, -1),       # 0111
    (0, 1, 0b0000),   # 1000: positions 0, 1
    (0, 3, 0b1000),   # 1001: positions 0, 3
    (0, 2, 0b0100),   # 1010: positions 0, 2
    (0, 0, -1),       # 1011
    (0, 1, 0b0000),   # 1100: positions 0, 1
    (0, 0, -1), (0, 0, -1), (0, 0, -1),
], np.int16)


def _cdiv(a, b):
    return -(-a // b)


def storage_dims(n, k):
    """(sparse storage dims, index storage dims) of a dense (n, k) weight (docs/ops/sparse4to2_quant_matmul.md §2)."""
    k1, n1 = _cdiv(k, 64), _cdiv(n, 16)
    return (k1, n1, 16, 32), (k1, n1, 16, 8)


def k_half(k):
    """The view width of the compressed weight: align8(k) / 2."""
    return _cdiv(k, 8) * 4


# --------------------------------------------------------------------------------------------------------------
# compression (aclnnTransSparse4to2Para) and its inverse
# --------------------------------------------------------------------------------------------------------------

def trans_sparse4to2_para(weight):
    """Dense int8 weight (n, k) -> (sparse_weight, index): the host compressor aclnnTransSparse4to2Para.

    ``sparse_weight``: int8 FRACTAL_NZ storage (⌈k/64⌉, ⌈n/16⌉, 16, 32) of the kept values (view (n, align8(k)/2));
    ``index``: uint8 (⌈k/64⌉, ⌈n/16⌉, 16, 8), one byte per 8 weights, first group's code in the low nibble.
    Every group of 4 consecutive weights along k must hold at most 2 non-zeros (161002 otherwise).
    """
    origin = Origin()
    w = as_array(weight, "weight", origin=origin)
    if w.dtype != np.int8:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"trans_sparse4to2_para: weight must be INT8, got {w.dtype}")
    if w.ndim != 2:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"trans_sparse4to2_para: weight must be 2-D (n, k), got shape "
                                                  f"{w.shape}")
    n, k = w.shape
    if n == 0 or k == 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"trans_sparse4to2_para: weight {w.shape} is empty")
    (k1, n1, _, _), _ = storage_dims(n, k)
    n16 = n1 * 16
    pad = np.zeros((n16, k1 * 64), np.int8)
    pad[:n, :k] = w
    groups = pad.reshape(n16, k1 * 16, 4)
    nz = groups != 0
    mask = (nz[..., 0].astype(np.int16) << 3) | (nz[..., 1] << 2) | (nz[..., 2] << 1) | nz[..., 3]
    first, second, code = (_SPARSE_MAP[mask, j] for j in range(3))
    bad = np.argwhere(code[:n] < 0)
    if bad.size:
        r, g = (int(v) for v in bad[0])
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"trans_sparse4to2_para: Data of weight not satisfy 50% sparsity rate: row {r}, k {4 * g}.."
                         f"{4 * g + 3} holds {int(nz[r, g].sum())} non-zeros {groups[r, g].tolist()} "
                         f"({bad.shape[0]} such groups); keep at most 2 non-zeros in every 4 consecutive weights")
    code = code.astype(np.uint8)
    kept = np.stack([np.take_along_axis(groups, first[..., None].astype(np.intp), -1)[..., 0],
                     np.take_along_axis(groups, second[..., None].astype(np.intp), -1)[..., 0]],
                    axis=-1)                                                             # (n16, k1*16, 2)
    pairs = code.reshape(n16, k1 * 8, 2)
    idx = (pairs[..., 1] << 4) | pairs[..., 0]                                           # (n16, k1*8)
    sparse = kept.reshape(n16, k1, 32).transpose(1, 0, 2).reshape(k1, n1, 16, 32)
    index = idx.reshape(n16, k1, 8).transpose(1, 0, 2).reshape(k1, n1, 16, 8)
    return to_user(np.ascontiguousarray(sparse), origin), to_user(np.ascontiguousarray(index.astype(np.uint8)),
                                                                  origin)


def decompress(sparse, index, n, k):
    """NZ kept values + index -> the dense (n, k) weight the cube's sparse path multiplies
    (docs/ops/sparse4to2_quant_matmul.md §2 decode): each kept value is multiplied with the activation at its
    decoded position, so a position that two kept values name gets their sum (int16: exact for any codes)."""
    k1, n1 = sparse.shape[0], sparse.shape[1]
    n16 = n1 * 16
    kept = sparse.reshape(k1, n16, 32).transpose(1, 0, 2).reshape(n16, k1 * 16, 2)
    idx = index.reshape(k1, n16, 8).transpose(1, 0, 2).reshape(n16, k1 * 8)
    code = np.stack([idx & 0x0F, idx >> 4], axis=-1).reshape(n16, k1 * 16)
    pos0 = (code & 3).astype(np.intp)
    pos1 = ((code >> 2) + 1).astype(np.intp)
    dense = np.zeros((n16, k1 * 16, 4), np.int16)
    second = np.zeros_like(dense)
    np.put_along_axis(dense, pos0[..., None], kept[..., 0:1], -1)
    np.put_along_axis(second, pos1[..., None], kept[..., 1:2], -1)
    dense += second
    return dense.reshape(n16, k1 * 64)[:n, :k]


def _check_codes(index, n, k):
    """Emulator-added: a second field of 3 would name position 4, outside the group of 4 (the compressor never
    writes it; what the cube does with it is not documented)."""
    k1 = index.shape[0]
    idx = index.reshape(k1, -1, 8)[:, :n, :]                       # rows past n are padding, never read
    codes = np.stack([idx & 0x0F, idx >> 4], axis=-1).reshape(k1, n, 16)
    bad = (codes >> 2) == 3
    if bad.any():
        kb, r, g = (int(v) for v in np.argwhere(bad)[0])
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"{OP}: index code 0b{int(codes[kb, r, g]):04b} for row {r}, k {(kb * 16 + g) * 4} is not "
                         f"one aclnnTransSparse4to2Para produces (bits 3..2 = 3 would name position 4); "
                         f"build the index with trans_sparse4to2_para (emulator-added check)")


# --------------------------------------------------------------------------------------------------------------
# checks (aclnn_sparse4to2quant_matmul_weight_nz.cpp, docs/ops/sparse4to2_quant_matmul.md §5)
# --------------------------------------------------------------------------------------------------------------

@dataclass
class _Args:
    x: np.ndarray
    sparse: np.ndarray        # NZ storage
    sparse_view: tuple        # (n, k_half)
    index: np.ndarray
    x_scale: np.ndarray
    w_scale: np.ndarray
    bias: np.ndarray
    out_dtype: str
    out_shape: tuple


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, f"{OP}: {msg}")


def _sparse_storage(sw, name, origin):
    """sparseWeight: an NzWeight (storage + view shape) or its bare 4-D FRACTAL_NZ storage -> (storage, view)."""
    from npu_emu.kernels.quant_matmul.api import NzWeight

    if isinstance(sw, NzWeight):
        return as_array(sw.storage, name, origin=origin), tuple(sw.shape)
    arr = as_array(sw, name, origin=origin)
    if arr.ndim != 4:
        raise _bad(f"the format of sparseWeight must be FRACTAL_NZ: pass the 4-D storage (⌈k/64⌉, ⌈n/16⌉, 16, 32) "
                   f"trans_sparse4to2_para returns (or an NzWeight), got an ND array of shape {arr.shape}")
    return arr, None


def check(x, sparse_weight, index, x_scale, sparse_weight_scale, bias, out_dtype, out_shape, soc, origin=None,
          out=True):
    """The aclnn checks in CANN's order (docs/ops/sparse4to2_quant_matmul.md §5). ``out``: whether an out tensor was
    passed (the aclnn API's own null check sits between index and xScale)."""
    for t, nm in ((x, "x"), (sparse_weight, "sparseWeight"), (index, "index"), (out, "out"), (x_scale, "xScale"),
                  (sparse_weight_scale, "sparseWeightScale")):
        if t is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{OP}: {nm} is a null tensor; pass an array")
    xa = as_array(x, "x", origin=origin)
    sw, view = _sparse_storage(sparse_weight, "sparseWeight", origin)
    ia = as_array(index, "index", origin=origin)
    xs = as_array(x_scale, "xScale", origin=origin)
    ws = as_array(sparse_weight_scale, "sparseWeightScale", origin=origin)
    ba = None if bias is None else as_array(bias, "bias", origin=origin)
    # dtypes
    for arr, nm, want in ((xa, "x", "int8"), (sw, "sparseWeight", "int8"), (ia, "index", "uint8"),
                          (xs, "xScale", "float32"), (ws, "sparseWeightScale", "float32")):
        got = resolve_dtype(arr.dtype, nm)
        if got != want:
            raise _bad(f"the dtype of {nm} must be {want.upper()}, got {got.upper()}")
    if ba is not None and resolve_dtype(ba.dtype, "bias") != "bfloat16":
        raise _bad(f"the dtype of bias must be BFLOAT16, got {resolve_dtype(ba.dtype, 'bias').upper()}")
    if out_dtype != "bfloat16":
        raise _bad(f"the dtype of out must be BFLOAT16, got {out_dtype.upper()}")
    # dims
    if xa.ndim != 2:
        raise _bad(f"x must be 2-D (m, k), got shape {xa.shape}")
    if ia.ndim < 2:
        raise _bad(f"index must have at least 2 dims (the 4-D storage trans_sparse4to2_para returns), got {ia.shape}")
    for arr, nm in ((xs, "xScale"), (ws, "sparseWeightScale")) + (((ba, "bias"),) if ba is not None else ()):
        if arr.ndim != 1:
            raise _bad(f"{nm} must be 1-D, got shape {arr.shape}")
    if out_shape is not None and len(out_shape) != 2:
        raise _bad(f"out must be 2-D (m, n), got shape {out_shape}")
    m, k = xa.shape
    n = ws.shape[0] if view is None else view[0]
    kh = k_half(k) if view is None else view[1]
    if view is not None and len(view) != 2:
        raise _bad(f"sparseWeight's view must be 2-D (n, k/2), got {view}")
    # shapes
    if _cdiv(k, 8) * 8 != 2 * kh:
        raise _bad(f"align8(k of x) = {_cdiv(k, 8) * 8} must equal 2 x the k of sparseWeight ({kh})")
    if k > LAST_DIM_LIMIT or kh > LAST_DIM_LIMIT or n > LAST_DIM_LIMIT:
        raise _bad(f"the last dims must be <= {LAST_DIM_LIMIT} (k {k}, n {n})")
    want_sw, want_idx = storage_dims(n, 2 * kh)
    if tuple(sw.shape) != want_sw:
        raise _bad(f"sparseWeight storage {sw.shape} does not match n = {n}, k = {k}: FRACTAL_NZ storage must be "
                   f"{want_sw} (⌈k/64⌉, ⌈n/16⌉, 16, 32)")
    if ia.size != int(np.prod(want_idx)) or ia.shape[-1] != 8:
        raise _bad(f"index shape {ia.shape} does not match n = {n}, k = {k}: must be {want_idx}")
    if xs.shape != (m,):
        raise _bad(f"the shape of xScale must be ({m},), got {xs.shape}")
    if ws.shape != (n,):
        raise _bad(f"the shape of sparseWeightScale must be ({n},), got {ws.shape}")
    if ba is not None and ba.shape != (n,):
        raise _bad(f"the shape of bias must be ({n},), got {ba.shape}")
    if out_shape is not None and tuple(out_shape) != (m, n):
        raise _bad(f"the shape of out must be ({m}, {n}), got {tuple(out_shape)}")
    # CheckEmptyTensor comes after the dtype, format and shape checks (CheckParams in
    # hicann/ops-nn: matmul/sparse4to2quant_matmul/op_host/op_api/aclnn_sparse4to2quant_matmul_weight_nz.cpp)
    if xa.size == 0 or sw.size == 0 or n == 0:
        raise _bad(f"empty tensors are not supported: x {xa.shape}, sparseWeight view ({n}, {kh})")
    if platforms.get(soc).npu_arch != 2201:
        raise _bad(f"{OP} is only supported on Atlas A2/A3 (ascend910b*, ascend910_93), not {soc} "
                   f"(emulator wording: the op is not registered there)")
    ia = ia.reshape(want_idx)
    _check_codes(ia, n, k)
    return _Args(xa, sw, (n, kh), ia, xs, ws, ba, out_dtype, (m, n))


# --------------------------------------------------------------------------------------------------------------
# tiling and compute
# --------------------------------------------------------------------------------------------------------------

def sparse4to2_tiling(m, n, k, soc, core_num=None):
    """Base block from sparse4to2quant_matmul_tiling.cpp's candidates: 128 x 256 (baseK 128 bytes of int8), or
    256 x 256 with baseK 64 when the L0C is 256 KB. Carried in the V3 tiling struct the shared epilogue kernel
    reads (an npu-emu simplification: the Sparse4to2 TilingData struct itself is not reproduced)."""
    plat = platforms.get(soc)
    l0c = plat.l0c_bytes if plat.is_known("l0c_bytes") else 128 * 1024
    bm, bn, bk = (256, 256, 64) if l0c >= 256 * 1024 else (128, 256, 128)
    shape = tiling_mod.MatmulShape(m, n, k, a_dtype="int8", b_dtype="int8")
    tr = tiling_mod.quant_matmul_tiling(shape, soc=soc, core_num=core_num, base_m=min(bm, m), base_n=min(bn, n),
                                        base_k=bk)
    notes = tuple(tr.notes) + (f"{OP} base block {bm} x {bn} x {bk} (clipped to the shape); the op's own "
                               f"TilingData struct and its ubCalcN search are not reproduced; weight traffic "
                               f"ratio {SPARSE_WEIGHT_RATIO}",)
    return tiling_mod.with_overrides(tr, notes=notes)


def _compute(a, soc, cast_overflow, core_num, validate=True):
    from npu_emu.kernels.quant_matmul.api import Switches, _launch_epilogue

    m, n = a.out_shape
    k = a.x.shape[1]
    check_memory(m * n * 6 + n * k * 2 + m * k, f"{OP} output, workspace and dense weight")
    dense = decompress(a.sparse, a.index, n, k)                     # (n, k): the cube's selected B operand
    acc = accum.int_matmul(a.x, dense.T)
    tr = sparse4to2_tiling(m, n, k, soc, core_num)
    sw = Switches(soc=soc, cast_overflow=cast_overflow, validate=validate)
    bias = np.empty((0, 0), np.float32) if a.bias is None else \
        np.ascontiguousarray(a.bias.astype(np.float32).reshape(1, n))
    y8 = np.empty(m * n * 2, np.uint8)
    report = _launch_epilogue(tr, acc, None, sw, a.w_scale, a.x_scale, np.empty((0, 0), np.int32), bias,
                              np.empty(0, np.int32), y8, kernel.OUT_BF16)
    import ml_dtypes

    y = y8.view(ml_dtypes.bfloat16).reshape(m, n)
    trace = Trace(op=OP, soc=soc, tiling_data=tr.tiling.fields(), tiling_data_bytes=tr.tiling.to_bytes(),
                  block_dim=tr.block_dim, workspace_size=tr.workspace_size, ub_bytes_per_core=tr.ub_size,
                  gm_overrun=list(report.overruns) if report is not None else [], routed_op=OP,
                  quant_mode="K-C sparse 4:2",
                  notes=list(tr.notes) + ["weight decompressed with the 4-bit codes; exact int32 cube; AIV epilogue "
                                          "f32(acc)*sparseWeightScale[n]*xScale[m] + bias -> bf16 CAST_RINT"])
    return y, trace


def sparse4to2_quant_matmul(x, sparse_weight, index, x_scale, sparse_weight_scale, bias=None, *,
                            soc="ascend910b2", cast_overflow="inf", core_num=None, validate=True, trace=False):
    """y (m, n) bf16 = bf16(f32(f32(f32(acc)·sparse_weight_scale[n])·x_scale[m]) + bias[n]), acc = x @ Wᵀ exact.

    ``sparse_weight`` / ``index``: what :func:`trans_sparse4to2_para` returns (or an NzWeight with view (n, k/2)).
    Switches: ``soc`` (A2/A3 only), ``cast_overflow`` ("inf" / "saturate"), ``core_num``, ``trace``.
    """
    origin = Origin()
    co = choice(cast_overflow, "cast_overflow", CAST_OVERFLOW)
    platforms.get(soc)
    a = check(x, sparse_weight, index, x_scale, sparse_weight_scale, bias, "bfloat16", None, soc, origin)
    y, tr = _compute(a, soc, co, core_num, validate)
    y = to_user(y, origin)
    return (y, tr) if trace else y


def aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize(x, sparseWeight, index, xScale, sparseWeightScale,
                                                       biasOptional, out, *, soc="ascend910b2",
                                                       cast_overflow="inf", core_num=None):
    """-> (status, workspace_size, executor). sparseWeight: the FRACTAL_NZ storage (or an NzWeight)."""

    def build():
        co = choice(cast_overflow, "cast_overflow", CAST_OVERFLOW)
        o = None if out is None else as_array(out, "out")
        a = check(x, sparseWeight, index, xScale, sparseWeightScale, biasOptional,
                  None if o is None else resolve_dtype(o.dtype, "out dtype"), None if o is None else tuple(o.shape),
                  soc, out=o)
        ws = sparse4to2_tiling(a.out_shape[0], a.out_shape[1], a.x.shape[1], soc, core_num).workspace_size

        def run():
            y, _ = _compute(a, soc, co, core_num)
            write_out(out, y)

        return Executor("aclnnSparse4to2QuantMatmulWeightNz", run, ws)

    return get_workspace("aclnnSparse4to2QuantMatmulWeightNz", build)


def aclnnSparse4to2QuantMatmulWeightNz(workspace, workspace_size, executor, stream=None):
    return run_executor(executor, workspace_size, "aclnnSparse4to2QuantMatmulWeightNz")


def aclnnTransSparse4to2Para(weight, shape):
    """The host compressor in aclnn form: dense int8 ``weight`` and its ``shape`` [n, k] -> (status,
    sparseWeight, sparseWeightDims, index, indexDims); the arrays are None unless status is 0 (CANN mallocs them
    for the caller). One phase: no workspace, no executor."""
    try:
        if weight is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, "aclnnTransSparse4to2Para: weight is a null pointer")
        dims = tuple(int(d) for d in (shape if shape is not None else ()))
        w = as_array(weight, "weight")
        if len(dims) != 2 or int(np.prod(dims)) != w.size:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"aclnnTransSparse4to2Para: shape {list(dims)} must be [n, k] "
                                                      f"with n * k = the weight's {w.size} elements")
        sparse, index = trans_sparse4to2_para(np.ascontiguousarray(w).reshape(dims))
    except AclnnError as e:
        return e.status, None, None, None, None
    return 0, sparse, list(sparse.shape), index, list(index.shape)


OPS_EXPORTS = ["trans_sparse4to2_para", "sparse4to2_quant_matmul"]
ACLNN_EXPORTS = ["aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize", "aclnnSparse4to2QuantMatmulWeightNz",
                 "aclnnTransSparse4to2Para"]
