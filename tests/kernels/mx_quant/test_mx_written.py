"""Every byte the ops return is written by the kernel: output buffers start as 0xAB poison (api._empty swapped), so
an unwritten y byte, scale or odd-block pad slot (docs/ops/mx_quant.md §3.6, §4.4: pad 0x00) cannot pass as a lucky
zero of fresh memory. Layouts chosen for odd block counts along and across the axis, unit chunks of several pairs,
partial tiles, empty groups and gap rows; compared byte for byte with the golden.
"""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.kernels.mx_quant import golden as golden
from npu_emu.kernels.mx_quant import api

POISON = 0xAB
TORCH_CODE = {"float8_e5m2": 23, "float8_e4m3fn": 24, "float4_e2m1": 296, "float4_e1m2": 297}
XDT = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16, "float32": np.float32}


@pytest.fixture(autouse=True)
def poisoned(monkeypatch):
    monkeypatch.setattr(api, "_empty", lambda nbytes: np.full(nbytes, POISON, np.uint8))


def rand(shape, xdt, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))).astype(np.float32).astype(XDT[xdt])


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("dst", ["float8_e4m3fn", "float4_e2m1"])
@pytest.mark.parametrize("xdt, shape, axis, bs, ub", [
    ("bfloat16", (7, 200), 1, 1024, None),     # one block per row: slot 1 of every row is the pad
    ("bfloat16", (3, 70), -1, 32, None),       # three blocks per row
    ("bfloat16", (2, 330), -1, 32, 4096),      # 11 blocks, units of a few pairs each (small UB budget)
    ("float16", (70, 6), 0, 32, None),         # along axis 0: the pad pair row across the columns
    ("float32", (2, 96, 4), 1, 32, None),      # odd block count on a middle axis
    ("bfloat16", (3, 100, 2), 1, 64, None),    # blocksize 64, two blocks: no pad
])
def test_dynamic_every_byte_written(xdt, shape, axis, bs, ub, dst, faithful):
    x = rand(shape, xdt, sum(shape) + bs)
    y, s = api.npu_dynamic_mx_quant(x, axis=axis, block_size=bs, dst_type=TORCH_CODE[dst], ub_size=ub,
                                    faithful=faithful)
    yg, sg = golden.dynamic_mx_quant(x, axis=axis, block_size=bs, dst_type=dst)
    assert np.array_equal(np.asarray(y).view(np.uint8), yg)
    assert np.array_equal(s, sg)


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("dst", ["float8_e5m2", "float4_e1m2"])
@pytest.mark.parametrize("m, n, gi", [
    (130, 2, [70, 130]),                       # docs/ops/mx_quant.md §10 G9 layout: pad slot in row 1, gap row 3
    (100, 2, [40, 40, 100]),                   # G10: an empty group's row and a trailing gap row
    (300, 260, [0, 33, 128, 128, 300]),        # partial column tile, 64-multiple group (gap), leading empty group
])
def test_grouped_every_byte_written(m, n, gi, dst, faithful):
    x = rand((m, n), "bfloat16", m + n)
    y, s = api.npu_grouped_dynamic_mx_quant(x, np.array(gi, np.int32), dst_type=TORCH_CODE[dst], faithful=faithful)
    yg, sg = golden.grouped_dynamic_mx_quant(x, gi, dst_type=dst)
    assert np.array_equal(np.asarray(y).view(np.uint8), yg)
    assert np.array_equal(s, sg)
    assert (s[golden.grouped_scale_rows(gi, m) < 0] == 0).all()      # gap rows: the default gap_fill 0x00


def test_grouped_gap_fill_none_keeps_only_gap_rows():
    # aclnn with gap_fill=None over a caller buffer of 0x5A: the gap rows keep it, every owned byte is the kernel's
    m, n, gi = 130, 3, [70, 130]
    x = rand((m, n), "float16", 1)
    y = np.zeros((m, n), ml_dtypes.float8_e4m3fn)
    s = np.full((m // 64 + 2, n, 2), 0x5A, np.uint8)
    st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, np.array(gi, np.int32), "rint", 36, 32, y, s,
                                                                gap_fill=None)
    assert st == 0 and api.aclnnGroupedDynamicMxQuant(None, ws, ex) == 0
    yg, sg = golden.grouped_dynamic_mx_quant(x, gi, dst_type="float8_e4m3fn", gap_fill=None,
                                             mxscale_init=np.full_like(s, 0x5A))
    assert np.array_equal(y.view(np.uint8), yg) and np.array_equal(s, sg)
    assert (s[3] == 0x5A).all() and s[1, :, 1].tolist() == [0, 0, 0]
