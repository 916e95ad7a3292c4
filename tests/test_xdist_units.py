"""The suite's xdist work units (tests/conftest.py): an op's test folder is one unit, any other file its own.

A small tree laid out like this repository, with a copy of the suite's conftest.py, is run with two real xdist
workers; each test records the worker that ran it.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

RECORD = textwrap.dedent("""
    import os, pathlib

    def _record(name):
        out = pathlib.Path(os.environ["UNITS_OUT"]) / f"{name}.{os.environ['PYTEST_XDIST_WORKER']}"
        out.write_text("")
""")


def _test_file(n, name):
    body = "".join(f"\n\ndef test_{i}():\n    _record('{name}_{i}')\n" for i in range(n))
    return RECORD + body


def _run(tree, out):
    env = dict(os.environ, UNITS_OUT=str(out))
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                          "-n", "2", "--dist", "loadfile", "--rootdir", str(tree), str(tree / "tests")],
                         capture_output=True, text=True, env=env, cwd=tree, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    workers = {}
    for f in out.iterdir():
        test, worker = f.name.rsplit(".", 1)
        workers.setdefault(test.rsplit("_", 1)[0], set()).add(worker)
    return workers


def test_an_op_folders_files_run_in_one_worker(tmp_path):
    tree = tmp_path / "repo"
    op = tree / "tests" / "kernels" / "some_op"
    op.mkdir(parents=True)
    shutil.copy(pathlib.Path(__file__).with_name("conftest.py"), tree / "tests" / "conftest.py")
    # loadfile alone would hand these two files, the largest units, to the two workers
    (op / "test_a.py").write_text(_test_file(6, "a"))
    (op / "test_b.py").write_text(_test_file(6, "b"))
    (tree / "tests" / "kernels" / "test_c.py").write_text(_test_file(4, "c"))
    (tree / "tests" / "test_d.py").write_text(_test_file(4, "d"))
    out = tmp_path / "out"
    out.mkdir()
    workers = _run(tree, out)
    assert set(workers) == {"a", "b", "c", "d"}
    assert all(len(w) == 1 for w in workers.values()), workers         # a file never splits
    assert workers["a"] == workers["b"]                                 # the op's folder is one unit


def test_unit_names():
    import importlib.util

    spec = importlib.util.spec_from_file_location("suite_conftest", pathlib.Path(__file__).with_name("conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dual = "tests/kernels/dynamic_mx_quant_with_dual_axis"
    assert mod.xdist_unit(f"{dual}/test_dual_golden.py") == mod.xdist_unit(f"{dual}/test_dual_vs_dynamic.py") == dual
    for own in ("tests/kernels/test_compile_scope.py", "tests/npu_emu/test_launch.py", "tests/test_registry.py"):
        assert mod.xdist_unit(own) == own
