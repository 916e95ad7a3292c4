"""Per-op kernel packages (installed as ``npu_emu.kernels``): tiling.py = op_host, kernel.py = op_kernel."""
