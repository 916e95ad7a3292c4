"""NUMBA_BOUNDSCHECK=1 mode (issue 11 "Bounds"): an out-of-range index inside an njit kernel should become an
IndexError, not memory corruption. What numba 0.68 really does with the project's settings (cache=True,
error_model='numpy', prange over cores):

* parallel=False: checked -- prange is a plain range and the read past the end raises IndexError;
* parallel=True: NOT checked -- the body of a prange loop is compiled into a parfor gufunc that does not inherit the
  boundscheck flag (nor do njit functions it calls), so a bounds-checked run of tests/kernels checks only the code
  outside the per-core loops. The bounds job therefore compiles the kernels with parallel=False:
  ``NPU_EMU_SERIAL_KERNELS=1`` (npu_emu/device/jit_options.py), which every parallel kernel reads where it is decorated.

numba's cache index is keyed by signature, CPU and bytecode only -- not by the boundscheck flag
(numba/core/caching.py ``_index_key``) -- so a bounds-checked run must use its own NUMBA_CACHE_DIR, or it silently
loads unchecked machine code. The second test shows that hazard, so the CI job keeps its separate folder.
"""

import os
import subprocess
import sys
import textwrap

import pytest

_KERNEL = textwrap.dedent("""
    import sys
    import numpy as np
    from numba import njit, prange

    @njit(parallel=sys.argv[1] == "parallel", cache=True, error_model="numpy")
    def oob_kernel(block_dim, x, y):
        for block_idx in prange(block_dim):
            # core block_idx writes y[block_idx] from x[block_idx * 4 + 4]: the last core reads one past x's end
            y[block_idx] = x[block_idx * 4 + 4]

    x = np.arange(8, dtype=np.int64)
    y = np.zeros(2, np.int64)
    try:
        oob_kernel(2, x, y)
        print("RESULT no-error")
    except IndexError as e:
        print("RESULT IndexError", e)
""")


def _run(tmp_path, cache, boundscheck, parallel=False):
    src = tmp_path / "oob_mod.py"
    src.write_text(_KERNEL)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NUMBA_BOUNDSCHECK="1" if boundscheck else "0")
    r = subprocess.run([sys.executable, str(src), "parallel" if parallel else "serial"], capture_output=True, text=True, timeout=300, env=env,
                       cwd=tmp_path)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, r.stderr[-2000:]
    return lines[-1]


def test_boundscheck_turns_an_out_of_range_read_into_index_error_when_serial(tmp_path):
    assert _run(tmp_path, tmp_path / "cache-checked", True).startswith("RESULT IndexError")


def test_boundscheck_does_not_reach_into_parallel_prange_bodies(tmp_path):
    """The limitation the bounds job must work around; when numba lifts it this test says so."""
    got = _run(tmp_path, tmp_path / "cache-parallel", True, parallel=True)
    if got.startswith("RESULT IndexError"):
        pytest.fail("numba now bounds-checks prange bodies: the bounds job can run the parallel kernels as they are "
                    "(update this test and the CI note)")
    assert got == "RESULT no-error"


def test_boundscheck_needs_its_own_cache_dir(tmp_path):
    """Compiled unchecked first, the same cache then serves the unchecked code to a NUMBA_BOUNDSCHECK=1 run."""
    shared = tmp_path / "cache-shared"
    first = _run(tmp_path, shared, False)
    assert not first.startswith("RESULT IndexError")     # unchecked: reads past x silently
    second = _run(tmp_path, shared, True)
    if second.startswith("RESULT IndexError"):
        pytest.fail("numba now keys its cache by the boundscheck flag: the separate NUMBA_CACHE_DIR of the bounds "
                    "job is no longer needed (update this test and the CI note)")


_PROJECT_KERNEL = textwrap.dedent("""
    import numpy as np
    from npu_emu.kernels.example.kernel import add_one_kernel
    from npu_emu.kernels.example.tiling import add_one_tiling

    # a real project kernel called past its front end with y one element short: its last core writes y[n - 1],
    # which lands in the spare element of buf (so the unchecked run stays memory-safe and shows the stray write)
    x = np.arange(4096, dtype=np.float32)
    buf = np.zeros(x.size, np.float32)
    y = buf[:-1]
    tr = add_one_tiling(x.size, core_num=2)
    try:
        add_one_kernel(tr.block_dim, tr.tiling.to_numba(), tr.ub_size, x, y)
        print("RESULT no-error", buf[-1])
    except IndexError as e:
        print("RESULT IndexError", e)
""")


@pytest.mark.parametrize("serial", [True, False], ids=["serial-kernels", "parallel-kernels"])
def test_serial_kernel_switch_makes_project_kernels_bounds_checked(tmp_path, serial):
    """NPU_EMU_SERIAL_KERNELS=1 + NUMBA_BOUNDSCHECK=1 (the bounds job) catches an out-of-range write inside a
    project kernel's per-core loop; with the parallel kernels no error reaches the caller (the reason for the
    switch)."""
    src = tmp_path / "oob_project.py"
    src.write_text(_PROJECT_KERNEL)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), NUMBA_BOUNDSCHECK="1",
               NPU_EMU_SERIAL_KERNELS="1" if serial else "0")
    r = subprocess.run([sys.executable, str(src)], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT")]
    assert lines, r.stderr[-2000:]
    if serial:
        assert lines[-1].startswith("RESULT IndexError"), lines[-1]
    else:
        # no error reaches the caller (numba 0.68 either does not check inside the gufunc or drops what it raises;
        # here the stray element stays 0.0, i.e. the core stopped silently)
        assert lines[-1].startswith("RESULT no-error"), lines[-1]
