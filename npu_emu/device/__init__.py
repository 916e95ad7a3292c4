"""The device model: SoC facts (``platforms``), the TilingData struct (``tiling_data``), access patterns and tiling
validation (``validate``), the per-core launch (``launch``), the bounded memo of what a call computes from its
shapes alone (``memo``), and the numba plumbing every kernel shares (``jit_options``, ``specialize``,
``cache_lock``, ``shipped_kernels``). Below the op folders' kernels; imports no front end."""
