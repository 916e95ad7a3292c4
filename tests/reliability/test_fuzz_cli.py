"""Fuzz the ``npu-emu`` command line through npu_emu.cli.main(argv) (in process) and the console entry once.

Property: whatever the arguments, main returns an exit status (0 ok, 1 a mismatch, 2 a rejected call, with a
message on stderr) or argparse exits with 0 (--help) / 2 (usage) -- never another exception. The argv is built from
the parser itself: a verb (run / tiling / golden), an op (or an unknown one), its required options (mostly) and some
optional ones, each value drawn from a pool of good and bad ones (existing .bin files of odd sizes, missing paths, a
directory, negative / zero / huge / non-numeric numbers, malformed shapes, unknown choices). The op calls run under a
64 MiB memory limit so a huge size is refused by the guard. A golden -> run -> compare round trip at fuzzed sizes
must PASS bit-exactly.
"""

import argparse
import contextlib
import io
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import strategies as st

import npu_reliability as H
from npu_emu import cli
from npu_emu.frontend import core as frontend

COMMANDS = cli._load_commands()
PARSER = cli.build_parser(COMMANDS)
VERBS = ["run", "tiling", "golden"]
NUMBERS = ["0", "1", "2", "3", "7", "32", "64", "96", "-1", "-32", "4097", str(2 ** 40), str(2 ** 63), "1.5", "nan",
           "abc", "", "0x10", "1e3"]
SHAPES = ["4,32", "2,3,32", "32", "0,32", "1", "-1,32", "4,,32", "a,b", "", "2 3", "64x32", "1,1,1,1,1"]
WORDS = ["float32", "float16", "bfloat16", "int8", "hifloat8", "float8_e4m3fn", "rint", "ascend910b2",
         "ascend950pr", "no_such", "", "DEQ8", "VDEQ16", "T-C", "1", "-1"]
PATH_DESTS = ("input", "x", "table", "indices", "scale", "zero_point", "group_index", "acc", "deq", "x1", "x2",
              "pertoken_scale", "offset", "bias")
OUT_DESTS = ("output", "y", "mxscale", "out")


def _subparsers(p):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return a.choices
    return {}


SUB = {verb: _subparsers(_subparsers(PARSER)[verb]) for verb in VERBS}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-fuzz")
    rng = np.random.default_rng(7)
    paths = []
    for n in (0, 1, 3, 64, 96, 128, 1000, 4096):
        p = d / f"f{n}.bin"
        rng.integers(0, 256, n, dtype=np.uint8).tofile(p)
        paths.append(str(p))
    (d / "sub").mkdir()
    return {"in": paths + [str(d / "missing.bin"), str(d / "sub")],
            "out": [str(d / "o.bin"), str(d / "o2.bin"), str(d / "no" / "dir" / "o.bin"), str(d / "sub")],
            "dir": [str(d / "g"), str(d / "g2"), str(d / "f64.bin")]}


def _value(data, action, files):
    dest = action.dest
    if action.nargs == 0:
        return None                                            # a flag
    if action.choices is not None and data.draw(st.integers(0, 4), f"{dest} choice roll") > 0:
        return str(data.draw(st.sampled_from(sorted(map(str, action.choices))), dest))
    if dest in PATH_DESTS or dest.endswith("_file"):
        return data.draw(st.sampled_from(files["in"]), dest)
    if dest in OUT_DESTS:
        return data.draw(st.sampled_from(files["dir"] if action.dest == "out" else files["out"]), dest)
    if "shape" in dest or dest in ("groups", "group_sizes"):
        return data.draw(st.sampled_from(SHAPES), dest)
    pool = st.sampled_from(NUMBERS + WORDS)
    return data.draw(pool, dest)


def _argv(data, files):
    verb = data.draw(st.sampled_from(VERBS), "verb")
    ops = sorted(SUB[verb])
    op = data.draw(st.sampled_from(ops + ["no_such_op"]), "op")
    argv = [verb, op]
    if op in SUB[verb]:
        for action in SUB[verb][op]._actions:
            if not action.option_strings or action.dest == "help":
                continue
            take = data.draw(st.integers(0, 9), f"take {action.dest}") < (9 if action.required else 3)
            if take:
                v = _value(data, action, files)
                argv += [action.option_strings[-1]] + ([] if v is None else [v])
    if data.draw(st.integers(0, 19), "junk") == 0:
        argv.append(data.draw(st.sampled_from(["--no-such-flag", "extra", "--help"]), "junk arg"))
    return argv


def _main(argv):
    """(exit status, stderr) of cli.main(argv); argparse's SystemExit becomes its code."""
    err, out = io.StringIO(), io.StringIO()
    entry = f"cli {argv[0]}"
    H.CALLS[entry] += 1
    H._progress()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = cli.main(argv)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 2
        if rc not in (0, 2):
            raise H.ContractViolation(f"argparse exit {e.code!r}\nreproducer: npu-emu {' '.join(argv)}") from e
    except (KeyboardInterrupt, H.ContractViolation):
        raise
    except BaseException as e:  # noqa: BLE001
        H.drop_known(entry, e)
        raise H.ContractViolation(f"npu-emu raised {type(e).__name__}: {e}\nreproducer: npu-emu "
                                  f"{' '.join(map(repr, argv))}") from e
    H.OUTCOMES[(entry, "ok" if rc == 0 else f"exit {rc}")] += 1
    if rc not in (0, 1, 2):
        raise H.ContractViolation(f"exit status {rc!r}\nreproducer: npu-emu {' '.join(argv)}")
    if rc == 2 and not err.getvalue().strip():
        raise H.ContractViolation(f"exit 2 without a message\nreproducer: npu-emu {' '.join(argv)}")
    return rc, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _limited():
    old = frontend.set_memory_limit(64 << 20)
    try:
        yield
    finally:
        frontend.set_memory_limit(old)


def _fuzz_cli(data, files):
    argv = _argv(data, files)
    with _limited():
        _main(argv)


def _fuzz_round_trip(data, tmp):
    """golden -> run -> compare at fuzzed sizes: the CLI's run reproduces the golden bit-exactly."""
    op = data.draw(st.sampled_from(["sign_bits_unpack", "gather_dequant_int8"]), "op")
    seed = str(data.draw(st.integers(0, 2 ** 31 - 1), "seed"))
    case = tmp / f"case{H.CALLS['cli round trip']}"
    y = case / "y.bin"
    if op == "sign_bits_unpack":
        n = data.draw(st.sampled_from([1, 3, 64, 65, 513, 2049]), "n")
        size = data.draw(st.sampled_from([d for d in (1, 2, 3, 4, 8) if (8 * n) % d == 0]), "size")
        dtype = data.draw(st.sampled_from(["float32", "float16"]), "dtype")
        gold = ["golden", op, "--out", str(case), "--n", str(n), "--size", str(size), "--dtype", dtype, "--seed", seed]
        run = ["run", op, "--input", str(case / "x.bin"), "--size", str(size), "--dtype", dtype, "--output", str(y),
               "--core-num", data.draw(st.sampled_from(["1", "2", "5"]), "core_num")]
        expect = case / "golden.bin"
    else:
        vocab = data.draw(st.sampled_from([1, 5, 64]), "vocab")
        emb = data.draw(st.sampled_from([32, 64, 96]), "emb")
        k = data.draw(st.sampled_from([1, 7, 40]), "num indices")
        gold = ["golden", op, "--out", str(case), "--vocab", str(vocab), "--emb-dim", str(emb), "--num-indices",
                str(k), "--seed", seed]
        run = ["run", op, "--table", str(case / "table.bin"), "--indices", str(case / "indices.bin"), "--scale",
               str(case / "scale.bin"), "--zero-point", str(case / "zero_point.bin"), "--vocab", str(vocab),
               "--emb-dim", str(emb), "--output", str(y), "--core-num", data.draw(st.sampled_from(["1", "3"]), "cn")]
        expect = case / "output.bin"
    H.CALLS["cli round trip"] += 1
    for argv in (gold, run):
        rc, out, err = _main(argv)
        if rc != 0:
            raise H.ContractViolation(f"npu-emu {' '.join(argv)} failed ({rc}): {err}")
    if y.read_bytes() != expect.read_bytes():
        raise H.ContractViolation(f"npu-emu run {op} differs from its golden: {' '.join(run)}")


def _with_files(body, suffix):
    """H.fast_and_slow for a body that also takes the module's ``files`` fixture."""
    from hypothesis import given, settings

    def fast(files, data):
        body(data, files)

    def slow(files, data):
        body(data, files)

    fast.__name__ = fast.__qualname__ = f"test_{suffix}"
    slow.__name__ = slow.__qualname__ = f"test_{suffix}_long"
    return (settings(settings.get_profile("reliability-fast"))(given(data=st.data())(fast)),
            pytest.mark.slow(settings(settings.get_profile("reliability-slow"))(given(data=st.data())(slow))))


test_fuzz_cli, test_fuzz_cli_long = _with_files(_fuzz_cli, "fuzz_cli")


def _round_trip(data, files):
    _fuzz_round_trip(data, pathlib.Path(files["dir"][0]).parent)


test_fuzz_cli_round_trip, test_fuzz_cli_round_trip_long = _with_files(_round_trip, "fuzz_cli_round_trip")


def test_console_entry_rejects_bad_input_with_status_2(tmp_path):
    """The installed entry (python -m npu_emu.cli) exits 2 with a message for a rejected call, no traceback."""
    x = tmp_path / "x.bin"
    np.arange(3, dtype=np.uint8).tofile(x)
    r = subprocess.run([sys.executable, "-m", "npu_emu.cli", "run", "sign_bits_unpack", "--input", str(x), "--size",
                        "-4", "--output", str(tmp_path / "y.bin")], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)  # not the repository root, whose source folder would shadow the install
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.strip()
