"""The prefix `npu-emu cabi build` writes: headers that match npu_emu.aclnn, libraries an examples-style CMake
build links, and the same library loaded into an already running Python."""

import ctypes
import inspect
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import npu_emu.aclnn as aclnn
from npu_emu import ops
from npu_emu.cabi.signatures import OPS

HERE = Path(__file__).parent


def test_table_matches_npu_emu_aclnn():
    """Every op of the C table exists in npu_emu.aclnn with the same positional parameters, in the same order."""
    for op in OPS:
        fn = getattr(aclnn, op.workspace_name)
        positional = [p.name for p in inspect.signature(fn).parameters.values()
                      if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        assert len(positional) == len(op.params), (op.name, positional, [p.name for p in op.params])
        for p in op.params:
            if p.dtype_kw:
                assert p.dtype_kw in inspect.signature(fn).parameters, (op.name, p.dtype_kw)
        assert callable(getattr(aclnn, op.name))


def test_headers_declare_every_op_and_compile_as_c(cabi_prefix, tmp_path, require_tool):
    include = cabi_prefix / "include"
    for op in OPS:
        text = (include / "aclnnop" / op.header).read_text()
        assert re.search(rf"\baclnnStatus {op.workspace_name}\(", text), op.name
        assert re.search(rf"\baclnnStatus {op.name}\(void\* workspace", text), op.name
    # C programs include them too: every header, in C11
    src = tmp_path / "all.c"
    src.write_text('#include "acl/acl.h"\n' + "".join(f'#include "aclnnop/{h.name}"\n'
                                                       for h in sorted((include / "aclnnop").iterdir())))
    cc = shutil.which("gcc") or shutil.which("cc") or shutil.which("clang")
    if cc is None:
        require_tool("no C compiler to check the headers in C")
    proc = subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-Wno-unused-const-variable", "-fsyntax-only",
                           "-I", str(include), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_cli_printed_the_compile_line(cabi_build_output, cabi_prefix):
    assert "libascendcl.so" in cabi_build_output
    assert f"-I {cabi_prefix / 'include'}" in cabi_build_output
    assert "-lascendcl -lopapi -lnnopbase" in cabi_build_output


def test_examples_style_cmake_build(cabi_prefix, tmp_path, run, require_tool):
    """CANN's example CMake pattern, its ASCEND_HOME_PATH pointed at the prefix; run with set_env.sh's library path."""
    cmake = shutil.which("cmake")
    if cmake is None:
        require_tool("cmake is not installed")
    build = tmp_path / "build"
    for cmd in ([cmake, "-S", str(HERE / "cmake"), "-B", str(build), f"-DASCEND_HOME_PATH={cabi_prefix}"],
                [cmake, "--build", str(build)]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    env = dict(os.environ, LD_LIBRARY_PATH=str(cabi_prefix / "lib"))
    proc = subprocess.run([str(build / "test_aclnn_sign_bits_unpack")], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = np.array([int(v, 16) for v in re.findall(r"result\[\d+\] is: 0x([0-9a-f]{4})", proc.stdout)], np.uint16)
    want = ops.npu_sign_bits_unpack(np.array([0x01, 0x80, 0x5a], np.uint8), 3, 1)
    np.testing.assert_array_equal(got, want.view(np.uint16).reshape(-1))


def test_loaded_into_a_running_python(cabi_prefix):
    """ctypes loads libascendcl.so into this process: the shim reuses this interpreter instead of starting one."""
    lib = ctypes.CDLL(str(cabi_prefix / "lib" / "libascendcl.so"))
    lib.aclrtMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_int]
    lib.aclrtMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.aclCreateTensor.restype = ctypes.c_void_p
    i64p = ctypes.POINTER(ctypes.c_int64)
    lib.aclCreateTensor.argtypes = [i64p, ctypes.c_uint64, ctypes.c_int, i64p, ctypes.c_int64, ctypes.c_int, i64p,
                                    ctypes.c_uint64, ctypes.c_void_p]
    lib.aclnnSignBitsUnpackGetWorkspaceSize.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
                                                        ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                                        ctypes.POINTER(ctypes.c_void_p)]
    lib.aclnnSignBitsUnpack.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_void_p]
    lib.aclrtFree.argtypes = [ctypes.c_void_p]
    lib.aclDestroyTensor.argtypes = [ctypes.c_void_p]

    x = np.array([0xa5, 0x3c], np.uint8)
    buf_x, buf_out, ws = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert lib.aclrtMalloc(ctypes.byref(buf_x), 2, 0) == 0
    assert lib.aclrtMalloc(ctypes.byref(buf_out), 64, 0) == 0
    assert lib.aclrtMemcpy(buf_x, 2, x.ctypes.data, 2, 1) == 0

    def tensor(dims, dtype, addr):
        d = (ctypes.c_int64 * len(dims))(*dims)
        st = (ctypes.c_int64 * len(dims))(*[int(np.prod(dims[i + 1:])) for i in range(len(dims))])
        return lib.aclCreateTensor(d, len(dims), dtype, st, 0, 2, d, len(dims), addr)

    tx, tout = tensor([2], 4, buf_x), tensor([2, 8], 0, buf_out)
    size, ex = ctypes.c_uint64(), ctypes.c_void_p()
    assert lib.aclnnSignBitsUnpackGetWorkspaceSize(tx, 2, 0, tout, ctypes.byref(size), ctypes.byref(ex)) == 0
    assert lib.aclrtMalloc(ctypes.byref(ws), size.value, 0) == 0
    assert lib.aclnnSignBitsUnpack(ws, size.value, ex, None) == 0
    out = np.zeros(16, np.float32)
    assert lib.aclrtMemcpy(out.ctypes.data, 64, buf_out, 64, 2) == 0
    np.testing.assert_array_equal(out.view(np.uint32), ops.npu_sign_bits_unpack(x, 2, 0).view(np.uint32).ravel())
    for t in (tx, tout):
        assert lib.aclDestroyTensor(t) == 0
    for b in (buf_x, buf_out, ws):
        assert lib.aclrtFree(b) == 0


def test_no_compiler_is_a_clear_error(tmp_path, monkeypatch):
    from npu_emu.cabi.build import BuildError, build, find_compiler

    monkeypatch.setenv("PATH", str(tmp_path))          # an empty folder: no g++, c++ or clang++
    monkeypatch.delenv("CXX", raising=False)
    assert find_compiler() is None
    with pytest.raises(BuildError, match="no C\\+\\+ compiler found"):
        build(tmp_path / "prefix")
    assert not (tmp_path / "prefix").exists()         # nothing half-written
