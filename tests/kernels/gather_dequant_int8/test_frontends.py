"""Front ends of GatherDequantInt8: status codes through the ops function, the aclnn pair, the CLI verbs."""

import hashlib
import json

import numpy as np
import pytest

from npu_emu.cli import build_parser
from npu_emu.errors import AclnnError
from npu_emu.frontend.core import recent_error
from npu_emu.kernels.gather_dequant_int8 import golden as golden
from npu_emu.kernels.gather_dequant_int8 import api, cli

V, E = 4, 32


def args(**over):
    a = {"table": np.arange(V * E, dtype=np.uint8).reshape(V, E), "indices": np.array([3, 0], np.int32),
         "scale": np.full(V, 0.5, np.float16), "zero_point": np.full(V, 3.0, np.float16)}
    a.update(over)
    return a


def want(a):
    return golden.gather_dequant_int8(a["table"], a["indices"], a["scale"], a["zero_point"]).view(np.uint16)


# ---- ops ---------------------------------------------------------------------------------------------------

def test_a_reused_output_is_written_whole(cache_every_output):
    """A second call gets the first call's freed output (tests/conftest.py): every element is written again."""
    y = api.gather_dequant_int8(**args(indices=np.array([1, 2], np.int32)))
    where = y.ctypes.data
    del y
    a = args()
    y = api.gather_dequant_int8(**a)
    assert y.ctypes.data == where
    np.testing.assert_array_equal(y.view(np.uint16), want(a))


@pytest.mark.parametrize("over, kw, status, words", [
    ({"scale": None}, {}, 161001, "scale is None"),
    ({"indices": np.array([1, 4], np.int32)}, {}, 161002, "index 4 at position 1 is outside [0, 4)"),
    ({"indices": np.array([-1], np.int32)}, {}, 161002, "index -1 at position 0"),
    ({"table": np.zeros((V, 48), np.uint8)}, {}, 161002, "embedding dim 48 must be a multiple of 32"),
    ({"zero_point": np.zeros(V - 1, np.float16)}, {}, 161002, "zero_point must have shape (4,) or (4, 1)"),
    ({}, {"fp16_subnormal": "ftz"}, 161002, "fp16_subnormal='ftz'"),
    ({}, {"soc": "ascend910b2"}, 561003, "no kernel for ascend910b2"),
    ({}, {"soc": "nope"}, 161002, "unknown soc"),
    ({}, {"ub_size": 351}, 161002, "needs 352 bytes of UB"),
    ({}, {"core_num": 0}, 561002, "core_num=0"),
])
def test_ops_rejections(over, kw, status, words):
    with pytest.raises(AclnnError) as ei:
        api.gather_dequant_int8(**args(**over), **kw)
    assert ei.value.status == status and words in ei.value.message


def test_ops_ub_size_that_fits():
    # footprint for N = 2, V = 4, E = 32: 32 + 32 + 32 + 2*32 + 2*64 + 64 = 352 bytes
    y, tr = api.gather_dequant_int8(**args(), ub_size=352, faithful=True, trace=True)
    assert tr.ub_bytes_per_core == 352 and np.array_equal(y.view(np.uint16), want(args()))
    with pytest.raises(AclnnError):
        api.gather_dequant_int8(**args(), ub_size=351)


# ---- aclnn -------------------------------------------------------------------------------------------------

def test_aclnn_pair():
    a = args()
    out = np.full((2, E), np.nan, np.float16)
    status, ws, ex = api.aclnnGatherDequantInt8GetWorkspaceSize(a["table"], a["indices"], a["scale"],
                                                                a["zero_point"], out)
    assert (status, ws) == (0, 0) and ex is not None
    assert np.isnan(out).all()                                        # nothing written before phase 2
    assert api.aclnnGatherDequantInt8(None, ws, ex) == 0
    assert np.array_equal(out.view(np.uint16), want(a))
    assert api.aclnnGatherDequantInt8(None, ws, ex) != 0              # an executor runs once
    assert "already run" in recent_error()


def test_aclnn_uint16_out_and_flush():
    a = args(scale=np.full(V, 2.0 ** -20, np.float16), zero_point=np.zeros(V, np.float16))
    out = np.zeros((2, E), np.uint16)
    status, ws, ex = api.aclnnGatherDequantInt8GetWorkspaceSize(a["table"], a["indices"], a["scale"],
                                                                a["zero_point"], out, fp16_subnormal="flush")
    assert status == 0 and api.aclnnGatherDequantInt8(None, ws, ex) == 0
    # q * 2^-20 is subnormal for q < 16 (below 2^-14): flushed to +0; q >= 16 stays normal
    flushed = golden.gather_dequant_int8(a["table"], a["indices"], a["scale"], a["zero_point"],
                                         fp16_subnormal="flush").view(np.uint16)
    assert np.array_equal(out, flushed) and not np.array_equal(out, want(a))


@pytest.mark.parametrize("which, status, words", [
    ("table", 161001, "table is None"),
    ("out", 161001, "out is None"),
    ("out_dtype", 161002, "out dtype must be float16"),
    ("out_shape", 161002, "out must have shape indices.shape + (E,) = (2, 32)"),
    ("index", 161002, "index 7 at position 0"),
])
def test_aclnn_statuses(which, status, words):
    a = args()
    out = np.zeros((2, E), np.float16)
    if which == "table":
        a["table"] = None
    elif which == "out":
        out = None
    elif which == "out_dtype":
        out = np.zeros((2, E), np.float32)
    elif which == "out_shape":
        out = np.zeros((2, E + 32), np.float16)
    else:
        a["indices"] = np.array([7, 0], np.int32)
    st, ws, ex = api.aclnnGatherDequantInt8GetWorkspaceSize(a["table"], a["indices"], a["scale"],
                                                            a["zero_point"], out)
    assert (st, ws, ex) == (status, 0, None)
    assert words in recent_error()


def test_aclnn_empty_indices():
    a = args(indices=np.zeros((0, 3), np.int32))
    out = np.zeros((0, 3, E), np.float16)
    st, ws, ex = api.aclnnGatherDequantInt8GetWorkspaceSize(a["table"], a["indices"], a["scale"],
                                                            a["zero_point"], out)
    assert (st, ws) == (0, 0) and api.aclnnGatherDequantInt8(None, ws, ex) == 0


# ---- CLI ---------------------------------------------------------------------------------------------------

def run_cli(argv):
    parser = build_parser(cli.COMMANDS)
    ns = parser.parse_args(argv)
    return ns.func(ns, cli.COMMANDS)


def test_cli_golden_then_run(tmp_path, capsys):
    d = tmp_path / "case"
    assert run_cli(["golden", "gather_dequant_int8", "--out", str(d)]) == 0
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["inputs"]["table"] == {"file": "table.bin", "shape": [1024, 256], "dtype": "uint8"}
    assert manifest["inputs"]["indices"]["shape"] == [1, 30] and manifest["inputs"]["indices"]["dtype"] == "int32"
    assert manifest["outputs"]["output"] == {"file": "output.bin", "shape": [1, 30, 256], "dtype": "float16"}
    # the same bytes as the sample's gen_data.py (docs/ops/gather_dequant_int8.md §6.3 hashes)
    assert hashlib.sha256((d / "output.bin").read_bytes()).hexdigest() == \
        "65f09e86818efe96ede90c84034e637a5b4998398ed78a2b9b4b6a3e0e6e52fc"
    assert hashlib.sha256((d / "table.bin").read_bytes()).hexdigest() == \
        "b0f42d80b1fcbea6c7f96563225b3c63a47dbef447607310710246134ae6cc47"

    y = tmp_path / "y.bin"
    rc = run_cli(["run", "gather_dequant_int8", "--table", str(d / "table.bin"), "--indices",
                  str(d / "indices.bin"), "--scale", str(d / "scale.bin"), "--zero-point", str(d / "zero_point.bin"),
                  "--vocab", "1024", "--emb-dim", "256", "--indices-shape", "1,30", "--output", str(y), "--trace"])
    assert rc == 0
    assert y.read_bytes() == (d / "output.bin").read_bytes()
    text = capsys.readouterr().out
    assert "shape (1, 30, 256)" in text and "'numIndices': 30" in text


def test_cli_golden_options(tmp_path):
    d = tmp_path / "small"
    assert run_cli(["golden", "gather_dequant_int8", "--out", str(d), "--vocab", "64", "--emb-dim", "32",
                    "--num-indices", "5", "--seed", "1"]) == 0
    y = np.fromfile(d / "output.bin", np.float16)
    case = golden.golden_case(64, 32, 5, 1)
    assert np.array_equal(y.view(np.uint16), case["output"].reshape(-1).view(np.uint16))


def test_cli_run_rejects_bad_emb_dim(tmp_path):
    # a table file of 4 x 48 bytes: the op error comes back as AclnnError (npu_emu.cli.main prints it)
    for name, arr in (("t", np.zeros((4, 48), np.uint8)), ("i", np.array([1], np.int32)),
                      ("s", np.ones(4, np.float16)), ("z", np.zeros(4, np.float16))):
        arr.tofile(tmp_path / f"{name}.bin")
    with pytest.raises(AclnnError) as ei:
        run_cli(["run", "gather_dequant_int8", "--table", str(tmp_path / "t.bin"), "--indices",
                 str(tmp_path / "i.bin"), "--scale", str(tmp_path / "s.bin"), "--zero-point",
                 str(tmp_path / "z.bin"), "--vocab", "4", "--emb-dim", "48", "--output", str(tmp_path / "y.bin")])
    assert ei.value.status == 161002 and not (tmp_path / "y.bin").exists()


def test_cli_tiling(capsys):
    assert run_cli(["tiling", "gather_dequant_int8", "--indices-shape", "1,7", "--core-num", "3"]) == 0
    text = capsys.readouterr().out
    assert "numIndices" in text and "blockDim 3" in text and "07000000" in text
    assert "inQueueRow@" in text
    assert [line.split() for line in text.splitlines()[-3:]] == [["0", "0", "3"], ["1", "3", "2"], ["2", "5", "2"]]
