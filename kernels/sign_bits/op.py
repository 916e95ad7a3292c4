"""SignBitsUnpack / SignBitsPack: the declaration every front end reads (docs/contributing/writing_a_kernel.md)."""

from npu_emu.frontend.registry import CFunction, OnnxNode, Op, TorchOp

_API = "npu_emu.kernels.sign_bits.api"
_TORCH = "npu_emu.kernels.sign_bits.torch_ops"
_ONNX = "npu_emu.kernels.sign_bits.onnx_nodes"

OP = Op(
    name="sign_bits",
    ops={name: f"{_API}:{name}" for name in ("npu_sign_bits_pack", "npu_sign_bits_unpack")},
    aclnn={name: f"{_API}:{name}" for name in (
        "aclnnSignBitsPack", "aclnnSignBitsPackGetWorkspaceSize",
        "aclnnSignBitsUnpack", "aclnnSignBitsUnpackGetWorkspaceSize")},
    torch=(
        # torch_npu's code generator renames the yaml's ``self`` to ``input`` (a keyword torch reserves for methods)
        TorchOp("npu_sign_bits_pack(Tensor input, int size) -> Tensor",
                f"{_TORCH}:npu_sign_bits_pack", f"{_TORCH}:npu_sign_bits_pack_fake"),
        TorchOp("npu_sign_bits_unpack(Tensor input, int size, ScalarType dtype) -> Tensor",
                f"{_TORCH}:npu_sign_bits_unpack", f"{_TORCH}:npu_sign_bits_unpack_fake"),
    ),
    cabi=(
        CFunction("aclnnSignBitsUnpack", "aclnn_sign_bits_unpack.h",
                  ("self:tensor", "size:int64", "dtype:dtype", "out:outm")),
        CFunction("aclnnSignBitsPack", "aclnn_sign_bits_pack.h", ("self:tensor", "size:int64", "out:outm")),
    ),
    cli="npu_emu.kernels.sign_bits.cli",
    configs="npu_emu.kernels.sign_bits.configs:CONFIGS",
    demo="npu_emu.kernels.sign_bits.demo:CASES",
    golden="npu_emu.kernels.sign_bits.golden",
    onnx=(
        # torch_npu's ONNX export of its own ops (domain "npu")
        OnnxNode("NPUSignBitsPack", "npu", ("self",), f"{_ONNX}:sign_bits_pack", "npu_sign_bits_pack",
                 (("size", None),)),
        OnnxNode("NPUSignBitsUnpack", "npu", ("input",), f"{_ONNX}:sign_bits_unpack", "npu_sign_bits_unpack",
                 (("size", None), ("dtype", None))),
    ),
    dask={name: f"npu_emu.kernels.sign_bits.dask_chunks:{name}" for name in ("sign_bits_unpack", "sign_bits_pack")},
    compile_seconds=36,
)
