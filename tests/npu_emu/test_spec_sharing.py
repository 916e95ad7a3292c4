"""npu_emu.device.specialize: a function of a specialised copy is compiled once per value of the switches it reads.

Each test writes a small kernel module of its own (a fresh name, so the copies of one test do not meet another's)
and loads copies of it with load(). Results are computed by the functions, so a function bound to the wrong copy
gives a wrong number."""

import importlib
import itertools
import sys
import textwrap

import pytest

from npu_emu.device import specialize

_names = itertools.count()

SOURCE = """
    import numpy as np
    from npu_emu.device.specialize import const, njit

    A = const("A", 0)
    B = const("B", 0)
    TWICE_A = 2 * A                  # a constant computed from a switch

    @njit(cache=False)
    def reads_a(x):
        return x + TWICE_A

    @njit(cache=False)
    def reads_nothing(x):
        return x * 3

    @njit(cache=False)
    def helper_b(x):
        return x - B

    @njit(cache=False)
    def calls_helper_b(x):           # reads B through the function it calls
        return helper_b(x) + 1

    @njit(inline="always", cache=False)
    def inlined_a(x):
        return x + 100 * A

    @njit(cache=False)
    def kernel(x):
        return reads_a(x) + reads_nothing(x) + calls_helper_b(x) + inlined_a(x)
"""


def _module(tmp_path, monkeypatch, source=SOURCE):
    name = f"spec_sharing_mod_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    return name


def _expected(x, a, b):
    return (x + 2 * a) + 3 * x + (x - b + 1) + (x + 100 * a)


def test_copies_share_what_reads_the_same_switches(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch)
    c12 = specialize.load(name, A=1, B=2)
    c13 = specialize.load(name, A=1, B=3)
    c22 = specialize.load(name, A=2, B=2)
    plain = importlib.import_module(name)
    # reads A only: one function for A=1, another for A=2, each from the copy made with A alone
    assert c12.reads_a is c13.reads_a is sys.modules[f"{name}[A=1]"].reads_a
    assert c22.reads_a is not c12.reads_a
    assert c12.reads_a.py_func.__qualname__ == "reads_a[A=1]"        # its own cache files, whatever loaded first
    # reads no switch: the plain module's
    assert c12.reads_nothing is c22.reads_nothing is plain.reads_nothing
    # reads B, directly or through a call
    assert c12.helper_b is c22.helper_b is not c13.helper_b
    assert c12.calls_helper_b is c22.calls_helper_b is not c13.calls_helper_b
    # reads both: each copy its own
    assert len({id(c.kernel) for c in (c12, c13, c22)}) == 3
    for c, (a, b) in ((c12, (1, 2)), (c13, (1, 3)), (c22, (2, 2))):
        assert c.kernel(10) == _expected(10, a, b)
    assert c12.reads_a.signatures and len(c12.reads_a.signatures) == 1     # compiled once for two kernels
    assert (name + "[A=1,B=2]", "reads_a") not in specialize.unshared


def test_sharing_off(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch)
    monkeypatch.setattr(specialize, "SHARING", False)
    c12 = specialize.load(name, A=1, B=2)
    c13 = specialize.load(name, A=1, B=3)
    assert c12.reads_a is not c13.reads_a
    assert c12.kernel(10) == _expected(10, 1, 2) and c13.kernel(10) == _expected(10, 1, 3)
    assert not [n for n in sys.modules if n.startswith(name + "[A=1]")]


def test_a_binding_the_source_does_not_show_is_caught_by_the_values(tmp_path, monkeypatch):
    # globals()[...] = ... binds X from switch B where the source analysis cannot see it: reads_x looks switch-free,
    # but the value check finds X different in the plain module and keeps the copy's own function
    name = _module(tmp_path, monkeypatch, """
        from npu_emu.device.specialize import const, njit

        B = const("B", 0)
        globals()["X"] = B * 7

        @njit(cache=False)
        def reads_x(x):
            return x + X
    """)
    c = specialize.load(name, B=2)
    assert c.reads_x.py_func.__module__ == f"{name}[B=2]"
    assert c.reads_x(1) == 15
    assert (f"{name}[B=2]", "reads_x") in specialize.unshared


def test_a_module_doing_unfollowed_things_at_top_level_shares_nothing(tmp_path, monkeypatch):
    name = _module(tmp_path, monkeypatch, textwrap.dedent(SOURCE) + "\nprint('side effect')\n")
    c12 = specialize.load(name, A=1, B=2)
    c13 = specialize.load(name, A=1, B=3)
    assert c12.reads_a is not c13.reads_a
    assert c12.kernel(10) == _expected(10, 1, 2)


@pytest.mark.parametrize("first", ["B=2", "B=3"])
def test_shared_function_names_do_not_depend_on_the_load_order(tmp_path, monkeypatch, first):
    name = _module(tmp_path, monkeypatch)
    order = [2, 3] if first == "B=2" else [3, 2]
    copies = [specialize.load(name, A=1, B=b) for b in order]
    assert {c.reads_a.py_func.__qualname__ for c in copies} == {"reads_a[A=1]"}
    assert {c.reads_a.py_func.__module__ for c in copies} == {f"{name}[A=1]"}
