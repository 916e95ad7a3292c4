"""Every user-facing op configuration as a named tiny call through the public API: the one list that
``npu-emu compile`` runs to fill numba's cache ahead of time and that benchmarks/bench_startup.py times cold.

A configuration is one way of calling an op that makes numba compile something of its own: a dst format, an input
dtype, a quant-matmul mode, a DEQ mode, a codec. Each builds small inputs (numpy only) and returns a zero-argument
call; the shapes are small but take the Python-level branches of typical calls (the grouped MX quantizer's fused
walk, the matmul's default accumulation), so the call compiles what a production call would. Run-time switches
that the kernels read as values (round modes, scale_alg, ReLU, saturate) compile nothing new and get no entry.

Configurations are grouped by op family (``family``, the names ``npu-emu compile --ops`` takes). A family's
configurations share kernels, and families whose kernels call the same cached njit functions share a
:func:`schedule_group`: ``npu-emu compile --jobs`` runs each schedule group in one worker so that no two workers
compile the same function at once (npu_emu/device/cache_lock.py keeps the cache consistent regardless; the grouping
avoids compiling one function twice). DynamicMxQuant and GroupedDynamicMxQuant are one group: both kernels call
kernels/mx_quant/kernel.py's ``_fp32_rows`` / ``_convert`` / ``_column_blocks`` with the same signatures, and
``_fp32_rows`` alone was about half of each kernel's cold compile when two workers compiled it side by side.

Importing this module imports numpy only; a configuration imports the ops it calls when it is built.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OpConfig:
    name: str          # "<family>.<variant>", unique
    family: str        # the --ops name
    help: str
    build: object      # () -> zero-argument callable: the call (inputs already built)

    def call(self):
        """Build the inputs and run the call once; returns the result."""
        return self.build()()


CONFIGS = {}


def config(name, help_text):
    family = name.split(".", 1)[0]

    def deco(fn):
        if name in CONFIGS:
            raise ValueError(f"duplicate op configuration {name}")
        CONFIGS[name] = OpConfig(name, family, help_text, fn)
        return fn

    return deco


# families whose kernels share cached njit functions (see the module docstring); any other family is its own group
SCHEDULE_GROUPS = {"dynamic_mx_quant": "mx_quant", "grouped_dynamic_mx_quant": "mx_quant"}


# cold compile seconds of each schedule group (npu-emu compile --jobs 2 on an idle 2-core box, with the kernels
# specialised per format and path): only the order in which --jobs starts the groups, longest first, so that the
# longest one is not started last
COST_HINT = {"mx_quant": 77, "quant_matmul": 45, "sign_bits": 36, "codecs": 10, "gather_dequant_int8": 9,
             "data_copy_dequant": 7}


def schedule_group(family):
    """The worker group of an op family for ``npu-emu compile --jobs``."""
    return SCHEDULE_GROUPS.get(family, family)


def families():
    """Family names in registry order."""
    return list(dict.fromkeys(c.family for c in CONFIGS.values()))


def select(ops=None):
    """Configurations of the named families or configurations (None: all), in registry order. Unknown names raise
    KeyError with the valid ones."""
    if not ops:
        return list(CONFIGS.values())
    fams = set(families())
    unknown = [o for o in ops if o not in fams and o not in CONFIGS]
    if unknown:
        raise KeyError(f"unknown op {', '.join(unknown)}; choose families ({', '.join(families())}) or "
                       f"configurations (npu-emu compile --list)")
    want = set(ops)
    return [c for c in CONFIGS.values() if c.family in want or c.name in want]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _bf16(a):
    import ml_dtypes

    return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16)


# ---------------------------------------------------------------------------------------------------------------
# SignBits
# ---------------------------------------------------------------------------------------------------------------

def _unpack(dtype, soc=None):
    def build():
        from npu_emu.ops import npu_sign_bits_unpack

        x = _rng().integers(0, 256, 4096, dtype=np.uint8)
        kw = {} if soc is None else {"soc": soc}
        return lambda: npu_sign_bits_unpack(x, 1, dtype, **kw)

    return build


def _pack(dtype, soc=None):
    def build():
        from npu_emu.ops import npu_sign_bits_pack

        x = _rng().standard_normal(4096).astype(dtype)
        kw = {} if soc is None else {"soc": soc}
        return lambda: npu_sign_bits_pack(x, 1, **kw)

    return build


config("sign_bits.unpack_f32", "npu_sign_bits_unpack -> float32 (910B fused kernel)")(_unpack(0))
config("sign_bits.unpack_f16", "npu_sign_bits_unpack -> float16")(_unpack(1))
config("sign_bits.unpack_950", "npu_sign_bits_unpack -> float32 on ascend950pr (arch35 kernel)")(
    _unpack(0, "ascend950pr"))
config("sign_bits.pack_f32", "npu_sign_bits_pack of float32")(_pack(np.float32))
config("sign_bits.pack_f16", "npu_sign_bits_pack of float16")(_pack(np.float16))
config("sign_bits.pack_950", "npu_sign_bits_pack of float32 on ascend950pr (MSB first, x < 0)")(
    _pack(np.float32, "ascend950pr"))


# ---------------------------------------------------------------------------------------------------------------
# GatherDequantInt8
# ---------------------------------------------------------------------------------------------------------------

def _gather(readonly):
    def build():
        from npu_emu.ops import gather_dequant_int8

        rng = _rng()
        vocab, emb = 64, 256
        table = rng.integers(0, 256, (vocab, emb), dtype=np.uint8)
        if readonly:
            table = np.frombuffer(table.tobytes(), np.uint8).reshape(vocab, emb)
        scale = (rng.random(vocab) * 0.01 + 1e-4).astype(np.float16)
        zp = (rng.random(vocab) * 255).astype(np.float16)
        idx = rng.integers(0, vocab, (2, 8)).astype(np.int32)
        return lambda: gather_dequant_int8(table, idx, scale, zp)

    return build


config("gather_dequant_int8.fp16", "gather_dequant_int8: uint8 table rows -> float16")(_gather(False))
# the kernel reads the table in place: a read-only table (np.frombuffer, a memory map) is another numba signature
config("gather_dequant_int8.readonly_table", "gather_dequant_int8 with a read-only table (np.frombuffer, mmap)")(
    _gather(True))


# ---------------------------------------------------------------------------------------------------------------
# DynamicMxQuant / GroupedDynamicMxQuant
# ---------------------------------------------------------------------------------------------------------------

MX_DST = {"e4m3": 24, "e5m2": 23, "fp4_e2m1": 296, "fp4_e1m2": 297}


def _mx_input(shape, dtype):
    x = _rng().standard_normal(shape, dtype=np.float32) * np.float32(4)
    return _bf16(x) if dtype == "bfloat16" else x.astype(dtype)


def _dynamic(dst, axis=-1, dtype="bfloat16", **kw):
    def build():
        from npu_emu.ops import npu_dynamic_mx_quant

        x = _mx_input((64, 256), dtype)
        return lambda: npu_dynamic_mx_quant(x, axis=axis, dst_type=MX_DST[dst], **kw)

    return build


for _dst in MX_DST:
    config(f"dynamic_mx_quant.{_dst}", f"npu_dynamic_mx_quant bf16 -> {_dst}, last axis")(_dynamic(_dst))
    config(f"dynamic_mx_quant.{_dst}_axis0", f"npu_dynamic_mx_quant bf16 -> {_dst}, axis 0 of 2")(
        _dynamic(_dst, axis=0))
config("dynamic_mx_quant.e4m3_fp16", "npu_dynamic_mx_quant float16 -> e4m3, last axis")(
    _dynamic("e4m3", dtype="float16"))
config("dynamic_mx_quant.e4m3_fp32", "npu_dynamic_mx_quant float32 -> e4m3, last axis")(
    _dynamic("e4m3", dtype="float32"))
config("dynamic_mx_quant.e4m3_faithful", "npu_dynamic_mx_quant bf16 -> e4m3, faithful=True (tile by tile)")(
    _dynamic("e4m3", faithful=True))


def _grouped(dst, dtype="bfloat16"):
    def build():
        from npu_emu.ops import npu_grouped_dynamic_mx_quant

        x = _mx_input((256, 512), dtype)
        gi = np.array([96, 256], np.int32)
        return lambda: npu_grouped_dynamic_mx_quant(x, gi, dst_type=MX_DST[dst])

    return build


for _dst in MX_DST:
    config(f"grouped_dynamic_mx_quant.{_dst}", f"npu_grouped_dynamic_mx_quant bf16 -> {_dst}, 2 groups")(
        _grouped(_dst))
config("grouped_dynamic_mx_quant.e4m3_fp16", "npu_grouped_dynamic_mx_quant float16 -> e4m3, 2 groups")(
    _grouped("e4m3", dtype="float16"))


# ---------------------------------------------------------------------------------------------------------------
# QuantMatmul (aclnnQuantMatmulV5: QuantBatchMatmulV3 and V4 modes), Sparse4to2, npu_trans_quant_param
# ---------------------------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------------------------
# DataCopy CO1 -> CO2 dequantisation
# ---------------------------------------------------------------------------------------------------------------

def _deq(mode):
    def build():
        from npu_emu.ops import data_copy_dequant

        rng = _rng(6)
        rows, n = 32, 64
        acc = rng.integers(-(1 << 15), 1 << 15, (rows, n), dtype=np.int32)
        count = n if mode.startswith("V") else 1
        scales = (rng.uniform(2.0 ** -8, 2.0 ** -6, count).astype(np.float32).view(np.uint32)
                  & np.uint32(0xFFFFE000)).astype(np.uint64)
        words = scales | np.uint64(1 << 46) if mode.endswith("DEQ8") else scales    # bit 46: signed int8 out
        deq = words if mode.startswith("V") else int(words[0])
        return lambda: data_copy_dequant(acc, deq, mode=mode)

    return build


for _mode in ("DEQ8", "DEQ16", "DEQS16", "VDEQ8", "VDEQ16", "VDEQS16"):
    config(f"data_copy_dequant.{_mode.lower()}", f"data_copy_dequant mode={_mode}")(_deq(_mode))


# ---------------------------------------------------------------------------------------------------------------
# Codecs (npu_emu.dtypes)
# ---------------------------------------------------------------------------------------------------------------

ENCODE_FORMATS = ("float8_e4m3fn", "float8_e5m2", "hifloat8", "float8_e8m0", "float4_e2m1", "float4_e1m2")
DECODE_FORMATS = ENCODE_FORMATS + ("float6_e3m2", "float6_e2m3")


def _codec_input(dtype="float32"):
    x = _rng(7).standard_normal(1024).astype(np.float32) * np.float32(8)
    return _bf16(x) if dtype == "bfloat16" else x.astype(dtype)


def _encode(fmt, dtype="float32"):
    def build():
        from npu_emu import dtypes

        x = _codec_input(dtype)
        return lambda: dtypes.encode(x, fmt)

    return build


def _decode(fmt):
    def build():
        from npu_emu import dtypes

        bits = dtypes.FORMATS[fmt].bits
        codes = _rng(8).integers(0, 1 << bits, 1024).astype(np.uint8)
        return lambda: dtypes.decode(codes, fmt)

    return build


for _fmt in ENCODE_FORMATS:
    config(f"codecs.encode_{_fmt}", f"npu_emu.dtypes.encode float32 -> {_fmt}")(_encode(_fmt))
config("codecs.encode_hifloat8_f16", "npu_emu.dtypes.encode float16 -> hifloat8 (reads the fp16 bits)")(
    _encode("hifloat8", "float16"))
config("codecs.encode_float8_e4m3fn_f16", "npu_emu.dtypes.encode float16 -> float8_e4m3fn (fp16 widened first)")(
    _encode("float8_e4m3fn", "float16"))
config("codecs.encode_float8_e4m3fn_f64", "npu_emu.dtypes.encode float64 -> float8_e4m3fn (round to odd first)")(
    _encode("float8_e4m3fn", "float64"))
for _fmt in DECODE_FORMATS:
    config(f"codecs.decode_{_fmt}", f"npu_emu.dtypes.decode {_fmt} -> float32")(_decode(_fmt))


@config("codecs.to_float16", "npu_emu.dtypes.to_float16 of float32")
def _to_f16():
    from npu_emu import dtypes

    x = _codec_input()
    return lambda: dtypes.to_float16(x)


@config("codecs.to_bfloat16", "npu_emu.dtypes.to_bfloat16 of float32")
def _to_bf16():
    from npu_emu import dtypes

    x = _codec_input()
    return lambda: dtypes.to_bfloat16(x)


@config("codecs.cast_f32_fp4", "npu_emu.dtypes.cast float32 -> float4_e2m1 (aclnnCast chain through bf16)")
def _cast():
    from npu_emu import dtypes

    x = _codec_input()
    return lambda: dtypes.cast(x, "float32", "float4_e2m1")
