"""DequantSwigluQuant through the declaration's other front ends: CLI, demo case, Dask by rows (whole groups), the C
ABI bridge (V1 and V2)."""

import numpy as np
import pytest

from npu_emu.frontend.binfile import read_bin
from npu_emu.kernels.dequant_swiglu_quant import golden as G
from npu_emu.kernels.dequant_swiglu_quant.api import npu_dequant_swiglu_quant


def _data(T=40, D=128, E=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-4000, 4000, (T, D), dtype=np.int32)
    ws = (rng.random((E, D)) * 0.01 + 1e-4).astype(np.float32)
    asc = (rng.random(T) * 0.1 + 0.01).astype(np.float32)
    return x, ws, asc


def _same(got, want):
    assert np.array_equal(np.asarray(got[0]), want[0])
    assert np.array_equal(np.asarray(got[1]).view(np.uint32), want[1].view(np.uint32))


def test_cli_run_group_and_nogroup(tmp_path, capsys):
    from npu_emu import cli

    x, ws, asc = _data()
    gi = np.array([10, 0, 25, 5], np.int64)
    for name, a in (("x", x), ("ws", ws), ("asc", asc), ("gi", gi), ("ws1", ws[0])):
        a.tofile(tmp_path / f"{name}.bin")
    p = {k: str(tmp_path / f"{k}.bin") for k in ("x", "ws", "asc", "gi", "ws1", "y", "s")}
    base = ["run", "dequant_swiglu_quant", "--input", p["x"], "--shape", "40,128", "--activation-scale", p["asc"],
            "--output", p["y"], "--scale", p["s"], "--activate-left"]
    assert cli.main(base + ["--weight-scale", p["ws"], "--group-index", p["gi"], "--trace"]) == 0
    assert "tilingKey 100000000" in capsys.readouterr().out
    got = read_bin(p["y"], "int8").reshape(40, 64), read_bin(p["s"], "float32")
    _same(got, G.dequant_swiglu_quant(x, ws, asc, group_index=gi, activate_left=True, quant_mode=1))
    assert cli.main(base + ["--weight-scale", p["ws1"]]) == 0
    got = read_bin(p["y"], "int8").reshape(40, 64), read_bin(p["s"], "float32")
    _same(got, G.dequant_swiglu_quant_nogroup(x, ws[0], asc, activate_left=True))
    assert cli.main(["tiling", "dequant_swiglu_quant", "--rows", "8192", "--n", "4096", "--groups", "8"]) == 0
    assert "UbFactorDimx" in capsys.readouterr().out
    assert cli.main(["tiling", "dequant_swiglu_quant", "--rows", "8192", "--n", "4096"]) == 0
    assert "baseColLen" in capsys.readouterr().out


def test_demo_case_small_is_bit_exact():
    from npu_emu.frontend import registry

    case = next(c for c, _ in registry.demo_cases() if c.key == "dequant_swiglu_quant")
    built = case.build(case.small, np.random.default_rng(0))
    assert built.same(built.run(), built.golden())


@pytest.mark.parametrize("gi,chunks", [
    (np.array([10, 0, 25, 3], np.int64), 7),                     # boundaries moved to group ends; 2 rows in no group
    (np.array([[2, 5], [0, 9], [3, 4], [1, 0], [2, 7]], np.int64), 6),   # pairs: the walk stops at the zero count
    (None, 9),                                                   # no group_index: rows split freely
])
def test_dask_rows(gi, chunks):
    da = pytest.importorskip("dask.array")
    import warnings

    import npu_emu.dask as nd

    x, ws, asc = _data(seed=1)
    if gi is None:
        ws = ws[0]
    elif gi.ndim == 2:
        ws = np.concatenate([ws, ws[:1]])                       # 5 pairs: 5 scale rows
    kw = dict(weight_scale=ws, activation_scale=asc, group_index=gi, quant_mode=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y, s = nd.dequant_swiglu_quant(da.from_array(x, chunks=(chunks, 128)), **kw)
        got = (y.compute(), s.compute())
    _same(got, npu_dequant_swiglu_quant(x, **kw))


def _desc(buf, code):
    if buf is None:
        return None
    shape = buf.shape
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return (buf.ctypes.data, tuple(shape), tuple(strides), 0, code, 2, tuple(shape), buf.nbytes)


@pytest.mark.parametrize("v2", [False, True])
def test_c_abi_bridge(v2):
    from npu_emu.cabi import bridge

    x, ws, asc = _data(seed=2)
    gi = np.array([10, 30, 0, 0], np.int64)
    y = np.zeros((40, 64), np.int8)
    s = np.zeros(40, np.float32)
    ins = (_desc(x, 3), _desc(ws, 0), _desc(asc, 0), None, None, None, _desc(gi, 9), True, "dynamic")
    name = "aclnnDequantSwigluQuantV2" if v2 else "aclnnDequantSwigluQuant"
    extra = (2, None, -1, 0, 7.0, 1.702, 1.0) if v2 else ()
    res = bridge.workspace(name, ins + extra + (_desc(y, 2), _desc(s, 0)))
    assert res[0] == 0, res
    assert bridge.run(name, res[2], res[1]) == (0, "")
    _same((y, s), G.dequant_swiglu_quant(x, ws, asc, group_index=gi, activate_left=True, quant_mode=1))


def test_static_and_16bit_x_without_groups_through_torch_dask_and_c_abi():
    """Static quant and 16-bit x without group_index (keys 10001, 10005, 30012) through torch CPU tensors, Dask row
    chunks and the C ABI (float16 x, acl code 1)."""
    torch = pytest.importorskip("torch")
    import ml_dtypes

    from npu_emu import ops

    rng = np.random.default_rng(3)
    xb = (rng.standard_normal((24, 128)) * 3).astype(ml_dtypes.bfloat16)
    qs, qo = np.array([0.05], np.float32), np.array([2.0], np.float32)
    want = G.dequant_swiglu_quant_nogroup(xb, quant_scale=qs, quant_offset=qo, quant_mode=0)
    xt = torch.from_numpy(xb.view(np.int16)).view(torch.bfloat16)
    y, s = ops.npu_dequant_swiglu_quant(xt, quant_scale=torch.from_numpy(qs), quant_offset=torch.from_numpy(qo))
    assert isinstance(y, torch.Tensor) and y.dtype == torch.int8
    _same((y.numpy(), s.numpy()), want)
    y, s = ops.npu_dequant_swiglu_quant(xt, quant_mode=1)
    _same((y.numpy(), s.numpy()), G.dequant_swiglu_quant_nogroup(xb, quant_mode=1))

    x, ws, asc = _data(T=24, seed=4)
    qs_h = (rng.random(64) * 0.1 + 0.01).astype(np.float32)
    qo_h = rng.integers(-3, 3, 64).astype(np.float32)
    kw = dict(weight_scale=ws[0], activation_scale=asc, quant_scale=qs_h, quant_offset=qo_h, quant_mode=0)
    want = G.dequant_swiglu_quant_nogroup(x, ws[0], asc, quant_scale=qs_h, quant_offset=qo_h, quant_mode=0)
    _same(npu_dequant_swiglu_quant(x, **kw), want)
    da = pytest.importorskip("dask.array")
    import warnings

    import npu_emu.dask as nd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yd, sd = nd.dequant_swiglu_quant(da.from_array(x, chunks=(7, 128)), **kw)
        _same((yd.compute(), sd.compute()), want)

    from npu_emu.cabi import bridge

    xh = (rng.standard_normal((24, 128)) * 3).astype(np.float16)
    y = np.zeros((24, 64), np.int8)
    s = np.full(24, 7, np.float32)
    ins = (_desc(xh, 1), None, None, None, _desc(qs, 0), _desc(qo, 0), None, False, "static")
    res = bridge.workspace("aclnnDequantSwigluQuant", ins + (_desc(y, 2), _desc(s, 0)))
    assert res[0] == 0, res
    assert bridge.run("aclnnDequantSwigluQuant", res[2], res[1]) == (0, "")
    _same((y, s), G.dequant_swiglu_quant_nogroup(xh, quant_scale=qs, quant_offset=qo, quant_mode=0))


def test_cli_static_bf16_x(tmp_path):
    import ml_dtypes

    from npu_emu import cli

    xb = (np.random.default_rng(5).standard_normal((6, 64)) * 3).astype(ml_dtypes.bfloat16)
    xb.tofile(tmp_path / "x.bin")
    np.array([0.04], np.float32).tofile(tmp_path / "qs.bin")
    np.array([-1.0], np.float32).tofile(tmp_path / "qo.bin")
    p = {k: str(tmp_path / f"{k}.bin") for k in ("x", "qs", "qo", "y", "s")}
    assert cli.main(["run", "dequant_swiglu_quant", "--input", p["x"], "--x-dtype", "bfloat16", "--shape", "6,64",
                     "--quant-mode", "0", "--quant-scale", p["qs"], "--quant-offset", p["qo"], "--output", p["y"],
                     "--scale", p["s"]]) == 0
    got = read_bin(p["y"], "int8").reshape(6, 32), read_bin(p["s"], "float32")
    _same(got, G.dequant_swiglu_quant_nogroup(xb, quant_scale=np.array([0.04], np.float32),
                                              quant_offset=np.array([-1.0], np.float32), quant_mode=0))
