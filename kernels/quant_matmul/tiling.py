"""Host tiling of QuantBatchMatmulV3: base blocks, core split and the TilingData struct (docs/ops/quant_matmul.md §10).

Struct: ``hicann/ops-nn: matmul/quant_batch_matmul_v3/op_kernel/quant_batch_matmul_v3_kernel_tiling_data.h``
(``QuantBatchMatmulV3TilingData`` = ``QuantBatchMatmulV3Params`` + ``TCubeTiling`` + ``L2cacheTileParam`` +
``SlidingWindowParam``; TCubeTiling from ``kernel_tiling/kernel_tiling.h``).

Base blocks: the Ascend 950 calculator ``matmul/quant_batch_matmul_v3/op_host/op_tiling/arch35/
base_block_calculator.cpp`` (``ComputeBaseBlockDefault``, ``ComputeBaseBlockPerblock``,
``AdjustBaseBlockDefault``, ``AdjustBaseBlockPerblock``/``Pertile``, ``TrySwapBaseMNForMxFalseTrue``), transcribed
here in our own words. Not reproduced (said in the trace notes): the MX load-balance search
(``OptimizeBaseBlockForLoadBalance``), the StreamK and iterbatch templates, and the A2 basic-tiling search
(``quant_batch_matmul_v3_basic_tiling.cpp``, a cost-model search over {64 .. 512}); ascend910b* use the same
calculator with the A2 figures. None of them changes a result: blocks own disjoint output tiles and every
value is computed in the same order whatever the split (tests prove it).

Block order: block ``i`` goes to core ``i % blockDim``; blocks are numbered batch by batch through the L2 tiles
(``mTileCntL2`` x ``nTileCntL2`` tiles of ``mTileBlock`` x ``nTileBlock`` blocks, tile rows in order, the tiles of
odd tile rows right to left: the serpentine of the per-block kernels), row-major inside a tile (``calOrder`` 0)
or column-major (1). QuantBatchMatmulV3 itself uses one L2 tile (1 x 1).
"""

from dataclasses import dataclass, field, replace

from numba import njit

from npu_emu.device import jit_options  # noqa: F401  (numba's cache lock, before the njit below is cached)
from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult

CUBE_BLOCK = 16
CUBE_REDUCE_BLOCK = 32        # bytes
L1_ALIGN_SIZE = 32            # bytes
L2_ALIGN_SIZE = 128           # bytes
MXFP_DIVISOR_SIZE = 64
BASIC_BLOCK_256 = 256
BASIC_BLOCK_128 = 128
PER_BLOCK_SIZE = 128
BASEK_LIMIT = 4095
# the 950 L0A size is not published (docs/device/platforms.md §3.2): the A2 value is assumed
L0A_PLACEHOLDER = 64 * 1024
_EPI_BYTES = 8                # UB bytes per element of the epilogue tile: the fp32 work tile + the cast result

_BITS = {"int4": 4, "float4_e2m1": 4, "float4_e1m2": 4}


@dataclass(frozen=True)
class QuantBatchMatmulV3Params(TilingData):
    batchA: int = 1
    batchB: int = 1
    batchC: int = 1
    batchA1: int = 1
    batchA2: int = 1
    batchA3: int = 1
    batchA4: int = 1
    batchB1: int = 1
    batchB2: int = 1
    batchB3: int = 1
    batchB4: int = 1
    batchC1: int = 1
    batchC2: int = 1
    batchC3: int = 1
    batchC4: int = 1
    singleCoreBatch: int = 1
    isPerTensor: int = 0
    isPertoken: int = 0
    isDoubleScale: int = 0
    biasThreeDim: int = 0
    ubCalcM: int = 0
    ubCalcN: int = 0
    needUbBuffer: int = 0
    realSingleCoreM: int = 0
    realSingleCoreN: int = 0
    biasDtype: int = 0
    ubSize: int = 0
    isMClash: int = 0
    isNClash: int = 0
    groupSizeM: int = 0
    groupSizeN: int = 0
    groupSizeK: int = 0

    _ctypes = ("uint32",) * 32


_TCUBE_FIELDS = (
    "usedCoreNum M N Ka Kb singleCoreM singleCoreN singleCoreK baseM baseN baseK depthA1 depthB1 stepM stepN isBias "
    "transLength iterateOrder shareMode shareL1Size shareL0CSize shareUbSize batchM batchN singleBatchM singleBatchN "
    "stepKa stepKb depthAL1CacheUB depthBL1CacheUB dbL0A dbL0B dbL0C ALayoutInfoB ALayoutInfoS ALayoutInfoN "
    "ALayoutInfoG ALayoutInfoD BLayoutInfoB BLayoutInfoS BLayoutInfoN BLayoutInfoG BLayoutInfoD CLayoutInfoB "
    "CLayoutInfoS1 CLayoutInfoN CLayoutInfoG CLayoutInfoS2 BatchNum mxTypePara").split()


def _tcube_cls():
    ns = {"__annotations__": {f: int for f in _TCUBE_FIELDS}, "_ctypes": ("int32",) * len(_TCUBE_FIELDS),
          "__doc__": "AscendC::tiling::TCubeTiling (kernel_tiling.h): 50 int32_t members.",
          "__module__": __name__, "__qualname__": "TCubeTiling"}
    for f in _TCUBE_FIELDS:
        ns[f] = 0
    return dataclass(frozen=True)(type("TCubeTiling", (TilingData,), ns))


TCubeTiling = _tcube_cls()


@dataclass(frozen=True)
class L2cacheTileParam(TilingData):
    mTileCntL2: int = 1
    nTileCntL2: int = 1
    mTileBlock: int = 0
    nTileBlock: int = 0
    calOrder: int = 0
    isBasicTiling: int = 0

    _ctypes = ("uint32",) * 6


@dataclass(frozen=True)
class SlidingWindowParam(TilingData):
    mTailTile: int = 0
    nTailTile: int = 0
    mBaseTailSplitCnt: int = 1
    nBaseTailSplitCnt: int = 1
    mTailMain: int = 0
    nTailMain: int = 0

    _ctypes = ("uint32",) * 6


@dataclass(frozen=True)
class QuantBatchMatmulV3TilingData(TilingData):
    """QuantBatchMatmulV3TilingData: 128 + 200 + 24 + 24 = 376 bytes (every member lands 8-byte aligned, so the
    ``alignas(8)`` of the C structs adds no padding)."""

    params: QuantBatchMatmulV3Params = field(default_factory=QuantBatchMatmulV3Params)
    matmulTiling: TCubeTiling = field(default_factory=TCubeTiling)
    tileL2cacheTiling: L2cacheTileParam = field(default_factory=L2cacheTileParam)
    adaptiveSlidingWin: SlidingWindowParam = field(default_factory=SlidingWindowParam)

    _ctypes = (QuantBatchMatmulV3Params, TCubeTiling, L2cacheTileParam, SlidingWindowParam)


# --------------------------------------------------------------------------------------------------------------
# the base-block calculator (arch35 base_block_calculator.cpp)
# --------------------------------------------------------------------------------------------------------------

def _cdiv(a, b):
    return a if b == 0 or a == 0 else -(-a // b)


def _calign(a, b):
    return _cdiv(a, b) * b


def _falign(a, b):
    return a // b * b if b else a


def elems(nbytes, dtype):
    """GetShapeWithDataType: how many elements of ``dtype`` fit ``nbytes``."""
    return nbytes * 8 // _BITS.get(dtype, 8)


@dataclass(frozen=True)
class MatmulShape:
    """What the tiling reads from the inputs."""

    _memo_by_value = True       # its own npu_emu.device.memo key: immutable fields (str, int, bool, tuples) compared by ==

    m: int
    n: int
    k: int
    batch: int = 1
    trans_a: bool = False
    trans_b: bool = False
    a_dtype: str = "int8"
    b_dtype: str = "int8"
    is_mx: bool = False
    perblock: bool = False
    gs_m: int = 1


class _Calc:
    def __init__(self, s, aic, l0a):
        self.s, self.aic, self.l0a = s, aic, l0a

    def m_align(self):
        return elems(L1_ALIGN_SIZE, self.s.a_dtype) if self.s.trans_a else CUBE_BLOCK

    def n_align(self, inner):
        return CUBE_BLOCK if self.s.trans_b else elems(inner, self.s.b_dtype)

    def k_align(self):
        return MXFP_DIVISOR_SIZE if self.s.is_mx else elems(CUBE_REDUCE_BLOCK, self.s.a_dtype)

    def default(self):
        s = self.s
        bm = _calign(min(s.m, BASIC_BLOCK_256), self.m_align())
        bn = _calign(min(s.n, BASIC_BLOCK_256), self.n_align(L1_ALIGN_SIZE))
        bk = _calign(min(elems(BASIC_BLOCK_128, s.a_dtype), s.k), self.k_align())
        return bm, bn, bk

    def perblock(self):
        s = self.s
        if s.m <= PER_BLOCK_SIZE or s.m % PER_BLOCK_SIZE:
            bm = _calign(s.m, self.m_align()) if s.gs_m == 1 and s.m < PER_BLOCK_SIZE else PER_BLOCK_SIZE
            bn = 256 if s.n % PER_BLOCK_SIZE == 0 else PER_BLOCK_SIZE
        else:
            bm, bn = 256, PER_BLOCK_SIZE
        return bm, bn, PER_BLOCK_SIZE

    def adjust_default(self, bm, bn, bk):
        s = self.s
        m_al = elems(L2_ALIGN_SIZE, s.a_dtype) if s.trans_a else CUBE_BLOCK
        n_al = self.n_align(L2_ALIGN_SIZE)
        k_al = elems(32, s.a_dtype) if (s.trans_a and not s.trans_b) else elems(L2_ALIGN_SIZE, s.a_dtype)
        if s.is_mx and (s.trans_a or not s.trans_b):
            k_al = elems(MXFP_DIVISOR_SIZE, s.a_dtype)
        m_max = _cdiv(s.m, m_al)
        n_max = _cdiv(s.n, n_al)
        cores = self.aic
        if m_max * n_max < cores and (s.trans_a or not s.trans_b):
            return bm, bn, bk
        m_core, n_core = _cdiv(s.m, bm), _cdiv(s.n, bn)
        if m_max < n_max or (m_max == n_max and n_al == CUBE_BLOCK):
            tm = _calign(_cdiv(s.m, m_core), m_al)
            m_core = _cdiv(s.m, tm)
            n_core = max(1, cores // m_core)
            tn = _calign(_cdiv(s.n, n_core), n_al)
        else:
            tn = _calign(_cdiv(s.n, n_core), n_al)
            n_core = _cdiv(s.n, tn)
            m_core = max(1, cores // n_core)
            tm = _calign(_cdiv(s.m, m_core), m_al)
        while tn >= tm * 2 and n_core < cores // 2 and tn != n_al:
            n_core *= 2
            m_core = max(1, cores // n_core)
            tm = _calign(_cdiv(s.m, m_core), m_al)
            tn = _calign(_cdiv(s.n, n_core), n_al)
            m_core, n_core = _cdiv(s.m, tm), _cdiv(s.n, tn)
        while tm >= tn * 2 and m_core < cores // 2 and tm != m_al:
            m_core *= 2
            n_core = max(1, cores // m_core)
            tm = _calign(_cdiv(s.m, m_core), m_al)
            tn = _calign(_cdiv(s.n, n_core), n_al)
            m_core, n_core = _cdiv(s.m, tm), _cdiv(s.n, tn)
        tm, tn = self._mx_swap(tm, tn)
        k_val = _calign(s.k, k_al)
        k_max = elems(self.l0a // 2, s.a_dtype) // max(tm, tn)
        if k_max >= k_al:
            bk = min(k_val, _falign(k_max, k_al))
            if bk > BASEK_LIMIT:
                bk = _calign(bk // 2, k_al)
            return tm, tn, bk
        return bm, bn, bk

    def _rounds(self, bm, bn):
        return _cdiv(self.s.batch * _cdiv(self.s.m, bm) * _cdiv(self.s.n, bn), self.aic)

    def _mx_swap(self, bm, bn):
        s = self.s
        if not s.is_mx or s.trans_a or not s.trans_b or bn % BASIC_BLOCK_128 == 0:
            return bm, bn
        sm, sn = bn, bm
        if self._rounds(sm, sn) != 1:
            return bm, bn
        cur_m, cur_n = _cdiv(s.m, bm), _cdiv(s.n, bn)
        sw_m, sw_n = _cdiv(s.m, sm), _cdiv(s.n, sn)
        score = lambda a, b: max(a, b) / min(a, b)
        better = score(sw_m, sw_n) + 1e-12 < score(cur_m, cur_n)
        friendly = abs(score(sw_m, sw_n) - score(cur_m, cur_n)) <= 1e-12 and sn % BASIC_BLOCK_128 == 0
        if sw_m * sw_n >= cur_m * cur_n and (better or friendly):
            return sm, _calign(sn, self.n_align(L2_ALIGN_SIZE))
        return bm, bn

    def adjust_perblock(self, bm, bn, bk):
        s = self.s
        cores = self.aic
        if s.gs_m == 1:
            return self._adjust_pertile(bm, bn, bk, cores)
        if bm == 256 and _cdiv(s.m, PER_BLOCK_SIZE) * _cdiv(s.n, bn) <= cores:
            bm = PER_BLOCK_SIZE
        elif bn == 256 and _cdiv(s.m, bm) * _cdiv(s.n, PER_BLOCK_SIZE) <= cores:
            bn = PER_BLOCK_SIZE
        return bm, bn, bk

    def _adjust_pertile(self, bm, bn, bk, cores):
        s = self.s
        m_al = elems(L2_ALIGN_SIZE, s.a_dtype) if s.trans_a else CUBE_BLOCK
        n_al = self.n_align(L2_ALIGN_SIZE)
        n_core = _cdiv(s.n, bn)
        m_core = max(1, cores // n_core)
        bm = _calign(_cdiv(s.m, m_core), m_al)
        m_core = _cdiv(s.m, bm)
        while bn // 2 >= n_al and m_core * _cdiv(s.n, bn // 2) <= cores:
            bn //= 2
        while bn > bm * 2 and bn // 2 >= n_al:
            tn = bn // 2
            tn_core = _cdiv(s.n, tn)
            if tn_core == 0 or tn_core > cores:
                break
            tm_core = max(1, cores // tn_core)
            tm = _calign(_cdiv(s.m, tm_core), m_al)
            if _cdiv(s.m, tm) * tn_core > cores:
                break
            bm, bn = tm, tn
        return bm, bn, bk

    def compute(self):
        if self.s.perblock:
            bm, bn, bk = self.perblock()
        else:
            bm, bn, bk = self.default()
        if self.s.batch * _cdiv(self.s.m, bm) * _cdiv(self.s.n, bn) < self.aic:
            if self.s.perblock:
                bm, bn, bk = self.adjust_perblock(bm, bn, bk)
            else:
                bm, bn, bk = self.adjust_default(bm, bn, bk)
        if bm == 0 or bn == 0 or bk == 0:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                             f"base block {bm} x {bn} x {bk}: baseM, baseN and baseK must be greater than 0")
        return bm, bn, bk


# --------------------------------------------------------------------------------------------------------------
# block order (shared by the host access pattern and the kernels)
# --------------------------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def block_coords(idx, m_cnt, n_cnt, m_tiles, n_tiles, m_tile_block, n_tile_block, cal_order):
    """Block number (within one batch) -> (m block, n block) through the L2 tiles (module docstring)."""
    seen = 0
    for tm in range(m_tiles):
        m_lo = tm * m_tile_block
        m_num = min(m_tile_block, m_cnt - m_lo)
        if m_num <= 0:
            break
        for j in range(n_tiles):
            tn = n_tiles - 1 - j if tm % 2 == 1 else j
            n_lo = tn * n_tile_block
            n_num = min(n_tile_block, n_cnt - n_lo)
            if n_num <= 0:
                continue
            cnt = m_num * n_num
            if idx < seen + cnt:
                q = idx - seen
                if cal_order == 0:
                    return m_lo + q // n_num, n_lo + q % n_num
                return m_lo + q % m_num, n_lo + q // m_num
            seen += cnt
    return -1, -1


# --------------------------------------------------------------------------------------------------------------
# the tiling function
# --------------------------------------------------------------------------------------------------------------

def _platform(soc, core_num):
    plat = platforms.get(soc)
    notes = []
    if core_num is not None:
        aic = int(core_num)
        notes.append(f"core_num={aic} cube cores (override)")
    else:
        aic = plat.GetCoreNumAic()
        if plat.placeholder_reason("cube_cores"):
            notes.append(f"AIC count {aic} is a placeholder for {plat.name}: {plat.placeholder_reason('cube_cores')}")
    if plat.is_known("l0a_bytes"):
        l0a = plat.l0a_bytes
    else:
        l0a = L0A_PLACEHOLDER
        notes.append(f"L0A size of {plat.name} is not published; the A2 value {L0A_PLACEHOLDER} is assumed")
    ub = plat.ub_size if plat.is_known("ub_size") else 262144
    sys_ws = plat.sys_workspace_size if plat.is_known("sys_workspace_size") else 16 * 1024 * 1024
    return plat, aic, l0a, ub, sys_ws, notes


def quant_matmul_tiling(shape, *, soc="ascend910b2", core_num=None, plan=None, bias_three_dim=False,
                        base_m=None, base_n=None, base_k=None, l2_tiles=None):
    """QuantBatchMatmulV3 host tiling for ``shape`` (a :class:`MatmulShape`) -> TilingResult.

    ``base_m``/``base_n``/``base_k`` and ``l2_tiles=(mTileCntL2, nTileCntL2, calOrder)`` override the computed
    values (an npu-emu extension used to prove that results do not depend on the split).
    """
    plat, aic, l0a, ub, sys_ws, notes = _platform(soc, core_num)
    if aic < 1:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"core_num={aic}: need at least one cube core")
    calc = _Calc(shape, aic, l0a)
    bm, bn, bk = calc.compute()
    bm = bm if base_m is None else int(base_m)
    bn = bn if base_n is None else int(base_n)
    bk = bk if base_k is None else int(base_k)
    if min(bm, bn, bk) < 1:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"base block {bm} x {bn} x {bk} must be positive")
    if plat.npu_arch == 2201:
        notes.append("A2 QuantBatchMatmulV3 basic-tiling search not reproduced: base blocks from the arch35 "
                     "calculator with the A2 core count and L0A size (no effect on values)")
    if shape.is_mx:
        notes.append("MX load-balance base-block search (OptimizeBaseBlockForLoadBalance) not reproduced")
    m_cnt, n_cnt = _cdiv(shape.m, bm), _cdiv(shape.n, bn)
    total = shape.batch * m_cnt * n_cnt
    block_dim = max(1, min(aic, total))
    m_tiles, n_tiles, order = (1, 1, 0) if l2_tiles is None else l2_tiles
    m_tb, n_tb = _cdiv(m_cnt, m_tiles), _cdiv(n_cnt, n_tiles)
    ub_n = bn
    ub_m = max(1, min(bm, ub // (_EPI_BYTES * ub_n)))
    p = plan
    params = QuantBatchMatmulV3Params(
        batchA=1, batchB=1, batchC=shape.batch, batchC4=shape.batch, singleCoreBatch=1,
        isPerTensor=int(bool(p and p.quant_mode in ("T-T", "T-T-doublescale"))),
        isPertoken=int(bool(p and p.quant_mode == "K-C")),
        isDoubleScale=int(bool(p and p.quant_mode.endswith("doublescale"))),
        biasThreeDim=int(bias_three_dim), ubCalcM=ub_m, ubCalcN=ub_n, needUbBuffer=int(bool(p and p.path == "mix")),
        realSingleCoreM=bm, realSingleCoreN=bn, ubSize=ub,
        groupSizeM=p.gs_m if p and p.quant_mode in ("MX", "B-B") else 0,
        groupSizeN=p.gs_n if p and p.quant_mode in ("MX", "B-B") else 0,
        groupSizeK=p.gs_k if p and p.quant_mode in ("MX", "B-B") else 0)
    cube = TCubeTiling(usedCoreNum=block_dim, M=shape.m, N=shape.n, Ka=shape.k, Kb=shape.k, singleCoreM=bm,
                       singleCoreN=bn, singleCoreK=shape.k, baseM=bm, baseN=bn, baseK=bk, depthA1=2, depthB1=2,
                       stepM=1, stepN=1, isBias=int(bool(p and p.bias_stage)), iterateOrder=0, stepKa=1, stepKb=1,
                       dbL0A=2, dbL0B=2, dbL0C=1, BatchNum=shape.batch, mxTypePara=int(shape.is_mx))
    l2 = L2cacheTileParam(mTileCntL2=m_tiles, nTileCntL2=n_tiles, mTileBlock=m_tb, nTileBlock=n_tb,
                          calOrder=order, isBasicTiling=1)
    td = QuantBatchMatmulV3TilingData(params=params, matmulTiling=cube, tileL2cacheTiling=l2)
    notes.append("tiling key and user workspace not reproduced (workspace = system workspace only)")
    return TilingResult(td, block_dim, 0, sys_ws, ub, aic, plat.name, tuple(notes))


def check_user_tiling(td, shape):
    """An emulator check of a caller-supplied tiling: the blocks must cover the output (561002 otherwise)."""
    cube, l2 = td.matmulTiling, td.tileL2cacheTiling
    errs = []
    if (cube.M, cube.N, cube.Ka) != (shape.m, shape.n, shape.k):
        errs.append(f"M/N/Ka = {cube.M}/{cube.N}/{cube.Ka} but the inputs give {shape.m}/{shape.n}/{shape.k}")
    if min(cube.baseM, cube.baseN, cube.baseK) < 1:
        errs.append("baseM, baseN and baseK must be positive")
    else:
        m_cnt, n_cnt = _cdiv(shape.m, cube.baseM), _cdiv(shape.n, cube.baseN)
        if l2.mTileCntL2 * l2.mTileBlock < m_cnt or l2.nTileCntL2 * l2.nTileBlock < n_cnt:
            errs.append(f"L2 tiles {l2.mTileCntL2} x {l2.nTileCntL2} of {l2.mTileBlock} x {l2.nTileBlock} blocks do "
                        f"not cover the {m_cnt} x {n_cnt} base blocks")
    if td.params.ubCalcM < 1 or td.params.ubCalcN < 1:
        errs.append("ubCalcM and ubCalcN must be positive")
    if errs:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, "tiling rejected (emulator-added check): " + "; ".join(errs))


def with_overrides(tr, **changes):
    """A TilingResult with replaced fields (used for user tilings and block_dim overrides)."""
    return replace(tr, **changes)
