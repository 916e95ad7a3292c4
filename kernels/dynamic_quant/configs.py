"""The compile configurations of DynamicQuant (``npu-emu compile``, declared in op.py): each a tiny call that makes
numba compile one specialised copy of kernel.py (x format, output format, symmetry, smooth or not, chunked row walk
or not, path)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()


def _call(fn, x_dtype="bfloat16", n=256, smooth=False, **kw):
    def build():
        from npu_emu import ops

        x = _rng().standard_normal((4, n)).astype(np.float32)
        x = _bf16(x) if x_dtype == "bfloat16" else x.astype(np.float16)
        if smooth:
            kw["smooth_scales"] = x[0] * 0 + x.dtype.type(1.5)
        return lambda: getattr(ops, fn)(x, **kw)

    return build


config("dynamic_quant.int8_bf16", "npu_dynamic_quant bf16 -> int8 (fused)")(_call("npu_dynamic_quant"))
config("dynamic_quant.int8_f16", "npu_dynamic_quant float16 -> int8 (fused)")(
    _call("npu_dynamic_quant", "float16"))
config("dynamic_quant.int4_bf16", "npu_dynamic_quant bf16 -> int4 in int32 (fused)")(
    _call("npu_dynamic_quant", dst_type=16))
config("dynamic_quant.asym_bf16", "npu_dynamic_quant_asymmetric bf16 -> int8 (fused)")(
    _call("npu_dynamic_quant_asymmetric"))
config("dynamic_quant.int8_bf16_smooth", "npu_dynamic_quant bf16 -> int8 with smooth_scales (also the MoE keys 7)")(
    _call("npu_dynamic_quant", smooth=True))
config("dynamic_quant.int8_bf16_chunked", "npu_dynamic_quant bf16 -> int8, a row too long for UB (key 6 walk)")(
    _call("npu_dynamic_quant", n=20000))
config("dynamic_quant.950_pertoken_fp8", "npu_dynamic_quant bf16 -> float8_e4m3fn per token on Ascend 950 (arch35)")(
    _call("npu_dynamic_quant", dst_type=24, soc="ascend950pr"))
config("dynamic_quant.950_pertensor_int8", "npu_dynamic_quant bf16 -> int8 per tensor on Ascend 950 (two-pass)")(
    _call("npu_dynamic_quant", quant_mode="pertensor", soc="ascend950pr"))
# the other Ascend 950 per-token outputs and forms, and the instruction-level transliterations (faithful=True)
config("dynamic_quant.950_pertoken_int8", "npu_dynamic_quant bf16 -> int8 per token on Ascend 950 (arch35)")(
    _call("npu_dynamic_quant", soc="ascend950pr"))
config("dynamic_quant.950_pertoken_int4", "npu_dynamic_quant bf16 -> int4 per token on Ascend 950 (arch35)")(
    _call("npu_dynamic_quant", dst_type=16, soc="ascend950pr"))
config("dynamic_quant.950_pertoken_e5m2", "npu_dynamic_quant bf16 -> float8_e5m2 per token on Ascend 950 (arch35)")(
    _call("npu_dynamic_quant", dst_type=23, soc="ascend950pr"))
config("dynamic_quant.950_pertoken_hif8", "npu_dynamic_quant bf16 -> hifloat8 per token on Ascend 950 (arch35)")(
    _call("npu_dynamic_quant", dst_type=290, soc="ascend950pr"))
config("dynamic_quant.950_asym_int8", "npu_dynamic_quant_asymmetric bf16 -> int8 per token on Ascend 950")(
    _call("npu_dynamic_quant_asymmetric", soc="ascend950pr"))
config("dynamic_quant.950_pertoken_int8_smooth", "npu_dynamic_quant bf16 -> int8 per token with smooth_scales on "
       "Ascend 950")(_call("npu_dynamic_quant", smooth=True, soc="ascend950pr"))
config("dynamic_quant.int8_bf16_faithful", "npu_dynamic_quant bf16 -> int8, faithful=True (the instructions)")(
    _call("npu_dynamic_quant", faithful=True))
config("dynamic_quant.950_pertoken_int8_faithful", "npu_dynamic_quant bf16 -> int8 per token on Ascend 950, "
       "faithful=True")(_call("npu_dynamic_quant", soc="ascend950pr", faithful=True))
