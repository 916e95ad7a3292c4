"""Fuzz DynamicQuant on Ascend 950 (arch35): ``npu_dynamic_quant[_asymmetric]`` with soc="ascend950pr".

Valid calls: x float16 / bf16 with NaN, Inf, -0.0, subnormals, zero rows; ranks 2-3; quant_mode pertoken /
pertensor / perchannel; y int8, int4 (quint4x2), hifloat8, float8_e5m2, float8_e4m3fn; dst_type_max; smooth_scales
(pertoken / pertensor with an optional group_index; perchannel: over the second-to-last dim); symmetric and
asymmetric; core_num / ub_size small enough to reach the large-shape, multicore, recompute and split-m templates;
layouts. At most one mutation makes the call invalid. Golden: golden.dynamic_quant_950 (NaN scale bytes checked as
NaN).
"""

import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.dynamic_quant import golden

HOME = "npu_emu.kernels.dynamic_quant.api"
SOC = "ascend950pr"
X_DTYPES = {"float16": np.float16, "bfloat16": H.BF16}
Y = {"int8": None, "int4": 16, "hifloat8": 290, "float8_e5m2": 23, "float8_e4m3fn": 24}
MUTATIONS = ["none"] * 10 + ["x_dtype", "rank", "smooth_len", "dst_type", "quant_mode", "dst_type_max", "int4_odd"]


def _case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    x_name = data.draw(st.sampled_from(sorted(X_DTYPES)), "x dtype")
    dt = X_DTYPES[x_name]
    n = data.draw(st.sampled_from([8, 64, 100, 128, 136, 256, 1000]), "rowLen")
    lead = data.draw(st.sampled_from([(1,), (3,), (4,), (9,), (2, 3), (0,), (2, 40)]), "leading dims")
    shape = lead + (n,)
    rows = int(np.prod(lead))
    kind = data.draw(st.sampled_from(["normal", "wide", "specials", "zeros"]), "value kind")
    x = np.zeros(shape, dt) if kind == "zeros" else H.float_values(
        rng, shape, dt, special_frac=0.1 if kind == "specials" else 0.0,
        scale_exp=(-20, 10) if kind == "wide" else (-4, 6))
    qm = data.draw(st.sampled_from(["pertoken", "pertensor", "perchannel"]), "quant_mode")
    y_kind = data.draw(st.sampled_from(sorted(Y)), "y")
    if y_kind == "int4" and n % 8:
        y_kind = "int8"
    asym = data.draw(st.booleans(), "asymmetric")
    dtm = data.draw(st.sampled_from([0.0, 0.0, 15.0, 448.0, 32768.0]), "dst_type_max")
    smooth = group = None
    if data.draw(st.booleans(), "smooth"):
        if qm == "perchannel":
            smooth = (rng.random(shape[-2]) + 0.25).astype(dt)
        elif data.draw(st.booleans(), "groups") and rows:
            g = data.draw(st.integers(1, 3), "group count")
            cuts = sorted(data.draw(st.lists(st.integers(0, rows), min_size=g - 1, max_size=g - 1), "cuts"))
            group = np.array(cuts + [rows], np.int32)
            smooth = (rng.random((g, n)) + 0.25).astype(dt)
        else:
            smooth = (rng.random(n) + 0.25).astype(dt)
    kw = dict(soc=SOC, core_num=data.draw(st.sampled_from([None, 2, 4]), "core_num"),
              ub_size=data.draw(st.sampled_from([None, None, 8192, 16384]), "ub_size"))
    want_error = False
    mutation = data.draw(st.sampled_from(MUTATIONS), "mutation")
    xin = H.layout(x, data.draw(st.sampled_from(["c", "strided", "fortran", "negative"]), "layout"))
    dst = Y[y_kind]
    if mutation == "x_dtype":
        bad = [d for d in H.WRONG_DTYPES if d not in X_DTYPES.values()]
        xin, want_error = H.readonly(H.as_dtype(x, data.draw(st.sampled_from(bad), "bad x dtype"))), True
    elif mutation == "rank":
        xin, want_error = H.readonly(x.reshape(-1)), True
    elif mutation == "smooth_len":
        ln = (shape[-2] if qm == "perchannel" else n) + 1
        smooth, group, want_error = (rng.random(ln) + 0.5).astype(dt), None, True
    elif mutation == "dst_type":
        dst, want_error = data.draw(st.sampled_from([2, 3, 0, 15, -1, "int16", 34, 1.5]), "bad dst_type"), True
    elif mutation == "quant_mode":
        qm, want_error = data.draw(st.sampled_from(["per_token", "", "PERTENSOR", 3]), "qm"), True
    elif mutation == "dst_type_max":
        dtm = data.draw(st.sampled_from([-1.0, 32769.0, float("inf"), "x"]), "dtm")
        # the range is a tiling check (561002): an empty x returns from aclnn before the tiling runs
        want_error = True if (x.size or dtm == "x") else False
    elif mutation == "int4_odd":
        extra = 4 if (n + 4) % 8 else 2                 # a last dim that is not a multiple of 8
        xin = H.readonly(np.concatenate([x, np.zeros(shape[:-1] + (extra,), dt)], axis=-1))
        dst, y_kind, smooth, group, want_error = 16, "int4", None, None, True
    if qm == "perchannel" and kw["ub_size"] is not None and want_error is False:
        # a UB override this small can leave mBlockSize <= 0: 561002 (docs/ops/dynamic_quant.md §9.2)
        want_error = None
    return x, xin, x_name, smooth, group, dst, y_kind, qm, dtm, asym, kw, want_error


def _fuzz_dynamic_quant_950(data):
    x, xin, x_name, smooth, group, dst, y_kind, qm, dtm, asym, kw, want_error = _case(data)
    name = "npu_dynamic_quant_asymmetric" if asym else "npu_dynamic_quant"
    fn = H.public(ops, name, HOME)
    outcome = H.call_entry(name, fn, (xin,), dict(kw, smooth_scales=smooth, group_index=group, dst_type=dst,
                                                   quant_mode=qm, dst_type_max=dtm))
    if H.expect(outcome, want_error, name):
        return
    n = x.shape[-1]
    if x.size == 0:                # aclnn returns before the kernel: empty outputs of the right shapes
        assert np.asarray(outcome[1][0]).size == 0
        return
    xb = golden.widen(x.reshape(-1, n).view(np.uint16), x_name)
    sm = None if smooth is None else golden.widen(np.asarray(smooth).view(np.uint16), x_name)
    gy, gs, go = golden.dynamic_quant_950(xb, sm, group if smooth is not None else None, y_kind=y_kind,
                                          asymmetric=asym, quant_mode=qm, dst_type_max=dtm,
                                          m_len=x.shape[-2] if qm == "perchannel" else None)
    y = np.asarray(outcome[1][0])
    if y_kind == "int4":
        gy = golden.pack_int4(gy)
    H.same_bits(y.reshape(xb.shape[0], -1).view(np.uint8), gy.reshape(xb.shape[0], -1).view(np.uint8), f"{name} y")
    H.same_bits(np.asarray(outcome[1][1]).reshape(-1), gs.reshape(-1), f"{name} scale", nan_dtype=np.float32)
    if asym:
        H.same_bits(np.asarray(outcome[1][2]).reshape(-1), go.reshape(-1), f"{name} offset", nan_dtype=np.float32)


test_fuzz_dynamic_quant_950, test_fuzz_dynamic_quant_950_long = H.fast_and_slow(_fuzz_dynamic_quant_950)
