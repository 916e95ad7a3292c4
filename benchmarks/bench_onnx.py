"""An ONNX model with the Kirin sample's GatherDequantInt8 node, run by npu_emu.onnx (onnx's ReferenceEvaluator with
npu-emu's node), at the sample's shape (V = 1024, E = 256, N = 30) and at an LLM vocabulary (V = 151936, E = 4096,
N = 8192). Baseline in the same run: the op called directly (npu_emu.ops.gather_dequant_int8); the tracker is the
ratio, i.e. what the ONNX runtime layer costs on top of the op. Needs the onnx package.
"""

import numpy as np

from benchmarks.common import best_seconds, use_threads

SHAPES = {"sample": (1024, 256, 30), "llm": (151936, 4096, 8192)}     # (V, E, N)


def _model(vocab, emb, num):
    from onnx import TensorProto, helper

    node = helper.make_node("GatherDequantInt8", ["table", "indices", "scale", "zero_point"], ["y"],
                            name="GatherDequantInt8")
    graph = helper.make_graph([node], "bench", [
        helper.make_tensor_value_info("table", TensorProto.UINT8, [vocab, emb]),
        helper.make_tensor_value_info("indices", TensorProto.INT32, [1, num]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT16, [vocab]),
        helper.make_tensor_value_info("zero_point", TensorProto.FLOAT16, [vocab])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, num, emb])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 6
    return model


class OnnxGatherDequantInt8:
    params = (list(SHAPES), [2])
    param_names = ["shape", "threads"]
    timeout = 900

    def setup(self, shape, threads):
        try:
            import npu_emu.onnx as npu_onnx
        except ImportError:
            raise NotImplementedError("the onnx package is not installed") from None
        use_threads(threads)
        vocab, emb, num = SHAPES[shape]
        rng = np.random.default_rng(5)
        self.feeds = {"table": np.frombuffer(rng.bytes(vocab * emb), np.uint8).reshape(vocab, emb),
                      "indices": rng.integers(0, vocab, (1, num)).astype(np.int32),
                      "scale": (rng.random(vocab) * 0.01 + 1e-4).astype(np.float16),
                      "zero_point": (rng.random(vocab) * 255).astype(np.float16)}
        self.evaluator = npu_onnx.evaluator(_model(vocab, emb, num))
        self.run_model()                              # compile / load from the numba cache outside the timing

    def run_model(self):
        return self.evaluator.run(["y"], self.feeds)

    def call_op(self):
        import npu_emu.ops as ops

        f = self.feeds
        return ops.gather_dequant_int8(f["table"], f["indices"], f["scale"], f["zero_point"])

    def time_onnx_model(self, shape, threads):
        self.run_model()

    def time_op_direct(self, shape, threads):
        self.call_op()

    def track_onnx_over_op(self, shape, threads):
        """Model run time / direct op call time: the runtime layer's overhead (1.0 = none)."""
        return best_seconds(self.run_model, 3) / best_seconds(self.call_op, 3)
    track_onnx_over_op.unit = "x direct op time"
