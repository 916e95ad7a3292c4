"""transposeWeight / transposeX (CheckTransposeStatus): read from the caller's view strides, as the device reads
them; a transposed weight gives the same bits and the host tiling of the transposed kernel
(docs/ops/grouped_matmul.md §2.4)."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu import AclnnError
from npu_emu.kernels.grouped_matmul import api, api_forms, golden
from npu_emu.kernels.quant_matmul.api import NzWeight

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(5)
E, M, K, N = 3, 50, 64, 48
X = RNG.integers(-128, 128, (M, K), dtype=np.int8)
W_NK = RNG.integers(-128, 128, (E, N, K), dtype=np.int8)          # the stored (E, N, K) matrix
W_T = W_NK.transpose(0, 2, 1)                                      # its (E, K, N) view: transposed
W = np.ascontiguousarray(W_T)                                      # the same values, not transposed
SC = RNG.uniform(1e-3, 1e-2, (E, N)).astype(BF16)
PT = RNG.uniform(1e-2, 1e-1, M).astype(np.float32)
GL = np.array([10, 10, 45], np.int64)


def gmm(x, w, **kw):
    return api.npu_grouped_matmul(x if isinstance(x, list) else [x], w if isinstance(w, list) else [w],
                                  split_item=3, group_type=0, group_list=GL, **kw)


def test_transposed_last_two_follows_the_strides():
    assert api_forms.transposed_last_two(W_T) and not api_forms.transposed_last_two(W)
    assert not api_forms.transposed_last_two(W_NK[:, :, :32].transpose(0, 2, 1))   # a strided slice: not dense
    assert api_forms.transposed_last_two(np.zeros((2, 1, 1)))                       # (.., 1, 1): always
    assert not api_forms.special_transpose([np.zeros((2, 1, 1))])                   # ... except for the special rule
    assert api_forms.transposed_last_two(NzWeight.from_nd(W_NK, transposed=True))


def test_transposed_weight_gives_the_same_bits_and_the_transposed_tiling():
    kw = dict(scale=[SC], per_token_scale=[PT], output_dtype="bfloat16", trace=True)
    (y_t,), tr_t = gmm(X, W_T, **kw)
    (y,), tr = gmm(X, W, **kw)
    want = golden.grouped_matmul_quant(X, W, GL, scale=SC, per_token_scale=PT, out_dtype="bfloat16")
    assert np.array_equal(y_t.view(np.uint16), want.view(np.uint16))
    assert np.array_equal(y.view(np.uint16), want.view(np.uint16))
    # DivideUbAndSetWorkspace: a transposed weight gets ubBaseK 256 (the untransposed one ubBaseK = vBaseM)
    assert tr_t.tiling_data["gmmBaseParams"]["ubBaseK"] == 256
    assert tr.tiling_data["gmmBaseParams"]["ubBaseK"] != 256


def test_torch_transposed_weight():
    torch = pytest.importorskip("torch")
    wt = torch.from_numpy(W_NK).transpose(1, 2)
    y = gmm(torch.from_numpy(X), wt, output_dtype=torch.int32)[0]
    assert np.array_equal(y.numpy(), golden.grouped_matmul_quant(X, W, GL, out_dtype="int32"))
    with pytest.raises(AclnnError) as ei:                                           # x transposed, group_type 0
        gmm(torch.from_numpy(np.ascontiguousarray(X.T)).T, torch.from_numpy(W), output_dtype=torch.int32)
    assert ei.value.status == 161002 and "x can not be transposed" in str(ei.value)


def test_transposed_nz_weight_reads_the_stored_nk_matrix():
    """NzWeight(..., transposed=True) stores (E, N, K); the values are its transpose. int8 NZ alignment is
    reversed for a transposed weight: k % 32, n % 16 (K = 64, N = 48 pass; N = 48 would fail untransposed)."""
    nz = NzWeight.from_nd(W_NK, transposed=True)
    y = gmm(X, nz, scale=[SC], per_token_scale=[PT], output_dtype="bfloat16")[0]
    want = golden.grouped_matmul_quant(X, W, GL, scale=SC, per_token_scale=PT, out_dtype="bfloat16")
    assert np.array_equal(y.view(np.uint16), want.view(np.uint16))
    with pytest.raises(AclnnError) as ei:
        gmm(X, NzWeight.from_nd(W), scale=[SC], per_token_scale=[PT], output_dtype="bfloat16")
    assert ei.value.status == 161002 and "FRACTAL_NZ" in str(ei.value)


@pytest.mark.parametrize("x,w,words", [
    (np.ascontiguousarray(X.T).T, W, "When groupType is 0, x can not be transposed."),
    (np.ascontiguousarray(X.T).T, W_T, "x and weight can not be transposed at the same time."),
    (X, [W_T[0], W[1], W[2]], "The transpose state must be the same for each tensor in weight."),
    (X, [W[0], W_T[1], W[2]], "The transpose state must be the same for each tensor in weight."),
])
def test_transpose_checks(x, w, words):
    with pytest.raises(AclnnError) as ei:
        gmm(x, w, output_dtype="int32")
    assert ei.value.status == 161002 and words in str(ei.value)


def test_separated_transposed_weights_give_the_same_bits():
    y = gmm(X, [W_T[0], W_T[1], W_T[2]], output_dtype="int32")[0]
    assert np.array_equal(y, golden.grouped_matmul_quant(X, W, GL, out_dtype="int32"))


def test_no_split_transposed_x_is_refused():
    with pytest.raises(AclnnError) as ei:
        api.npu_grouped_matmul([np.ascontiguousarray(X[:8].T).T], [W[0]], split_item=0, group_type=-1,
                               output_dtype="int32")
    assert ei.value.status == 161002 and "all separated, x can not be transposed" in str(ei.value)


def test_antiquant_with_a_transposed_weight_is_refused():
    x = RNG.standard_normal((M, K)).astype(np.float16)
    s = np.ones((E, N), np.float16)
    with pytest.raises(AclnnError) as ei:
        gmm(x, W_T, antiquant_scale=[s], antiquant_offset=[s])
    assert ei.value.status == 161002 and "transposed weight" in str(ei.value)
