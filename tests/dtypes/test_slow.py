"""Exhaustive sweeps over all 2^32 float32 bit patterns (``-m slow``; a few minutes each on 2 cores)."""

import en_dtypes
import ml_dtypes
import numpy as np
import pytest

from npu_emu import dtypes as D

CHUNK = 1 << 24


def _sweep(fmt, dtype, nan_exact):
    bits = np.empty(CHUNK, np.uint32)
    step = np.arange(CHUNK, dtype=np.uint32)
    out = np.empty(CHUNK, np.uint8)
    for start in range(0, 1 << 32, CHUNK):
        np.add(step, np.uint32(start), out=bits)
        x = bits.view(np.float32)
        D.encode(x, fmt, out=out)
        with np.errstate(invalid="ignore", over="ignore"):
            ref = x.astype(dtype).view(np.uint8)
        if nan_exact:
            bad = out != ref
        else:  # NaN bytes: "is NaN with the input's sign" (docs/codecs.md §12)
            nan = np.isnan(x)
            bad = (out != ref) & ~nan
            got = D.decode(out[nan], fmt)
            assert np.isnan(got).all() and np.array_equal(out[nan] >> 7, (bits[nan] >> 31).astype(np.uint8))
        assert not bad.any(), f"{fmt}: {int(bad.sum())} mismatches in chunk 0x{start:08x}, first {bits[bad][:4]}"


@pytest.mark.slow
def test_hif8_round_all_fp32_patterns_vs_en_dtypes():
    _sweep("hifloat8", en_dtypes.hifloat8, nan_exact=True)


@pytest.mark.slow
@pytest.mark.parametrize("fmt,dtype", [("float8_e4m3fn", ml_dtypes.float8_e4m3fn),
                                       ("float8_e5m2", ml_dtypes.float8_e5m2)])
def test_fp8_all_fp32_patterns_vs_ml_dtypes(fmt, dtype):
    _sweep(fmt, dtype, nan_exact=False)
