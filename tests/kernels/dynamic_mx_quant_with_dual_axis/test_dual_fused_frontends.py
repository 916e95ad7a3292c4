"""DynamicMxQuantWithDualAxis: the fused one-pass walk (kernel._fused_slice) against the per-axis mx_quant helpers,
and the front ends op.py declares beyond the calls (demo case, Dask chunks, the ONNX node)."""

import numpy as np
import pytest

from dual_cases import TORCH_CODE, random_x, special_x
from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import api, golden, kernel, launch
from npu_emu.kernels.mx_quant.kernel import M_ELEMENT, M_FAST


def _bits(a):
    return np.asarray(a).view(np.uint8)


def _walk(x, code, fused, **kw):
    orig = launch.fused_walk
    launch.fused_walk = lambda p1, mode: fused and orig(p1, mode)
    try:
        return api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=code, **kw)
    finally:
        launch.fused_walk = orig


def test_fused_walk_taken_only_for_fast_ocp():
    from npu_emu.kernels.mx_quant.common import make_params

    def p(alg):
        return make_params(x_dtype="bfloat16", y_dtype="float8_e4m3fn", round_mode="rint", alg=alg, dtm_class=0,
                           legacy=True, signed_zero=True, ftz=False, nan_in_max="propagate",
                           fp4_nibble_order="low_first", dynamic=False, faithful=False)
    assert launch.fused_walk(p(0), M_FAST) and not launch.fused_walk(p(1), M_FAST)
    assert not launch.fused_walk(p(0), M_ELEMENT)


@pytest.mark.parametrize("dst", list(TORCH_CODE))
@pytest.mark.parametrize("shape", [(2, 100, 200), (70, 600), (33, 38), (1, 64, 544), (40, 8230)])
def test_fused_equals_per_axis_walk(dst, shape):
    """Same bits from the fused slices as from _column_blocks + _row_blocks (OCP, BF16, RINT: M_FAST): special
    blocks (zeros, Inf/NaN, tiny, huge: reciprocals the 16-bit forms do not take), tails narrower than 32 columns,
    a row block shorter than 32 rows, slices of SLICE (8192) columns and a last one narrower (8230 on one core: a
    segment of the whole row, its last slice 38 columns)."""
    x = special_x("bfloat16", 3, shape) if len(shape) == 3 else random_x(shape, "bfloat16", 4, spread=40)
    code = TORCH_CODE[dst]
    kw = dict(core_num=1) if shape[-1] > kernel.SLICE else {}
    a = _walk(x, code, True, **kw)
    b = _walk(x, code, False, **kw)
    for u, v in zip(a, b):
        assert np.array_equal(_bits(u), _bits(v))
    want = golden.dual_axis_quant(x, dst)
    for u, v in zip(a, want):
        assert np.array_equal(_bits(u), _bits(v))


def test_fused_device_walk():
    """Task by task (merge = 1, the device's walk) the fused slices give the same bits."""
    x = special_x("bfloat16", 5, (1, 130, 520))
    a = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=24, device_walk=True)
    b = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=24)
    for u, v in zip(a, b):
        assert np.array_equal(_bits(u), _bits(v))


@pytest.mark.parametrize("dst", list(TORCH_CODE))
@pytest.mark.parametrize("x_dtype", ["bfloat16", "float16"])
def test_faithful_staged_path_equals_fused(dst, x_dtype):
    """faithful=True (each task staged through UB: DataCopyPad in, ComputeAll on the tile, DataCopyPad out, the
    per-element arithmetic) gives the bits of the default call (the fused walk for bf16, the per-axis one for fp16):
    special blocks, an odd 32-row group count (the pad slot), a column tail narrower than 32, tasks of 256 columns
    and a short last one."""
    code = TORCH_CODE[dst]
    for shape in [(2, 100, 200), (1, 130, 520)]:
        x = special_x(x_dtype, 11, shape)
        a = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=code, faithful=True)
        b = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=code)
        for u, v in zip(a, b):
            assert np.array_equal(_bits(u), _bits(v))


@pytest.mark.parametrize("dst,kw", [("float4_e2m1", dict(round_mode="floor", scale_alg=2, dst_type_max=7.0)),
                                    ("float8_e5m2", dict(scale_alg=1))])
def test_faithful_other_rules(dst, kw):
    x = special_x("bfloat16", 12, (1, 97, 300))
    a = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=TORCH_CODE[dst], faithful=True, **kw)
    want = golden.dual_axis_quant(x, dst, **kw)
    for u, v in zip(a, want):
        assert np.array_equal(_bits(u), _bits(v))


def test_demo_small_case_matches_golden():
    from npu_emu.kernels.dynamic_mx_quant_with_dual_axis import demo

    (case,) = [c for c in demo.CASES if c.key == "dynamic_mx_quant_with_dual_axis"]
    c = case.build(case.small, np.random.default_rng(0))
    got, want = c.run(), c.golden()
    assert c.same(got, want)
    assert not c.same(got, (want[0], want[1], want[2], want[3] ^ np.uint8(1)))


@pytest.fixture(scope="module")
def threads_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("dst", ["float8_e4m3fn", "float4_e2m1"])
def test_dask_chunks_bit_identical(threads_client, dst):
    da = pytest.importorskip("dask.array")
    from npu_emu import dask as nd

    x = special_x("bfloat16", 7, (3, 200, 330))
    dx = da.from_array(x, chunks=(2, 64, 128))              # batch, 64-row and 128-column chunks, ragged ends
    outs = nd.dynamic_mx_quant_with_dual_axis(dx, dst_type=TORCH_CODE[dst])
    got = threads_client.compute(list(outs), sync=True)
    want = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=TORCH_CODE[dst])
    for g, w in zip(got, want):
        assert g.shape == np.asarray(w).shape and np.array_equal(_bits(g), _bits(w))


def test_dask_rechunks_to_whole_pairs():
    da = pytest.importorskip("dask.array")
    from npu_emu import dask as nd
    from npu_emu.dask.chunking import RechunkWarning
    from npu_emu.errors import AclnnError

    x = random_x((100, 96), "bfloat16", 8)
    dx = da.from_array(x, chunks=(40, 96))
    with pytest.raises(AclnnError) as e:
        nd.dynamic_mx_quant_with_dual_axis(dx, dst_type=24, rechunk=False)
    assert e.value.status == 161002
    with pytest.warns(RechunkWarning):
        outs = nd.dynamic_mx_quant_with_dual_axis(dx, dst_type=24)
    got = [o.compute(scheduler="sync") for o in outs]
    want = api.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=24)
    for g, w in zip(got, want):
        assert np.array_equal(_bits(g), _bits(w))


def test_onnx_node():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    import npu_emu.onnx as npu_onnx

    x = random_x((70, 96), "float16", 9)
    node = helper.make_node("NPUDynamicMxQuantWithDualAxis", ["x"], ["y1", "s1", "y2", "s2"], domain="npu",
                            dst_type=296, round_mode="floor")
    graph = helper.make_graph([node], "dual", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [70, 96])],
                              [helper.make_tensor_value_info(n, TensorProto.UINT8, None) for n in
                               ("y1", "s1", "y2", "s2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("npu", 1)])
    out = npu_onnx.run(model, {"x": x})
    want = golden.dual_axis_quant(x, "float4_e2m1", round_mode="floor")
    for name, w in zip(("y1", "s1", "y2", "s2"), want):
        assert np.array_equal(_bits(out[name]), _bits(w))
    del onnx
