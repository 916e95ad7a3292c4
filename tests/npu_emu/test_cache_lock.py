"""numba's cache index under concurrent compiles (npu_emu/device/cache_lock.py).

Two processes compile different signatures of one cached njit function at the same moment (a file barrier
before each call), ROUNDS times over fresh functions, into one NUMBA_CACHE_DIR; then a fresh process loads every
signature from the cache and checks its result. Each worker slows numba's own save steps by fixed amounts (rank
0: 50 ms before its index write, 200 ms before its data write; rank 1: 150 ms, 0 ms), so that without a lock both
read the empty index, both pick data file 1, rank 1's index write lands last and rank 0's data write lands last:
the index then sends rank 1's signature to rank 0's machine code. That is numba's race (issues #4807, #10128)
made certain instead of rare. With npu_emu's lock the whole save is one critical section and the delays only
serialise it. The unlocked run must show the corruption, which proves the check can fail.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("fcntl")

ROUNDS = 3

MODULE = textwrap.dedent("""\
    from numba import njit


    @njit(cache=True)
    def f(a):
        return a[0] * 3 + 1
    """)

WORKER = textwrap.dedent("""\
    import importlib.util, os, sys, time
    import numpy as np
    from numba.core import caching

    root, rank, rounds, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if mode == "locked":
        from npu_emu.device import cache_lock
        cache_lock.install()
        assert cache_lock.installed()

    delay_index, delay_data = (0.05, 0.2) if rank == 0 else (0.15, 0.0)
    save_index, save_data = caching.IndexDataCacheFile._save_index, caching.IndexDataCacheFile._save_data

    def slow_save_index(self, overloads):
        time.sleep(delay_index)
        save_index(self, overloads)

    def slow_save_data(self, name, data):
        time.sleep(delay_data)
        save_data(self, name, data)

    caching.IndexDataCacheFile._save_index = slow_save_index
    caching.IndexDataCacheFile._save_data = slow_save_data

    def barrier(tag):
        open(os.path.join(root, f"{tag}.{rank}"), "w").close()
        other = os.path.join(root, f"{tag}.{1 - rank}")
        deadline = time.monotonic() + 60
        while not os.path.exists(other):
            if time.monotonic() > deadline:
                raise SystemExit("the other worker never arrived")

    arg = np.array([5], np.int64) if rank == 0 else np.array([5.0], np.float64)
    for i in range(rounds):
        spec = importlib.util.spec_from_file_location(f"racy{i}", os.path.join(root, f"racy{i}.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        barrier(i)
        assert mod.f(arg) == 16
    """)

CHECK = textwrap.dedent("""\
    import importlib.util, json, os, sys
    import numpy as np

    root, rounds = sys.argv[1], int(sys.argv[2])
    out = []
    for i in range(rounds):
        spec = importlib.util.spec_from_file_location(f"racy{i}", os.path.join(root, f"racy{i}.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for arg in (np.array([5], np.int64), np.array([5.0], np.float64)):
            value = mod.f(arg)
            out.append({"round": i, "arg": str(arg.dtype), "value": float(value),
                        "hits": sum(mod.f.stats.cache_hits.values()), "misses": sum(mod.f.stats.cache_misses.values())})
    print(json.dumps(out))
    """)


def _race(tmp_path, mode):
    root = tmp_path / mode
    root.mkdir()
    for i in range(ROUNDS):
        (root / f"racy{i}.py").write_text(MODULE)
    (root / "worker.py").write_text(WORKER)
    (root / "check.py").write_text(CHECK)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(root / "cache"))
    workers = [subprocess.Popen([sys.executable, str(root / "worker.py"), str(root), str(rank), str(ROUNDS), mode],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for rank in (0, 1)]
    for w in workers:
        out, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    done = subprocess.run([sys.executable, str(root / "check.py"), str(root), str(ROUNDS)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_unlocked_numba_cache_gives_wrong_answers(tmp_path):
    # the harness reproduces numba's race: a signature loaded from the cache runs the other signature's code
    results = _race(tmp_path, "unlocked")
    wrong = [r for r in results if r["value"] != 16.0]
    assert wrong, ("numba's unlocked cache gave no wrong answer: this numba saves its index safely, or the "
                   f"delays no longer interleave the two saves; results {results}")


def test_locked_numba_cache_loads_every_signature_correctly(tmp_path):
    results = _race(tmp_path, "locked")
    assert all(r["value"] == 16.0 for r in results), results
    # both signatures of every function were saved (none lost to the other process's index write) and loaded
    assert all(r["misses"] == 0 for r in results), results
    assert all(r["hits"] >= 1 for r in results), results


def test_lock_is_installed_by_kernel_imports_not_by_import_npu_emu(tmp_path):
    code = textwrap.dedent("""\
        import sys
        import npu_emu
        assert "numba" not in sys.modules, "import npu_emu imported numba"
        import npu_emu.kernels.quant_matmul.tiling          # a module with cached njit functions
        from npu_emu.device import cache_lock
        assert cache_lock.installed()
        from numba.core.caching import IndexDataCacheFile
        assert IndexDataCacheFile.save.__wrapped__ is not None
        """)
    # cwd outside the checkout: its source folder would shadow an installed npu_emu
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_lock_file_sits_next_to_the_index(tmp_path):
    code = textwrap.dedent("""\
        import importlib.util, os, sys
        import numpy as np
        from npu_emu.device import cache_lock
        cache_lock.install()
        spec = importlib.util.spec_from_file_location("racy0", sys.argv[1])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        assert mod.f(np.array([5], np.int64)) == 16
        """)
    (tmp_path / "racy0.py").write_text(MODULE)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "racy0.py")], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    index = [p for p in (tmp_path / "cache").rglob("*.nbi")]
    assert len(index) == 1
    assert (index[0].parent / (index[0].name + ".lock")).exists()
