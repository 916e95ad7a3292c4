"""SwiGlu through the declaration's other front ends: CLI, demo case, Dask by rows, the C ABI bridge."""

import numpy as np
import pytest

from npu_emu.frontend.binfile import read_bin
from npu_emu.kernels.swiglu import golden as G
from npu_emu.kernels.swiglu.api import npu_swiglu


def _bf16(shape, seed=0):
    import ml_dtypes

    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(ml_dtypes.bfloat16)


def test_cli_run_and_tiling(tmp_path, capsys):
    from npu_emu import cli

    x = _bf16((6, 128))
    x.tofile(tmp_path / "x.bin")
    out = tmp_path / "y.bin"
    assert cli.main(["run", "swiglu", "--input", str(tmp_path / "x.bin"), "--shape", "6,128", "--output", str(out),
                     "--trace"]) == 0
    y = read_bin(str(out), "bfloat16").reshape(6, 64)
    assert np.array_equal(y.view(np.uint16), G.swiglu(x).view(np.uint16))
    assert "tilingKey 27" in capsys.readouterr().out
    assert cli.main(["tiling", "swiglu", "--shape", "8192,8192"]) == 0
    assert "colLen" in capsys.readouterr().out


def test_demo_case_small_is_bit_exact():
    from npu_emu.frontend import registry

    case = next(c for c, _ in registry.demo_cases() if c.key == "swiglu")
    built = case.build(case.small, np.random.default_rng(0))
    assert built.same(built.run(), built.golden())


@pytest.mark.parametrize("shape,dim,chunks", [((40, 128), -1, (7, 128)), ((6, 10, 32), 1, (4, 3, 16)),
                                              ((6, 10, 32), -1, (2, 5, 32))])
def test_dask_rows(shape, dim, chunks):
    da = pytest.importorskip("dask.array")
    import npu_emu.dask as nd
    from npu_emu.dask import RechunkWarning

    x = _bf16(shape, seed=1)
    with pytest.warns(RechunkWarning) if chunks[dim] != shape[dim] or (dim == 1 and chunks[2] != shape[2]) \
            else _nothing():
        y = nd.swiglu(da.from_array(x, chunks=chunks), dim)
    assert np.array_equal(np.asarray(y.compute()).view(np.uint16), npu_swiglu(x, dim).view(np.uint16))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def _desc(buf, code):
    shape = buf.shape
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return (buf.ctypes.data, tuple(shape), tuple(strides), 0, code, 2, tuple(shape), buf.nbytes)


def test_c_abi_bridge():
    from npu_emu.cabi import bridge
    from npu_emu.cabi.signatures import BY_NAME

    assert [p.name for p in BY_NAME["aclnnSwiGlu"].params] == ["x", "dim", "out"]
    x = _bf16((4, 64), seed=2)
    y = np.zeros((4, 32), np.uint16)
    res = bridge.workspace("aclnnSwiGlu", (_desc(x.view(np.uint16), 27), -1, _desc(y, 27)))
    assert res[0] == 0, res
    assert bridge.run("aclnnSwiGlu", res[2], res[1]) == (0, "")
    assert np.array_equal(y, G.swiglu(x).view(np.uint16))
    bad = bridge.workspace("aclnnSwiGlu", (_desc(x.view(np.uint16), 27), -1, _desc(np.zeros((4, 31), np.uint16), 27)))
    assert bad[0] == 161002
