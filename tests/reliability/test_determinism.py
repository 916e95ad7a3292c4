"""Determinism (issue 11): every op's output is bit-identical for numba.set_num_threads(1) and 2 and across every
valid tiling of the same shape (core_num / ub_size overrides, the faithful and fused paths), and a second call gives
the same bits. The reference is the first configuration; each other one must match it byte for byte. Shapes are
chosen so that the host tiling really changes with the overrides (several cores and several tiles per core).
"""

import numba
import numpy as np
import pytest

import npu_emu.ops as ops
import npu_reliability as H

MX_HOME = "npu_emu.kernels.mx_quant.api"
THREADS = [1, 2]

def _rng():
    """A fresh generator per configuration: every configuration of an op sees the same inputs."""
    return np.random.default_rng(20261130)


def _f32_specials(shape):
    return H.float_values(_rng(), shape, np.float32, special_frac=0.05, scale_exp=(-130, 120))


def _unpack(core_num, ub_size, soc):
    x = _rng().integers(0, 256, 3001, dtype=np.uint8)
    return lambda **kw: ops.npu_sign_bits_unpack(x, 1, np.float16, soc=soc, core_num=core_num, ub_size=ub_size)


def _pack(core_num, ub_size, soc):
    x = _f32_specials((40_003,))
    return lambda **kw: ops.npu_sign_bits_pack(x, 1, soc=soc, core_num=core_num, ub_size=ub_size)


def _gather(core_num, ub_size, faithful):
    rng = _rng()
    table = rng.integers(0, 256, (50, 96), dtype=np.uint8)
    idx = rng.integers(0, 50, (7, 31), dtype=np.int32)
    scale = H.float_values(rng, (50,), np.float16, special_frac=0.1, scale_exp=(-24, 4))
    zp = H.float_values(rng, (50,), np.float16, special_frac=0.1, scale_exp=(-10, 8))
    return lambda **kw: ops.gather_dequant_int8(table, idx, scale, zp, core_num=core_num, ub_size=ub_size,
                                                faithful=faithful)


def _qmm(core_num, soc):
    rng = _rng()
    x1 = rng.integers(-128, 128, (97, 300), dtype=np.int8)
    x2 = rng.integers(-128, 128, (300, 130), dtype=np.int8)
    s = rng.uniform(0.001, 0.05, 130).astype(np.float32)
    p1 = rng.uniform(0.5, 2.0, 97).astype(np.float32)
    return lambda **kw: ops.npu_quant_matmul(x1, x2, s, pertoken_scale=p1, output_dtype="bfloat16", soc=soc,
                                             core_num=core_num)


def _deq(soc):
    rng = _rng()
    acc = rng.integers(-2 ** 31, 2 ** 31, (37, 48), dtype=np.int64).astype(np.int32)
    words = (np.exp2(rng.uniform(-20, 0, 48)).astype(np.float32).view(np.uint32).astype(np.uint64)
             | np.uint64(1 << 46))
    return lambda **kw: ops.data_copy_dequant(acc, words, mode="DEQ8", soc=soc)


def _dyn_mx(core_num, ub_size, faithful):
    rng = _rng()
    fn = H.public(ops, "npu_dynamic_mx_quant", MX_HOME)
    x = H.float_values(rng, (33, 256), np.float16, special_frac=0.05, scale_exp=(-24, 15))
    return lambda **kw: fn(x, dst_type=292, core_num=core_num, ub_size=ub_size, faithful=faithful)


def _grp_mx(core_num, faithful):
    rng = _rng()
    fn = H.public(ops, "npu_grouped_dynamic_mx_quant", MX_HOME)
    x = H.float_values(rng, (160, 96), np.float16, special_frac=0.05, scale_exp=(-24, 15))
    gi = np.array([0, 64, 64, 130, 160], np.int32)
    return lambda **kw: fn(x, gi, dst_type=24, core_num=core_num, faithful=faithful)


CONFIGS = {
    "sign_bits_unpack 910B": [(_unpack, dict(core_num=c, ub_size=u, soc="ascend910b2"))
                              for c in (None, 1, 2, 3, 7) for u in (None, 16384)],
    "sign_bits_unpack 950": [(_unpack, dict(core_num=c, ub_size=u, soc="ascend950pr"))
                             for c in (None, 1, 3) for u in (None, 8192)],
    # 910B pack: no ub_size variant; its host tiling ignores ub_size (a 64 KiB ub_size makes a tiling its own
    # validator rejects as a UB overflow, reported to the lead)
    "sign_bits_pack 910B": [(_pack, dict(core_num=c, ub_size=None, soc="ascend910b2")) for c in (None, 1, 2, 5)],
    "sign_bits_pack 950": [(_pack, dict(core_num=c, ub_size=u, soc="ascend950pr"))
                           for c in (None, 1, 3) for u in (None, 16384)],
    "gather_dequant_int8": [(_gather, dict(core_num=c, ub_size=u, faithful=f))
                            for c in (None, 1, 3, 8) for u in (None, 1 << 20) for f in (False, True)],
    "quant_matmul 910B": [(_qmm, dict(core_num=c, soc="ascend910b2")) for c in (None, 1, 2, 7)],
    "quant_matmul 950": [(_qmm, dict(core_num=c, soc="ascend950pr")) for c in (None, 1, 3)],
    "data_copy_dequant": [(_deq, dict(soc=s)) for s in ("ascend310p", "ascend910")],
    "dynamic_mx_quant": [(_dyn_mx, dict(core_num=c, ub_size=u, faithful=f))
                         for c in (None, 1, 3) for u in (None,) for f in (False, True)],
    "grouped_dynamic_mx_quant": [(_grp_mx, dict(core_num=c, faithful=f)) for c in (None, 1, 3) for f in (False, True)],
}


def _bits_of(result):
    if isinstance(result, tuple):
        return [H.bits(np.asarray(r)).tobytes() for r in result]
    return [H.bits(np.asarray(result)).tobytes()]


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs NUMBA_NUM_THREADS >= 2")
@pytest.mark.parametrize("op", sorted(CONFIGS))
def test_bit_identical_across_threads_and_tilings(op):
    before = numba.get_num_threads()
    ref, ref_what = None, None
    try:
        for make, kw in CONFIGS[op]:
            call = make(**kw)
            for t in THREADS:
                numba.set_num_threads(t)
                for _ in range(2 if t == THREADS[0] else 1):   # and a repeated call
                    got = _bits_of(call())
                    what = f"{kw}, {t} thread(s)"
                    if ref is None:
                        ref, ref_what = got, what
                    elif got != ref:
                        raise H.ContractViolation(f"{op}: {what} differs from {ref_what}")
    finally:
        numba.set_num_threads(before)
