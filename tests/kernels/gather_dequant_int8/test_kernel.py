"""The emulated kernels against the op page's vectors and the plain-numpy golden (bit-exact on uint16 views).

Both kernels run here: the faithful transliteration (``faithful=True``, block_dim from the tiling) and the fast
per-row table path that the front ends use by default; they must agree bit for bit with each other and with
npu_emu.kernels.gather_dequant_int8.golden, which never calls either.
"""

import hashlib
import importlib.util
import pathlib

import numba
import numpy as np
import pytest

from npu_emu.kernels.gather_dequant_int8 import golden as golden
from npu_emu.kernels.gather_dequant_int8.api import gather_dequant_int8


def _sibling(name):
    """The vector tables live once, in test_golden.py (pytest's importlib mode has no sibling imports)."""
    path = pathlib.Path(__file__).with_name(f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"gather_dequant_int8_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_spec = _sibling("test_golden")
DEFAULT_SHA256, SINGLE_ROUNDING_POINTS, VECTORS = _spec.DEFAULT_SHA256, _spec.SINGLE_ROUNDING_POINTS, _spec.VECTORS

PATHS = [pytest.param(False, id="fast"), pytest.param(True, id="faithful")]


def bits(a):
    return np.asarray(a).view(np.uint16)


def f16(b):
    return np.asarray(b, np.uint16).view(np.float16)


def vector_case():
    """docs/ops/gather_dequant_int8.md §6.1 tiled to E = 32 ("to build a kernel-shaped test, tile each pattern to
    E = 32"): row r holds 32 copies of vector r's q with its zp and scale."""
    names = sorted(VECTORS)
    table = np.array([[VECTORS[n][0]] * 32 for n in names], np.uint8)
    zp = f16([VECTORS[n][1] for n in names])
    scale = f16([VECTORS[n][2] for n in names])
    return names, table, scale, zp


@pytest.mark.parametrize("faithful", PATHS)
@pytest.mark.parametrize("mode", ["keep", "flush"])
def test_spec_vectors(faithful, mode):
    names, table, scale, zp = vector_case()
    idx = np.arange(len(names), dtype=np.int32)[::-1].copy()          # every row, in reverse order
    y = gather_dequant_int8(table, idx, scale, zp, fp16_subnormal=mode, faithful=faithful)
    assert y.dtype == np.float16 and y.shape == (len(names), 32)
    for k, r in enumerate(idx):
        want = VECTORS[names[r]][4 if mode == "keep" else 5]
        assert np.all(bits(y[k]) == want), (names[r], hex(int(bits(y[k])[0])))


@pytest.mark.parametrize("faithful", PATHS)
def test_spec_example_shape(faithful):
    # §6.1: V = 2, N = 3, indices [1, 0, 1] -> (3, 32); rows G7 (index 0) and G6 (index 1)
    table = np.array([[200] * 32, [100] * 32], np.uint8)
    y = gather_dequant_int8(table, np.array([1, 0, 1], np.int32), f16([0x211F, 0xB800]), f16([0x34CD, 0x5640]),
                            faithful=faithful)
    assert y.shape == (3, 32)
    assert np.all(bits(y[0]) == 0x8000) and np.all(bits(y[1]) == 0x3FFE) and np.all(bits(y[2]) == 0x8000)


@pytest.fixture(scope="module")
def default_case():
    return golden.golden_case()


@pytest.mark.parametrize("faithful", PATHS)
def test_default_golden(default_case, faithful):
    c = default_case
    y = gather_dequant_int8(c["table"], c["indices"], c["scale"], c["zero_point"], faithful=faithful)
    assert y.shape == (1, 30, 256)
    assert hashlib.sha256(y.tobytes()).hexdigest() == DEFAULT_SHA256["output"]
    for t, _, col, *_, two, single in SINGLE_ROUNDING_POINTS:
        assert int(bits(y)[0, t, col]) == two != single


def random_case(seed, vocab=40, emb=64, n=50):
    """Every byte value, scales spanning normal and subnormal fp16 results, zero points on both sides of 0..255."""
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 256, (vocab, emb), dtype=np.uint8)
    table[0, :] = np.arange(256, dtype=np.uint8)[:emb] if emb <= 256 else np.resize(np.arange(256), emb)
    table[1, :] = np.resize(np.arange(255, -1, -1), emb).astype(np.uint8)
    exp = rng.integers(-24, 4, vocab).astype(np.float64)
    scale = (np.sign(rng.random(vocab) - 0.2) * rng.random(vocab) * 2.0 ** exp).astype(np.float16)
    scale[:4] = f16([0x0001, 0x83FF, 0x0400, 0x1419])                 # subnormal, subnormal, min normal, 0.001
    zp = (rng.random(vocab) * 300 - 20).astype(np.float16)
    zp[4:6] = f16([0x8001, 0x0200])                                     # subnormal zero points
    indices = rng.integers(0, vocab, n).astype(np.int32)
    indices[:6] = np.arange(6)
    return table, indices, scale, zp


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("mode", ["keep", "flush"])
def test_fast_equals_faithful_equals_golden(seed, mode):
    table, idx, scale, zp = random_case(seed)
    want = bits(golden.gather_dequant_int8(table, idx, scale, zp, fp16_subnormal=mode))
    fast = gather_dequant_int8(table, idx, scale, zp, fp16_subnormal=mode)
    slow = gather_dequant_int8(table, idx, scale, zp, fp16_subnormal=mode, faithful=True)
    assert np.array_equal(bits(fast), want) and np.array_equal(bits(slow), want)
    # the data reach the subnormal range, so the switch must matter here
    other = golden.gather_dequant_int8(table, idx, scale, zp, fp16_subnormal="flush" if mode == "keep" else "keep")
    assert not np.array_equal(bits(other), want)


@pytest.mark.parametrize("core_num", [None, 1, 2, 3, 7, 64])
def test_core_split_invariance(core_num):
    table, idx, scale, zp = random_case(3, n=13)
    want = bits(golden.gather_dequant_int8(table, idx, scale, zp))
    y, tr = gather_dequant_int8(table, idx, scale, zp, core_num=core_num, faithful=True, trace=True)
    assert tr.block_dim == (1 if core_num is None else min(core_num, 13))
    assert np.array_equal(bits(y), want)


@pytest.mark.parametrize("faithful", PATHS)
def test_thread_count_invariance(faithful):
    table, idx, scale, zp = random_case(4, n=200)
    before = numba.get_num_threads()
    out = []
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            out.append(bits(gather_dequant_int8(table, idx, scale, zp, faithful=faithful, core_num=4)).copy())
    finally:
        numba.set_num_threads(before)
    assert all(np.array_equal(o, out[0]) for o in out)
    assert np.array_equal(out[0], bits(golden.gather_dequant_int8(table, idx, scale, zp)))


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (5,), (2, 3, 4)])
def test_indices_shapes(shape):
    table, _, scale, zp = random_case(5)
    idx = np.random.default_rng(0).integers(0, table.shape[0], shape).astype(np.int32)
    y = gather_dequant_int8(table, idx, scale.reshape(-1, 1), zp)        # (V, 1) scale is accepted
    assert y.shape == shape + (64,) and y.dtype == np.float16
    assert np.array_equal(bits(y), bits(golden.gather_dequant_int8(table, idx, scale, zp)))


def test_uint16_views_and_noncontiguous_inputs():
    table, idx, scale, zp = random_case(6)
    want = bits(golden.gather_dequant_int8(table, idx, scale, zp))
    wide = np.zeros((table.shape[0], 2 * table.shape[1]), np.uint8)
    wide[:, ::2] = table
    y = gather_dequant_int8(wide[:, ::2], idx[::-1][::-1], scale.view(np.uint16), zp.view(np.uint16))
    assert np.array_equal(bits(y), want)


def test_trace():
    c = golden.golden_case()
    y, tr = gather_dequant_int8(c["table"], c["indices"], c["scale"], c["zero_point"], trace=True)
    assert tr.op == "GatherDequantInt8" and tr.soc == "kirin9020"
    assert tr.tiling_data == {"numIndices": 30, "embDim": 256, "vocab": 1024}
    assert tr.tiling_data_bytes == bytes.fromhex("1e000000" "00010000" "00040000")
    assert (tr.block_dim, tr.workspace_size, tr.tiling_key, tr.ub_bytes_per_core) == (1, 0, 0, 6272)
    assert tr.gm_overrun == []


def test_inputs_not_modified():
    table, idx, scale, zp = random_case(7)
    copies = [a.copy() for a in (table, idx, scale, zp)]
    gather_dequant_int8(table, idx, scale, zp, faithful=True)
    assert all(np.array_equal(a, b) for a, b in zip((table, idx, scale, zp), copies))
