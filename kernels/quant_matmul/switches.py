"""The quantised matmul family's switches: one table of defaults and choices (docs/ops/quant_matmul.md §1,
docs/conventions.md §3.1).

Every entry reads its defaults here: npu_quant_matmul, the aclnnQuantMatmulV3/V4/V5/WeightNz entries (the V3/V4
ones take only some of the switches; the rest come from this table), sparse4to2_quant_matmul and the CLI. Plain
data and a frozen dataclass: importing this module loads neither numba nor the kernels.
"""

from dataclasses import dataclass

from npu_emu.device import memo, platforms
from npu_emu.frontend.core import as_int, choice

DEFAULTS = {
    "soc": "ascend910b2",
    "float_accum": "exact",                 # accum.py: the cube's float accumulation
    "fixpipe_round": "rne",                 # the Fixpipe / output cast round mode
    "cast_overflow": "inf",                 # the output cast: Inf or saturate
    "tcg_fp8_overflow": "nan",              # the T-CG weight dequant's fp8 overflow (v4.py)
    "fp4_nibble_order": "low_first",        # packed FP4: which nibble is the even element
    "e8m0_zero": "pow2",                    # E8M0 code 0x00: 2^-127 or 0.0
    "group_size_inference": "checker",      # groupSize 0: infer as the checker does, or require it
    "core_num": None,                       # cube cores (None: the platform's)
    "faithful": False,                      # integer cube block by block in njit
    "validate": True,                       # the launch model's access validation
}

CHOICES = {
    "float_accum": ("exact", "kchunk", "sequential", "numpy"),     # = accum.FLOAT_ACCUM (a kernel module: no import)
    "fixpipe_round": ("rne", "half_away"),
    "cast_overflow": ("inf", "saturate"),
    "tcg_fp8_overflow": ("nan", "saturate"),
    "fp4_nibble_order": ("low_first", "high_first"),
    "e8m0_zero": ("pow2", "zero"),
    "group_size_inference": ("checker", "explicit"),
}


@dataclass(frozen=True)
class Switches:
    soc: str = DEFAULTS["soc"]
    float_accum: str = DEFAULTS["float_accum"]
    fixpipe_round: str = DEFAULTS["fixpipe_round"]
    cast_overflow: str = DEFAULTS["cast_overflow"]
    tcg_fp8_overflow: str = DEFAULTS["tcg_fp8_overflow"]
    fp4_nibble_order: str = DEFAULTS["fp4_nibble_order"]
    e8m0_zero: str = DEFAULTS["e8m0_zero"]
    group_size_inference: str = DEFAULTS["group_size_inference"]
    core_num: int = DEFAULTS["core_num"]
    faithful: bool = DEFAULTS["faithful"]
    validate: bool = DEFAULTS["validate"]


def switches(**given):
    """The checked switches of a call: ``given`` over DEFAULTS (a frozen Switches; pure in the arguments, so a
    repeat takes it from the memo)."""
    unknown = set(given) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unknown quant_matmul switch(es) {sorted(unknown)}")
    kw = dict(DEFAULTS, **given)
    return memo.call(_make_switches, *[kw[name] for name in DEFAULTS])


def _make_switches(soc, float_accum, fixpipe_round, cast_overflow, tcg_fp8_overflow, fp4_nibble_order, e8m0_zero,
                   group_size_inference, core_num, faithful, validate):
    platforms.get(soc)  # unknown soc -> the platform module's error
    c = lambda v, name: choice(v, name, CHOICES[name])
    return Switches(
        soc=soc, float_accum=c(float_accum, "float_accum"), fixpipe_round=c(fixpipe_round, "fixpipe_round"),
        cast_overflow=c(cast_overflow, "cast_overflow"), tcg_fp8_overflow=c(tcg_fp8_overflow, "tcg_fp8_overflow"),
        fp4_nibble_order=c(fp4_nibble_order, "fp4_nibble_order"), e8m0_zero=c(e8m0_zero, "e8m0_zero"),
        group_size_inference=c(group_size_inference, "group_size_inference"),
        core_num=None if core_num is None else as_int(core_num, "core_num"), faithful=bool(faithful),
        validate=bool(validate))

