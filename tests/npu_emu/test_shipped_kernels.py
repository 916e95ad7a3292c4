"""Kernels shipped in the wheel (npu_emu/device/shipped_kernels.py, setup.py NPU_EMU_BUILD_KERNELS=1).

A bundle of two cheap configurations is built into a copy of this install's package, exactly as a wheel build
does (npu_emu.cli.compile.build_bundle, for x86-64-v3), then that copy is moved to another path and made read-only
(a site-packages the user cannot write): a fresh process with an empty NUMBA_CACHE_DIR runs the configurations and
compiles nothing of npu_emu, while a user's own cached numba function in the same process is compiled, saved and
loaded by numba exactly as without npu-emu. Where the bundle does not fit (a CPU feature the host lacks,
NPU_EMU_SHIPPED_KERNELS=0, a numba or Python version of its own) the same calls compile and give the same bits.

When this install itself carries a bundle (CI: NPU_EMU_REQUIRE_SHIPPED_KERNELS=1), every configuration of
npu-emu compile and the whole small demo run in a fresh process with an empty cache without compiling any npu_emu
function.
"""

import importlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import npu_emu
from npu_emu.device import shipped_kernels as sk

CHEAP = ["sign_bits.unpack_f32", "codecs.encode_float8_e4m3fn"]

USER_MOD = textwrap.dedent("""
    import numba

    @numba.njit(cache=True)
    def user_sum(a):
        s = 0.0
        for v in a:
            s += v
        return s
""")

# runs the configurations named in argv, then the user's function; prints what numba compiled and loaded
PROBE = textwrap.dedent("""
    import hashlib, json, sys
    import numpy as np
    from numba.core import event
    from npu_emu.cli import op_configs
    from npu_emu.device import shipped_kernels

    compiled = []

    class L(event.Listener):
        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            compiled.append(f"{fn.__module__}.{fn.__qualname__}")

        def on_end(self, ev):
            pass

    event.register("numba:compile", L())
    digests = {}
    for name in sys.argv[1:]:
        out = op_configs.CONFIGS[name].call()
        outs = out if isinstance(out, tuple) else (out,)
        digests[name] = hashlib.sha256(b"".join(np.ascontiguousarray(o).view(np.uint8).tobytes()
                                                for o in outs)).hexdigest()
    import user_mod
    total = user_mod.user_sum(np.arange(10.0))
    stats = user_mod.user_sum.stats
    print(json.dumps({"compiled": compiled, "digests": digests, "hits": shipped_kernels.hits(),
                      "why_not": shipped_kernels.why_not(), "user": [total, sum(stats.cache_hits.values()),
                      sum(stats.cache_misses.values()), user_mod.user_sum.stats.cache_path]}))
""")


def _package_copy(dest):
    """This install's npu_emu package, laid out as a wheel installs it (kernels/ and dtypes/ inside), at dest."""
    pkg = os.path.dirname(os.path.abspath(npu_emu.__file__))
    skip = shutil.ignore_patterns("__pycache__", sk.BUNDLE_DIR)
    shutil.copytree(pkg, dest / "npu_emu", ignore=skip)
    for sub in ("kernels", "dtypes"):     # an editable install maps them from the repository root
        src = os.path.dirname(os.path.abspath(importlib.import_module(f"npu_emu.{sub}").__file__))
        if not os.path.exists(dest / "npu_emu" / sub):
            shutil.copytree(src, dest / "npu_emu" / sub, ignore=skip)
    return dest / "npu_emu"


def _read_only(root):
    for d, dirs, files in os.walk(root):
        for f in files:
            os.chmod(os.path.join(d, f), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(d, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


def _writable(root):
    for d, dirs, files in os.walk(root):
        os.chmod(d, stat.S_IRWXU)
        for f in files:
            os.chmod(os.path.join(d, f), stat.S_IRUSR | stat.S_IWUSR)


def _probe(site, cache, work, names=CHEAP, **env_extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(work)]), NUMBA_CACHE_DIR=str(cache),
               **env_extra)
    done = subprocess.run([sys.executable, "-c", PROBE, *names], env=env, capture_output=True, text=True,
                          cwd=work, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """A package copy with a bundle of CHEAP, moved to another path and made read-only: its site folder."""
    build = tmp_path_factory.mktemp("build")
    pkg = _package_copy(build)
    from npu_emu.cli.compile import build_bundle

    assert build_bundle(str(pkg), jobs=1, ops=CHEAP) == 0
    site = tmp_path_factory.mktemp("site-elsewhere")
    shutil.copytree(pkg, site / "npu_emu")
    shutil.rmtree(build)
    _read_only(site)
    work = tmp_path_factory.mktemp("work")
    (work / "user_mod.py").write_text(USER_MOD)
    yield site, work
    _writable(site)


def test_bundle_manifest_is_portable_and_laid_out_by_package_path(bundle):
    site, _ = bundle
    man = json.loads((site / "npu_emu" / sk.BUNDLE_DIR / sk.MANIFEST).read_text())
    assert man["magic"][1:] == [sk.PORTABLE_CPU, sk.PORTABLE_FEATURES]
    assert man["configurations"] == len(CHEAP) and man["files"] >= 4
    names = {os.path.relpath(os.path.join(d, f), site / "npu_emu" / sk.BUNDLE_DIR)
             for d, _, fs in os.walk(site / "npu_emu" / sk.BUNDLE_DIR) for f in fs}
    assert any(n.startswith(os.path.join("kernels", "sign_bits", "kernel.")) and n.endswith(".nbi") for n in names)
    assert any(n.startswith(os.path.join("dtypes", "_kernels.")) and n.endswith(".nbc") for n in names)
    # each file in the package-relative folder of its source file, nothing named after the build's absolute path
    assert all((site / "npu_emu" / os.path.dirname(n)).is_dir() for n in names if n != sk.MANIFEST), names


def test_first_calls_compile_nothing_from_a_read_only_install_elsewhere(bundle, tmp_path):
    site, work = bundle
    cache = tmp_path / "cache"
    res = _probe(site, cache, work)
    assert res["why_not"] is None
    ours = [c for c in res["compiled"] if c.startswith("npu_emu")]
    assert ours == [], f"compiled although shipped: {ours}"
    assert res["hits"] >= 2
    # the user's own cached function: compiled and saved into NUMBA_CACHE_DIR by numba, as without npu-emu ...
    total, hits, misses, path = res["user"]
    assert total == 45.0 and (hits, misses) == (0, 1) and path.startswith(str(cache))
    assert [c for c in res["compiled"] if not c.startswith("npu_emu")] == ["user_mod.user_sum"]
    # ... and loaded from there by the next process
    again = _probe(site, cache, work)
    assert again["user"][1:3] == [1, 0] and again["compiled"] == []
    assert again["digests"] == res["digests"]


@pytest.mark.parametrize("how", ["feature", "switch", "numba"])
def test_where_the_bundle_does_not_fit_calls_compile_with_the_same_bits(bundle, tmp_path, how):
    site, work = bundle
    shipped = _probe(site, tmp_path / "cache-shipped", work)
    env = {}
    if how == "switch":
        env["NPU_EMU_SHIPPED_KERNELS"] = "0"
        other = site
    else:
        other = tmp_path / "site"
        shutil.copytree(site / "npu_emu", other / "npu_emu")
        _writable(other)
        man_path = other / "npu_emu" / sk.BUNDLE_DIR / sk.MANIFEST
        man = json.loads(man_path.read_text())
        if how == "feature":     # a CPU without a feature of the bundle's level
            man["requires"] = man["requires"] + ["npu-emu-no-such-feature"]
        else:                    # the wheel was built with another numba
            man["numba"] = "0.0.1"
        man_path.write_text(json.dumps(man))
    res = _probe(other, tmp_path / "cache", work, **env)
    assert res["why_not"] and res["hits"] == 0
    assert [c for c in res["compiled"] if c.startswith("npu_emu")], "nothing compiled without a fitting bundle"
    assert res["digests"] == shipped["digests"]


def test_why_not_names_the_mismatch():
    facts = sk.build_facts()
    man = dict(facts, magic=[facts["magic"][0], sk.PORTABLE_CPU, sk.PORTABLE_FEATURES], requires=list(sk.V3_FEATURES))
    assert "numba 0.0.1" in sk.why_not(dict(man, numba="0.0.1"))
    assert "Python 2.7" in sk.why_not(dict(man, python="2.7"))
    assert "lacks npu-emu-x" in sk.why_not(dict(man, requires=["avx", "npu-emu-x"]))
    assert "NUMBA_OPT" in sk.why_not(dict(man, opt=0))
    assert "NPU_EMU_SERIAL_KERNELS" in sk.why_not(dict(man, serial_kernels=not facts["serial_kernels"]))


# ---------------------------------------------------------------------------------------------------------------
# this install's own bundle (a wheel built with NPU_EMU_BUILD_KERNELS=1: CI)
# ---------------------------------------------------------------------------------------------------------------

def _installed_bundle():
    man = sk.manifest()
    if man is None:
        if os.environ.get("NPU_EMU_REQUIRE_SHIPPED_KERNELS") == "1":
            pytest.fail("NPU_EMU_REQUIRE_SHIPPED_KERNELS=1 but this install carries no shipped kernels")
        pytest.skip("this install carries no shipped kernels (built without NPU_EMU_BUILD_KERNELS=1)")
    reason = sk.why_not(man)
    if reason is not None:
        if os.environ.get("NPU_EMU_REQUIRE_SHIPPED_KERNELS") == "1":
            pytest.fail(f"this install's shipped kernels are not used here: {reason}")
        pytest.skip(f"this install's shipped kernels are not used here: {reason}")
    return man


TIMED = textwrap.dedent("""
    import json, sys, time
    from numba.core import event
    from npu_emu.cli import op_configs
    from npu_emu.device import shipped_kernels

    compiled = []

    class L(event.Listener):
        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            compiled.append((name, f"{fn.__module__}.{fn.__qualname__}"))

        def on_end(self, ev):
            pass

    event.register("numba:compile", L())
    seconds = {}
    name = "demo"
    if sys.argv[1] == "demo":
        from npu_emu.cli import main
        assert main(["demo", "--small", "--repeat", "1"]) == 0
    else:
        import runpy
        import npu_emu.ops

        frozen = runpy.run_path(sys.argv[2])["frozen"]      # test_read_only_inputs.frozen
        for cfg_name, cfg in op_configs.CONFIGS.items():
            name = cfg_name
            call = cfg.build()
            c0 = time.thread_time()
            call()
            seconds[name] = time.thread_time() - c0
            # the same call on read-only inputs (np.frombuffer, a memory map) needs the same shipped kernels
            name = cfg_name + " (read-only inputs)"
            for cell in call.__closure__ or ():
                cell.cell_contents = frozen(cell.cell_contents)
            call()
    print(json.dumps({"compiled": compiled, "seconds": seconds, "hits": shipped_kernels.hits()}))
""")


def _timed(arg, tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    frozen_from = Path(__file__).with_name("test_read_only_inputs.py")
    done = subprocess.run([sys.executable, "-c", TIMED, arg, str(frozen_from)], env=env, capture_output=True,
                          text=True, cwd=tmp_path, timeout=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_installed_bundle_every_configuration_compiles_nothing(tmp_path):
    man = _installed_bundle()
    from npu_emu.cli import op_configs

    assert man["configurations"] == len(op_configs.CONFIGS)
    res = _timed("configs", tmp_path)
    ours = [c for c in res["compiled"] if c[1].startswith("npu_emu")]
    assert ours == [], f"compiled although shipped: {ours}"
    # the first call's CPU seconds (loading the machine code and running a tiny call), not wall time, which a
    # shared box inflates
    slow = {k: round(v, 2) for k, v in res["seconds"].items() if v > 2.0}
    assert not slow, slow


def test_installed_bundle_small_demo_compiles_nothing(tmp_path):
    _installed_bundle()
    res = _timed("demo", tmp_path)
    ours = [c for c in res["compiled"] if c[1].startswith("npu_emu")]
    assert ours == [], f"the demo compiled although shipped: {ours}"
    assert res["hits"] > 0
