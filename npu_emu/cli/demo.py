"""``npu-emu demo``: run every implemented op once at a production shape, check it bit-exactly against its
independent golden (npu_emu.goldens, ml_dtypes / en_dtypes for the codecs), and print a table: time, throughput,
speed-up over the golden, emulator time over the host and the 910B2 rooflines, match.

Shapes are the asv benchmark shapes (benchmarks/bench_*.py); ``small=True`` scales them down so that the whole demo
runs in seconds with a warm numba cache. Each case is a :class:`Builder` in :data:`BUILDERS`; an op whose module
is not there yet is listed as skipped. The golden of a matmul runs on a sample of rows (and of columns for the
exact float models, whose golden is Fraction arithmetic): a quant-matmul output row depends only on its x1 row,
so that sample is checked exactly, and the golden's time is scaled to the whole output (marked "~").
"""

import json
import sys
import time
from dataclasses import dataclass

import numpy as np

HOST_COPY_BPS_PER_THREAD = 25e9      # docs/contributing/numba_rules.md §5.2: r+w copy rate of one host thread
DEVICE = "ascend910b2"               # the device column of the table (docs/device/platforms.md §4 rooflines)


class Unavailable(Exception):
    """The op of a case is not implemented in this build (the case is listed as skipped)."""


@dataclass
class Case:
    op: str
    shape: str
    run: object                  # () -> result, the emulator (the user-facing call)
    golden: object               # () -> expected, the independent reference
    same: object                 # (result, expected) -> bool, bit-exact
    nbytes: int                  # bytes a device kernel moves through GM
    flops: int = 0               # operations of a matmul (2·m·k·n), 0 for memory-bound ops
    peak: str = "fp16_peak_flops"
    device: str = DEVICE         # the SoC of the device-roofline column
    golden_fraction: float = 1.0  # share of the output the golden computes (sampled matmul rows / columns)


@dataclass
class Builder:
    build: object                # (dims, rng) -> Case
    production: tuple
    small: tuple
    help: str


BUILDERS = {}


def builder(key, production, small, help_text):
    def deco(fn):
        BUILDERS[key] = Builder(fn, tuple(production), tuple(small), help_text)
        return fn

    return deco


def fmt_dims(dims):
    return "x".join(str(d) for d in dims)


def _bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize and np.array_equal(_bits(a), _bits(b))


def _same_float(a, b):
    """Bits equal except that any NaN matches any NaN (numpy / ml_dtypes NaN payloads are not specified)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return np.array_equal(_bits(a)[~both_nan], _bits(b)[~both_nan])


def _ops(name, module=None):
    """The public function ``name`` (npu_emu.ops first, then the module that defines it), or Unavailable."""
    import importlib

    for mod in ("npu_emu.ops", module):
        if mod is None:
            continue
        try:
            fn = getattr(importlib.import_module(mod), name, None)
        except ImportError:
            fn = None
        if fn is not None:
            return fn
    raise Unavailable(f"{name} is not implemented in this build")


def _golden(module):
    import importlib

    try:
        return importlib.import_module(f"npu_emu.goldens.{module}")
    except ImportError:
        raise Unavailable(f"npu_emu.goldens.{module} is missing") from None


# ---------------------------------------------------------------------------------------------------------------
# SignBits (docs/ops/sign_bits.md; asv bench_sign_bits: unpack 64 MiB, pack 512 Mi float32)
# ---------------------------------------------------------------------------------------------------------------

@builder("sign_bits_unpack", (64 << 20,), (1 << 20,), "uint8 -> float32 +-1 (npu_sign_bits_unpack)")
def _sign_bits_unpack(dims, rng):
    (n,) = dims
    fn = _ops("npu_sign_bits_unpack", "npu_emu.kernels.sign_bits.api")
    g = _golden("sign_bits")
    x = rng.integers(0, 256, n, dtype=np.uint8)
    return Case("SignBitsUnpack f32", f"[{n}] u8", lambda: fn(x, 1, 0), lambda: g.sign_bits_unpack(x, 1, "float32"),
                _same_bits, n + 32 * n)


@builder("sign_bits_pack", (512 << 20,), (8 << 20,), "float32 signs -> packed uint8 (npu_sign_bits_pack)")
def _sign_bits_pack(dims, rng):
    (n,) = dims
    fn = _ops("npu_sign_bits_pack", "npu_emu.kernels.sign_bits.api")
    g = _golden("sign_bits")
    x = rng.standard_normal(n, dtype=np.float32)
    return Case("SignBitsPack f32", f"[{n}] f32", lambda: fn(x, 1), lambda: g.sign_bits_pack(x, 1),
                _same_bits, 4 * n + -(-n // 8))


# ---------------------------------------------------------------------------------------------------------------
# GatherDequantInt8 (asv bench_gather_dequant: an LLM vocabulary)
# ---------------------------------------------------------------------------------------------------------------

@builder("gather_dequant_int8", (151936, 4096, 8192), (10240, 256, 4096),
         "V x E x N: uint8 table gather + fp16 dequant (gather_dequant_int8)")
def _gather(dims, rng):
    vocab, emb, num = dims
    fn = _ops("gather_dequant_int8", "npu_emu.kernels.gather_dequant_int8.api")
    g = _golden("gather_dequant_int8")
    table = np.frombuffer(rng.bytes(vocab * emb), np.uint8).reshape(vocab, emb)
    scale = (rng.random(vocab) * 0.01 + 1e-4).astype(np.float16)
    zp = (rng.random(vocab) * 255).astype(np.float16)
    idx = rng.integers(0, vocab, num).astype(np.int32)
    return Case("GatherDequantInt8", f"[{vocab},{emb}] N={num}", lambda: fn(table, idx, scale, zp),
                lambda: g.gather_dequant_int8(table, idx, scale, zp), _same_bits,
                4 * num + 4 * vocab + 3 * num * emb)


# ---------------------------------------------------------------------------------------------------------------
# MX quantisation (asv: grouped bf16 [16384, 7168] in 8 groups; dynamic bf16 [8192, 7168] axis -1)
# ---------------------------------------------------------------------------------------------------------------

def _bf16_normal(rng, shape):
    import ml_dtypes

    return rng.standard_normal(shape, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _mx_same(got, want):
    (y, s), (gy, gs) = got, want
    return _same_bits(np.asarray(y), gy) and _same_bits(np.asarray(s), gs)


@builder("grouped_dynamic_mx_quant", (16384, 7168, 8), (1024, 512, 4),
         "m x n x groups: bf16 -> MXFP8 e4m3fn (npu_grouped_dynamic_mx_quant)")
def _grouped_mx(dims, rng):
    m, n, groups = dims
    fn = _ops("npu_grouped_dynamic_mx_quant", "npu_emu.kernels.mx_quant.api")
    g = _golden("mx_quant")
    x = _bf16_normal(rng, (m, n))
    cuts = np.sort(rng.choice(np.arange(1, m), groups - 1, replace=False)) if groups > 1 else np.array([], int)
    gi = np.append(cuts, m).astype(np.int32)
    rows = m // 64 + groups
    return Case("GroupedDynamicMxQuant e4m3", f"[{m},{n}] bf16 g={groups}",
                lambda: fn(x, gi, dst_type=24), lambda: g.grouped_dynamic_mx_quant(x, gi, dst_type="float8_e4m3fn"),
                _mx_same, 3 * m * n + 2 * rows * n + 4 * groups, device="ascend950pr")


def _dynamic_mx(dims, rng, dst_type, fmt, label):
    m, n = dims
    fn = _ops("npu_dynamic_mx_quant", "npu_emu.kernels.mx_quant.api")
    g = _golden("mx_quant")
    x = _bf16_normal(rng, (m, n))
    y_bytes = m * n // 2 if fmt.startswith("float4") else m * n
    return Case(f"DynamicMxQuant {label}", f"[{m},{n}] bf16",
                lambda: fn(x, axis=-1, dst_type=dst_type), lambda: g.dynamic_mx_quant(x, axis=-1, dst_type=fmt),
                _mx_same, 2 * m * n + y_bytes + m * -(-n // 32), device="ascend950pr")


@builder("dynamic_mx_quant_fp8", (8192, 7168), (512, 1024), "m x n: bf16 -> MXFP8 e4m3fn along axis -1")
def _dynamic_fp8(dims, rng):
    return _dynamic_mx(dims, rng, 24, "float8_e4m3fn", "e4m3")


@builder("dynamic_mx_quant_fp4", (8192, 7168), (512, 1024), "m x n: bf16 -> MXFP4 e2m1 along axis -1")
def _dynamic_fp4(dims, rng):
    return _dynamic_mx(dims, rng, 296, "float4_e2m1", "fp4 e2m1")


# ---------------------------------------------------------------------------------------------------------------
# Quantised matmul (asv bench_quant_matmul: 4096^3)
# ---------------------------------------------------------------------------------------------------------------

_INT8_SAMPLE_ROWS = 64        # int64 numpy golden: fast enough for whole rows
_FLOAT_SAMPLE = (4, 32)       # Fraction golden of the exact float models: rows, columns


def _qmm():
    fn = _ops("npu_quant_matmul", "npu_emu.kernels.quant_matmul.api")
    return fn, _golden("quant_matmul")


def _int8_case(dims, rng, mode):
    m, k, n = dims
    fn, g = _qmm()
    x1 = rng.integers(-128, 128, (m, k), dtype=np.int8)
    x2 = rng.integers(-128, 128, (k, n), dtype=np.int8)
    s = rng.uniform(0.0005, 0.005, n).astype(np.float32)
    r = min(m, _INT8_SAMPLE_ROWS)
    if mode == "K-C":
        p1 = rng.uniform(0.5, 2.0, m).astype(np.float32)
        run = lambda: fn(x1, x2, s, pertoken_scale=p1, output_dtype="bfloat16")
        gold = lambda: g.quant_matmul(x1[:r], x2, s, x1_scale=p1[:r], x1_dtype="int8", x2_dtype="int8",
                                      scale_dtype="float32", out_dtype="bfloat16")
        label, out_bytes = "QuantMatmul int8 K-C bf16", 2
    else:
        # npu_quant_matmul packs a float32 scale into the UINT64 word itself (FP19), as torch_npu does
        run = lambda: fn(x1, x2, s, output_dtype="float16")
        gold = lambda: g.quant_matmul(x1[:r], x2, g.trans_quant_param(s), x1_dtype="int8", x2_dtype="int8",
                                      scale_dtype="uint64", out_dtype="float16")
        label, out_bytes = "QuantMatmul int8 T-C fp16", 2
    return Case(label, f"{m}x{k}x{n}", run, gold, lambda got, want: _same_bits(np.asarray(got)[:r], want),
                m * k + k * n + out_bytes * m * n + 4 * (m + n), flops=2 * m * k * n, peak="int8_peak_ops",
                golden_fraction=r / m)


@builder("quant_matmul_int8_kc_bf16", (4096, 4096, 4096), (256, 512, 512),
         "m x k x n: int8, per-token x per-channel float32 scales -> bf16 (npu_quant_matmul)")
def _qmm_kc(dims, rng):
    return _int8_case(dims, rng, "K-C")


@builder("quant_matmul_int8_tc_fp16", (4096, 4096, 4096), (256, 512, 512),
         "m x k x n: int8, per-channel scale packed to UINT64 -> fp16 (npu_quant_matmul)")
def _qmm_tc(dims, rng):
    return _int8_case(dims, rng, "T-C")


def _sub(got, r, c):
    return np.asarray(got)[:r, :c]


@builder("quant_matmul_fp8_kc_bf16", (4096, 4096, 4096), (128, 512, 256),
         "m x k x n: fp8 e4m3fn on ascend950pr, float_accum='exact' -> bf16 (npu_quant_matmul)")
def _qmm_fp8(dims, rng):
    import ml_dtypes

    m, k, n = dims
    fn, g = _qmm()
    e4m3 = ml_dtypes.float8_e4m3fn
    x1 = rng.standard_normal((m, k), np.float32).astype(e4m3)
    x2 = rng.standard_normal((k, n), np.float32).astype(e4m3)
    s = rng.uniform(0.01, 0.1, n).astype(np.float32)
    p1 = rng.uniform(0.5, 2.0, m).astype(np.float32)
    r, c = min(m, _FLOAT_SAMPLE[0]), min(n, _FLOAT_SAMPLE[1])
    return Case("QuantMatmul fp8 K-C bf16", f"{m}x{k}x{n}",
                lambda: fn(x1, x2, s, pertoken_scale=p1, output_dtype="bfloat16", soc="ascend950pr"),
                lambda: g.quant_matmul(x1[:r], x2[:, :c], s[:c], x1_scale=p1[:r], x1_dtype="float8_e4m3fn",
                                       x2_dtype="float8_e4m3fn", scale_dtype="float32", out_dtype="bfloat16"),
                lambda got, want: _same_bits(_sub(got, r, c), want),
                m * k + k * n + 2 * m * n + 4 * (m + n), flops=2 * m * k * n, peak="fp8_peak_flops",
                device="ascend950pr", golden_fraction=(r * c) / (m * n))


@builder("quant_matmul_mxfp8_bf16", (4096, 4096, 4096), (128, 512, 256),
         "m x k x n: MXFP8 e4m3fn with E8M0 scales per 32 on ascend950pr -> bf16 (npu_quant_matmul)")
def _qmm_mx(dims, rng):
    import ml_dtypes

    m, k, n = dims
    if k % 64:
        raise ValueError(f"the MX demo case needs k % 64 == 0 (got k={k})")
    fn, g = _qmm()
    e4m3 = ml_dtypes.float8_e4m3fn
    x1 = rng.standard_normal((m, k), np.float32).astype(e4m3)
    x2t = rng.standard_normal((n, k), np.float32).astype(e4m3)      # weight stored (n, k), as the MX quantizers give
    s2 = rng.integers(120, 130, (n, k // 64, 2)).astype(np.uint8)
    s1 = rng.integers(120, 130, (m, k // 64, 2)).astype(np.uint8)
    r, c = min(m, _FLOAT_SAMPLE[0]), min(n, _FLOAT_SAMPLE[1])
    e1 = s1.reshape(m, k // 32)                                      # pairs are consecutive k-groups
    e2 = s2.reshape(n, k // 32).T
    return Case("QuantMatmul MXFP8 bf16", f"{m}x{k}x{n}",
                lambda: fn(x1, x2t.T, s2, pertoken_scale=s1, scale_dtype="float8_e8m0",
                           pertoken_scale_dtype="float8_e8m0", group_sizes=[1, 1, 32], output_dtype="bfloat16",
                           soc="ascend950pr"),
                lambda: g.quant_matmul(x1[:r], x2t[:c].T, e2[:, :c], x1_scale=e1[:r], x1_dtype="float8_e4m3fn",
                                       x2_dtype="float8_e4m3fn", scale_dtype="float8_e8m0", out_dtype="bfloat16"),
                lambda got, want: _same_bits(_sub(got, r, c), want),
                m * k + k * n + 2 * m * n + (m + n) * k // 32, flops=2 * m * k * n, peak="fp8_peak_flops",
                device="ascend950pr", golden_fraction=(r * c) / (m * n))


# ---------------------------------------------------------------------------------------------------------------
# Enhanced DataCopy CO1 -> CO2 with dequantisation (asv bench_data_copy: 8192 x 8192 int32)
# ---------------------------------------------------------------------------------------------------------------

def _deq_words(scales, signed):
    """DEQ words: the float32 scale in bits 0..31 (already on the 19-bit grid the unit reads), shift field 0, no
    MCB, offset 0, bit 46 = signed int8 output (docs/ops/data_copy_dequant.md §3)."""
    w = (scales.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).astype(np.uint64)
    return w | np.uint64(1 << 46) if signed else w


def _deq_case(dims, rng, mode):
    rows, n = dims
    fn = _ops("data_copy_dequant", "npu_emu.kernels.data_copy_dequant.api")
    g = _golden("data_copy_deq")
    acc = rng.integers(-(1 << 15), 1 << 15, (rows, n), dtype=np.int32)
    if mode == "DEQ8":
        word = int(_deq_words(np.array([2.0 ** -7]), True)[0])
        run = lambda: fn(acc, word, mode="DEQ8")
        gold = lambda: g.data_copy_dequant(acc, np.uint64(word), mode="DEQ8")
        label, out_bytes = "DataCopy DEQ8 (scalar)", 1
    else:
        words = _deq_words(rng.uniform(2.0 ** -8, 2.0 ** -6, n), False)
        run = lambda: fn(acc, words, mode="VDEQ16")
        gold = lambda: g.data_copy_dequant(acc, words, mode="DEQ16")
        label, out_bytes = "DataCopy VDEQ16 (per-channel)", 2
    return Case(label, f"[{rows},{n}] i32", run, gold, _same_bits, (4 + out_bytes) * rows * n)


@builder("data_copy_deq8", (8192, 8192), (1024, 1024), "rows x N: int32 L0C -> int8 via a scalar DEQ8 word")
def _deq8(dims, rng):
    return _deq_case(dims, rng, "DEQ8")


@builder("data_copy_vdeq16", (8192, 8192), (1024, 1024), "rows x N: int32 L0C -> fp16 via per-channel VDEQ16")
def _vdeq16(dims, rng):
    return _deq_case(dims, rng, "VDEQ16")


# ---------------------------------------------------------------------------------------------------------------
# Codecs (asv bench_codecs: 16 Mi elements; oracles ml_dtypes / en_dtypes)
# ---------------------------------------------------------------------------------------------------------------

def _codec_input(rng, n):
    x = (rng.standard_normal(n, dtype=np.float32) * 64).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 465.0], np.float32)
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    return x


def _fp8_same(dt):
    def same(a, b):
        a, b = np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8)
        nan_a = np.isnan(a.view(dt).astype(np.float32))
        nan_b = np.isnan(b.view(dt).astype(np.float32))
        return a.shape == b.shape and np.array_equal(nan_a, nan_b) and np.array_equal(a[~nan_a], b[~nan_b])

    return same


@builder("encode_float8_e4m3fn", (16 << 20,), (1 << 20,), "n: float32 -> FP8 E4M3FN codes (npu_emu.dtypes.encode)")
def _enc_e4m3(dims, rng):
    import ml_dtypes

    from npu_emu import dtypes

    (n,) = dims
    x = _codec_input(rng, n)
    return Case("encode f32->float8_e4m3fn", f"[{n}] f32", lambda: dtypes.encode(x, "float8_e4m3fn"),
                lambda: x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8), _fp8_same(ml_dtypes.float8_e4m3fn), 5 * n)


@builder("decode_float8_e4m3fn", (16 << 20,), (1 << 20,), "n: FP8 E4M3FN codes -> float32 (npu_emu.dtypes.decode)")
def _dec_e4m3(dims, rng):
    import ml_dtypes

    from npu_emu import dtypes

    (n,) = dims
    codes = rng.integers(0, 256, n, dtype=np.uint8)
    return Case("decode float8_e4m3fn->f32", f"[{n}] u8", lambda: dtypes.decode(codes, "float8_e4m3fn"),
                lambda: codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32), _same_float, 5 * n)


@builder("encode_hifloat8", (16 << 20,), (1 << 20,), "n: float32 -> HiFloat8 codes, round half away (vs en_dtypes)")
def _enc_hif8(dims, rng):
    from npu_emu import dtypes

    try:
        import en_dtypes
    except ImportError:
        raise Unavailable("the HiFloat8 oracle en_dtypes is not installed (pip install en-dtypes)") from None
    (n,) = dims
    x = _codec_input(rng, n)

    def gold():
        with np.errstate(invalid="ignore", over="ignore"):
            return x.astype(en_dtypes.hifloat8).view(np.uint8)

    # 0x80 is HiF8's only NaN on both sides, so the codes compare exactly (docs/codecs.md §12)
    return Case("encode f32->hifloat8", f"[{n}] f32", lambda: dtypes.encode(x, "hifloat8"), gold, _same_bits, 5 * n)


# ---------------------------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------------------------

def select(only=None):
    """Builder keys for ``only`` (keys or key prefixes; None = all), in table order."""
    if not only:
        return list(BUILDERS)
    keys = []
    for want in only:
        hit = [k for k in BUILDERS if k == want or k.startswith(want)]
        if not hit:
            raise SystemExit(f"npu-emu: no demo case {want!r}; choose from {', '.join(BUILDERS)}")
        keys.extend(k for k in hit if k not in keys)
    return keys


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


_host_flops_cache = []


def host_flops():
    """The host's float32 GEMM rate (numpy BLAS, 1024^3, best of 3): the compute side of the host roofline."""
    if not _host_flops_cache:
        a = np.ones((1024, 1024), np.float32)
        np.matmul(a, a)
        t, _ = _best(lambda: np.matmul(a, a), 3)
        _host_flops_cache.append(2 * 1024 ** 3 / t)
    return _host_flops_cache[0]


def roofline_ratios(case, seconds, threads):
    """(emulator / host roofline, emulator / device roofline, device label)."""
    from npu_emu.device import platforms

    host = case.nbytes / (HOST_COPY_BPS_PER_THREAD * threads)
    if case.flops:
        host = max(host, case.flops / host_flops())
    dev_name = DEVICE
    plat = platforms.get(DEVICE)
    if case.flops and not plat.is_known(case.peak):       # e.g. fp8 on a 910B: use the op's own SoC
        dev_name = case.device
        plat = platforms.get(case.device)
    dev = plat.device_seconds(case.nbytes, case.flops, peak=case.peak) if case.flops else \
        plat.device_seconds(case.nbytes)
    return seconds / host, seconds / dev, dev_name


def main(small=False, only=None, shapes=None, repeat=None, threads=None, json_path=None, progress=True,
         out=None):
    """Run the demo; returns the exit status (0: every case bit-exact, 1: a mismatch or an error)."""
    import numba
    from tqdm import tqdm

    out = out or sys.stdout
    shapes = dict(shapes or {})
    unknown = [k for k in shapes if k not in BUILDERS]
    if unknown:
        raise SystemExit(f"npu-emu: --shape for unknown demo case(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(BUILDERS)}")
    if threads is not None:
        if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
            raise SystemExit(f"npu-emu: --threads {threads} must be in 1..{numba.config.NUMBA_NUM_THREADS} "
                             f"(set NUMBA_NUM_THREADS for more)")
        numba.set_num_threads(threads)
    nthreads = numba.get_num_threads()
    keys = select(only)
    if repeat is None:
        repeat = 3 if small else 2
    rows, notes, ok_all = [], [], True
    # tqdm's disable=None: a bar on a terminal only, none in logs and pipes
    bar = tqdm(keys, desc="npu-emu demo", unit="op", file=sys.stderr, disable=None if progress else True,
               leave=False)
    for key in bar:
        b = BUILDERS[key]
        dims = shapes.get(key, b.small if small else b.production)
        rng = np.random.default_rng(2026)
        try:
            bar.set_postfix_str(f"{key}: inputs")
            if dims != b.small:
                # compile / load from the numba cache on the small shape, so the big one is timed warm
                bar.set_postfix_str(f"{key}: warm-up")
                b.build(b.small, np.random.default_rng(0)).run()
            case = b.build(dims, rng)
            if dims == b.small:
                bar.set_postfix_str(f"{key}: warm-up")
                case.run()
            bar.set_postfix_str(f"{key}: emulator x{repeat}")
            t_emu, got = _best(case.run, repeat)
            bar.set_postfix_str(f"{key}: golden")
            t_gold, want = _best(case.golden, 1)
            bar.set_postfix_str(f"{key}: compare")
            ok = bool(case.same(got, want))
        except Unavailable as e:
            notes.append(f"skipped {key}: {e}")
            continue
        except Exception as e:          # a failing op must not hide the others: report it as a failed row
            ok_all = False
            notes.append(f"error in {key}: {type(e).__name__}: {e}")
            rows.append(dict(key=key, op=key, shape=fmt_dims(dims), error=str(e), bit_exact=False))
            continue
        ok_all &= ok
        host, dev, dev_name = roofline_ratios(case, t_emu, nthreads)
        rate = case.flops / t_emu / 1e9 if case.flops else case.nbytes / t_emu / 1e9
        unit = ("GOP/s" if case.peak == "int8_peak_ops" else "GFLOP/s") if case.flops else "GB/s"
        rows.append(dict(key=key, op=case.op, shape=case.shape, seconds=t_emu, rate=rate, rate_unit=unit,
                         golden_seconds=t_gold / case.golden_fraction, sampled=case.golden_fraction < 1,
                         speedup=t_gold / case.golden_fraction / t_emu, over_host_roofline=host,
                         over_device_roofline=dev, device=dev_name, bit_exact=ok))
        del case, got, want
    bar.close()
    _print_table(rows, notes, small, nthreads, out)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"threads": nthreads, "small": small, "rows": rows, "notes": notes}, f, indent=2)
    return 0 if ok_all else 1


def _print_table(rows, notes, small, threads, out):
    head = ("op", "shape", "time ms", "rate", "x golden", "/host roof", f"/{DEVICE[6:].upper()} roof", "bit-exact")
    table = []
    for r in rows:
        if "error" in r:
            table.append((r["op"], r["shape"], "-", "-", "-", "-", "-", "ERROR"))
            continue
        mark = "*" if r["device"] != DEVICE else ""
        table.append((r["op"], r["shape"], _fmt(r["seconds"] * 1e3), f"{_fmt(r['rate'])} {r['rate_unit']}",
                      ("~" if r["sampled"] else "") + _fmt(r["speedup"]), _fmt(r["over_host_roofline"]),
                      _fmt(r["over_device_roofline"]) + mark, "yes" if r["bit_exact"] else "NO"))
    widths = [max([len(head[i])] + [len(t[i]) for t in table]) for i in range(len(head))]
    print(f"npu-emu demo ({'small' if small else 'production'} shapes, {threads} numba threads)", file=out)
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)), file=out)
    for t in table:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths)), file=out)
    if any(r.get("sampled") for r in rows):
        print("~ golden run on a sample of the output rows (and columns for the exact float models); its time is "
              "scaled to the whole output", file=out)
    if any(r.get("device", DEVICE) != DEVICE for r in rows if "error" not in r):
        print("* no 910B2 figure for this arithmetic: roofline of the ascend950pr "
              "(docs/device/platforms.md §4)", file=out)
    print("/host roof: time over max(bytes / (25 GB/s x threads), ops / host float32 GEMM rate); "
          f"/{DEVICE[6:].upper()} roof: time over max(bytes / HBM bandwidth, ops / peak)", file=out)
    for note in notes:
        print(note, file=out)
    bad = [r["op"] for r in rows if not r["bit_exact"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} cases bit-exact" + (f"; MISMATCH: {', '.join(bad)}" if bad else ""),
          file=out)


def _fmt(v):
    if isinstance(v, float):
        if v >= 100:
            return f"{v:,.0f}"
        return f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    return str(v)


if __name__ == "__main__":
    sys.exit(main(small="--small" in sys.argv))
