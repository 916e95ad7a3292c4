"""npu-emu quantize-checkpoint on Dask (issue 27): a synthetic bf16 checkpoint of 4 shards x 2 weights
[2048, 4096] (128 MiB of bf16) to MXFP8.

- ``CheckpointThroughput``: the job on a LocalCluster of 1 and of 2 worker processes (one thread each; numba threads
  = cores / workers) against the single-process loop this replaces: read each tensor, one
  ``npu_emu.ops.npu_dynamic_mx_quant`` call on all cores, write codes and scales. ``track_gbps``: GB/s of bf16
  input (higher is better, the one exception to common.py's rule); ``track_over_ops_loop``: job seconds over the
  loop's seconds (lower is better; < 1: the job is faster).
- ``ChunkMemory``: peak memory against the chunk size (``--chunk-mb``): ``peakmem_synchronous`` runs the job in the
  benchmark process (dask's synchronous scheduler, the same tasks); ``track_worker_peak_rss_mb`` is the largest peak
  RSS of the worker processes of a 2-worker LocalCluster. Both are a fixed floor (the interpreter with numpy,
  numba's compiled kernels and dask loaded) plus a part that grows with the chunk, not with the model: a task holds
  its input rows, their float32 copy and the codes.

Worker processes load the kernels from numba's cache: run `npu-emu compile --ops dynamic_mx_quant` first with the
same NUMBA_CACHE_DIR (setup also warms each worker once, outside the timing).
"""

import os
import shutil
import tempfile
import time

import ml_dtypes
import numpy as np

SHARDS, PER_SHARD, SHAPE = 4, 2, (2048, 4096)


def _write(path, tensors):
    """A bf16 safetensors shard, its header made by the job's own writer (the tests' writer is the independent one)."""
    from npu_emu.dask.checkpoint import _header_bytes

    head, _ = _header_bytes([(n, "BF16", a.shape, a.nbytes) for n, a in tensors.items()], {"format": "pt"})
    with open(path, "wb") as f:
        f.write(head)
        for a in tensors.values():
            f.write(a.tobytes())


def make_checkpoint(folder):
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    for s in range(SHARDS):
        tensors = {}
        for t in range(PER_SHARD):
            x = rng.standard_normal(SHAPE, dtype=np.float32)
            x *= np.exp2(rng.integers(-6, 7, (SHAPE[0], 1))).astype(np.float32)
            tensors[f"layers.{s}.w{t}.weight"] = x.astype(ml_dtypes.bfloat16)
        _write(os.path.join(folder, f"model-{s + 1:05d}-of-{SHARDS:05d}.safetensors"), tensors)
    return folder


def input_bytes():
    return SHARDS * PER_SHARD * SHAPE[0] * SHAPE[1] * 2


def ops_loop(src, out):
    """The single-process baseline: whole tensors through npu_emu.ops, outputs written as raw bytes."""
    from npu_emu.dask import checkpoint as ck
    from npu_emu.ops import npu_dynamic_mx_quant

    os.makedirs(out, exist_ok=True)
    for shard in sorted(os.listdir(src)):
        header, _, start = ck.read_header(os.path.join(src, shard))
        with open(os.path.join(src, shard), "rb") as f, open(os.path.join(out, shard), "wb") as g:
            for name in sorted(header):
                t = header[name]
                f.seek(start + t["data_offsets"][0])
                x = np.frombuffer(f.read(t["data_offsets"][1] - t["data_offsets"][0]),
                                  ml_dtypes.bfloat16).reshape(t["shape"])
                y, s = npu_dynamic_mx_quant(x, axis=-1, dst_type=24)
                g.write(np.asarray(y).tobytes())
                g.write(np.asarray(s).tobytes())


class _Job:
    timeout = 600

    def setup_cache(self):
        folder = tempfile.mkdtemp(prefix="npu-emu-bench-dask-")
        return make_checkpoint(os.path.join(folder, "in"))

    def _out(self):
        out = tempfile.mkdtemp(prefix="npu-emu-bench-dask-out-")
        self._outs.append(out)
        return out

    def teardown(self, *args):
        for out in getattr(self, "_outs", []):
            shutil.rmtree(out, ignore_errors=True)


class CheckpointThroughput(_Job):
    params = [1, 2]
    param_names = ["workers"]
    unit = "GB/s"

    def setup(self, src, workers):
        from distributed import Client

        from npu_emu.dask import checkpoint as ck
        from npu_emu import dask as nd

        self._outs = []
        self.cluster = nd.local_cluster(n_workers=workers, dashboard_address=None)
        self.client = Client(self.cluster)
        # warm every worker (kernels loaded from the cache) and this process's ops loop
        ck.quantize_checkpoint(src, self._out(), format="mxfp8", client=self.client, progress=False)
        ops_loop(src, self._out())
        # best of 3, interleaved, so that a load change on the box hits both sides alike
        loop, job = [], []
        for _ in range(3):
            t = time.perf_counter()
            ops_loop(src, self._out())
            loop.append(time.perf_counter() - t)
            t = time.perf_counter()
            ck.quantize_checkpoint(src, self._out(), format="mxfp8", client=self.client, progress=False)
            job.append(time.perf_counter() - t)
        self.loop_seconds, self.job_seconds = min(loop), min(job)

    def teardown(self, *args):
        self.client.close()
        self.cluster.close()
        super().teardown()

    def track_gbps(self, src, workers):
        return input_bytes() / self.job_seconds / 1e9

    track_gbps.unit = "GB/s"

    def track_ops_loop_gbps(self, src, workers):
        return input_bytes() / self.loop_seconds / 1e9

    track_ops_loop_gbps.unit = "GB/s"

    def track_over_ops_loop(self, src, workers):
        return self.job_seconds / self.loop_seconds

    track_over_ops_loop.unit = "ratio"


class ChunkMemory(_Job):
    params = [1, 4, 16]
    param_names = ["chunk_mb"]

    def setup(self, src, chunk_mb):
        self._outs = []

    def peakmem_synchronous(self, src, chunk_mb):
        from npu_emu.dask import checkpoint as ck

        ck.quantize_checkpoint(src, self._out(), format="mxfp8", scheduler="synchronous", chunk_mb=chunk_mb,
                               progress=False)

    def track_worker_peak_rss_mb(self, src, chunk_mb):
        import resource

        from distributed import Client

        from npu_emu.dask import checkpoint as ck
        from npu_emu import dask as nd

        cluster = nd.local_cluster(n_workers=2, dashboard_address=None)
        try:
            with Client(cluster) as client:
                ck.quantize_checkpoint(src, self._out(), format="mxfp8", client=client, chunk_mb=chunk_mb,
                                       progress=False)
                peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        finally:
            cluster.close()
        return max(peaks.values()) / 1024          # ru_maxrss is in KiB on Linux

    track_worker_peak_rss_mb.unit = "MiB"
