"""Every user-facing op configuration as a named tiny call through the public API: the one list that
``npu-emu compile`` runs to fill numba's cache ahead of time and that benchmarks/bench_startup.py times cold.

A configuration is one way of calling an op that makes numba compile something of its own: a dst format, an input
dtype, a quant-matmul mode, a DEQ mode, a codec. Each builds small inputs (numpy only) and returns a zero-argument
call; the shapes are small but take the Python-level branches of typical calls (the grouped MX quantizer's fused
walk, the matmul's default accumulation), so the call compiles what a production call would. Run-time switches
that the kernels read as values (round modes, scale_alg, ReLU, saturate) compile nothing new and get no entry.

The configurations of an op are declared by its folder (``kernels/<op>/op.py`` names its ``configs.py``; an op of
another package declares its own through the registry); the codecs of npu_emu.dtypes, which are no op, are listed
here. Configurations are grouped by op family (``family``, the names ``npu-emu compile --ops`` takes). Families
whose kernels call the same cached njit functions share a :func:`schedule_group` (their declarations'
``schedule_group``): ``npu-emu compile --jobs`` runs each group in one worker so that no two workers compile the
same function at once (npu_emu/device/cache_lock.py keeps the cache consistent regardless; the grouping avoids
compiling one function twice).

Importing this module imports numpy and the op declarations only; a configuration imports the ops it calls when it
is built.
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.frontend import registry
from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng


@dataclass(frozen=True)
class OpConfig:
    name: str          # "<family>.<variant>", unique
    family: str        # the --ops name
    help: str
    build: object      # () -> zero-argument callable: the call (inputs already built)

    def call(self):
        """Build the inputs and run the call once; returns the result."""
        return self.build()()


# ---------------------------------------------------------------------------------------------------------------
# Codecs (npu_emu.dtypes)
# ---------------------------------------------------------------------------------------------------------------

_CODEC_CONFIGS, config = collector()

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


def _build():
    table = {}
    for c in [*registry.configs(), *_CODEC_CONFIGS]:
        if c.name in table:
            raise ValueError(f"duplicate op configuration {c.name}")
        table[c.name] = OpConfig(c.name, c.family, c.help, c.build)
    return table


CONFIGS = _build()

# the codecs' cold compile (npu-emu compile --jobs 2 on an idle 2-core box): they are no op, so no declaration says it
_CODECS_SECONDS = 10


def _group_of(family):
    for op in registry.ops().values():
        if op.name == family:
            return op.schedule_group or op.name
    return family


def schedule_group(family):
    """The worker group of an op family for ``npu-emu compile --jobs``."""
    return _group_of(family)


def _cost_hint():
    hint = {"codecs": _CODECS_SECONDS}
    for op in registry.ops().values():
        g = op.schedule_group or op.name
        hint[g] = max(hint.get(g, 0), op.compile_seconds)
    return hint


# cold compile seconds of each schedule group, from the declarations: only the order in which --jobs starts the
# groups, longest first, so that the longest one is not started last
COST_HINT = _cost_hint()


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
