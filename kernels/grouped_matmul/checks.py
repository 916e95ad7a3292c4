"""The aclnnGroupedMatmul checks npu-emu reproduces, in CANN's order and with its status codes
(``hicann/ops-transformer: gmm/grouped_matmul/op_host/op_api/aclnn_grouped_matmul.cpp``: CheckNotNull,
CheckFunctionParams, CheckFunctionQuantParams, CheckGroupedMatmulQuant, CheckQuantParamsDtype, CheckPerTokenScale,
SplitMSingleXSingleWeightSingleY, CheckGroupListCommonTensor), plus the emulator-added checks the device does not
make (marked so in the messages): docs/ops/grouped_matmul.md §4.
"""

from dataclasses import dataclass

import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError

MAX_GROUP_LIST_SIZE_TENSOR = 1024
QUANT_OUT = ("int8", "int32", "bfloat16", "float16")
FLOAT_IN = ("bfloat16", "float16", "float32")


def _err(msg, status=ACLNN_ERR_PARAM_INVALID):
    raise AclnnError(status, msg)


@dataclass(frozen=True)
class GmmArgs:
    """Dtype names and shapes of one call (arrays stay outside, so this is hashable for the memo)."""
    x_dtype: str
    w_dtype: str
    y_dtype: str
    x_shape: tuple
    w_shape: tuple                 # logical (E, K, N)
    scale_dtype: str = None
    scale_shape: tuple = None
    pt_dtype: str = None
    pt_shape: tuple = None
    bias_dtype: str = None
    bias_shape: tuple = None
    gl_dtype: str = None
    gl_shape: tuple = None
    has_offset: bool = False
    has_antiquant: bool = False
    split_item: int = 3
    group_type: int = 0
    group_list_type: int = 0
    act_type: int = 0
    tuning_config: int = 0
    transpose_w: bool = False      # the caller's weight is a transposed view (CheckTransposeStatus)
    weight_nz: bool = False


def mode_of(a):
    """"quant" (A8W8), "float" (plain) or raise the CANN 'no matching pattern' error."""
    if a.x_dtype == "int8" and a.w_dtype == "int8":
        return "quant"
    if a.x_dtype in FLOAT_IN and a.x_dtype == a.w_dtype:
        return "float"
    if a.x_dtype in ("bfloat16", "float16") and a.w_dtype in ("int8", "int4"):
        _err("GMM: antiquant (W8A16 / W4A16: x bfloat16/float16 with int8/int4 weight) is checked and run by "
             "antiquant.py before these checks (docs/ops/grouped_matmul.md §11)")
    _err(f"GMM: there is no matching xDtype and weightDtype pattern. case with x dtype {a.x_dtype} and weight dtype "
         f"{a.w_dtype} is not supported (int8/int8 quant, or x and weight both bfloat16, float16 or float32).")


def check(a):
    """All checks of one call; returns the mode."""
    if a.split_item not in (0, 1, 2, 3):
        _err(f"splitItem should be 0, 1, 2 or 3, but current splitItem is {a.split_item}.")
    if a.group_type not in (-1, 0, 2):
        _err(f"groupType should be -1, 0 or 2, but current groupType is {a.group_type}.")
    if a.group_type != 0 or a.split_item not in (2, 3):
        _err(f"npu-emu implements the single-tensor split-M form (group_type 0, split_item 2 or 3: x (M, K), "
             f"weight (E, K, N), y (M, N)); got split_item={a.split_item}, group_type={a.group_type} "
             f"(docs/ops/grouped_matmul.md §9)")
    check_act_type(a.act_type)
    mode = mode_of(a)
    # SplitMSingleXSingleWeightSingleY: dims and shapes
    if len(a.x_shape) != 2:
        _err(f"Dim num or format of tensor in tensor list x is invalid: x must be 2-D (M, K), got shape {a.x_shape}.")
    if len(a.w_shape) != 3:
        _err(f"Dim num or format of tensor in tensor list weight is invalid: weight must be 3-D (E, K, N), got "
             f"shape {a.w_shape}.")
    m, k = a.x_shape
    e, wk, n = a.w_shape
    if wk != k:
        _err(f"k dim value of x and weight is not matched: x has K={k}, weight has K={wk}.")
    if e < 1:
        _err("weight dim 0 (the number of groups) must be at least 1.")
    # group list (CheckGroupListCommonTensor, group list required in split-M single-tensor mode)
    if a.gl_dtype is None:
        _err("groupListOptional(tensor) is required in this case, but get nullptr.")
    if a.group_list_type not in (0, 1, 2):
        _err(f"group_list_type must be 0 (cumulative), 1 (counts) or 2 ([e, 2] sparse), got {a.group_list_type}.")
    if a.group_list_type == 2 and len(a.gl_shape) != 2:
        _err(f"When groupList type is 2, dim num of groupList should be 2, but now is {len(a.gl_shape)}.")
    if a.group_list_type == 2 and a.gl_shape[1] != 2:
        _err(f"When groupList type is 2, groupList must have shape [e, 2], got {a.gl_shape} (emulator-added).")
    if a.group_list_type != 2 and len(a.gl_shape) != 1:
        _err(f"groupList must be 1-D for group_list_type {a.group_list_type}, got shape {a.gl_shape} "
             f"(emulator-added).")
    gl_size = a.gl_shape[0]
    if gl_size > MAX_GROUP_LIST_SIZE_TENSOR:
        _err(f"When groupList type is tenosr, size of groupList {gl_size} should be less than or equal to "
             f"{MAX_GROUP_LIST_SIZE_TENSOR}.")
    if not ((gl_size == e and e > 1) or e == 1):
        _err(f"When groupList is not null, size of groupList(tensor) {gl_size} should be equal to weight dim 0 {e} "
             f"with groupType 0.")
    if a.gl_dtype != "int64":
        _err("Invalid dtype: Only int64 is supported for groupList.")
    if a.tuning_config < 0 or a.tuning_config > m:
        _err(f"Invalid tuningConfigOptional ({a.tuning_config})! It should be a non-negative num, and less than or "
             f"equal to maxM: {m}")
    if mode == "float":
        _check_float(a, e, n)
    else:
        _check_quant(a, m, e, n)
    if a.weight_nz:
        _check_nz_align(a.w_dtype, k, n, a.transpose_w)
    return mode


# TransWeightFormat (910 branch): an NZ weight's (k, n) must fill whole fractals; a transposed weight swaps them
_NZ_ALIGN = {"int8": (16, 32), "bfloat16": (16, 16), "float16": (16, 16), "int4": (16, 64)}


def _check_nz_align(w_dtype, k, n, transposed):
    if w_dtype not in _NZ_ALIGN:
        return
    ak, an = _NZ_ALIGN[w_dtype]
    if transposed and w_dtype in ("int8", "int4"):
        ak, an = an, ak
    if k % ak or n % an:
        _err(f"When weight({w_dtype.upper()}) format is FRACTAL_NZ, weight'shape(k[{k}], n[{n}]) should be divisible "
             "by the following shape: INT8:[16, 32],BF16/FP16[16, 16],INT4[16, 64]). If the weight is transposed,"
             "the k/n need to be reversed.")


# GMMActType (aclnn_grouped_matmul_v4.h) = ActiveType of the kernel (grouped_matmul_utils.h)
ACT_NONE, ACT_RELU, ACT_GELU_TANH, ACT_GELU_ERR_FUNC, ACT_FASTGELU, ACT_SILU = range(6)
END_ACT_TYPE_ENUM = 6


def check_act_type(act_type):
    """CheckCommonParam's actType checks (every mode, before the per-mode checks): docs/ops/grouped_matmul.md §13."""
    if act_type < 0:
        _err("actType must be larger or equal to 0")
    if act_type != ACT_NONE:
        if act_type == ACT_GELU_ERR_FUNC:
            _err("Activation function not support GELU_ERR_FUNC now.")
        if act_type >= END_ACT_TYPE_ENUM:
            _err("Activation function only support RELU/GELU_TANH/FASTGELU/SILU.")


def _check_float(a, e, n):
    bias_dt = "float32" if a.x_dtype == "bfloat16" else a.x_dtype
    if a.y_dtype != a.x_dtype:
        _err(f"GMM: y dtype does not match with required dtype[{a.x_dtype}].")
    if a.bias_dtype is not None:
        if a.bias_dtype != bias_dt:
            _err(f"GMM: bias dtype does not match with required dtype[{bias_dt}].")
        _check_en(a.bias_shape, e, n, "bias")
    if a.act_type != ACT_NONE:
        _err("non quant case dose not support activation.")
    if a.scale_dtype is not None or a.has_offset or a.pt_dtype is not None:
        _err("Detected nonquant, but quant inputs is not empty!")
    if a.has_antiquant:
        _err("Detected nonquant, but antiquant inputs is not empty!")


def _check_en(shape, e, n, name):
    if tuple(shape) != (e, n):
        _err(f"{name} must have shape (E, N) = ({e}, {n}) for a single-tensor weight, got {tuple(shape)}.")


def _check_quant(a, m, e, n):
    if a.act_type != ACT_NONE and a.y_dtype in ("int32", "int8"):
        # CANN's condition `isNoActivation || y != INT8 || y != INT32` is always true, so it lets the call through;
        # the int32 / int8 kernels are cube-only (the FixPipe writes y, no activation), and with GELU_TANH the tiling
        # asks for AIV:AIC = 1:2, for which no such kernel is built: what y then holds is not modelled
        _err(f"quant case with output dtype int8 or int32 dose not support activation (emulator-added: CANN's check "
             f"of this is always true and the cube-only int8 / int32 kernels apply no activation); got actType "
             f"{a.act_type} with {a.y_dtype} output: use bfloat16 / float16 output with a scale, or actType 0.")
    if a.y_dtype not in QUANT_OUT:
        _err(f"Expect yDtype is int8, int32, float16 or bfloat16 in quant case, but now y[0] dtype is {a.y_dtype}")
    if a.bias_dtype is not None:
        if a.bias_dtype not in ("int32", "bfloat16"):
            _err("GMM: bias dtype does not match with required dtype int32 or bfloat16.")
        _check_en(a.bias_shape, e, n, "bias")
    if a.y_dtype == "int32":
        if a.bias_dtype == "bfloat16":
            _err("a bfloat16 bias is added in the per-token epilogue, which int32 output does not run; pass an int32 "
                 "bias (emulator-added)")
        return
    # CheckGroupedMatmulQuant
    if a.has_offset:
        _err("GMM: offset must be nullptr in quant, but now is not nullptr.")
    if a.scale_dtype is None:
        _err("GMM: scale must not be nullptr in quant, but now is nullptr.")
    per_token = a.pt_dtype is not None
    ok_bf16 = a.scale_dtype == "bfloat16" and a.y_dtype == "bfloat16"
    ok_fp16 = a.scale_dtype == "float32" and a.y_dtype == "float16"
    ok_int8 = a.scale_dtype in ("int64", "uint64") and a.y_dtype == "int8"
    if per_token and not (ok_bf16 or ok_fp16):
        _err("per-token quant case only supports scale data type bfloat16 with output data type bfloat16, or scale "
             f"with data type float32 when output is float16, but now scale[0] has data type {a.scale_dtype} and "
             f"output has data type {a.y_dtype}!")
    if not per_token and not (ok_int8 or ok_bf16 or ok_fp16):
        _err("per-channel quant case only supports scale with data type int64/uint64 when output is int8, or data "
             "type bfloat16 when output is bfloat16, or data type float32 when output is float16, but scale[0] has "
             f"data type {a.scale_dtype} and output has data type {a.y_dtype}!")
    _check_en(a.scale_shape, e, n, "scale")
    if per_token:
        if a.pt_dtype != "float32":
            _err(f"per-token quant case only support perTokenScale with data type float32, but perTokenScale[0] has "
                 f"data type {a.pt_dtype}!")
        if len(a.pt_shape) != 1:
            _err(f"perTokenScaleOptional dim num must be 1 when x is single tensor, but now is {len(a.pt_shape)}.")
        if a.pt_shape[0] != m:
            _err(f"MDim[{a.pt_shape[0]}] of perTokenScaleOptional should be equal with MDim[{m}] of x.")
    elif a.bias_dtype == "bfloat16":
        _err("a bfloat16 bias is added only in the per-token epilogue (PerTokenQuant); without per_token_scale pass "
             "an int32 bias (emulator-added: the device reads an uninitialised queue)")
    if a.has_antiquant:
        _err("Detected quant, but antiquant inputs is not empty!")


def check_group_values(gl, group_list_type, num_groups, m_x):
    """Emulator-added: the group sizes the kernel would compute must be >= 0 and end inside x (the device reads
    its int64 values on the core, casts them to int32 and walks blocks of a uint32 m: a decreasing cumulative
    list or a negative count makes a huge m and reads / writes far outside x and y)."""
    gl = np.asarray(gl, np.int64)
    if group_list_type == 2:
        sizes = []
        for row in gl:
            if row[1] <= 0:
                break
            if not 0 <= row[0] < num_groups:
                _err(f"group_list[:, 0] holds the weight index {int(row[0])}, outside [0, {num_groups}) "
                     f"(emulator-added: the device reads another weight's memory)")
            sizes.append(int(row[1]))
        total = sum(sizes)
    else:
        g = min(num_groups, gl.shape[0])
        vals = gl[:g]
        if group_list_type == 0:
            if g and (vals[0] < 0 or bool((vals[1:] < vals[:-1]).any())):
                bad = int(np.argmax(np.diff(np.concatenate(([0], vals))) < 0))
                _err(f"groupListOptional should be non-negative and incremental: group_list[{bad}] = {int(vals[bad])} "
                     f"is below the value before it (emulator-added for a tensor group list, the message of the "
                     f"aclIntArray check: the device computes a negative group size and walks out of x and y)")
            total = int(vals[-1]) if g else 0
        else:
            if np.any(vals < 0):
                bad = int(np.argmax(vals < 0))
                _err(f"group_list[{bad}] = {int(vals[bad])}: group sizes (group_list_type 1) must be non-negative "
                     f"(emulator-added: the device walks out of x and y)")
            total = int(vals.sum())
    if total > m_x:
        _err(f"the groups cover {total} rows but x has {m_x} (emulator-added: the device reads past the end of x and "
             f"writes past the end of y)")
    return total


def null_check(x, weight):
    if x is None:
        _err("x must not be nullptr.", ACLNN_ERR_PARAM_NULLPTR)
    if weight is None:
        _err("weight must not be nullptr.", ACLNN_ERR_PARAM_NULLPTR)


def check_list_gl_for_x(gl, group_list_type, sizes):
    """Separated x (group_type 0, E x and E weights): CheckGroupListCommonTensor (length E, int64); the rows of each
    group are x[i]'s rows, so a group list, when given, must say the same (emulator-added: what the device does with
    a disagreeing list is not modelled)."""
    gl = np.asarray(gl)
    if gl.ndim != 1 or gl.shape[0] != len(sizes):
        _err(f"When groupList is not null, size of groupList(tensor) {gl.shape[0] if gl.ndim else 0} should be equal "
             f"to weight dim 0 {len(sizes)} with groupType 0.")
    if gl.dtype != np.int64:
        _err("Invalid dtype: Only int64 is supported for groupList.")
    if group_list_type not in (0, 1):
        _err(f"group_list_type {group_list_type} with separated x: use 0 (cumulative) or 1 (counts) (emulator-added)")
    want = np.cumsum(sizes) if group_list_type == 0 else np.asarray(sizes)
    if not np.array_equal(gl, want):
        _err(f"group_list {gl.tolist()} does not describe the rows of the separated x ({list(sizes)} rows: "
             f"{want.tolist()} as group_list_type {group_list_type}) (emulator-added)")


# ParamsWeightNzDtype: the x-weight(-y) pairs aclnnGroupedMatmulWeightNz takes (A2/A3; the 950's MX cases have their
# own checker)
_WEIGHT_NZ_Y = {("int8", "int8"): ("float16", "bfloat16", "int32"), ("int8", "int4"): ("float16", "bfloat16"),
                ("int4", "int4"): ("float16", "bfloat16"), ("bfloat16", "bfloat16"): ("bfloat16",),
                ("float16", "float16"): ("float16",), ("float16", "float4_e2m1"): ("float16", "bfloat16"),
                ("bfloat16", "float4_e2m1"): ("float16", "bfloat16")}


def weight_nz_dtypes(x_dtype, w_dtype, y_dtype):
    ok = _WEIGHT_NZ_Y.get((x_dtype, w_dtype))
    if ok is None:
        _err(f"The dtypes of x[{x_dtype.upper()}]-weight[{w_dtype.upper()}] do not match with required dtype.Only "
             "supported x-weight: INT8-INT8,BF16-BF16,FP16-FP16,INT8-INT4, INT4-INT4,FP16/BF16-FP4_E2M1")
    if y_dtype not in ok:
        _err(f"The dtypes of x[{x_dtype.upper()}]-weight[{w_dtype.upper()}]-y[{y_dtype.upper()}] do not match with "
             f"required dtype: aclnnGroupedMatmulWeightNz takes y {' / '.join(ok)} for this x-weight pair.")
