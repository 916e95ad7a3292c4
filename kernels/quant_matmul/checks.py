"""The aclnn checks of the quantised matmul family, in CANN's order, with CANN's status codes
(docs/ops/quant_matmul.md §9).

Sources (``hicann/ops-nn``, read and re-expressed, not copied):
* ``matmul/quant_batch_matmul_v4/op_host/op_api/aclnn_quant_matmul_v5.cpp`` - aclnnQuantMatmulV5 (V5 flow,
  A8W4 float/int checks);
* ``matmul/quant_batch_matmul_v3/op_api/aclnn_quant_matmul_v4.cpp`` - aclnnQuantMatmulV3/V4/WeightNz (the A2
  ``CheckDtypeValid``/``CheckShape``/``CheckFormat`` set, and ``CheckParamsDAV3510``, which hands 950 calls to the
  V3 checker *as interface type 5*);
* ``matmul/quant_batch_matmul_v3/op_api/quant_matmul_checker.cpp`` - ``QuantMatmulChecker`` (dtype per NPU arch,
  shape, format, empty tensors, group-size inference).
The checks work on :class:`routing.TensorDesc` only. Status codes: 161001 null, 161002 invalid, 361001 mode
unsupported on the SoC (routing.py decides the mode); each message says what to change. Checks npu-emu adds are
marked "emulator-added".
"""

from dataclasses import dataclass, replace

from npu_emu.device import platforms
from npu_emu.errors import (
    ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
    ACLNN_ERR_INNER_TILING_ERROR,
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_ERR_RUNTIME_ERROR,
    AclnnError,
)
from npu_emu.kernels.mx_quant.checks import soc_switch_hint as _soc_hint   # one wording for SoC refusals
from npu_emu.kernels.quant_matmul import routing as rt
from npu_emu.kernels.quant_matmul.routing import FP8, TensorDesc, U64

MAX_DIM_ND, MIN_DIM_ND, MAX_DIM_NZ, MIN_DIM_NZ = 6, 2, 8, 4
LAST_AXIS_LIMIT = 65535
MAX_K_A8W4_INT = 29576
PERBLOCK = 128
API_NAMES = {3: "aclnnQuantMatmulV3", 4: "aclnnQuantMatmulV4", 5: "aclnnQuantMatmulV5",
             "nz": "aclnnQuantMatmulWeightNz"}


def _bad(msg):
    return AclnnError(ACLNN_ERR_PARAM_INVALID, msg)


def _need(cond, msg):
    if not cond:
        raise _bad(msg)


def _up(dt):
    return dt.upper().replace("FLOAT32", "FLOAT").replace("BFLOAT16", "BF16")


def _dtypes(names):
    return "/".join(_up(n) for n in names)


def arch(soc):
    return platforms.get(soc).npu_arch


@dataclass(frozen=True)
class QmmArgs:
    """One call as the aclnn layer sees it (descs may be None). ``api``: 3, 4, 5 or "nz". Frozen: the checks'
    results are shared by repeated calls (npu_emu.device.memo)."""

    _memo_by_value = True       # its own npu_emu.device.memo key: immutable fields (str, int, bool, tuples) compared by ==

    api: object
    x1: TensorDesc
    x2: TensorDesc
    x2_scale: TensorDesc
    out: TensorDesc
    x1_scale: TensorDesc = None
    y_scale: TensorDesc = None
    x1_offset: TensorDesc = None
    x2_offset: TensorDesc = None
    y_offset: TensorDesc = None
    bias: TensorDesc = None
    transpose_x1: bool = False
    transpose_x2: bool = False
    group_size: int = 0

    @property
    def name(self):
        return API_NAMES[self.api] + "GetWorkspaceSize"


@dataclass(frozen=True)
class CheckResult:
    """What the checks decided: the device op, the (V4) mode, the inferred groupSize, the args after the
    INT32 -> INT4 conversion, and whether the aclnn empty-tensor shortcut applies."""

    _memo_by_value = True       # its own npu_emu.device.memo key: immutable fields (str, int, bool, tuples) compared by ==

    op: str
    v4_mode: str = None
    group_size: int = 0
    args: QmmArgs = None
    empty: bool = False


def _present(t):
    return t is not None and not t.empty


# --------------------------------------------------------------------------------------------------------------
# shared pieces
# --------------------------------------------------------------------------------------------------------------

def _dims(a):
    return rt.mnk(a.x1, a.x2, a.transpose_x1, a.transpose_x2)


def _infer_out_batch(x1, x2, name):
    """``InferOutputShape``: numpy-style broadcast of the batch dims -> (batch dims, product)."""
    n1, n2 = x1.ndim, x2.ndim
    out_n = max(n1, n2)
    long_, short = (x1, x2) if n1 > n2 else (x2, x1)
    off = out_n - min(n1, n2)
    batch, prod = [], 1
    for i in range(out_n - 2):
        s = 1 if i < off else short.dim(i - off)
        lg = long_.dim(i)
        _need(not (s > 1 and lg > 1 and s != lg),
              f"{name}: the batch dimensions of x1 {x1.shape} and x2 {x2.shape} must be broadcastable "
              f"({s} vs {lg}); make them equal or 1")
        batch.append(max(s, lg))
        prod *= max(s, lg)
    return batch, prod


def _check_bias_shape(bias, n, batch, prod, name):
    _need(bias.ndim in (1, 3), f"{name}: the shape dim of bias must be 1D (n,) or 3D (batch, 1, n), got "
                               f"{bias.shape}")
    if bias.ndim == 1:
        _need(bias.dim(0) == n, f"{name}: the shape of bias must be [{n}], got {bias.shape}")
        return
    _need(len(batch) == 1, f"{name}: a 3D bias needs a 3D output (one batch dim); the inferred output has "
                           f"{len(batch)} batch dims")
    _need(bias.dim(0) == prod, f"{name}: bias first dim {bias.dim(0)} must equal the output batch {prod}")
    _need(bias.dim(1) == 1, f"{name}: the second dim of a 3D bias must be 1, got {bias.dim(1)}")
    _need(bias.dim(2) == n, f"{name}: the last dim of a 3D bias must be {n}, got {bias.dim(2)}")


def _check_out_shape(out, m, n, batch, two_dim, name):
    od = out.ndim
    om, on = out.dim(-2), out.dim(-1)
    if om == 1 and len(batch) == 0 and od == 3 and two_dim:
        od -= 1
        om = out.dim(0)
    _need(len(batch) + 2 == od, f"{name}: the shape dim of out must be {len(batch) + 2}D, got {out.shape}")
    _need(om == m, f"{name}: the M dimension of out ({om}) must equal the M dimension of x1 ({m})")
    _need(on == n, f"{name}: the N dimension of out ({on}) must equal the N dimension of x2 ({n})")
    for i in range(od - 2):
        _need(out.dim(i) == batch[i], f"{name}: out batch dim {i} is {out.dim(i)}, the inferred output batch "
                                      f"dim is {batch[i]}")


def _nz_k0(dtype, a8w4_float=False):
    """``SelectNzK0Value``: the k0 of a transposed NZ weight."""
    if dtype == "int4":
        return 64
    if dtype == "float4_e2m1":
        return 32 if a8w4_float else 64
    if dtype == "int32":
        return 8
    return 32


def _check_nz_k(a, name, k0=None):
    """``CheckShapeForWeightNz``: ceil(k1) of the NZ storage must match x1's K."""
    x2 = a.x2
    st = x2.storage_shape
    m, k1, k2, n = _dims(a)
    k1_store = st[-4] if a.transpose_x2 else st[-3]
    if k0 is None:
        k0 = (64 if a.x1.dtype in ("int32", "int4", "float4_e2m1") else 32)
    align = k0 if a.transpose_x2 else 16
    _need(-(-k1 // align) * align == k1_store * align,
          f"{name}: when the format of x2 is FRACTAL_NZ, x1's K aligned to {align} ({-(-k1 // align) * align}) must "
          f"equal the NZ K1 ({k1_store}) times {align}; convert the weight with the matching K")


# --------------------------------------------------------------------------------------------------------------
# QuantMatmulChecker (quant_matmul_checker.cpp)
# --------------------------------------------------------------------------------------------------------------

class Checker:
    """QuantMatmulChecker on TensorDescs (x1/x2 after INT32 -> INT4 conversion). ``iface`` 3/4/5."""

    def __init__(self, a, soc, iface):
        self.a, self.soc, self.iface = a, soc, iface
        self.arch = arch(soc)
        self.api = a.name
        self.m, self.k1, self.k2, self.n = _dims(a) if a.x1.ndim >= 2 and a.x2.ndim >= 2 else (0, 0, 0, 0)
        self.s1n = {5: "x1Scale(pertokenScale)"}.get(iface, "pertokenScaleOptional")
        self.s2n = {5: "x2Scale(scale)"}.get(iface, "scale")
        self.offn = {5: "x2Offset(offset)"}.get(iface, "offset")

    # -- small predicates ---------------------------------------------------------------------------------------
    def int8(self):
        return self.a.x1.dtype == "int8" and self.a.x2.dtype == "int8"

    def int4(self):
        return self.a.x1.dtype == "int4" and self.a.x2.dtype == "int4"

    def fp8(self):
        return self.a.x1.dtype in FP8 and self.a.x2.dtype in FP8

    def hif8(self):
        return self.a.x1.dtype == "hifloat8" and self.a.x2.dtype == "hifloat8"

    def fp4(self):
        return self.a.x1.dtype == "float4_e2m1" and self.a.x2.dtype == "float4_e2m1"

    def mx(self):
        return rt.is_micro_scaling(self.a.x1_scale, self.a.x2_scale)

    def perblock(self):
        a = self.a
        return (a.x1_scale is not None and (self.int8() or self.fp8() or self.hif8())
                and a.x1_scale.dtype == "float32" and a.x1_scale.ndim > 1
                and a.x2_scale.dtype == "float32" and a.x2_scale.ndim > 1)

    def a4w4_asym(self, gs_k=None):
        a = self.a
        gs_k = rt.decode_group_size(a.group_size)[2] if gs_k is None else gs_k
        return rt.is_a4w4_pergroup_asym(a.x1, a.x2, a.x1_scale, a.x2_scale, a.x2_offset, a.bias,
                                        a.transpose_x1, a.transpose_x2, gs_k)

    def _dt_in(self, t, allowed, name):
        _need(t.dtype in allowed, f"{self.api}: {name} dtype {_up(t.dtype)} is not supported here; use "
                                  f"{_dtypes(allowed)}")

    def _dt_is(self, t, dt, name):
        _need(t.dtype == dt, f"{self.api}: {name} dtype must be {_up(dt)}, got {_up(t.dtype)}")

    # -- group size inference (InferGroupSize*) ----------------------------------------------------------------
    def infer_group_size(self, mode="checker"):
        a = self.a
        if a.x1_scale is None or a.x1_scale.ndim < 2 or a.x2_scale.ndim < 2:
            return a.group_size
        gm, gn, gk = rt.decode_group_size(a.group_size)
        mx = self.mx()
        if mode == "explicit" and 0 in (gm, gn, gk):
            raise _bad(f"{self.api}: groupSize {a.group_size} has a zero component (gsM, gsN, gsK = {gm}, {gn}, "
                       f"{gk}) and group_size_inference='explicit' does not infer it; pass all three")
        sm = a.x1_scale
        if mx:
            bd = sm.ndim - 3
            scale_m = sm.dim(bd + (1 if a.transpose_x1 else 0))
            scale_k = sm.dim(bd + (0 if a.transpose_x1 else 1)) * 2
        else:
            scale_m = sm.dim(-1) if a.transpose_x1 else sm.dim(-2)
            scale_k = sm.dim(-2) if a.transpose_x1 else sm.dim(-1)
        gm = self._recalc(self.m, scale_m, gm, "m")
        gk = self._recalc(self.k1, scale_k, gk, "k")
        s2 = a.x2_scale
        if mx:
            bd = s2.ndim - 3
            scale_n = s2.dim(bd + (0 if a.transpose_x2 else 1))
            d0, d1 = s2.dim(bd), s2.dim(bd + 1)
            if (d0 == 1 and d1 == self.n) or (d0 == self.n and d1 == 1) or (self.n == 1 and (d0 == 1 or d1 == 1)):
                scale_n = self.n
        elif self.a4w4_asym(gk):
            scale_n = s2.dim(-1) if a.transpose_x2 else s2.dim(-2)
        else:
            scale_n = s2.dim(-2) if a.transpose_x2 else s2.dim(-1)
        gn = self._recalc(self.n, scale_n, gn, "n")
        return rt.encode_group_size(gm, gn, gk)

    def _recalc(self, size, scale_size, gs, dim):
        sname = self.s2n if dim == "n" else self.s1n
        _need(scale_size != 0, f"{self.api}: the {dim} dimension of {sname} must be positive")
        if gs == 0:
            xname = "x2" if dim == "n" else "x1"
            _need(size % scale_size == 0,
                  f"{self.api}: groupSize in {dim} is 0, so it is inferred as {xname}'s {dim} ({size}) / "
                  f"{sname}'s {dim} ({scale_size}), which must divide exactly; pass the group size explicitly")
            gs = size // scale_size
        return gs

    # -- CheckParams ----------------------------------------------------------------------------------------
    def check_params(self):
        self.check_dtype()
        self.check_shape()
        self.check_format()
        self.check_empty()

    def check_dtype(self):
        a = self.a
        if self.iface != 5 and not (a.x1.dtype in ("int8", "int4", "int32") and a.x2.dtype in ("int8", "int4",
                                                                                               "int32")):
            raise _bad(f"{self.api}: the dtypes of x1 and x2 must be INT8, INT4 or INT32 for aclnnQuantMatmulV3/V4, "
                       f"got {_up(a.x1.dtype)}, {_up(a.x2.dtype)}; use aclnnQuantMatmulV5 for float8/hifloat8")
        if self.arch == 2201:
            self._dtype_a2()
        elif self.arch == 3510:
            self._dtype_950()
        elif self.arch == 2002:
            self._dtype_310p()
        else:
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR,
                             f"AclnnQuantMatmul do not support this platform: {self.soc}; use an ascend910b*, "
                             f"ascend910_93, ascend950* or ascend310p soc")

    # DAV_2201: CheckDtypeOnlyL0c2out
    def _dtype_a2(self):
        a = self.a
        if self.int4() and a.x1_scale is None:
            self._dt_in(a.x1, ("int4",), "x1")
            _need(a.x2_scale.dtype in U64, f"{self.api}: in A4W4 scenario and {self.s1n} is null, the dtype of "
                                           f"{self.s2n} must be UINT64 or INT64, got {_up(a.x2_scale.dtype)}")
            _need(a.bias is None or a.bias.dtype == "int32",
                  f"{self.api}: in A4W4 scenario and {self.s1n} is null, the dtype of bias must be INT32")
            _need(a.out.dtype in ("float16", "bfloat16"),
                  f"{self.api}: in A4W4 scenario, the dtype of out must be FLOAT16 or BFLOAT16, got {_up(a.out.dtype)}")
        elif a.x1_scale is None:
            self._pertensor_l0c2out()
        elif a.x1.dtype == "int8" or (self.int4() and a.x1_scale is not None):
            self._pertoken_l0c2out()
        else:
            raise _bad(f"{self.api}: the quantization mode determined by x1 {_up(a.x1.dtype)}, x2 {_up(a.x2.dtype)}, "
                       f"{self.s1n}, {self.s2n} and out is not supported on {self.soc}"
                       f"{_soc_hint(self.soc)}")

    def _pertensor_l0c2out(self):
        a = self.a
        self._dt_is(a.x1, "int8", "x1")
        self._dt_is(a.x2, "int8", "x2")
        out = a.out.dtype
        if out == "int32":
            _need(a.x2_scale.dtype in ("float32", "bfloat16"),
                  f"{self.api}: when the dtype of out is INT32, the dtype of {self.s2n} must be FLOAT or BFLOAT16")
            _need(a.bias is None or a.bias.dtype == "int32",
                  f"{self.api}: when the dtype of out is INT32, the dtype of bias must be INT32")
        elif out == "bfloat16":
            self._dt_in(a.x2_scale, ("float32", "bfloat16"), self.s2n)
            if a.group_size != 0:
                self._dt_is(a.x2_scale, "bfloat16", self.s2n)
            if a.bias is not None:
                self._dt_in(a.bias, ("int32", "bfloat16", "float32"), "bias")
            _need(a.x2_offset is None, f"{self.api}: when the dtype of out is BFLOAT16, {self.offn} must be null")
        elif out == "int8":
            self._dt_in(a.x2_scale, U64, self.s2n)
            if a.bias is not None:
                self._dt_is(a.bias, "int32", "bias")
            if a.x2_offset is not None:
                self._dt_is(a.x2_offset, "float32", self.offn)
        elif out == "float16":
            self._dt_in(a.x2_scale, U64, self.s2n)
            if a.bias is not None:
                self._dt_is(a.bias, "int32", "bias")
            _need(a.x2_offset is None, f"{self.api}: when the dtype of out is FLOAT16, {self.offn} must be null")
        else:
            raise _bad(f"{self.api}: the dtype of out must be INT32, BFLOAT16, INT8 or FLOAT16, got {_up(out)}")

    def _pertoken_l0c2out(self):
        a = self.a
        self._dt_in(a.x2, ("int4", "int8"), "x2")
        self._dt_is(a.x1_scale, "float32", self.s1n)
        out = a.out.dtype
        if out == "bfloat16":
            self._dt_in(a.x2_scale, ("bfloat16", "float32"), self.s2n)
            if a.bias is not None:
                self._dt_in(a.bias, ("int32", "bfloat16", "float32"), "bias")
        elif out == "float16":
            self._dt_is(a.x2_scale, "float32", self.s2n)
            if a.bias is not None:
                self._dt_in(a.bias, ("int32", "float16", "float32"), "bias")
        else:
            raise _bad(f"{self.api}: when x1/x2 are INT8/INT4 and {self.s1n}, {self.s2n} are FLOAT, the dtype of out "
                       f"must be BFLOAT16 or FLOAT16, got {_up(out)}")
        if a.x2_offset is not None and self.int8() and a.x1_scale.dtype != "float32" and \
                a.x2_scale.dtype != "float32":
            raise _bad(f"{self.api}: {self.offn} must be null here")

    # DAV_3510: CheckDtypeL0c2outOrL0c2ub
    def _dtype_950(self):
        a = self.a
        if a.x2.fmt == "NZ":
            self._dtype_weight_nz()
        if a.out.dtype == "int32" and a.x1_scale is not None:
            raise _bad(f"{self.api}: when the dtype of out is INT32, {self.s1n} must be null")
        if a.x1_scale is None:
            self._pertensor_950()
        elif self.mx():
            self._micro_scaling()
        elif self.int4() and a.x2_offset is not None:
            self._pertoken_pergroup()
        elif self.int8() or self.int4():
            self._pertoken_950()
        elif self.hif8() or self.fp8():
            self._double_scale_fp8()
        else:
            raise _bad(f"{self.api}: the quantization mode determined by x1 {_up(a.x1.dtype)}, x2 {_up(a.x2.dtype)} "
                       f"and {self.s1n} is not supported")

    def _pertensor_950(self):
        a = self.a
        out = a.out.dtype
        if out == "int32" and not self.int8():
            raise _bad(f"{self.api}: when the dtype of out is INT32, the dtypes of x1 and x2 must be INT8")
        if self.int8() or self.int4():
            if out == "bfloat16":
                self._dt_in(a.x2_scale, ("uint64", "int64", "float32", "bfloat16"), self.s2n)
            elif out in ("int8", "float16"):
                self._dt_in(a.x2_scale, U64, self.s2n)
            elif out == "int32":
                self._dt_in(a.x2_scale, ("float32", "bfloat16"), self.s2n)
            if a.bias is not None:
                _need(not (out == "int32" and a.bias.dtype != "int32"),
                      f"{self.api}: when the dtype of out is INT32, the dtype of bias must be INT32")
                if out == "bfloat16" and a.x2_scale.dtype in ("float32", "bfloat16"):
                    self._dt_in(a.bias, ("int32", "bfloat16", "float32"), "bias")
                if out in ("int8", "float16", "bfloat16") and a.x2_scale.dtype in U64:
                    self._dt_is(a.bias, "int32", "bias")
            if a.x2_offset is not None:
                _need(out == "int8", f"{self.api}: when x1 and x2 are INT8 and the dtype of out is not INT8, "
                                     f"{self.offn} must be null")
                self._dt_is(a.x2_offset, "float32", self.offn)
            self._dt_in(a.out, ("int8", "float16", "bfloat16", "int32"), "out")
        elif self.hif8() or self.fp8():
            self._dt_in(a.x2_scale, U64, self.s2n)
            if a.bias is not None:
                self._dt_is(a.bias, "float32", "bias")
            _need(a.x2_offset is None, f"{self.api}: when x1 and x2 are FLOAT8 or HIFLOAT8, {self.offn} must be null")
            self._dt_in(a.out, ("float16", "bfloat16", "float32"), "out")
        else:
            raise _bad(f"{self.api}: when {self.s1n} is null, the dtypes of x1 and x2 must be the same and in "
                       f"[INT8, FLOAT8, HIFLOAT8], got {_up(a.x1.dtype)}, {_up(a.x2.dtype)}")

    def _micro_scaling(self):
        a = self.a
        _need(self.fp4() or self.fp8(), f"{self.api}: when {self.s1n} and {self.s2n} are FLOAT8_E8M0, the dtypes "
                                        f"of x1 and x2 must be FLOAT4_E2M1 or FLOAT8, got {_up(a.x1.dtype)}, "
                                        f"{_up(a.x2.dtype)}")
        if a.bias is not None:
            self._dt_is(a.bias, "float32", "bias")
        self._dt_in(a.out, ("float16", "bfloat16", "float32"), "out")
        _need(a.x2_offset is None, f"{self.api}: when the scales are FLOAT8_E8M0, {self.offn} must be null")
        _need(not (self.fp4() and a.x2.fmt == "NZ" and a.transpose_x1),
              f"{self.api}: MXFP4 with an NZ x2 needs transposeX1 = false")

    def _pertoken_pergroup(self):
        a = self.a
        self._dt_in(a.out, ("float16", "bfloat16"), "out")
        self._dt_is(a.x1_scale, "float32", self.s1n)
        self._dt_is(a.x2_scale, "float32", self.s2n)
        self._dt_is(a.x2_offset, "float16", self.offn)
        _need(not a.transpose_x1 and a.transpose_x2,
              f"{self.api}: in A4W4 scenario, transposeX1 must be false and transposeX2 must be true")

    def _pertoken_950(self):
        a = self.a
        self._dt_in(a.out, ("float16", "bfloat16"), "out")
        self._dt_is(a.x1_scale, "float32", self.s1n)
        _need(a.x2_offset is None, f"{self.api}: when x1 and x2 are INT8 with {self.s1n}, {self.offn} must be null")
        if a.out.dtype == "bfloat16":
            self._dt_in(a.x2_scale, ("bfloat16", "float32"), self.s2n)
            if a.bias is not None:
                self._dt_in(a.bias, ("int32", "bfloat16", "float32"), "bias")
        else:
            self._dt_is(a.x2_scale, "float32", self.s2n)
            if a.bias is not None:
                self._dt_in(a.bias, ("int32", "float16", "float32"), "bias")

    def _double_scale_fp8(self):
        a = self.a
        self._dt_is(a.x1_scale, "float32", self.s1n)
        self._dt_is(a.x2_scale, "float32", self.s2n)
        self._dt_in(a.out, ("float16", "bfloat16", "float32"), "out")
        if self.perblock():
            _need(a.bias is None, f"{self.api}: when the quantization mode is G-B or B-B, bias must be null")
        if a.bias is not None:
            self._dt_is(a.bias, "float32", "bias")
        _need(a.x2_offset is None, f"{self.api}: when x1 and x2 are FLOAT8 or HIFLOAT8 and the scales are FLOAT, "
                                   f"{self.offn} must be null")

    def _dtype_weight_nz(self):
        a = self.a
        ok = self.int8() or a.x1.dtype == "int8" or self.hif8() or \
            (a.x1.dtype == a.x2.dtype == "float8_e4m3fn") or self.fp4()
        _need(ok, f"{self.api}: when the format of x2 is FRACTAL_NZ, the dtypes of x1 and x2 must be "
                  f"INT8/HIFLOAT8/FLOAT8_E4M3FN/FLOAT4_E2M1, got {_up(a.x1.dtype)}, {_up(a.x2.dtype)}")
        static = a.x1_scale is None and a.x2_scale.dtype in U64
        floats = a.x1_scale is not None and a.x1_scale.dtype == "float32" and a.x2_scale.dtype == "float32"
        if self.hif8() or (a.x1.dtype == a.x2.dtype == "float8_e4m3fn"):
            _need(not (floats and a.transpose_x1), f"{self.api}: with an NZ x2 and FLOAT scales (K-C/K-T), "
                                                   f"transposeX1 must be false")
            if self.hif8():
                _need(floats or static, f"{self.api}: with an NZ HIFLOAT8 x2, use a UINT64/INT64 {self.s2n} and no "
                                        f"{self.s1n} (static), or FLOAT scales for both")
            else:
                _need(self.mx() or floats or static, f"{self.api}: with an NZ FLOAT8_E4M3FN x2, use FLOAT8_E8M0 "
                                                     f"scales (mx), FLOAT scales, or a UINT64/INT64 {self.s2n}")
        if self.fp4():
            _need(self.mx(), f"{self.api}: with an NZ FLOAT4_E2M1 x2, both scales must be FLOAT8_E8M0")

    # DAV_2002: CheckDtypeOnlyL0c2ub
    def _dtype_310p(self):
        a = self.a
        if self.int4():
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"QuantBatchMatmul support for {self.soc} is not implemented "
                                                      f"in a4w4 scenario")
        if a.x1_scale is not None:
            self._dt_is(a.x1, "int8", "x1")
            self._dt_is(a.x2, "int8", "x2")
            self._dt_is(a.x1_scale, "float32", self.s1n)
            _need(a.out.dtype == "float16", f"{self.api}: when {self.s1n} exists, the dtype of out must be FLOAT16")
            self._dt_is(a.x2_scale, "float32", self.s2n)
            if a.bias is not None:
                self._dt_is(a.bias, "int32", "bias")
            _need(a.x2_offset is None, f"{self.api}: when the dtype of out is FLOAT16, {self.offn} must be null")
        else:
            self._pertensor_l0c2out()

    # -- CheckShape ------------------------------------------------------------------------------------------
    def check_shape(self):
        a = self.a
        self._scale_dim_range()
        self._group_size()
        if self.int4():
            self._shape_int4()
        _need(self.k1 == self.k2, f"{self.api}: the K dimension of x1 ({self.k1}) and x2 ({self.k2}) must be equal")
        if a.x2.fmt == "NZ":
            _check_nz_k(a, self.api)
        self._dim_value()
        batch, prod = _infer_out_batch(a.x1, a.x2, self.api)
        if a.bias is not None:
            _check_bias_shape(a.bias, self.n, batch, prod, self.api)
        _check_out_shape(a.out, self.m, self.n, batch, a.x1.ndim == a.x2.ndim == 2, self.api)

    def _scale_dim_range(self):
        a = self.a
        if a.x1_scale is None:
            _need(a.x2_scale.ndim == 1, f"{self.api}: {self.s2n} must be 1D when {self.s1n} is null, got "
                                        f"{a.x2_scale.shape}")
            return
        d1, d2 = a.x1_scale.ndim, a.x2_scale.ndim
        if self.mx():
            _need(d1 >= 3, f"{self.api}: when the quantization mode is mx, the shape dim of {self.s1n} must be at "
                           f"least 3D, got {a.x1_scale.shape}")
            _need(d2 >= 3, f"{self.api}: when the quantization mode is mx, the shape dim of {self.s2n} must be at "
                           f"least 3D, got {a.x2_scale.shape}")
            _need(d1 - 3 == max(a.x1.ndim - 2, 0) and d2 - 3 == max(a.x2.ndim - 2, 0),
                  f"{self.api}: when the quantization mode is mx, the scales must have the batch dims of x1/x2")
            _need(a.x1_scale.shape[:d1 - 3] == a.x1.shape[:d1 - 3] and a.x2_scale.shape[:d2 - 3] == a.x2.shape[:d2 - 3],
                  f"{self.api}: when the quantization mode is mx, the scales' batch dims must equal those of x1/x2")
            return
        if self.a4w4_asym():
            return
        pb = self.perblock()
        _need((pb and d1 == a.x1.ndim) or (not pb and d1 == 1),
              f"{self.api}: {self.s1n} must have the shape dim of x1 ({a.x1.ndim}D) for G-B/B-B, otherwise be 1D; "
              f"got {a.x1_scale.shape}")
        _need((pb and d2 == a.x2.ndim) or (not pb and d2 == 1),
              f"{self.api}: {self.s2n} must have the shape dim of x2 ({a.x2.ndim}D) for G-B/B-B, otherwise be 1D; "
              f"got {a.x2_scale.shape}")

    def _group_size(self):
        if self.arch != 3510:
            return
        a = self.a
        gm, gn, gk = rt.decode_group_size(a.group_size)
        if self.a4w4_asym(gk):
            _need(gk == 256, f"{self.api}: in A4W4 pertoken-pergroup non-symmetric scenario, groupSizeK must be 256, "
                             f"got {gk}")
        elif self.mx():
            _need((gk, gm, gn) == (32, 1, 1),
                  f"{self.api}: when the quantization mode is mx, groupSize must be 4295032864 (group_sizes [1, 1, 32]); "
                  f"got gsM, gsN, gsK = {gm}, {gn}, {gk}")
        elif self.perblock():
            _need(gk == PERBLOCK, f"{self.api}: when the quantization mode is G-B or B-B, groupSizeK must be 128, "
                                  f"got {gk}")
            _need(gn == PERBLOCK, f"{self.api}: when the quantization mode is G-B or B-B, groupSizeN must be 128, "
                                  f"got {gn}")
            _need(gm in (PERBLOCK, 1), f"{self.api}: when the quantization mode is G-B or B-B, groupSizeM must be 128 "
                                       f"or 1, got {gm}")
        else:
            _need(a.group_size == 0, f"{self.api}: when the quantization mode is not G-B, B-B or mx, groupSize must be 0 "
                                     f"(group_sizes [0, 0, 0] or None), got {a.group_size}")

    def _shape_int4(self):
        a = self.a
        _need(self.k1 > 0 and self.k1 % 2 == 0, f"{self.api}: in A4W4 scenario, the K dimension of x1 must be positive "
                                                f"and even, got {self.k1}")
        if a.transpose_x2:
            _need(self.k2 > 0 and self.k2 % 2 == 0, f"{self.api}: in A4W4 scenario with transposeX2, the K "
                                                    f"dimension of x2 must be positive and even, got {self.k2}")
        else:
            _need(self.n > 0 and self.n % 2 == 0, f"{self.api}: in A4W4 scenario without transposeX2, the N "
                                                  f"dimension of x2 must be positive and even, got {self.n}")
        _need(not a.transpose_x1, f"{self.api}: in A4W4 scenario, transposeX1 must be false")
        _need(a.x2.ndim == 2, f"{self.api}: in A4W4 scenario, the shape dim of x2 must be 2D, got {a.x2.shape}")
        _need(a.bias is None or a.bias.ndim == 1, f"{self.api}: in A4W4 scenario, the shape dim of bias must be 1D")

    def _dim_value(self):
        a = self.a
        if a.x1_scale is not None:
            if self.mx():
                self._dim_value_mx()
                return
            if self.perblock():
                self._dim_value_perblock()
                return
            s0 = a.x1_scale.dim(0)
            if self.m == 1:
                _need(s0 == 1, f"{self.api}: with 1D scales and M = 1, the shape of {self.s1n} must be [1], got "
                               f"{a.x1_scale.shape}")
            elif s0 == 1 and not self.int8():
                _need(a.x2_scale.dim(0) in (1, self.n), f"{self.api}: when the shape of {self.s1n} is [1], the shape "
                                                        f"of {self.s2n} must be [1] or [{self.n}]")
            else:
                _need(s0 == self.m, f"{self.api}: with 1D scales, the shape of {self.s1n} must be [{self.m}], got "
                                    f"{a.x1_scale.shape}")
        if a.x2.fmt == "NZ":
            _need(self.k2 != 1 and self.n != 1, f"{self.api}: with an NZ x2, the last two dimensions of x2 can not "
                                                f"be 1")
        asym = self.a4w4_asym()
        if not asym:
            _need(a.x2_scale.dim(0) in (self.n, 1), f"{self.api}: for a per-tensor or per-channel x2 scale, the "
                                                    f"last dimension of {self.s2n} must be {self.n} or 1, got "
                                                    f"{a.x2_scale.shape}")
        if a.x2_offset is not None and not asym:
            _need(a.x2_offset.ndim == 1, f"{self.api}: {self.offn} must be 1D, got {a.x2_offset.shape}")
            _need(a.x2_offset.dim(0) in (self.n, 1), f"{self.api}: the first dimension of {self.offn} must be "
                                                     f"{self.n} or 1, got {a.x2_offset.shape}")

    def _dim_value_mx(self):
        a = self.a
        s1, s2 = a.x1_scale, a.x2_scale
        b1, b2 = s1.ndim - 3, s2.ndim - 3
        s1m = s1.dim(b1 + (1 if a.transpose_x1 else 0))
        s1k = s1.dim(b1 + (0 if a.transpose_x1 else 1))
        s2n = s2.dim(b2 + (0 if a.transpose_x2 else 1))
        s2k = s2.dim(b2 + (1 if a.transpose_x2 else 0))
        g1, g2 = -(-self.k1 // 64), -(-self.k2 // 64)
        one1 = (s1m == 1 and s1k == self.m) or (s1m == self.m and s1k == 1) or (s1m == 1 and s1k == g1) or \
            (s1m == g1 and s1k == 1)
        one2 = (s2n == 1 and s2k == self.n) or (s2n == self.n and s2k == 1) or (s2n == 1 and s2k == g2) or \
            (s2n == g2 and s2k == 1)
        _need((one1 or s1m == self.m) and (one2 or s2n == self.n),
              f"{self.api}: when the quantization mode is mx, the M dimension of x1 ({self.m}) and {self.s1n} "
              f"({s1m}) must be equal, and the N dimension of x2 ({self.n}) and {self.s2n} ({s2n}) must be equal "
              f"(mind the transposes: {self.s1n} is (m, ceil(k/64), 2) or (ceil(k/64), m, 2) for a transposed x1)")
        _need((one1 or g1 == s1k) and (one2 or g2 == s2k),
              f"{self.api}: when the quantization mode is mx, the K dimension of the scales must be ceil(K / 64) "
              f"(got {s1k} and {s2k} for K = {self.k1})")
        _need(s1.dim(-1) == 2 and s2.dim(-1) == 2, f"{self.api}: when the quantization mode is mx, the last "
                                                   f"dimension of {self.s1n} and {self.s2n} must be 2")
        if self.fp4():
            _need(a.x1.dim(-1) % 2 == 0 and a.x2.dim(-1) % 2 == 0,
                  f"{self.api}: MX with FLOAT4_E2M1 inputs needs even inner axes, got {a.x1.shape} and {a.x2.shape}")
            _need(self.k1 > 2 and self.k2 > 2, f"{self.api}: MX with FLOAT4_E2M1 inputs needs K > 2")

    def _dim_value_perblock(self):
        a = self.a
        s1, s2 = a.x1_scale, a.x2_scale
        gm = max(rt.decode_group_size(a.group_size)[0], 1)
        _need(s1.ndim == a.x1.ndim and s2.ndim == a.x2.ndim,
              f"{self.api}: when the quantization mode is G-B or B-B, {self.s1n} must have the shape dim of x1 and "
              f"{self.s2n} that of x2")
        _need(s1.shape[:-2] == a.x1.shape[:-2], f"{self.api}: G-B/B-B: the batch dims of {self.s1n} must equal x1's")
        _need(s2.shape[:-2] == a.x2.shape[:-2], f"{self.api}: G-B/B-B: the batch dims of {self.s2n} must equal x2's")
        mi, k1i = (-1, -2) if a.transpose_x1 else (-2, -1)
        ni, k2i = (-2, -1) if a.transpose_x2 else (-1, -2)
        _need(-(-a.x1.dim(mi) // gm) == s1.dim(mi), f"{self.api}: G-B/B-B: the m dimension of {self.s1n} must be "
                                                    f"ceil({a.x1.dim(mi)} / groupSizeM {gm})")
        _need(-(-a.x1.dim(k1i) // PERBLOCK) == s1.dim(k1i), f"{self.api}: G-B/B-B: the k dimension of {self.s1n} "
                                                            f"must be ceil({a.x1.dim(k1i)} / 128)")
        _need(-(-a.x2.dim(ni) // PERBLOCK) == s2.dim(ni), f"{self.api}: G-B/B-B: the n dimension of {self.s2n} must "
                                                          f"be ceil({a.x2.dim(ni)} / 128)")
        _need(-(-a.x2.dim(k2i) // PERBLOCK) == s2.dim(k2i), f"{self.api}: G-B/B-B: the k dimension of {self.s2n} "
                                                            f"must be ceil({a.x2.dim(k2i)} / 128)")

    # -- CheckFormat / CheckEmptyTensor -----------------------------------------------------------------------
    def check_format(self):
        a = self.a
        bad = [n for n, t in (("x1", a.x1), ("x1Scale", a.x1_scale), ("x2Scale", a.x2_scale),
                              ("x2Offset", a.x2_offset), ("bias", a.bias)) if t is not None and t.fmt != "ND"]
        if self.arch == 2002:
            _need(a.x2.fmt == "NZ", f"{self.api}: on {self.soc} x2 must be FRACTAL_NZ")
        _need(not bad, f"{self.api}: {', '.join(bad)} must be ND")

    def check_empty(self):
        a = self.a
        _need(not a.x1.empty and not a.x2.empty, f"{self.api}: x1 and x2 can not be empty "
                                                 f"(x1 {a.x1.shape}, x2 {a.x2.shape})")


# --------------------------------------------------------------------------------------------------------------
# the A2 set of aclnnQuantMatmulV3/V4 (aclnn_quant_matmul_v4.cpp: CheckDtypeValid, CheckShape, CheckFormat)
# --------------------------------------------------------------------------------------------------------------

def _is_msd(a):
    return (a.x1.dtype == "int8" and a.x2.dtype in ("int4", "int32") and a.x2_scale.dtype == "uint64"
            and a.x1_scale is not None and a.x1_scale.dtype == "float32")


def _check_a2_legacy(a, soc, is_a4w4):
    api = a.name
    s = a.x2_scale
    dt = lambda t, allowed, nm: _need(t.dtype in allowed, f"{api}: {nm} dtype {_up(t.dtype)} is not supported; use "
                                                          f"{_dtypes(allowed)}")
    dt(a.x1, ("int4", "int8"), "x1")
    dt(a.x2, ("int4", "int8"), "x2")
    dt(s, ("uint64", "bfloat16", "int64", "float32"), "scale")
    if a.bias is not None:
        dt(a.bias, ("int32", "bfloat16", "float16", "float32"), "bias")
    dt(a.out, ("int8", "float16", "bfloat16", "int32"), "out")
    _need(_is_msd(a) or a.x1.dtype == a.x2.dtype,
          f"{api}: in non-A8W4 cases x1 and x2 dtypes must be the same, got {_up(a.x1.dtype)} and {_up(a.x2.dtype)}")
    if a.x2_offset is not None:
        _need(a.x2_offset.dtype == "float32", f"{api}: offset dtype must be FLOAT, got {_up(a.x2_offset.dtype)}")
        _need(a.out.dtype == "int8", f"{api}: offset only exists when out dtype is INT8, got {_up(a.out.dtype)}")
    out, p, bias = a.out.dtype, a.x1_scale, a.bias
    if is_a4w4 and not _is_msd(a):
        _need(a.x1.dtype == a.x2.dtype == "int4", f"{api}: input x1 x2 dtype should be INT4 in a4w4 scenario")
        if p is None:
            _need(s.dtype in U64, f"{api}: scale dtype should be UINT64 or INT64 in a4w4 without pertoken scale")
            _need(bias is None or bias.dtype == "int32", f"{api}: bias dtype should be INT32 in a4w4 without "
                                                         f"pertoken scale")
        _need(out in ("float16", "bfloat16"), f"{api}: output dtype should be FLOAT16 or BFLOAT16 in a4w4 scenario")
    # CheckDtypeValidOnOnlyL0c2outForUnclassified
    _need(not (bias is not None and bias.dtype == "bfloat16" and out != "bfloat16"),
          f"{api}: when bias dtype is BFLOAT16, out dtype should be BFLOAT16, got {_up(out)}")
    _need(not (s.dtype == "bfloat16" and out not in ("bfloat16", "int32")),
          f"{api}: when scale dtype is BFLOAT16, out dtype should be BFLOAT16 or INT32, got {_up(out)}")
    if out == "bfloat16":
        # CheckDtypeValidInBf16OutScenario: A8W4 (int8 x int4, or fp8 x fp4) also takes a UINT64 scale
        if (a.x1.dtype == "int8" and a.x2.dtype == "int4") or rt.is_a8w4_float(a.x1, a.x2):
            _need(s.dtype in ("bfloat16", "float32", "uint64"), f"{api}: when the dtype of out is BFLOAT16, scale "
                                                                f"dtype should be BFLOAT16/FLOAT/UINT64 in A8W4 "
                                                                f"scenario, got {_up(s.dtype)}")
        else:
            _need(s.dtype in ("bfloat16", "float32"), f"{api}: when the dtype of out is BFLOAT16, scale dtype should "
                                                      f"be BFLOAT16/FLOAT in A4W4/A8W8 scenario, got {_up(s.dtype)}")
    _need(not (out == "int8" and s.dtype not in U64), f"{api}: when the dtype of out is INT8, scale dtype should be "
                                                      f"INT64 or UINT64, got {_up(s.dtype)}")
    _need(not (out == "int32" and s.dtype not in ("float32", "bfloat16")),
          f"{api}: when the dtype of out is INT32, scale dtype should be FLOAT or BFLOAT16, got {_up(s.dtype)}")
    _need(not (out == "int32" and bias is not None and bias.dtype != "int32"),
          f"{api}: when the dtype of out is INT32, bias dtype should be INT32")
    # CheckDtypeValidOnOnlyL0c2outForPertoken
    if p is not None:
        _need(p.dtype == "float32", f"{api}: pertokenScaleOptional dtype must be FLOAT, got {_up(p.dtype)}")
        _need(not (bias is not None and bias.dtype == "float16" and out != "float16"),
              f"{api}: when pertokenScaleOptional is given and bias is FLOAT16, out dtype should be FLOAT16")
        _need(out in ("float16", "bfloat16"), f"{api}: when pertokenScaleOptional is given, out dtype should be "
                                              f"FLOAT16 or BFLOAT16, got {_up(out)}")
        _need(not (out == "float16" and s.dtype not in ("float32", "uint64")),
              f"{api}: when pertokenScaleOptional is given and out is FLOAT16, scale dtype should be FLOAT or "
              f"UINT64, got {_up(s.dtype)}")
    else:
        _need(not (bias is not None and bias.dtype == "float16"),
              f"{api}: when pertokenScaleOptional is null, bias dtype should not be FLOAT16")
        _need(not (bias is not None and bias.dtype == "float32" and out != "bfloat16"),
              f"{api}: when pertokenScaleOptional is null and bias dtype is FLOAT, out dtype should be BFLOAT16")
        _need(not (out in ("int8", "float16") and s.dtype == "float32"),
              f"{api}: when pertokenScaleOptional is null and output dtype is INT8 or FLOAT16, scale dtype should not "
              f"be FLOAT (pack it with npu_trans_quant_param)")
    # CheckShape
    m, k1, k2, n = _dims(a)
    if is_a4w4 or _is_msd(a):
        _need(k1 > 0 and k1 % 2 == 0, f"{api}: x1_k should be a positive even number in a4w4/a8w4 scenario, got {k1}")
        if a.transpose_x2:
            _need(k2 > 0 and k2 % 2 == 0, f"{api}: x2_k should be a positive even number when transposeX2 is true, "
                                          f"got {k2}")
        else:
            _need(n > 0 and n % 2 == 0, f"{api}: x2_n should be a positive even number when transposeX2 is false, "
                                        f"got {n}")
        _need(not a.transpose_x1, f"{api}: transposeX1 should be false in a4w4/a8w4 scenario")
        _need(a.x2.ndim == 2, f"{api}: x2 should be 2-d in a4w4/a8w4, got {a.x2.shape}")
        _need(bias is None or bias.ndim == 1, f"{api}: bias should be 1-d in a4w4/a8w4")
    _need(k1 == k2, f"{api}: x1 k dim and x2 k dim should be same, but x1 is {k1}, x2 is {k2}")
    large_ok = (a.x1.dtype == a.x2.dtype == "int8" and s.dtype in ("float32", "bfloat16") and p is not None
                and p.ndim == 1 and s.ndim == 1)
    if not large_ok:
        _need(a.x1.dim(-1) <= LAST_AXIS_LIMIT and a.x2.dim(-1) <= LAST_AXIS_LIMIT,
              f"{api}: x1 last dim or x2 last dim is larger than 65535 (x1 {a.x1.shape}, x2 {a.x2.shape})")
    if a.x2.fmt == "NZ":
        _check_nz_k(a, api, k0=_nz_k0(a.x2.dtype))
    _need(s.dim(0) in (n, 1), f"{api}: scale last dim should equal x2 n dim {n} or 1, got {s.shape}")
    if a.x2_offset is not None:
        _need(a.x2_offset.ndim == 1 and a.x2_offset.dim(0) in (n, 1),
              f"{api}: offset must be 1-D of size {n} or 1, got {a.x2_offset.shape}")
    if p is not None:
        _need(p.ndim == 1 and p.dim(0) == m, f"{api}: pertokenScaleOptional must be 1-D of size {m}, got {p.shape}")
    batch, prod = _infer_out_batch(a.x1, a.x2, api)
    if bias is not None:
        _check_bias_shape(bias, n, batch, prod, api)
    _check_out_shape(a.out, m, n, batch, a.x1.ndim == a.x2.ndim == 2, api)
    # CheckFormat / CheckEmptyTensor
    _need(a.x1.fmt == "ND" and all(t is None or t.fmt == "ND" for t in (s, a.x2_offset, p, bias)),
          f"{api}: x1, scale, offset, pertokenScaleOptional and bias must be ND")
    _need(not a.x1.empty and not a.x2.empty, f"{api}: QuantMatmul does not process empty tensors")


# --------------------------------------------------------------------------------------------------------------
# dim-range checks of the PreMatmulCalcProcess step, and the A8W4 checks
# --------------------------------------------------------------------------------------------------------------

def _dim_range(a, soc, v5):
    api = a.name
    x2d = len(a.x2.storage_shape) if a.x2.fmt == "NZ" and a.x2.storage_shape else a.x2.ndim
    lo, hi = (MIN_DIM_NZ, MAX_DIM_NZ) if a.x2.fmt == "NZ" else (MIN_DIM_ND, MAX_DIM_ND)
    _need(lo <= x2d <= hi, f"{api}: the shape dim of x2 must be in [{lo}, {hi}], got {x2d}")
    _need(a.x1.ndim >= 2, f"{api}: x1 must be at least 2D, got {a.x1.shape}")
    _need(a.out.ndim >= 2, f"{api}: out must be at least 2D, got {a.out.shape}")
    _need(a.x1.ndim <= MAX_DIM_ND, f"{api}: the shape dim of x1 can not be larger than 6D, got {a.x1.shape}")
    _need(a.out.ndim <= MAX_DIM_ND, f"{api}: the shape dim of out can not be larger than 6D, got {a.out.shape}")
    if v5:
        if a.x1_scale is not None and arch(soc) not in (3510, 2201):
            _need(a.x2_scale.ndim == 1, f"{api}: {a.x2_scale.shape}: x2Scale must be 1D on {soc}")
        return
    s = a.x2_scale
    if s.dtype == "float8_e8m0":
        _need(3 <= s.ndim <= 7, f"{api}: an FLOAT8_E8M0 scale must have 3 to 7 dims, got {s.shape}")
    else:
        want = s.ndim if s.ndim == a.x2.ndim else 1
        _need(s.ndim == want, f"{api}: scale must be 1D (or have x2's rank for per-block scales), got {s.shape}")


def _check_a8w4_pre(a, v5):
    """CheckA8W4FloatQuantType, CheckInputAttrExistence, CheckDimRangeA8W4 (all 161002)."""
    api = a.name
    s1, s2 = a.x1_scale, a.x2_scale
    is_int = rt.is_a8w4_int(a.x1, a.x2)
    if rt.is_a8w4_float(a.x1, a.x2):
        tcg = s1 is None and s2.dtype in ("bfloat16", "float16")
        _need(rt.is_micro_scaling(s1, s2) or tcg,
              f"{api}: A8W4 float scenario only supports MX quantization (x1Scale and x2Scale are FLOAT8_E8M0) or "
              f"TCG quantization (x1Scale is null and x2Scale is BF16 or FLOAT16); got x1Scale="
              f"{_up(s1.dtype) if s1 else 'null'}, x2Scale={_up(s2.dtype)}")
    _need(not a.transpose_x1, f"{api}: only transposeX1 = false is supported in A8W4")
    nz = a.x2.fmt == "NZ"
    _need(a.transpose_x2 or is_int or nz, f"{api}: when the quant mode is A8W4 fp8/4 ND, transposeX2 must be true")
    if nz:
        _need(not (s1 is None and a.transpose_x2), f"{api}: when the quant mode is A8W4 NZ T-CG, transposeX2 can "
                                                   f"not be true")
        _need(not (rt.is_micro_scaling(s1, s2) and not a.transpose_x2),
              f"{api}: when the quant mode is A8W4 NZ mx, transposeX2 must be true")
    if is_int:
        if s2.ndim == 1:
            _need(a.group_size == 0, f"{api}: A8W4 [int8/4] perchannel only supports groupSize 0")
        else:
            _need(a.group_size == 256, f"{api}: A8W4 [int8/4] pergroup only supports groupSize 256")
    else:
        _need(a.group_size & 0xFFFF == 32, f"{api}: when the quant mode is A8W4 fp8/4, groupSizeK must be 32, got "
                                           f"{a.group_size & 0xFFFF}")
    _need(a.x1.ndim == 2, f"{api}: the dimension of x1 should be 2, got {a.x1.ndim}")
    _need(a.x2.ndim == 2, f"{api}: the dimension of x2 should be 2, got {a.x2.ndim}")
    _need(a.bias is None or a.bias.ndim == 2, f"{api}: the dimension of bias should be 2")
    if is_int:
        _need(s2.ndim in (1, 2), f"{api}: in A8W4 [int8/4] mode, the dimension of x2Scale should be 1 or 2")
        _need(s1 is None or s1.ndim == s2.ndim, f"{api}: in A8W4 [int8/4] mode, x1Scale and x2Scale must have the "
                                                f"same dimension")
    else:
        want = 3 if rt.is_micro_scaling(s1, s2) else 2
        _need(s1 is None or s1.ndim == want, f"{api}: when the quant mode is A8W4, the shape dim of x1Scale must be "
                                             f"{want}D")
        _need(s2.ndim == want, f"{api}: when the quant mode is A8W4, the shape dim of x2Scale must be {want}D")
    _need(a.y_scale is None or a.y_scale.ndim == 2, f"{api}: the dimension of yScale should be 2")
    _need(a.y_offset is None or a.y_offset.ndim == 1, f"{api}: the dimension of yOffset should be 1")


def _check_a8w4_params(a, soc, is_int):
    """CheckParamsA8W4Float / CheckParamsA8W4Int: SoC (361001), then dtype, format, shape (161002)."""
    api = a.name
    ar = arch(soc)
    if is_int:
        if ar != 2201:
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{api}: A8W4Int only Support socversion A2 or A3; use "
                                                      f"soc='ascend910b*' or 'ascend910_93'")
        _need(_present(a.x1_scale), f"{api}: In A8W4_Int mode, x1Scale does not support empty tensor or nullptr")
        _need(_present(a.x2_scale), f"{api}: x2Scale does not support empty tensor or nullptr")
        _need(a.bias is None and a.y_scale is None, f"{api}: In A8W4_Int mode, bias and yScale must be null")
        _need(_present(a.y_offset), f"{api}: In A8W4_Int mode, yOffset does not support empty tensor or nullptr")
        _need(a.x1.dtype == "int8" and a.x2.dtype == "int4" and a.x1_scale.dtype == "float32" and
              a.x2_scale.dtype in U64 and a.y_offset.dtype == "float32" and a.out.dtype in ("bfloat16", "float16"),
              f"{api}: A8W4 int needs x1 INT8, x2 INT4 (INT32-packed), x1Scale FLOAT, x2Scale UINT64, yOffset FLOAT "
              f"and out BF16/FLOAT16")
    else:
        if ar != 3510:
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{api}: A8W4 only Support NpuArch DAV3510; use "
                                                      f"soc='ascend950pr' or 'ascend950dt'")
        _need(a.x1.dtype in FP8, f"{api}: the dtype of x1 must be FLOAT8_E4M3FN or FLOAT8_E5M2")
        _need(a.out.dtype in ("bfloat16", "float16"), f"{api}: the dtype of out must be BF16 or FLOAT16")
        if a.x1_scale is None:
            _need(a.bias is None, f"{api}: When the quant mode is A8W4 T-CG, the value of bias must be null")
            _need(a.y_scale is not None, f"{api}: When the quant mode is A8W4 T-CG, the value of yScale can not be "
                                         f"null")
            _need(a.x2_scale.dtype in ("bfloat16", "float16"), f"{api}: the dtype of x2Scale must be BF16/FLOAT16")
            _need(a.y_scale.dtype in U64, f"{api}: the dtype of yScale must be UINT64")
        else:
            _need(a.bias is None or a.bias.dtype == a.out.dtype, f"{api}: When the quant mode is MxA8W4, the dtype "
                                                                 f"of bias must be that of out")
            _need(a.y_scale is None, f"{api}: When the quant mode is MxA8W4, the value of yScale must be null")
    _need(a.x1.fmt == "ND" and a.out.fmt == "ND", f"{api}: x1 and out must be ND")
    m, k1, k2, n = _dims(a)
    _need(m > 0, f"{api}: the m-dim must be > 0, got {m}")
    if is_int:
        _need(0 < k1 <= MAX_K_A8W4_INT, f"{api}: the k-dim must be in [1, {MAX_K_A8W4_INT}], got {k1}")
    else:
        _need(k1 > 0, f"{api}: The value of k must be >= 1")
    _need(n > 0, f"{api}: the n-dim must be at least 1, got {n}")
    _need(k1 == k2, f"{api}: the k dim of x1 and x2 must be same, got {k1} and {k2}")
    if is_int:
        al = 2 if a.x2_scale.ndim == 1 else 256
        _need(k1 % al == 0, f"{api}: the k dim must be aligned to {al}, got {k1}")
    elif a.x1.dtype != "float8_e4m3fn":
        # CheckA8W4KDim: isA8W4FloatTCG / isA8W4FloatMx require x1 FLOAT8_E4M3FN; an E5M2 x1 (accepted by
        # CheckBasicInputDtypes for both modes) falls through to the generic 64 alignment
        _need(k1 % 64 == 0, f"{api}: the k dim must be align to 64, which is {k1}")
    elif a.x1_scale is None:
        _need(k1 % 32 == 0 and k1 > 32, f"{api}: The value of k must be aligned to 32 and greater than 32 for T-CG "
                                         f"quantization, got {k1}")
    else:
        _need(k1 % 8 == 0, f"{api}: The value of k must be aligned to 8 for MX quantization, got {k1}")
    if ar == 3510 and a.x2.fmt == "NZ":
        _need(n % 8 == 0, f"{api}: When the quant mode is A8W4 NZ, the value of n must be aligned to 8, got {n}")
    # scale / bias / out shapes
    groups = -(-k2 // (256 if is_int else 32))
    s1, s2 = a.x1_scale, a.x2_scale
    if is_int:
        if s1 is not None:
            want = (m, 1) if s1.ndim == 2 else (m,)
            _need(s1.shape == want, f"{api}: the x1scale shape must be {list(want)}, got {list(s1.shape)}")
        want = (groups, n) if s2.ndim == 2 else (n,)
        _need(s2.shape == want, f"{api}: the x2scale shape must be {list(want)}, got {list(s2.shape)}")
    elif rt.is_micro_scaling(s1, s2):
        want = (m, -(-groups // 2), 2)
        _need(s1.shape == want, f"{api}: When the quant mode is MxA8W4, the shape of x1Scale must be {list(want)}")
        s2n, s2g = (s2.dim(0), s2.dim(1)) if a.transpose_x2 else (s2.dim(1), s2.dim(0))
        _need(s2n == n and s2g == -(-groups // 2) and s2.dim(2) == 2,
              f"{api}: the shape of x2Scale must be [{n}, {-(-groups // 2)}, 2]")
    else:
        s2n, s2g = (s2.dim(0), s2.dim(1)) if a.transpose_x2 else (s2.dim(1), s2.dim(0))
        _need(s2n == n and s2g == groups, f"{api}: the shape of x2Scale must be [{n}, {groups}]")
    if a.y_scale is not None:
        _need(a.y_scale.shape == (1, n), f"{api}: the yscale shape must be [1, {n}], got {list(a.y_scale.shape)}")
    if a.bias is not None:
        _need(a.bias.shape == (1, n), f"{api}: the bias shape must be [1, {n}], got {list(a.bias.shape)}")
    if _present(a.y_offset):
        _need(a.y_offset.dim(0) == n, f"{api}: the yOffset shape must be [{n}]")
    _need(a.out.dim(0) == m and a.out.dim(1) == n, f"{api}: the out shape must be [{m}, {n}], got {list(a.out.shape)}")


def _to_int4(t):
    """``ConvertTensorToInt4``: an INT32 tensor carrying 8 nibbles -> INT4 with the last dim x 8 (descs already
    count the expanded length, so only the dtype changes)."""
    return t if t is None or t.dtype != "int32" else replace(t, dtype="int4")


def _soc_a4w4(a4w4, soc, api):
    if arch(soc) not in ((2201, 3510) if a4w4 else (2201, 3510, 2002)):
        raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{api}: QuantBatchMatmul support for {soc} is not implemented in "
                                                  f"{'a4w4' if a4w4 else 'a8w8'} scenario")


def _empty_shortcut(a, soc, pseudo):
    """Ascend 950 V3/V4/V5: M == 0 or N == 0 (NZ: M == 0) returns success without a kernel."""
    if arch(soc) != 3510 or pseudo or a.x1.ndim < 2 or a.x2.ndim < 2:
        return False
    m, _, _, n = _dims(a)
    return m == 0 if a.x2.fmt == "NZ" else (m == 0 or n == 0)


# --------------------------------------------------------------------------------------------------------------
# entry points
# --------------------------------------------------------------------------------------------------------------

def _null(t, name, api):
    if t is None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{api}: {name} is a null tensor; pass an array")


def check_v5(a, soc, *, group_size_inference="checker"):
    """aclnnQuantMatmulV5GetWorkspaceSize (and the V4 route decision). Returns a CheckResult."""
    api = a.name
    if arch(soc) == 3510:
        _null(a.x2, "x2", api)
        _need(a.x2.fmt != "NZ", f"{api}: x2 in FRACTAL_NZ is not accepted by aclnnQuantMatmulV5 on {soc}; pass an ND "
                                f"weight or call aclnnQuantMatmulWeightNz")
    for t, nm in ((a.x1, "x1"), (a.x2, "x2"), (a.x2_scale, "x2Scale"), (a.out, "out")):
        _null(t, nm, api)
    # CheckInputExistence returns ACLNN_ERR_PARAM_NULLPTR for every one of its failures (§14 says 161002
    # for x1Offset; aclnn_quant_matmul_v5.cpp: CHECK_RET(CheckInputExistence(...), ACLNN_ERR_PARAM_NULLPTR))
    a8w4 = rt.is_a8w4_float(a.x1, a.x2) or rt.is_a8w4_int(a.x1, a.x2)
    if not a8w4 and _present(a.y_scale):
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{api}: the value of yScale must be empty tensor or nullptr "
                                                  f"outside A8W4")
    if _present(a.x1_offset):
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{api}: the value of x1Offset must be empty tensor or nullptr")
    if a8w4 and a.x2_offset is not None:
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{api}: the value of x2Offset must be empty tensor or nullptr in "
                                                  f"A8W4")
    if _present(a.y_offset) and not rt.is_a8w4_int(a.x1, a.x2):
        raise AclnnError(ACLNN_ERR_PARAM_NULLPTR, f"{api}: the value of yOffset must be empty tensor or nullptr "
                                                  f"outside A8W4 int")
    a8w4_f = rt.is_a8w4_float(a.x1, a.x2)
    if a8w4_f:
        gm, gn, gk = rt.decode_group_size(a.group_size)
        _need((gm, gn) in ((0, 0), (1, 1)), f"{api}: the values of groupSizeM and groupSizeN must be 0 or 1, got "
                                            f"{gm}, {gn}")
        a = replace(a, group_size=gk)
    if _empty_shortcut(a, soc, a8w4):
        return CheckResult("QuantBatchMatmulV3", None, a.group_size, a, empty=True)
    if a8w4:
        _check_a8w4_pre(a, True)
    else:
        _dim_range(a, soc, True)
    a4w4 = "int32" in (a.x1.dtype, a.x2.dtype) or "int4" in (a.x1.dtype, a.x2.dtype)
    v4 = rt.v4_mode(a.x1, a.x2, a.x1_scale, a.x2_scale, a.x2_offset, a.bias, a.transpose_x1, a.transpose_x2,
                    a.group_size)
    a = replace(a, x1=_to_int4(a.x1), x2=_to_int4(a.x2))
    _soc_a4w4(a4w4, soc, api)
    gs_real = a.group_size
    if not a8w4:
        gs_real = Checker(a, soc, 5).infer_group_size(group_size_inference)
    if v4 == "A8W4-int":
        _check_a8w4_params(a, soc, True)
    elif v4 == "A8W4-float":
        _check_a8w4_params(a, soc, False)
    else:
        Checker(replace(a, group_size=gs_real), soc, 5).check_params()
    if v4 == "A4W4-pergroup-asym" and any(t is not None and t.fmt != "ND" for t in (a.x1, a.x2, a.out)):
        v4 = None  # isA4W4PergroupNonSymmetric also needs V5's CheckFormat; otherwise V3 (which rejects it)
    return CheckResult("QuantBatchMatmulV4" if v4 else "QuantBatchMatmulV3", v4, gs_real,
                       replace(a, group_size=gs_real))


def check_v3v4(a, soc, *, group_size_inference="checker"):
    """aclnnQuantMatmulV3/V4GetWorkspaceSize and the common part of WeightNz (aclnn_quant_matmul_v4.cpp)."""
    api = a.name
    for t, nm in ((a.x1, "x1"), (a.x2, "x2"), (a.x2_scale, "scale"), (a.out, "out")):
        _null(t, nm, api)
    a8w4_f = rt.is_a8w4_float(a.x1, a.x2)
    a8w4_i = a.x1.dtype == "int8" and a.x2.dtype in ("int32", "int4") and a.x1.dtype != a.x2.dtype
    if _empty_shortcut(a, soc, a8w4_f or a8w4_i):
        return CheckResult("QuantBatchMatmulV3", None, a.group_size, a, empty=True)
    if a8w4_f:
        gm, gn, gk = rt.decode_group_size(a.group_size)
        _need((gm, gn) in ((0, 0), (1, 1)), f"{api}: groupSizeM and groupSizeN must both be 0 or 1")
        a = replace(a, group_size=gk)
        _check_a8w4_pre(a, False)
    else:
        _dim_range(a, soc, False)
    a4w4 = "int32" in (a.x1.dtype, a.x2.dtype) or "int4" in (a.x1.dtype, a.x2.dtype)
    a = replace(a, x1=_to_int4(a.x1), x2=_to_int4(a.x2))
    _soc_a4w4(a4w4, soc, api)
    gs_real = a.group_size
    if arch(soc) == 3510:
        if a8w4_f:
            _check_a8w4_params(a, soc, False)
        else:
            if a.x2_scale.dtype == "float8_e8m0":
                gs_real = Checker(a, soc, 5).infer_group_size(group_size_inference)
            Checker(replace(a, group_size=gs_real), soc, 5).check_params()
    else:
        if a8w4_f:
            raise AclnnError(ACLNN_ERR_RUNTIME_ERROR, f"{api}: A8W4 float is only supported on Ascend 950")
        _check_a2_legacy(a, soc, a4w4)
        # the A8W4-int ("MSD") kernel adds yOffset in its last step and CANN requires it; aclnnQuantMatmulV3/V4
        # have no yOffset argument, so only WeightNz (and V5) can make this call
        _need(not a8w4_i or _present(a.y_offset),
              f"{api}: In A8W4_Int mode, yOffset does not support empty tensor or nullptr; pass it through "
              f"aclnnQuantMatmulV5 or aclnnQuantMatmulWeightNz (torch_npu: the offset argument)")
    v4 = "A8W4-float" if a8w4_f else ("A8W4-int" if a8w4_i else None)
    return CheckResult("QuantBatchMatmulV4" if v4 else "QuantBatchMatmulV3", v4, gs_real,
                       replace(a, group_size=gs_real))


def check_weight_nz(a, soc, *, group_size_inference="checker"):
    """aclnnQuantMatmulWeightNzGetWorkspaceSize: its own checks, then the V3/V4 common process."""
    api = a.name
    for t, nm in ((a.x1, "x1"), (a.x2, "x2"), (a.x2_scale, "x2Scale"), (a.out, "out")):
        _null(t, nm, api)
    msd = _is_msd(a)
    _need(not _present(a.x1_offset), f"{api}: Current version do not support x1Offset.")
    _need(not (_present(a.y_offset) and not msd), f"{api}: Current version do not support yOffset.")
    floats2d = lambda t: t is not None and t.dtype == "float32" and t.ndim > 1
    quant = lambda t: t.dtype in ("int8", "float8_e4m3fn", "float8_e5m2", "hifloat8")
    perblock_group = quant(a.x1) and quant(a.x2) and floats2d(a.x1_scale) and floats2d(a.x2_scale)
    if not (rt.is_a8w4_float(a.x1, a.x2) or a.x2_scale.dtype == "float8_e8m0"):
        _need(not _present(a.y_scale), f"{api}: Current version do not support yScale.")
        _need(a.group_size == 0 or perblock_group, f"{api}: Current version do not support groupSize.")
    if arch(soc) == 3510:
        if a.x1.dtype == a.x2.dtype == "int8":
            _need((a.x1_scale is None or a.x1_scale.ndim == 1) and a.x2_scale.ndim == 1,
                  f"{api}: when x1 and x2 dtypes are INT8, x1Scale must be null or 1D and x2Scale must be 1D")
        if rt.is_a8w4_float(a.x1, a.x2):
            _need(a.x2.fmt == "NZ", f"{api}: in A8W4 scenario, the format of x2 must be FRACTAL_NZ")
            _need(a.out.dtype in ("bfloat16", "float16"), f"{api}: in A8W4 scenario, out must be BFLOAT16 or FLOAT16")
        else:
            _need(a.x2.fmt == "NZ", f"{api}: the format of x2 must be FRACTAL_NZ")
            _need(a.x2.dim(-1) != 1 and a.x2.dim(-2) != 1, f"{api}: with an NZ x2, the k and n dimensions of x2 can "
                                                           f"not be 1")
    _need(a.x2.ndim >= 2, f"{api}: x2's view dimNum should be greater than 1, got {a.x2.ndim}")
    _need(a.x2.fmt == "NZ" and a.x2.storage_shape is not None and _nz_size_ok(a),
          f"{api}: x2's format only supports NZ here, but x2's storage is not the NZ layout of its view shape; use "
          f"aclnnCalculateMatmulWeightSizeV2 / aclnnTransMatmulWeight (npu_emu: NzWeight.from_nd) to convert it")
    return check_v3v4(a, soc, group_size_inference=group_size_inference)


def _nz_size_ok(a):
    x2 = a.x2
    k, n = (x2.dim(-1), x2.dim(-2)) if a.transpose_x2 else (x2.dim(-2), x2.dim(-1))
    k0 = _nz_k0(x2.dtype, rt.is_a8w4_float(a.x1, a.x2))
    k1, n1 = (-(-k // k0), -(-n // 16)) if a.transpose_x2 else (-(-k // 16), -(-n // k0))
    want = 1
    for d in x2.shape[:-2]:
        want *= d
    want *= k1 * n1 * 16 * k0
    have = 1
    for d in x2.storage_shape:
        have *= d
    return want == have


def require_v3_kernel(res, soc):
    """npu-emu emulates the QuantBatchMatmulV3 kernels of ascend910b*/910_93 and ascend950* and the V4 modes
    registered in api.V4_KERNELS (v4.py); anything else (the 310P kernels, an unregistered V4 mode) is a clear
    561003 instead of a wrong answer."""
    if res.op == "QuantBatchMatmulV4":
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                         f"{res.v4_mode} routes to QuantBatchMatmulV4, whose {res.v4_mode} kernel npu-emu does not "
                         f"emulate yet; not yet supported")
    if arch(soc) not in (2201, 3510):
        raise AclnnError(ACLNN_ERR_INNER_FIND_KERNEL_ERROR,
                         f"npu-emu does not emulate the QuantBatchMatmulV3 kernel of {soc} (310P) yet; use an "
                         f"ascend910b*, ascend910_93 or ascend950* soc")


def check_v4_tiling(res, soc):
    """The V4 tiling rejections npu-emu knows (561002, docs/ops/quant_matmul.md §9 "V4 tiling"): A2/A3 per-block and
    per-group.

    The per-block/per-group/MSD tiling itself is issue 8; these are the shape rules its IsCapable/CheckParams
    apply (``quant_batch_matmul_v4_perblock_tiling.cpp``, ``..._pergroup_tiling.cpp``)."""
    a = res.args
    if arch(soc) == 2201 and res.v4_mode == "A8W4-int":
        # quant_batch_matmul_v4_msd_tiling.cpp: x1 2-D; the per-group (K-G) weight ND, not transposed
        errs = []
        if a.x1.ndim != 2:
            errs.append(f"x1 must be 2-D, got {a.x1.shape}")
        if a.x2_scale.ndim == 2 and (a.x2.fmt != "ND" or a.transpose_x2):
            errs.append("the per-group weight must be ND with transposeX2 = false")
        if a.transpose_x1:
            errs.append("transposeX1 must be false")
        if errs:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"QuantBatchMatmulV4 A8W4-int (MSD) tiling on {soc}: "
                                                           + "; ".join(errs))
        return
    if arch(soc) != 2201 or res.v4_mode not in ("A8W8-perblock", "A4W4-pergroup-asym"):
        return
    m, k, _, n = _dims(a)
    gm, gn, gk = rt.decode_group_size(a.group_size)
    errs = []
    if res.v4_mode == "A8W8-perblock":
        if a.group_size == 0 or gm == 0 or gk != 128 or gn != 128:
            errs.append(f"groupSize must give gsM != 0 and gsN = gsK = 128 (got {gm}, {gn}, {gk})")
        if a.transpose_x1 or not a.transpose_x2:
            errs.append("transposeX1 must be false and transposeX2 true")
        if n % 256:
            errs.append(f"N ({n}) must be a multiple of 256")
        if k % 128 or k % 512:
            errs.append(f"K ({k}) must be a multiple of 512")
        if a.bias is not None and (a.bias.dtype != "float32" or a.bias.ndim != 1):
            errs.append("bias must be FLOAT (n,)")
    else:
        if gk != 256:
            errs.append(f"groupSizeK must be 256 (got {gk})")
        if k % 1024 or n % 256:
            errs.append(f"K ({k}) must be a multiple of 1024 and N ({n}) of 256")
        if a.bias is not None:
            errs.append("bias must be null")
    if any(t is not None and t.fmt != "ND" for t in (a.x1, a.x2)):
        errs.append("x1 and x2 must be ND")
    if errs:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"QuantBatchMatmulV4 {res.v4_mode} tiling on {soc}: "
                                                       + "; ".join(errs))
