"""The compile configurations of DynamicMxQuant and GroupedDynamicMxQuant (``npu-emu compile``, declared in op.py): each a tiny call through
the public API that makes numba compile one specialisation of its own (docs/cli.md, ``compile``)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()

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
for _dst in MX_DST:
    config(f"dynamic_mx_quant.{_dst}_faithful", f"npu_dynamic_mx_quant bf16 -> {_dst}, faithful=True (tile by tile)")(
        _dynamic(_dst, faithful=True))
    config(f"dynamic_mx_quant.{_dst}_axis0_faithful", f"npu_dynamic_mx_quant bf16 -> {_dst}, axis 0 of 2, "
           "faithful=True")(_dynamic(_dst, axis=0, faithful=True))


def _grouped(dst, dtype="bfloat16", **kw):
    def build():
        from npu_emu.ops import npu_grouped_dynamic_mx_quant

        x = _mx_input((256, 512), dtype)
        gi = np.array([96, 256], np.int32)
        return lambda: npu_grouped_dynamic_mx_quant(x, gi, dst_type=MX_DST[dst], **kw)

    return build


for _dst in MX_DST:
    config(f"grouped_dynamic_mx_quant.{_dst}", f"npu_grouped_dynamic_mx_quant bf16 -> {_dst}, 2 groups")(
        _grouped(_dst))
    config(f"grouped_dynamic_mx_quant.{_dst}_faithful", f"npu_grouped_dynamic_mx_quant bf16 -> {_dst}, 2 groups, "
           "faithful=True")(_grouped(_dst, faithful=True))
config("grouped_dynamic_mx_quant.e4m3_fp16", "npu_grouped_dynamic_mx_quant float16 -> e4m3, 2 groups")(
    _grouped("e4m3", dtype="float16"))
