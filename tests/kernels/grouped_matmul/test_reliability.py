"""GroupedMatmul under the reliability contracts of tests/reliability (kept beside the op): bit-identical for 1 and 2
numba threads and across every core count and a user tiling, and the memory guard refusing before it allocates
(npu_grouped_matmul raises 361001, the aclnn pair returns it with out untouched)."""

import dataclasses
import re

import ml_dtypes
import numba
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.frontend import core as frontend
from npu_emu.kernels.grouped_matmul import api, tiling

RNG = np.random.default_rng(20261203)
E, M, K, N = 5, 300, 96, 520                 # several blocks per group and rows per core, 2 column blocks
X = RNG.integers(-128, 128, (M, K), dtype=np.int16).astype(np.int8)
W = RNG.integers(-128, 128, (E, K, N), dtype=np.int16).astype(np.int8)
S = RNG.uniform(1e-3, 1e-2, (E, N)).astype(ml_dtypes.bfloat16)
PT = RNG.uniform(1e-2, 1e-1, M).astype(np.float32)
GL = np.array([40, 40, 170, 240, 290], np.int64)


def _call(**kw):
    return api.npu_grouped_matmul([X], [W], scale=[S], per_token_scale=[PT], group_list=GL, split_item=3,
                                  group_type=0, output_dtype="bfloat16", **kw)[0].view(np.uint16)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs NUMBA_NUM_THREADS >= 2")
def test_bit_identical_across_threads_cores_and_a_user_tiling():
    s = tiling.GmmShape(group_num=E, m=M, k=K, n=N, x_dtype="int8", w_dtype="int8", y_dtype="bfloat16",
                        scale_dtype="bfloat16", per_token=True)
    td = tiling.grouped_matmul_tiling(s).tiling
    user = dataclasses.replace(td, gmmBaseParams=dataclasses.replace(td.gmmBaseParams, coreNum=3),
                               mmTilingData=dataclasses.replace(td.mmTilingData, baseM=32, baseN=64))
    before = numba.get_num_threads()
    ref = None
    try:
        for kw in (dict(), dict(core_num=1), dict(core_num=7), dict(tiling=user)):
            for t in (1, 2):
                numba.set_num_threads(t)
                got = _call(**kw)
                if ref is None:
                    ref = got
                assert np.array_equal(got, ref), f"{kw}, {t} thread(s)"
    finally:
        numba.set_num_threads(before)


@pytest.fixture
def fresh_limit():
    old = frontend._memory_limit
    yield
    frontend.set_memory_limit(old)


def test_memory_guard_refuses_before_allocating(fresh_limit):
    cap = M * N * 2 - 1                      # below the output alone
    frontend.set_memory_limit(cap)
    with pytest.raises(AclnnError) as e:
        _call()
    assert e.value.status == 361001 and f"{cap:,} bytes" in e.value.message
    assert int(re.search(r"needs ([\d,]+) bytes", e.value.message).group(1).replace(",", "")) > cap
    out = np.full((M, N), 7, np.uint16).view(ml_dtypes.bfloat16)
    st, size, ex = api.aclnnGroupedMatmulV4GetWorkspaceSize([X], [W], None, [S], None, None, None, [PT], GL, None, None,
                                                            None, 3, 0, 0, 0, [out])
    if st == 0:                              # the workspace phase may not allocate: the launch must refuse then
        st = api.aclnnGroupedMatmulV4(None, size, ex)
    assert st == 361001 and (out.view(np.uint16) == 7).all()
    frontend.set_memory_limit(None)
    assert np.array_equal(_call(), _call())
