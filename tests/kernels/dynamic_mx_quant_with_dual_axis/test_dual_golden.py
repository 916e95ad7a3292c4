"""The kernel against the independent numpy golden (kernels/dynamic_mx_quant_with_dual_axis/golden.py), bit for
bit: every dst type, round mode, scale_alg and dst_type_max class; odd M and N, column tails narrower than 256,
row tails shorter than a row block, batch dims, and blocks of zeros, Inf, NaN, tiny and subnormal values."""

import numpy as np
import pytest
from dual_cases import COMBOS, TORCH_CODE, random_x, special_x

from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import api, golden


def _bits(a):
    return np.ascontiguousarray(np.asarray(a)).view(np.uint8)


def _check(x, dst, rm, alg, dtm, **kw):
    out = api.npu_dynamic_mx_quant_with_dual_axis(x, round_mode=rm, dst_type=TORCH_CODE[dst], scale_alg=alg,
                                                  dst_type_max=dtm, **kw)
    ref = golden.dual_axis_quant(x, dst, round_mode=rm, scale_alg=alg, dst_type_max=dtm)
    for name, a, b in zip(("y1", "mxscale1", "y2", "mxscale2"), out, ref):
        a = _bits(a)
        assert a.shape == b.shape, name
        bad = np.flatnonzero(a.reshape(-1) != b.reshape(-1))
        assert bad.size == 0, f"{name}: {bad.size} bytes differ, first at {bad[:5]}: {a.reshape(-1)[bad[:5]]} vs " \
                              f"{b.reshape(-1)[bad[:5]]}"


@pytest.mark.parametrize("x_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("dst, rm, alg, dtm", COMBOS)
def test_random_and_special(x_dtype, dst, rm, alg, dtm):
    _check(special_x(x_dtype, 7), dst, rm, alg, dtm)


@pytest.mark.parametrize("shape", [(1, 2), (33, 31), (3, 65, 258), (2, 2, 70, 514), (130, 40)])
@pytest.mark.parametrize("dst", ["float8_e4m3fn", "float4_e2m1"])
def test_shapes(shape, dst):
    if dst.startswith("float4") and shape[-1] % 2:
        pytest.skip("FP4 needs an even last dim")
    _check(random_x(shape, "bfloat16", sum(shape)), dst, "rint", 0, 0.0)


@pytest.mark.parametrize("dst, rm, alg", [("float8_e5m2", "rint", 1), ("float4_e1m2", "floor", 0),
                                          ("float4_e2m1", "round", 2)])
def test_device_walk_and_small_cores(dst, rm, alg):
    """Task by task as the device walks them, with few cores (long task runs, head and tail cores) and a small UB
    (splitBlockH 64 with a row tail): the same bits."""
    x = special_x("bfloat16", 3, shape=(3, 150, 300))
    _check(x, dst, rm, alg, 0.0, device_walk=True, core_num=5)
    _check(x, dst, rm, alg, 0.0, device_walk=False, core_num=3)


def test_switches_match_golden_codecs():
    """signed_zero=False and the high-nibble-first FP4 order take the element path; the golden's codecs agree."""
    x = special_x("bfloat16", 11, shape=(2, 64, 100))
    y1, s1, y2, s2 = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=296, round_mode="floor",
                                                             fp4_nibble_order="high_first", signed_zero=False)
    r1, rs1, r2, rs2 = golden.dual_axis_quant(x, "float4_e2m1", round_mode="floor", fp4_nibble_order="high_first",
                                              signed_zero=False)
    for a, b in ((y1, r1), (s1, rs1), (y2, r2), (s2, rs2)):
        np.testing.assert_array_equal(_bits(a), b)
