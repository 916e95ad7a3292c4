"""Shared machinery of the reliability suite (registered by conftest.py as the module ``npu_reliability``).

The property every public entry must keep, whatever it is given (issue 11):
  * it returns the golden's bits, or raises ``npu_emu.AclnnError`` with a CANN status and a non-empty message
    (the aclnn layer returns that status instead, and ``aclGetRecentErrMsg()`` says why);
  * it never raises another exception type (a numba TypingError, an IndexError, a numpy MemoryError ... are bugs:
    bad input must be rejected before numba runs);
  * it never modifies an input (inputs are read-only arrays, and their bytes are compared after the call);
  * it never writes part of a result into the caller's ``out`` when it fails (``out`` is pre-filled with a
    sentinel pattern that must survive a failing call).

``call_entry`` / ``call_aclnn`` run one call under that contract and count it per entry (the long run quotes the
counts, see conftest.py's terminal summary).
"""

import collections
import os

import ml_dtypes
import numpy as np

import npu_emu.aclnn
from npu_emu.errors import ACLNN_ERR_INNER, STATUS_NAMES, AclnnError

# Every status an error may carry: CANN's codes (docs/conventions.md §6) except success.
CANN_CODES = frozenset(STATUS_NAMES) - {0}

CALLS = collections.Counter()        # entry name -> calls made
OUTCOMES = collections.Counter()     # (entry name, "ok" / status) -> calls

FAST_EXAMPLES = int(os.environ.get("NPU_EMU_FUZZ_FAST", "30"))
SLOW_EXAMPLES = int(os.environ.get("NPU_EMU_FUZZ_SLOW", "10000"))

# NPU_EMU_FUZZ_KNOWN_BUGS=1: the bugs already reported (KNOWN_SIGNATURES) fail the fuzz again
KNOWN_BUGS = os.environ.get("NPU_EMU_FUZZ_KNOWN_BUGS") == "1"
# out mutations that only hit a known bug: kept in the draw (drop_known skips the example) so that a fix is seen
KNOWN_BUG_MUTATIONS = ["readonly"]


class ContractViolation(AssertionError):
    """A public entry broke the contract above (the message carries a reproducer)."""


# Bugs already reported, each pinned by an xfail(strict=True) test in test_known_bugs.py, by the signature of the
# exception: (type name, repository file, function) of the innermost frame in the repository. A fuzz call that dies
# with one of them is counted as "known bug" and dropped (hypothesis reject) so the fuzz keeps exercising everything
# else; NPU_EMU_FUZZ_KNOWN_BUGS=1 makes them failures again. When a bug is fixed its xfail test turns XPASS (a
# failure): then delete the signature here and the test there.
KNOWN_SIGNATURES = [    # (type, file glob, function glob); none open: the CLI reports option errors with exit 2
]


def _repository_path(filename):
    """``filename`` as a path in the repository ("kernels/x/api.py") if it is npu_emu's code, else None: from the
    source tree (an editable install) or from an installed wheel, which puts kernels/ and dtypes/ under npu_emu/."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
    pkg = os.path.dirname(os.path.abspath(npu_emu.__file__)) + os.sep
    if filename.startswith(pkg):
        rel = filename[len(pkg):].replace(os.sep, "/")
        return rel if rel.startswith(("kernels/", "dtypes/")) else "npu_emu/" + rel
    if filename.startswith(root) and "site-packages" not in filename:  # a venv may live in the checkout
        rel = filename[len(root):].replace(os.sep, "/")
        return None if rel.startswith("tests/") else rel
    return None


def signature(exc):
    """(type name, repository file, function) of the innermost frame of ``exc``'s traceback in npu_emu's code."""
    import traceback

    frames = [(path, f.name) for f in traceback.extract_tb(exc.__traceback__)
              if (path := _repository_path(f.filename)) is not None]
    if not frames:
        return (type(exc).__name__, "", "")
    path, func = frames[-1]
    return (type(exc).__name__, path, func)


def known_bug(entry, exc):
    """True (and counted) when ``exc`` is a reported bug and the fuzz runs without NPU_EMU_FUZZ_KNOWN_BUGS."""
    if KNOWN_BUGS:
        return False
    import fnmatch

    t, path, func = signature(exc)
    if any(t == kt and fnmatch.fnmatch(path, kp) and fnmatch.fnmatch(func, kf) for kt, kp, kf in KNOWN_SIGNATURES):
        OUTCOMES[(entry, f"known bug {t} in {path}:{func}")] += 1
        return True
    return False


def drop_known(entry, exc):
    """Leave the current hypothesis example when ``exc`` is a known bug (see KNOWN_SIGNATURES)."""
    from hypothesis import reject

    if known_bug(entry, exc):
        reject()


# ---------------------------------------------------------------------------------------------------------------
# arrays
# ---------------------------------------------------------------------------------------------------------------

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(a):
    """The integer view used for bit-exact comparison (bool as uint8)."""
    a = np.asarray(a)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    return np.ascontiguousarray(a).view(_UINT[a.dtype.itemsize])


def _isnan(a, dtype):
    if dtype is None:
        return np.zeros(a.shape, bool)
    with np.errstate(all="ignore"):
        return np.isnan(np.ascontiguousarray(a).view(dtype).astype(np.float32))


def same_bits(got, want, what="", *, nan_dtype=None):
    """Bit-exact equality. ``nan_dtype``: the float type of the values where the documented semantics leave the NaN byte
    unspecified (docs/conventions.md §2.3: "NaN checked as is NaN"); then any NaN matches any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise ContractViolation(f"{what}: shape {got.shape} != golden {want.shape}")
    if got.dtype.itemsize != want.dtype.itemsize:
        raise ContractViolation(f"{what}: dtype {got.dtype} != golden {want.dtype}")
    g, w = bits(got), bits(want)
    differ = g != w
    if differ.any() and nan_dtype is not None:
        differ &= ~(_isnan(g, nan_dtype) & _isnan(w, nan_dtype))
    if differ.any():
        bad = np.flatnonzero(differ.reshape(-1))
        i = int(bad[0])
        raise ContractViolation(f"{what}: {bad.size} of {g.size} elements differ from the golden; first at flat "
                                f"{i}: got {g.reshape(-1)[i]:#x}, golden {w.reshape(-1)[i]:#x}")


def readonly(a):
    """A read-only copy (views of it stay read-only, so no path through the op may write into it)."""
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def layout(a, how, rng=None):
    """``a``'s values in another memory layout, read-only: "c" (contiguous), "strided" (every other element of
    a bigger buffer), "fortran" (column-major), "negative" (a reversed view), "broadcast" (stride 0 where the
    values repeat: only when ``a`` is constant along an axis, else "strided")."""
    a = np.asarray(a)
    if how == "c" or a.ndim == 0 or a.size == 0:
        return readonly(a)
    if how == "broadcast":
        flat = a.reshape(-1)
        if flat.size and np.array_equal(bits(flat), np.broadcast_to(bits(flat[:1]), flat.shape)):
            v = readonly(flat[:1].reshape((1,) * a.ndim))
            return np.broadcast_to(v, a.shape)
        how = "strided"
    if how == "fortran" and a.ndim >= 2:
        f = np.asfortranarray(a)
        f.setflags(write=False)
        return f
    if how == "negative":
        r = readonly(a[..., ::-1])
        return r[..., ::-1]
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    big.setflags(write=False)
    return big[..., ::2]


def sentinel_like(shape, dtype, seed=0xA5):
    """A writeable array filled with a byte pattern no op produces as a whole (checked after failing calls)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = (np.arange(n, dtype=np.uint32) * 131 + seed).astype(np.uint8)
    return raw.view(dtype).reshape(shape) if n else np.empty(shape, dtype)


def describe(x, depth=0):
    """A short, reproducible description of an argument for failure messages."""
    if isinstance(x, np.ndarray):
        head = (f"array(dtype={x.dtype}, shape={x.shape}, strides={x.strides}, "
                f"contiguous={x.flags.c_contiguous}, writeable={x.flags.writeable}")
        if x.size <= 16:
            return head + f", bits={bits(x).tolist() if x.dtype.itemsize in _UINT else x.tolist()})"
        return head + ")"
    if isinstance(x, (list, tuple)) and depth < 2:
        inner = ", ".join(describe(v, depth + 1) for v in x[:8])
        return f"[{inner}{', ...' if len(x) > 8 else ''}]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}={describe(v, depth + 1)}" for k, v in x.items()) + "}"
    r = repr(x)
    return r if len(r) < 200 else r[:200] + "..."


def _arrays(obj, acc):
    if isinstance(obj, np.ndarray):
        acc.append(obj)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _arrays(v, acc)
    elif isinstance(obj, dict):
        for v in obj.values():
            _arrays(v, acc)
    return acc


def _snapshot(arrays):
    return [(a, np.array(a, copy=True)) for a in arrays]


def _unchanged(snap, what, repro):
    for a, before in snap:
        if a.shape != before.shape or not np.array_equal(bits(a), bits(before)):
            raise ContractViolation(f"{what} was modified by the call\n{repro}")


# ---------------------------------------------------------------------------------------------------------------
# the contract
# ---------------------------------------------------------------------------------------------------------------

_COUNTS_FILE = os.environ.get("NPU_EMU_FUZZ_COUNTS")     # the long run's progress: calls per entry, rewritten


def _progress():
    """Every 200 calls, rewrite NPU_EMU_FUZZ_COUNTS (when set) with the calls and outcomes so far, so that a long
    run stopped before its end still tells how far each entry got."""
    if _COUNTS_FILE and sum(CALLS.values()) % 200 == 0:
        with open(_COUNTS_FILE, "w") as f:
            for entry, n in sorted(CALLS.items()):
                outs = {str(k[1]): v for k, v in OUTCOMES.items() if k[0] == entry}
                f.write(f"{entry}\t{n}\t{outs}\n")


def check_error(entry, err, repro):
    """An AclnnError must carry a CANN status and a message; a kernel crash wrapped as 561000 is still a bug."""
    if err.status not in CANN_CODES:
        raise ContractViolation(f"{entry}: AclnnError with status {err.status}, not a CANN code\n{repro}")
    if not err.message.strip():
        raise ContractViolation(f"{entry}: AclnnError {err.status} with an empty message\n{repro}")
    if err.status == ACLNN_ERR_INNER and "failed:" in err.message and "kernel" in err.message:
        raise ContractViolation(f"{entry}: the kernel itself failed (input not rejected by the checks): "
                                f"{err.message}\n{repro}")


def _repro(entry, args, kwargs):
    parts = [describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kwargs.items()]
    return f"reproducer: {entry}({', '.join(parts)})"


def call_entry(entry, fn, args=(), kwargs=None, *, outs=()):
    """Call ``fn(*args, **kwargs)`` under the contract. Returns ("ok", result) or ("err", AclnnError).

    ``outs``: caller-owned output arrays that must keep their bytes if the call fails.
    """
    kwargs = kwargs or {}
    repro = _repro(entry, args, kwargs)
    outs_ids = {id(o) for o in outs}
    inputs = [a for a in _arrays((args, kwargs), []) if id(a) not in outs_ids]
    snap_in = _snapshot(inputs)
    snap_out = _snapshot(outs)
    CALLS[entry] += 1
    _progress()
    try:
        res = fn(*args, **kwargs)
    except AclnnError as e:
        OUTCOMES[(entry, e.status)] += 1
        check_error(entry, e, repro)
        _unchanged(snap_in, f"{entry}: an input", repro)
        _unchanged(snap_out, f"{entry}: the caller's out (a failing call wrote into it)", repro)
        return "err", e
    except (KeyboardInterrupt, ContractViolation):
        raise
    except BaseException as e:  # noqa: BLE001 -- any other exception type is the finding
        drop_known(entry, e)
        raise ContractViolation(f"{entry} raised {type(e).__name__}: {e}\n{repro}") from e
    OUTCOMES[(entry, "ok")] += 1
    _unchanged(snap_in, f"{entry}: an input", repro)
    return "ok", res


class AclnnResult:
    def __init__(self, status, phase, message=""):
        self.status, self.phase, self.message = status, phase, message

    @property
    def ok(self):
        return self.status == 0


def call_aclnn(entry, args=(), kwargs=None, *, outs=(), home=None):
    """Both phases of ``npu_emu.aclnn.<entry>`` under the contract (statuses instead of exceptions).

    Also checks that a second run of the executor is refused without touching ``out``. ``home``: see public().
    """
    kwargs = kwargs or {}
    get_ws = public(npu_emu.aclnn, entry + "GetWorkspaceSize", home)
    run = public(npu_emu.aclnn, entry, home)
    repro = _repro(entry + "GetWorkspaceSize", args, kwargs)
    outs_ids = {id(o) for o in outs}
    snap_in = _snapshot([a for a in _arrays((args, kwargs), []) if id(a) not in outs_ids])
    snap_out = _snapshot(outs)
    CALLS[entry] += 1
    _progress()
    try:
        got = get_ws(*args, **kwargs)
    except (KeyboardInterrupt, ContractViolation):
        raise
    except BaseException as e:  # noqa: BLE001
        drop_known(entry, e)
        raise ContractViolation(f"{entry}GetWorkspaceSize raised {type(e).__name__}: {e} (the aclnn layer must "
                                f"return a status)\n{repro}") from e
    if not (isinstance(got, tuple) and len(got) == 3):
        raise ContractViolation(f"{entry}GetWorkspaceSize returned {got!r}, not (status, size, executor)\n{repro}")
    status, ws, ex = got
    if status != 0:
        return _aclnn_failed(entry, status, "GetWorkspaceSize", ex, snap_in, snap_out, repro)
    if not isinstance(ws, (int, np.integer)) or ws < 0 or ex is None:
        raise ContractViolation(f"{entry}: success with workspace {ws!r} and executor {ex!r}\n{repro}")
    try:
        status = run(None, ws, ex)
    except (KeyboardInterrupt, ContractViolation):
        raise
    except BaseException as e:  # noqa: BLE001
        drop_known(entry, e)
        raise ContractViolation(f"{entry} (phase 2) raised {type(e).__name__}: {e}\n{repro}") from e
    if status != 0:
        return _aclnn_failed(entry, status, "run", None, snap_in, snap_out, repro)
    OUTCOMES[(entry, "ok")] += 1
    _unchanged(snap_in, f"{entry}: an input", repro)
    after = _snapshot(outs)
    again = run(None, ws, ex)
    if again == 0:
        raise ContractViolation(f"{entry}: an executor ran twice (an aclOpExecutor runs once)\n{repro}")
    _unchanged(after, f"{entry}: out (changed by a refused second run)", repro)
    return AclnnResult(0, "run")


def _aclnn_failed(entry, status, phase, ex, snap_in, snap_out, repro):
    OUTCOMES[(entry, status)] += 1
    msg = npu_emu.aclnn.aclGetRecentErrMsg()
    if not isinstance(status, (int, np.integer)) or int(status) not in CANN_CODES:
        raise ContractViolation(f"{entry} {phase}: status {status!r} is not a CANN code\n{repro}")
    check_error(entry, AclnnError(int(status), msg or " "), repro)
    if not msg:
        raise ContractViolation(f"{entry} {phase}: status {status} but aclGetRecentErrMsg() is empty\n{repro}")
    if phase == "GetWorkspaceSize" and ex is not None:
        raise ContractViolation(f"{entry}: failing GetWorkspaceSize returned an executor\n{repro}")
    _unchanged(snap_in, f"{entry}: an input", repro)
    _unchanged(snap_out, f"{entry}: the caller's out (a failing call wrote into it)", repro)
    return AclnnResult(int(status), phase, msg)


def expect(outcome, want_error, entry, codes=None):
    """``want_error``: True (must fail, with a status in ``codes`` when given), False (must succeed) or None."""
    failed = outcome[0] == "err" if isinstance(outcome, tuple) else not outcome.ok
    status = (outcome[1].status if failed else 0) if isinstance(outcome, tuple) else outcome.status
    if want_error is True and not failed:
        raise ContractViolation(f"{entry}: accepted input that must be rejected")
    if want_error is False and failed:
        detail = outcome[1] if isinstance(outcome, tuple) else f"{outcome.status} {outcome.message}"
        raise ContractViolation(f"{entry}: rejected a valid input: {detail}")
    if failed and codes is not None and status not in codes:
        raise ContractViolation(f"{entry}: status {status}, expected one of {sorted(codes)}")
    return failed


def public(module, name, home):
    """``module.name`` (npu_emu.ops / npu_emu.aclnn); an op that is not exported yet (MX quant while it lands) is
    taken from its ``home`` module (kernels/<op>/api.py). The test is skipped only when neither has it."""
    import importlib

    import pytest

    fn = getattr(module, name, None)
    if fn is None and home is not None:
        fn = getattr(importlib.import_module(home), name, None)
    if fn is None:
        pytest.skip(f"{module.__name__}.{name} is not exported yet")
    return fn


def fast_and_slow(body):
    """(fixed-seed fast test, long test behind -m slow) running ``body(data)`` under hypothesis.

    The wrappers get real names: pytest.mark.slow treats a function named "<lambda>" as a mark argument (and the
    test then is never collected).
    """
    import pytest
    from hypothesis import given, settings
    from hypothesis import strategies as st

    def fast(data):
        body(data)

    def slow(data):
        body(data)

    name = body.__name__.lstrip("_")
    fast.__name__ = fast.__qualname__ = f"test_{name}"
    slow.__name__ = slow.__qualname__ = f"test_{name}_long"
    fast = settings(settings.get_profile("reliability-fast"))(given(st.data())(fast))
    slow = settings(settings.get_profile("reliability-slow"))(given(st.data())(slow))
    return fast, pytest.mark.slow(slow)


# ---------------------------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------------------------

BF16 = np.dtype(ml_dtypes.bfloat16)

# Bit patterns of the special values of each float format: NaNs (quiet, signalling, negative, payloads),
# infinities, signed zeros, the smallest and largest subnormals, the smallest normal, the largest finite.
SPECIAL_BITS = {
    np.dtype(np.float32): [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0x7F800000, 0xFF800000, 0x0, 0x80000000,
                           0x1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000],
    np.dtype(np.float16): [0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0x7C00, 0xFC00, 0x0, 0x8000, 0x1, 0x8001, 0x03FF, 0x0400,
                           0x7BFF, 0xFBFF, 0x3C00, 0xBC00],
    BF16: [0x7FC0, 0xFFC0, 0x7F81, 0x7FFF, 0x7F80, 0xFF80, 0x0, 0x8000, 0x1, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F,
           0x3F80, 0xBF80],
    np.dtype(np.float64): [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF0000000000000,
                           0xFFF0000000000000, 0x0, 0x8000000000000000, 0x1, 0x000FFFFFFFFFFFFF,
                           0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 0x47EFFFFFE0000000,
                           0x36A0000000000000, 0xC7EFFFFFF0000000],
}


def float_values(rng, shape, dtype, *, special_frac=0.0, scale_exp=(-8, 8)):
    """Random values of ``dtype`` (float16/float32/float64/bfloat16): mostly normal-ish magnitudes spread over
    2^scale_exp, a ``special_frac`` share replaced by SPECIAL_BITS patterns."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    mag = np.exp2(rng.uniform(*scale_exp, n)) * rng.choice([-1.0, 1.0], n)
    with np.errstate(over="ignore"):            # magnitudes beyond the format's range become +-inf on purpose
        v = mag.astype(np.float32).astype(dtype) if dtype != np.float64 else mag
    if special_frac and n:
        k = rng.random(n) < special_frac
        pats = np.array(SPECIAL_BITS[dtype], dtype=_UINT[dtype.itemsize])
        v.view(_UINT[dtype.itemsize])[k] = rng.choice(pats, int(k.sum()))
    return v.reshape(shape)


def random_bits(rng, shape, dtype):
    """Uniformly random bit patterns of ``dtype`` (every code, NaNs included)."""
    dtype = np.dtype(dtype)
    u = _UINT[dtype.itemsize]
    n = int(np.prod(shape, dtype=np.int64))
    return rng.integers(0, np.iinfo(u).max, n, dtype=u, endpoint=True).view(dtype).reshape(shape)


WRONG_DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                      np.int64, np.uint64, np.float16, np.float32, np.float64, np.complex64)] + [
    BF16, np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2), np.dtype(ml_dtypes.float8_e8m0fnu),
    np.dtype(ml_dtypes.float4_e2m1fn), np.dtype(ml_dtypes.int4)]


def as_dtype(a, dtype):
    """``a`` reinterpreted or converted to ``dtype`` (a wrong-dtype mutation: only the dtype matters)."""
    a = np.asarray(a)
    dtype = np.dtype(dtype)
    if dtype.itemsize == a.dtype.itemsize and dtype.kind not in "bc":
        return a.view(dtype)
    if dtype.kind == "b":
        return (bits(a) & 1).astype(bool)
    with np.errstate(all="ignore"):
        return bits(a).astype(np.uint8).astype(np.float32).astype(dtype)


# Scalar arguments that are not what a size / count / index parameter needs.
BAD_INTS = [None, -1, 0, True, 1.5, "3", 2 ** 63, -(2 ** 63) - 1, np.int64(-7), float("nan"), [2]]
