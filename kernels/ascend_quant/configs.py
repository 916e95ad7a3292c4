"""The compile configurations of AscendQuantV2 and Quantize (``npu-emu compile``, declared in op.py).

AscendQuantV2 (npu_quantize div_mode=False) has one fused kernel per layout and x dtype, and as many faithful ones
(``faithful=True``, the UB-staged transliteration). Quantize (div_mode=True, Ascend 950) compiles one fused kernel
per (x, y, scale, zero-point) dtype quadruple: the x x y pairs with a float32 scale and no zero point are listed,
plus the bfloat16 scale and zero point that vLLM-Ascend's W8A8 path passes and an int8 zero point, and the tile walk
(``faithful=True``) of two of them; other quadruples compile on their first call.
"""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng

CONFIGS, config = collector()

_CODES = {"int8": 1, "uint8": 13, "int32": 14}      # torch.int8 / quint8 / qint32 ScalarType codes


def _x(dtype, shape):
    x = _rng().standard_normal(shape) * 4
    return _bf16(x) if dtype == "bfloat16" else x.astype(dtype)


def _v2(layout, dtype, faithful=False):
    def build():
        from npu_emu.ops import npu_quantize

        x = _x(dtype, (8, 64))
        n = 1 if layout == "tensor" else 64
        scale = _x(dtype, (n,))
        offset = _x(dtype, (n,))
        return lambda: npu_quantize(x, scale, offset, 1, -1, False, faithful=faithful)

    return build


for _layout in ("channel", "tensor"):
    for _dt, _tag in (("bfloat16", "bf16"), ("float16", "f16"), ("float32", "f32")):
        config(f"ascend_quant.v2_{_layout}_{_tag}",
               f"npu_quantize(div_mode=False) per {_layout}, {_dt} x (AscendQuantV2)")(_v2(_layout, _dt))
        config(f"ascend_quant.v2_{_layout}_{_tag}_faithful",
               f"npu_quantize(div_mode=False, faithful=True) per {_layout}, {_dt} x")(_v2(_layout, _dt, True))


def _quantize(x_dtype, y_dtype, s_dtype="float32", z_dtype=None, faithful=False):
    def build():
        from npu_emu.ops import npu_quantize

        x = _x(x_dtype, (8, 64))
        scale = (np.abs(_x("float32", (64,))) + np.float32(0.5)).astype(np.float32)
        scale = _bf16(scale) if s_dtype == "bfloat16" else scale
        zp = None
        if z_dtype is not None:
            zp = _x(z_dtype, (64,)) if z_dtype in ("bfloat16", "float32") else np.arange(64).astype(z_dtype)
        return lambda: npu_quantize(x, scale, zp, _CODES[y_dtype], -1, True, soc="ascend950pr", faithful=faithful)

    return build


_TAGS = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "int8": "i8", "uint8": "u8", "int32": "i32"}
for _xd in ("bfloat16", "float16", "float32"):
    for _yd in ("int8", "uint8", "int32"):
        config(f"ascend_quant.quantize_{_TAGS[_xd]}_{_TAGS[_yd]}",
               f"npu_quantize(div_mode=True) on the Ascend 950, {_xd} x -> {_yd}, float32 scale (Quantize)")(
            _quantize(_xd, _yd))
config("ascend_quant.quantize_bf16_i8_bf16_zp", "npu_quantize(div_mode=True) on the Ascend 950, bfloat16 x, scale "
       "and zero point -> int8 (Quantize)")(_quantize("bfloat16", "int8", "bfloat16", "bfloat16"))
config("ascend_quant.quantize_f32_i8_i8_zp", "npu_quantize(div_mode=True) on the Ascend 950, float32 x, int8 zero "
       "point -> int8 (Quantize)")(_quantize("float32", "int8", "float32", "int8"))
config("ascend_quant.quantize_f32_i8_faithful", "npu_quantize(div_mode=True, faithful=True) on the Ascend 950, "
       "float32 x -> int8 (the Quantize tile walk)")(_quantize("float32", "int8", faithful=True))
config("ascend_quant.quantize_bf16_i8_bf16_zp_faithful", "npu_quantize(div_mode=True, faithful=True) on the Ascend "
       "950, bfloat16 x, scale and zero point -> int8")(_quantize("bfloat16", "int8", "bfloat16", "bfloat16", True))
