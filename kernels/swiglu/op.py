"""SwiGlu: the declaration every front end reads (docs/contributing/writing_a_kernel.md)."""

from npu_emu.frontend.registry import CFunction, Op, TorchOp

_API = "npu_emu.kernels.swiglu.api"
_TORCH = "npu_emu.kernels.swiglu.torch_ops"

OP = Op(
    name="swiglu",
    ops={"npu_swiglu": f"{_API}:npu_swiglu"},
    aclnn={name: f"{_API}:{name}" for name in ("aclnnSwiGlu", "aclnnSwiGluGetWorkspaceSize")},
    torch=(
        TorchOp("npu_swiglu(Tensor input, int dim=-1) -> Tensor", f"{_TORCH}:npu_swiglu",
                f"{_TORCH}:npu_swiglu_fake"),
    ),
    cabi=(CFunction("aclnnSwiGlu", "aclnn_swi_glu.h", ("x:tensor", "dim:int64", "out:out")),),
    dask={"swiglu": "npu_emu.kernels.swiglu.dask_chunks:swiglu"},
    cli="npu_emu.kernels.swiglu.cli",
    demo="npu_emu.kernels.swiglu.demo:CASES",
    configs="npu_emu.kernels.swiglu.configs:CONFIGS",
    golden="npu_emu.kernels.swiglu.golden",
    compile_seconds=60,
)
