"""What an op folder's ``configs.py`` and ``demo.py`` build on: the compile-configuration collector, the demo's
:class:`Case`, and the bit comparisons and input helpers both use. Imports numpy only (ml_dtypes on use)."""

from dataclasses import dataclass

import numpy as np

from npu_emu.frontend.registry import Config, DemoCase

HOST_COPY_BPS_PER_THREAD = 25e9      # docs/contributing/numba_rules.md §5.2: r+w copy rate of one host thread
DEVICE = "ascend910b2"               # the device column of the demo table (docs/device/platforms.md §4 rooflines)


def rng(seed=0):
    return np.random.default_rng(seed)


def bf16(a):
    import ml_dtypes

    return np.asarray(a, np.float32).astype(ml_dtypes.bfloat16)


def collector():
    """``CONFIGS, config = collector()``: ``@config(name, help)`` on a ``build() -> call`` appends a Config."""
    found = []

    def config(name, help_text):
        def deco(fn):
            if any(c.name == name for c in found):
                raise ValueError(f"duplicate op configuration {name}")
            found.append(Config(name, help_text, fn))
            return fn

        return deco

    return found, config


def demo_collector():
    """``CASES, builder = demo_collector()``: ``@builder(key, production_dims, small_dims, help, tiny=dims)`` on a
    ``build(dims, rng) -> Case`` appends a DemoCase (``tiny``: dims for the test suite's run of every case)."""
    found = []

    def builder(key, production, small, help_text, *, tiny=()):
        def deco(fn):
            found.append(DemoCase(fn, tuple(production), tuple(small), help_text, key, tuple(tiny)))
            return fn

        return deco

    return found, builder


class Unavailable(Exception):
    """The op of a demo case cannot run in this install (the case is listed as skipped)."""


@dataclass
class Case:
    op: str
    shape: str
    run: object                  # () -> result, the emulator (the user-facing call)
    golden: object               # () -> expected, the independent reference
    same: object                 # (result, expected) -> bool, bit-exact
    nbytes: int                  # bytes a device kernel moves through GM
    flops: int = 0               # operations of a matmul (2·m·k·n), 0 for memory-bound ops
    peak: str = "fp16_peak_flops"
    device: str = DEVICE         # the SoC of the device-roofline column
    golden_fraction: float = 1.0  # share of the output the golden computes (sampled matmul rows / columns)


def bits(a):
    a = np.asarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype.itemsize == b.dtype.itemsize and np.array_equal(bits(a), bits(b))


def same_float(a, b):
    """Bits equal except that any NaN matches any NaN (numpy / ml_dtypes NaN payloads are not specified)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return np.array_equal(bits(a)[~both_nan], bits(b)[~both_nan])


def public(name):
    """The ``npu_emu.ops`` function ``name`` (imported on use, so that listing the demo cases loads no kernel)."""
    import npu_emu.ops

    return getattr(npu_emu.ops, name)
