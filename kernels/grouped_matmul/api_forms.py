"""The tensor-list forms of GroupedMatmul (docs/ops/grouped_matmul.md §2.1): which combinations of x / weight / y as
lists or single tensors aclnnGroupedMatmulV4 / V5 / WeightNz accept for each split_item and group_type, with CANN's
messages (``hicann/ops-transformer: gmm/grouped_matmul/op_host/op_api/aclnn_grouped_matmul.cpp``: CheckNotNull,
PreCheckGroupType, CheckCaseSplitM, SplitMSingleXSeparatedWeightSingleY, SplitMSeparatedXSeparatedWeightSingleY,
CheckCaseSplitK, CheckCaseNoSplit, CheckOptionalTensorList, CheckPerTokenScale), and how each form becomes
single-tensor split-M calls (api.py runs them):

* ``sss`` (group_type 0; one x, one (E, K, N) weight, one y): the kernel's own form.
* ``sms`` (group_type 0; one x, E weights (K, N), one y): the weights stacked; per-group operands (scale, bias)
  are lists of E 1-D tensors, stacked to (E, N).
* ``mms`` (group_type 0; E x (m_i, K), E weights, one y): x concatenated, the groups' rows are the x sizes.
* ``nosplit`` (group_type -1; E x, E weights, E y): E independent matmuls, x of 2-6 dims.
* ``splitk`` (group_type 2; one x (M, K), one weight (K, N), y (E, M, N)): the group list splits K.

Values do not depend on which core computes a block, so a form that the device runs as one launch over all groups
may run here as one launch per group (nosplit, splitk): the same bits.
"""

import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR, AclnnError
from npu_emu.frontend.core import is_torch_tensor, resolve_dtype
from npu_emu.kernels.quant_matmul import operands
from npu_emu.kernels.quant_matmul.weight_nz import NzWeight

MAX_LIST = 128                       # MAX_GROUP_LIST_SIZE_ARRAY: CheckTensorListLength
MAX_INNER_AXIS = 65535


def _err(msg, status=ACLNN_ERR_PARAM_INVALID):
    raise AclnnError(status, msg)


def dtype_name(a):
    """npu-emu's dtype name of an operand (an NzWeight by its ``dtype`` label or its storage), None for None."""
    if a is None:
        return None
    if isinstance(a, NzWeight):
        return resolve_dtype(a.dtype, "dtype") if a.dtype is not None else resolve_dtype(np.asarray(a.storage).dtype)
    return resolve_dtype(a.dtype)


def not_null(xs, ws, y_given=True):
    """CheckNotNull (x, weight, y lists)."""
    if xs is None:
        _err("X must not be nullptr.", ACLNN_ERR_PARAM_NULLPTR)
    if len(xs) == 0:
        _err("X must not be empty tensorlist.")
    if any(v is None for v in xs):
        _err("X must not be nullptr: x[%d] is None." % [v is None for v in xs].index(True))
    if ws is None:
        _err("Weight must not be nullptr.", ACLNN_ERR_PARAM_NULLPTR)
    if len(ws) == 0:
        _err("Weight must not be empty tensorlist.")
    if any(v is None for v in ws):
        _err("Weight must not be nullptr: weight[%d] is None." % [v is None for v in ws].index(True))
    if not y_given:
        _err("Y must not be nullptr.", ACLNN_ERR_PARAM_NULLPTR)


def pre_check_group_type(split_item, group_type):
    """PreCheckGroupType (and the splitItem range)."""
    if split_item not in (0, 1, 2, 3):
        _err(f"splitItem should be 0, 1, 2 or 3, but current splitItem is {split_item}.")
    if group_type == 1:
        _err("Not support split n dim now, groupType can not be 1.")
    if group_type not in (-1, 0, 2):
        _err(f"groupType only support -1/0/2 now, but given groupType is {group_type}")
    if split_item in (2, 3) and group_type == -1:
        _err("When splitItem is 2/3, groupType can not be -1.")


def form_of(n_x, n_w, n_y, split_item, group_type):
    """The form name of a call, or CANN's error for a combination it refuses (tensor group list: V3 and later)."""
    pre_check_group_type(split_item, group_type)
    if max(n_x, n_w) > MAX_LIST:
        _err(f"Length of tensorList should not exceed {MAX_LIST}, but actually got {max(n_x, n_w)}.")
    y_sep = n_y > 1
    status = lambda c: "separated" if c > 1 else "not separated"
    if group_type == -1:
        if split_item not in (0, 1):
            _err(f"When y is separated, splitItem should be 0/1, but current splitItem is {split_item}.")
        if n_x != n_y:
            _err(f"When y is separated, size of x {n_x} should equal to size of y {n_y}.")
        if n_x != n_w:
            _err(f"When x and weight are separated, size of x {n_x} should equal to size of weight {n_w}.")
        return "nosplit"
    if group_type == 2:
        if n_x == 1 and n_w == 1 and n_y == 1:
            return "splitk"
        _err(f"When groupType is 2, only support case with unseparated x, y, but now x size is {n_x}, weight size "
             f"is {n_w}, y size is {n_y}.")
    if n_x == 1 and n_w == 1 and n_y == 1:
        if split_item not in (2, 3):
            _err(f"When y is not separated, splitItem should be 2/3, but current splitItem is {split_item}.")
        return "sss"
    if n_x == 1 and n_w > 1 and not y_sep:
        if split_item not in (2, 3):
            _err(f"When y is not separated, splitItem should be 2/3, but current splitItem is {split_item}.")
        return "sms"
    if n_x == 1 and n_w > 1 and y_sep:
        _err("When grouplist is tensor, split m, single x, separated weight, separated y cases do not support.")
    if n_x > 1 and n_w > 1 and not y_sep:
        if split_item not in (2, 3):
            _err(f"When y is not separated, splitItem should be 2/3, but current splitItem is {split_item}.")
        if n_x != n_w:
            _err(f"When x and weight are separated, size of x {n_x} should equal to size of weight {n_w}.")
        return "mms"
    _err(f"When splited axis is M, current case with x {status(n_x)}, weight {status(n_w)}, y {status(n_y)} is not "
         f"supported.")


def y_count(split_item, group_type, n_x):
    """How many y tensors npu_grouped_matmul returns (op-plugin: split_item 0 / 1 -> one per x; 2 / 3 -> one)."""
    return n_x if split_item in (0, 1) else 1


def same_dtype(arrs, what, name_of):
    names = [name_of(a) for a in arrs]
    for i, nm in enumerate(names):
        if nm != names[0]:
            _err(f"GMM: {what} dtype does not match with required dtype[{names[0]}]: {what}[{i}] is {nm}.")
    return names[0]


def per_group_list(vals, n_w, what, single_weight):
    """CheckOptionalTensorList's length rule: an optional per-group list has one entry per weight tensor; with
    separated weights every entry is 1-D (N,)."""
    if vals is None:
        return None
    if len(vals) != n_w:
        _err(f"{what} size[{len(vals)}] must be equal with weight size[{n_w}].")
    if any(v is None for v in vals):
        _err(f"{what}[{[v is None for v in vals].index(True)}] must not be nullptr, but now is nullptr.")
    if not single_weight:
        for i, v in enumerate(vals):
            if np.ndim(v) != 1:
                _err(f"{what} Dim must be 1, but now is {np.ndim(v)} ({what}[{i}] with separated weights).")
    return vals


def no_per_token_with_lists(pt, n_x, n_w, n_y):
    """CheckPerTokenScale: per-token quant needs x and y single."""
    if pt is not None and not (n_x == 1 and n_y == 1):
        _err(f"Per-token quant case is only supported when x, weight and y are all single tensor, but now x size "
             f"is {n_x}, weight size is {n_w}, y size is {n_y}")


def stack_weights(ws, k, what="Weight"):
    """Separated weights (K, N) each -> (E, K, N), with CheckShapeDiffLengthTensorList's messages."""
    for i, w in enumerate(ws):
        if np.ndim(w) != 2:
            _err(f"{what.lower()}[{i}] dim num should be 2 in this case, but now is {np.ndim(w)}.")
        if w.shape[0] != k:
            _err(f"Dim 0 value of Weight[{i}] {w.shape[0]} should be equal with dim 1 value of x[0] {k}.")
        if w.shape[1] != ws[0].shape[1]:
            _err(f"Dim 1 value of Weight[{i}] {w.shape[1]} should be equal with dim 1 value of y[0] "
                 f"{ws[0].shape[1]}.")
    return np.ascontiguousarray(np.stack(ws))


def split_k_groups(gl, group_list_type, k):
    """(k0, k1) of every group of a split-K call (group_list over K; emulator-added: sizes >= 0, ending inside K)."""
    gl = np.asarray(gl, np.int64)
    if gl.ndim != 1:
        _err(f"groupList must be 1-D for groupType 2, got shape {gl.shape} (emulator-added).")
    if group_list_type not in (0, 1):
        _err(f"groupListType must be 0 or 1 when groupType is 2, got {group_list_type} (emulator-added).")
    sizes = np.diff(gl, prepend=0) if group_list_type == 0 else gl
    if np.any(sizes < 0):
        bad = int(np.argmax(sizes < 0))
        _err(f"groupListOptional should be non-negative and incremental: group {bad} has {int(sizes[bad])} K values "
             f"(emulator-added for a tensor group list: the device walks out of x and weight)")
    ends = np.cumsum(sizes)
    if ends.size and ends[-1] > k:
        _err(f"the groups cover {int(ends[-1])} values of K but x has K = {k} (emulator-added: the device reads past "
             f"the end of x and weight)")
    return [(int(e - s), int(e)) for s, e in zip(sizes, ends)]


# ---- transposition (CheckTransposeStatus): read from each tensor's view strides, as the device does --------------

def transposed_last_two(a):
    """gmm::IsTransposeLastTwoDims: the last two dims are a transposed view of a dense block (stride of dim -2 is 1,
    of dim -1 the size of dim -2, batch dims dense; unlike quant_matmul's rule, a (.., 1, 1) tensor counts). An
    NzWeight says it itself (``transposed``)."""
    if isinstance(a, NzWeight):
        return bool(a.transposed)
    if not (isinstance(a, np.ndarray) or is_torch_tensor(a)) or a.ndim < 2:
        return False
    if isinstance(a, np.ndarray) and a.flags.c_contiguous and (a.shape[-1] != 1 or a.shape[-2] != 1):
        return False         # canonical strides: st[-2] == 1 and st[-1] == shape[-2] only when both dims are 1
    shape, st = operands.geometry(a)
    if not (st[-2] == 1 and st[-1] == shape[-2]):
        return False
    return operands.batch_dense(shape, st, len(shape) - 3, shape[-1] * shape[-2])


def special_transpose(lst):
    """CheckSpecialTranspose: some tensor of the list is transposed and its last two dims are not (1, 1) (a (.., 1, 1)
    tensor passes IsTransposeLastTwoDims whatever its layout)."""
    for a in lst:
        shape = tuple(getattr(a, "shape", ()))
        if transposed_last_two(a) and int(np.prod(shape[-2:])) != 1:
            return True
    return False


def transpose_status(xs, ws, group_type):
    """(transposeX, transposeWeight) of CheckTransposeStatus, from the caller's tensors (before any copy)."""
    if group_type == 2:
        return transposed_last_two(xs[0]), special_transpose(ws)
    return special_transpose(xs), transposed_last_two(ws[0])


def check_transposes(ws, transpose_x, transpose_w, group_type, api, single_weight):
    """CheckParamDifferentGroupType's transpose conditions and CheckDimNumAndFormat's per-weight one (group_type 0
    and -1; group_type 2 reads x and weight by value, docs/ops/grouped_matmul.md §2.1)."""
    if group_type == 2:
        return
    if transpose_x and transpose_w:
        _err("x and weight can not be transposed at the same time.")
    if group_type == -1 and transpose_x:
        _err("When x, weight and y are all separated, x can not be transposed.")
    if group_type == 0 and transpose_x:
        where = "When splited axis is M" if api != "aclnnGroupedMatmulV2" and not single_weight else \
            "When groupType is 0"
        _err(f"{where}, x can not be transposed.")
    for w in ws:
        if transposed_last_two(w) != transpose_w:
            _err("The transpose state must be the same for each tensor in weight.")


def unpack_int32_int4(lst):
    """aclnn_grouped_matmul.cpp's UnpackInt32ToInt4 (every V4 / V5 / WeightNz entry): when the list's first tensor is
    INT32, every tensor of it is INT4 with 8 values a word along the last dim, the first in the low nibble (torch_npu's
    storage, ``npu_convert_weight_to_int4pack``). Returns the list with those as ml_dtypes.int4 arrays (one value an
    element); NzWeights are left to their own reader."""
    if not lst or isinstance(lst[0], NzWeight) or dtype_name(lst[0]) != "int32":
        return lst
    import ml_dtypes

    out = []
    for a in lst:
        if isinstance(a, NzWeight) or dtype_name(a) != "int32":
            out.append(a)
            continue
        codes = operands.nibbles(a).astype(np.int8)
        out.append(((codes ^ np.int8(8)) - np.int8(8)).astype(ml_dtypes.int4))
    return out
