"""The compile configurations of DequantSwigluQuant (``npu-emu compile``, declared in op.py)."""

import numpy as np

from npu_emu.frontend.cases import collector, rng as _rng

CONFIGS, config = collector()


def _dsq(**kw):
    def build():
        from npu_emu.ops import npu_dequant_swiglu_quant

        r = _rng()
        x = r.integers(-1000, 1000, (8, 128), dtype=np.int32)
        ws = (r.random((2, 128)) * 0.01).astype(np.float32)
        gi = np.array([4, 4], np.int64)
        return lambda: npu_dequant_swiglu_quant(x, weight_scale=ws, group_index=gi, activate_left=True,
                                                quant_mode=1, **kw)

    return build


config("dequant_swiglu_quant.group", "npu_dequant_swiglu_quant with group_index (fused row kernel)")(_dsq())


def _dsq_nogroup(**kw):
    def build():
        from npu_emu.ops import npu_dequant_swiglu_quant

        r = _rng()
        x = r.integers(-1000, 1000, (8, 128), dtype=np.int32)
        ws = (r.random(128) * 0.01).astype(np.float32)
        return lambda: npu_dequant_swiglu_quant(x, weight_scale=ws, activation_scale=np.ones(8, np.float32),
                                                quant_mode=1, **kw)

    return build


config("dequant_swiglu_quant.nogroup", "npu_dequant_swiglu_quant without group_index (SwiGluTilingData kernel)")(
    _dsq_nogroup())
config("dequant_swiglu_quant.group_faithful", "npu_dequant_swiglu_quant with group_index, faithful=True")(
    _dsq(faithful=True))
config("dequant_swiglu_quant.nogroup_faithful", "npu_dequant_swiglu_quant without group_index, faithful=True")(
    _dsq_nogroup(faithful=True))
