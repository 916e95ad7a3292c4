"""The QuantBatchMatmulV4 TilingData structs (v4_tiling.py): member order and C types against the C headers, the C
struct sizes, byte round trips, values hand-derived from the op_host code, and the trace of every V4 mode carrying
its real V4 struct."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.quant_matmul import v4_tiling as v4t
from npu_emu.kernels.quant_matmul.api import npu_quant_matmul, npu_trans_quant_param
from npu_emu.kernels.quant_matmul.tiling import QuantBatchMatmulV3TilingData

BF16 = ml_dtypes.bfloat16
E4M3, FP4 = ml_dtypes.float8_e4m3fn, ml_dtypes.float4_e2m1fn
A2, A5 = "ascend910b2", "ascend950pr"
SYS_WS = 16 * 1024 * 1024          # the A2 system workspace (SYS_WORKSPACE_SIZE)

U8, U16, U32, U64 = "uint8_t", "uint16_t", "uint32_t", "uint64_t"

# hicann/ops-nn: matmul/quant_batch_matmul_v4/op_kernel/quant_batch_matmul_v4_tiling_data.h
MSD_DECL = [("coreNum", U8), ("vBaseM", U32), ("ubRestBytes", U32), ("parallNum", U32), ("ubCalSize", U32),
            ("mSize", U32), ("kSize", U32), ("nSize", U32), ("groupSize", U32), ("matmulTiling", "TCubeTiling")]
PERBLOCK_DECL = [("matmulTiling", "TCubeTiling"), ("tileL2cacheTiling", "L2cacheTileParam"), ("groupSizeM", U32),
                 ("groupSizeN", U32), ("groupSizeK", U32), ("ubCalcM", U32), ("ubCalcN", U32),
                 ("transA", U8), ("transB", U8)]           # C++ bool: one byte
# hicann/ops-nn: matmul/quant_batch_matmul_v4/op_kernel/arch35/quant_batch_matmul_v4_tiling_data_apt.h
V4_PARAMS_DECL = ([("cubeNumBlocksN", U8), ("cubeNumBlocksM", U8), ("vecCoreParallel", U8), ("reserve1", U8),
                   ("AL1Pingpong", U16), ("BL1Pingpong", U16)]
                  + [(f, U64) for f in ("kAlign nAlign kSize nSize groupSize mSize nBubSize kBubSize mAL1Size kAL1Size "
                                        "nBL1Size kBL1Size hasX1Scale hasX2Scale").split()]
                  + [("matmulTiling", "TCubeTiling")])
SWAT_DECL = [(f, U32) for f in (
    "m n k baseM baseN baseK tileShapeKL1 tileShapeScaleKL1 usedCoreNum cubeNumBlocksM cubeNumBlocksN iterateOrder "
    "mTailTile nTailTile mBaseTailSplitCnt nBaseTailSplitCnt mTailMain nTailMain nBubSize kBubSize groupSize hasBias "
    "hasX1Scale hasX2Scale weightNz yDtype l1BufferNum reserved").split()]
BASIC_PARAMS_DECL = [(f, U32) for f in (
    "batchA batchB batchC batchA1 batchA2 batchA3 batchA4 batchB1 batchB2 batchB3 batchB4 batchC1 batchC2 batchC3 "
    "batchC4 x1QuantMode x2QuantMode biasThreeDim biasDtype groupSizeM groupSizeN groupSizeK").split()]
BASIC_TILING_DECL = ([(f, U32) for f in "m n k baseM baseN baseK kAL1 kBL1 scaleKL1".split()]
                     + [(f, U8) for f in "nBufferNum isBias dbL0C weightMustHitL2".split()])
BASIC_DECL = [("params", "QuantBatchMatmulV3BasicAPIDataParams"), ("matmulTiling", "BasicAPICubeTiling"),
              ("adaptiveSlidingWin", "SlidingWindowParam")]

STRUCTS = {
    # class: (members, sizeof: the C layout with natural alignment and the struct's alignas(8))
    # MSD: uint8 at 0, eight uint32 at 4..35, TCubeTiling (50 int32, 4-aligned) at 36..235; alignas(8) -> 240
    v4t.QuantBatchMatmulV4MsdTilingData: (MSD_DECL, 240),
    # per-block: 200 + 24 + 5·4 = 244, two bools -> 246; alignas(8) -> 248
    v4t.QuantBatchMatmulV4PerblockTilingData: (PERBLOCK_DECL, 248),
    # RegBase: 4·1 + 2·2 = 8, fourteen uint64 -> 120, TCubeTiling -> 320 (a multiple of the uint64 alignment)
    v4t.QuantBatchMatmulV4TilingDataParams: (V4_PARAMS_DECL, 320),
    # SWAT: 28 uint32 = 112 (already a multiple of 8)
    v4t.QuantBatchMatmulV4WeightQuantMxSwatTilingData: (SWAT_DECL, 112),
    # 950 per-tile: 22·4 = 88, 9·4 + 4 = 40, 6·4 = 24 -> 152
    v4t.QuantBatchMatmulV3BasicAPIDataParams: (BASIC_PARAMS_DECL, 88),
    v4t.BasicAPICubeTiling: (BASIC_TILING_DECL, 40),
    v4t.QuantBatchMatmulV3BasicAPITilingData: (BASIC_DECL, 152),
}


@pytest.mark.parametrize("cls", list(STRUCTS), ids=lambda c: c.__name__)
def test_struct_members_and_size(cls):
    decl, size = STRUCTS[cls]
    assert list(cls.ctypes().items()) == decl
    assert cls.nbytes() == size and len(cls().to_bytes()) == size


def test_struct_offsets():
    # the members after a narrower one land where the C compiler puts them
    assert v4t.QuantBatchMatmulV4MsdTilingData.offsets()["vBaseM"] == 4
    assert v4t.QuantBatchMatmulV4MsdTilingData.offsets()["matmulTiling"] == 36
    assert v4t.QuantBatchMatmulV4PerblockTilingData.offsets()["transB"] == 245
    off = v4t.QuantBatchMatmulV4TilingDataParams.offsets()
    assert (off["AL1Pingpong"], off["kAlign"], off["matmulTiling"]) == (4, 8, 120)
    assert v4t.QuantBatchMatmulV3BasicAPITilingData.offsets()["adaptiveSlidingWin"] == 128


def _all_results():
    return [
        v4t.msd_tiling(1024, 7168, 4096, per_group=True, soc=A2),
        v4t.msd_tiling(4, 256, 512, per_group=False, soc=A2),
        v4t.perblock_a2_tiling(256, 512, 1024, gs_m=1, gs_n=128, gs_k=128, has_bias=True, soc=A2),
        v4t.pergroup_tiling(64, 512, 1024, soc=A2),
        v4t.pergroup_tiling(64, 512, 1024, soc=A5),
        v4t.pertile_950_tiling(64, 512, 1024, gs_m=1, gs_n=128, gs_k=128, has_bias=False, soc=A5),
        v4t.tcg_tiling(64, 512, 1024, trans_b=True, weight_nz=False, soc=A5),
        v4t.mx_a8w4_tiling(64, 512, 1024, trans_b=True, weight_nz=False, has_bias=True, out_dtype="bfloat16", soc=A5),
    ]


def test_filled_structs_round_trip():
    for tr in _all_results():
        td = tr.tiling
        raw = td.to_bytes()
        assert len(raw) == td.nbytes()
        assert type(td).from_bytes(raw) == td and type(td).from_bytes(raw).to_bytes() == raw
        assert any(n.startswith("tiling key not reproduced") for n in tr.notes)


# ---- values derived by hand from the op_host code ------------------------------------------------------------

@pytest.mark.parametrize("m, n, base_n", [
    # quant_batch_matmul_v4_msd_tiling.cpp SetMatmulTilingPerGroup, 910B2 (24 AIC):
    # baseMNum = ceil(2m/16), aicNumN = ceil(24/baseMNum), t = ceil(n/aicNumN); baseN = first of 64,128,256,512 > t
    (1024, 7168, 512),     # baseMNum 128 -> aicNumN 1 -> t 7168 -> none larger -> 512
    (1, 7168, 512),        # baseMNum 1 -> aicNumN 24 -> t 299 -> 512
    (1, 1024, 64),         # t = ceil(1024/24) = 43 -> 64
    (8, 4096, 256),        # 2m = 16: baseMNum 1 -> t = ceil(4096/24) = 171 -> 256
    (64, 512, 256),        # baseMNum 8 -> aicNumN 3 -> t 171 -> 256
])
def test_msd_base_n(m, n, base_n):
    assert v4t.msd_tiling(m, n, 256, per_group=True, soc=A2).tiling.matmulTiling.baseN == base_n


def test_msd_per_group_fields():
    tr = v4t.msd_tiling(1024, 7168, 4096, per_group=True, soc=A2)
    td = tr.tiling
    # DoOpTilingPerGroup: coreNum = aicNum, vBaseM 32, ubCalSize 32·256, ubRestBytes = 8192·4 bytes·4 buffers,
    # parallNum 4, mSize the token count, groupSize 256
    assert (td.coreNum, td.vBaseM, td.ubCalSize, td.ubRestBytes, td.parallNum) == (24, 32, 8192, 131072, 4)
    assert (td.mSize, td.kSize, td.nSize, td.groupSize) == (1024, 4096, 7168, 256)
    c = td.matmulTiling
    # SetOrgShape(16, n, k), SetShape(16, baseN, k), SetFixSplit(16, baseN, 256); then stepKa = stepKb = 2 and
    # baseK = 256 / 2, depthA1 = depthB1 = stepM = stepN = 1, dbL0C 1
    assert (c.M, c.N, c.Ka, c.Kb, c.singleCoreM, c.singleCoreN, c.singleCoreK) == (16, 7168, 4096, 4096, 16, 512,
                                                                                    4096)
    assert (c.baseM, c.baseN, c.baseK, c.stepKa, c.stepKb) == (16, 512, 128, 2, 2)
    assert (c.depthA1, c.depthB1, c.stepM, c.stepN, c.dbL0C) == (1, 1, 1, 1, 1)
    # SetBlockDim(coreNum); workspace = SYS + 4 slots · aicNum · 16 · baseN · sizeof(int16)
    assert tr.block_dim == 24 and tr.workspace_size == SYS_WS + 4 * 24 * 16 * 512 * 2


def test_msd_per_channel_fields():
    tr = v4t.msd_tiling(4, 256, 512, per_group=False, soc=A2)
    td = tr.tiling
    # blocks 16 x 64 (t = ceil(256/24) = 11 -> 64) over 8 x 256: 1 x 4 = 4 blocks -> coreNum = usedCoreNum = 4;
    # SetMatmulTilingFromBasicTiling: vBaseM = min(8192 / 64, 16 / 2) = 8, M = the 2m rows, groupSize 0
    assert (td.coreNum, td.vBaseM, td.groupSize, td.mSize) == (4, 8, 0, 4)
    assert (td.matmulTiling.M, td.matmulTiling.baseN, td.matmulTiling.usedCoreNum) == (8, 64, 4)
    assert tr.block_dim == 4 and tr.workspace_size == SYS_WS + 4 * 4 * 16 * 64 * 2
    assert any("DoBasicTiling" in note for note in tr.notes)


def test_perblock_a2_fields():
    tr = v4t.perblock_a2_tiling(256, 512, 1024, gs_m=1, gs_n=128, gs_k=128, has_bias=True, soc=A2)
    td = tr.tiling
    c, l2 = td.matmulTiling, td.tileL2cacheTiling
    # SetBasicTilingValue: 128 x 256 x 128, depth 8, stepK 4, dbL0A/B 2, dbL0C 1
    assert (c.M, c.N, c.Ka, c.baseM, c.baseN, c.baseK) == (256, 512, 1024, 128, 256, 128)
    assert (c.depthA1, c.depthB1, c.stepKa, c.stepKb, c.dbL0A, c.dbL0B, c.dbL0C) == (8, 8, 4, 4, 2, 2, 1)
    # operands 256 KiB + 512 KiB + 256 KiB are far below 100/192 of the 192 MiB L2: one L2 tile of 2 x 2 blocks,
    # usedCoreNum = min(.., mTileBlock · nTileBlock) = 4
    assert (l2.mTileCntL2, l2.nTileCntL2, l2.mTileBlock, l2.nTileBlock, l2.isBasicTiling) == (1, 1, 2, 2, 1)
    assert c.usedCoreNum == 4
    # SetTilingData: ubCalcM = baseM / CV_PARALL_NUM (2), ubCalcN = baseN, transA false, transB true
    assert (td.ubCalcM, td.ubCalcN, td.transA, td.transB) == (64, 256, 0, 1)
    assert (td.groupSizeM, td.groupSizeN, td.groupSizeK) == (1, 128, 128)
    # DoLibApiTiling: SetBlockDim(aicNum); workspace = SYS + aicNum · 256 · 128 · sizeof(int32) · 2
    assert tr.block_dim == 24 and tr.workspace_size == SYS_WS + 24 * 256 * 128 * 4 * 2


def test_pergroup_a2_fields():
    tr = v4t.pergroup_tiling(64, 512, 1024, soc=A2)
    td = tr.tiling
    assert isinstance(td, QuantBatchMatmulV3TilingData)       # the kernel reads GET_TILING_DATA(QuantBatchMatmulV3...)
    c = td.matmulTiling
    assert (c.baseM, c.baseN, c.baseK, c.stepKa, c.depthA1, c.dbL0A, c.dbL0B) == (128, 256, 256, 4, 8, 2, 2)
    # CalcDequantTiling with the 910B2 UB of 196352 bytes: 49088 floats - 64·256 - 64 - 64·8 - 3.5·256 - 64
    # = 31168; ubCalcM = 31168 / (4·256 + 1.5·256) = 31168 / 1408 = 22
    assert (td.params.ubCalcM, td.params.ubCalcN, td.params.groupSizeK) == (22, 256, 256)
    # DoOpTiling never runs the basic search: usedCoreNum = min(BasicTiling's initial 1, blocks) = 1 -> blockDim 1;
    # workspace = SYS + sizeof(int32) · 128 · 256 · usedCoreNum · NUM_DB (2)
    assert c.usedCoreNum == 1 and tr.block_dim == 1
    assert tr.workspace_size == SYS_WS + 4 * 128 * 256 * 1 * 2


def test_pergroup_950_fields():
    tr = v4t.pergroup_tiling(64, 512, 1024, soc=A5)
    c = tr.tiling.matmulTiling
    # arch35: stepK = L1 / (2 · (128 + 256) · 256) = 524288 / 196608 = 2 (L1 placeholder 512 KiB), dbL0B 1;
    # usedCoreNum = min(28, 1 x 2 blocks) = 2
    assert (c.stepKa, c.stepKb, c.dbL0B, c.usedCoreNum, tr.block_dim) == (2, 2, 1, 2, 2)
    # UB 262144: 65536 - 16384 - 64 - 512 - 896 - 64 = 47616; / 1408 = 33
    assert tr.tiling.params.ubCalcM == 33
    # + the int8 copies of x1 (64·1024) and x2 (1024·512), 128-aligned, + the int32 block results
    assert tr.workspace_size == SYS_WS + 64 * 1024 + 1024 * 512 + 4 * 128 * 256 * 2 * 2


def test_pertile_950_fields():
    tr = v4t.pertile_950_tiling(64, 512, 1024, gs_m=1, gs_n=128, gs_k=128, has_bias=False, soc=A5)
    td = tr.tiling
    c = td.matmulTiling
    # the arch35 per-block calculator (tiling.py), 28 AIC, gsM = 1 (per-tile): ComputeBaseBlockPerblock gives
    # 64 x 256 (m < 128), 2 blocks < 28 -> AdjustBaseBlockPertile: nCore 2, mCore 14, baseM = align(ceil(64/14), 16)
    # = 16; baseN halves to 128 (4 · 4 = 16 <= 28; 64 would need 32 cores); then baseN > 2·baseM: tn 64, 8 n-cores,
    # 3 m-cores, tm = align(ceil(64/3), 16) = 32, 2 · 8 = 16 <= 28 -> 32 x 64
    assert (c.m, c.n, c.k, c.baseM, c.baseN, c.baseK) == (64, 512, 1024, 32, 64, 128)
    # CalculateNBufferNum4Perblock: (32 + 64) · 128 · 4 buffers = 48 KiB <= L1 -> 4
    assert (c.kAL1, c.kBL1, c.nBufferNum, c.isBias, c.dbL0C) == (128, 128, 4, 0, 1)
    # x1QuantMode PERGROUP (1 << 5) for gsM = 1, x2QuantMode PERBLOCK (1 << 4); no bias -> DT_INT32 (3)
    p = td.params
    assert (p.x1QuantMode, p.x2QuantMode, p.biasDtype, p.groupSizeM, p.groupSizeN, p.groupSizeK) == (32, 16, 3, 1,
                                                                                                      128, 128)
    assert tr.block_dim == 2 * 8


def test_tcg_and_mx_fields():
    tr = v4t.tcg_tiling(64, 512, 1024, trans_b=True, weight_nz=False, soc=A5)
    td = tr.tiling
    # DoOpTiling: kAlign = align(k, 32 bytes of fp4 = 64), nAlign = n; groupSize 32; T-CG has no x1Scale
    assert (td.kAlign, td.nAlign, td.kSize, td.nSize, td.mSize, td.groupSize) == (1024, 512, 1024, 512, 64, 32)
    assert (td.hasX1Scale, td.hasX2Scale, td.matmulTiling.dbL0A, td.matmulTiling.dbL0C) == (0, 1, 2, 1)
    # PostTiling: blockDim = cubeNumBlocksM · cubeNumBlocksN; workspace = 16 MiB + 8 bytes per block
    assert tr.block_dim == td.cubeNumBlocksM * td.cubeNumBlocksN
    assert tr.workspace_size == 16 * 1024 * 1024 + 8 * tr.block_dim
    mx = v4t.mx_a8w4_tiling(64, 512, 1024, trans_b=True, weight_nz=True, has_bias=True, out_dtype="float16",
                            soc=A5).tiling
    # the SWAT solver's fixed members: iterateOrder ORDER_N (1), groupSize 32, scales present, yDtype DT_FLOAT16 (1)
    assert (mx.iterateOrder, mx.groupSize, mx.hasX1Scale, mx.hasX2Scale, mx.hasBias, mx.weightNz, mx.yDtype) == (
        1, 32, 1, 1, 1, 1, 1)
    assert mx.usedCoreNum == min(28, mx.cubeNumBlocksM * mx.cubeNumBlocksN)


# ---- end to end: the trace carries the V4 struct ---------------------------------------------------------------

def _pack_int32(w):
    u = (w.astype(np.int64) & 0xF).reshape(w.shape[0], -1, 8)
    return (u << (4 * np.arange(8))).sum(-1).astype(np.uint32).view(np.int32)


def _pack_bytes(w):
    u = (w.astype(np.int16) & 0xF).astype(np.uint8).reshape(w.shape[0], -1, 2)
    return np.ascontiguousarray((u[..., 0] | (u[..., 1] << 4)).astype(np.int8))


def _pack_fp4(v):
    c = (np.asarray(v, FP4).view(np.uint8) & 0xF).reshape(v.shape[0], -1, 2)
    return np.ascontiguousarray((c[..., 0] | (c[..., 1] << 4)).astype(np.uint8))


def _run(case):
    rng = np.random.default_rng(3)
    if case == "msd":
        m, k, n = 3, 512, 16
        w = rng.integers(-8, 8, (k, n)).astype(np.int8)
        words = npu_trans_quant_param(rng.uniform(0.01, 0.02, 2 * n).astype(np.float32)).reshape(2, n)
        _, tr = npu_quant_matmul(rng.integers(-128, 128, (m, k)).astype(np.int8), _pack_int32(w), words,
                                 pertoken_scale=np.ones((m, 1), np.float32), offset=np.zeros(n, np.float32),
                                 output_dtype=BF16, group_sizes=[0, 0, 256], trace=True)
        return tr, v4t.QuantBatchMatmulV4MsdTilingData, {"mSize": m, "nSize": n, "kSize": k, "groupSize": 256}
    if case in ("gb-a2", "gb-950"):
        m, k, n = 4, 512, 256
        x2 = rng.integers(-128, 128, (n, k)).astype(np.int8)
        _, tr = npu_quant_matmul(rng.integers(-128, 128, (m, k)).astype(np.int8), x2.T,
                                 np.full((2, 4), 0.01, np.float32), pertoken_scale=np.full((m, 4), 0.01, np.float32),
                                 output_dtype=BF16, group_sizes=[1, 128, 128], soc=A2 if case == "gb-a2" else A5,
                                 trace=True)
        if case == "gb-a2":
            return tr, v4t.QuantBatchMatmulV4PerblockTilingData, {"groupSizeK": 128, "ubCalcM": 64}
        return tr, v4t.QuantBatchMatmulV3BasicAPITilingData, {}
    if case in ("a4w4-a2", "a4w4-950"):
        soc = A2 if case == "a4w4-a2" else A5
        m, k, n = 2, 1024, 256
        x2 = rng.integers(-8, 8, (k, n)).astype(np.int8)
        w = _pack_bytes(x2.T).T if soc == A5 else _pack_bytes(x2)
        _, tr = npu_quant_matmul(_pack_bytes(rng.integers(-8, 8, (m, k)).astype(np.int8)), w,
                                 np.full((4, n), 0.05, np.float32), soc=soc, pertoken_scale=np.ones((m, 1), np.float32),
                                 offset=np.zeros((4, n), np.float16), x1_dtype="int4", x2_dtype="int4",
                                 output_dtype=BF16, group_sizes=[0, 0, 256], trace=True)
        return tr, QuantBatchMatmulV3TilingData, {}
    m, k, n = 3, 128, 16
    x1 = rng.normal(0, 2, (m, k)).astype(E4M3)
    w = rng.choice(np.array([0, 0.5, 1, -2, 6], np.float32), (n, k)).astype(FP4)
    if case == "tcg":
        ys = npu_trans_quant_param(np.ones(n, np.float32)).reshape(1, n)
        _, tr = npu_quant_matmul(x1, _pack_fp4(w).T, np.full((n, k // 32), 0.5, BF16), y_scale=ys,
                                 x2_dtype="float4_e2m1", output_dtype=BF16, group_sizes=[0, 0, 32], soc=A5, trace=True)
        return tr, v4t.QuantBatchMatmulV4TilingDataParams, {"mSize": m, "kSize": k, "nSize": n, "groupSize": 32}
    s = np.full((m, 2, 2), 127, np.uint8)
    _, tr = npu_quant_matmul(x1, _pack_fp4(w).T, np.full((n, 2, 2), 127, np.uint8), pertoken_scale=s,
                             x2_dtype="float4_e2m1", scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
                             output_dtype=BF16, group_sizes=[1, 1, 32], soc=A5, trace=True)
    return tr, v4t.QuantBatchMatmulV4WeightQuantMxSwatTilingData, {"m": m, "n": n, "k": k, "yDtype": 27}


@pytest.mark.parametrize("case", ["msd", "gb-a2", "gb-950", "a4w4-a2", "a4w4-950", "tcg", "mx"])
def test_trace_carries_v4_struct(case):
    tr, cls, expect = _run(case)
    assert tr.op == "QuantBatchMatmulV4"
    assert len(tr.tiling_data_bytes) == cls.nbytes()
    td = cls.from_bytes(tr.tiling_data_bytes)
    assert td.fields() == tr.tiling_data
    assert list(tr.tiling_data) == list(cls.ctypes())
    for name, value in expect.items():
        assert tr.tiling_data[name] == value, name
