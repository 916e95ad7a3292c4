"""The ``npu-emu`` command: every subcommand through ``npu_emu.cli.main(argv)`` (in-process, fast) and the installed
console script once. Exit status: 0 ok, 1 a mismatch (compare, demo), 2 bad usage or a rejected call."""

import json
import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from npu_emu import cli
from npu_emu.cli import demo


def run(argv, capsys):
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def usage_exit(argv, capsys):
    """argparse's own exits (--help: 0, bad flags: 2)."""
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    out, err = capsys.readouterr()
    return e.value.code, out, err


COMMANDS = cli._load_commands()


# ---------------------------------------------------------------------------------------------------------------
# list / help
# ---------------------------------------------------------------------------------------------------------------

def test_list_names_ops_socs_formats_and_demo_cases(capsys):
    rc, out, _ = run(["list"], capsys)
    assert rc == 0
    for name in ("sign_bits_unpack", "sign_bits_pack", "gather_dequant_int8", "data_copy_dequant"):
        assert name in out
    assert "ascend910b2" in out and "ascend950pr" in out and "kirin9020" in out
    # formats with their aclDataType codes (docs/conventions.md §5)
    assert "hifloat8         aclDataType 34" in out and "float4_e2m1      aclDataType 40" in out
    for key in demo.BUILDERS:
        assert key in out


def test_top_level_help_teaches(capsys):
    code, out, _ = usage_exit(["--help"], capsys)
    assert code == 0
    for cmd in ("list", "demo", "bench", "compile", "onnx", "exec", "quantize-checkpoint", "cabi", "compare", "run",
                "tiling", "golden"):
        assert cmd in out
    assert "examples:" in out and "npu-emu compare" in out


HELPS = [["demo"], ["bench"], ["compile"], ["compare"], ["list"], ["onnx", "run"], ["exec"],
         ["quantize-checkpoint"], ["cabi", "build"]] + \
    [[verb, op] for op, spec in COMMANDS.items() for verb in ("run", "tiling", "golden") if verb in spec]


@pytest.mark.parametrize("argv", HELPS, ids=["-".join(a) for a in HELPS])
def test_every_subcommand_has_help(argv, capsys):
    code, out, _ = usage_exit(argv + ["--help"], capsys)
    assert code == 0 and "usage: npu-emu" in out


def test_unknown_op_and_missing_command_are_usage_errors(capsys):
    code, _, err = usage_exit(["run", "no_such_op"], capsys)
    assert code == 2 and "invalid choice" in err and "sign_bits_unpack" in err     # argparse lists the choices
    code, _, err = usage_exit([], capsys)
    assert code == 2


def test_console_script_and_module_entry_point(tmp_path):
    exe = shutil.which("npu-emu", path=os.path.dirname(sys.executable)) or shutil.which("npu-emu")
    cmd = [exe] if exe else [sys.executable, "-m", "npu_emu.cli"]
    res = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("npu-emu ")


def test_output_into_a_closed_pipe_stops_quietly(tmp_path):
    # `npu-emu list | head -0`: the reader has gone before the first line; no error message, no traceback
    exe = shutil.which("npu-emu", path=os.path.dirname(sys.executable)) or shutil.which("npu-emu")
    cmd = [exe] if exe else [sys.executable, "-m", "npu_emu.cli"]
    proc = subprocess.Popen(cmd + ["list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()      # before the command has printed anything
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    assert err == "" and proc.returncode in (0, 1)


# ---------------------------------------------------------------------------------------------------------------
# golden / run / compare round trips
# ---------------------------------------------------------------------------------------------------------------

GOLDEN_OPS = [op for op, spec in COMMANDS.items() if "golden" in spec]


@pytest.mark.parametrize("op", GOLDEN_OPS)
def test_golden_writes_the_files_its_manifest_names(op, tmp_path, capsys):
    from npu_emu.frontend.core import storage_dtype

    rc, out, _ = run(["golden", op, "--out", str(tmp_path)], capsys)
    assert rc == 0, out
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["outputs"], "a golden must name its expected output(s)"
    for group in ("inputs", "outputs"):
        for key, entry in manifest[group].items():
            f = tmp_path / entry["file"]
            assert f.is_file(), f"{op}: {entry['file']} missing"
            itemsize = storage_dtype(entry["dtype"]).itemsize
            assert f.stat().st_size == int(np.prod(entry["shape"])) * itemsize, f"{op}: {key} size"
    # the expected output compares equal to itself, with dtype and shape taken from the manifest
    y = next(iter(manifest["outputs"].values()))["file"]
    rc, out, _ = run(["compare", str(tmp_path / y), str(tmp_path / y)], capsys)
    assert rc == 0 and "PASS" in out


def test_sign_bits_unpack_golden_run_compare(tmp_path, capsys):
    case = tmp_path / "case"
    assert run(["golden", "sign_bits_unpack", "--out", str(case), "--n", "96", "--size", "2"], capsys)[0] == 0
    y = tmp_path / "y.bin"
    rc, out, _ = run(["run", "sign_bits_unpack", "--input", str(case / "x.bin"), "--size", "2", "--dtype", "float32",
                      "--output", str(y)], capsys)
    assert rc == 0 and "(2, 384)" in out
    rc, out, _ = run(["compare", str(y), str(case / "golden.bin")], capsys)
    assert rc == 0 and "768 float32 elements, bit-exact" in out and "PASS" in out


def test_data_copy_dequant_golden_run_compare(tmp_path, capsys):
    for mode in ("DEQ8", "VDEQ16"):
        case = tmp_path / mode
        assert run(["golden", "data_copy_dequant", "--out", str(case), "--mode", mode, "--rows", "8", "--n", "32"],
                   capsys)[0] == 0
        y = tmp_path / f"{mode}.bin"
        rc, out, _ = run(["run", "data_copy_dequant", "--acc", str(case / "acc.bin"), "--acc-shape", "8,32",
                          "--deq", str(case / "deq.bin"), "--mode", mode, "--output", str(y)], capsys)
        assert rc == 0, out
        rc, out, _ = run(["compare", str(y), str(case / "golden.bin")], capsys)
        assert rc == 0 and "PASS" in out


def test_gather_dequant_golden_run_compare(tmp_path, capsys):
    case = tmp_path / "case"
    assert run(["golden", "gather_dequant_int8", "--out", str(case), "--vocab", "64", "--emb-dim", "32",
                "--num-indices", "7"], capsys)[0] == 0
    y = tmp_path / "y.bin"
    rc, out, _ = run(["run", "gather_dequant_int8", "--table", str(case / "table.bin"),
                      "--indices", str(case / "indices.bin"), "--scale", str(case / "scale.bin"),
                      "--zero-point", str(case / "zero_point.bin"), "--vocab", "64", "--emb-dim", "32",
                      "--output", str(y)], capsys)
    assert rc == 0, out
    rc, out, _ = run(["compare", str(y), str(case / "output.bin"), "--dtype", "float16"], capsys)
    assert rc == 0 and "PASS" in out


def test_run_errors_say_what_to_change(tmp_path, capsys):
    x = tmp_path / "x.bin"
    np.arange(3, dtype=np.uint8).tofile(x)
    # 8 * 3 = 24 outputs do not split into 5 rows: the op's own check, with its aclnn status
    rc, _, err = run(["run", "sign_bits_unpack", "--input", str(x), "--size", "5", "--output",
                      str(tmp_path / "y.bin")], capsys)
    assert rc == 2 and "error 161002" in err
    rc, _, err = run(["run", "sign_bits_unpack", "--input", str(tmp_path / "missing.bin"), "--size", "1",
                      "--output", str(tmp_path / "y.bin")], capsys)
    assert rc == 2 and "does not exist" in err
    rc, _, err = run(["run", "sign_bits_unpack", "--input", str(x), "--size", "1", "--output",
                      str(tmp_path / "no" / "dir" / "y.bin")], capsys)
    assert rc == 2 and "create it first" in err


# ---------------------------------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------------------------------

def _files(tmp_path, a, b):
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    np.asarray(a).tofile(pa)
    np.asarray(b).tofile(pb)
    return str(pa), str(pb)


def test_compare_bit_exact_reports_first_mismatches_and_fails(tmp_path, capsys):
    e = np.arange(12, dtype=np.float32)
    a = e.copy()
    a[3] = 3.5
    a[7] = -0.0 if e[7] == 0 else e[7] * 2
    pa, pb = _files(tmp_path, a, e)
    rc, out, _ = run(["compare", pa, pb, "--dtype", "float32", "--shape", "3,4"], capsys)
    assert rc == 1
    assert "mismatch at 3 (0, 3): expected" in out and "mismatch at 7 (1, 3)" in out
    assert "bits 0x40600000 vs 0x40400000" in out                     # 3.5 vs 3.0 in float32 bits
    assert "max abs error 7 at 7 (1, 3)" in out
    assert "error ratio 0.166667 (2 of 12)" in out and "FAIL" in out


def test_compare_signed_zero_differs_bit_exactly_but_not_within_tolerance(tmp_path, capsys):
    pa, pb = _files(tmp_path, np.array([0.0, 1.0], np.float32), np.array([-0.0, 1.0], np.float32))
    assert run(["compare", pa, pb, "--dtype", "float32"], capsys)[0] == 1
    assert run(["compare", pa, pb, "--dtype", "float32", "--atol", "0"], capsys)[0] == 0


def test_compare_with_tolerances_and_error_ratio(tmp_path, capsys):
    e = np.linspace(1, 2, 1000).astype(np.float16)
    a = (e.astype(np.float32) * (1 + 1e-3)).astype(np.float16)
    a[10] = np.float16(np.nan)
    e[10] = np.float16(np.nan)                                          # NaN equals NaN within tolerances
    a[500] = np.float16(9.0)                                            # one real outlier
    pa, pb = _files(tmp_path, a, e)
    assert run(["compare", pa, pb, "--dtype", "float16"], capsys)[0] == 1
    rc, out, _ = run(["compare", pa, pb, "--dtype", "float16", "--rtol", "2e-3"], capsys)
    assert rc == 1 and "error ratio 0.001000 (1 of 1000)" in out and "mismatch at 500" in out
    rc, out, _ = run(["compare", pa, pb, "--dtype", "float16", "--rtol", "2e-3", "--error-ratio", "1e-3"], capsys)
    assert rc == 0 and "PASS" in out


def test_compare_decodes_8bit_and_packed_4bit_formats(tmp_path, capsys):
    e = np.array([1.0, 2.0, -448.0, 0.5], np.float32).astype(ml_dtypes.float8_e4m3fn)
    a = e.copy()
    a[1] = ml_dtypes.float8_e4m3fn(2.25)
    pa, pb = _files(tmp_path, a, e)
    rc, out, _ = run(["compare", pa, pb, "--dtype", "float8_e4m3fn"], capsys)
    assert rc == 1 and "expected            2.0, actual           2.25" in out and "bits 0x41 vs 0x40" in out
    # FP4 E2M1: codes 0x2 = 1.0, 0x3 = 1.5 (docs/codecs.md); byte 0x32 holds element 0 = 1.0 (low), element 1 = 1.5
    pa, pb = _files(tmp_path, np.array([0x32, 0x00], np.uint8), np.array([0x32, 0x02], np.uint8))
    rc, out, _ = run(["compare", pa, pb, "--dtype", "float4_e2m1"], capsys)
    assert rc == 1 and "4 float4_e2m1 elements" in out and "mismatch at 2: expected            1.0, actual" in out
    assert "(1 of 4)" in out


def test_compare_usage_errors(tmp_path, capsys):
    pa, pb = _files(tmp_path, np.zeros(4, np.float32), np.zeros(3, np.float32))
    rc, _, err = run(["compare", pa, pb, "--dtype", "float32"], capsys)
    assert rc == 2 and "must match" in err
    rc, _, err = run(["compare", pa, pa], capsys)
    assert rc == 2 and "--dtype" in err                                 # no manifest to take it from
    rc, _, err = run(["compare", pa, pa, "--dtype", "float32", "--shape", "3,3"], capsys)
    assert rc == 2 and "fix --shape" in err
    code, _, err = usage_exit(["compare", pa, pa, "--dtype", "float13"], capsys)
    assert code == 2 and "not a known dtype name" in err


# ---------------------------------------------------------------------------------------------------------------
# tiling
# ---------------------------------------------------------------------------------------------------------------

def test_tiling_prints_the_cann_ut_vector(capsys):
    # issue 4 / docs/ops/sign_bits.md: N = 125,000,000 (unpack, float32) on 910B2 -> blockDim 48 and these fields
    rc, out, _ = run(["tiling", "sign_bits_unpack", "--n", "125000000", "--soc", "ascend910b2"], capsys)
    assert rc == 0 and "blockDim 48" in out
    for v in (2604160, 2604224, 1100, 2368, 1728, 1792):
        assert str(v) in out


TILING_ARGS = {"sign_bits_unpack": ["--n", "4096"], "sign_bits_pack": ["--n", "4096"],
               "grouped_dynamic_mx_quant": ["--shape", "256,64", "--groups", "2"],
               "dynamic_mx_quant": ["--shape", "4,256"], "quant_matmul": ["--m", "64", "--n", "64", "--k", "64"],
               "grouped_matmul": ["--m", "64", "--n", "64", "--k", "64"]}


@pytest.mark.parametrize("op", [op for op, spec in COMMANDS.items() if "tiling" in spec])
def test_tiling_runs_for_every_op(op, capsys):
    try:
        rc, out, err = run(["tiling", op] + TILING_ARGS.get(op, []), capsys)
    except SystemExit as e:                                           # a new op: add its minimal arguments above
        pytest.skip(f"tiling {op} needs arguments (add them to TILING_ARGS): {e}")
    assert rc == 0 and "blockDim" in out


def test_tiling_unknown_soc_is_rejected(capsys):
    rc, _, err = run(["tiling", "sign_bits_unpack", "--n", "64", "--soc", "ascend999"], capsys)
    assert rc == 2 and "unknown soc" in err and "ascend910b2" in err


# ---------------------------------------------------------------------------------------------------------------
# demo / bench
# ---------------------------------------------------------------------------------------------------------------

def test_demo_runs_cases_and_writes_json(tmp_path, capsys):
    js = tmp_path / "demo.json"
    rc, out, _ = run(["demo", "--small", "--only", "encode_float8_e4m3fn", "decode_float8",
                      "--shape", "encode_float8_e4m3fn=4096", "--shape", "decode_float8_e4m3fn=2048",
                      "--repeat", "1", "--json", str(js)], capsys)
    assert rc == 0
    for col in ("op", "shape", "time ms", "rate", "x golden", "/host roof", "/910B2 roof", "bit-exact"):
        assert col in out
    assert "[4096] f32" in out and "2 of 2 cases bit-exact" in out
    rows = json.loads(js.read_text())["rows"]
    assert [r["key"] for r in rows] == ["encode_float8_e4m3fn", "decode_float8_e4m3fn"]
    assert all(r["bit_exact"] and r["seconds"] > 0 and r["over_device_roofline"] > 0 for r in rows)


def _fake_builder(result, gold, error=None):
    def build(dims, rng):
        def go():
            if error:
                raise error
            return result

        return demo.Case("fake op", "x".join(map(str, dims)), go, lambda: gold, demo._same_bits, 16)

    return demo.Builder(build, (4,), (4,), "a test double")


def test_demo_mismatch_and_error_give_exit_status_1(monkeypatch, capsys):
    monkeypatch.setitem(demo.BUILDERS, "fake_ok", _fake_builder(np.ones(4, np.float32), np.ones(4, np.float32)))
    monkeypatch.setitem(demo.BUILDERS, "fake_bad", _fake_builder(np.ones(4, np.float32), np.zeros(4, np.float32)))
    monkeypatch.setitem(demo.BUILDERS, "fake_err", _fake_builder(None, None, error=RuntimeError("boom")))
    rc, out, _ = run(["demo", "--only", "fake_ok"], capsys)
    assert rc == 0 and "1 of 1 cases bit-exact" in out
    rc, out, _ = run(["demo", "--only", "fake_ok", "fake_bad"], capsys)
    assert rc == 1 and "NO" in out and "MISMATCH: fake op" in out
    rc, out, _ = run(["demo", "--only", "fake_err"], capsys)
    assert rc == 1 and "ERROR" in out and "boom" in out


def test_demo_skips_an_op_that_is_not_there(monkeypatch, capsys):
    def build(dims, rng):
        raise demo.Unavailable("not in this build")

    monkeypatch.setitem(demo.BUILDERS, "fake_missing", demo.Builder(build, (1,), (1,), ""))
    rc, out, _ = run(["demo", "--only", "fake_missing"], capsys)
    assert rc == 0 and "skipped fake_missing: not in this build" in out


def test_demo_usage_errors(capsys):
    rc, _, err = run(["demo", "--only", "no_such_case"], capsys)
    assert rc == 2 and "no demo case" in err
    rc, _, err = run(["demo", "--shape", "nope=3"], capsys)
    assert rc == 2 and "unknown demo case" in err
    code, _, err = usage_exit(["demo", "--shape", "sign_bits_unpack"], capsys)
    assert code == 2 and "KEY=DIMS" in err


def test_demo_small_shapes_cover_every_builder_and_run_bit_exact(capsys):
    # every case at its declared tiny shape (same code paths as the real demo), so a broken case fails here, not for
    # a user
    tiny = {key: case.tiny for key, case in demo.BUILDERS.items()}
    missing = sorted(key for key, dims in tiny.items() if not dims)
    assert not missing, f"demo cases without tiny= dims in their @builder: {missing}"
    argv = ["demo", "--small", "--repeat", "1", "--no-progress"]
    for key, dims in tiny.items():
        argv += ["--shape", f"{key}={'x'.join(map(str, dims))}"]
    rc, out, _ = run(argv, capsys)
    assert rc == 0, out
    assert "MISMATCH" not in out and "error in" not in out


def test_bench_without_asv_runs_the_demo_cases(capsys):
    rc, out, _ = run(["bench", "--only", "encode_float8_e4m3fn", "--shape", "encode_float8_e4m3fn=1024",
                      "--repeat", "1"], capsys)
    assert rc == 0 and "production shapes" in out and "[1024] f32" in out


def test_bench_asv_builds_the_asv_command(monkeypatch, tmp_path, capsys):
    calls = []

    class Done:
        returncode = 0
        stdout = "0123abcd\n"

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/bin/" + name)
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: calls.append(cmd) or Done())
    (tmp_path / "asv.conf.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    rc, out, _ = run(["bench", "--asv", "-b", "bench_codecs"], capsys)
    assert rc == 0
    assert calls[-1] == ["/usr/bin/asv", "run", "--python=same", "--show-stderr", "--quick", "-b", "bench_codecs",
                         "--dry-run"]
    calls.clear()
    rc, out, _ = run(["bench", "--asv", "--no-quick", "--record", "--publish"], capsys)
    assert rc == 0
    assert calls[0] == ["git", "rev-parse", "HEAD"]
    assert calls[1][-1] == "--set-commit-hash=0123abcd" and "--quick" not in calls[1]
    assert calls[2] == ["/usr/bin/asv", "publish"] and ".asv/html/index.html" in out


def test_bench_asv_outside_a_checkout_says_where_to_run(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: "/usr/bin/" + name)
    monkeypatch.chdir(tmp_path)
    rc, _, err = run(["bench", "--asv"], capsys)
    assert rc == 2 and "asv.conf.json" in err
