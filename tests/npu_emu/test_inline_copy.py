"""numba's inliner with one scope copy per IR copy (npu_emu/device/inline_copy.py).

The counts come from a counting ``Scope.__deepcopy__`` put on numba's IR class for the test: numba's own inliner
copies a scope once per block per IR copy (two IR copies per call site), the hooked one copies each distinct scope
object once, in the one IR copy it makes per call site (the second, which numba discards, is made only when read).
The compiled results are compared with the interpreted function, so a wrong splice would show as a wrong value.
"""

import copy
import os
import subprocess
import sys

import numpy as np
import pytest
from numba import njit
from numba.core import ir

from npu_emu.ascendc.cast import Cast
from npu_emu.ascendc.constants import (CAST_CEIL, CAST_FLOOR, CAST_RINT, CAST_ROUND, CAST_TRUNC, DT_FLOAT,
                                       DT_FLOAT16, DT_INT8)
from npu_emu.device import inline_copy


@njit(inline="always")
def _branchy(x, k):
    # several blocks: the copies' cost grows with them
    if k == 0:
        return x + 1.0
    if k == 1:
        return x * 2.0
    if k == 2:
        return x - 3.0
    t = 0.0
    for i in range(k):
        t += x * i
    return t


def _callers():
    # fresh functions per run: numba compiles (and inlines) each once per process
    @njit
    def two_sites(x, k):
        return _branchy(x, k) + _branchy(x + 1.0, k + 1)

    return two_sites


def _expected(x, k):
    # the interpreted function: the compiled, inlined one must agree with it
    return _branchy.py_func(x, k) + _branchy.py_func(x + 1.0, k + 1)


def _chain(scope):
    out = []
    while scope is not None:
        out.append(scope)
        scope = scope.parent
    return out


@pytest.fixture
def copies(monkeypatch):
    """Counts scope deep copies, and records per inlining the callee's blocks and distinct scope objects."""
    from numba.core import inline_closurecall as icc

    scopes, inlines = [], []

    def counting(self, memo):
        scopes.append(id(self))
        new = ir.Scope.__new__(ir.Scope)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            setattr(new, k, copy.deepcopy(v, memo))
        return new

    monkeypatch.setattr(ir.Scope, "__deepcopy__", counting, raising=False)

    def run(hooked):
        if not hooked:
            inline_copy.uninstall()
        inner = icc.InlineWorker.inline_ir

        def recording(self, caller_ir, block, i, callee_ir, *args, **kwargs):
            blocks = list(callee_ir.blocks.values())
            chains = [_chain(b.scope) for b in blocks]          # a scope and its parents (numba's global scope)
            inlines.append((sum(len(c) for c in chains), len({id(sc) for c in chains for sc in c}),
                            len(blocks)))
            return inner(self, caller_ir, block, i, callee_ir, *args, **kwargs)

        icc.InlineWorker.inline_ir = recording
        try:
            f = _callers()
            for k in range(6):
                assert f(1.5, k) == _expected(1.5, k)
        finally:
            icc.InlineWorker.inline_ir = inner
            inline_copy.install()
        return scopes, inlines

    return run


def test_one_copy_of_each_scope_per_call_site(copies):
    assert inline_copy.installed()          # jit_options installs it (npu_emu's kernels all import that module)
    scopes, inlines = copies(True)
    assert len(inlines) == 2                # two call sites
    # one IR copy per call site, which copies each distinct scope object once
    assert len(scopes) == sum(n_scopes for _, n_scopes, _ in inlines)


def _statements(func_ir):
    return [(label, [str(stmt) for stmt in block.body]) for label, block in sorted(func_ir.blocks.items())]


def test_first_result_is_an_unmutated_copy_made_when_read():
    """inline_ir's first result: nothing copied until it is read; then the callee IR it was given, as it was, sharing
    no block or statement list with that IR or with the caller it was spliced into."""
    from numba.core import inline_closurecall as icc

    seen = []
    inner = icc.InlineWorker.inline_ir

    def recording(self, caller_ir, block, i, callee_ir, *args, **kwargs):
        before = _statements(callee_ir)
        out = inner(self, caller_ir, block, i, callee_ir, *args, **kwargs)
        seen.append((callee_ir, before, out[0], caller_ir))
        return out

    icc.InlineWorker.inline_ir = recording
    try:
        f = _callers()
        assert f(1.5, 3) == _expected(1.5, 3)
    finally:
        icc.InlineWorker.inline_ir = inner
    assert len(seen) == 2
    for callee_ir, before, first, caller_ir in seen:
        assert isinstance(first, ir.FunctionIR)
        assert "_npu_emu_source" in first.__dict__ and "blocks" not in first.__dict__      # not copied yet
        assert _statements(callee_ir) == before                                         # inline_ir left it as it was
        assert _statements(first) == before                                             # the copy, read now
        assert first.func_id is callee_ir.func_id
        spliced = {id(b) for b in caller_ir.blocks.values()} | {id(b) for b in callee_ir.blocks.values()}
        assert not spliced & {id(b) for b in first.blocks.values()}
        assert not {id(b.body) for b in callee_ir.blocks.values()} & {id(b.body) for b in first.blocks.values()}


def test_numba_alone_copies_the_scope_per_block(copies):
    scopes, inlines = copies(False)
    assert len(inlines) == 2
    # the per-block copies this module removes (every block's deepcopy copies its scope and the scope's parents)
    assert len(scopes) == sum(2 * per_block for per_block, _, _ in inlines)
    assert all(n_blocks >= 5 for _, _, n_blocks in inlines)


def _cast_kernel():
    @njit
    def k(y8, h16, x, mode):
        # float32 -> half -> int8 in one rounding mode: two inlined Cast call sites, each of ~57 blocks
        Cast(h16, x, mode, len(x), DT_FLOAT16, DT_FLOAT)
        Cast(y8, h16, mode, len(x), DT_INT8, DT_FLOAT16)

    return k


def test_instruction_bits_with_and_without_the_hook():
    """The instruction layer's Cast inlined both ways gives the same bytes in every rounding mode."""
    rng = np.random.default_rng(3)
    x = np.concatenate([(rng.standard_normal(4096) * 60).astype(np.float32),
                        np.array([0.5, 1.5, 2.5, -0.5, -2.5, 127.5, -128.5, 1e6, -1e6, np.inf, -np.inf, np.nan],
                                 np.float32)])
    outs = {}
    for hooked in (True, False):
        if not hooked:
            inline_copy.uninstall()
        try:
            k = _cast_kernel()
            for mode in (CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ROUND):
                y8, h16 = np.zeros(len(x), np.int8), np.zeros(len(x), np.uint16)
                k(y8, h16, x, mode)
                outs[hooked, mode] = (y8.view(np.uint8).tobytes(), h16.tobytes())
        finally:
            inline_copy.install()
    for mode in (CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ROUND):
        assert outs[True, mode] == outs[False, mode]
    # the modes differ from each other, so the comparison sees the mode argument through the inlined code
    assert len({outs[True, m][0] for m in (CAST_RINT, CAST_FLOOR, CAST_CEIL)}) == 3


@pytest.mark.parametrize("switch, module", [("NPU_EMU_INLINE_COPY", "inline_copy"),
                                            ("NPU_EMU_INLINE_REUSE", "inline_reuse"),
                                            ("NPU_EMU_WRAPPER_PASSES", "wrapper_passes"),
                                            ("NPU_EMU_OVERLOAD_REUSE", "overload_reuse"),
                                            ("NPU_EMU_GC_PAUSE", "gc_pause")])
def test_switches_leave_numba_untouched(switch, module):
    """Each compile-time hook (this one, inline_reuse.py, wrapper_passes.py, overload_reuse.py, gc_pause.py) is off
    with its switch at 0, on by default."""
    code = ("import npu_emu.device.jit_options\n"     # every module with kernels imports it first
            f"from npu_emu.device import {module} as hook\n"
            "print(hook.installed())\n")
    for flag, want in (("0", "False"), ("1", "True")):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, **{switch: flag}))
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.split() == [want]
