"""GroupedMatmul antiquant (W8A16 / W4A16) on A2/A3 (docs/ops/grouped_matmul.md §11): x bfloat16 / float16, weight
int8 (per-channel antiquant scale / offset) or int4 (per channel or per group along K).

Sources: ``hicann/ops-transformer: gmm/grouped_matmul/op_host/op_api/aclnn_grouped_matmul.cpp``
(``CheckFunctionParams`` antiquant branch, ``CheckMatmulDataType``, ``CheckGroupedMatmulAntiQuant``,
``CheckOptionalTensorList``, ``CheckDimNumAndPerGroupNum``, ``GetPergroupSize``) and ``op_kernel/
grouped_matmul_antiquant.h`` (``GMMAntiquantProcess``, ``GMMAntiquantCompute``: the vector cores cast each group's
weight to x's dtype into the workspace with ``AscendAntiQuant``, then the cube runs the plain matmul of x with it,
bias and output as the plain float case).

npu-emu: the weight prologue is ``antiquant_kernel.antiquant_weight_kernel`` (the AscendAntiQuant element chain
with the instruction layer's element formulas); the dequantised weights then run the plain bf16 / fp16 path of
api.py (every tensor-list form, the float_accum models, the per-core walk), as the device's cube reads the
workspace.
"""

import numpy as np

from npu_emu.device.specialize import load
from npu_emu.device.read_only import read_only as ro
from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.frontend.core import check_memory
from npu_emu.kernels.grouped_matmul import api_forms as forms, checks
from npu_emu.kernels.quant_matmul.api import NzWeight

X_TYPES = ("bfloat16", "float16")
W_TYPES = ("int8", "int4")


def _err(msg):
    raise AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


_name = forms.dtype_name


def handles(xs, ws):
    """x bfloat16 / float16 with an int8 / int4 weight: CheckFunctionParams' antiquant branch."""
    return _name(xs[0]) in X_TYPES and _name(ws[0]) in W_TYPES


def _group_count(n_x, n_w, n_y, gl):
    """GetGroupSize: the number of groups the per-group tensors must describe."""
    for v in (n_x, n_w, n_y):
        if v > 1:
            return v
    if gl is not None:
        return int(np.asarray(gl).shape[0])
    return 1


def _check_params(lst, what, ws, single, num_total, is_int4):
    """CheckOptionalTensorList for antiquantScale / antiquantOffset; returns the per-group size (0: per channel)."""
    if len(lst) != len(ws):
        _err(f"{what} size[{len(lst)}] must be equal with weight size[{len(ws)}].")
    if single:
        t = lst[0]
        if t is None:
            _err(f"{what}[0] must not be nullptr, but now is nullptr.")
        w = ws[0]
        k, n = w.shape[1], w.shape[2]
        _dim_and_group(t.ndim, 3, t.shape, what, k, is_int4)
        if t.shape[0] != num_total:
            _err(f"{what} batch size[{t.shape[0]}] should be euqal with groupList length[{num_total}].")
        if t.shape[-1] != n:
            _err(f"NDim[{t.shape[-1]}] of {what} should be equal with NDim[{n}] of weight.")
        return k // t.shape[1] if t.ndim == 3 else 0
    sizes = []
    for i in range(num_total):
        t = lst[i] if i < len(lst) else None
        if t is None:
            _err(f"{what}[{i}] must not be nullptr, but now is nullptr.")
        k, n = ws[i].shape
        _dim_and_group(t.ndim, 2, t.shape, what, k, is_int4)
        if t.shape[-1] != n:
            _err(f"NDim[{t.shape[-1]}] of {what}[{i}] should be equal with NDim[{n}] of weight[{i}].")
        sizes.append(k // t.shape[0] if t.ndim == 2 else 0)
    return sizes[0] if sizes else 0


def _dim_and_group(ndim, expected, shape, what, k, is_int4):
    """CheckDimNumAndPerGroupNum."""
    if is_int4 and ndim == expected:
        g = shape[ndim - 2]
        if not (g > 0 and k % g == 0):
            _err(f"perGroupNum must be larger than 0, and can evenly divided by K[{k}] in A16W4-pergroup case, but "
                 f"now perGroupNum is {g}.")
    elif is_int4:
        if ndim != expected - 1:
            _err(f"{what} Dim must be {expected - 1} in A16W4-perchannel case, but now is {ndim}.")
    elif ndim != expected - 1:
        _err(f"{what} Dim must be {expected - 1}, but now is {ndim}.")


def check(xs, ws, biases, scales, offsets_q, pts, aqs, aqo, gl, y_name, *, group_type, act_type, n_y):
    """The antiquant checks in CANN's order (161002). Returns the per-group size along K (0: per channel)."""
    x_name, w_name = _name(xs[0]), _name(ws[0])
    # CheckMatmulDataType(x, weight, y = x, bias = float32 for bf16 x, else float16)
    for i, x in enumerate(xs):
        if _name(x) != x_name:
            _err(f"GMM: x dtype does not match with required dtype[{x_name}].")
    for w in ws:
        if _name(w) != w_name:
            _err(f"GMM: weight dtype does not match with required dtype[{w_name}].")
    if y_name != x_name:
        _err(f"GMM: y dtype does not match with required dtype[{x_name}].")
    bias_dt = "float32" if x_name == "bfloat16" else "float16"
    for b in biases or []:
        if b is not None and _name(b) != bias_dt:
            _err(f"GMM: bias dtype does not match with required dtype[{bias_dt}].")
    if act_type != 0:
        _err("antiquant case dose not support activation.")
    tag = f"GMM Xtype:{x_name} Wtype:{w_name}"
    if group_type == 2:
        _err(f"{tag}: antiquant cases do not support splited axis is k.")
    if aqs is None:
        _err(f"{tag}: antiquantScale must not be nullptr in antiquant, but now is nullptr.")
    if aqo is None:
        _err(f"{tag}: antiquantOffset must not be nullptr in antiquant, but now is nullptr.")
    single = len(ws) == 1 and ws[0].ndim == 3
    if not single and any(w.ndim != 2 for w in ws):
        _err(f"weight must be one (E, K, N) tensor or E (K, N) tensors, got dims {[w.ndim for w in ws]} "
             f"(emulator-added).")
    num_total = _group_count(len(xs), len(ws), n_y, gl)
    is_int4 = w_name == "int4"
    gs_s = _check_params(aqs, "antiquantScale", ws, single, num_total, is_int4)
    gs_o = _check_params(aqo, "antiquantOffset", ws, single, num_total, is_int4)
    if is_int4:
        for i, (s, o) in enumerate(zip(aqs, aqo)):
            if s.ndim != aqs[0].ndim or o.ndim != aqs[0].ndim:
                _err(f"antiquantScale[{i}]'s dim num[{s.ndim}] is not equal with first tensor's dim num"
                     f"[{aqs[0].ndim}] or antiquantOffset[{i}]'s dim num[{o.ndim}] is not equal with antiquantScale"
                     f"[0]'s dim num[{aqs[0].ndim}]")
        if gs_o != gs_s:
            _err(f"antiquantScale[0]'s pergroup size[{gs_s}] or antiquantOffset[0]'s pergroup size[{gs_o}]is not the "
                 f"required value[{gs_s}]")
    for lst, what in ((aqs, "antiquantScale"), (aqo, "antiquantOffset")):
        for t in lst:
            if t is not None and _name(t) != x_name:
                _err(f"GMM: {what} dtype does not match with x dtype[{x_name}].")
    if scales is not None or offsets_q or pts is not None:
        _err("Detected antiquant, but quant inputs is not empty!")
    return gs_s


# grouped_matmul_host_util.h: the shapes for which the host tiling picks the A16W8-MSD kernel
A16W8_MSD_KN_BASE_BLOCK, A16W8_MSD_AVERAGE_TOKEN_NUM, A16W8_MSD_MAX_K, A16W8_MSD_MIN_N = 128, 64, 12 * 1024, 1024


def picks_msd(xs, ws, n_y, group_type, w_name):
    """GMMTiling's isA16W8Msd_: single x / weight / y, split M, int8 weight, K and N multiples of 128, K <= 12288,
    N >= 1024 and at most 64 rows a group on average. That kernel (grouped_matmul_antiquant_a16w8_msd.h) splits x
    into int8 parts for an int8 cube: other values than the cast-then-float-cube kernel npu-emu models."""
    if not (len(xs) == 1 and len(ws) == 1 and n_y == 1 and group_type == 0 and w_name == "int8" and ws[0].ndim == 3):
        return False
    e, k, n = ws[0].shape
    m = xs[0].shape[0]
    return (n % A16W8_MSD_KN_BASE_BLOCK == 0 and k % A16W8_MSD_KN_BASE_BLOCK == 0 and k <= A16W8_MSD_MAX_K
            and n >= A16W8_MSD_MIN_N and m <= A16W8_MSD_AVERAGE_TOKEN_NUM * e)


def _int_values(w):
    """int8 weight values (int4: one ml_dtypes.int4 value per element, sign-extended)."""
    a = np.asarray(w)
    return a if a.dtype == np.int8 else a.astype(np.int8)


def dequant_weight(w, scale, offset, x_name):
    """One weight tensor (E, K, N) or (K, N) -> its x-dtype values (uint16 bits -> viewed as x's dtype), the
    AscendAntiQuant chain per element; scale / offset (E, N) / (E, G, N) or (N,) / (G, N)."""
    from npu_emu.frontend.core import storage_dtype

    w8 = _int_values(w)
    three = w8.ndim == 3
    e = w8.shape[0] if three else 1
    k, n = w8.shape[-2], w8.shape[-1]
    per_expert = scale.ndim == (3 if three else 2)          # (E, G, N) / (G, N): per group along K
    g = scale.shape[-2] if per_expert else 1
    sb = np.ascontiguousarray(scale).view(np.uint16).reshape(e * g, n)
    ob = np.ascontiguousarray(offset).view(np.uint16).reshape(e * g, n)
    check_memory(2 * w8.size, "GroupedMatmul antiquant weight workspace")
    out = np.empty((e * k, n), np.uint16)
    dev = load("npu_emu.kernels.grouped_matmul.antiquant_kernel", BF16=int(x_name == "bfloat16"))
    dev.antiquant_weight_kernel(ro(np.ascontiguousarray(w8).reshape(e * k, n)), ro(sb), ro(ob), k, k // g, out)
    return out.reshape(w8.shape).view(storage_dtype(x_name))


def build(xs, ws, biases, scales, pts, gl, y_name, n_y, *, split_item, group_type, group_list_type, kw, rebuild,
          weight_nd):
    """Check, dequantise the weights (the vector prologue), then the plain float path of api._build on them. An NZ
    weight (V4 / V5 with a FRACTAL_NZ tensor; WeightNz refuses these dtypes) is read back to its ND values first:
    the layout decides where the prologue finds an element, not its value."""
    nz = any(isinstance(w, NzWeight) for w in ws)
    ws = [weight_nd(w, kw["origin"])[0] if isinstance(w, NzWeight) else w for w in ws]
    aqs, aqo, offs = kw.get("antiquant") or (None, None, None)
    check(xs, ws, biases, scales, offs, pts, aqs, aqo, gl, y_name, group_type=group_type,
          act_type=kw["act_type"], n_y=n_y)
    if nz and kw.get("api") == "aclnnGroupedMatmulWeightNz":           # ParamsWeightNzDtype, after the checks
        checks.weight_nz_dtypes(_name(xs[0]), _name(ws[0]), y_name)
    if kw.get("transpose_w"):
        _err("npu-emu does not implement the antiquant case with a transposed weight (the transposeW branch of "
             "GMMAntiquantCompute's weight cast) yet; pass the (E, K, N) weight contiguous "
             "(docs/ops/grouped_matmul.md §11.4)")
    if picks_msd(xs, ws, n_y, group_type, _name(ws[0])):     # the A16W8-MSD kernel (antiquant_msd.py, §11.5)
        from npu_emu.kernels.grouped_matmul import antiquant_msd

        return antiquant_msd.build(xs, ws, biases, gl, y_name, aqs, aqo, split_item=split_item,
                                   group_type=group_type, group_list_type=group_list_type, kw=kw)
    x_name = _name(xs[0])
    if len(ws) == 1:
        wd = [dequant_weight(ws[0], np.asarray(aqs[0]), np.asarray(aqo[0]), x_name)]
    else:
        wd = [dequant_weight(w, np.asarray(s), np.asarray(o), x_name) for w, s, o in zip(ws, aqs, aqo)]
    kw2 = dict(kw, has_antiquant=False, antiquant=None)
    return rebuild(xs, wd, biases, None, None, gl, y_name, n_y, split_item=split_item, group_type=group_type,
                   group_list_type=group_list_type, kw=kw2)
