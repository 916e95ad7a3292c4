"""The ``npu-emu`` command: run ops on CANN gen_data-style .bin files, print tilings, make goldens, compare, demo.

Each op family contributes a ``kernels/<op>/cli.py`` with a ``COMMANDS`` dict:
``{op_name: {"help": str, "run": (add_arguments, handler), "tiling": (add_arguments, handler),
"golden": (add_arguments, handler)}}`` (any subset). This module only wires them up and adds the op-independent
subcommands (list, compare, demo, bench). Handlers return the exit status; a handler that cannot go on raises
``SystemExit("npu-emu: what went wrong; what to change")`` (exit status 2) or an AclnnError (exit status 2, with
the aclnn status code).
"""

import argparse
import importlib
import json
import os
import sys
import textwrap

import numpy as np

from npu_emu.errors import AclnnError
from npu_emu.frontend.binfile import parse_shape, read_bin, write_bin, write_case  # noqa: F401 (the per-op verbs' helpers, as before)

# Op families with a CLI module, in the order `npu-emu list` shows them. A module that is not there yet (an op
# family still being written) is skipped.

# Formats npu-emu encodes/decodes (the dtype table, docs/conventions.md §5) and how a .bin file stores them.
def _formats():
    from npu_emu import dtype_table as table

    def storage(d):
        if d.bits == 4:
            return "2 elements per byte, element 0 in the low nibble"
        if d.storage.startswith("ml_dtypes."):
            return f"1 byte per element ({d.storage})"
        return "1 byte per element, uint8 codes" + (" (E8M0 scales)" if d.name == "float8_e8m0" else "")

    return tuple((d.name, d.acl, storage(d)) for d in table.codecs() if d.bits != 6)


FORMATS = _formats()

EXAMPLES = """\
examples:
  npu-emu list                                   ops, SoCs and formats
  npu-emu demo --small                           every op once, checked bit-exactly against its golden
  npu-emu compile --jobs 2                       compile every kernel into numba's cache ahead of time
  npu-emu golden sign_bits_unpack --out case/    random input + expected output + manifest.json
  npu-emu run sign_bits_unpack --input case/x.bin --size 1 --dtype float32 --output y.bin
  npu-emu compare y.bin case/golden.bin --dtype float32
  npu-emu tiling sign_bits_unpack --n 125000000 --soc ascend910b2
  npu-emu OP-VERB OP --help                      e.g. npu-emu run quant_matmul --help
"""


def _load_commands():
    """The verbs of every declared op (kernels/<op>/op.py names its CLI module, an op of another package too)."""
    from npu_emu.frontend import registry

    commands = {}
    for mod in registry.cli_modules():
        for verb, entry in importlib.import_module(mod).COMMANDS.items():
            if verb in commands:
                raise registry.DeclarationError(f"CLI verb {verb!r} is declared twice (the second by {mod})")
            commands[verb] = entry
    return commands


# ---------------------------------------------------------------------------------------------------------------
# shared helpers for the per-op modules
# ---------------------------------------------------------------------------------------------------------------

def _dtype_arg(text):
    from npu_emu.frontend.core import resolve_dtype

    try:
        return resolve_dtype(text)
    except AclnnError as e:
        raise argparse.ArgumentTypeError(e.message) from None


# ---------------------------------------------------------------------------------------------------------------
# list
# ---------------------------------------------------------------------------------------------------------------

def _cmd_list(args, commands):
    from npu_emu.device import platforms

    print("ops (npu-emu VERB OP --help for the options):")
    for name, spec in commands.items():
        verbs = ", ".join(v for v in ("run", "tiling", "golden") if v in spec)
        print(f"  {name:28s} {spec.get('help', '')}  [{verbs}]")
    print("demo cases (npu-emu demo --only KEY, --shape KEY=DIMS):")
    from npu_emu.cli import demo

    for key, b in demo.BUILDERS.items():
        print(f"  {key:28s} production {demo.fmt_dims(b.production):>16s}  small {demo.fmt_dims(b.small):>12s}  "
              f"{b.help}")
    print("socs (--soc):")
    for name in platforms.names():
        p = platforms.get(name)
        figs = p.known_figures()
        parts = []
        for key, label, unit in (("vector_cores", "AIV", 1), ("cube_cores", "AIC", 1), ("ub_size", "UB", 1),
                                 ("hbm_Bps", "HBM GB/s", 1e9)):
            if key in figs:
                parts.append(f"{label} {figs[key] / unit:g}")
        print(f"  {name:16s} {'  '.join(parts):44s} {getattr(p, 'product', '')}")
    print("formats (--dtype, npu_emu.dtypes.encode/decode):")
    for name, code, storage in FORMATS:
        print(f"  {name:16s} aclDataType {code:>2}  .bin: {storage}")
    print("other --dtype names: float32 float16 bfloat16 int8 uint8 int16 uint16 int32 uint32 int64 uint64 "
          "float64 bool int4")
    return 0


# ---------------------------------------------------------------------------------------------------------------
# compare (CANN compare_data.py / verify_result.py style)
# ---------------------------------------------------------------------------------------------------------------

_FLOAT_CODES = ("float8_e4m3fn", "float8_e5m2", "float8_e8m0", "hifloat8", "float4_e2m1", "float4_e1m2")


def _manifest_entry(path):
    """dtype/shape of ``path`` from a manifest.json next to it (written by ``npu-emu golden``), or None."""
    mpath = os.path.join(os.path.dirname(os.path.abspath(path)), "manifest.json")
    try:
        with open(mpath) as f:
            manifest = json.load(f)
    except (OSError, ValueError):
        return None
    base = os.path.basename(path)
    for group in ("outputs", "inputs"):
        for entry in manifest.get(group, {}).values():
            if entry.get("file") == base:
                return entry
    return None


def _values(raw, dtype):
    """float64 values for error figures (NaN where the format has NaN)."""
    from npu_emu import dtypes

    if dtype in ("float4_e2m1", "float4_e1m2"):
        return dtypes.decode(dtypes.unpack_fp4(raw, 2 * raw.size), dtype).astype(np.float64)
    if dtype in _FLOAT_CODES:
        return dtypes.decode(raw, dtype).astype(np.float64)
    return raw.astype(np.float64)


def _bits(raw):
    return raw.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[raw.dtype.itemsize])


def compare_arrays(actual, expected, dtype, *, rtol=None, atol=None):
    """Element-wise comparison: bit-exact when neither tolerance is given, else np.isclose on decoded values
    (|a - e| <= atol + rtol * |e|, NaN equal to NaN, like CANN's verify scripts). Packed FP4 is compared per
    element. Returns (values_actual, values_expected, mismatch mask)."""
    va, ve = _values(actual, dtype), _values(expected, dtype)
    if rtol is None and atol is None:
        if dtype in ("float4_e2m1", "float4_e1m2"):
            from npu_emu import dtypes

            ca, ce = dtypes.unpack_fp4(actual, 2 * actual.size), dtypes.unpack_fp4(expected, 2 * expected.size)
            bad = ca != ce
        else:
            bad = _bits(actual) != _bits(expected)
    else:
        with np.errstate(invalid="ignore"):
            bad = ~np.isclose(va, ve, rtol=rtol or 0.0, atol=atol or 0.0, equal_nan=True)
    return va, ve, bad


def _onnx_module():
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise SystemExit("npu-emu: `npu-emu onnx` needs the onnx package: pip install 'npu-emu[onnx]'") from None
    import npu_emu.onnx

    return npu_emu.onnx


def _pairs(items, what, convert=str):
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise SystemExit(f"npu-emu: {what} {item!r} must read NAME=VALUE")
        out[name] = convert(value)
    return out


def _cmd_onnx_check(a, commands):
    lines, ok = _onnx_module().cli_check(a.model)
    print("\n".join(lines))
    return 0 if ok else 1


def _cmd_onnx_run(a, commands):
    mod = _onnx_module()
    written = mod.cli_run(a.model, _pairs(a.input, "--input"), _pairs(a.shape, "--shape", parse_shape), a.output)
    for path in written:
        print(f"wrote {path}")
    return 0


def _cmd_exec(a, commands):
    from npu_emu import torch_npu_shim

    if a.module is not None:
        if not a.module:
            raise SystemExit("npu-emu: exec -m needs a module name, e.g. npu-emu exec -m pytest tests/")
        target, rest, module = a.module[0], a.module[1:], True
    else:
        argv = a.script[1:] if a.script[:1] == ["--"] else a.script
        if not argv:
            raise SystemExit("npu-emu: exec needs a script (npu-emu exec script.py [args]) or -m MODULE")
        target, rest, module = argv[0], argv[1:], False
        if not os.path.isfile(target):
            raise SystemExit(f"npu-emu: the script {target} does not exist; check the path")
    try:
        torch_npu_shim.install(soc=a.soc)
    except ImportError as e:
        raise SystemExit(f"npu-emu: exec needs torch ({e}); install the CPU build: pip install torch") from None
    except RuntimeError as e:
        raise SystemExit(f"npu-emu: {e}") from None
    except AclnnError as e:                      # an unknown --soc
        raise SystemExit(f"npu-emu: --soc: {e}") from None
    # the script's own errors and exit status are the script's: _run prints its traceback and returns the status
    return torch_npu_shim.run_module(target, rest) if module else torch_npu_shim.run_script(target, rest)


def _cmd_compare(a, commands):
    entry = None
    if a.dtype is None or a.shape is None:
        entry = _manifest_entry(a.expected) or _manifest_entry(a.actual)
    dtype = a.dtype
    if dtype is None:
        if entry is None:
            raise SystemExit("npu-emu: compare needs --dtype (e.g. --dtype float16); no manifest.json next to the "
                             "files names it")
        dtype = _dtype_arg(entry["dtype"])
    shape = a.shape if a.shape is not None else (tuple(entry["shape"]) if entry else None)
    actual = read_bin(a.actual, dtype)
    expected = read_bin(a.expected, dtype)
    if actual.size != expected.size:
        raise SystemExit(f"npu-emu: {a.actual} holds {actual.size} {dtype} elements, {a.expected} holds "
                         f"{expected.size}; they must match (wrong --dtype, or outputs of different shapes)")
    per = 2 if dtype in ("float4_e2m1", "float4_e1m2") else 1
    if shape is not None and int(np.prod(shape)) != actual.size * per:
        raise SystemExit(f"npu-emu: --shape {tuple(shape)} has {int(np.prod(shape))} elements, the files hold "
                         f"{actual.size * per}; fix --shape")
    va, ve, bad = compare_arrays(actual, expected, dtype, rtol=a.rtol, atol=a.atol)
    n = va.size
    nbad = int(np.count_nonzero(bad))
    exact = a.rtol is None and a.atol is None
    rule = "bit-exact" if exact else f"|actual - expected| <= {a.atol or 0.0:g} + {a.rtol or 0.0:g} * |expected|"
    print(f"compare {a.actual} (actual) with {a.expected} (expected): {n} {dtype} elements, {rule}")

    def where(i):
        return f"{i}" if shape is None else f"{i} {tuple(int(v) for v in np.unravel_index(i, shape))}"

    codes_a = _bits(actual) if per == 1 else None
    codes_e = _bits(expected) if per == 1 else None
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diff = np.abs(va - ve)
        rdiff = diff / np.abs(ve)
    for j, i in enumerate(np.flatnonzero(bad)[: a.max_print]):
        hexes = "" if codes_a is None else \
            f"  bits {int(codes_a[i]):#0{2 + 2 * actual.itemsize}x} vs {int(codes_e[i]):#0{2 + 2 * actual.itemsize}x}"
        print(f"  mismatch at {where(int(i))}: expected {float(ve[i])!r:>14}, actual {float(va[i])!r:>14}, "
              f"abs diff {diff[i]:.6g}, rel diff {rdiff[i]:.6g}{hexes}")
    if nbad > a.max_print:
        print(f"  ... {nbad - a.max_print} more mismatches (--max-print to see more)")
    finite = np.isfinite(diff)
    if finite.any():
        i = int(np.flatnonzero(finite)[np.argmax(diff[finite])])
        print(f"max abs error {diff[i]:.6g} at {where(i)}")
        fr = np.isfinite(rdiff)
        if fr.any():
            j = int(np.flatnonzero(fr)[np.argmax(rdiff[fr])])
            print(f"max rel error {rdiff[j]:.6g} at {where(j)}")
    ratio = nbad / n if n else 0.0
    ok = ratio <= a.error_ratio if nbad else True
    print(f"error ratio {ratio:.6f} ({nbad} of {n}), allowed {a.error_ratio:g}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------------------------
# demo and bench
# ---------------------------------------------------------------------------------------------------------------

def _demo_args(p):
    p.add_argument("--only", nargs="+", metavar="KEY", default=None,
                   help="run only these demo cases (keys from `npu-emu list`, prefixes allowed: --only quant_matmul)")
    p.add_argument("--shape", action="append", default=[], metavar="KEY=DIMS", type=_shape_override,
                   help="run case KEY at DIMS instead, e.g. --shape quant_matmul_int8_kc_bf16=1024x4096x4096 "
                        "(repeatable; the dimensions each case takes are in `npu-emu list`)")
    p.add_argument("--repeat", type=int, default=None, help="timed runs per case, best one reported "
                   "(default 3 for small shapes, 2 for production shapes)")
    p.add_argument("--threads", type=int, default=None,
                   help="numba threads (default: all, i.e. NUMBA_NUM_THREADS)")
    p.add_argument("--json", metavar="FILE", default=None, help="also write the table as JSON to FILE")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in logs)")
    p.add_argument("--compile-jobs", type=int, default=None, metavar="N",
                   help="on a first run (kernels neither shipped in the wheel nor in numba's cache yet), compile "
                        "them in N processes before running (default: the usable cores, at most 4; 1: compile "
                        "as the cases run)")


def _default_compile_jobs():
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return min(4, cores)


def _shape_override(text):
    key, sep, dims = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--shape {text!r} must look like KEY=DIMS, e.g. sign_bits_unpack=1048576")
    return key.strip(), parse_shape(dims)


def _run_demo(a, small):
    from npu_emu.cli import demo

    jobs = a.compile_jobs if a.compile_jobs is not None else _default_compile_jobs()
    if jobs < 1:
        raise SystemExit(f"npu-emu: --compile-jobs {jobs} must be at least 1")
    return demo.main(small=small, only=a.only, shapes=dict(a.shape), repeat=a.repeat, threads=a.threads,
                     json_path=a.json, progress=not a.no_progress, compile_jobs=jobs)


def _cmd_demo(a, commands):
    return _run_demo(a, a.small)


def _cmd_bench(a, commands):
    if not a.asv:
        return _run_demo(a, a.small)
    import shutil
    import subprocess

    asv = shutil.which("asv")
    if asv is None:
        raise SystemExit("npu-emu: bench --asv needs asv (pip install asv, or pip install -e '.[test]')")
    root = _repo_root()
    if root is None:
        raise SystemExit("npu-emu: bench --asv runs the suite in benchmarks/ of a source checkout; run it from "
                         "the repository (the folder with asv.conf.json)")
    cmd = [asv, "run", "--python=same", "--show-stderr"]
    if a.quick:
        cmd.append("--quick")
    if a.bench:
        for b in a.bench:
            cmd += ["-b", b]
    if a.record:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
        if commit.returncode != 0:
            raise SystemExit("npu-emu: --record needs a git checkout (asv files results under the commit hash)")
        cmd.append(f"--set-commit-hash={commit.stdout.strip()}")
    else:
        cmd.append("--dry-run")
    print("+", " ".join(cmd), flush=True)
    rc = subprocess.run(cmd, cwd=root).returncode
    if rc == 0 and a.record and a.publish:
        print("+ asv publish", flush=True)
        rc = subprocess.run([asv, "publish"], cwd=root).returncode
        if rc == 0:
            from npu_emu.cli.asv_dashboard import make_offline

            html = os.path.join(root, ".asv", "html")
            vendor = os.path.join(root, "benchmarks", "www", "vendor")
            if not (os.path.isdir(html) and os.path.isdir(vendor)):
                # a checkout without the vendored scripts, or an asv that published elsewhere: nothing to rewrite
                left = [f"its scripts ({html if not os.path.isdir(html) else vendor} is missing)"]
            else:
                left = make_offline(html, vendor)
            if left:
                print(f"npu-emu: the dashboard still loads {', '.join(left)} from the network", file=sys.stderr)
            print(f"dashboard: {os.path.join(html, 'index.html')} (serve it with `asv preview`; no internet needed)")
    return rc


def _cmd_compile(a, commands):
    from npu_emu.cli import compile as precompile

    if a.jobs is not None and a.jobs < 1:
        raise SystemExit(f"npu-emu: --jobs {a.jobs}: use 1 (this process) or more worker processes")
    return precompile.main(ops=a.ops, jobs=a.jobs, list_only=a.list, json_path=a.json, progress=not a.no_progress)


def _repo_root():
    d = os.getcwd()
    while True:
        if os.path.isfile(os.path.join(d, "asv.conf.json")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


# ---------------------------------------------------------------------------------------------------------------

def _w(text):
    return textwrap.fill(text, 100)


def build_parser(commands):
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(
        prog="npu-emu", formatter_class=fmt, epilog=EXAMPLES,
        description="Bit-exact CPU emulation of Ascend C (CANN) kernels. Inputs and outputs are raw little-endian "
                    ".bin files, as CANN's gen_data.py / compare_data.py use them.")
    from npu_emu import __version__

    p.add_argument("--version", action="version", version=f"npu-emu {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sp = sub.add_parser("list", help="ops, demo cases, SoCs and formats npu-emu knows")
    sp.set_defaults(func=_cmd_list)

    sp = sub.add_parser(
        "demo", formatter_class=fmt,
        help="run every implemented op at a production shape and check it bit-exactly against its golden",
        description=_w("Runs every implemented op once at a production shape (the asv benchmark shapes), checks the "
                    "result against the op's independent numpy golden (kernels/<op>/golden.py) and prints: op, shape, time, "
                    "GB/s or GFLOP/s, speed-up over the golden, emulator time over the host roofline (copy rate "
                    "25 GB/s per thread, host float32 GEMM rate) and over the 910B2 roofline (or the op's SoC), and "
                    "whether the result is bit-exact. Exit status 1 if any result differs."),
        epilog="examples:\n  npu-emu demo --small\n  npu-emu demo --only sign_bits dynamic_mx_quant\n"
               "  npu-emu demo --small --shape quant_matmul_int8_kc_bf16=512x1024x1024 --json demo.json")
    sp.add_argument("--small", action="store_true", help="scaled-down shapes (seconds instead of minutes)")
    _demo_args(sp)
    sp.set_defaults(func=_cmd_demo)

    sp = sub.add_parser(
        "bench", formatter_class=fmt,
        help="time the demo cases at chosen shapes, or run the asv suite (--asv)",
        description=_w("Without --asv: the demo's cases at production shapes (or --small / --shape KEY=DIMS), timed and "
                    "checked. With --asv: the asv suite in benchmarks/ on this interpreter (asv run --python=same), "
                    "--quick by default; --record stores results under the current commit and --publish builds the "
                    "HTML dashboard in .asv/html."),
        epilog="examples:\n  npu-emu bench --only quant_matmul --shape quant_matmul_int8_kc_bf16=2048x4096x4096\n"
               "  npu-emu bench --asv -b bench_codecs\n  npu-emu bench --asv --no-quick --record --publish")
    sp.add_argument("--small", action="store_true", help="demo cases at the small shapes")
    _demo_args(sp)
    sp.add_argument("--asv", action="store_true", help="run the asv suite instead of the demo cases")
    sp.add_argument("-b", "--bench", action="append", metavar="REGEX",
                    help="with --asv: only benchmarks matching REGEX (repeatable), e.g. -b bench_sign_bits")
    sp.add_argument("--quick", dest="quick", action="store_true", default=True,
                    help="with --asv: one sample per benchmark (default)")
    sp.add_argument("--no-quick", dest="quick", action="store_false", help="with --asv: full sampling")
    sp.add_argument("--record", action="store_true",
                    help="with --asv: save results under the git HEAD commit (needs `asv machine --yes` once)")
    sp.add_argument("--publish", action="store_true", help="with --asv --record: then build the HTML dashboard")
    sp.set_defaults(func=_cmd_bench)

    from npu_emu.cli import op_configs

    sp = sub.add_parser(
        "compile", formatter_class=fmt,
        help="compile every kernel (or OP's) into numba's cache ahead of time, with seconds per configuration",
        description=_w("Runs every user-facing op configuration (each dst format, input dtype, quant-matmul mode, "
                    "DEQ mode and codec: `npu-emu compile --list`) once on tiny inputs, so that numba compiles the "
                    "kernels they call and saves them in its cache (NUMBA_CACHE_DIR, or numba's default: "
                    "__pycache__ next to the sources). Later processes load them instead of compiling. Prints the "
                    "seconds of each configuration, the npu_emu kernels it compiled with their seconds, the total "
                    "and where the cache went. Exit status 1 if a configuration fails, 2 on bad usage.")
        + "\n\n" + _w("--jobs N runs N worker processes, each op family in one worker (the two MX quantizer "
                      "families in the same one): a family's configurations compile the same kernel functions, "
                      "which two workers would otherwise compile twice at the same time. (Concurrent saves into "
                      "numba's cache are safe in every npu_emu "
                      "process: npu_emu locks each function's cache index, since numba's own index update is not "
                      "atomic and can map a signature to another signature's machine code.)"),
        epilog="examples:\n  npu-emu compile                                every configuration, one worker per core\n"
               "  npu-emu compile --ops dynamic_mx_quant codecs  two op families\n"
               "  npu-emu compile --ops quant_matmul.int8_kc_bf16 --jobs 1   one configuration, in this process\n"
               "  NUMBA_CACHE_DIR=/tmp/nbcache npu-emu compile --json compile.json\n"
               "  npu-emu compile --list                         the configurations and their op families")
    sp.add_argument("--ops", nargs="+", metavar="OP", default=None,
                    help=f"op families ({', '.join(op_configs.families())}) or configuration names from --list "
                         "(default: all)")
    sp.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                    help="worker processes (default: the number of cores; 1 = in this process)")
    sp.add_argument("--list", action="store_true", help="list the configurations (of --ops) and exit")
    sp.add_argument("--json", metavar="FILE", default=None,
                    help="also write the results (seconds, compiled kernels, errors) as JSON to FILE")
    sp.add_argument("--no-progress", action="store_true", help="no progress bar (e.g. in logs)")
    sp.set_defaults(func=_cmd_compile)

    sp = sub.add_parser(
        "onnx", formatter_class=fmt,
        help="run an ONNX model whose Ascend custom nodes (GatherDequantInt8, npu::NPUSignBits*) run on npu-emu",
        description=_w("Runs ONNX models that carry Ascend custom nodes on the CPU: each node npu-emu knows runs "
                       "through npu_emu.ops with its checks, every other node on onnx's reference implementation. "
                       "Needs the onnx package (pip install 'npu-emu[onnx]')."),
        epilog="examples:\n  npu-emu onnx check GatherDequantInt8.onnx\n"
               "  npu-emu onnx run GatherDequantInt8.onnx --input table=table.bin --input indices=indices.bin \\\n"
               "      --input scale=scale.bin --input zero_point=zero_point.bin --output out/")
    onnx_sub = sp.add_subparsers(dest="onnx_command", required=True, metavar="SUBCOMMAND")
    op = onnx_sub.add_parser("check", help="list the model's nodes: emulated, standard or unsupported")
    op.add_argument("model", help="the .onnx file")
    op.set_defaults(func=_cmd_onnx_check)
    op = onnx_sub.add_parser("run", help="run the model on raw .bin inputs; writes OUTPUT/<name>.bin + manifest.json")
    op.add_argument("model", help="the .onnx file")
    op.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                    help="a graph input as a raw little-endian .bin of the input's ONNX type (repeat per input)")
    op.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                    help="the shape of an input whose model shape has symbolic dimensions")
    op.add_argument("--output", required=True, help="folder for the outputs (<output name>.bin) and manifest.json")
    op.set_defaults(func=_cmd_onnx_run)

    sp = sub.add_parser(
        "exec", formatter_class=fmt,
        help="run an unmodified torch_npu script on the CPU: `import torch_npu` gets npu-emu's ops",
        description=_w("Runs SCRIPT as __main__ with ARGS (or, with -m, a module, as python -m does) after putting "
                       "npu-emu's emulated torch_npu module into sys.modules: torch_npu.npu_quant_matmul etc. are the "
                       "torch.ops.npu ops with npu-emu's CPU kernels, torch_npu.float8_e8m0fnu etc. are torch_npu's "
                       "dtype constants, Tensor.npu() keeps the tensor on the CPU and torch.npu.is_available() is "
                       "False (docs/integrations/torch.md). The exit status is the script's: 0, its sys.exit code, or "
                       "1 after the traceback of an uncaught exception; 2 when npu-emu cannot start it. Needs torch; "
                       "refuses to run where a real torch_npu is installed. The same as "
                       "`python -m npu_emu.torch_npu_shim SCRIPT [ARGS]`."),
        epilog="examples:\n  npu-emu exec train_step.py --world-size 4\n"
               "  npu-emu exec tests/interop/torch_npu_script.py out.pt\n"
               "  npu-emu exec -m pytest tests/ut -q           a module (here: a test suite) instead of a file")
    sp.add_argument("--soc", default=None, metavar="SOC",
                    help="the SoC every emulated op runs as (e.g. ascend950pr for MX quantisers and MX matmuls "
                         "together); default: NPU_EMU_SOC, else each op's own (must come before SCRIPT / -m)")
    sp.add_argument("-m", dest="module", nargs=argparse.REMAINDER, default=None,
                    help="run the module MODULE [ARGS] as __main__ instead of a script (must come first)")
    sp.add_argument("script", nargs=argparse.REMAINDER, help="SCRIPT [ARGS]: the script and its own arguments")
    sp.set_defaults(func=_cmd_exec)

    sp = sub.add_parser(
        "quantize-checkpoint", formatter_class=fmt,
        help="MX-quantize every 2-D weight of a safetensors checkpoint on Dask, bit-identical to npu_dynamic_mx_quant",
        description=_w("Reads the safetensors shards of INPUT lazily (memory-mapped), quantizes each selected 2-D "
                       "weight with npu_dynamic_mx_quant (codes NAME and E8M0 scales NAME_scale), copies the other "
                       "tensors through, and writes one output shard per input shard plus "
                       "model.safetensors.index.json into --out. Runs on a new dask.distributed LocalCluster (one "
                       "worker process per core, one thread each) or on --scheduler ADDRESS (INPUT and --out must "
                       "then be on a file system every worker sees). Shards are written under a temporary name and "
                       "renamed when complete; a re-run skips the shards already written for the same job and "
                       "source. Needs pip install 'npu-emu[dask]'. docs/integrations/dask.md."),
        epilog="examples:\n  npu-emu quantize-checkpoint ./Llama-3-8B --format mxfp8 --out ./Llama-3-8B-mxfp8\n"
               "  npu-emu quantize-checkpoint ./model --format mxfp4 --exclude 'embed|lm_head' --out ./q4 \\\n"
               "      --scheduler tcp://10.0.0.1:8786")
    sp.add_argument("input", help="a .safetensors file or a checkpoint folder (its index JSON or *.safetensors)")
    sp.add_argument("--format", required=True, choices=("mxfp8", "mxfp8_e5m2", "mxfp4"),
                    help="mxfp8 = float8_e4m3fn codes, mxfp8_e5m2, mxfp4 = float4_e2m1 codes, E8M0 scales per 32")
    sp.add_argument("--axis", type=int, default=-1, choices=(-1, 0, 1),
                    help="the axis of the 32-element blocks (default -1: along each row)")
    sp.add_argument("--include", metavar="REGEX", default=None,
                    help="quantize the tensors whose name matches (default: 2-D floating tensors matching 'weight$'); "
                         "with --include every match must be a 2-D float16/bfloat16/float32 tensor")
    sp.add_argument("--exclude", metavar="REGEX", default=None, help="copy the tensors whose name matches through")
    sp.add_argument("--out", required=True, metavar="DIR", help="output folder (created; not the input folder)")
    sp.add_argument("--scheduler", metavar="ADDRESS", default=None,
                    help="a running dask scheduler (tcp://host:8786) instead of a new LocalCluster")
    sp.add_argument("--workers", type=int, default=None, metavar="N",
                    help="LocalCluster worker processes (default: the number of cores)")
    sp.add_argument("--threads-per-worker", type=int, default=1, metavar="N",
                    help="LocalCluster threads per worker (default 1; more run side by side only on numba's tbb "
                         "or omp threading layer)")
    sp.add_argument("--numba-threads", type=int, default=None, metavar="N",
                    help="NUMBA_NUM_THREADS of the LocalCluster workers (default: cores / (workers x threads))")
    sp.add_argument("--chunk-mb", type=float, default=64, metavar="MB",
                    help="input megabytes per task (rows rounded to 64): bounds each worker's memory (default 64)")
    sp.add_argument("--cann-version", default="master", help="the CANN-version switch of npu_dynamic_mx_quant")
    sp.add_argument("--no-progress", action="store_true", help="no progress bars")

    sp.set_defaults(func=_cmd_quantize_checkpoint)

    sp = sub.add_parser(
        "cabi", formatter_class=fmt,
        help="build headers and libraries so that CANN aclnn C++ test programs run on the CPU",
        description=_w("The C ABI: `npu-emu cabi build --prefix DIR` writes DIR/include (acl/acl.h, "
                       "aclnnop/aclnn_<op>.h for every aclnn op npu-emu has) and DIR/lib (libascendcl.so, libopapi.so, "
                       "libnnopbase.so, ...) so that a program written like CANN's examples/test_aclnn_<op>.cpp "
                       "compiles with g++ and runs on the CPU with the device's bits (docs/integrations/cabi.md). "
                       "Needs a C++ compiler and a Python with a shared libpython."),
        epilog="examples:\n  npu-emu cabi build --prefix ~/npu-emu-cann\n"
               "  g++ test_aclnn_sign_bits_unpack.cpp -I ~/npu-emu-cann/include -L ~/npu-emu-cann/lib \\\n"
               "      -Wl,-rpath,$HOME/npu-emu-cann/lib -lascendcl -lopapi -lnnopbase -o test && ./test")
    cabi_sub = sp.add_subparsers(dest="cabi_command", required=True, metavar="SUBCOMMAND")
    op = cabi_sub.add_parser("build", help="write DIR/include and DIR/lib; print the g++ line to use")
    op.add_argument("--prefix", required=True, metavar="DIR", help="where to write include/ and lib/")
    op.set_defaults(func=_cmd_cabi_build)

    sp = sub.add_parser(
        "compare", formatter_class=fmt,
        help="compare two .bin files element by element (bit-exact by default), like CANN's compare_data.py",
        description=_w("Reads ACTUAL and EXPECTED as raw little-endian arrays of --dtype and compares them: bit-exact "
                    "when no tolerance is given, else |actual - expected| <= atol + rtol * |expected| on the decoded "
                    "values (NaN equals NaN). Prints the element count, the first mismatches (index, expected, "
                    "actual, differences, bits), the largest absolute and relative errors and the error ratio. Exit "
                    "status 0 when the error ratio is within --error-ratio (default 0), 1 otherwise, 2 on bad usage. "
                    "--dtype and --shape default to the manifest.json that `npu-emu golden` writes next to the files."),
        epilog="examples:\n  npu-emu compare y.bin case/golden.bin --dtype float16\n"
               "  npu-emu compare y.bin golden.bin --dtype float32 --rtol 1e-3 --atol 1e-5 --error-ratio 1e-3\n"
               "  npu-emu compare y.bin case/golden.bin          (dtype and shape from case/manifest.json)")
    sp.add_argument("actual", help="the output to check (.bin)")
    sp.add_argument("expected", help="the golden / reference output (.bin)")
    sp.add_argument("--dtype", type=_dtype_arg, default=None,
                    help="element type: float32, float16, bfloat16, int8, ..., float8_e4m3fn, float8_e5m2, hifloat8, "
                         "float8_e8m0, float4_e2m1 (packed 2 per byte)")
    sp.add_argument("--shape", type=parse_shape, default=None, help="shape to report indices in, e.g. 16,32")
    sp.add_argument("--rtol", type=float, default=None, help="relative tolerance (default: bit-exact)")
    sp.add_argument("--atol", type=float, default=None, help="absolute tolerance (default: bit-exact)")
    sp.add_argument("--error-ratio", type=float, default=0.0,
                    help="fraction of elements allowed to mismatch (CANN scripts use e.g. 1e-3; default 0)")
    sp.add_argument("--max-print", type=int, default=10, help="mismatches to print (default 10)")
    sp.set_defaults(func=_cmd_compare)

    verbs = (("run", "run an op on .bin inputs and write .bin outputs",
              "Reads the inputs as raw little-endian .bin files, runs the op through npu_emu.ops with CANN's checks "
              "and writes the output .bin. `npu-emu run OP --help` lists OP's inputs and switches."),
             ("tiling", "print the host tiling data and the per-core split of an op",
              "Computes the op_host tiling of OP for a shape and SoC, prints the TilingData fields in struct order, "
              "the packed struct bytes, blockDim / tilingKey / workspace and the per-core split."),
             ("golden", "write random inputs and the independent golden output as .bin files + manifest.json",
              "Writes random inputs and the expected output computed by the op's independent numpy golden "
              "(the op folder's golden.py, never the kernel) into --out, with manifest.json naming each file's shape and "
              "dtype. Check a run against it with `npu-emu compare`."))
    for verb, text, desc in verbs:
        ops_here = [n for n, spec in commands.items() if verb in spec]
        vp = sub.add_parser(verb, help=text, description=_w(desc) + "\n\nops: " + ", ".join(ops_here),
                            formatter_class=fmt)
        ops = vp.add_subparsers(dest="op", required=True, metavar="OP")
        for name in ops_here:
            spec = commands[name]
            add_arguments, handler = spec[verb]
            op_p = ops.add_parser(name, help=spec.get("help", ""), description=spec.get("help", ""))
            add_arguments(op_p)
            op_p.set_defaults(func=lambda a, c, h=handler: h(a))
    return p


def _cmd_quantize_checkpoint(args, commands):
    from npu_emu.dask import checkpoint

    return checkpoint.cli_main(args)


def _cmd_cabi_build(args, commands):
    from npu_emu.cabi.build import main as cabi_main  # imported here: the CLI starts without the C ABI

    return cabi_main(args)


def main(argv=None):
    commands = _load_commands()
    parser = build_parser(commands)
    args = parser.parse_args(argv)
    try:
        rc = args.func(args, commands)
        sys.stdout.flush()   # inside the try: a closed pipe shows up here when the output fits the buffer
    except AclnnError as e:
        print(f"npu-emu: error {e.status}: {e.message}", file=sys.stderr)
        return 2
    except SystemExit as e:
        if isinstance(e.code, str):       # a handler's "what went wrong; what to change"
            print(e.code, file=sys.stderr)
            return 2
        raise
    except BrokenPipeError:
        # the reader went away (`npu-emu tiling ... | head`): stop quietly, as other command-line tools do
        # (the interpreter's final flush of stdout would raise again, so stdout is pointed at /dev/null first)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as e:
        print(f"npu-emu: error: {e.strerror or e} ({e.filename}); check the file and folder arguments",
              file=sys.stderr)
        return 2
    except (ValueError, ZeroDivisionError, IndexError, OverflowError, MemoryError) as e:
        # option values the per-op handlers do not check one by one (sizes, seeds, shapes) fail in numpy or a
        # golden: still a usage error, reported as one
        print(f"npu-emu: error: the options of `{args.command} {getattr(args, 'op', '')}` cannot be used "
              f"({type(e).__name__}: {e}); see `npu-emu {args.command} {getattr(args, 'op', '')} --help`",
              file=sys.stderr)
        return 2
    return 0 if rc is None else int(rc)

