"""``npu-emu compile``: run the op configurations of :mod:`npu_emu.cli.op_configs` so that numba compiles and caches
every kernel they call, and report what was compiled and how long it took.

Scheduling: one task per op family (per :func:`npu_emu.cli.op_configs.schedule_group`: the two MX quantizer families
share one), ``jobs`` worker processes (spawned, so no numba state is inherited), each task's configurations in
one worker, one after the other. Configurations of one family call the same kernels (often the same kernel with
another signature); in two workers they would compile the same function twice at the same time, wasting a
core, and before npu_emu/device/cache_lock.py two processes saving different signatures of one function could leave an
index entry pointing at the other signature's machine code (numba issues #4807, #10128). The lock makes
concurrent saves safe for every npu_emu process; the grouping keeps the work from being done twice. Small helpers
shared by every family (npu_emu.device.launch and ascendc overloads) can still be compiled by two workers at once: the
lock keeps that correct, and the later save of an identical entry simply replaces the first.

What a configuration compiled comes from numba's "numba:compile" events (one per dispatcher compile, nested when
a kernel's typing compiles the njit functions it calls): each npu_emu dispatcher with its inclusive seconds.
"""

import os
import sys
import time
import traceback


def _compile_events(buffer):
    """[(depth, qualified name, signature, seconds, cache folder)] of the npu_emu dispatchers compiled, in start order, from a
    numba event recording (starts and ends nest: numba compiles under one global lock)."""
    from numba.core.event import EventStatus

    out, stack = [], []
    for ts, ev in buffer:
        if ev.status == EventStatus.START:
            disp = ev.data["dispatcher"]
            fn = getattr(disp, "py_func", None)
            mod = getattr(fn, "__module__", "") or ""
            name = f"{mod}.{getattr(fn, '__qualname__', repr(disp))}"
            sig = ", ".join(str(a) for a in ev.data.get("args", ()))
            try:
                path = disp.stats.cache_path
            except Exception:  # a dispatcher without a cache
                path = None
            entry = [len(stack), name, sig, ts, mod.startswith("npu_emu"), path]
            stack.append(entry)
            out.append(entry)
        elif stack:
            entry = stack.pop()
            entry[3] = ts - entry[3]
    return [(d, name, sig, sec, path) for d, name, sig, sec, ours, path in out if ours]


def run_config(cfg):
    """Run one configuration with numba's compile events recorded: a result dict (JSON-able)."""
    from numba.core import event

    t0, c0 = time.perf_counter(), time.thread_time()
    err = None
    with event.install_recorder("numba:compile") as rec:
        try:
            cfg.call()
        except Exception:  # a failing configuration is reported, the others still run
            err = traceback.format_exc()
    seconds, cpu = time.perf_counter() - t0, time.thread_time() - c0
    compiled = [{"depth": d, "dispatcher": name, "signature": sig, "seconds": sec, "cache_path": path}
                for d, name, sig, sec, path in _compile_events(rec.buffer)]
    return {"name": cfg.name, "family": cfg.family, "seconds": seconds, "cpu_seconds": cpu, "ok": err is None,
            "error": err, "compiled": compiled}


# ---------------------------------------------------------------------------------------------------------------
# worker side
# ---------------------------------------------------------------------------------------------------------------

_QUEUE = None


def _worker_init(queue):
    global _QUEUE
    _QUEUE = queue
    import npu_emu.ops  # noqa: F401  (imports once per worker, outside the configurations' seconds)


def _run_family(names):
    from npu_emu.cli import op_configs

    results = []
    for name in names:
        _QUEUE.put(("start", os.getpid(), name))
        res = run_config(op_configs.CONFIGS[name])
        results.append(res)
        _QUEUE.put(("done", os.getpid(), name))
    return results


# ---------------------------------------------------------------------------------------------------------------
# parent side
# ---------------------------------------------------------------------------------------------------------------

def cache_location():
    """Where numba writes npu_emu's cache: (path, how it was chosen)."""
    env = os.environ.get("NUMBA_CACHE_DIR", "")
    if env:
        return os.path.abspath(env), "NUMBA_CACHE_DIR"
    import npu_emu

    pkg = os.path.dirname(os.path.abspath(npu_emu.__file__))
    if os.access(pkg, os.W_OK):
        return "__pycache__ next to each kernel's source file", f"numba's default, npu_emu installed at {pkg}; " \
            "set NUMBA_CACHE_DIR to choose"
    from numba.misc.appdirs import AppDirs

    return AppDirs(appname="numba", appauthor=False).user_cache_dir, \
        "numba's default for a read-only install; set NUMBA_CACHE_DIR to choose"


def _by_family(configs):
    from npu_emu.cli.op_configs import COST_HINT, schedule_group

    groups = {}
    for c in configs:
        groups.setdefault(schedule_group(c.family), []).append(c.name)
    # the longest first, so that the last worker to finish is not the one that started the biggest late
    return [groups[g] for g in sorted(groups, key=lambda g: (-COST_HINT.get(g, 0), -len(groups[g])))]


def _progress(total, enabled):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="config", file=sys.stderr, dynamic_ncols=True, leave=False)


def run(configs, jobs, *, progress=True):
    """Results (dicts, registry order) of running ``configs`` in ``jobs`` processes (1: in this one)."""
    order = {c.name: i for i, c in enumerate(configs)}
    bar = _progress(len(configs), progress)
    results = []
    running = {}

    def show():
        if bar is not None:
            bar.set_description_str(", ".join(sorted(running.values()))[:80])

    try:
        if min(jobs, len(_by_family(configs))) <= 1:
            for c in configs:
                running[0] = c.name
                show()
                results.append(run_config(c))
                if bar is not None:
                    bar.update(1)
        else:
            results = _run_pool(configs, jobs, bar, running, show)
    finally:
        if bar is not None:
            bar.close()
    return sorted(results, key=lambda r: order[r["name"]])


def _run_pool(configs, jobs, bar, running, show):
    import multiprocessing as mp
    import queue as queue_mod
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    groups = _by_family(configs)
    results, failed = [], []
    with ProcessPoolExecutor(max_workers=min(jobs, len(groups)), mp_context=ctx, initializer=_worker_init,
                             initargs=(q,)) as pool:
        futures = {pool.submit(_run_family, g): g for g in groups}
        pending = set(futures)
        while pending:
            try:
                kind, pid, name = q.get(timeout=0.2)
                if kind == "start":
                    running[pid] = name
                else:
                    running.pop(pid, None)
                    if bar is not None:
                        bar.update(1)
                show()
            except queue_mod.Empty:
                pass
            for f in [f for f in pending if f.done()]:
                pending.discard(f)
                try:
                    results.extend(f.result())
                except Exception as e:  # a worker died (a crash in compiled code): its family is reported failed
                    done = {r["name"] for r in results}
                    for name in futures[f]:
                        if name not in done:
                            failed.append({"name": name, "family": name.split(".", 1)[0], "seconds": 0.0,
                                           "cpu_seconds": 0.0, "ok": False, "compiled": [],
                                           "error": f"the worker running this family failed: {e!r}"})
    return results + failed


def report(results, wall, jobs, where, out=None):
    out = sys.stdout if out is None else out
    print(f"{'configuration':44s} {'seconds':>8s}  kernels compiled (npu_emu dispatchers, inclusive seconds)",
          file=out)
    n_kernels = 0
    for r in results:
        status = "" if r["ok"] else "  FAILED"
        note = f"{len(r['compiled'])} compiled" if r["compiled"] else "none new (loaded from the cache or compiled " \
            "by an earlier configuration)"
        print(f"{r['name']:44s} {r['seconds']:8.2f}  {note}{status}", file=out)
        n_kernels += len(r["compiled"])
        for c in r["compiled"]:
            indent = "  " * (c["depth"] + 1)
            sig = c["signature"] if len(c["signature"]) <= 60 else c["signature"][:57] + "..."
            print(f"    {c['seconds']:8.2f} s {indent}{c['dispatcher']}({sig})", file=out)
        if not r["ok"]:
            print("    " + r["error"].strip().replace("\n", "\n    "), file=out)
    busy = sum(r["seconds"] for r in results)
    cpu = sum(r["cpu_seconds"] for r in results)
    bad = [r["name"] for r in results if not r["ok"]]
    print(f"total: {wall:.1f} s wall for {len(results)} configurations ({busy:.1f} s summed over the "
          f"configurations, {cpu:.1f} s of it CPU time of the calling threads; {jobs} "
          f"process{'es' if jobs > 1 else ''}), {n_kernels} kernel compiles", file=out)
    print(f"numba cache: {where[0]} ({where[1]})", file=out)
    folders = sorted({c["cache_path"] for r in results for c in r["compiled"] if c.get("cache_path")})
    if folders:
        print(f"written to {len(folders)} folder{'s' if len(folders) > 1 else ''} under "
              f"{os.path.commonpath(folders)}", file=out)
    if bad:
        print(f"{len(bad)} configuration{'s' if len(bad) > 1 else ''} failed: {', '.join(bad)}", file=out)


def main(ops=None, jobs=None, list_only=False, json_path=None, progress=True):
    from npu_emu.cli import op_configs

    try:
        configs = op_configs.select(ops)
    except KeyError as e:
        raise SystemExit(f"npu-emu: {e.args[0]}") from None
    if list_only:
        for fam in op_configs.families():
            fam_cfgs = [c for c in configs if c.family == fam]
            if fam_cfgs:
                print(f"{fam}:")
                for c in fam_cfgs:
                    print(f"  {c.name:44s} {c.help}")
        return 0
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    where = cache_location()
    fams = len({c.family for c in configs})
    workers = min(jobs, len(_by_family(configs)))
    print(f"npu-emu compile: {len(configs)} configurations of {fams} op famil{'ies' if fams > 1 else 'y'} in "
          f"{f'{workers} worker processes' if workers > 1 else 'this process'} "
          f"(an op family's configurations in one process); numba cache: {where[0]}", flush=True)
    from npu_emu.device import shipped_kernels

    man = shipped_kernels.manifest()
    if man is not None:
        reason = shipped_kernels.why_not(man)
        print(f"shipped kernels ({man['configurations']} configurations for {man['magic'][1]}): "
              + ("loaded instead of compiled" if reason is None else f"not used here: {reason}"), flush=True)
    t0 = time.perf_counter()
    results = run(configs, jobs, progress=progress)
    wall = time.perf_counter() - t0
    report(results, wall, workers, where)
    if json_path:
        import json

        with open(json_path, "w") as f:
            json.dump({"wall_seconds": wall, "jobs": workers, "cache": where[0], "configurations": results}, f,
                      indent=1)
    return 0 if all(r["ok"] for r in results) else 1


# ---------------------------------------------------------------------------------------------------------------
# the kernels shipped in a wheel (setup.py, NPU_EMU_BUILD_KERNELS=1; npu_emu/device/shipped_kernels.py loads them)
# ---------------------------------------------------------------------------------------------------------------

# numba switches that change the machine code without changing its cache key: never inherited by the bundle's build
_CODEGEN_ENV = ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_OPT", "NUMBA_BOUNDSCHECK", "NUMBA_DEBUGINFO",
                "NUMBA_DISABLE_JIT", "NPU_EMU_SERIAL_KERNELS", "NUMBA_CACHE_LOCATOR_CLASSES")


def build_bundle(pkg_dir, jobs=None, out=None, ops=None):
    """Compile every configuration of :mod:`npu_emu.op_configs`, with the npu_emu package at ``pkg_dir``, for
    the portable CPU level, and lay its numba cache files out under ``pkg_dir/_kernel_cache`` by the
    package-relative folder of their source files, with a manifest of what they are tied to. Returns 0 on success."""
    import json
    import shutil
    import subprocess
    import tempfile

    from npu_emu.device import shipped_kernels as sk

    out = sys.stdout if out is None else out
    pkg_dir = os.path.abspath(pkg_dir)
    dest = os.path.join(pkg_dir, sk.BUNDLE_DIR)
    shutil.rmtree(dest, ignore_errors=True)
    work = tempfile.mkdtemp(prefix="npu-emu-kernels-")
    try:
        cache = os.path.join(work, "numba")
        env = {k: v for k, v in os.environ.items() if k not in _CODEGEN_ENV}
        env.update(NUMBA_CPU_NAME=sk.PORTABLE_CPU, NUMBA_CPU_FEATURES=sk.PORTABLE_FEATURES, NUMBA_CACHE_DIR=cache,
                   NPU_EMU_SHIPPED_KERNELS="0", PYTHONPATH=os.path.dirname(pkg_dir))
        report_path = os.path.join(work, "compile.json")
        args = ["compile", "--no-progress", "--json", report_path] + ([] if jobs is None else ["--jobs", str(jobs)])
        args += ["--ops", *ops] if ops else []      # (the tests build a bundle of a few configurations)
        code = ("import json, sys, npu_emu\n"
                "assert npu_emu.__file__.startswith(sys.argv[1]), npu_emu.__file__\n"
                "from npu_emu.cli import main\n"
                "rc = main(sys.argv[2:])\n"
                "from npu_emu.device.shipped_kernels import build_facts\n"
                "print('FACTS ' + json.dumps(build_facts()))\n"
                "sys.exit(rc)\n")
        print(f"npu-emu: compiling every op configuration for {sk.PORTABLE_CPU} into the wheel", file=out, flush=True)
        done = subprocess.run([sys.executable, "-c", code, pkg_dir] + args, env=env, cwd=work, text=True,
                              stdout=subprocess.PIPE)
        lines = done.stdout.splitlines()
        print("\n".join(line for line in lines if not line.startswith("FACTS ")), file=out, flush=True)
        if done.returncode != 0:
            print(f"npu-emu: the kernel build failed (exit {done.returncode})", file=out)
            return done.returncode or 1
        facts = json.loads([line for line in lines if line.startswith("FACTS ")][-1][6:])
        if tuple(facts["magic"][1:]) != (sk.PORTABLE_CPU, sk.PORTABLE_FEATURES):
            print(f"npu-emu: the kernels were compiled for {facts['magic']}, not {sk.PORTABLE_CPU}", file=out)
            return 1
        n_files, n_bytes = _collect(cache, pkg_dir, dest)
        facts.update(requires=list(sk.V3_FEATURES), files=n_files, bytes=n_bytes,
                     configurations=len(json.load(open(report_path))["configurations"]))
        with open(os.path.join(dest, sk.MANIFEST), "w") as f:
            json.dump(facts, f, indent=1)
        print(f"npu-emu: {n_files} cache files, {n_bytes / 2**20:.1f} MiB, in {dest}", file=out, flush=True)
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _collect(cache, pkg_dir, dest):
    """Copy numba's cache folders (named after each source folder's absolute path) to ``dest`` under the source
    folders' paths relative to ``pkg_dir``; (files, bytes)."""
    import shutil

    from numba.core.caching import _CacheLocator

    folders = {}
    for d, _, _ in os.walk(pkg_dir):
        # numba's name for the cache folder of the sources in d (the argument stands for a file in d)
        folders[_CacheLocator.get_suitable_cache_subpath(os.path.join(d, "x.py"))] = os.path.relpath(d, pkg_dir)
    n_files = n_bytes = 0
    for name in sorted(os.listdir(cache)):
        rel = folders.get(name)
        if rel is None:
            raise RuntimeError(f"numba cache folder {name} does not belong to a folder of {pkg_dir}")
        for fn in sorted(os.listdir(os.path.join(cache, name))):
            if fn.endswith((".nbi", ".nbc")):
                os.makedirs(os.path.join(dest, rel), exist_ok=True)
                shutil.copyfile(os.path.join(cache, name, fn), os.path.join(dest, rel, fn))
                n_files += 1
                n_bytes += os.path.getsize(os.path.join(dest, rel, fn))
    return n_files, n_bytes


if __name__ == "__main__":   # python -m npu_emu.cli.compile --bundle PKG_DIR [JOBS]: what setup.py runs
    if len(sys.argv) >= 3 and sys.argv[1] == "--bundle":
        sys.exit(build_bundle(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None))
    sys.exit("usage: python -m npu_emu.cli.compile --bundle PKG_DIR [JOBS]")
