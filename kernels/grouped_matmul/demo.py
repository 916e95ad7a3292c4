"""The ``npu-emu demo`` case of GroupedMatmul (declared in op.py): the W8A8-dynamic MoE down projection, A8W8 with
per-channel x per-token scales -> bf16, at a production shape and a small one, checked bit for bit against the
independent golden on a sample of rows of every group."""

import numpy as np

from npu_emu.frontend.cases import Case, demo_collector, same_bits as _same_bits  # noqa: F401
from npu_emu.frontend.cases import bf16 as _bf16, public as _ops  # noqa: E402

CASES, builder = demo_collector()

_SAMPLE_ROWS = 8              # rows of each group the int64 golden recomputes


@builder("grouped_matmul_int8_pertoken_bf16", (8, 4096, 7168, 2048), (4, 64, 256, 128),
         "experts x routed tokens x k x n: A8W8, per-channel bf16 x per-token fp32 scales -> bf16 "
         "(npu_grouped_matmul, split_item 2)", tiny=(2, 16, 32, 16))
def _gmm(dims, rng):
    from npu_emu.kernels.grouped_matmul import golden

    e, m, k, n = dims
    fn = _ops("npu_grouped_matmul")
    x = rng.integers(-128, 128, (m, k), dtype=np.int16).astype(np.int8)
    w = rng.integers(-128, 128, (e, k, n), dtype=np.int16).astype(np.int8)
    s = _bf16(rng.uniform(1e-4, 1e-3, (e, n)).astype(np.float32))
    pt = rng.uniform(0.01, 0.1, m).astype(np.float32)
    counts = np.full(e, m // e, np.int64)
    counts[-1] += m - counts.sum()
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rows = np.concatenate([np.arange(r0, r0 + min(int(c), _SAMPLE_ROWS)) for r0, c in zip(starts, counts)])
    gl_s = np.array([min(int(c), _SAMPLE_ROWS) for c in counts], np.int64)

    def gold():
        return golden.grouped_matmul_quant(x[rows], w, gl_s, group_list_type=1, scale=s, per_token_scale=pt[rows],
                                           out_dtype="bfloat16")

    return Case("GroupedMatmul A8W8 per-token bf16", f"{e}x{m}x{k}x{n}",
                lambda: fn([x], [w], scale=[s], per_token_scale=[pt], group_list=counts, group_list_type=1,
                           split_item=2, group_type=0, output_dtype="bfloat16")[0],
                gold, lambda got, want: _same_bits(np.asarray(got)[rows], want),
                m * k + e * k * n + 2 * m * n + 2 * e * n + 4 * m, flops=2 * m * k * n, peak="int8_peak_ops",
                golden_fraction=rows.size / m)
