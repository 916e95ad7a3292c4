"""The compile configurations of the quantised matmul family (V3/V4 modes, WeightNz, Sparse4to2, TransQuantParam) (``npu-emu compile``, declared in op.py): each a tiny call through
the public API that makes numba compile one specialisation of its own (docs/cli.md, ``compile``)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()

A5 = "ascend950pr"


def _i8(rng, shape):
    return rng.integers(-128, 128, shape, dtype=np.int16).astype(np.int8)


def _e4m3(rng, shape, lo=-6.0, hi=6.0):
    import ml_dtypes

    return rng.uniform(lo, hi, shape).astype(np.float32).astype(ml_dtypes.float8_e4m3fn)


def _qmm(call):
    """A quant-matmul configuration: ``call(npu_quant_matmul, rng)`` returns the zero-argument call."""
    def build():
        from npu_emu.ops import npu_quant_matmul

        return call(npu_quant_matmul, _rng(3))

    return build


def _int8_v3(out, pertoken, offset=False):
    def call(qmm, rng):
        m, k, n = 16, 64, 32
        x1, x2 = _i8(rng, (m, k)), _i8(rng, (k, n))
        s = rng.uniform(0.0005, 0.005, n).astype(np.float32)
        kw = {"output_dtype": out}
        if pertoken:
            kw["pertoken_scale"] = rng.uniform(0.5, 2.0, m).astype(np.float32)
        if offset:
            kw["offset"] = rng.uniform(-20, 20, n).astype(np.float32)
        return lambda: qmm(x1, x2, s, **kw)

    return call


config("quant_matmul.int8_kc_bf16", "int8 K-C (per-token x per-channel float32 scales) -> bfloat16")(
    _qmm(_int8_v3("bfloat16", True)))
config("quant_matmul.int8_kc_fp16", "int8 K-C -> float16")(_qmm(_int8_v3("float16", True)))
config("quant_matmul.int8_tc_fp16", "int8 T-C, float32 scale packed to UINT64 (FP19) -> float16")(
    _qmm(_int8_v3("float16", False)))
config("quant_matmul.int8_tc_bf16", "int8 T-C, float32 scale -> bfloat16")(_qmm(_int8_v3("bfloat16", False)))
config("quant_matmul.int8_requant", "int8 T-C with offsets -> int8 (requant)")(
    _qmm(_int8_v3("int8", False, offset=True)))
config("quant_matmul.int8_int32", "int8 -> int32 (scales ignored)")(_qmm(_int8_v3("int32", False)))


@config("quant_matmul.int4_fp16", "int4 x int4 (two per byte) T-C -> float16")
@_qmm
def _int4(qmm, rng):
    m, k, n = 8, 64, 32
    x1 = rng.integers(-128, 128, (m, k // 2), dtype=np.int16).astype(np.int8)
    x2 = rng.integers(-128, 128, (k, n // 2), dtype=np.int16).astype(np.int8)
    s = rng.uniform(0.001, 0.01, n).astype(np.float32)
    return lambda: qmm(x1, x2, s, x1_dtype="int4", x2_dtype="int4", output_dtype="float16")


@config("quant_matmul.fp8_kc_bf16", "fp8 e4m3fn K-C on ascend950pr -> bfloat16 (float_accum 'exact')")
@_qmm
def _fp8_kc(qmm, rng):
    m, k, n = 8, 64, 16
    x1, x2 = _e4m3(rng, (m, k)), _e4m3(rng, (k, n))
    s = rng.uniform(0.01, 0.1, n).astype(np.float32)
    p1 = rng.uniform(0.5, 2.0, m).astype(np.float32)
    return lambda: qmm(x1, x2, s, pertoken_scale=p1, output_dtype="bfloat16", soc=A5)


@config("quant_matmul.fp8_static_fp16", "fp8 e4m3fn, UINT64 scale, float32 bias on ascend950pr -> float16")
@_qmm
def _fp8_static(qmm, rng):
    from npu_emu.ops import npu_trans_quant_param

    m, k, n = 8, 64, 16
    x1, x2 = _e4m3(rng, (m, k)), _e4m3(rng, (k, n))
    words = npu_trans_quant_param(rng.uniform(0.01, 0.1, n).astype(np.float32))
    bias = rng.uniform(-2, 2, n).astype(np.float32)
    return lambda: qmm(x1, x2, words, bias=bias, output_dtype="float16", soc=A5)


@config("quant_matmul.fp8_doublescale", "fp8 e4m3fn T-T doublescale (cube) on ascend950pr -> float16")
@_qmm
def _fp8_double(qmm, rng):
    m, k, n = 8, 64, 16
    x1, x2 = _e4m3(rng, (m, k)), _e4m3(rng, (k, n))
    return lambda: qmm(x1, x2, np.array([0.05], np.float32), pertoken_scale=np.array([1.5], np.float32),
                       output_dtype="float16", soc=A5)


@config("quant_matmul.hif8_kc_bf16", "HiFloat8 K-C on ascend950pr -> bfloat16")
@_qmm
def _hif8(qmm, rng):
    m, k, n = 8, 64, 16
    x1 = rng.integers(0, 0x40, (m, k)).astype(np.uint8)        # moderate magnitudes, no Inf / NaN codes
    x2 = rng.integers(0, 0x40, (k, n)).astype(np.uint8)
    s = rng.uniform(0.01, 0.1, n).astype(np.float32)
    p1 = rng.uniform(0.5, 2.0, m).astype(np.float32)
    return lambda: qmm(x1, x2, s, pertoken_scale=p1, x1_dtype="hifloat8", x2_dtype="hifloat8",
                       output_dtype="bfloat16", soc=A5)


@config("quant_matmul.fp8_perblock", "fp8 e4m3fn G-B per-block scales [1, 128, 128] on ascend950pr -> bfloat16")
@_qmm
def _fp8_gb(qmm, rng):
    m, k, n = 8, 256, 128
    x1, x2 = _e4m3(rng, (m, k)), _e4m3(rng, (k, n))
    s1 = rng.uniform(0.01, 0.2, (m, k // 128)).astype(np.float32)
    s2 = rng.uniform(0.01, 0.2, (k // 128, n // 128)).astype(np.float32)
    return lambda: qmm(x1, x2, s2, pertoken_scale=s1, output_dtype="bfloat16", group_sizes=[1, 128, 128], soc=A5)


def _mx(fp4):
    def call(qmm, rng):
        import ml_dtypes

        m, k, n = 8, 128, 16
        if fp4:
            vals = np.array([-6, -3, -1.5, -0.5, 0, 0.5, 1, 2, 4], np.float32)
            x1 = rng.choice(vals, (m, k)).astype(ml_dtypes.float4_e2m1fn)
            x2t = rng.choice(vals, (n, k)).astype(ml_dtypes.float4_e2m1fn)
        else:
            x1, x2t = _e4m3(rng, (m, k), -40, 40), _e4m3(rng, (n, k), -40, 40)
        s1 = rng.integers(120, 130, (m, k // 64, 2)).astype(np.uint8)
        s2 = rng.integers(120, 130, (n, k // 64, 2)).astype(np.uint8)
        return lambda: qmm(x1, x2t.T, s2, pertoken_scale=s1, scale_dtype="float8_e8m0",
                           pertoken_scale_dtype="float8_e8m0", group_sizes=[1, 1, 32], output_dtype="bfloat16", soc=A5)

    return call


config("quant_matmul.mxfp8", "MXFP8 e4m3fn with E8M0 scales per 32 on ascend950pr -> bfloat16")(_qmm(_mx(False)))
config("quant_matmul.mxfp4", "MXFP4 e2m1 with E8M0 scales per 32 on ascend950pr -> bfloat16")(_qmm(_mx(True)))


@config("quant_matmul.v4_int8_gb", "V4 int8 G-B (A8W8 per-block, [1, 128, 128]) on the 910B2 -> bfloat16")
@_qmm
def _v4_gb(qmm, rng):
    m, k, n = 8, 512, 256            # the A2 per-block tiling takes K % 512 == 0 and N % 256 == 0 only
    x1, x2t = _i8(rng, (m, k)), _i8(rng, (n, k))
    x1s = rng.uniform(0.001, 0.01, (m, k // 128)).astype(np.float32)
    x2s = rng.uniform(0.001, 0.01, (n // 128, k // 128)).astype(np.float32)
    bias = rng.normal(0, 1, n).astype(np.float32)
    return lambda: qmm(x1, x2t.T, x2s, pertoken_scale=x1s, bias=bias, output_dtype="bfloat16",
                       group_sizes=[1, 128, 128])


@config("quant_matmul.v4_int8_gb_950", "V4 int8 G-B on ascend950pr (the 950 accumulation order) -> bfloat16")
@_qmm
def _v4_gb_950(qmm, rng):
    m, k, n = 8, 256, 128
    x1, x2t = _i8(rng, (m, k)), _i8(rng, (n, k))
    x1s = rng.uniform(0.001, 0.01, (m, k // 128)).astype(np.float32)
    x2s = rng.uniform(0.001, 0.01, (n // 128, k // 128)).astype(np.float32)
    return lambda: qmm(x1, x2t.T, x2s, pertoken_scale=x1s, output_dtype="bfloat16", group_sizes=[1, 128, 128],
                       soc=A5)


@config("quant_matmul.v4_a4w4_kg", "V4 A4W4 K-G (int4, per-group asymmetric weights) -> bfloat16")
@_qmm
def _v4_a4w4(qmm, rng):
    m, k, n = 8, 1024, 256
    x1 = rng.integers(-128, 128, (m, k // 2), dtype=np.int16).astype(np.int8)
    x2 = rng.integers(-128, 128, (k, n // 2), dtype=np.int16).astype(np.int8)
    x1s = rng.uniform(0.01, 0.1, (m, 1)).astype(np.float32)
    x2s = rng.uniform(0.01, 0.1, (k // 256, n)).astype(np.float32)
    off = rng.uniform(-8, 8, (k // 256, n)).astype(np.float16)
    return lambda: qmm(x1, x2, x2s, pertoken_scale=x1s, offset=off, x1_dtype="int4", x2_dtype="int4",
                       output_dtype="bfloat16", group_sizes=[0, 0, 256])


def _msd_inputs(rng, m, k, n):
    from npu_emu.ops import npu_trans_quant_param

    x1 = _i8(rng, (m, k))
    x2 = rng.integers(-2 ** 31, 2 ** 31, (k, n // 8), dtype=np.int64).astype(np.int32)   # 8 int4 per word
    words = npu_trans_quant_param(rng.uniform(0.001, 0.01, (k // 256) * n).astype(np.float32)).reshape(k // 256, n)
    y_off = rng.uniform(-1, 1, n).astype(np.float32)
    x1s = rng.uniform(0.5, 2, (m, 1)).astype(np.float32)
    return x1, x2, words, y_off, x1s


@config("quant_matmul.v4_a8w4_msd", "V4 A8W4 MSD (int8 x int32-packed int4, per-group UINT64 scales) -> bfloat16")
@_qmm
def _v4_msd(qmm, rng):
    x1, x2, words, y_off, x1s = _msd_inputs(rng, 8, 512, 64)
    return lambda: qmm(x1, x2, words, pertoken_scale=x1s, offset=y_off, output_dtype="bfloat16",
                       group_sizes=[0, 0, 256])


_FP4_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6], np.float32)


def _fp4_packed(rng, rows, cols):
    """(rows, cols) fp4 e2m1 values packed two per byte, even element in the low nibble."""
    import ml_dtypes

    c = rng.choice(_FP4_VALUES, (rows, cols)).astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & np.uint8(0xF)
    c = c.reshape(rows, -1, 2)
    return np.ascontiguousarray(c[..., 0] | (c[..., 1] << np.uint8(4)))


@config("quant_matmul.v4_tcg", "V4 T-CG (fp8 e4m3fn x fp4 e2m1 weight, bf16 group scales) on ascend950pr -> bf16")
@_qmm
def _v4_tcg(qmm, rng):
    from npu_emu.ops import npu_trans_quant_param

    m, k, n = 4, 64, 16
    x1 = _e4m3(rng, (m, k))
    w = _fp4_packed(rng, n, k)                                   # (n, k/2): passed transposed
    s = _bf16(rng.uniform(0.01, 4, (n, k // 32)))
    ys = npu_trans_quant_param(rng.uniform(0.5, 1.5, n).astype(np.float32)).reshape(1, n)
    return lambda: qmm(x1, w.T, s, y_scale=ys, x2_dtype="float4_e2m1", output_dtype="bfloat16",
                       group_sizes=[0, 0, 32], soc=A5)


@config("quant_matmul.v4_mxa8w4", "V4 MxA8W4 (fp8 e4m3fn x fp4 e2m1, E8M0 scales) on ascend950pr -> bfloat16")
@_qmm
def _v4_mxa8w4(qmm, rng):
    m, k, n = 4, 128, 16
    x1 = _e4m3(rng, (m, k))
    w = _fp4_packed(rng, n, k)
    s1 = rng.integers(120, 134, (m, k // 64, 2)).astype(np.uint8)
    s2 = rng.integers(120, 134, (n, k // 64, 2)).astype(np.uint8)
    return lambda: qmm(x1, w.T, s2, pertoken_scale=s1, x2_dtype="float4_e2m1", scale_dtype="float8_e8m0",
                       pertoken_scale_dtype="float8_e8m0", output_dtype="bfloat16", group_sizes=[1, 1, 32], soc=A5)


@config("quant_matmul.weight_nz", "int8 T-C with the weight in FRACTAL_NZ (aclnnQuantMatmulWeightNz) -> float16")
@_qmm
def _weight_nz(qmm, rng):
    from npu_emu.ops import NzWeight

    m, k, n = 16, 64, 32
    x1, x2 = _i8(rng, (m, k)), _i8(rng, (k, n))
    s = rng.uniform(0.0005, 0.005, n).astype(np.float32)
    nz = NzWeight.from_nd(x2)
    return lambda: qmm(x1, nz, s, output_dtype="float16")


@config("quant_matmul.sparse4to2", "sparse4to2_quant_matmul (2:4 sparse int8 weight) -> bfloat16")
def _sparse():
    from npu_emu.ops import sparse4to2_quant_matmul, trans_sparse4to2_para

    rng = _rng(4)
    m, k, n = 8, 128, 32
    x = _i8(rng, (m, k))
    w = _i8(rng, (n, k)).reshape(n, -1, 4)
    w[:, :, 1:3] = 0
    sw, idx = trans_sparse4to2_para(w.reshape(n, k))
    xs = rng.uniform(0.01, 0.1, m).astype(np.float32)
    ws = rng.uniform(0.01, 0.1, n).astype(np.float32)
    return lambda: sparse4to2_quant_matmul(x, sw, idx, xs, ws)


@config("quant_matmul.trans_quant_param", "npu_trans_quant_param: float32 scale and offset -> packed int64 words")
def _tqp():
    from npu_emu.ops import npu_trans_quant_param

    rng = _rng(5)
    s = rng.uniform(0.001, 0.1, 32).astype(np.float32)
    off = rng.uniform(-20, 20, 32).astype(np.float32)
    return lambda: npu_trans_quant_param(s, off)
