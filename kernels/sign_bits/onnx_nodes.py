"""ONNX nodes of SignBitsPack / SignBitsUnpack (declared in op.py): torch_npu's ONNX export of its own ops (domain
"npu"), run through npu_emu.ops."""

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

# torch_npu's exporter writes the unpack's output dtype as an int: 0 = float32, 1 = float16
# (Ascend/pytorch: torch_npu/onnx/wrapper_onnx_ops.py, NPUSignBitsUnpackOP).
_SIGN_BITS_DTYPES = {0: "float32", 1: "float16"}


def sign_bits_pack(x, size):
    import npu_emu.ops as ops

    return (ops.npu_sign_bits_pack(x, size),)


def sign_bits_unpack(x, size, dtype):
    import npu_emu.ops as ops

    if dtype not in _SIGN_BITS_DTYPES:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"attribute dtype={dtype} is not one torch_npu's exporter writes; "
                                                  f"use 0 (float32) or 1 (float16)")
    return (ops.npu_sign_bits_unpack(x, size, _SIGN_BITS_DTYPES[dtype]),)
