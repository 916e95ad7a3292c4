"""The CLI commands of kernels/mx_quant/cli.py on .bin files (built with npu_emu.cli's parser, so the test does not
depend on the module being registered in npu_emu.cli.CLI_MODULES)."""

import json

import ml_dtypes
import numpy as np

from npu_emu import cli as npu_cli
from npu_emu.kernels.mx_quant import golden as golden
from npu_emu.kernels.mx_quant.cli import COMMANDS


def run(argv):
    args = npu_cli.build_parser(COMMANDS).parse_args(argv)
    return args.func(args, COMMANDS)


def test_run_grouped_doc_example(tmp_path, capsys):
    x = np.array([0, 8, 64, 512] * 2, np.float32).astype(ml_dtypes.bfloat16)
    x.tofile(tmp_path / "x.bin")
    np.array([4, 8], np.int32).tofile(tmp_path / "gi.bin")
    assert run(["run", "grouped_dynamic_mx_quant", "--x", str(tmp_path / "x.bin"), "--shape", "8,1",
                "--group-index", str(tmp_path / "gi.bin"), "--dst-type", "float8_e4m3fn",
                "--y", str(tmp_path / "y.bin"), "--mxscale", str(tmp_path / "s.bin"), "--trace"]) == 0
    assert np.fromfile(tmp_path / "y.bin", np.uint8).tolist() == [0x00, 0x48, 0x60, 0x78] * 2
    assert np.fromfile(tmp_path / "s.bin", np.uint8).tolist() == [128, 0, 128, 0]
    assert "tiling" in capsys.readouterr().out


def test_golden_then_run_dynamic(tmp_path):
    assert run(["golden", "dynamic_mx_quant", "--out", str(tmp_path), "--shape", "6,96", "--axis", "0",
                "--dst-type", "float4_e1m2", "--round-mode", "floor"]) == 0
    man = json.loads((tmp_path / "manifest.json").read_text())
    assert man["attrs"]["dst_type"] == "float4_e1m2"
    assert run(["run", "dynamic_mx_quant", "--x", str(tmp_path / "x.bin"), "--shape", "6,96", "--axis", "0",
                "--dst-type", "e1m2", "--round-mode", "floor", "--y", str(tmp_path / "y.bin"),
                "--mxscale", str(tmp_path / "s.bin")]) == 0
    assert np.array_equal(np.fromfile(tmp_path / "y.bin", np.uint8), np.fromfile(tmp_path / "golden_y.bin", np.uint8))
    assert np.array_equal(np.fromfile(tmp_path / "s.bin", np.uint8),
                          np.fromfile(tmp_path / "golden_mxscale.bin", np.uint8))


def test_golden_grouped_matches_run(tmp_path):
    assert run(["golden", "grouped_dynamic_mx_quant", "--out", str(tmp_path), "--shape", "130,64", "--groups", "3",
                "--x-dtype", "float16", "--dst-type", "float8_e5m2"]) == 0
    assert run(["run", "grouped_dynamic_mx_quant", "--x", str(tmp_path / "x.bin"), "--shape", "130,64",
                "--x-dtype", "float16", "--group-index", str(tmp_path / "group_index.bin"), "--dst-type", "23",
                "--y", str(tmp_path / "y.bin"), "--mxscale", str(tmp_path / "s.bin")]) == 0
    for out, ref in (("y.bin", "golden_y.bin"), ("s.bin", "golden_mxscale.bin")):
        assert np.array_equal(np.fromfile(tmp_path / out, np.uint8), np.fromfile(tmp_path / ref, np.uint8))
    x = np.fromfile(tmp_path / "x.bin", np.float16).reshape(130, 64)
    gi = np.fromfile(tmp_path / "group_index.bin", np.int32)
    y, s = golden.grouped_dynamic_mx_quant(x, gi, dst_type="float8_e5m2")
    assert np.array_equal(y.ravel(), np.fromfile(tmp_path / "y.bin", np.uint8))


def test_tiling_commands(capsys):
    assert run(["tiling", "grouped_dynamic_mx_quant", "--shape", "32,128", "--dst-type", "float8_e4m3fn",
                "--core-num", "64"]) == 0
    out = capsys.readouterr().out
    assert "64 64 128 32 128 64 128 1 1 256 991054117" in out                  # the UT vector
    assert run(["tiling", "dynamic_mx_quant", "--shape", "8192,7168"]) == 0
    assert "not reproduced" in capsys.readouterr().out
