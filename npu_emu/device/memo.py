"""One bounded memo for what a call computes from its shapes and options alone (host tilings, checked access
patterns), so that a repeated call with the same shapes does not compute them again.

A tiny call spends far more time building and validating its tiling than running the kernel; a model calls the
same op with the same shapes thousands of times. Every op uses this one memo through :func:`cached` (a value under
an explicit key) or :func:`call` (a pure function's result under its arguments):

* Keys are built by :func:`key_of` from the values themselves: Python scalars with their type (``1``, ``1.0`` and
  ``True`` are three keys), floats by their bits (``-0.0`` and ``0.0`` are two), strings, tuples, numpy dtypes,
  arrays by dtype, shape and bytes (a 256-bit BLAKE2b digest past 4 KiB), TilingData by its packed struct bytes,
  TilingResult and frozen dataclasses by their fields, named tuples by their items; a class that sets
  ``_memo_by_value = True`` (immutable fields that compare exactly) is its own key. A value of any other type
  makes the key unbuildable and the call simply runs uncached. Keys hold copies, never the caller's arrays.
* Whatever raises is not stored: a rejected tiling raises again on every repeat, and no kernel runs.
* Stored values must be immutable (frozen dataclasses, tuples, read-only arrays): every caller gets the same
  object.
* At most :data:`MAX_ENTRIES` values, least recently used first out; a lock guards the table (two threads may
  both compute a missing value; the results are equal, one is kept).

``with bypass():`` turns the memo off (every call computes afresh), for tests that compare results with and
without it.
"""

import contextlib
import dataclasses
import hashlib
import struct
import threading

import numpy as np

from npu_emu.device.tiling_data import TilingData, TilingResult

__all__ = ["MAX_ENTRIES", "Unkeyable", "key_of", "array_key", "cached", "call", "bypass", "clear", "stats"]

MAX_ENTRIES = 512
# Arrays up to this size go into a key as their bytes; larger ones as a BLAKE2b-256 digest of them.
INLINE_BYTES = 4096
_DOUBLE = struct.Struct("<d")                     # floats by their bits: -0.0 and 0.0, NaN payloads stay apart


class Unkeyable(TypeError):
    """A value key_of cannot turn into a key: the call runs without the memo."""


def array_key(a):
    """Key of an array's dtype, shape and contents (a copy or a digest; no reference to ``a``)."""
    a = np.asarray(a)
    head = ("ndarray", a.dtype, a.shape)
    if a.nbytes <= INLINE_BYTES:
        return head + (a.tobytes(),)
    flat = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    return head + (a.nbytes, hashlib.blake2b(flat.data, digest_size=32).digest())


_PLAIN = frozenset((type(None), str, bytes, int))
_FIELD_NAMES = {}


def _items(v):
    if _PLAIN.issuperset(map(type, v)):          # the common case, checked in C
        return tuple(v)
    return tuple([x if type(x) in _PLAIN else key_of(x) for x in v])


def _fields_key(v):
    t = type(v)
    names = _FIELD_NAMES.get(t)
    if names is None:
        names = _FIELD_NAMES[t] = tuple(f.name for f in dataclasses.fields(t))
    return (t,) + _items([getattr(v, n) for n in names])


def _tiling_key(v):
    """TilingData by its struct bytes, TilingResult by its fields; the key is kept on the instance: a repeated call
    hands the same TilingResult (from this memo) in again, and neither holds anything mutable."""
    k = v.__dict__.get("_memo_key")
    if k is None:
        k = (type(v), v.to_bytes()) if isinstance(v, TilingData) else _fields_key(v)
        object.__setattr__(v, "_memo_key", k)
    return k


def _itself(v):
    return v


def _unkeyable(v):
    raise Unkeyable(f"no memo key for a {type(v).__name__}")


def _converter(t):
    """How key_of turns values of type ``t`` into keys (found once per type)."""
    if issubclass(t, np.integer):
        return lambda v: (t.__name__, int(v))
    if issubclass(t, np.floating):
        return lambda v: (t.__name__, v.tobytes())
    if issubclass(t, np.dtype):
        return lambda v: ("dtype", v)     # dtypes compare by what they are (byte order, ml_dtypes kinds included)
    if issubclass(t, np.ndarray):
        return array_key
    if issubclass(t, (TilingData, TilingResult)):
        return _tiling_key
    if getattr(t, "_memo_by_value", False):
        return _itself
    if dataclasses.is_dataclass(t) and t.__dataclass_params__.frozen:
        return _fields_key
    if issubclass(t, tuple) and hasattr(t, "_fields"):               # named tuples
        return lambda v: (t,) + _items(v)
    return _unkeyable


_BY_TYPE = {
    bool: lambda v: ("bool", v),
    np.bool_: lambda v: ("bool", bool(v)),
    float: lambda v: ("float", _DOUBLE.pack(v)),
    tuple: lambda v: ("tuple",) + _items(v),
    list: lambda v: ("list",) + _items(v),
    dict: lambda v: ("dict",) + tuple((key_of(k), key_of(x)) for k, x in v.items()),
    np.ndarray: array_key,
}


def key_of(v):
    """A hashable key equal for two values exactly when the memoised functions cannot tell them apart."""
    t = type(v)
    if t in _PLAIN:
        return v
    conv = _BY_TYPE.get(t)
    if conv is None:
        conv = _BY_TYPE[t] = _converter(t)
    return conv(v)


_MISSING = object()


class _Memo:
    # Each entry is [value, last use]: a hit stamps it, with one lookup (OrderedDict.move_to_end hashed and
    # compared the key a second time: 3 of the 7 us of a hit on a QuantMatmul key); a miss that overfills the
    # table scans for the least recently used entry, next to the build it already paid for.
    def __init__(self, maxsize):
        self.maxsize = maxsize
        self.enabled = True
        self.hits = self.misses = 0
        self._clock = 0
        self._table = {}
        self._lock = threading.Lock()

    def get(self, key, build):
        if not self.enabled:
            return build()
        with self._lock:
            entry = self._table.get(key)
            if entry is not None:
                self._clock += 1
                entry[1] = self._clock
                self.hits += 1
                return entry[0]
        value = build()                           # an exception leaves nothing behind
        with self._lock:
            self.misses += 1
            self._clock += 1
            table = self._table
            table[key] = [value, self._clock]
            while len(table) > self.maxsize:
                del table[min(table, key=lambda k: table[k][1])]
        return value


_MEMO = _Memo(MAX_ENTRIES)


def cached(key, build):
    """``build()``, computed once per ``key`` (any value key_of takes; include a name for the kind of value).
    An unkeyable key runs ``build()`` uncached."""
    try:
        k = key_of(key)
    except Unkeyable:
        return build()
    return _MEMO.get(k, build)


def call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` for a pure function ``fn``, computed once per distinct argument values."""
    try:
        k = (fn.__module__, fn.__qualname__, key_of(args), key_of(kwargs))
    except Unkeyable:
        return fn(*args, **kwargs)
    return _MEMO.get(k, lambda: fn(*args, **kwargs))


@contextlib.contextmanager
def bypass():
    """Within the block every call computes afresh (nothing is read from or stored in the memo)."""
    old, _MEMO.enabled = _MEMO.enabled, False
    try:
        yield
    finally:
        _MEMO.enabled = old


def clear():
    with _MEMO._lock:
        _MEMO._table.clear()
        _MEMO.hits = _MEMO.misses = 0


def stats():
    """(hits, misses, entries) since the last clear()."""
    with _MEMO._lock:
        return _MEMO.hits, _MEMO.misses, len(_MEMO._table)
