"""torch.library binding of npu_grouped_matmul (declared in op.py): the CPU kernel hands the schema's arguments to
npu_emu.ops (torch ScalarType codes in the int dtype slots become torch dtypes); the fake gives the list of y from sizes alone
(one y (M, N) for group_type 0, E y for group_type -1, one y (E, M, N) for group_type 2)."""

from npu_emu import ops
from npu_emu.frontend.torch_args import dtype_arg, soc_kw, torch_dtype_of, unmodelled


def npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None,
                       antiquant_offset=None, per_token_scale=None, group_list=None, activation_input=None,
                       activation_quant_scale=None, activation_quant_offset=None, split_item=0, group_type=None,
                       group_list_type=0, act_type=0, tuning_config=None, output_dtype=None, x_dtype=None,
                       weight_dtype=None, scale_dtype=None, per_token_scale_dtype=None):
    return ops.npu_grouped_matmul(
        list(x), list(weight), bias=bias, scale=scale, offset=offset, antiquant_scale=antiquant_scale,
        antiquant_offset=antiquant_offset, per_token_scale=per_token_scale, group_list=group_list,
        activation_input=activation_input, activation_quant_scale=activation_quant_scale,
        activation_quant_offset=activation_quant_offset, split_item=split_item, group_type=group_type,
        group_list_type=group_list_type, act_type=act_type,
        tuning_config=None if tuning_config is None else list(tuning_config),
        output_dtype=dtype_arg(output_dtype, "output_dtype"), x_dtype=dtype_arg(x_dtype, "x_dtype"),
        weight_dtype=dtype_arg(weight_dtype, "weight_dtype"), scale_dtype=dtype_arg(scale_dtype, "scale_dtype"),
        per_token_scale_dtype=dtype_arg(per_token_scale_dtype, "per_token_scale_dtype"), **soc_kw())


def npu_grouped_matmul_fake(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None,
                            antiquant_offset=None, per_token_scale=None, group_list=None, activation_input=None,
                            activation_quant_scale=None, activation_quant_offset=None, split_item=0, group_type=None,
                            group_list_type=0, act_type=0, tuning_config=None, output_dtype=None, x_dtype=None,
                            weight_dtype=None, scale_dtype=None, per_token_scale_dtype=None):
    x0, w0 = x[0], weight[0]
    out = x0.dtype if output_dtype is None else torch_dtype_of(dtype_arg(output_dtype, "output_dtype"))
    gt = -1 if group_type is None else group_type
    if gt == -1:                                   # E x, E weights, E y (split_item 0 / 1)
        return [xi.new_empty(tuple(xi.shape[:-1]) + (wi.shape[-1],), dtype=out) for xi, wi in zip(x, weight)]
    if gt == 2:                                    # split K: one y (E, M, N), E from the group list
        if group_list is None:
            raise unmodelled("npu_grouped_matmul", "group_type 2 without a group_list")
        return [x0.new_empty((group_list.shape[0], x0.shape[0], w0.shape[-1]), dtype=out)]
    if split_item not in (2, 3):
        raise unmodelled("npu_grouped_matmul", "group_type 0 with split_item 0 / 1 (separated y)")
    import torch

    n = w0.shape[-1] * (8 if w0.dtype == torch.int32 else 1)      # op-plugin: an int32 weight packs 8 int4
    return [x0.new_empty((sum(int(xi.shape[0]) for xi in x), n), dtype=out)]
