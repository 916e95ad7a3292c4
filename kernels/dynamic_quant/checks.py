"""CANN parameter checks of aclnnDynamicQuant / V2 / V3 / V4 and of the DynamicQuant tiling, in CANN's order.

hicann/ops-nn quant/dynamic_quant/op_host/op_api/aclnn_dynamic_quant.cpp (CheckParams: CheckNotNull, CheckAttr,
CheckDtype, CheckShape, on Atlas A2/A3 = DAV_2201) and op_host/dynamic_quant_tiling.cpp (CheckInputDtype,
CheckSmoothShape, CheckOpInputShape: the tiling's rules, status 561002 as a failed tiling). Descriptions are
(dtype name, shape) pairs; None is a null tensor.
"""

from npu_emu.errors import (
    ACLNN_ERR_INNER,
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    AclnnError,
)

X_DTYPES = ("float16", "bfloat16")
Y_DTYPES = ("int4", "int8", "int32")
# OUTPUT_DTYPE_SUPPORT_LIST_INT_WITH_FP_QUANT (IsRegbase: Ascend 950)
Y_DTYPES_950 = Y_DTYPES + ("hifloat8", "float8_e5m2", "float8_e4m3fn")
GROUP_DTYPES = ("int32", "int64")
QUANT_MODES = ("pertensor", "pertoken", "perchannel")
DIM_MAX = 9
MAX_EXPERT_NUM = 1024


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def _tiling(msg):
    return AclnnError(ACLNN_ERR_INNER_TILING_ERROR, msg)


def check_soc_for_v3(api, regbase):
    """aclnnDynamicQuantV3/V4GetWorkspaceSize: ACLNN_ERR_INNER unless the SoC is the regbase one (Ascend 950)."""
    if not regbase:
        raise AclnnError(ACLNN_ERR_INNER, f"{api} only supports socVersion Ascend950 (the source returns "
                                          f"ACLNN_ERR_INNER on Atlas A2/A3); use aclnnDynamicQuantV2 or soc='ascend950...'")


def check_params(x, smooth, group, y, scale, offset, *, symmetrical=True, quant_mode="pertoken", regbase=False):
    """CheckParams. Each argument is (dtype name, shape tuple) or None. Raises AclnnError. ``regbase``: Ascend 950
    (the FP8 / HiF8 destinations are accepted; perchannel smooth_scales run over the second-to-last dim)."""
    # CheckNotNull
    for name, d in (("x", x), ("y", y), ("scale", scale)):
        if d is None:
            raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{name} must not be nullptr; pass an array")
    # CheckAttr
    if symmetrical and offset is not None:
        raise _bad("isSymmetrical is True, so offset must be nullptr (pass offset=None or isSymmetrical=False)")
    if not symmetrical and offset is None:
        raise _bad("isSymmetrical is False, so offset can't be nullptr; pass a float32 offset array")
    if quant_mode not in QUANT_MODES:
        raise _bad(f"quantMode={quant_mode!r}; only pertensor, pertoken and perchannel are supported")
    if quant_mode == "perchannel" and group is not None:
        raise _bad("quantMode is perchannel, so groupIndexOptional must be nullptr")
    # CheckDtype
    if x[0] not in X_DTYPES:
        raise _bad(f"x dtype {x[0]} is not supported; use one of {X_DTYPES}")
    if smooth is not None:
        if smooth[0] not in X_DTYPES:
            raise _bad(f"smooth_scales dtype {smooth[0]} is not supported; use one of {X_DTYPES}")
        if smooth[0] != x[0]:
            raise _bad(f"the dtypes of x ({x[0]}) and smooth_scales ({smooth[0]}) must be equal")
        if group is not None and group[0] not in GROUP_DTYPES:
            raise _bad(f"group_index dtype {group[0]} is not supported; use one of {GROUP_DTYPES}")
    y_list = Y_DTYPES_950 if regbase else Y_DTYPES
    if y[0] not in y_list:
        raise _bad(f"y dtype {y[0]} is not supported on {'Ascend 950' if regbase else 'Atlas A2/A3'}; use one of "
                   f"{y_list} (int32 = packed int4)")
    if scale[0] != "float32":
        raise _bad(f"scale dtype {scale[0]} must be float32")
    if offset is not None and offset[0] != "float32":
        raise _bad(f"offset dtype {offset[0]} must be float32")
    # CheckShape
    xs = tuple(x[1])
    if len(xs) <= 1:
        raise _bad(f"the dimNum [{len(xs)}] of x should be greater than 1")
    if len(xs) >= DIM_MAX:
        raise _bad(f"the dimNum [{len(xs)}] of x should be less than 9")
    if smooth is not None:
        if group is not None:
            if len(group[1]) != 1:
                raise _bad(f"the dimNum [{len(group[1])}] of group_index should be equal to one")
        else:
            if len(smooth[1]) != 1:
                raise _bad(f"the dimNum [{len(smooth[1])}] of smooth_scales should be equal to one")
            if quant_mode == "perchannel":
                if smooth[1][-1] != xs[-2]:
                    raise _bad(f"quantMode is perchannel: the second to last dim [{xs[-2]}] of x and the last dim "
                               f"[{smooth[1][-1]}] of smooth_scales should be equal")
            elif smooth[1][-1] != xs[-1]:
                raise _bad(f"the last dim [{xs[-1]}] of x and the dim [{smooth[1][-1]}] of smooth_scales should be "
                           f"equal")
    ys = tuple(y[1])
    if y[0] != "int32":
        if ys != xs:
            raise _bad(f"the shapes of x {xs} and y {ys} are inconsistent; y must have the shape of x")
    else:
        if len(ys) != len(xs) or xs[-1] != ys[-1] * 8 or ys[:-1] != xs[:-1]:
            raise _bad(f"y is int32 (packed int4), so its shape must be x's with the last dim / 8: x {xs}, y {ys}")
    if y[0] == "int4" and xs[-1] % 2:
        raise _bad(f"y dtype is int4, so the last dim of x must be divisible by 2, but it is {xs[-1]}")
    ss = tuple(scale[1])
    if quant_mode == "pertoken":
        if ss != xs[:-1]:
            raise _bad(f"the shapes of x {xs} and scale {ss} should be consistent except for the last dim of x")
    elif quant_mode == "pertensor":
        if ss != (1,):
            raise _bad(f"quantMode is pertensor, so the shape of scale must be (1,), got {ss}")
    else:
        if len(ss) < 1 or ss[:-1] != xs[:-2] or ss[-1:] != xs[-1:]:
            raise _bad(f"quantMode is perchannel: scale {ss} must be x's leading dims plus its last dim, x {xs}")
    if offset is not None and tuple(offset[1]) != ss:
        raise _bad(f"the shape of offset {tuple(offset[1])} must equal the shape of scale {ss}")


def check_tiling_inputs(x, smooth, group, int4):
    """DynamicQuantTiling::CheckOpParams (CheckInputDtype, CheckOpInputShape, CheckSmoothShape) -> group count.

    Runs when the kernel is tiled (the second phase on the device, 561002 here)."""
    xs = tuple(x[1])
    group_num = 0
    if smooth is not None and group is not None:
        if group[0] != "int32":
            raise _tiling(f"the DynamicQuant tiling takes group_index as DT_INT32 only, got {group[0]} "
                          f"(aclnn accepts int64, the tiling rejects it); pass int32")
    if int4 and xs[-1] % 2:
        raise _tiling("When the yDtype is DT_INT4, the tail axis of x must be an even number")
    if smooth is not None:
        if group is not None:
            gs = tuple(group[1])
            group_num = gs[-1] if gs else 0
            if group_num > MAX_EXPERT_NUM:
                raise _tiling(f"the value of groupNum ({group_num}) must be less than or equal to 1024")
        ss = tuple(smooth[1])
        if group_num >= 1:
            if len(ss) != 2:
                raise _tiling("When groupNum is more than 0, the shape dim of smooth_scales must be equal to 2")
            if ss[0] != group_num:
                raise _tiling(f"the first dim of smooth_scales ({ss[0]}) and group_num ({group_num}) must be "
                              f"the same")
        elif len(ss) != 1:
            raise _tiling("The shape dim of smooth_scales must be 1")
        if ss[-1] != xs[-1]:
            raise _tiling(f"last dim of x ({xs[-1]}) and smooth_scales ({ss[-1]}) must be equal")
    return group_num


def check_group_values(group, rows):
    """Emulator-added (no CANN check): the MoE kernels walk group_index as ascending cumulative row ends and read
    smooth row GetSmoothIndex(...) for every row, past the table when the last end is below the row count."""
    import numpy as np

    g = np.asarray(group, np.int64)
    if g.size == 0:
        raise _bad("group_index is empty; pass the cumulative row ends of at least one group")
    if (g < 0).any():
        raise _bad(f"group_index holds a negative row end ({int(g.min())}); pass cumulative row counts >= 0")
    if g.size > 1 and (np.diff(g) < 0).any():
        i = int(np.nonzero(np.diff(g) < 0)[0][0])
        raise _bad(f"group_index must be non-decreasing (cumulative row ends): group_index[{i}] = {int(g[i])} > "
                   f"group_index[{i + 1}] = {int(g[i + 1])}")
    if int(g[-1]) < rows:
        raise _bad(f"group_index ends at row {int(g[-1])} but x has {rows} rows: the kernel would read smooth rows "
                   f"past smooth_scales for rows {int(g[-1])}..{rows - 1}; make group_index[-1] >= {rows}")


def check_tiling_inputs_950(x, smooth, group, int4):
    """DynamicQuantRegbaseTiling::CheckOpInputShape (Ascend 950): the A2 rules plus groupNum <= 0 rejected ->
    group count (561002 on failure)."""
    if smooth is not None and group is not None:
        gs = tuple(group[1])
        if (gs[-1] if gs else 0) <= 0:
            raise _tiling("The value of group_index must be within the range [1, 1024] (group_index is empty)")
    return check_tiling_inputs(x, smooth, group, int4)


def check_tiling_inputs_950_perchannel(x, smooth, int4):
    """CheckOpInputShape for perchannel (Ascend 950): int4 needs an even last dim; smooth_scales 1-D of x's
    second-to-last dim (group_index is refused by aclnn before)."""
    xs = tuple(x[1])
    if int4 and xs[-1] % 2:
        raise _tiling("When the yDtype is DT_INT4, the tail axis of x must be an even number")
    if smooth is not None:
        ss = tuple(smooth[1])
        if len(ss) != 1:
            raise _tiling("The shape dim of smooth_scales must be 1")
        if ss[-1] != xs[-2]:
            raise _tiling(f"[-2] dim of x ({xs[-2]}) must be equal to [-1] dim of smooth_scales ({ss[-1]}) when "
                          f"quant_mode is perchannel")
