"""Fake (meta) kernels: the shapes and dtypes the CPU kernels return, from sizes alone, for torch.compile, export
and FakeTensor tracing. Sizes may be SymInts, so only + - * // and torch.sym_max touch them. A case whose result
the fake does not model raises NotImplementedError naming it, rather than guessing a shape."""

import torch

from npu_emu.frontend import resolve_torch_npu_dtype
from npu_emu.torch.kernels import dtype_arg, torch_dtype_of

_FP8 = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}


def _unmodelled(op, what):
    return NotImplementedError(f"npu_emu.torch: the fake kernel of {op} does not model {what}; run it eagerly "
                               f"(outside torch.compile / export) or open an issue")


def _mx_y(op, x, dst_type):
    """y of an MX quantisation: the input shape in float8, or packed FP4 (last dim halved) in uint8."""
    name = resolve_torch_npu_dtype(dst_type, "dst_type")
    if name in _FP8:
        return x.new_empty(x.shape, dtype=_FP8[name])
    if name in ("float4_e2m1", "float4_e1m2"):
        return x.new_empty((*x.shape[:-1], x.shape[-1] // 2), dtype=torch.uint8)
    raise _unmodelled(op, f"dst_type={dst_type} ({name})")


def npu_sign_bits_pack(input, size):
    return input.new_empty((size, (input.numel() + 7) // 8 // size), dtype=torch.uint8)


def npu_sign_bits_unpack(input, size, dtype):
    return input.new_empty((size, input.numel() * 8 // size), dtype=dtype)


def npu_dynamic_mx_quant(input, *, axis=-1, round_mode="rint", dst_type=296, block_size=32, scale_alg=0,
                         dst_type_max=0.0, max_low_bound=0.0):
    ax = axis % input.dim()
    s_shape = list(input.shape)
    s_shape[ax] = ((s_shape[ax] + block_size - 1) // block_size + 1) // 2
    return _mx_y("npu_dynamic_mx_quant", input, dst_type), input.new_empty((*s_shape, 2), dtype=torch.uint8)


def npu_grouped_dynamic_mx_quant(x, group_index, *, round_mode="rint", dst_type=23, blocksize=32, scale_alg=0,
                                 dst_type_max=0.0):
    m, n = x.shape
    s = x.new_empty((m // 64 + group_index.shape[0], n, 2), dtype=torch.uint8)
    return _mx_y("npu_grouped_dynamic_mx_quant", x, dst_type), s


def npu_quant_matmul(x1, x2, scale, *, offset=None, pertoken_scale=None, bias=None, output_dtype=None,
                     x1_dtype=None, x2_dtype=None, pertoken_scale_dtype=None, scale_dtype=None, group_sizes=None,
                     y_scale=None):
    # 4-bit operands travel packed (int32 words, or uint8 / float32 pairs): their n is not x2's last dim
    packed = {dtype_arg(d, "x_dtype") for d in (x1_dtype, x2_dtype)} & {"int4", "float4_e2m1", "float4_e1m2"}
    if packed or x1.dtype == torch.int32 or x2.dtype in (torch.int32, torch.float32):
        raise _unmodelled("npu_quant_matmul", "packed 4-bit operands (int4 / FP4)")
    batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    out = torch.int8 if output_dtype is None else torch_dtype_of(dtype_arg(output_dtype, "output_dtype"))
    return x1.new_empty((*batch, x1.shape[-2], x2.shape[-1]), dtype=out)


def npu_trans_quant_param(scale, offset=None, round_mode=0):
    if offset is None or scale.dim() != 1:
        return scale.new_empty(scale.shape, dtype=torch.int64)
    return scale.new_empty((torch.sym_max(scale.numel(), offset.numel()),), dtype=torch.int64)


def npu_anti_mx_quant(x, mxscale, *, axis=-1, dst_type=15, src_type=292):
    # y has x's shape, the last dimension doubled for packed FP4 (src_type 296 / 297; None is op-plugin's 296)
    out = torch.bfloat16 if dst_type is None else dtype_arg(dst_type, "dst_type")
    if out not in (torch.float32, torch.float16, torch.bfloat16):
        raise _unmodelled("npu_anti_mx_quant", f"dst_type {dst_type}")
    fp4 = src_type is None or int(src_type) in (296, 297)
    return x.new_empty((*x.shape[:-1], x.shape[-1] * (2 if fp4 else 1)), dtype=out)


def npu_quantize(input, scales, zero_points, dtype, axis=1, div_mode=True):
    if int(dtype) == 16:         # torch.quint4x2: eight int4 per int32 along the last axis
        return input.new_empty((*input.shape[:-1], input.shape[-1] // 8), dtype=torch.int32)
    return input.new_empty(input.shape, dtype=torch.int8)


def gather_dequant_int8(table, indices, scale, zero_point):
    return table.new_empty((*indices.shape, table.shape[-1]), dtype=torch.float16)


_DEQ_OUT = {"DEQ16": torch.float16, "DEQS16": torch.int16}


def data_copy_dequant(acc, deq_value, *, mode="DEQ8", is_relu=False):
    if mode == "DEQ8":
        out = torch.int8 if (int(deq_value) >> 46) & 1 else torch.uint8     # the word's sign bit picks the type
    elif mode in _DEQ_OUT:
        out = _DEQ_OUT[mode]
    else:
        raise _unmodelled("data_copy_dequant", f"mode={mode!r} (the schema takes a scalar deq word)")
    return acc.new_empty(acc.shape, dtype=out)


FAKES = {name: globals()[name] for name in ("npu_quantize", 
    "npu_sign_bits_pack", "npu_sign_bits_unpack", "npu_dynamic_mx_quant", "npu_grouped_dynamic_mx_quant",
    "npu_quant_matmul", "npu_trans_quant_param", "npu_anti_mx_quant", "gather_dequant_int8", "data_copy_dequant")}
