"""``npu-emu quantize-checkpoint``: every selected 2-D weight of a safetensors checkpoint through
``npu_dynamic_mx_quant`` on Dask (a LocalCluster or a running scheduler), the other tensors copied through.

How it scales: the client reads only the shards' headers. Each tensor is a dask array of row blocks (whole
64-row pairs of MX blocks: :func:`npu_emu.dask.dynamic_mx_quant`'s rule) and each block is one task carrying a
file path, a byte offset and a row range: the worker reads those rows from the memory-mapped input shard,
quantizes them with ``npu_emu.ops.npu_dynamic_mx_quant`` (an error names the shard, tensor and chunk) and writes
codes and scales at their byte offsets into the output shard, returning nothing but completion. No tensor data passes
through the client or the scheduler, so memory is bounded by workers x chunk size, not by the model; on a cluster
the input and output folders must be on a file system every worker sees under the same path.

Output: one safetensors shard per input shard (same file name), written under a temporary name and renamed when
complete; a quantized tensor NAME becomes NAME (codes: F8_E4M3 / F8_E5M2, or U8 holding two FP4 codes per byte, low
nibble first) and NAME_scale (F8_E8M0, npu_dynamic_mx_quant's mxscale layout); the metadata header records the
format, axis, block size, npu-emu version, CANN-version switch and the source shard's size and mtime. An index
``model.safetensors.index.json`` (Hugging Face's sharded layout) lists every tensor's shard. A re-run skips every
output shard whose header matches what this run would write (same job, same source) and whose size is complete.
docs/integrations/dask.md describes the format and the commands.
"""

import json
import os
import re
import struct
import time

import numpy as np

from npu_emu.errors import AclnnError

INDEX_NAME = "model.safetensors.index.json"
FORMATS = {"mxfp8": ("float8_e4m3fn", 24, "F8_E4M3"), "mxfp8_e5m2": ("float8_e5m2", 23, "F8_E5M2"),
           "mxfp4": ("float4_e2m1", 296, "U8")}
# the dtypes npu_dynamic_mx_quant takes
QUANT_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}
# bytes per element of the safetensors dtypes (sub-byte ones as fractions: only copied through, by bytes)
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8,
               "F4": 0.5, "F6_E2M3": 0.75, "F6_E3M2": 0.75}
DEFAULT_INCLUDE = r"weight$"
TMP_SUFFIX = ".npu-emu-tmp"


class CheckpointError(ValueError):
    """A checkpoint the job cannot convert, with what to change."""


# ---------------------------------------------------------------------------------------------------------------
# safetensors headers
# ---------------------------------------------------------------------------------------------------------------

def read_header(path):
    """(tensors {name: {dtype, shape, data_offsets}}, metadata, data start) of a safetensors file, checked:
    the header parses, every tensor's bytes lie inside the file and match its dtype and shape. The safetensors
    package opens the file too (its own validation)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) < 8:
                raise ValueError("shorter than the 8-byte header length")
            (hlen,) = struct.unpack("<Q", raw)
            if hlen > min(size - 8, 100 << 20):
                raise ValueError(f"header length {hlen} exceeds the file ({size} bytes)")
            header = json.loads(f.read(hlen))
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as f:
            f.keys()
    except Exception as e:           # OSError, JSON, struct, the safetensors package's own errors
        raise CheckpointError(f"{path}: not a readable safetensors file ({type(e).__name__}: {e}); re-download or "
                              f"re-export this shard") from None
    meta = header.pop("__metadata__", None) or {}
    start = 8 + hlen
    for name, t in header.items():
        b0, b1 = t["data_offsets"]
        nbytes = DTYPE_BYTES.get(t["dtype"])
        if nbytes is None or int(np.prod(t["shape"], dtype=np.int64)) * nbytes != b1 - b0 or start + b1 > size:
            raise CheckpointError(f"{path}: tensor {name!r} ({t['dtype']} {t['shape']}, bytes {b0}:{b1}) does not "
                                  f"fit the file ({size} bytes) or its dtype; the shard is corrupt")
    return header, meta, start


def _header_bytes(tensors, metadata):
    """Serialised header (tensors in the given order, data offsets assigned) and the data size."""
    out, pos = {"__metadata__": metadata}, 0
    for name, dtype, shape, nbytes in tensors:
        out[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [pos, pos + nbytes]}
        pos += nbytes
    h = json.dumps(out, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)          # the format allows trailing spaces; 8-byte aligned data
    return struct.pack("<Q", len(h)) + h, pos


# ---------------------------------------------------------------------------------------------------------------
# what the workers run: lazy reads and positioned writes (small, picklable objects)
# ---------------------------------------------------------------------------------------------------------------

def _uint(itemsize):
    return np.dtype(f"u{itemsize}")


class ShardReader:
    """A tensor of a safetensors file as an array-like for ``dask.array.from_array``: a slice maps the file
    read-only and copies out only the rows asked for."""

    def __init__(self, path, offset, shape, dtype):
        self.path, self.offset, self.shape, self.dtype = str(path), int(offset), tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        n = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        mm = np.memmap(self.path, np.uint8, mode="r", offset=self.offset, shape=(n,))
        try:
            return np.array(mm.view(_uint(self.dtype.itemsize)).reshape(self.shape)[key]).view(self.dtype)
        finally:
            del mm


class ShardRegion:
    """A tensor's place in the output file, as a ``dask.array.store`` target: a block of whole rows is one
    positioned write; anything else goes through a writable memory map."""

    def __init__(self, path, offset, shape, dtype):
        self.path, self.offset, self.shape, self.dtype = str(path), int(offset), tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)

    def __setitem__(self, key, value):
        value = np.ascontiguousarray(value).view(_uint(self.dtype.itemsize))
        key = key if isinstance(key, tuple) else (key,)
        row = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        whole = all(k.start in (0, None) and k.stop in (d, None) for k, d in zip(key[1:], self.shape[1:]))
        fd = os.open(self.path, os.O_RDWR)
        try:
            if whole and value.size:
                buf, pos = memoryview(value.reshape(-1)).cast("B"), self.offset + (key[0].start or 0) * row
                while buf:                      # pwrite may write less than asked (2 GiB per call on Linux)
                    done = os.pwrite(fd, buf, pos)
                    buf, pos = buf[done:], pos + done
            elif value.size:
                n = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
                mm = np.memmap(self.path, np.uint8, mode="r+", offset=self.offset, shape=(n,))
                mm.view(_uint(self.dtype.itemsize)).reshape(self.shape)[key] = value
                mm.flush()
                del mm
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------------------------------

def _shards(src):
    src = os.path.abspath(src)
    if os.path.isfile(src):
        return os.path.dirname(src), [os.path.basename(src)]
    if not os.path.isdir(src):
        raise CheckpointError(f"{src}: no such file or folder; pass a .safetensors file or a checkpoint folder")
    index = os.path.join(src, INDEX_NAME)
    if os.path.isfile(index):
        try:
            with open(index) as f:
                names = sorted(set(json.load(f)["weight_map"].values()))
        except (OSError, ValueError, KeyError, AttributeError) as e:
            raise CheckpointError(f"{index}: not a safetensors index ({type(e).__name__}: {e})") from None
    else:
        names = sorted(n for n in os.listdir(src) if n.endswith(".safetensors"))
    if not names:
        raise CheckpointError(f"{src}: no .safetensors shards (and no {INDEX_NAME}) in this folder")
    for n in names:
        if not os.path.isfile(os.path.join(src, n)):
            raise CheckpointError(f"{os.path.join(src, n)}: shard listed in {INDEX_NAME} is missing")
    return src, names


def _scale_shape(shape, axis, block_size):
    s = list(shape)
    s[axis] = -(-(-(-shape[axis] // block_size)) // 2)
    return tuple(s) + (2,)


def plan(src, out, *, format="mxfp8", axis=-1, include=None, exclude=None, block_size=32, cann_version="master",
         soc="ascend950pr", chunk_mb=64):
    """Check the whole checkpoint and return the job: a list of shard plans. Raises CheckpointError (bad input)
    before anything is written."""
    if format not in FORMATS:
        raise CheckpointError(f"--format {format!r}: choose one of {', '.join(FORMATS)}")
    if axis not in (-1, 0, 1):
        raise CheckpointError(f"--axis {axis}: a 2-D weight is quantized along axis -1 (= 1, its rows) or 0")
    try:
        inc = re.compile(include if include is not None else DEFAULT_INCLUDE)
        exc = re.compile(exclude) if exclude else None
    except re.error as e:
        raise CheckpointError(f"--include/--exclude: bad regular expression ({e})") from None
    dst, dst_code, y_st = FORMATS[format]
    from npu_emu import __version__

    src_dir, names = _shards(src)
    out = os.path.abspath(out)
    if os.path.abspath(src_dir) == out:
        raise CheckpointError(f"--out {out} is the input folder; choose another folder")
    job, seen = [], {}
    unit = 2 * block_size
    chunk = max(1, int(float(chunk_mb) * (1 << 20)))
    for shard in names:
        path = os.path.join(src_dir, shard)
        header, _, start = read_header(path)
        st = os.stat(path)
        tensors, work = [], []
        for name in sorted(header):
            t = header[name]
            selected = inc.search(name) is not None and not (exc and exc.search(name))
            if include is None and selected and (len(t["shape"]) != 2 or t["dtype"] not in QUANT_DTYPES):
                selected = False       # the default selection: 2-D floating weights only
            nbytes = t["data_offsets"][1] - t["data_offsets"][0]
            src_off = start + t["data_offsets"][0]
            if selected:
                if len(t["shape"]) != 2:
                    raise CheckpointError(f"{shard}: tensor {name!r} has shape {t['shape']}; only 2-D weights are "
                                          f"quantized - narrow --include or add it to --exclude")
                if t["dtype"] not in QUANT_DTYPES:
                    raise CheckpointError(f"{shard}: tensor {name!r} is {t['dtype']}; npu_dynamic_mx_quant takes "
                                          f"{', '.join(QUANT_DTYPES)} only - exclude it or convert the checkpoint")
                m, n = t["shape"]
                if format == "mxfp4" and n % 2:
                    raise CheckpointError(f"{shard}: tensor {name!r} has {n} columns; FP4 codes pack in pairs "
                                          f"along the last axis, so mxfp4 needs an even column count")
                x_dtype = QUANT_DTYPES[t["dtype"]]
                y_shape = (m, n // 2) if format == "mxfp4" else (m, n)
                s_shape = _scale_shape((m, n), axis % 2, block_size)
                for nm in (name, name + "_scale"):
                    if nm in seen:
                        raise CheckpointError(f"output tensor {nm!r} of {shard} collides with one from {seen[nm]}; "
                                              f"rename or exclude one of them")
                    seen[nm] = shard
                y_bytes, s_bytes = int(np.prod(y_shape)), int(np.prod(s_shape))
                tensors += [(name, y_st, (m, n) if format != "mxfp4" else y_shape, y_bytes),
                            (name + "_scale", "F8_E8M0", s_shape, s_bytes)]
                # --chunk-mb of input rows per task, in whole pairs of 32-row MX blocks (axis 0 needs them; along
                # the rows any count would do, and the same rule keeps one code path)
                rows = max(unit, chunk // max(1, n * (4 if x_dtype == "float32" else 2)) // unit * unit)
                work.append(("quant", name, src_off, (m, n), x_dtype, rows, nbytes))
            else:
                if name in seen:
                    raise CheckpointError(f"output tensor {name!r} of {shard} collides with one from {seen[name]}; "
                                          f"rename or exclude one of them")
                seen[name] = shard
                tensors.append((name, t["dtype"], tuple(t["shape"]), nbytes))
                work.append(("copy", name, src_off, nbytes, None, chunk, nbytes))
        metadata = {"format": "pt", "npu_emu.format": format, "npu_emu.dst_type": dst,
                    "npu_emu.axis": str(axis), "npu_emu.block_size": str(block_size),
                    "npu_emu.version": __version__, "npu_emu.cann_version": cann_version, "npu_emu.soc": soc,
                    "npu_emu.op": "npu_dynamic_mx_quant", "npu_emu.source": shard,
                    "npu_emu.source_size": str(st.st_size), "npu_emu.source_mtime_ns": str(st.st_mtime_ns),
                    "npu_emu.quantized": json.dumps([w[1] for w in work if w[0] == "quant"]),
                    "npu_emu.fp4_packing": "two codes per byte, element 2i in the low nibble" if format == "mxfp4"
                    else "none"}
        header_bytes, data_size = _header_bytes(tensors, metadata)
        offsets, pos = {}, len(header_bytes)
        for name, _, _, nb in tensors:
            offsets[name] = pos
            pos += nb
        job.append({"shard": shard, "src": path, "out": os.path.join(out, shard), "header": header_bytes,
                    "size": pos, "tensors": tensors, "offsets": offsets, "work": work, "dst_code": dst_code,
                    "axis": axis, "block_size": block_size, "cann_version": cann_version, "soc": soc,
                    "in_bytes": sum(w[6] for w in work)})
    return job


def verified(shard_plan):
    """True when the output shard exists under its final name with exactly the header this job writes (same job
    options, same source size and mtime) and its full size: a shard is renamed there only once complete."""
    path = shard_plan["out"]
    try:
        if os.path.getsize(path) != shard_plan["size"]:
            return False
        with open(path, "rb") as f:
            return f.read(len(shard_plan["header"])) == shard_plan["header"]
    except OSError:
        return False


# ---------------------------------------------------------------------------------------------------------------
# running it
# ---------------------------------------------------------------------------------------------------------------

def _quant_block(block, *, src, shard, tensor, out, y_off, s_off, y_shape, s_shape, axis, kwargs, block_info=None):
    """One task: a row block read from the input (dask fuses the read into this task), quantized by
    npu_emu.ops.npu_dynamic_mx_quant, codes and scales written at their offsets in the output."""
    from npu_emu.dask import chunking as nd

    loc = block_info[0]["array-location"]
    r0, r1 = loc[0]
    where = nd._where("dynamic_mx_quant", block_info[0]["chunk-location"], [a for a, _ in loc],
                      [b - a for a, b in loc]) + f" of {shard} tensor {tensor!r}"
    y, s = nd._call("dynamic_mx_quant", "npu_dynamic_mx_quant", where, block, axis=axis, **kwargs)
    full = tuple(slice(0, d) for d in y_shape[1:])
    ShardRegion(out, y_off, y_shape, np.uint8)[(slice(r0, r1),) + full] = np.asarray(y)
    # a block of rows r0:r1 owns scale rows r0:r1 (axis -1) or, r0 being a multiple of a block pair, the pair rows
    # r0 / pair : ceil(r1 / pair) (axis 0)
    pair = 2 * kwargs["block_size"]
    s0, s1 = (r0, r1) if axis == 1 else (r0 // pair, -(-r1 // pair))
    ShardRegion(out, s_off, s_shape, np.uint8)[(slice(s0, s1),) + tuple(slice(0, d) for d in s_shape[1:])] = \
        np.asarray(s)
    return np.ones((1, 1), np.int64)


def _copy_block(block, *, out, off, total, block_info=None):
    r0, r1 = block_info[0]["array-location"][0]
    ShardRegion(out, off, (total,), np.uint8)[(slice(r0, r1),)] = block
    return np.ones((1,), np.int64)


def _tensor_graphs(sp, tmp):
    """One dask array per tensor whose blocks each read, quantize (or copy) and write one row block of it into
    ``tmp`` (a single task per block: the rows never leave the worker that read them)."""
    import dask.array as da
    import ml_dtypes

    graphs = []
    kwargs = {"dst_type": sp["dst_code"], "block_size": sp["block_size"], "cann_version": sp["cann_version"],
              "soc": sp["soc"]}
    y_shapes = {n: shape for n, _, shape, _ in sp["tensors"]}
    for kind, name, src_off, shape, x_dtype, rows, nbytes in sp["work"]:
        token = f"{sp['shard']}-{name}-{src_off}-{sp['out']}"
        if kind == "quant":
            dt = np.dtype(ml_dtypes.bfloat16) if x_dtype == "bfloat16" else np.dtype(x_dtype)
            x = da.from_array(ShardReader(sp["src"], src_off, shape, dt), chunks=(rows, shape[1]),
                              meta=np.empty((0, 0), dt), asarray=False, name=f"read-{token}")
            done = da.map_blocks(_quant_block, x, src=sp["src"], shard=sp["shard"], tensor=name, out=tmp,
                                 y_off=sp["offsets"][name], s_off=sp["offsets"][name + "_scale"],
                                 y_shape=tuple(y_shapes[name]),
                                 s_shape=y_shapes[name + "_scale"], axis=sp["axis"] % 2, kwargs=kwargs,
                                 chunks=((1,) * x.numblocks[0], (1,)), dtype=np.int64,
                                 meta=np.empty((0, 0), np.int64), name=f"quantize-{token}")
        else:
            x = da.from_array(ShardReader(sp["src"], src_off, (shape,), np.uint8), chunks=(rows,),
                              meta=np.empty((0,), np.uint8), asarray=False, name=f"read-{token}")
            done = da.map_blocks(_copy_block, x, out=tmp, off=sp["offsets"][name], total=shape,
                                 chunks=((1,) * x.numblocks[0],), dtype=np.int64, meta=np.empty((0,), np.int64),
                                 name=f"copy-{token}")
        graphs.append((name, nbytes, done))
    return graphs


def _write_index(out, job):
    weight_map, total = {}, 0
    for sp in job:
        for name, _, _, nb in sp["tensors"]:
            weight_map[name] = sp["shard"]
            total += nb
    meta = dict(json.loads(json.dumps({k: v for k, v in _first_meta(job).items()
                                       if not k.startswith("npu_emu.source") and k != "npu_emu.quantized"})))
    meta["total_size"] = total
    path = os.path.join(out, INDEX_NAME)
    tmp = path + TMP_SUFFIX
    with open(tmp, "w") as f:
        json.dump({"metadata": meta, "weight_map": dict(sorted(weight_map.items()))}, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    return path


def _first_meta(job):
    raw = job[0]["header"]
    (hlen,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + hlen])["__metadata__"]


def quantize_checkpoint(src, out, *, format="mxfp8", axis=-1, include=None, exclude=None, block_size=32,
                        cann_version="master", soc="ascend950pr", chunk_mb=64, client=None, scheduler=None,
                        n_workers=None, threads_per_worker=1, numba_threads=None, progress=True, log=None):
    """Convert the checkpoint ``src`` (a .safetensors file or a folder of shards) into ``out``. Returns a summary
    dict (shards written / skipped, bytes in, seconds). ``client``: a dask.distributed Client to use; else
    ``scheduler`` (an address, or "synchronous": in this process, no cluster) or a new LocalCluster (n_workers
    processes, default one per core)."""
    job = plan(src, out, format=format, axis=axis, include=include, exclude=exclude, block_size=block_size,
               cann_version=cann_version, soc=soc, chunk_mb=chunk_mb)
    os.makedirs(out, exist_ok=True)
    say = log or (lambda msg: None)
    todo = [sp for sp in job if not verified(sp)]
    skipped = [sp["shard"] for sp in job if sp not in todo]
    for s in skipped:
        say(f"{s}: already written and verified, skipped")
    own = None
    if todo and client is None and scheduler == "synchronous":
        client = "synchronous"
    if todo and client is None:
        from distributed import Client

        if scheduler:
            try:
                client = own = Client(scheduler)
            except (OSError, TimeoutError) as e:
                raise CheckpointError(f"--scheduler {scheduler}: no dask scheduler answered ({type(e).__name__}: "
                                      f"{e}); start one (`dask scheduler`) or check the address") from None
        else:
            from npu_emu import dask as nd

            cluster = nd.local_cluster(n_workers, threads_per_worker, numba_threads, dashboard_address=None)
            client = own = Client(cluster)
    t0 = time.perf_counter()          # the job, not the cluster's start-up
    try:
        written = []
        if todo:
            from tqdm import tqdm

            total = sum(sp["in_bytes"] for sp in todo)
            ntensors = sum(len(sp["work"]) for sp in todo)
            bar = tqdm(total=total, unit="B", unit_scale=True, desc="overall", disable=not progress, position=0)
            tbar = tqdm(total=ntensors, unit="tensor", desc="tensors", disable=not progress, position=1)
            try:
                runner = _run_here if client == "synchronous" else _run_distributed
                for shard in runner(todo, client, bar, tbar):
                    written.append(shard)
                    say(f"{shard}: written")
            finally:
                tbar.close()
                bar.close()
        index = _write_index(out, job)
    finally:
        if own is not None:
            cluster = getattr(own, "cluster", None)
            own.close()
            if cluster is not None and not scheduler:
                cluster.close()
    secs = time.perf_counter() - t0
    written = [sp["shard"] for sp in job if sp["shard"] in written]       # in shard order
    nbytes = sum(sp["in_bytes"] for sp in job if sp["shard"] in written)
    return {"written": written, "skipped": skipped, "index": index, "bytes_in": nbytes, "seconds": secs}


def _start(sp):
    """The shard's temporary file: its header, then zeros to its full size (the tasks fill the rest)."""
    tmp = sp["out"] + TMP_SUFFIX
    with open(tmp, "wb") as f:
        f.write(sp["header"])
        f.truncate(sp["size"])
    return tmp


def _finish(sp, tmp):
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())        # the data is on disk before the final name appears
    os.replace(tmp, sp["out"])


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


def _tick(bar, tbar, name, nb):
    bar.update(nb)
    tbar.set_postfix_str(name[-40:], refresh=False)
    tbar.update(1)


def _run_here(todo, client, bar, tbar):
    """In this process, one task at a time (dask's synchronous scheduler): no cluster, same files. Yields each
    shard once it is renamed to its final name."""
    import dask

    for sp in todo:
        tmp = _start(sp)
        try:
            for name, nb, g in _tensor_graphs(sp, tmp):
                try:
                    dask.compute(g, scheduler="synchronous")
                except AclnnError as e:
                    raise CheckpointError(str(e)) from e     # it names the shard, tensor and chunk
                _tick(bar, tbar, name, nb)
        except BaseException:
            _remove(tmp)
            raise
        _finish(sp, tmp)
        yield sp["shard"]


def _run_distributed(todo, client, bar, tbar):
    """Every shard's tasks submitted at once (they carry no data), so that the workers never wait for a shard to
    be renamed; a shard is fsynced and renamed as soon as its last block is in. The overall bar moves per block,
    the tensor bar per finished tensor. Yields the renamed shards."""
    from distributed import as_completed, futures_of

    tmps, futures, info, left, tensor_left, held = {}, [], {}, {}, {}, []
    try:
        for i, sp in enumerate(todo):
            tmps[i] = _start(sp)
            graphs = _tensor_graphs(sp, tmps[i])
            left[i] = 0
            for (name, nb, _), arr in zip(graphs, client.persist([g for _, _, g in graphs])):
                held.append(arr)                        # the persisted arrays own their blocks' futures
                futs = futures_of(arr)
                for f in futs:
                    info[f.key] = (i, name, nb / max(1, len(futs)))
                tensor_left[(i, name)] = len(futs)
                left[i] += len(futs)
                futures += futs
            if not left[i]:                              # a shard without tensors
                _finish(sp, tmps.pop(i))
                yield sp["shard"]
        for fut in as_completed(futures):
            i, name, nb = info[fut.key]
            try:
                fut.result()
            except AclnnError as e:
                raise CheckpointError(str(e)) from e         # it names the shard, tensor and chunk
            bar.update(nb)
            tensor_left[(i, name)] -= 1
            if tensor_left[(i, name)] == 0:
                tbar.set_postfix_str(name[-40:], refresh=False)
                tbar.update(1)
            left[i] -= 1
            if left[i] == 0:
                _finish(todo[i], tmps.pop(i))
                yield todo[i]["shard"]
    except BaseException:
        client.cancel(futures)
        for tmp in tmps.values():
            _remove(tmp)
        raise


# ---------------------------------------------------------------------------------------------------------------
# command line (npu-emu quantize-checkpoint)
# ---------------------------------------------------------------------------------------------------------------

def cli_main(a):
    import sys

    if a.workers is not None and a.workers < 1:
        raise SystemExit(f"npu-emu quantize-checkpoint: --workers {a.workers}: use 1 or more")
    if not a.chunk_mb > 0:
        raise SystemExit(f"npu-emu quantize-checkpoint: --chunk-mb {a.chunk_mb}: use a positive size")
    try:
        res = quantize_checkpoint(a.input, a.out, format=a.format, axis=a.axis, include=a.include,
                                  exclude=a.exclude, cann_version=a.cann_version, chunk_mb=a.chunk_mb,
                                  scheduler=a.scheduler, n_workers=a.workers, threads_per_worker=a.threads_per_worker,
                                  numba_threads=a.numba_threads, progress=not a.no_progress,
                                  log=lambda m: print(m, file=sys.stderr))
    except CheckpointError as e:
        raise SystemExit(f"npu-emu quantize-checkpoint: {e}") from None
    except ImportError as e:
        if (e.name or "").split(".")[0] not in ("dask", "distributed", "safetensors"):
            raise
        raise SystemExit(f"npu-emu quantize-checkpoint: needs the {e.name.split('.')[0]} package; "
                         f"pip install 'npu-emu[dask]'") from None
    gb = res["bytes_in"] / 1e9
    rate = f", {gb / res['seconds']:.3f} GB/s" if res["written"] and res["seconds"] > 0 else ""
    print(f"{len(res['written'])} shard(s) written, {len(res['skipped'])} skipped; {gb:.3f} GB in "
          f"{res['seconds']:.1f} s{rate}; index {res['index']}")
    return 0
