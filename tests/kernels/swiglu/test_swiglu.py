"""npu_swiglu / aclnnSwiGlu: bit-exact against the numpy golden under each Exp / Div model, both kernels, the
tiling, the checks, the aclnn pair, torch tensors, user tiling."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.kernels.swiglu import golden as G
from npu_emu.kernels.swiglu import tiling as T
from npu_emu.kernels.swiglu.api import aclnnSwiGlu, aclnnSwiGluGetWorkspaceSize, npu_swiglu

DT = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
UV = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16}


def _x(shape, dt, seed=0, scale=4.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(DT[dt])


def _same(a, b, dt):
    assert a.shape == b.shape and a.dtype == b.dtype
    assert np.array_equal(a.view(UV[dt]), b.view(UV[dt]))


CASES = [
    ("bfloat16", (4, 6, 64), -1, {}),                                 # 32B-aligned, one core
    ("bfloat16", (33, 600), -1, dict(core_num=5, ub_size=4096)),      # not 32B-aligned (300), several tiles/core
    ("float16", (4, 70), 1, dict(core_num=3, ub_size=2048)),           # odd half (35) columns
    ("float32", (3, 8, 10), 1, {}),                                    # dim in the middle: tail split
    ("float32", (16, 520), -1, dict(core_num=4, ub_size=3072)),        # tail rows and tail columns
    ("bfloat16", (2, 4, 3), 0, {}),                                    # dim 0: rowLen 1
]


@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("dt,shape,dim,kw", CASES)
def test_bit_exact_against_golden(dt, shape, dim, kw, faithful):
    x = _x(shape, dt)
    _same(npu_swiglu(x, dim, faithful=faithful, **kw), G.swiglu(x, dim), dt)


def test_a_reused_output_is_written_whole(cache_every_output):
    """A second call gets the first call's freed output (tests/conftest.py): every element is written again."""
    y = npu_swiglu(_x((4, 6, 64), "bfloat16", seed=1))
    where = y.ctypes.data
    del y
    x = _x((4, 6, 64), "bfloat16", seed=2)
    y = npu_swiglu(x)
    assert y.ctypes.data == where
    _same(y, G.swiglu(x, -1), "bfloat16")


@pytest.mark.parametrize("exp_model", ["correctly_rounded", "exp2"])
@pytest.mark.parametrize("div_model", ["ieee", "reciprocal"])
@pytest.mark.parametrize("dt", ["bfloat16", "float32", "float16"])
def test_each_model_pair_is_bit_exact(dt, exp_model, div_model):
    x = _x((6, 96), dt, seed=3, scale=6.0)
    y = npu_swiglu(x, exp_model=exp_model, div_model=div_model, core_num=4, ub_size=2048)
    _same(y, G.swiglu(x, exp_model=exp_model, div_model=div_model), dt)


def test_the_models_change_some_bits():
    x = _x((64, 512), "float32", seed=5, scale=8.0)
    a = npu_swiglu(x)
    assert not np.array_equal(a.view(np.uint32), npu_swiglu(x, exp_model="exp2").view(np.uint32))
    # the float32 kernel divides 1 by (1 + e): 1 * float32(1 / q) is the IEEE quotient, so the Div model cannot show
    assert np.array_equal(a.view(np.uint32), npu_swiglu(x, div_model="reciprocal").view(np.uint32))
    # the 16-bit kernels divide A by (1 + e): the swish factor differs (the final rounding to 16 bits hides most)
    from npu_emu.kernels.swiglu.launch import swish_table
    t0, t1 = swish_table("float16", 0, 0), swish_table("float16", 0, 1)
    assert (t0.view(np.uint32) != t1.view(np.uint32)).sum() > 100


def test_every_bf16_value_of_a_and_special_values():
    """Every bf16 bit pattern as A (NaN, Inf, subnormals included) against B = 1, -3.5, Inf, NaN."""
    a = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(ml_dtypes.bfloat16)
    for bv in (1.0, -3.5, np.inf, np.nan):
        b = np.full(65536, bv, ml_dtypes.bfloat16)
        x = np.concatenate([a.reshape(256, 256), b.reshape(256, 256)], axis=1)
        y = npu_swiglu(x)
        g = G.swiglu(x)
        nan = np.isnan(g.astype(np.float32))
        assert np.array_equal(np.isnan(y.astype(np.float32)), nan)
        assert np.array_equal(y.view(np.uint16)[~nan], g.view(np.uint16)[~nan])


def test_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    x = torch.randn(8, 64, dtype=torch.bfloat16) * 3
    y = npu_swiglu(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16 and tuple(y.shape) == (8, 32)
    g = G.swiglu(x.view(torch.int16).numpy().view(ml_dtypes.bfloat16))
    assert np.array_equal(y.view(torch.int16).numpy().view(np.uint16), g.view(np.uint16))


def test_vendor_golden_distance():
    """The vendor golden (activation/swi_glu/tests/assets/golden.py: torch F.silu(a) * b in float32, cast back)
    differs from the kernel's steps (A / (1 + Exp(-A)) with the Exp and Div models, then * B) by at most one bf16
    ulp: both round a float32 product that differs by a few float32 ulps to bf16, which changes the result only
    near a bf16 rounding boundary."""
    torch = pytest.importorskip("torch")
    x = _x((64, 512), "bfloat16", seed=11, scale=3.0)
    y = npu_swiglu(x).view(np.uint16).astype(np.int64)
    t = torch.from_numpy(x.astype(np.float32))
    a, b = t.chunk(2, dim=-1)
    v = (torch.nn.functional.silu(a) * b).numpy().astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64)
    d = np.abs(y - v)
    assert d.max() <= 1
    assert (d == 0).mean() > 0.95


def test_empty():
    x = np.zeros((0, 8), np.float32)
    assert npu_swiglu(x).shape == (0, 4)


# ---------------------------------------------------------------------------------------------------------------
# tiling
# ---------------------------------------------------------------------------------------------------------------

def test_tiling_production_shape():
    """bf16 [8192, 8192] on the 910B2 (48 vector cores, 196,352 bytes of UB). Derivation (swi_glu_tiling.cpp):
    maxTileLen = AlignDown(196352 / (2*3*2 + 2*4), 16) = 9808; baseColLen starts at min(4096, 9808) = 4096 and drops
    by 256 (512 B); every candidate uses 48 cores; (19 rows, 512 cols) gives ceil(8192/19) * 8 = 3456 tiles, as
    does (38, 256) with 216 * 16, with the same base size 9728; 512 wins on more whole tiles (431 * 8 = 3448 >
    215 * 16 = 3440). tileNumPerCore = 72, so double buffering stays on."""
    tr = T.swiglu_tiling((8192, 8192), -1, "bfloat16")
    td = tr.tiling
    assert (td.rowLen, td.colLen, td.baseRowLen, td.baseColLen, td.is32BAligned, td.isDoubleBuffer) == \
        (8192, 4096, 19, 512, 1, 1)
    assert tr.block_dim == 48 and tr.tiling_key == 27
    assert T.ub_bytes(td, "bfloat16") == 3 * 2 * 9728 * 2 + 2 * 9728 * 4 <= tr.ub_size


def test_tiling_single_tile_switches_double_buffer_off():
    """rowLen 2, colLen 64 float32: one tile per core with or without double buffering -> isDoubleBuffer 0 only when
    the double-buffered split gives exactly 2 tiles per core; here it gives 1, so the flag stays 1."""
    tr = T.swiglu_tiling((2, 128), -1, "float32")
    assert tr.tiling.isDoubleBuffer == 1 and tr.block_dim == 1 and tr.tiling.baseRowLen == 2


def test_tiling_not_aligned_pitch():
    tr = T.swiglu_tiling((4, 70), 1, "float16", core_num=3, ub_size=2048)
    kt = T.kernel_tiling(tr.tiling, 2)
    assert tr.tiling.is32BAligned == 0 and kt.padColLen == 48   # 35 halves padded to 3 blocks of 16


def test_user_tiling_is_validated():
    x = _x((8, 64), "float32")
    host = T.swiglu_tiling(x.shape, -1, "float32").tiling
    bad = dict(host.fields(), rowLen=host.rowLen + 1)          # one row past x and y
    with pytest.raises(AclnnError) as e:
        npu_swiglu(x, tiling=bad)
    assert e.value.status == 561002
    good = dict(host.fields(), baseRowLen=2, baseColLen=8)
    _same(npu_swiglu(x, tiling=good, block_dim=3), G.swiglu(x), "float32")


# ---------------------------------------------------------------------------------------------------------------
# checks and the aclnn pair
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("x,dim,status", [
    (np.zeros((4, 7), np.float32), -1, 161002),        # odd split dim
    (np.zeros((4, 8), np.float32), 2, 161002),         # dim out of range
    (np.zeros((4, 8), np.int32), -1, 161002),          # dtype
    (np.zeros((4, 8), np.float64), -1, 161002),
    (None, -1, 161001),
])
def test_checks(x, dim, status):
    with pytest.raises(AclnnError) as e:
        npu_swiglu(x, dim)
    assert e.value.status == status


def test_odd_split_dim_is_refused_even_when_the_flat_tail_is_even():
    # shape (3, 7, 10), dim 1: the tiling's flattened tail (70) is even, but infershape refuses x.shape[1] = 7
    with pytest.raises(AclnnError) as e:
        npu_swiglu(np.zeros((3, 7, 10), np.float32), 1)
    assert e.value.status == 161002 and "odd" in str(e.value)


def test_switch_and_soc_checks():
    x = np.zeros((2, 8), np.float32)
    with pytest.raises(AclnnError) as e:
        npu_swiglu(x, exp_model="fast")
    assert e.value.status == 161002
    with pytest.raises(AclnnError) as e:
        npu_swiglu(x, soc="ascend950pr")
    assert e.value.status == 561003


def test_aclnn_pair():
    x = _x((6, 40), "bfloat16", seed=7)
    out = np.zeros((6, 20), ml_dtypes.bfloat16)
    st, ws, ex = aclnnSwiGluGetWorkspaceSize(x, -1, out)
    assert st == 0 and ws >= 16 * 1024 * 1024
    assert aclnnSwiGlu(None, ws, ex) == 0
    _same(out, G.swiglu(x), "bfloat16")
    bad = np.zeros((6, 20), np.float16)
    st, _, ex = aclnnSwiGluGetWorkspaceSize(x, -1, bad)
    assert st == 161002 and ex is None and not bad.any()
    st, _, _ = aclnnSwiGluGetWorkspaceSize(x, -1, np.zeros((6, 40), ml_dtypes.bfloat16))
    assert st == 161002
    st, _, _ = aclnnSwiGluGetWorkspaceSize(None, -1, out)
    assert st == 161001


@pytest.mark.parametrize("dt", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("base_row,base_col,block_dim", [(1, 8, 1), (3, 5, 7), (2, 64, 48), (5, 13, 2)])
def test_fused_equals_faithful_on_user_tilings(dt, base_row, base_col, block_dim):
    """The fused kernels split the outputs row-major over the cores instead of walking the tiles: on any tiling
    (tails in both directions, more cores than tiles, a core share ending mid-row, unaligned row pieces) the
    bits are the faithful tile walk's."""
    x = _x((9, 2 * 37), dt, seed=base_row * 100 + base_col, scale=6.0)
    host = T.swiglu_tiling(x.shape, -1, dt).tiling
    td = dict(host.fields(), baseRowLen=base_row, baseColLen=base_col, is32BAligned=0)
    a = npu_swiglu(x, tiling=td, block_dim=block_dim)
    b = npu_swiglu(x, tiling=td, block_dim=block_dim, faithful=True)
    _same(a, b, dt)
    _same(a, G.swiglu(x), dt)
