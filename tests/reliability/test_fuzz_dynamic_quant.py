"""Fuzz DynamicQuant: ``npu_dynamic_quant`` / ``npu_dynamic_quant_asymmetric`` and aclnnDynamicQuant / V2 (V3 / V4
on Atlas A2/A3: refused with a CANN status, never a crash).

Valid calls: x float16 / bf16 with NaN, Inf, -0.0, subnormals, zero rows; ranks 2-3; rows and rowLen around the
tiling-key boundaries that stay small (keys 100, 10, 2/3, 7; keys 0/1, 6, 8 need rows of 10^4 elements and are
covered by tests/kernels/dynamic_quant); smooth_scales, group_index (MoE), int8 / int4 (int32 packed, or a DT_INT4
yOut), symmetric and asymmetric, core_num, layouts. At most one mutation makes the call invalid (None, wrong dtype,
rank, smooth length, group_index decreasing / short / negative, dst_type unknown, quant_mode / dst_type_max (V3 / V4
on A2/A3), wrong outs). Golden: kernels/dynamic_quant/golden.py told the key's scale formula; NaN bytes of scale
are checked as NaN (the golden does not model the payload).
"""

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

import npu_emu.ops as ops
import npu_reliability as H
from npu_emu.kernels.dynamic_quant import golden, tiling

HOME = "npu_emu.kernels.dynamic_quant.api"
X_DTYPES = {"float16": np.float16, "bfloat16": H.BF16}
MUTATIONS = ["none"] * 10 + ["x_none", "x_dtype", "rank", "smooth_len", "smooth_dtype", "gi_values", "gi_dtype",
                             "dst_type", "quant_mode", "dst_type_max", "int4_odd"]


def _values(rng, data, shape, dt):
    kind = data.draw(st.sampled_from(["normal", "wide", "specials", "bits", "zeros"]), "value kind")
    if kind == "bits":
        return H.random_bits(rng, shape, dt)
    if kind == "zeros":
        return np.zeros(shape, dt)
    x = H.float_values(rng, shape, dt, special_frac=0.1 if kind == "specials" else 0.0,
                       scale_exp=(-20, 10) if kind != "normal" else (-4, 6))
    if x.size and data.draw(st.booleans(), "a zero row"):
        x.reshape(-1, shape[-1])[0] = 0
    return x


def _case(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), "seed"))
    x_name = data.draw(st.sampled_from(sorted(X_DTYPES)), "x dtype")
    dt = X_DTYPES[x_name]
    n = data.draw(st.sampled_from([8, 64, 100, 127, 128, 130, 136, 256, 4096]), "rowLen")
    lead = data.draw(st.sampled_from([(1,), (3,), (4,), (9,), (2, 3), (0,), (40,)]), "leading dims")
    if n == 4096 and lead == (40,):
        lead = (5,)
    shape = lead + (n,)
    rows = int(np.prod(lead))
    x = _values(rng, data, shape, dt)
    int4 = data.draw(st.booleans(), "int4") and n % 8 == 0
    asym = data.draw(st.booleans(), "asymmetric")
    smooth, group = None, None
    if data.draw(st.booleans(), "smooth"):
        if data.draw(st.booleans(), "groups") and rows:
            g = data.draw(st.integers(1, 4), "group count")
            cuts = sorted(data.draw(st.lists(st.integers(0, rows), min_size=g - 1, max_size=g - 1), "cuts"))
            group = np.array(cuts + [rows + data.draw(st.integers(0, 2), "past end")], np.int32)
            smooth = (rng.random((g, n)) + 0.25).astype(dt)
        else:
            smooth = (rng.random(n) + 0.25).astype(dt)
    kw = dict(core_num=data.draw(st.sampled_from([None, 1, 3, 48]), "core_num"))
    want_error, codes = False, None
    mutation = data.draw(st.sampled_from(MUTATIONS), "mutation")
    xin = H.layout(x, data.draw(st.sampled_from(["c", "strided", "fortran", "negative"]), "layout"))
    dst = 16 if int4 else data.draw(st.sampled_from([None, 1]), "int8 code")
    qm, dtm = "pertoken", 0.0
    if mutation == "x_none":
        xin, want_error, codes = None, True, {161001}
    elif mutation == "x_dtype":
        bad = [d for d in H.WRONG_DTYPES if d not in X_DTYPES.values()]
        xin, want_error = H.readonly(H.as_dtype(x, data.draw(st.sampled_from(bad), "bad x dtype"))), True
    elif mutation == "rank":
        xin, want_error = H.readonly(x.reshape(-1)), True
    elif mutation == "smooth_len":
        smooth, group, want_error = (rng.random(n + 1) + 0.5).astype(dt), None, True
    elif mutation == "smooth_dtype":
        smooth = (rng.random(n) + 0.5).astype(np.float16 if dt == H.BF16 else H.BF16)
        group, want_error = None, True
    elif mutation == "gi_values" and group is not None and rows:
        how = data.draw(st.sampled_from(["short", "decreasing", "negative"]), "bad group_index")
        if how == "short":
            group = group.copy()
            group[-1] = rows - 1
        elif how == "decreasing" and group.size > 1:
            group = group[::-1].copy()
            want_error = None if group[0] == group[-1] else True
        else:
            group = group.copy()
            group[0] = -1
        want_error = True if want_error is not None else None
    elif mutation == "gi_dtype" and group is not None:
        group, want_error = group.astype(data.draw(st.sampled_from([np.float32, np.int8, np.uint8]), "gi dt")), True
    elif mutation == "dst_type":
        dst, want_error = data.draw(st.sampled_from([2, 3, 0, 15, -1, "int16", 291, 1.5]), "bad dst_type"), True
    elif mutation == "quant_mode":
        qm, want_error = data.draw(st.sampled_from(["pertensor", "perchannel", "per_token", "", 3]), "qm"), True
    elif mutation == "dst_type_max":
        dtm, want_error = data.draw(st.sampled_from([127.0, 1.0, -1.0, "x"]), "dtm"), True
    elif mutation == "int4_odd":
        extra = 4 if (n + 4) % 8 else 2                 # rowLen 100 + 4 would be a valid multiple of 8
        xin = H.readonly(np.concatenate([x, x[..., :extra]], axis=-1))
        dst, smooth, group, want_error = 16, None, None, True
    if kw["core_num"] is not None and want_error is False:
        want_error = False
    return x, xin, x_name, smooth, group, dst, qm, dtm, int4 and dst == 16, asym, kw, want_error, codes


def _golden(x, x_name, smooth, group, int4, asym):
    lead, n = x.shape[:-1], x.shape[-1]
    xb = x.reshape(-1, n).view(np.uint16)
    rows = xb.shape[0]
    grp = group if (group is not None and smooth is not None) else None
    key = tiling.tiling(rows, n, x_dtype=x_name, has_smooth=smooth is not None, has_group=group is not None,
                        group_num=0 if grp is None else grp.size, y_int4=int4, asymmetric=asym).tiling_key
    sm = None if smooth is None else golden.widen(np.asarray(smooth).view(np.uint16), x_name)
    y, s, o = golden.dynamic_quant(golden.widen(xb, x_name), sm, grp, int4=int4, asymmetric=asym,
                                   scale_formula=golden.key_formula(key))
    if int4:
        packed = golden.pack_int4(y)
        y = packed.reshape(-1).view(np.int32).reshape(lead + (n // 8,))
    else:
        y = y.reshape(x.shape)
    return y, s.reshape(lead), None if o is None else o.reshape(lead)


def _fuzz_dynamic_quant_ops(data):
    x, xin, x_name, smooth, group, dst, qm, dtm, int4, asym, kw, want_error, codes = _case(data)
    name = "npu_dynamic_quant_asymmetric" if asym else "npu_dynamic_quant"
    fn = H.public(ops, name, HOME)
    outcome = H.call_entry(name, fn, (xin,), dict(kw, smooth_scales=smooth, group_index=group, dst_type=dst,
                                                   quant_mode=qm, dst_type_max=dtm))
    if H.expect(outcome, want_error, name, codes):
        return
    want = _golden(x, x_name, smooth, group, int4, asym)
    for got, w, what in zip(outcome[1], want, ("y", "scale", "offset")):
        H.same_bits(np.asarray(got), w, f"{name} {what}", nan_dtype=None if what == "y" else np.float32)


def _fuzz_dynamic_quant_aclnn(data):
    x, xin, x_name, smooth, group, dst, qm, dtm, int4, asym, kw, want_error, codes = _case(data)
    version = data.draw(st.sampled_from(["", "V2", "V2", "V3", "V4"]), "aclnn version")
    lead, n = x.shape[:-1], x.shape[-1]
    if dst not in (None, 1, 16) or qm != "pertoken" or dtm != 0.0:
        want_error, codes = None, None           # torch-level attributes: not arguments of the aclnn entries
    if version == "":
        asym, int4, group = False, False, None
        if smooth is not None and smooth.ndim == 2:
            smooth = smooth[0]
    y_form = data.draw(st.sampled_from(["int32", "int4"]), "int4 y form") if int4 else "int8"
    y = (H.sentinel_like(lead + (n // 8,), np.int32) if y_form == "int32" else
         H.sentinel_like(x.shape, np.int8).astype(ml_dtypes.int4) if y_form == "int4" else H.sentinel_like(x.shape,
                                                                                                       np.int8))
    s = H.sentinel_like(lead, np.float32)
    o = H.sentinel_like(lead, np.float32) if asym else None
    out_mut = data.draw(st.sampled_from(["ok"] * 6 + ["y_none", "s_none", "y_shape", "s_shape", "s_dtype",
                                                      "y_dtype"]), "out mutation")
    if out_mut != "ok" and want_error is not False:
        codes = None
    if out_mut == "y_none":
        y, want_error = None, True
    elif out_mut == "s_none":
        s, want_error = None, True
    elif out_mut == "y_shape":
        y, want_error = H.sentinel_like(y.shape[:-1] + (y.shape[-1] + 1,), y.dtype), True
    elif out_mut == "s_shape":
        s, want_error = H.sentinel_like(lead + (2,), np.float32), True
    elif out_mut == "s_dtype":
        s, want_error = H.sentinel_like(lead, np.float16), True
    elif out_mut == "y_dtype":
        y, want_error = H.sentinel_like(x.shape, np.int16), True
    acl_dst = 3 if y_form == "int32" else 29 if y_form == "int4" else 2
    if version == "":
        args = (xin, smooth, y, s)
    elif version == "V2":
        args = (xin, smooth, group, acl_dst, y, s, o)
    else:
        want_error, codes = True, None           # Ascend 950 only: refused on the A2/A3 default soc
        args = (xin, smooth, group, acl_dst, not asym, "pertoken") + ((127.0,) if version == "V4" else ()) + (y, s, o)
    entry = f"aclnnDynamicQuant{version}"
    outs = tuple(a for a in (y, s, o) if isinstance(a, np.ndarray))
    res = H.call_aclnn(entry, args, kw, outs=outs, home=HOME)
    if H.expect(res, want_error, entry, codes) or not res.ok:
        return
    gy, gs, go = _golden(x, x_name, smooth, group, y_form != "int8", asym)
    if y_form == "int4":
        b = np.asarray(gy).reshape(-1).view(np.uint8)
        codes4 = np.empty(b.size * 2, np.int8)
        codes4[0::2] = ((b & 15) ^ 8).astype(np.int8) - 8
        codes4[1::2] = ((b >> 4) ^ 8).astype(np.int8) - 8
        gy = codes4.reshape(x.shape).astype(ml_dtypes.int4)
    H.same_bits(y, gy, f"{entry} y")
    H.same_bits(s, gs, f"{entry} scale", nan_dtype=np.float32)
    if o is not None:
        H.same_bits(o, go, f"{entry} offset", nan_dtype=np.float32)


test_fuzz_dynamic_quant_ops, test_fuzz_dynamic_quant_ops_long = H.fast_and_slow(_fuzz_dynamic_quant_ops)
test_fuzz_dynamic_quant_aclnn, test_fuzz_dynamic_quant_aclnn_long = H.fast_and_slow(_fuzz_dynamic_quant_aclnn)
