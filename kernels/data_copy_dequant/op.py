"""The enhanced DataCopy CO1 -> CO2 with dequantisation: the declaration every front end reads."""

from npu_emu.frontend.registry import Op, TorchOp

_TORCH = "npu_emu.kernels.data_copy_dequant.torch_ops"

OP = Op(
    name="data_copy_dequant",
    ops={"data_copy_dequant": "npu_emu.kernels.data_copy_dequant.api:data_copy_dequant"},
    torch=(
        TorchOp('data_copy_dequant(Tensor acc, int deq_value, *, str mode="DEQ8", bool is_relu=False) -> Tensor',
                f"{_TORCH}:data_copy_dequant", f"{_TORCH}:data_copy_dequant_fake", torch_npu=False),
    ),
    cli="npu_emu.kernels.data_copy_dequant.cli",
    configs="npu_emu.kernels.data_copy_dequant.configs:CONFIGS",
    demo="npu_emu.kernels.data_copy_dequant.demo:CASES",
    golden="npu_emu.kernels.data_copy_dequant.golden",
    dask={"data_copy_dequant": "npu_emu.kernels.data_copy_dequant.dask_chunks:data_copy_dequant"},
    compile_seconds=7,
)
