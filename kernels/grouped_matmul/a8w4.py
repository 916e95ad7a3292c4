"""GroupedMatmul A8W4 on A2/A3 (docs/ops/grouped_matmul.md §12): int8 x with an int4 weight (ml_dtypes.int4
values, torch_npu's int32 words of eight int4, or an ``NzWeight`` of either), a uint64 / int64 per-channel or
per-group scale (E, G, N) (the Fixpipe words: float32 bits in the low half), a float32 bias (E, N), a float32
per-token scale - the MoE mode of vLLM-Ascend's w4a8 dynamic quantisation.

Sources: ``hicann/ops-transformer: gmm/grouped_matmul/op_host/op_api/aclnn_grouped_matmul.cpp`` (the int32 -> int4
unpack of V4 / V5 / WeightNz, ``CheckFunctionParams``' A8W4 branch: ``CheckA8W4QuantParams``,
``CheckA8W4AsymQuantParams``, ``CheckA8W4AsymQuantParamsRelationship``; ``TransWeightToNz``;
``ParamsWeightNzDtype``), ``op_host/op_tiling/grouped_matmul_tiling.cpp`` (``GMMTiling::A8W4Tiling``: the template
choice), ``op_host/grouped_matmul_host_util.h`` (``A8W4_PRETILING_WHITE_LIST``), ``op_kernel/grouped_matmul.cpp``
(the A8W4_KERNEL_TEMPLATE dispatch), ``op_kernel/grouped_matmul_antiquant_a8w4_msd_pre.h`` (``GMMA8W4PreProcess``)
and ``grouped_matmul_antiquant_a8w4_msd.h`` (``GMMA8W4MSDCompute``).

Implemented: MSD_API_DEQUANT (every per-group call, and per-channel calls with few rows per expert or an offset),
MSD_VECTOR_DEQUANT (``grouped_matmul_antiquant_a8w4_msd_new.h``, two white-listed shapes) and PERCHANNEL_ANTIQUANT
(``grouped_matmul_antiquant_a8w4_pre.h`` then the A8W8 per-token kernel). AUTOTILING is refused naming it (§12.5).

Compute, as the device: x split into hi / lo int4 planes (quant_matmul's ``v4.msd_split``, the arithmetic of
GMMA8W4PreProcess), per expert group and k group the exact int4 x int4 cube, the Fixpipe dequant to fp16 and the
fp16 atomic adds (quant_matmul's ``v4.group_batches`` and ``v4_kernel.msd_fused_kernel``, the same arithmetic as
QuantBatchMatmulV4's MSD), then the vector epilogue of ``a8w4_kernel.msd_dequant_kernel``.
"""

import dataclasses
import types
from dataclasses import dataclass

import numpy as np

from npu_emu.errors import (
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    AclnnError,
)
from npu_emu.frontend.core import Trace, as_array, check_memory, resolve_dtype
from npu_emu.device.launch import serial_below
from npu_emu.device.read_only import read_only as ro
from npu_emu.kernels.grouped_matmul import a8w4_kernel, api_forms as forms, checks, launch
from npu_emu.kernels.quant_matmul import trans_quant_param as tqp
from npu_emu.kernels.quant_matmul import v4, v4_kernel
from npu_emu.kernels.quant_matmul.api import NzWeight
from npu_emu.kernels.quant_matmul.operands import int_values
from npu_emu.dtypes import scalar

W_TYPES = ("int4", "int32")            # int32: eight int4 a word (torch_npu's storage; aclnn unpacks it)
SCALE_TYPES = ("uint64", "int64")      # int64 is relabelled uint64 by aclnnGroupedMatmulGetWorkspaceSizeCommon

# GMMTiling::A8W4Tiling
K_UNIT = 64                            # int4 in 32 bytes
MAX_K_A8W4_MSD = 18432                 # a row of x must fit in UB (the pre-process)
CV_PARALL_NUM = 4
SINGLE_M, SINGLE_N = 128, 256          # the workspace slots of the non-white-list MSD template
MSD_PER_CHANNEL_RATIO = 4              # isMSD: n / avg_m > 4
SHORT_M = 32                           # isShortM: avg_m < 32 -> baseM 64, baseN 512
VECTOR_DEQUANT_GROUP = 256             # the MSD_VECTOR_DEQUANT template only takes k / G == 256
VECTOR_DEQUANT_BASE_M = 32
# grouped_matmul_host_util.h: {groupNum, m, k, n, weight NZ} shapes that take MSD_VECTOR_DEQUANT
A8W4_PRETILING_WHITE_LIST = ((1, 16, 256, 512, 1), (256, 1024, 512, 32768, 1))
SYS_WORKSPACE_SIZE = 16 * 1024 * 1024

MSD_API_DEQUANT = "MSD_API_DEQUANT"
MSD_VECTOR_DEQUANT = "MSD_VECTOR_DEQUANT"
PERCHANNEL_ANTIQUANT = "PERCHANNEL_ANTIQUANT"
AUTOTILING = "AUTOTILING"


def _err(msg, status=ACLNN_ERR_PARAM_INVALID):
    raise AclnnError(status, msg)


_name = forms.dtype_name


def handles(xs, ws):
    """int8 x with an int4 weight (an INT32 weight is eight int4 a word for aclnn, whatever x is)."""
    return (xs and ws and xs[0] is not None and ws[0] is not None and not isinstance(xs[0], NzWeight)
            and _name(xs[0]) == "int8" and _name(ws[0]) in W_TYPES)


def weight_values(w, origin, weight_nd):
    """The weight as int8 values (E, K, N), and whether it came in FRACTAL_NZ (api._weight_nd reads an NzWeight:
    quant_matmul's 4-bit NZ reader; an INT32 array is unpacked as aclnn's UnpackInt32ToInt4 relabels it)."""
    if isinstance(w, NzWeight):
        nd, _, _ = weight_nd(w, origin)
        return int_values(types.SimpleNamespace(data=nd, dtype="int4", name="weight")), True
    return int_values(types.SimpleNamespace(data=w, dtype=_name(w), name="weight")), False


def _shape(a):
    return None if a is None else tuple(int(d) for d in a.shape)


@dataclass(frozen=True)
class Plan:
    """The host's decision for one call (GMMTiling::A8W4Tiling)."""
    template: str
    quant_group_num: int
    with_offset: bool
    single_m: int
    single_n: int
    core_num: int
    workspace_size: int
    soc: str


def is_asymmetric(offset, e, n):
    """isA8W8AsymmetricQuant: an offset (E, 1, N) turns on the asymmetric checks (and the tiling's withOffset)."""
    return offset is not None and offset.ndim == 3 and offset.shape[0] == e and offset.shape[1] == 1 and \
        offset.shape[2] == n


def _check_asym(x, w_shape, bias, scale, pt, offset, aqs, aqo, y_name):
    """CheckA8W4AsymQuantParams and its Relationship check, in CANN's order."""
    tag = "GMM Asymmetric Quant:"
    if y_name != "float16":
        _err(f"{tag} output y dtype should be float16, current dtype is {y_name}.")
    if resolve_dtype(offset.dtype) != "float32":
        _err(f"{tag} offset dtype does not match with required dtype float32, current dtype is "
             f"{resolve_dtype(offset.dtype)}.")
    if bias is None:
        _err(f"{tag} bias must not be null")
    if scale is None:
        _err(f"{tag} scale must not be null")
    if pt is None:
        _err(f"{tag} perTokenScale must not be null")
    if resolve_dtype(bias.dtype) != "float32":
        _err(f"{tag} bias dtype does not match with required dtype float32, current dtype is "
             f"{resolve_dtype(bias.dtype)}.")
    if resolve_dtype(scale.dtype) not in SCALE_TYPES:
        _err(f"{tag} scale dtype does not match with required dtype uint64, current dtype is "
             f"{resolve_dtype(scale.dtype)}.")
    if resolve_dtype(pt.dtype) != "float32":
        _err(f"{tag} perTokenScale dtype does not match with required dtype float32, current dtype is "
             f"{resolve_dtype(pt.dtype)}.")
    if aqs is not None:
        _err(f"{tag} antiquantScale must be nullptr.")
    if aqo is not None:
        _err(f"{tag} antiquantOffset must be nullptr.")
    e, _, n = w_shape
    m = x.shape[0]
    if not (bias.ndim == 2 and bias.shape == (e, n)):
        _err(f"{tag} bias shape is invalid, must be (e, n), the current shape is {_shape(bias)}")
    if not (scale.ndim == 3 and scale.shape[0] == e and scale.shape[1] == 1 and scale.shape[2] == n):
        _err(f"{tag} scale shape is invalid, must be (e, 1, n), the current shape is {_shape(scale)}")
    if not (pt.ndim == 2 and pt.shape[0] == m and pt.shape[1] == 1):
        _err(f"{tag} perTokenScale shape is invalid, must be (m, 1), the current shape is {_shape(pt)}")


def pick_template(e, m, k, n, quant_group_num, with_offset, weight_nz, tuning, tuning_len):
    """GMMTiling::A8W4Tiling: AUTOTILING with a tuning config of more than one value; else MSD unless per-channel
    with many rows per expert (then the fake-A8W8 PERCHANNEL_ANTIQUANT template); MSD_VECTOR_DEQUANT for the
    white-listed shapes with 256-wide k groups and no offset."""
    if tuning_len > 1:
        return AUTOTILING
    avg_m = tuning if tuning != 0 else (m // e if e else 1)
    per_channel = quant_group_num == 1
    is_msd = (not per_channel) or avg_m == 0 or n // avg_m > MSD_PER_CHANNEL_RATIO or with_offset
    if not is_msd:
        return PERCHANNEL_ANTIQUANT
    white = ((e, m, k, n, int(weight_nz)) in A8W4_PRETILING_WHITE_LIST and quant_group_num != 0
             and k // quant_group_num == VECTOR_DEQUANT_GROUP and k % quant_group_num == 0 and not with_offset)
    return MSD_VECTOR_DEQUANT if white else MSD_API_DEQUANT


def check(xs, ws, wv, nz, biases, scales, pts, offsets, aqs, aqo, gl, y_name, n_y, *, split_item, group_type,
          group_list_type, act_type, tuning, tuning_len, api, soc, core_num):
    """Every check of an A8W4 call in CANN's order (aclnn, then the host tiling), the emulator-added ones after;
    returns the Plan."""
    if api == "aclnnGroupedMatmulWeightNz" and group_type == 2:
        _err("Not support split k dim now, groupType can not be 2.")
    x = xs[0]
    e, k_w, n = wv.shape
    one = lambda lst: None if lst is None else lst[0]
    bias, scale, pt, offset = one(biases), one(scales), one(pts), one(offsets)
    # CheckFunctionParams: the A8W4 branch checks only the asymmetric case
    if offset is not None and is_asymmetric(offset, e, n):
        _check_asym(x, wv.shape, bias, scale, pt, offset, aqs, aqo, y_name)
    # CheckParamDifferentGroupType .. CheckTuningConfig, as the A8W8 calls (checks.py)
    form = forms.form_of(len(xs), len(ws), n_y, split_item, group_type)
    if form != "sss":
        _err("npu-emu implements A8W4 for one x (M, K), one weight (E, K, N) and one y (group_type 0, split_item "
             "2 / 3): the A8W4 kernels address the weight and scale as single tensors (docs/ops/grouped_matmul.md "
             "§12.5)")
    if act_type != 0:
        _err(f"act_type {act_type} with A8W4 is not modelled: CANN's A8W4 branch does not check it, the MSD kernels "
             f"apply no activation and the PERCHANNEL_ANTIQUANT template's A8W8 epilogue would (emulator-added; "
             f"docs/ops/grouped_matmul.md §12.5)")
    proxy = checks.GmmArgs(
        x_dtype="int8", w_dtype="int8", y_dtype="int32", x_shape=_shape(x), w_shape=(e, k_w, n),
        gl_dtype=None if gl is None else resolve_dtype(gl.dtype), gl_shape=_shape(gl), split_item=split_item,
        group_type=group_type, group_list_type=group_list_type, act_type=act_type, tuning_config=tuning)
    checks.check(proxy)
    if n % 2:
        _err(f"weight's inner axis size[{n}] is not even!")
    m, k = x.shape
    if nz:
        checks._check_nz_align("int4", k, n, False)           # TransWeightToNz (910 branch)
    if nz and api == "aclnnGroupedMatmulWeightNz":
        checks.weight_nz_dtypes("int8", "int4", y_name)         # ParamsWeightNzDtype
    if y_name not in ("bfloat16", "float16"):
        _err(f"y dtype {y_name}: the A8W4 kernels write bfloat16 or float16 (emulator-added for this entry; "
             f"aclnnGroupedMatmulWeightNz's ParamsWeightNzDtype refuses it)")
    # the host tiling reads N and the k-group count from scale's dims 2 and 1
    if scale is None:
        _err("scale must not be nullptr for A8W4: the host tiling reads N and the quant group count from its shape "
             "(E, G, N) (emulator-added: the device's tiling dereferences it)")
    if scale.ndim != 3:
        _err(f"scale must be 3-D (E, G, N) for A8W4, got shape {_shape(scale)} (emulator-added: the tiling reads "
             f"dims 1 and 2)")
    g_num = scale.shape[1]
    with_offset = offset is not None and is_asymmetric(offset, e, n)
    template = pick_template(e, m, k, n, g_num, with_offset, nz, tuning, tuning_len)
    if template == AUTOTILING:
        _err("npu-emu does not implement the A8W4 AUTOTILING template (grouped_matmul_autotiling_a8w4.h, chosen "
             "for a tuning config of more than one value); pass at most one tuning value "
             "(docs/ops/grouped_matmul.md §12.5)")
    if g_num == 0 or k % g_num:
        _err(f"GMM_tiling: k should be divisible by quantGroupNum, but now k={k} and quantGroupNum={g_num}",
             ACLNN_ERR_INNER_TILING_ERROR)
    if k % K_UNIT:
        _err(f"GMM_tiling: k should be divisible by 64, but now k={k}", ACLNN_ERR_INNER_TILING_ERROR)
    if k > MAX_K_A8W4_MSD:
        _err(f"GMM_tiling: K should be less than 18432 on the A8W4 scenario, but now is {k}",
             ACLNN_ERR_INNER_TILING_ERROR)
    aic = _aic(soc, core_num)      # MSD_VECTOR_DEQUANT reads what MSD_API_DEQUANT reads (checks below)
    if template == PERCHANNEL_ANTIQUANT:
        _check_fake_a8w8(scale, pt, e, m, n, group_list_type)
        return Plan(PERCHANNEL_ANTIQUANT, g_num, False, 0, 0, aic, 0, soc)
    # MSD_API_DEQUANT reads these unconditionally (emulator-added checks, §12.3)
    if group_list_type != 1:
        _err(f"group_list_type {group_list_type}: the A8W4 MSD kernel reads the group list as counts (its tiling "
             f"key fixes GROUP_LIST_TYPE_COUNT); pass group_list_type 1 with per-group row counts, as vLLM-Ascend "
             f"does (emulator-added: a cumulative list would make the device walk past x)")
    sdt = resolve_dtype(scale.dtype)
    if sdt not in SCALE_TYPES:
        _err(f"scale dtype {sdt}: the A8W4 MSD kernel reads uint64 Fixpipe words (float32 bits in the low half, "
             f"npu_trans_quant_param's format); pass uint64 / int64 (emulator-added)")
    if scale.shape[0] != e or scale.shape[2] != n:
        _err(f"scale shape {_shape(scale)} must be (E, G, N) = ({e}, G, {n}) (emulator-added)")
    if bias is None:
        _err("bias must not be nullptr for A8W4: the MSD kernel adds the float32 (E, N) bias 8 · Σ_k w · scale that "
             "restores the lo plane's + 8 (emulator-added: the device reads it unconditionally)")
    if resolve_dtype(bias.dtype) != "float32" or _shape(bias) != (e, n):
        _err(f"bias must be float32 (E, N) = ({e}, {n}) for A8W4, got {resolve_dtype(bias.dtype)} {_shape(bias)} "
             f"(emulator-added)")
    _check_pt(pt, m, "the MSD kernel multiplies every row by it")
    if template == MSD_VECTOR_DEQUANT:
        # baseM 32 x the whole N a block (the vector walks it in 512 columns); workspace per A8W4Tiling's white-list
        # branch (its baseM / baseN are the non-white-list values there)
        short = (tuning if tuning != 0 else m // e) < SHORT_M
        ws = SYS_WORKSPACE_SIZE + CV_PARALL_NUM * aic * (64 if short else 128) * (512 if short else 256) * 2 * 2
        return Plan(MSD_VECTOR_DEQUANT, g_num, False, VECTOR_DEQUANT_BASE_M, n, aic, ws, soc)
    short = (tuning if tuning != 0 else m // e) < SHORT_M
    ws = SYS_WORKSPACE_SIZE + CV_PARALL_NUM * aic * SINGLE_N * SINGLE_M * 4 * 8
    return Plan(MSD_API_DEQUANT, g_num, with_offset, 64 if short else 128, 512 if short else 256, aic, ws, soc)


def _check_pt(pt, m, why):
    """The per-token scale every A8W4 template reads (emulator-added: the device reads it even when null)."""
    if pt is None:
        _err(f"per_token_scale must not be nullptr for A8W4: {why} (emulator-added: the device reads it "
             f"unconditionally)")
    if resolve_dtype(pt.dtype) != "float32" or pt.size != m or not (pt.ndim == 1 or (pt.ndim == 2 and
                                                                                    pt.shape[1] == 1)):
        _err(f"per_token_scale must be float32 (M,) or (M, 1) with M = {m}, got {resolve_dtype(pt.dtype)} "
             f"{_shape(pt)} (emulator-added)")


def _check_fake_a8w8(scale, pt, e, m, n, group_list_type):
    """What the PERCHANNEL_ANTIQUANT template reads beyond the A8W8 checks the rebuilt call runs."""
    if group_list_type == 2:
        _err("Only both x and weight dtype are int8 support groupListType is 2", ACLNN_ERR_INNER_TILING_ERROR)
    sdt = resolve_dtype(scale.dtype)
    if sdt not in SCALE_TYPES or scale.shape[0] != e or scale.shape[2] != n:
        _err(f"scale must be uint64 / int64 (E, 1, N) = ({e}, 1, {n}) words for A8W4 per channel, got {sdt} "
             f"{_shape(scale)} (emulator-added: GMMA8W4FakeQuantPreProcess reads them as float32 pairs)")
    _check_pt(pt, m, "the PERCHANNEL_ANTIQUANT template forces the per-token epilogue")


def pair_sum_scale(words, y_name="float16"):
    """uint64 words as vector scales: each word read as two float32 (low, high) summed by PairReduceSum (one float32
    add): GMMA8W4FakeQuantPreProcess::ScaleProcess (then, for a bfloat16 y, Cast to bfloat16 with CAST_FLOOR) and
    GMMA8W4MSDComputeNew's dequant scale (float32). Returns the words' shape: float32, or ml_dtypes.bfloat16."""
    import ml_dtypes

    u = np.ascontiguousarray(words).view(np.uint64)
    pair = u.reshape(-1).view(np.uint32).reshape(-1, 2)
    out = np.empty(pair.shape[0], np.uint32 if y_name == "float16" else np.uint16)
    a8w4_kernel.fake_quant_scale_kernel(ro(np.ascontiguousarray(pair)), int(y_name == "bfloat16"), out)
    return out.view(np.float32 if y_name == "float16" else ml_dtypes.bfloat16).reshape(u.shape)


def fake_a8w8_scale(words, y_name):
    """The PERCHANNEL_ANTIQUANT template's A8W8 scale (E, N) from the (E, 1, N) words."""
    s = pair_sum_scale(words, y_name)
    return s.reshape(s.shape[0], s.shape[-1])


def _aic(soc, core_num):
    from npu_emu.device import platforms

    aic = int(core_num) if core_num is not None else platforms.get(soc).GetCoreNumAic()
    if aic < 1:
        _err(f"core_num must be at least 1, got {aic}")
    return aic


def _f32(a):
    return np.ascontiguousarray(np.asarray(a, np.float32))


class A8W4Sub:
    """One checked A8W4 call (api._Sub's interface: args, tr, ent, run)."""

    def __init__(self, args, plan, x, wv, bias, scale, pt, offset, ent, counts):
        self.args, self.plan, self.x, self.wv = args, plan, x, wv
        self.bias, self.scale, self.pt, self.offset = bias, scale, pt, offset
        self.ent, self.counts = ent, counts
        self.tr = None
        self.mode = "a8w4"
        self.workspace_size = plan.workspace_size

    def run(self, y, float_accum, validate):
        m, k = self.args.x_shape
        e, _, n = self.args.w_shape
        if m == 0 or n == 0 or k == 0 or self.ent is None:
            return y
        rows = launch.covered_rows(self.ent)
        gs = k // self.plan.quant_group_num
        check_memory(rows * n * 2 * 2 + rows * k * 2 * 4 + v4.batch_bytes(2 * rows, n, k, gs),
                     "GroupedMatmul A8W4 workspace")
        # GMMA8W4PreProcess: hi = floor(x / 16) (Muls 1/16 in half, Cast CAST_FLOOR), lo = (x & 0xF) - 8
        hl = v4.msd_split(np.ascontiguousarray(self.x[:rows])).astype(np.float32)
        out = np.empty((m, n), np.uint16)
        out[rows:] = 0
        if self.plan.template == MSD_VECTOR_DEQUANT:
            self._vector_dequant(hl, rows, out)
            y[:rows] = out[:rows].view(y.dtype)
            return y
        s2 = tqp.deq_scale(self.scale)                     # (E, G, N) the Fixpipe's FP19 view of the words
        # the fp16 workspace: k group 0 is written plainly (GetTensorC enAtomic 0), the others atomically added; a start
        # value of -0.0 makes the add of group 0 that plain write (-0 + h == h for every h, a -0.0 h included)
        ws = np.full((2 * rows, n), 0x8000, np.uint16)
        # Fixpipe fp32 -> fp16 with RNE, overflow to inf (quant_matmul's fixpipe_round / cast_overflow defaults;
        # GroupedMatmul has no switch for them)
        cfg = np.array([scalar.CAST_RINT, 0], np.int64)
        for g, r0, mg in zip(*self.ent):
            if mg <= 0:
                continue
            wsg = ws[2 * r0:2 * (r0 + mg)]
            s2g = np.ascontiguousarray(s2[g], np.float32)
            for j0, parts in v4.group_batches(hl[2 * r0:2 * (r0 + mg)], self.wv[g].astype(np.float32), gs):
                with serial_below(parts.nbytes + 2 * wsg.nbytes):    # small steps: no pool waking between GEMMs
                    v4_kernel.msd_fused_kernel_rint(ro(parts), j0, ro(s2g), wsg, ro(cfg))
        if self.plan.with_offset:
            rowsum = self.x.astype(np.int64).sum(axis=1).astype(np.float32)   # |Σ| < 2^24: exact in any order
            off = _f32(self.offset).reshape(e, n)
        else:
            rowsum = np.zeros(0, np.float32)
            off = np.zeros((0, 0), np.float32)
        with serial_below(ws.nbytes + out.nbytes):
            a8w4_kernel.msd_dequant_kernel(self.plan.core_num, ro(self.counts), n, self.plan.single_m,
                                           self.plan.single_n, ro(ws), ro(_f32(self.bias)), ro(off), ro(rowsum),
                                           ro(_f32(self.pt).reshape(-1)), int(self.args.y_dtype == "bfloat16"), out)
        y[:rows] = out[:rows].view(y.dtype)
        return y

    def _vector_dequant(self, hl, rows, out):
        """GMMA8W4MSDComputeNew: per 256-wide k chunk the cube's partial sums leave through the Fixpipe as fp16
        (scalar quant 1.0), the vector multiplies them by the pair-summed float32 scale word and adds them up in
        float32; after the last chunk the combine of ComputeDequantAndActivate (no offset in this template)."""
        e, k, n = self.args.w_shape
        s = np.ascontiguousarray(pair_sum_scale(self.scale), np.float32)        # (E, G, N)
        acc = np.zeros((2 * rows, n), np.float32)
        for g, r0, mg in zip(*self.ent):
            if mg <= 0:
                continue
            accg = acc[2 * r0:2 * (r0 + mg)]
            for j0, parts in v4.group_batches(hl[2 * r0:2 * (r0 + mg)], self.wv[g].astype(np.float32),
                                              VECTOR_DEQUANT_GROUP):
                with serial_below(parts.nbytes + 2 * accg.nbytes):
                    a8w4_kernel.vector_dequant_step(ro(parts), j0, ro(s[g]), accg)
        with serial_below(acc.nbytes + out.nbytes):
            a8w4_kernel.msd_dequant_kernel(self.plan.core_num, ro(self.counts), n, self.plan.single_m,
                                           self.plan.single_n, ro(acc), ro(_f32(self.bias)),
                                           ro(np.zeros((0, 0), np.float32)), ro(np.zeros(0, np.float32)),
                                           ro(_f32(self.pt).reshape(-1)),
                                           int(self.args.y_dtype == "bfloat16"), out)

    def make_trace(self):
        p = self.plan
        return Trace(op="GroupedMatmul", soc=p.soc, tiling_data={}, tiling_data_bytes=b"", tiling_key=None,
                     block_dim=p.core_num, workspace_size=p.workspace_size, ub_bytes_per_core=0,
                     routed_op="GroupedMatmul",
                     quant_mode=f"a8w4:{p.template}:int8xint4->{self.args.y_dtype}",
                     notes=[f"A8W4 {p.template}: singleM {p.single_m} x singleN {p.single_n} of the 2m-row hi / lo "
                            f"matrix, {p.quant_group_num} k group(s); the GMMTilingData of this template is not "
                            f"reproduced (docs/ops/grouped_matmul.md §12.4)"])


def build(xs, ws, biases, scales, pts, gl, y_name, n_y, *, split_item, group_type, group_list_type, kw, rebuild,
          weight_nd):
    """(subs, assemble, out_shapes) of an A8W4 call (api._build's contract), after the checks."""
    origin = kw["origin"]
    w0 = ws[0]
    if len(ws) != 1:
        _err("npu-emu implements A8W4 for one x (M, K), one weight (E, K, N) and one y (group_type 0, split_item "
             "2 / 3): the A8W4 kernels address the weight and scale as single tensors (docs/ops/grouped_matmul.md "
             "§12.5)")
    if kw.get("transpose_w"):
        _err("npu-emu does not implement A8W4 with a transposed weight (the MSD kernels index an (E, K, N) weight); "
             "pass the weight contiguous (emulator-added, docs/ops/grouped_matmul.md §12.5)")
    wv, nz = weight_values(w0, origin, weight_nd)
    if wv.ndim != 3:
        _err(f"Dim num or format of tensor in tensor list weight is invalid: weight must be 3-D (E, K, N), got "
             f"shape {wv.shape}.")
    aqs, aqo, _ = kw.get("antiquant") or (None, None, None)
    offsets = kw.get("offset")
    plan = check(xs, ws, wv, nz, biases, scales, pts, offsets, aqs, aqo, gl, y_name, n_y, split_item=split_item,
                 group_type=group_type, group_list_type=group_list_type, act_type=kw["act_type"],
                 tuning=kw["tuning"], tuning_len=kw.get("tuning_len", 1 if kw["tuning"] else 0),
                 api=kw.get("api"), soc=kw["soc"], core_num=kw["core_num"])
    x = xs[0]
    m, k = x.shape
    e, _, n = wv.shape
    if plan.template == PERCHANNEL_ANTIQUANT:
        # GMMA8W4FakeQuantPreProcess: the int4 weight as int8 (exact) and the scale words as an A8W8 scale, then
        # GMMQuantMixCoreCompute with isA8W4FakeQuant (per-token forced on, the bias not read: hasBias_ = false)
        kw2 = dict(kw, has_offset=False, has_antiquant=False, antiquant=None, offset=None)
        scale2 = fake_a8w8_scale(scales[0], y_name)
        pt2 = np.ascontiguousarray(np.asarray(pts[0], np.float32).reshape(-1))
        subs, assemble, shapes = rebuild([x], [np.ascontiguousarray(wv)], None, [scale2], [pt2], gl, y_name, n_y,
                                         split_item=split_item, group_type=group_type,
                                         group_list_type=group_list_type, kw=kw2)
        note = ("A8W4 PERCHANNEL_ANTIQUANT: the int4 weight cast to int8 and the scale words converted "
                "(GMMA8W4FakeQuantPreProcess), then this A8W8 per-token launch without the bias")
        for sub in subs:
            if sub.tr is not None:
                sub.tr = dataclasses.replace(sub.tr, notes=tuple(sub.tr.notes) + (note,))
        return subs, assemble, shapes
    checks.check_group_values(gl, group_list_type, e, m)
    args = checks.GmmArgs(x_dtype="int8", w_dtype="int4", y_dtype=y_name, x_shape=(m, k), w_shape=(e, k, n),
                          split_item=split_item, group_type=group_type, group_list_type=group_list_type)
    glv = np.asarray(gl, np.int64)
    counts = np.ascontiguousarray(glv[:e])
    ent = launch.entries(glv, group_list_type, e, m) if m and n and k else None
    one = lambda lst: None if lst is None else as_array(lst[0], "tensor", origin=origin)
    sub = A8W4Sub(args, plan, np.asarray(x, np.int8), wv, one(biases), np.asarray(scales[0]), one(pts),
                  one(offsets), ent, counts)
    return [sub], (lambda ys: ys), [(m, n)]
