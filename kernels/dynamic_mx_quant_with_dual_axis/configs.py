"""The compile configurations of DynamicMxQuantWithDualAxis (``npu-emu compile``, declared in op.py): one tiny call
per output format and path (bf16 / rint / OCP: the fused walk; bf16 / rint with scale_alg 1 or 2: the vectorised
per-axis walk; float16 or another round mode: the element path)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng

CONFIGS, config = collector()

_DST = {"e4m3": 24, "e5m2": 23, "fp4_e2m1": 296, "fp4_e1m2": 297}


def _dual(dst, dtype="bfloat16", **kw):
    def build():
        from npu_emu.ops import npu_dynamic_mx_quant_with_dual_axis

        x = _rng().standard_normal((64, 256), dtype=np.float32) * np.float32(4)
        x = _bf16(x) if dtype == "bfloat16" else x.astype(dtype)
        return lambda: npu_dynamic_mx_quant_with_dual_axis(x, dst_type=_DST[dst], **kw)

    return build


for _dst in _DST:
    config(f"dynamic_mx_quant_with_dual_axis.{_dst}", f"npu_dynamic_mx_quant_with_dual_axis bf16 -> {_dst}")(
        _dual(_dst))
    config(f"dynamic_mx_quant_with_dual_axis.{_dst}_fp16",
           f"npu_dynamic_mx_quant_with_dual_axis float16 -> {_dst}")(_dual(_dst, dtype="float16"))
for _dst in ("fp4_e2m1", "fp4_e1m2"):
    config(f"dynamic_mx_quant_with_dual_axis.{_dst}_floor",
           f"npu_dynamic_mx_quant_with_dual_axis bf16 -> {_dst}, floor")(_dual(_dst, round_mode="floor"))
for _dst, _alg in (("e4m3", 1), ("e5m2", 1), ("fp4_e2m1", 2)):
    config(f"dynamic_mx_quant_with_dual_axis.{_dst}_alg{_alg}",
           f"npu_dynamic_mx_quant_with_dual_axis bf16 -> {_dst}, scale_alg {_alg}")(_dual(_dst, scale_alg=_alg))
