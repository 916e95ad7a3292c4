"""The compile configurations of SwiGlu (``npu-emu compile``, declared in op.py): one fused kernel per dtype, and
the faithful (instruction-level) kernel per dtype."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng

CONFIGS, config = collector()


def _swiglu(dtype, **kw):
    def build():
        from npu_emu.ops import npu_swiglu

        x = _rng().standard_normal((8, 64))
        x = _bf16(x) if dtype == "bfloat16" else x.astype(dtype)
        return lambda: npu_swiglu(x, **kw)

    return build


config("swiglu.bf16", "npu_swiglu on bfloat16 (fused kernel, swish table)")(_swiglu("bfloat16"))
config("swiglu.f16", "npu_swiglu on float16 (fused kernel, swish table)")(_swiglu("float16"))
config("swiglu.f32", "npu_swiglu on float32 (fused kernel)")(_swiglu(np.float32))
config("swiglu.bf16_faithful", "npu_swiglu on bfloat16, faithful=True (the instructions, tile by tile)")(
    _swiglu("bfloat16", faithful=True))
config("swiglu.f16_faithful", "npu_swiglu on float16, faithful=True")(_swiglu("float16", faithful=True))
config("swiglu.f32_faithful", "npu_swiglu on float32, faithful=True")(_swiglu(np.float32, faithful=True))
