"""``npu-emu compile``: the configuration list, usage errors, failures, and that what it writes into numba's cache
is what a later process loads (every npu_emu kernel that runs is a cache hit, none is compiled again)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from npu_emu import cli
from npu_emu.cli import op_configs
from npu_emu.cli.op_configs import OpConfig

# cheap to compile cold, in two families so that --jobs 2 runs two worker processes
CHEAP = ["sign_bits.unpack_f32", "codecs.decode_float8_e4m3fn"]


def run(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_list_names_every_configuration_and_family(capsys):
    rc, out, _ = run(["compile", "--list"], capsys)
    assert rc == 0
    for name in op_configs.CONFIGS:
        assert name in out
    for fam in op_configs.families():
        assert f"{fam}:" in out


def test_list_of_one_family(capsys):
    rc, out, _ = run(["compile", "--list", "--ops", "data_copy_dequant"], capsys)
    assert rc == 0
    assert "data_copy_dequant.vdeq16" in out and "sign_bits" not in out


def test_unknown_op_is_a_usage_error_naming_the_valid_ones(capsys):
    rc, out, err = run(["compile", "--ops", "sign_bits", "no_such_op"], capsys)
    assert rc == 2
    assert "no_such_op" in err
    for fam in op_configs.families():
        assert fam in err


def test_jobs_must_be_positive(capsys):
    rc, _, err = run(["compile", "--jobs", "0"], capsys)
    assert rc == 2 and "--jobs" in err


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["compile", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "npu-emu compile --ops" in out and "each op family in one worker" in out.replace("\n", " ")


def test_registry_names_are_family_dot_variant():
    assert len(op_configs.CONFIGS) == len(set(op_configs.CONFIGS))
    for name, c in op_configs.CONFIGS.items():
        assert name == c.name and name.startswith(c.family + ".")


def test_a_failing_configuration_gives_exit_status_1(capsys, monkeypatch):
    def build():
        def call():
            raise ValueError("deliberate")
        return call

    monkeypatch.setitem(op_configs.CONFIGS, "broken.call", OpConfig("broken.call", "broken", "fails", build))
    rc, out, err = run(["compile", "--ops", "broken", "--jobs", "1", "--no-progress"], capsys)
    assert rc == 1, err
    assert "FAILED" in out and "deliberate" in out and "1 configuration failed: broken.call" in out


LOAD_CHECK = textwrap.dedent("""\
    import json, sys
    from numba.core.dispatcher import Dispatcher
    from npu_emu.cli import op_configs
    for name in sys.argv[1:]:
        op_configs.CONFIGS[name].call()
    ran = {}
    for mod_name, mod in list(sys.modules.items()):
        if not mod_name.startswith("npu_emu"):
            continue
        for attr, obj in vars(mod).items():
            if isinstance(obj, Dispatcher) and obj.signatures:
                key = f"{obj.py_func.__module__}.{obj.py_func.__qualname__}"
                ran[key] = {"hits": sum(obj.stats.cache_hits.values()), "misses": sum(obj.stats.cache_misses.values())}
    print(json.dumps(ran))
    """)


def test_compile_output_is_what_later_calls_load(tmp_path):
    cache = tmp_path / "cache"
    # compiles into an empty cache, not loads from the kernels a wheel built with them ships
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), NPU_EMU_SHIPPED_KERNELS="0")
    report = tmp_path / "compile.json"
    done = subprocess.run([sys.executable, "-m", "npu_emu.cli", "compile", "--ops", *CHEAP, "--jobs", "2",
                           "--no-progress", "--json", str(report)], env=env, capture_output=True, text=True,
                          timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"numba cache: {cache}" in done.stdout
    res = json.loads(report.read_text())
    assert res["jobs"] == 2 and res["cache"] == str(cache)
    assert [r["name"] for r in res["configurations"]] == CHEAP
    compiled = {c["dispatcher"] for r in res["configurations"] for c in r["compiled"]}
    assert any(d.startswith("npu_emu.kernels.sign_bits.kernel.") for d in compiled), compiled
    assert any(d.startswith("npu_emu.dtypes._kernels.") for d in compiled), compiled
    assert all(c["seconds"] > 0 for r in res["configurations"] for c in r["compiled"])

    check = subprocess.run([sys.executable, "-c", LOAD_CHECK, *CHEAP], env=env, capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    ran = json.loads(check.stdout)
    assert any(k.startswith("npu_emu.kernels.sign_bits.kernel.") for k in ran), ran
    assert any(k.startswith("npu_emu.dtypes._kernels.") for k in ran), ran
    not_loaded = {k: v for k, v in ran.items() if v["misses"] or not v["hits"]}
    assert not not_loaded, f"compiled again instead of loaded from the cache npu-emu compile filled: {not_loaded}"

    # the same configurations once more through npu-emu compile: nothing left to compile
    again = subprocess.run([sys.executable, "-m", "npu_emu.cli", "compile", "--ops", *CHEAP, "--jobs", "1",
                            "--no-progress"], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("none new (loaded from the cache") == len(CHEAP), again.stdout


def test_jobs_schedule_keeps_each_family_and_the_mx_quantizers_in_one_worker():
    from npu_emu.cli import compile as precompile

    groups = precompile._by_family(op_configs.select())
    assert sorted(n for g in groups for n in g) == sorted(op_configs.CONFIGS)
    where = {}
    for i, g in enumerate(groups):
        for n in g:
            where.setdefault(op_configs.CONFIGS[n].family, set()).add(i)
    assert all(len(v) == 1 for v in where.values()), where
    # both MX kernels call the same cached njit functions (_fp32_rows, _convert, _column_blocks)
    assert where["dynamic_mx_quant"] == where["grouped_dynamic_mx_quant"]


def test_demo_compiles_a_cold_run_in_parallel_processes(tmp_path, monkeypatch):
    """npu-emu demo's first run compiles its cases' kernels in worker processes (one per op family group), leaves
    a marker, and does not do it again; the demo's own process then loads what the workers cached."""
    import os
    import subprocess
    import sys

    keys = ["encode_float8_e4m3fn", "data_copy_deq8"]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), XDG_CACHE_HOME=str(tmp_path / "xdg"),
               NPU_EMU_SHIPPED_KERNELS="0")
    code = ("import json, sys, time\n"
            "from npu_emu.cli import demo\n"
            "keys = sys.argv[1:]\n"
            "first = demo.warm_up(keys, 2, progress=False)\n"
            "again = demo.warm_up(keys, 2, progress=False)\n"
            "from numba.core import event\n"
            "with event.install_recorder('numba:compile') as rec:\n"
            "    rc = demo.main(small=True, only=keys, progress=False, repeat=1)\n"
            "ours = [e for _, e in rec.buffer if 'npu_emu' in getattr(getattr(e.data['dispatcher'], 'py_func', None), '__module__', '')]\n"
            "print(json.dumps(dict(first=first, again=again, rc=rc, compiled=len(ours))))\n")
    done = subprocess.run([sys.executable, "-c", code, *keys], env=env, capture_output=True, text=True,
                          cwd=str(tmp_path), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["first"] > 0 and got["again"] == 0.0, got
    assert got["rc"] == 0
    assert got["compiled"] == 0, f"the demo's own process compiled {got['compiled']} npu_emu functions after warm-up"
    assert list((tmp_path / "xdg").rglob("demo-compiled-*")), "no marker written"
