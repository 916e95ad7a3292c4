"""Time to first result: for every op configuration of npu_emu.cli.op_configs (the list `npu-emu compile` runs), the
first call's seconds in a fresh process with an empty numba cache (cold: numba compiles) and with that
configuration's cache filled (warm: numba loads), the import times of npu_emu and npu_emu.ops in a fresh
interpreter, the tiny repeated call's cost, and `npu-emu compile --jobs 2` of everything into an empty cache.

The first-call figures are tracked, not asserted (lower is better, as asv reads every number). Each cold or warm
sample runs in its own subprocess with its own NUMBA_CACHE_DIR; the seconds are measured inside that process
around the call alone (inputs built and npu_emu.ops imported before), so interpreter start and imports are not in
them (they have their own benchmarks). A cold compile of the MX quantizers takes minutes on two cores, hence the
timeouts; select configurations with asv's -b, which matches "name('configuration')" for these, e.g.
-b "bench_startup.*'codecs.encode_float8_e4m3fn'".
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from npu_emu.cli import op_configs

CONFIGS = list(op_configs.CONFIGS)

_FIRST_CALL = """
import json, sys, time
from numba.core import event
from npu_emu.cli import op_configs
import npu_emu.ops
call = op_configs.CONFIGS[sys.argv[1]].build()
compiles = []
class Compiles(event.Listener):   # each dispatcher compile numba runs (not loads from the cache), by module
    def on_start(self, ev):
        compiles.append(ev.data["dispatcher"].py_func.__module__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Compiles())
c0, t0 = time.thread_time(), time.perf_counter()
call()
t1, c1 = time.perf_counter(), time.thread_time()
call()
t2 = time.perf_counter()
print(json.dumps({"first": t1 - t0, "first_cpu": c1 - c0, "second": t2 - t1, "compiles": len(compiles),
                  "npu_emu_compiles": sum(m.startswith("npu_emu") for m in compiles)}))
"""


def first_call(name, cache_dir, timeout):
    """{"first": seconds, "first_cpu": seconds, "second": seconds} of configuration ``name`` in a fresh process
    using ``cache_dir``: wall seconds of the first and second call, and the calling thread's CPU seconds in the
    first (numba compiles in that thread, so on a busy machine this stays near the idle wall time)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, "-c", _FIRST_CALL, name], env=env, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed in a fresh process:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


class ColdFirstCall:
    """The first call of one configuration in a fresh process with an empty numba cache: compile + run."""

    params = (CONFIGS,)
    param_names = ["configuration"]
    timeout = 600        # the slowest cold configuration takes ~13 s idle; a busy 2-core box can be 5x slower
    number = 1
    repeat = 1

    def setup(self, name):
        self.cache = tempfile.mkdtemp(prefix="npu-emu-cold-")

    def teardown(self, name):
        shutil.rmtree(self.cache, ignore_errors=True)

    def track_cold_first_call(self, name):
        return first_call(name, self.cache, self.timeout)["first"]

    track_cold_first_call.unit = "seconds"


class ColdCompiles:
    """How many numba dispatcher compiles (functions typed, lowered and optimised on their own: npu_emu's kernels
    and helpers, numba's overload implementations) the first call of one configuration runs, in a fresh process
    with an empty cache: unlike the seconds, independent of the load of a shared box. 0 where the install ships
    the kernels (a wheel built with NPU_EMU_BUILD_KERNELS=1)."""

    params = (CONFIGS,)
    param_names = ["configuration"]
    timeout = 600
    number = 1
    repeat = 1

    def setup(self, name):
        self.cache = tempfile.mkdtemp(prefix="npu-emu-cold-")

    def teardown(self, name):
        shutil.rmtree(self.cache, ignore_errors=True)

    def track_cold_compiles(self, name):
        return first_call(name, self.cache, self.timeout)["compiles"]

    track_cold_compiles.unit = "functions"


class WarmFirstCall:
    """The first call of one configuration in a fresh process whose numba cache holds that configuration's
    kernels (filled by a first process in setup): cache load + run."""

    params = (CONFIGS,)
    param_names = ["configuration"]
    timeout = 600        # the slowest cold configuration takes ~13 s idle; a busy 2-core box can be 5x slower
    number = 1
    repeat = 1

    def setup(self, name):
        self.cache = tempfile.mkdtemp(prefix="npu-emu-warm-")
        first_call(name, self.cache, self.timeout)

    def teardown(self, name):
        shutil.rmtree(self.cache, ignore_errors=True)

    def track_warm_first_call(self, name):
        return first_call(name, self.cache, self.timeout)["first"]

    track_warm_first_call.unit = "seconds"


class TinyCall:
    """The repeated call of a configuration's tiny inputs in this process, kernels already loaded: the fixed
    cost of a call (checks, tiling, launch validation, allocation), not throughput. The first call in setup
    compiles or loads from the run's numba cache."""

    params = (CONFIGS,)
    param_names = ["configuration"]
    timeout = 1200

    def setup(self, name):
        self.call = op_configs.CONFIGS[name].build()
        self.call()

    def time_tiny_call(self, name):
        self.call()


class Import:
    """Imports in a fresh interpreter (asv's timeraw: a new process per sample)."""

    timeout = 300

    def timeraw_import_npu_emu(self):
        return "import npu_emu"

    def timeraw_import_npu_emu_ops(self):
        return "import npu_emu.ops"


class CompileAll:
    """`npu-emu compile --jobs 2` of every configuration into an empty NUMBA_CACHE_DIR, wall seconds (the issue's
    target: 3 minutes on two cores)."""

    timeout = 3600
    number = 1
    repeat = 1

    def setup(self):
        self.cache = tempfile.mkdtemp(prefix="npu-emu-compile-")

    def teardown(self):
        shutil.rmtree(self.cache, ignore_errors=True)

    def track_compile_all_jobs2(self):
        env = dict(os.environ, NUMBA_CACHE_DIR=self.cache)
        out = os.path.join(self.cache, "compile.json")
        done = subprocess.run([sys.executable, "-m", "npu_emu.cli", "compile", "--jobs", "2", "--no-progress",
                               "--json", out], env=env, capture_output=True, text=True, timeout=self.timeout)
        if done.returncode != 0:
            raise RuntimeError(f"npu-emu compile failed:\n{done.stdout}\n{done.stderr}")
        with open(out) as f:
            return json.load(f)["wall_seconds"]

    track_compile_all_jobs2.unit = "seconds"
