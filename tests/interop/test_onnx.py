"""ONNX models with Ascend custom nodes on onnx's ReferenceEvaluator (npu_emu.onnx, `npu-emu onnx run|check`).

Every model is built here with onnx.helper, in the form its producer writes: the Kirin sample's create_onnx.py
(GatherDequantInt8, default domain, opset 11, IR 6, V=1024 E=256 N=30) and torch_npu's exporter for the sign-bits
ops (domain npu, size_i / dtype_i attributes). Results are compared as bits with the plain-numpy goldens.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import npu_emu.onnx as npu_onnx  # noqa: E402
from npu_emu.errors import AclnnError  # noqa: E402
from npu_emu.kernels.gather_dequant_int8 import golden as gold_gather  # noqa: E402
from npu_emu.kernels.sign_bits import golden as gold_sign  # noqa: E402

V, E, N = 1024, 256, 30          # the sample's sizes (test/create_onnx.py: VOCAB, EMB_DIM, SEQ_LEN)


def _kirin_model(domain="", indices_type=TensorProto.INT32):
    node = helper.make_node("GatherDequantInt8", name="GatherDequantInt8", domain=domain,
                            inputs=["table", "indices", "scale", "zero_point"], outputs=["y"])
    graph = helper.make_graph([node], "test-model", [
        helper.make_tensor_value_info("table", TensorProto.UINT8, [V, E]),
        helper.make_tensor_value_info("indices", indices_type, [1, N]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT16, [V]),
        helper.make_tensor_value_info("zero_point", TensorProto.FLOAT16, [V])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, N, E])])
    opsets = [helper.make_opsetid("", 11)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, producer_name="onnx-example", opset_imports=opsets)
    model.ir_version = 6
    return model


@pytest.fixture(scope="module")
def case():
    return gold_gather.golden_case(V, E, N)      # the sample's gen_data.py inputs and its golden output


def _feeds(case):
    return {k: case[k] for k in ("table", "indices", "scale", "zero_point")}


def _bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.dtype.itemsize])


@pytest.mark.parametrize("domain", ["", "custom"])
def test_kirin_sample_model_is_bit_exact(case, domain):
    model = _kirin_model(domain)
    y = npu_onnx.run(model, _feeds(case))["y"]
    assert y.dtype == np.float16 and y.shape == (1, N, E)
    assert np.array_equal(_bits(y), _bits(case["output"]))
    rows = npu_onnx.check(model)
    assert [(r["node"], r["status"]) for r in rows] == [((domain + "::" if domain else "") + "GatherDequantInt8",
                                                         "emulated")]


def test_standard_nodes_around_the_custom_one(case):
    # int64 token ids -> Cast(INT32) -> GatherDequantInt8 -> MatMul with an fp16 weight: one evaluator run
    w = np.random.default_rng(3).standard_normal((E, 8)).astype(np.float16)
    nodes = [helper.make_node("Cast", ["ids"], ["indices"], name="cast", to=TensorProto.INT32),
             helper.make_node("GatherDequantInt8", ["table", "indices", "scale", "zero_point"], ["emb"],
                              name="gather"),
             helper.make_node("MatMul", ["emb", "w"], ["y"], name="proj")]
    graph = helper.make_graph(nodes, "mixed", [
        helper.make_tensor_value_info("table", TensorProto.UINT8, [V, E]),
        helper.make_tensor_value_info("ids", TensorProto.INT64, [1, N]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT16, [V]),
        helper.make_tensor_value_info("zero_point", TensorProto.FLOAT16, [V])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, N, 8])],
        initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    feeds = dict(_feeds(case), ids=case["indices"].astype(np.int64))
    del feeds["indices"]
    y = npu_onnx.run(model, feeds)["y"]
    # the reference MatMul is numpy's matmul of the two float16 arrays
    assert np.array_equal(_bits(y), _bits(np.matmul(case["output"], w)))
    assert [r["status"] for r in npu_onnx.check(model)] == ["standard", "emulated", "standard"]


def _sign_bits_model(n, size, dtype_code, with_opset=True):
    # as torch_npu's exporter writes them: g.op("npu::NPUSignBitsPack", self, size_i=size) and
    # g.op("npu::NPUSignBitsUnpack", inputs, size_i=size, dtype_i=dtype) with dtype 0 = float32, 1 = float16
    # (the packed (size, n) output is flattened by a standard Reshape: the unpack takes a 1-D tensor)
    nodes = [helper.make_node("NPUSignBitsPack", ["x"], ["packed"], name="pack", domain="npu", size=size),
             helper.make_node("Reshape", ["packed", "flat"], ["packed_1d"], name="flatten"),
             helper.make_node("NPUSignBitsUnpack", ["packed_1d"], ["y"], name="unpack", domain="npu", size=size,
                              dtype=dtype_code)]
    out_type = TensorProto.FLOAT16 if dtype_code == 1 else TensorProto.FLOAT
    packed = -(-n // 8)
    graph = helper.make_graph(nodes, "sign_bits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("packed", TensorProto.UINT8, [size, packed // size]),
                               helper.make_tensor_value_info("y", out_type, [size, 8 * packed // size])],
                              initializer=[numpy_helper.from_array(np.array([-1], np.int64), "flat")])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("npu", 1)] if with_opset else [])
    return helper.make_model(graph, opset_imports=opsets)


@pytest.mark.parametrize("dtype_code, out_dtype", [(0, np.float32), (1, np.float16)])
@pytest.mark.parametrize("with_opset", [True, False])
def test_torch_npu_sign_bits_nodes(dtype_code, out_dtype, with_opset):
    rng = np.random.default_rng(5)
    x = rng.standard_normal(100).astype(np.float32)
    x[:4] = [0.0, -0.0, np.inf, -np.inf]
    out = npu_onnx.run(_sign_bits_model(100, 1, dtype_code, with_opset), {"x": x})
    want_packed = gold_sign.sign_bits_pack(x, 1)
    assert np.array_equal(out["packed"], want_packed)
    want = gold_sign.sign_bits_unpack(want_packed, 1, "float16" if dtype_code else "float32")
    assert out["y"].dtype == out_dtype and np.array_equal(_bits(out["y"]), _bits(want))


def test_bad_inputs_name_the_node(case):
    feeds = _feeds(case)
    with pytest.raises(AclnnError) as e:                      # out-of-range token id
        npu_onnx.run(_kirin_model(), dict(feeds, indices=feeds["indices"] + V))
    assert e.value.status == 161002 and "node 'GatherDequantInt8'" in str(e.value)
    with pytest.raises(AclnnError) as e:                      # wrong index dtype (the model says so too)
        npu_onnx.run(_kirin_model(indices_type=TensorProto.FLOAT), dict(feeds, indices=feeds["indices"] * 1.0))
    assert e.value.status == 161002 and "node 'GatherDequantInt8'" in str(e.value)
    with pytest.raises(AclnnError) as e:                      # table of rank 1
        npu_onnx.run(_kirin_model(), dict(feeds, table=feeds["table"].reshape(-1)))
    assert e.value.status == 161002 and "table" in str(e.value)
    with pytest.raises(AclnnError) as e:                      # unpack dtype code torch_npu never writes
        npu_onnx.run(_sign_bits_model(16, 1, 7), {"x": np.ones(16, np.float32)})
    assert "node 'unpack'" in str(e.value) and "dtype=7" in str(e.value)


def test_missing_attribute_and_unknown_nodes():
    model = _sign_bits_model(16, 1, 0)
    del model.graph.node[0].attribute[:]                       # pack without its size
    with pytest.raises(AclnnError, match="node 'pack'.*attribute 'size' is missing"):
        npu_onnx.run(model, {"x": np.ones(16, np.float32)})
    model = _sign_bits_model(16, 1, 0)
    model.graph.node[2].op_type = "NPUSomethingElse"
    rows = npu_onnx.check(model)
    assert [r["status"] for r in rows] == ["emulated", "standard", "unsupported"]
    with pytest.raises(AclnnError, match="node 'unpack' .*neither an npu-emu node nor a standard"):
        npu_onnx.run(model, {"x": np.ones(16, np.float32)})
    with pytest.raises(AclnnError, match="not an ONNX model"):
        npu_onnx.load(b"not a model")


# --- the command line ---------------------------------------------------------------------------------------------

def _npu_emu():
    exe = shutil.which("npu-emu", path=os.path.dirname(sys.executable)) or shutil.which("npu-emu")
    return [exe] if exe else [sys.executable, "-m", "npu_emu.cli"]


def test_cli_check_and_run(case, tmp_path):
    path = tmp_path / "GatherDequantInt8.onnx"
    onnx.save(_kirin_model(), str(path))
    res = subprocess.run(_npu_emu() + ["onnx", "check", str(path)], capture_output=True, text=True, cwd=tmp_path,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    assert "GatherDequantInt8" in res.stdout and "emulated" in res.stdout and "1 node: 1 emulated by npu-emu" in res.stdout
    args = []
    for name in ("table", "indices", "scale", "zero_point"):
        case[name].tofile(tmp_path / f"{name}.bin")
        args += ["--input", f"{name}={tmp_path / (name + '.bin')}"]
    out = tmp_path / "runs" / "out"               # not there yet: made (with its parent), as other tools do
    res = subprocess.run(_npu_emu() + ["onnx", "run", str(path), *args, "--output", str(out)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr
    y = np.fromfile(out / "y.bin", np.float16)
    assert np.array_equal(_bits(y), _bits(case["output"]).reshape(-1))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["outputs"]["y"] == {"file": "y.bin", "shape": [1, N, E], "dtype": "float16"}
    # a bad input is the op's error with the node's name, exit status 2
    (case["indices"] + V).tofile(tmp_path / "indices.bin")
    res = subprocess.run(_npu_emu() + ["onnx", "run", str(path), *args, "--output", str(out)], capture_output=True,
                         text=True, cwd=tmp_path, timeout=600)
    assert res.returncode == 2 and "error 161002" in res.stderr and "node 'GatherDequantInt8'" in res.stderr
    # ... and creates no folder; --output naming a file is refused before the model runs
    res = subprocess.run(_npu_emu() + ["onnx", "run", str(path), *args, "--output", str(tmp_path / "bad")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert res.returncode == 2 and not (tmp_path / "bad").exists()
    res = subprocess.run(_npu_emu() + ["onnx", "run", str(path), *args, "--output", str(out / "y.bin")],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert res.returncode != 0 and "is a file" in res.stderr
