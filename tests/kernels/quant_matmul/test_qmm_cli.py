"""The CLI module (kernels/quant_matmul/cli.py) through npu_emu.cli's parser: golden -> run round trip, tiling."""

import json

import numpy as np

from npu_emu import cli as npu_cli
from npu_emu.kernels.quant_matmul import cli as qmm_cli


def _main(argv):
    parser = npu_cli.build_parser(qmm_cli.COMMANDS)
    args = parser.parse_args(argv)
    return args.func(args, qmm_cli.COMMANDS)


def _roundtrip(tmp_path, mode):
    assert _main(["golden", "quant_matmul", "--out", str(tmp_path), "--mode", mode, "--m", "8", "--n", "24",
                  "--k", "40"]) == 0
    man = json.loads((tmp_path / "manifest.json").read_text())
    args = ["run", "quant_matmul", "--output", str(tmp_path / "y.bin"), "--output-dtype", man["attrs"]["output_dtype"]]
    for key, info in man["inputs"].items():
        flag = key.replace("_", "-")
        args += [f"--{flag}", str(tmp_path / info["file"]), f"--{flag}-shape", ",".join(map(str, info["shape"])),
                 f"--{flag}-dtype", info["dtype"]]
    assert _main(args) == 0
    out = man["outputs"]["y"]
    dt = {"float16": "uint16", "bfloat16": "uint16", "int8": "int8"}[man["attrs"]["output_dtype"]]
    got = np.fromfile(tmp_path / "y.bin", dt)
    want = np.fromfile(tmp_path / out["file"], dt)
    assert got.size == 8 * 24 and np.array_equal(got, want)


def test_golden_run_roundtrip_tc(tmp_path):
    _roundtrip(tmp_path, "T-C")


def test_golden_run_roundtrip_kc(tmp_path):
    _roundtrip(tmp_path, "K-C")


def test_golden_run_roundtrip_requant(tmp_path):
    _roundtrip(tmp_path, "requant")


def test_tiling_and_tqp(tmp_path, capsys):
    assert _main(["tiling", "quant_matmul", "--m", "4096", "--n", "4096", "--k", "4096", "--soc", "ascend950pr"]) == 0
    text = capsys.readouterr().out
    assert "baseM" in text and "blockDim 28" in text
    np.array([0.1], np.float32).tofile(tmp_path / "s.bin")
    assert _main(["run", "trans_quant_param", "--scale", str(tmp_path / "s.bin"), "--output",
                  str(tmp_path / "w.bin")]) == 0
    assert int(np.fromfile(tmp_path / "w.bin", np.uint64)[0]) == 0x0000_4000_3DCC_C000


def test_sparse4to2_commands(tmp_path):
    # TV-J weight, then TV-S1 end to end through the .bin files: bf16 19.25 = 0x419A
    w = np.array([[0, 3, 0, -2, 5, 0, 0, 0, 0, 0, 7, 1, -4, 0, 0, 9]], np.int8)
    w.tofile(tmp_path / "w.bin")
    assert _main(["run", "trans_sparse4to2_para", "--weight", str(tmp_path / "w.bin"), "--weight-shape", "1,16",
                  "--output-sparse", str(tmp_path / "s.bin"), "--output-index", str(tmp_path / "i.bin")]) == 0
    assert np.fromfile(tmp_path / "i.bin", np.uint8)[:2].tolist() == [0x09, 0x8A]
    np.ones(16, np.int8).tofile(tmp_path / "x.bin")
    np.array([2.0], np.float32).tofile(tmp_path / "xs.bin")
    np.array([0.5], np.float32).tofile(tmp_path / "ws.bin")
    np.array([0x3E80], np.uint16).tofile(tmp_path / "b.bin")          # bf16 0.25
    assert _main(["run", "sparse4to2_quant_matmul", "--x", str(tmp_path / "x.bin"), "--x-shape", "1,16",
                  "--sparse-weight", str(tmp_path / "s.bin"), "--index", str(tmp_path / "i.bin"),
                  "--x-scale", str(tmp_path / "xs.bin"), "--sparse-weight-scale", str(tmp_path / "ws.bin"),
                  "--bias", str(tmp_path / "b.bin"), "--output", str(tmp_path / "y.bin")]) == 0
    assert np.fromfile(tmp_path / "y.bin", np.uint16).tolist() == [0x419A]
