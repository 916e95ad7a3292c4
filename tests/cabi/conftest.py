"""The C ABI tests: a prefix built once per session by `npu-emu cabi build`, the C++ programs of programs/
compiled against it with the system compiler (all at once, in parallel), each run as a subprocess.

The programs' embedded interpreters inherit NUMBA_CACHE_DIR, so with a warm cache (`npu-emu compile`) they load
the kernels instead of compiling them; every op configuration the programs use is one op_configs.py precompiles.
"""

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
# hicann/ops-math's and hicann/ops-nn's build scripts link examples with these library names
VENDOR_LINK_LINES = {
    "test_aclnn_sign_bits": ["-lopapi_math", "-lascendcl", "-lnnopbase"],
    "test_aclnn_dynamic_mx_quant": ["-lopapi_nn", "-lopapi_math", "-lascendcl", "-lnnopbase"],
}


def skip_unless_required(reason):
    """Skip where a tool the C ABI needs is missing, except where the environment promises it: .ci/run sets
    NPU_EMU_REQUIRE_CABI=1 after making sure of g++, cmake and a shared libpython, so a CI box that lost one fails
    instead of passing with the C ABI untested."""
    if os.environ.get("NPU_EMU_REQUIRE_CABI") == "1":
        pytest.fail(f"NPU_EMU_REQUIRE_CABI=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def require_tool():
    return skip_unless_required


def _compiler():
    from npu_emu.cabi import find_compiler

    return find_compiler()


@pytest.fixture(scope="session")
def _built(tmp_path_factory):
    """(prefix, what `npu-emu cabi build --prefix` printed): the prefix is built once, through the CLI."""
    if _compiler() is None:
        skip_unless_required("no C++ compiler (g++, c++, clang++ or $CXX): the C ABI tests compile C++ programs")
    import sysconfig

    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        skip_unless_required(f"{sys.executable} has no shared libpython, which the C ABI embeds")
    from npu_emu.cli import main

    prefix = tmp_path_factory.mktemp("cabi") / "prefix"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["cabi", "build", "--prefix", str(prefix)])
    assert rc == 0, out.getvalue()
    return prefix, out.getvalue()


@pytest.fixture(scope="session")
def cabi_prefix(_built):
    return _built[0]


@pytest.fixture(scope="session")
def cabi_build_output(_built):
    return _built[1]


@pytest.fixture(scope="session")
def programs(cabi_prefix, tmp_path_factory):
    """{name: executable path} of every programs/*.cpp, compiled in parallel (one g++ each)."""
    from npu_emu.cabi import compile_command

    out = tmp_path_factory.mktemp("cabi-bin")
    cxx = _compiler()
    procs = {}
    for src in sorted(PROGRAMS.glob("*.cpp")):
        exe = out / src.stem
        cmd = compile_command(cabi_prefix, src, exe, compiler=cxx) + ["-I", str(PROGRAMS), "-pthread"]
        if src.stem in VENDOR_LINK_LINES:
            # the link line of the vendor repository's example build script instead of the printed one
            cmd = [c for c in cmd if c not in ("-lascendcl", "-lopapi", "-lnnopbase")] + VENDOR_LINK_LINES[src.stem]
        procs[src.stem] = (exe, cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                      text=True))
    built = {}
    for name, (exe, cmd, proc) in procs.items():
        text, _ = proc.communicate()
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{text}"
        built[name] = exe
    return built


def run_program(exe, *args, timeout=600):
    """Run a compiled program; returns (returncode, {name: bytes} of its hex lines, stdout)."""
    env = dict(os.environ)
    proc = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    values = {}
    for line in proc.stdout.splitlines():
        name, sep, hexs = line.partition(":")
        if sep and hexs and all(c in "0123456789abcdef" for c in hexs):
            values[name] = bytes.fromhex(hexs)
    return proc.returncode, values, proc.stdout + proc.stderr


@pytest.fixture
def run():
    return run_program
