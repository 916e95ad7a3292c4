"""GroupedMatmul's CLI verbs, demo case and Dask front end (declared in op.py)."""

import json
import os

import numpy as np
import pytest

from npu_emu import AclnnError, ops
from npu_emu.cli import main as cli_main
from npu_emu.kernels.grouped_matmul import golden

RNG = np.random.default_rng(11)


def run(argv, capsys):
    rc = cli_main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_golden_then_run_gives_the_golden_bits(tmp_path, capsys):
    d = tmp_path / "case"
    rc, out, _ = run(["golden", "grouped_matmul", "--out", str(d), "--e", "3", "--m", "40", "--k", "32", "--n", "16"],
                     capsys)
    assert rc == 0
    man = json.loads((d / "manifest.json").read_text())
    sh = {k: ",".join(map(str, v["shape"])) for k, v in man["inputs"].items()}
    y = tmp_path / "y.bin"
    rc, out, _ = run(["run", "grouped_matmul", "--x", str(d / "x.bin"), "--x-shape", sh["x"],
                      "--weight", str(d / "weight.bin"), "--weight-shape", sh["weight"],
                      "--group-list", str(d / "group_list.bin"), "--group-list-type", "1",
                      "--scale", str(d / "scale.bin"), "--scale-shape", sh["scale"],
                      "--per-token-scale", str(d / "per_token_scale.bin"), "--output-dtype", "bfloat16",
                      "--output", str(y), "--trace"], capsys)
    assert rc == 0 and "blockDim" in out
    assert (d / "golden.bin").read_bytes() == y.read_bytes()


def test_cli_tiling_lists_the_cores(capsys):
    rc, out, _ = run(["tiling", "grouped_matmul", "--e", "8", "--m", "4096", "--k", "7168", "--n", "2048"], capsys)
    assert rc == 0 and "blockDim 24" in out and "vecBaseM 24" in out and "ubCalSize" in out


def test_demo_small_case_is_bit_exact(capsys):
    rc, out, _ = run(["demo", "--small", "--repeat", "1", "--no-progress", "--only",
                      "grouped_matmul_int8_pertoken_bf16"], capsys)
    assert rc == 0 and "MISMATCH" not in out and "GroupedMatmul" in out, out


da = pytest.importorskip("dask.array")


@pytest.mark.parametrize("chunks", [(7, 32), (16, 16), (70, 32)])
def test_dask_rows_within_groups_give_the_whole_call(chunks):
    import ml_dtypes
    import npu_emu.dask as nd

    e, m, k, n = 4, 70, 32, 24
    x = RNG.integers(-128, 128, (m, k), dtype=np.int16).astype(np.int8)
    w = RNG.integers(-128, 128, (e, k, n), dtype=np.int16).astype(np.int8)
    s = RNG.uniform(1e-3, 1e-2, (e, n)).astype(ml_dtypes.bfloat16)
    pt = RNG.uniform(0.01, 0.1, m).astype(np.float32)
    gl = np.array([10, 10, 41, 60], np.int64)                       # rows 60.. are no group's
    want = ops.npu_grouped_matmul([x], [w], scale=[s], per_token_scale=[pt], group_list=gl, split_item=3,
                                  group_type=0, output_dtype="bfloat16")[0]
    got = nd.grouped_matmul(da.from_array(x, chunks=chunks), [w], group_list=gl, scale=[s], per_token_scale=[pt],
                            output_dtype="bfloat16").compute(scheduler="sync")
    assert np.array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16))


def test_dask_int32_and_bad_group_list():
    import npu_emu.dask as nd

    x = RNG.integers(-128, 128, (30, 16), dtype=np.int16).astype(np.int8)
    w = RNG.integers(-128, 128, (2, 16, 8), dtype=np.int16).astype(np.int8)
    got = nd.grouped_matmul(da.from_array(x, chunks=(4, 16)), w, group_list=np.array([11, 19]), group_list_type=1,
                            output_dtype="int32").compute(scheduler="sync")
    assert np.array_equal(got, golden.grouped_matmul_quant(x, w, np.array([11, 19]), group_list_type=1))
    with pytest.raises(AclnnError) as ei:
        nd.grouped_matmul(da.from_array(x, chunks=(4, 16)), w, group_list=np.array([20, 11]), output_dtype="int32")
    assert ei.value.status == 161002 and "incremental" in str(ei.value)


def test_dask_mx_and_antiquant_give_the_whole_call():
    """The modes of docs/ops/grouped_matmul.md §10 / §11 by rows: the MX per-token scale (M, ceil(K/64), 2) is cut
    with x; the antiquant scale / offset travel whole."""
    import ml_dtypes
    import npu_emu.dask as nd

    e, m, k, n = 3, 40, 64, 16
    gl = np.array([9, 9, 33], np.int64)
    x = RNG.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    w = RNG.standard_normal((e, k, n)).astype(ml_dtypes.float8_e4m3fn)
    s2 = RNG.integers(120, 134, (e, 1, n, 2)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    s1 = RNG.integers(120, 134, (m, 1, 2)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    kw = dict(scale=[s2], per_token_scale=[s1], output_dtype="bfloat16", soc="ascend950pr")
    want = ops.npu_grouped_matmul([x], [w], group_list=gl, split_item=3, group_type=0, **kw)[0]
    got = nd.grouped_matmul(da.from_array(x, chunks=(7, k)), [w], group_list=gl, **kw).compute(scheduler="sync")
    assert np.array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16))
    xb = RNG.standard_normal((m, k)).astype(np.float16)
    w8 = RNG.integers(-128, 128, (e, k, n)).astype(np.int8)
    s = RNG.uniform(0.001, 0.05, (e, n)).astype(np.float16)
    kw = dict(antiquant_scale=[s], antiquant_offset=[-s])
    want = ops.npu_grouped_matmul([xb], [w8], group_list=gl, split_item=3, group_type=0, **kw)[0]
    got = nd.grouped_matmul(da.from_array(xb, chunks=(11, k)), [w8], group_list=gl, **kw).compute(scheduler="sync")
    assert np.array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16))


def _bins(tmp_path, **arrays):
    """Each array to <name>.bin; the CLI flags --<name> FILE --<name>-shape S --<name>-dtype D."""
    from npu_emu.frontend.binfile import write_bin
    from npu_emu.frontend.core import dtype_name_of

    argv = []
    for name, (arr, dtype) in arrays.items():
        path = tmp_path / f"{name}.bin"
        write_bin(str(path), arr)
        flag = name.replace("_", "-")
        argv += [f"--{flag}", str(path), f"--{flag}-shape", ",".join(map(str, arr.shape)),
                 f"--{flag}-dtype", dtype or dtype_name_of(arr)]
    return argv


def test_cli_run_antiquant_w4a16_gives_the_golden_bits(tmp_path, capsys):
    """docs/ops/grouped_matmul.md §2.3 / §11: --antiquant-scale / --antiquant-offset per group (E, G, N), an int4
    weight one value a byte (--weight-dtype int4); y = the golden's prologue then the plain float matmul."""
    import ml_dtypes

    from npu_emu.kernels.grouped_matmul import golden_modes

    e, m, k, n, g = 3, 24, 32, 16, 2
    gl = np.array([5, 0, 19], np.int64)
    x = RNG.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    w = RNG.integers(-8, 8, (e, k, n)).astype(ml_dtypes.int4)
    s = RNG.uniform(0.001, 0.05, (e, g, n)).astype(ml_dtypes.bfloat16)
    o = RNG.uniform(-2, 2, (e, g, n)).astype(ml_dtypes.bfloat16)
    y = tmp_path / "y.bin"
    argv = ["run", "grouped_matmul", "--output", str(y), "--group-list-type", "1"]
    argv += _bins(tmp_path, x=(x, None), weight=(w, "int4"), group_list=(gl, None), antiquant_scale=(s, None),
                  antiquant_offset=(o, None))
    rc, out, err = run(argv, capsys)
    assert rc == 0, out + err
    want = golden.grouped_matmul_float(x, golden_modes.antiquant_weight(w, s, o, "bfloat16"), gl,
                                       group_list_type=1)
    assert np.fromfile(y, np.uint16).tobytes() == np.ascontiguousarray(want).view(np.uint16).tobytes()


def test_cli_run_mxfp8_gives_the_golden_bits(tmp_path, capsys):
    """docs/ops/grouped_matmul.md §2.3 / §10: fp8 x and weight, E8M0 scale / per-token scale as uint8 codes read
    with --scale-dtype / --per-token-scale-dtype float8_e8m0, --soc ascend950pr."""
    import ml_dtypes

    from npu_emu.kernels.grouped_matmul import golden_modes

    e, m, k, n = 2, 20, 96, 16
    kp = -(-k // 64)
    gl = np.array([7, 20], np.int64)
    x = RNG.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    w = RNG.standard_normal((e, k, n)).astype(ml_dtypes.float8_e4m3fn)
    s2 = RNG.integers(118, 136, (e, kp, n, 2)).astype(np.uint8)
    s1 = RNG.integers(118, 136, (m, kp, 2)).astype(np.uint8)
    y = tmp_path / "y.bin"
    argv = ["run", "grouped_matmul", "--output", str(y), "--output-dtype", "bfloat16", "--soc", "ascend950pr"]
    argv += _bins(tmp_path, x=(x, None), weight=(w, None), group_list=(gl, None), scale=(s2, "float8_e8m0"),
                  per_token_scale=(s1, "float8_e8m0"))
    rc, out, err = run(argv, capsys)
    assert rc == 0, out + err
    want = golden_modes.grouped_matmul_mx(x, w, s2, s1, gl, out_dtype="bfloat16")
    assert np.fromfile(y, np.uint16).tobytes() == np.ascontiguousarray(want).view(np.uint16).tobytes()
