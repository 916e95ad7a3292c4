"""``npu-emu demo``: run every implemented op once at a production shape, check it bit-exactly against its
independent golden (each op folder's golden.py; ml_dtypes for the FP8 codecs, npu_emu.dtypes.golden for HiF8),
and print a table: time, throughput, speed-up over the golden, emulator time over the host and the 910B2
rooflines, match.

Shapes are the asv benchmark shapes (benchmarks/bench_*.py); ``small=True`` scales them down so that the whole demo
runs in seconds with a warm numba cache. The cases come from the op declarations (``kernels/<op>/op.py`` names
its ``demo.py``), plus the codecs' below, all in :data:`BUILDERS`; a case that cannot run in this install is listed
as skipped. The golden of a matmul runs on a sample of rows (and of columns for the
exact float models, whose golden is Fraction arithmetic): a quant-matmul output row depends only on its x1 row,
so that sample is checked exactly, and the golden's time is scaled to the whole output (marked "~").
"""

import json
import sys
import time
import numpy as np

from npu_emu.frontend import registry
from npu_emu.frontend.registry import DemoCase as Builder  # noqa: F401 (what a test double builds)
from npu_emu.frontend.cases import (  # noqa: F401 (Case, Unavailable: the names demo cases and tests use)
    DEVICE,
    HOST_COPY_BPS_PER_THREAD,
    Case,
    Unavailable,
    demo_collector,
    same_bits as _same_bits,
    same_float as _same_float,
)


def fmt_dims(dims):
    return "x".join(str(d) for d in dims)


# the codecs of npu_emu.dtypes, which are no op (the op cases come from their declarations)
_CODEC_CASES, builder = demo_collector()

# ---------------------------------------------------------------------------------------------------------------
# Codecs (asv bench_codecs: 16 Mi elements; oracles ml_dtypes and npu_emu.dtypes.golden)
# ---------------------------------------------------------------------------------------------------------------

def _codec_input(rng, n):
    x = (rng.standard_normal(n, dtype=np.float32) * 64).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 465.0], np.float32)
    x[: min(n, specials.size)] = specials[: min(n, specials.size)]
    return x


def _fp8_same(dt):
    def same(a, b):
        a, b = np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8)
        nan_a = np.isnan(a.view(dt).astype(np.float32))
        nan_b = np.isnan(b.view(dt).astype(np.float32))
        return a.shape == b.shape and np.array_equal(nan_a, nan_b) and np.array_equal(a[~nan_a], b[~nan_b])

    return same


@builder("encode_float8_e4m3fn", (16 << 20,), (1 << 20,), "n: float32 -> FP8 E4M3FN codes (npu_emu.dtypes.encode)",
         tiny=(64,))
def _enc_e4m3(dims, rng):
    import ml_dtypes

    from npu_emu import dtypes

    (n,) = dims
    x = _codec_input(rng, n)
    return Case("encode f32->float8_e4m3fn", f"[{n}] f32", lambda: dtypes.encode(x, "float8_e4m3fn"),
                lambda: x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8), _fp8_same(ml_dtypes.float8_e4m3fn), 5 * n)


@builder("decode_float8_e4m3fn", (16 << 20,), (1 << 20,), "n: FP8 E4M3FN codes -> float32 (npu_emu.dtypes.decode)",
         tiny=(64,))
def _dec_e4m3(dims, rng):
    import ml_dtypes

    from npu_emu import dtypes

    (n,) = dims
    codes = rng.integers(0, 256, n, dtype=np.uint8)
    return Case("decode float8_e4m3fn->f32", f"[{n}] u8", lambda: dtypes.decode(codes, "float8_e4m3fn"),
                lambda: codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32), _same_float, 5 * n)


@builder("encode_hifloat8", (16 << 20,), (1 << 20,),
         "n: float32 -> HiFloat8 codes, round half away (vs npu_emu.dtypes.golden)", tiny=(64,))
def _enc_hif8(dims, rng):
    from npu_emu import dtypes
    from npu_emu.dtypes import golden

    (n,) = dims
    x = _codec_input(rng, n)
    # the golden is plain numpy from docs/codecs.md §4 (it agrees with en_dtypes, the test suite's oracle), so the
    # case is checked on the default install; 0x80 is HiF8's only NaN, so the codes compare exactly
    return Case("encode f32->hifloat8", f"[{n}] f32", lambda: dtypes.encode(x, "hifloat8"),
                lambda: golden.encode_round(x), _same_bits, 5 * n)


# every case: the op folders' (declared in op.py, in registry order), then the codecs'
BUILDERS = {c.key: c for c in [*(c for c, _ in registry.demo_cases()), *_CODEC_CASES]}
# the cases a fresh process knows (a worker process of warm_up builds these only)
_DECLARED = frozenset(BUILDERS)
_BUILT = dict(BUILDERS)


# ---------------------------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------------------------

def select(only=None):
    """Builder keys for ``only`` (keys or key prefixes; None = all), in table order."""
    if not only:
        return list(BUILDERS)
    keys = []
    for want in only:
        hit = [k for k in BUILDERS if k == want or k.startswith(want)]
        if not hit:
            raise SystemExit(f"npu-emu: no demo case {want!r}; choose from {', '.join(BUILDERS)}")
        keys.extend(k for k in hit if k not in keys)
    return keys


# ---------------------------------------------------------------------------------------------------------------
# a cold first run: compile in parallel processes first
# ---------------------------------------------------------------------------------------------------------------

def _warm_group(keys):
    """Run the cases ``keys`` once at their small shape (in a worker process): numba compiles their kernels and
    writes them to its cache, from which the demo's own process then loads them. Errors are left to that run."""
    t0 = time.perf_counter()
    for key in keys:
        b = BUILDERS[key]
        try:
            b.build(b.small, np.random.default_rng(0)).run()
        except Exception:  # noqa: BLE001 (the demo's own run reports it, with the case's row)
            pass
    return keys, time.perf_counter() - t0


def _warm_marker(keys):
    """The file whose presence says that the kernels of ``keys`` were compiled into this numba cache by this
    install's sources (a hash of the cache's place, the package's place and source times, numba and Python)."""
    import hashlib
    import os

    import numba

    import npu_emu
    from npu_emu.cli.compile import cache_location

    pkg = os.path.dirname(os.path.abspath(npu_emu.__file__))
    newest = 0.0
    for root, dirs, files in os.walk(pkg):
        dirs[:] = [d for d in dirs if d not in ("__pycache__", "_kernel_cache")]
        newest = max([newest] + [os.stat(os.path.join(root, f)).st_mtime for f in files if f.endswith(".py")])
    where = cache_location()[0]
    h = hashlib.sha1(repr((where, pkg, newest, numba.__version__, sys.version_info[:2], sorted(keys))).encode())
    from numba.misc.appdirs import AppDirs

    return os.path.join(AppDirs(appname="npu-emu", appauthor=False).user_cache_dir, f"demo-compiled-{h.hexdigest()}")


def warm_up(keys, jobs, progress=True, out=None):
    """Before a cold run, compile the kernels of the demo cases ``keys`` in ``jobs`` processes (numba compiles on
    one thread, so a single process leaves the other cores idle for most of a first run). Skipped when this install
    ships its kernels compiled, when ``jobs`` < 2, and when a previous run already compiled them into this cache.
    Returns the seconds spent (0.0 when skipped)."""
    import os
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from multiprocessing import get_context

    from npu_emu.device import shipped_kernels
    from npu_emu.frontend import registry as reg

    if jobs is None or jobs < 2 or shipped_kernels.why_not() is None:
        return 0.0
    marker = _warm_marker(keys)
    if os.path.exists(marker):
        return 0.0
    # one task per op family group (cases of one family compile the same functions: one worker, not two at once)
    owner = {c.key: op.schedule_group or op.name for c, op in reg.demo_cases()}
    groups = {}
    for key in keys:
        if key in _DECLARED and BUILDERS.get(key) is _BUILT.get(key):
            groups.setdefault(owner.get(key, "codecs"), []).append(key)
    if not groups:
        return 0.0
    tasks = sorted(groups.values(), key=len, reverse=True)
    jobs = min(jobs, len(tasks))
    out = out or sys.stderr
    t0 = time.perf_counter()
    if progress:
        print(f"npu-emu demo: first run in this cache: compiling the kernels of {len(keys)} cases in {jobs} "
              f"processes (once; later runs load them from numba's cache)", file=out, flush=True)
    with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(_warm_group, t) for t in tasks]
        for f in as_completed(futures):
            try:
                done, secs = f.result()
            except Exception as exc:  # noqa: BLE001 (a worker that died: the run below compiles what is missing)
                print(f"npu-emu demo: a compile worker failed ({type(exc).__name__}: {exc}); the cases compile as "
                      f"they run", file=out, flush=True)
                return time.perf_counter() - t0
            if progress:
                print(f"  compiled {', '.join(done)} ({secs:.0f} s)", file=out, flush=True)
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    with open(marker, "w") as f:
        f.write(" ".join(keys) + "\n")
    return time.perf_counter() - t0


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


_host_flops_cache = []


def host_flops():
    """The host's float32 GEMM rate (numpy BLAS, 1024^3, best of 3): the compute side of the host roofline."""
    if not _host_flops_cache:
        a = np.ones((1024, 1024), np.float32)
        np.matmul(a, a)
        t, _ = _best(lambda: np.matmul(a, a), 3)
        _host_flops_cache.append(2 * 1024 ** 3 / t)
    return _host_flops_cache[0]


def roofline_ratios(case, seconds, threads):
    """(emulator / host roofline, emulator / device roofline, device label)."""
    from npu_emu.device import platforms

    host = case.nbytes / (HOST_COPY_BPS_PER_THREAD * threads)
    if case.flops:
        host = max(host, case.flops / host_flops())
    dev_name = DEVICE
    plat = platforms.get(DEVICE)
    if case.flops and not plat.is_known(case.peak):       # e.g. fp8 on a 910B: use the op's own SoC
        dev_name = case.device
        plat = platforms.get(case.device)
    dev = plat.device_seconds(case.nbytes, case.flops, peak=case.peak) if case.flops else \
        plat.device_seconds(case.nbytes)
    return seconds / host, seconds / dev, dev_name


def main(small=False, only=None, shapes=None, repeat=None, threads=None, json_path=None, progress=True,
         out=None, compile_jobs=None):
    """Run the demo; returns the exit status (0: every case bit-exact, 1: a mismatch or an error).
    ``compile_jobs``: compile a cold run's kernels in that many processes first (:func:`warm_up`)."""
    import numba
    from tqdm import tqdm

    out = out or sys.stdout
    shapes = dict(shapes or {})
    unknown = [k for k in shapes if k not in BUILDERS]
    if unknown:
        raise SystemExit(f"npu-emu: --shape for unknown demo case(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(BUILDERS)}")
    if threads is not None:
        if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
            raise SystemExit(f"npu-emu: --threads {threads} must be in 1..{numba.config.NUMBA_NUM_THREADS} "
                             f"(set NUMBA_NUM_THREADS for more)")
        numba.set_num_threads(threads)
    nthreads = numba.get_num_threads()
    keys = select(only)
    if repeat is None:
        repeat = 3 if small else 2
    warm_up(keys, compile_jobs, progress)
    rows, notes, ok_all = [], [], True
    # tqdm's disable=None: a bar on a terminal only, none in logs and pipes
    bar = tqdm(keys, desc="npu-emu demo", unit="op", file=sys.stderr, disable=None if progress else True,
               leave=False)
    for key in bar:
        b = BUILDERS[key]
        dims = shapes.get(key, b.small if small else b.production)
        rng = np.random.default_rng(2026)
        try:
            bar.set_postfix_str(f"{key}: inputs")
            if dims != b.small:
                # compile / load from the numba cache on the small shape, so the big one is timed warm
                bar.set_postfix_str(f"{key}: warm-up")
                b.build(b.small, np.random.default_rng(0)).run()
            case = b.build(dims, rng)
            if dims == b.small:
                bar.set_postfix_str(f"{key}: warm-up")
                case.run()
            bar.set_postfix_str(f"{key}: emulator x{repeat}")
            t_emu, got = _best(case.run, repeat)
            bar.set_postfix_str(f"{key}: golden")
            t_gold, want = _best(case.golden, 1)
            bar.set_postfix_str(f"{key}: compare")
            ok = bool(case.same(got, want))
        except Unavailable as e:
            notes.append(f"skipped {key}: {e}")
            continue
        except Exception as e:          # a failing op must not hide the others: report it as a failed row
            ok_all = False
            notes.append(f"error in {key}: {type(e).__name__}: {e}")
            rows.append(dict(key=key, op=key, shape=fmt_dims(dims), error=str(e), bit_exact=False))
            continue
        ok_all &= ok
        host, dev, dev_name = roofline_ratios(case, t_emu, nthreads)
        rate = case.flops / t_emu / 1e9 if case.flops else case.nbytes / t_emu / 1e9
        unit = ("GOP/s" if case.peak == "int8_peak_ops" else "GFLOP/s") if case.flops else "GB/s"
        rows.append(dict(key=key, op=case.op, shape=case.shape, seconds=t_emu, rate=rate, rate_unit=unit,
                         golden_seconds=t_gold / case.golden_fraction, sampled=case.golden_fraction < 1,
                         speedup=t_gold / case.golden_fraction / t_emu, over_host_roofline=host,
                         over_device_roofline=dev, device=dev_name, bit_exact=ok))
        del case, got, want
    bar.close()
    _print_table(rows, notes, small, nthreads, out)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"threads": nthreads, "small": small, "rows": rows, "notes": notes}, f, indent=2)
    return 0 if ok_all else 1


def _print_table(rows, notes, small, threads, out):
    head = ("op", "shape", "time ms", "rate", "x golden", "/host roof", f"/{DEVICE[6:].upper()} roof", "bit-exact")
    table = []
    for r in rows:
        if "error" in r:
            table.append((r["op"], r["shape"], "-", "-", "-", "-", "-", "ERROR"))
            continue
        mark = "*" if r["device"] != DEVICE else ""
        table.append((r["op"], r["shape"], _fmt(r["seconds"] * 1e3), f"{_fmt(r['rate'])} {r['rate_unit']}",
                      ("~" if r["sampled"] else "") + _fmt(r["speedup"]), _fmt(r["over_host_roofline"]),
                      _fmt(r["over_device_roofline"]) + mark, "yes" if r["bit_exact"] else "NO"))
    widths = [max([len(head[i])] + [len(t[i]) for t in table]) for i in range(len(head))]
    print(f"npu-emu demo ({'small' if small else 'production'} shapes, {threads} numba threads)", file=out)
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)), file=out)
    for t in table:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths)), file=out)
    if any(r.get("sampled") for r in rows):
        print("~ golden run on a sample of the output rows (and columns for the exact float models); its time is "
              "scaled to the whole output", file=out)
    if any(r.get("device", DEVICE) != DEVICE for r in rows if "error" not in r):
        print("* no 910B2 figure for this arithmetic: roofline of the ascend950pr "
              "(docs/device/platforms.md §4)", file=out)
    print("/host roof: time over max(bytes / (25 GB/s x threads), ops / host float32 GEMM rate); "
          f"/{DEVICE[6:].upper()} roof: time over max(bytes / HBM bandwidth, ops / peak)", file=out)
    for note in notes:
        print(note, file=out)
    bad = [r["op"] for r in rows if not r["bit_exact"]]
    print(f"{len(rows) - len(bad)} of {len(rows)} cases bit-exact" + (f"; MISMATCH: {', '.join(bad)}" if bad else ""),
          file=out)


def _fmt(v):
    if isinstance(v, float):
        if v >= 100:
            return f"{v:,.0f}"
        return f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    return str(v)


if __name__ == "__main__":
    sys.exit(main(small="--small" in sys.argv))
