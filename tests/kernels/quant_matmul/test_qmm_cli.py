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
