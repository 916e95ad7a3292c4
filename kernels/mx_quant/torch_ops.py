"""torch.library bindings of the MX quantisers (declared in op.py): npu_dynamic_mx_quant,
npu_grouped_dynamic_mx_quant and npu_anti_mx_quant. The CPU kernels hand the schema's arguments to npu_emu.ops
(dst_type goes through as the int it is: the MX ops read integers as torch / torch_npu codes themselves); the fakes
give shapes and dtypes from sizes alone."""

import torch

from npu_emu import ops
from npu_emu.frontend.core import resolve_torch_npu_dtype
from npu_emu.frontend.torch_args import dtype_arg, soc_kw, unmodelled


def npu_dynamic_mx_quant(input, *, axis=-1, round_mode="rint", dst_type=296, block_size=32, scale_alg=0,
                         dst_type_max=0.0, max_low_bound=0.0):
    return ops.npu_dynamic_mx_quant(input, axis=axis, round_mode=round_mode, dst_type=dst_type,
                                    block_size=block_size, scale_alg=0 if scale_alg is None else scale_alg,
                                    dst_type_max=dst_type_max, max_low_bound=max_low_bound, **soc_kw())


def npu_grouped_dynamic_mx_quant(x, group_index, *, round_mode="rint", dst_type=23, blocksize=32, scale_alg=0,
                                 dst_type_max=0.0):
    return ops.npu_grouped_dynamic_mx_quant(x, group_index, round_mode=round_mode, dst_type=dst_type,
                                            blocksize=blocksize, scale_alg=0 if scale_alg is None else scale_alg,
                                            dst_type_max=0.0 if dst_type_max is None else dst_type_max, **soc_kw())


def npu_anti_mx_quant(x, mxscale, *, axis=-1, dst_type=15, src_type=292):
    # None in the optional slots: op-plugin's C++ defaults (axis -1, bfloat16 out, src_type 296 = float4_e2m1)
    return ops.npu_anti_mx_quant(x, mxscale, axis=-1 if axis is None else axis,
                                 dst_type=torch.bfloat16 if dst_type is None else dtype_arg(dst_type, "dst_type"),
                                 src_type=296 if src_type is None else src_type)


_FP8 = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}


def _mx_y(op, x, dst_type):
    """y of an MX quantisation: the input shape in float8, or packed FP4 (last dim halved) in uint8."""
    name = resolve_torch_npu_dtype(dst_type, "dst_type")
    if name in _FP8:
        return x.new_empty(x.shape, dtype=_FP8[name])
    if name in ("float4_e2m1", "float4_e1m2"):
        return x.new_empty((*x.shape[:-1], x.shape[-1] // 2), dtype=torch.uint8)
    raise unmodelled(op, f"dst_type={dst_type} ({name})")


def npu_dynamic_mx_quant_fake(input, *, axis=-1, round_mode="rint", dst_type=296, block_size=32, scale_alg=0,
                              dst_type_max=0.0, max_low_bound=0.0):
    ax = axis % input.dim()
    s_shape = list(input.shape)
    s_shape[ax] = ((s_shape[ax] + block_size - 1) // block_size + 1) // 2
    return _mx_y("npu_dynamic_mx_quant", input, dst_type), input.new_empty((*s_shape, 2), dtype=torch.uint8)


def npu_grouped_dynamic_mx_quant_fake(x, group_index, *, round_mode="rint", dst_type=23, blocksize=32, scale_alg=0,
                                      dst_type_max=0.0):
    m, n = x.shape
    s = x.new_empty((m // 64 + group_index.shape[0], n, 2), dtype=torch.uint8)
    return _mx_y("npu_grouped_dynamic_mx_quant", x, dst_type), s


def npu_anti_mx_quant_fake(x, mxscale, *, axis=-1, dst_type=15, src_type=292):
    # y has x's shape, the last dimension doubled for packed FP4 (src_type 296 / 297; None is op-plugin's 296)
    out = torch.bfloat16 if dst_type is None else dtype_arg(dst_type, "dst_type")
    if out not in (torch.float32, torch.float16, torch.bfloat16):
        raise unmodelled("npu_anti_mx_quant", f"dst_type {dst_type}")
    fp4 = src_type is None or int(src_type) in (296, 297)
    return x.new_empty((*x.shape[:-1], x.shape[-1] * (2 if fp4 else 1)), dtype=out)
