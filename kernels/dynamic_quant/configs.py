"""The compile configurations of DynamicQuant (``npu-emu compile``, declared in op.py): each a tiny call that makes
numba compile one specialised copy of kernel.py (x format, output format, symmetry, path)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()


def _call(fn, x_dtype="bfloat16", **kw):
    def build():
        from npu_emu import ops

        x = _rng().standard_normal((4, 256)).astype(np.float32)
        x = _bf16(x) if x_dtype == "bfloat16" else x.astype(np.float16)
        return lambda: getattr(ops, fn)(x, **kw)

    return build


config("dynamic_quant.int8_bf16", "npu_dynamic_quant bf16 -> int8 (fused)")(_call("npu_dynamic_quant"))
config("dynamic_quant.int8_f16", "npu_dynamic_quant float16 -> int8 (fused)")(
    _call("npu_dynamic_quant", "float16"))
config("dynamic_quant.int4_bf16", "npu_dynamic_quant bf16 -> int4 in int32 (fused)")(
    _call("npu_dynamic_quant", dst_type=16))
config("dynamic_quant.asym_bf16", "npu_dynamic_quant_asymmetric bf16 -> int8 (fused)")(
    _call("npu_dynamic_quant_asymmetric"))
