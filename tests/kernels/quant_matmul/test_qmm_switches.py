"""One source of each quant_matmul switch default (issue 34 item 6): every entry's keyword defaults, the CLI's and
the Switches dataclass's are switches.DEFAULTS, and the aclnn V3/V4 entries, which take only some switches, take
the others from the table at call time (a changed default reaches them)."""

import argparse
import inspect

import numpy as np
import pytest

from npu_emu.kernels.quant_matmul import accum, api, cli, sparse4to2, switches
from npu_emu.kernels.quant_matmul.switches import CHOICES, DEFAULTS, Switches

ENTRIES = [api.npu_quant_matmul, api.aclnnQuantMatmulV5GetWorkspaceSize, api.aclnnQuantMatmulWeightNzGetWorkspaceSize,
           api.aclnnQuantMatmulV4GetWorkspaceSize, api.aclnnQuantMatmulV3GetWorkspaceSize,
           sparse4to2.sparse4to2_quant_matmul, sparse4to2.aclnnSparse4to2QuantMatmulWeightNzGetWorkspaceSize]


@pytest.mark.parametrize("fn", ENTRIES, ids=lambda f: f.__name__)
def test_entry_defaults_are_the_table(fn):
    params = inspect.signature(fn).parameters
    named = [p for p in params if p in DEFAULTS]
    assert "soc" in named
    for name in named:
        assert params[name].default == DEFAULTS[name], (fn.__name__, name)


def test_switches_and_dataclass_defaults():
    assert switches.switches() == Switches() == Switches(**DEFAULTS)
    assert set(CHOICES) <= set(DEFAULTS)
    assert all(DEFAULTS[name] in values for name, values in CHOICES.items())
    assert CHOICES["float_accum"] == accum.FLOAT_ACCUM


def test_cli_defaults_are_the_table():
    p = argparse.ArgumentParser()
    cli._add_run(p)
    got = {a.dest: (a.default, a.choices) for a in p._actions}
    for name, values in CHOICES.items():
        assert got[name] == (DEFAULTS[name], values), name
    assert got["soc"][0] == DEFAULTS["soc"]


@pytest.mark.parametrize("entry", ["aclnnQuantMatmulV3GetWorkspaceSize", "aclnnQuantMatmulV4GetWorkspaceSize"])
def test_v3_v4_entries_read_the_table_at_call_time(entry, monkeypatch):
    seen = []
    real = api.switches

    def spy(**kw):
        sw = real(**kw)
        seen.append(sw)
        return sw

    monkeypatch.setattr(api, "switches", spy)
    monkeypatch.setitem(DEFAULTS, "float_accum", "kchunk")
    monkeypatch.setitem(DEFAULTS, "e8m0_zero", "zero")
    x1 = np.ones((2, 32), np.int8)
    x2 = np.ones((32, 16), np.int8)
    scale = np.ones(16, np.float32).view(np.uint32).astype(np.uint64)
    out = np.empty((2, 16), np.float16)
    args = (x1, x2, scale, None, None, False, False, out) if "V3" in entry else \
        (x1, x2, scale, None, None, None, False, False, out)
    status, _, _ = getattr(api, entry)(*args)
    assert status == 0
    assert seen and seen[-1].float_accum == "kchunk" and seen[-1].e8m0_zero == "zero"
