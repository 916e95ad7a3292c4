"""Tiling validation: check a kernel's declared GM and UB accesses before it runs (docs/device/launch.md).

An op describes what its device kernel touches, computed from the tiling data alone (not by running the
kernel), as an :class:`AccessPattern`:

* GM buffers in the kernel's argument order, each with its logical size in elements, whether it is an output
  (every element must be written) and how far past its end the *device* is known to reach (``overrun``);
* access records ``(core, tile, buffer, read/write, [start, stop))`` in elements of the buffer, built from numpy
  arrays (one record per tile and buffer: a 125 M-element SignBitsUnpack has 52 800 tiles);
* UB records ``(core, tile, nbytes)``: the UB bytes a tile (or, with ``tile=-1``, a core's Init) needs.

:func:`validate` checks, vectorised over the records (sorting intervals, no per-tile Python loop):
bounds (start < 0 or past end + overrun), writes of the same element by two tiles/cores, output elements no
tile writes, and UB overflow. Device accesses past the logical end within the declared ``overrun`` are not
errors: they are returned as :class:`GmOverrun` records (tensor, "read"/"write", start byte, end byte, core), the
``gm_overrun`` trace field of docs/conventions.md §4.4. The kernel itself never performs them (§3 rule 4).

Example (the big/small core split with a tail tile; see kernels/example/tiling.py for the full op)::

    ap = AccessPattern(block_dim)
    ap.gm("x", n, np.float32)
    ap.gm("y", n, np.float32, output=True)
    core, tile, start, stop = tile_ranges(core_start, tile_num, tile_len, tail_len)
    ap.read("x", core, tile, start, stop)
    ap.write("y", core, tile, start, stop)
    ap.ub(np.arange(block_dim), -1, ub_bytes)          # the core's Init: InitBuffer sizes
    report = validate(ap, ub_size=196352)
    report.raise_if_failed()                           # AclnnError 561002 with every problem in words
"""

from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from npu_emu.errors import ACLNN_ERR_INNER, ACLNN_ERR_INNER_TILING_ERROR, AclnnError

__all__ = ["READ", "WRITE", "ACCESS_DTYPE", "UB_DTYPE", "GmBuffer", "AccessPattern", "GmOverrun",
           "ValidationReport", "validate", "tile_ranges"]

READ, WRITE = 0, 1
_MODE_NAMES = ("read", "write")
_MODE_VERBS = ("reads", "writes")

ACCESS_DTYPE = np.dtype([("core", np.int64), ("tile", np.int64), ("buffer", np.int32), ("mode", np.uint8),
                         ("start", np.int64), ("stop", np.int64)])
UB_DTYPE = np.dtype([("core", np.int64), ("tile", np.int64), ("nbytes", np.int64)])

# The device launches at most 65535 blocks (uint16 blockDim).
MAX_BLOCK_DIM = 65535
# More tiles than this is a corrupt tile count, not a shape: 1e9 floats in 2 KiB tiles is 2e6 tiles.
MAX_TILES = 50_000_000


@dataclass(frozen=True)
class GmBuffer:
    """A GM tensor the kernel receives. ``size`` in elements of ``dtype``; ``overrun`` elements past the end
    are device behaviour to report, not an error; ``output`` requires every element to be written."""

    name: str
    size: int
    dtype: np.dtype
    output: bool = False
    overrun: int = 0

    @property
    def itemsize(self):
        return self.dtype.itemsize


class GmOverrun(NamedTuple):
    """One device GM access past a tensor's logical end: an entry of the trace's ``gm_overrun`` list
    (docs/conventions.md §4.4). The device performs it; the emulated kernel never does (it only reports it)."""

    tensor: str
    kind: str          # "read" | "write"
    start: int         # bytes from the tensor base
    end: int
    core: int


def _int_array(value, name):
    arr = np.asarray(value)
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        # Element indices computed in float would hide rounding bugs in the op's access function.
        raise AclnnError(ACLNN_ERR_INNER, f"access pattern {name} must be integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise AclnnError(ACLNN_ERR_INNER, f"access pattern {name} exceeds int64")
    return arr.astype(np.int64, copy=False)


class AccessPattern:
    """The GM and UB footprint of one kernel launch, as numpy record arrays (see the module docstring)."""

    def __init__(self, block_dim):
        if isinstance(block_dim, bool) or not isinstance(block_dim, (int, np.integer)) or block_dim < 1:
            raise AclnnError(ACLNN_ERR_INNER, f"AccessPattern block_dim={block_dim!r}; use a positive int")
        self.block_dim = int(block_dim)
        self.buffers = ()
        self._index = {}
        self._chunks, self._ub_chunks = [], []
        self._records = self._ub_records = None
        self._written = None

    # ---- building ---------------------------------------------------------------------------------------
    def gm(self, name, size, dtype, *, output=False, overrun=0):
        """Declare the next GM buffer of the kernel's signature. Returns its index."""
        if name in self._index:
            raise AclnnError(ACLNN_ERR_INNER, f"GM buffer {name!r} declared twice")
        for what, v in (("size", size), ("overrun", overrun)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise AclnnError(ACLNN_ERR_INNER, f"GM buffer {name!r}: {what}={v!r}; use an int >= 0")
        buf = GmBuffer(str(name), int(size), np.dtype(dtype), bool(output), int(overrun))
        self._index[buf.name] = len(self.buffers)
        self.buffers = self.buffers + (buf,)
        return self._index[buf.name]

    def read(self, name, core, tile, start, stop):
        self._add(name, READ, core, tile, start, stop)

    def write(self, name, core, tile, start, stop):
        self._add(name, WRITE, core, tile, start, stop)

    def _add(self, name, mode, core, tile, start, stop):
        if name not in self._index:
            raise AclnnError(ACLNN_ERR_INNER, f"access to undeclared GM buffer {name!r}; declare it with "
                                              f"gm() first (declared: {', '.join(self._index) or 'none'})")
        cols = np.broadcast_arrays(_int_array(core, "core"), _int_array(tile, "tile"),
                                   _int_array(start, "start"), _int_array(stop, "stop"))
        rec = np.empty(cols[0].size, ACCESS_DTYPE)
        rec["core"], rec["tile"], rec["start"], rec["stop"] = (c.ravel() for c in cols)
        rec["buffer"] = self._index[name]
        rec["mode"] = mode
        self._chunks.append(rec)
        self._records = self._written = None

    def ub(self, core, tile, nbytes):
        """UB bytes needed by (core, tile); tile -1 = the core's Init (buffers that live for all tiles)."""
        cols = np.broadcast_arrays(_int_array(core, "core"), _int_array(tile, "tile"),
                                   _int_array(nbytes, "nbytes"))
        rec = np.empty(cols[0].size, UB_DTYPE)
        rec["core"], rec["tile"], rec["nbytes"] = (c.ravel() for c in cols)
        self._ub_chunks.append(rec)
        self._ub_records = None

    # ---- the record arrays ------------------------------------------------------------------------------
    @property
    def records(self):
        if self._records is None:
            self._records = np.concatenate(self._chunks) if self._chunks else np.empty(0, ACCESS_DTYPE)
            self._chunks = [self._records]
        return self._records

    @property
    def ub_records(self):
        if self._ub_records is None:
            self._ub_records = (np.concatenate(self._ub_chunks) if self._ub_chunks
                                else np.empty(0, UB_DTYPE))
            self._ub_chunks = [self._ub_records]
        return self._ub_records

    def buffer(self, name):
        return self.buffers[self._index[name]]

    def written_buffers(self):
        """frozenset of the indices of the buffers some record writes."""
        if self._written is None:
            rec = self.records
            self._written = frozenset(np.unique(rec["buffer"][rec["mode"] == WRITE]).tolist())
        return self._written

    def __repr__(self):
        bufs = ", ".join(f"{b.name}[{b.size}]" for b in self.buffers)
        return (f"AccessPattern(block_dim={self.block_dim}, buffers=({bufs}), {len(self.records)} GM records, "
                f"{len(self.ub_records)} UB records)")


def tile_ranges(core_start, tile_num, tile_len, tail_len, *, block_dim=None):
    """The tiles of every core as flat arrays ``(core, tile, start, stop)``.

    Per-core inputs (arrays of length block_dim, or scalars broadcast to it): the core's first element,
    its tile count, the full-tile length and the last tile's length - exactly the numbers a kernel takes from
    its tiling data, so a wrong field shows up as a gap, overlap or bound error rather than being recomputed
    correctly here. Cores with tile_num 0 contribute nothing.
    """
    arrays = [np.atleast_1d(_int_array(a, n)) for a, n in
              ((core_start, "core_start"), (tile_num, "tile_num"), (tile_len, "tile_len"), (tail_len, "tail_len"))]
    n = block_dim if block_dim is not None else max(a.size for a in arrays)
    core_start, tile_num, tile_len, tail_len = (np.broadcast_to(a, (n,)) for a in arrays)
    if np.any(tile_num < 0):
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                         f"negative tile count for core(s) {np.flatnonzero(tile_num < 0)[:10].tolist()}")
    total = int(tile_num.sum())
    if total > MAX_TILES:
        worst = int(np.argmax(tile_num))
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                         f"the tiling gives {total} tiles in all (core {worst}: {int(tile_num[worst])}), more "
                         f"than {MAX_TILES}; check the tile-count fields of the tiling data")
    core = np.repeat(np.arange(n, dtype=np.int64), tile_num)
    first = np.cumsum(tile_num) - tile_num                         # flat index of each core's tile 0
    tile = np.arange(core.size, dtype=np.int64) - first[core]
    start = core_start[core] + tile * tile_len[core]
    last = tile == tile_num[core] - 1
    stop = start + np.where(last, tail_len[core], tile_len[core])
    return core, tile, start, stop


# ---- validation ---------------------------------------------------------------------------------------
@dataclass
class ValidationReport:
    """Outcome of :func:`validate`. ``errors`` are sentences (at most ``max_messages`` per kind, then a count
    line); ``counts`` has the full number per kind; ``overruns`` are the tolerated device over-runs."""

    errors: list = field(default_factory=list)
    overruns: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)

    @property
    def ok(self):
        return not self.errors

    def raise_if_failed(self, what="tiling"):
        if self.errors:
            raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR,
                             f"{what} validation failed ({len(self.errors)} problem line(s)):\n  "
                             + "\n  ".join(self.errors))

    def __str__(self):
        if self.ok:
            return f"ok ({len(self.overruns)} tolerated device over-run(s))"
        return "\n".join(self.errors)


def _where(core, tile):
    return f"core {core} (Init)" if tile < 0 else f"core {core} tile {tile}"


class _Collector:
    def __init__(self, report, max_messages):
        self.report, self.max = report, max_messages

    def add(self, kind, total, messages):
        """messages: the first few sentences (already sorted); total: how many problems of this kind."""
        if not total:
            return
        self.report.counts[kind] = self.report.counts.get(kind, 0) + int(total)
        shown = messages[: self.max]
        self.report.errors.extend(f"{kind}: {m}" for m in shown)
        if total > len(shown):
            self.report.errors.append(f"{kind}: ... and {total - len(shown)} more (first {len(shown)} shown)")


def validate(access, *, ub_size=None, tolerate_overruns=True, max_messages=10):
    """Check an :class:`AccessPattern`; ``ub_size=None`` skips the UB check (e.g. kirin9020, UB unknown).

    ``tolerate_overruns=False`` treats every access past a logical end as an error, ignoring the buffers'
    declared ``overrun`` (to see what the device does beyond the tensor as a list of failures).
    Returns a :class:`ValidationReport`; never raises for a bad tiling (call ``raise_if_failed``).
    """
    report = ValidationReport()
    out = _Collector(report, max_messages)
    rec = access.records
    bufs = access.buffers

    # Structure: core indices and reversed ranges make every later message meaningless, so report them first.
    bad_core = (rec["core"] < 0) | (rec["core"] >= access.block_dim)
    bad_len = rec["stop"] < rec["start"]
    bad = np.flatnonzero(bad_core | bad_len)
    msgs = []
    for i in bad[:max_messages]:
        r = rec[i]
        b = bufs[r["buffer"]]
        if bad_core[i]:
            msgs.append(f"{_where(r['core'], r['tile'])} {_MODE_VERBS[r['mode']]} {b.name}: core index outside "
                        f"[0, block_dim={access.block_dim})")
        else:
            msgs.append(f"{_where(r['core'], r['tile'])} {_MODE_VERBS[r['mode']]} {b.name}[{r['start']}, "
                        f"{r['stop']}): stop < start (a negative length; check the tail length)")
    out.add("bad record", bad.size, msgs)
    rec = rec[~(bad_core | bad_len)]
    rec = rec[rec["stop"] > rec["start"]]                             # empty ranges touch nothing

    for bi, buf in enumerate(bufs):
        mine = rec[rec["buffer"] == bi]
        _check_bounds(buf if tolerate_overruns else replace(buf, overrun=0), mine, out, report)
        writes = mine[mine["mode"] == WRITE]
        if writes.size:
            writes = writes[np.lexsort((writes["stop"], writes["start"]))]
        _check_overlaps(buf, writes, out)
        if buf.output:
            _check_gaps(buf, writes, out)

    if ub_size is not None:
        _check_ub(access, ub_size, out)
    return report


def _check_bounds(buf, rec, out, report):
    limit = buf.size + buf.overrun
    before = rec["start"] < 0
    past = rec["stop"] > limit
    bad = np.flatnonzero(before | past)
    msgs = []
    for i in bad[: out.max]:
        r = rec[i]
        head = (f"{_where(r['core'], r['tile'])} {_MODE_VERBS[r['mode']]} {buf.name}[{r['start']}, {r['stop']}) "
                f"but {buf.name} has {buf.size} elements ({buf.dtype.name})")
        if before[i]:
            msgs.append(f"{head}: starts {-r['start']} element(s) before its base; check the core's start offset")
        else:
            tol = f" + {buf.overrun} tolerated device over-run" if buf.overrun else ""
            msgs.append(f"{head}{tol}: ends {r['stop'] - limit} element(s) too far; check the tile/tail lengths "
                        f"and the big/small core split (tailBlockNum)")
    out.add("out of bounds", bad.size, msgs)

    # Tolerated over-runs: the part of each in-limit record past the logical end, merged per (mode, core).
    over = rec[(rec["stop"] > buf.size) & ~before & ~past]
    if over.size:
        lo = np.maximum(over["start"], buf.size)
        order = np.lexsort((lo, over["core"], over["mode"]))
        merged = []
        for i in order:
            r, s = over[i], int(lo[i])
            mode, core, e = _MODE_NAMES[r["mode"]], int(r["core"]), int(r["stop"])
            if merged and merged[-1][0] == mode and merged[-1][3] == core and s <= merged[-1][2]:
                merged[-1][2] = max(merged[-1][2], e)
            else:
                merged.append([mode, s, e, core])
        size = buf.itemsize
        report.overruns.extend(GmOverrun(buf.name, m, s * size, e * size, c) for m, s, e, c in merged)


def _running_owner(writes):
    """For sorted intervals: the running max of stop before each one and the index of the record reaching it."""
    stop = writes["stop"]
    runmax = np.maximum.accumulate(stop)
    idx = np.arange(stop.size)
    # The record holding the running max is the last one that raised it: runmax is non-decreasing and only
    # changes where stop == runmax.
    owner = np.maximum.accumulate(np.where(stop == runmax, idx, 0))
    prev_max = np.concatenate(([np.iinfo(np.int64).min], runmax[:-1]))
    prev_owner = np.concatenate(([-1], owner[:-1]))
    return prev_max, prev_owner


def _check_overlaps(buf, writes, out):
    if writes.size < 2:
        return
    prev_max, prev_owner = _running_owner(writes)
    hit = np.flatnonzero(writes["start"] < prev_max)
    msgs = []
    for i in hit[: out.max]:
        a, b = writes[prev_owner[i]], writes[i]
        lo, hi = int(b["start"]), int(min(b["stop"], prev_max[i]))
        same_core = a["core"] == b["core"]
        hint = ("two tiles of one core overlap: check tileDataNum against the tile count and tail" if same_core
                else "two cores overlap: check the per-core start offsets (big/small core data counts)")
        msgs.append(f"{buf.name}[{lo}, {hi}) is written twice: by {_where(a['core'], a['tile'])} "
                    f"({buf.name}[{a['start']}, {a['stop']})) and by {_where(b['core'], b['tile'])} "
                    f"({buf.name}[{b['start']}, {b['stop']})); {hint}")
    out.add("overlapping writes", hit.size, msgs)


def _check_gaps(buf, writes, out):
    if buf.size == 0:
        return
    if writes.size == 0:
        out.add("unwritten output", 1, [f"{buf.name} ({buf.size} elements) is never written by any core"])
        return
    prev_max, prev_owner = _running_owner(writes)
    gaps, msgs = 0, []
    first = writes[0]
    if first["start"] > 0:
        gaps += 1
        msgs.append(f"{buf.name}[0, {min(first['start'], buf.size)}) is written by no core: the first write "
                    f"starts at {first['start']} ({_where(first['core'], first['tile'])}); check core 0's start")
    inner = np.flatnonzero((writes["start"] > prev_max) & (prev_max < buf.size))
    inner = inner[inner > 0]
    gaps += inner.size
    for i in inner[: out.max]:
        a, b = writes[prev_owner[i]], writes[i]
        lo, hi = int(prev_max[i]), int(min(b["start"], buf.size))
        msgs.append(f"{buf.name}[{lo}, {hi}) is written by no core: it lies between {_where(a['core'], a['tile'])} "
                    f"(ends at {a['stop']}) and {_where(b['core'], b['tile'])} (starts at {b['start']}); check "
                    f"the tile count, tileDataNum and the tail length")
    end = int(np.max(writes["stop"]))
    if end < buf.size:
        gaps += 1
        last = writes[int(np.argmax(writes["stop"]))]
        msgs.append(f"{buf.name}[{end}, {buf.size}) is written by no core: the last write ends at {end} "
                    f"({_where(last['core'], last['tile'])}); check block_dim, the tile counts and the tail "
                    f"length")
    out.add("unwritten output", gaps, msgs)


def _check_ub(access, ub_size, out):
    ub = access.ub_records
    bad = np.flatnonzero((ub["nbytes"] > ub_size) | (ub["nbytes"] < 0))
    msgs = []
    for i in bad[: out.max]:
        r = ub[i]
        if r["nbytes"] < 0:
            msgs.append(f"{_where(r['core'], r['tile'])} declares a negative UB size {r['nbytes']}")
        else:
            msgs.append(f"{_where(r['core'], r['tile'])} needs {r['nbytes']} bytes of UB but {ub_size} are "
                        f"available ({r['nbytes'] - ub_size} too many); reduce tileDataNum/buffer count or pass "
                        f"a larger ub_size=")
    out.add("UB overflow", bad.size, msgs)
    bad_core = np.flatnonzero((ub["core"] < 0) | (ub["core"] >= access.block_dim))
    out.add("bad record", bad_core.size,
            [f"UB record for core {ub[i]['core']} outside [0, block_dim={access.block_dim})"
             for i in bad_core[: out.max]])
