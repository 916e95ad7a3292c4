"""Reliability suite (issue 11): fuzzing every public entry, determinism, memory guard, tiling validation.

Registers helpers.py as the module ``npu_reliability`` (with --import-mode=importlib test modules cannot import
siblings by name) and the codec tests' independent reference (tests/dtypes/reference.py) as ``dtypes_reference``
when tests/dtypes did not already. Hypothesis profiles: "reliability-fast" (fixed seed, default run) and
"reliability-slow" (the long fuzz, ``-m slow``). The terminal summary lists the calls made per entry.

Environment: NPU_EMU_FUZZ_FAST (examples per fast test, 30), NPU_EMU_FUZZ_SLOW (per long test, 10000),
NPU_EMU_FUZZ_COUNTS (a file the long run rewrites with its calls per entry every 200 calls),
NPU_EMU_FUZZ_KNOWN_BUGS=1 (examples hitting a reported bug fail instead of being skipped; see helpers.py).
Long run: ``NUMBA_CACHE_DIR=... NPU_EMU_FUZZ_SLOW=10000 pytest tests/reliability -m slow -p no:cacheprovider``.
"""

import importlib.util
import pathlib
import sys

import pytest
from hypothesis import HealthCheck, Phase, settings

_HERE = pathlib.Path(__file__).resolve().parent


def _register(name, path):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


H = _register("npu_reliability", _HERE / "helpers.py")
_register("dtypes_reference", _HERE.parent / "dtypes" / "reference.py")

# No shrinking: a failing example is reported with its draws at once (shrinking a kernel call can take minutes);
# the fast profile is derandomized, so a failure there reproduces by re-running the test.
_COMMON = dict(deadline=None, database=None, print_blob=True,
               phases=[Phase.explicit, Phase.reuse, Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture])
settings.register_profile("reliability-fast", max_examples=H.FAST_EXAMPLES, derandomize=True, **_COMMON)
settings.register_profile("reliability-slow", max_examples=H.SLOW_EXAMPLES, derandomize=False, **_COMMON)


@pytest.fixture
def fresh_memory_limit():
    """Leaves the memory guard as it was (no user limit) whatever the test does."""
    from npu_emu.frontend import core as frontend

    old = frontend._memory_limit
    yield frontend
    frontend.set_memory_limit(old)


def pytest_terminal_summary(terminalreporter):
    if not H.CALLS:
        return
    tr = terminalreporter
    tr.section("reliability: calls per public entry")
    for entry, n in sorted(H.CALLS.items()):
        outcomes = {k[1]: v for k, v in H.OUTCOMES.items() if k[0] == entry}
        ok = outcomes.pop("ok", 0)
        errs = ", ".join(f"{s}: {c}" for s, c in sorted(outcomes.items(), key=lambda kv: str(kv[0])))
        tr.write_line(f"{entry:48s} {n:8d} calls  ({ok} ok{', ' + errs if errs else ''})")
