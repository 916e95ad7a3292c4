"""npu_emu.device.specialize.literal_args: constant arguments become constants of the compiled copy.

The module under test is written to a temporary folder (the decorator reads the function's source), and each case
runs in a fresh interpreter with its own numba cache, so what was compiled is what the call compiled.
"""

import json
import os
import subprocess
import sys
import textwrap

MODULE = textwrap.dedent('''
    import numpy as np
    from numba import njit
    from npu_emu.device.specialize import literal_args

    FMT_A = 1
    FMT_B = 2

    @njit(cache=True)
    def only_a(x):
        return x * 3

    @njit(cache=True)
    def only_b(x):
        return x + 100

    @literal_args(cache=True, error_model="numpy")
    def pick(x, fmt):
        if fmt == FMT_A:
            return only_a(x)
        return only_b(x)

    @literal_args(cache=True, error_model="numpy")
    def reassigns(x, fmt):
        fmt = fmt + 1          # a parameter the body assigns stays a parameter
        return x * fmt

    @njit(cache=True)
    def call_a(x):
        return pick(x, FMT_A)

    @njit(cache=True)
    def call_b(x):
        return pick(x, FMT_B)

    @njit(cache=True)
    def call_runtime(x, fmt):
        return pick(x, fmt)

    @njit(cache=True)
    def call_reassigns(x):
        return reassigns(x, 4)
''')

PROBE = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import litmod
    out = {"result": eval(sys.argv[2], vars(litmod)),
           "a_compiled": len(litmod.only_a.signatures), "b_compiled": len(litmod.only_b.signatures)}
    print(json.dumps(out))
''')


def run(folder, cache, expr):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", PROBE, str(folder), expr], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_constant_argument_compiles_one_branch(tmp_path):
    (tmp_path / "litmod.py").write_text(MODULE)
    res = run(tmp_path, tmp_path / "cache", "call_a(5)")
    assert res == {"result": 15, "a_compiled": 1, "b_compiled": 0}
    res = run(tmp_path, tmp_path / "cache2", "call_b(5)")
    assert res == {"result": 105, "a_compiled": 0, "b_compiled": 1}


def test_runtime_argument_compiles_the_function_as_written(tmp_path):
    (tmp_path / "litmod.py").write_text(MODULE)
    res = run(tmp_path, tmp_path / "cache", "[call_runtime(5, 1), call_runtime(5, 2)]")
    assert res == {"result": [15, 105], "a_compiled": 1, "b_compiled": 1}


def test_copies_with_other_constants_do_not_share_cache_entries(tmp_path):
    # the copies for FMT_A and FMT_B have the same bytecode; their cache entries must still be told apart
    (tmp_path / "litmod.py").write_text(MODULE)
    cache = tmp_path / "cache"
    assert run(tmp_path, cache, "[call_a(5), call_b(5)]")["result"] == [15, 105]
    warm = run(tmp_path, cache, "[call_b(7), call_a(7)]")
    assert warm["result"] == [107, 21]
    assert warm["a_compiled"] == 0 and warm["b_compiled"] == 0      # both loaded from the cache


def test_reassigned_parameter_and_python_calls(tmp_path):
    (tmp_path / "litmod.py").write_text(MODULE)
    res = run(tmp_path, tmp_path / "cache", "[call_reassigns(2), pick(5, 1), pick(5, 2), reassigns(2, 4)]")
    assert res["result"] == [10, 15, 105, 10]
