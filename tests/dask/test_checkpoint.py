"""npu-emu quantize-checkpoint on a synthetic 3-shard safetensors checkpoint, through a real
dask.distributed.LocalCluster of 2 worker processes: every tensor bit for bit against npu_emu.ops, the index and
metadata, resume (a completed shard skipped, a leftover temporary redone) and clean errors with nothing written."""

import json
import os

import numpy as np
import pytest
from safetensors import safe_open

import npu_emu.ops as ops
from npu_emu.dask import checkpoint as ck
from npu_emu.cli import main as cli_main

from dask_test_helpers import header_of, make_checkpoint, read_tensor, write_safetensors

# read at import, before any cluster of this module starts
_CLIENT_NUMBA_THREADS = os.environ.get("NUMBA_NUM_THREADS")

SHARDS = ["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"]
TINY = 0.02            # MB per task: 64-row chunks here, so the larger weights span several tasks


def check_output(out, tensors, quantized, dst_type, st_dtype, axis=-1):
    index = json.load(open(os.path.join(out, ck.INDEX_NAME)))
    wmap = index["weight_map"]
    for name, x in tensors.items():
        shard = os.path.join(out, wmap[name])
        dt, shape, raw = read_tensor(shard, name)
        if name in quantized:
            y, s = ops.npu_dynamic_mx_quant(x, axis=axis, dst_type=dst_type)
            assert (dt, shape) == (st_dtype, tuple(x.shape) if st_dtype != "U8" else y.shape)
            np.testing.assert_array_equal(np.frombuffer(raw, np.uint8), np.asarray(y).view(np.uint8).reshape(-1))
            sdt, sshape, sraw = read_tensor(shard, name + "_scale")
            assert (sdt, sshape) == ("F8_E8M0", s.shape) and wmap[name + "_scale"] == wmap[name]
            np.testing.assert_array_equal(np.frombuffer(sraw, np.uint8), np.asarray(s).reshape(-1))
        else:
            assert shape == x.shape and raw == x.tobytes(), name
    assert set(wmap) == set(tensors) | {n + "_scale" for n in quantized}
    assert index["metadata"]["total_size"] == sum(
        h["data_offsets"][1] - h["data_offsets"][0] for s in set(wmap.values())
        for k, h in header_of(os.path.join(out, s)).items() if k != "__metadata__")
    assert not [f for f in os.listdir(out) if f.endswith(ck.TMP_SUFFIX)]


def test_mxfp8_all_weights_bit_identical(client, tmp_path):
    tensors = make_checkpoint(tmp_path / "in")
    res = ck.quantize_checkpoint(tmp_path / "in", tmp_path / "out", format="mxfp8", client=client, chunk_mb=TINY,
                                 progress=False)
    assert res["written"] == SHARDS and res["skipped"] == []
    # default selection: the 2-D floating tensors whose name ends in "weight" (bf16, float16 and float32 ones)
    quantized = {"embed.weight", "layers.0.attn.q.weight", "layers.0.mlp.up.weight", "layers.0.mlp.down.weight",
                 "lm_head.weight"}
    check_output(tmp_path / "out", tensors, quantized, 24, "F8_E4M3")
    meta = header_of(tmp_path / "out" / SHARDS[1])["__metadata__"]
    assert meta["npu_emu.format"] == "mxfp8" and meta["npu_emu.dst_type"] == "float8_e4m3fn"
    assert (meta["npu_emu.axis"], meta["npu_emu.block_size"], meta["npu_emu.cann_version"]) == ("-1", "32", "master")
    assert json.loads(meta["npu_emu.quantized"]) == ["layers.0.mlp.down.weight", "layers.0.mlp.up.weight"]
    with safe_open(str(tmp_path / "out" / SHARDS[0]), framework="numpy") as f:     # the package reads our files
        assert set(f.keys()) == {"embed.weight", "embed.weight_scale", "layers.0.attn.q.weight",
                                 "layers.0.attn.q.weight_scale", "layers.0.norm.weight", "layers.0.attn.q.bias"}
        assert f.metadata()["npu_emu.source"] == SHARDS[0]


def test_mxfp4_include_and_resume(client, tmp_path):
    tensors = make_checkpoint(tmp_path / "in", seed=1)
    out = tmp_path / "out"
    kw = dict(format="mxfp4", include=r"(q|up)\.weight$", client=client, chunk_mb=TINY, progress=False)
    res = ck.quantize_checkpoint(tmp_path / "in", out, **kw)
    assert res["written"] == SHARDS
    check_output(out, tensors, {"layers.0.attn.q.weight", "layers.0.mlp.up.weight"}, 296, "U8")
    done = {s: os.stat(out / s) for s in SHARDS}
    want = (out / SHARDS[1]).read_bytes()
    # a run killed while writing shard 2: its temporary file is half written and there is no final file
    os.remove(out / SHARDS[1])
    os.remove(out / ck.INDEX_NAME)
    (out / (SHARDS[1] + ck.TMP_SUFFIX)).write_bytes(want[:len(want) // 2])
    res = ck.quantize_checkpoint(tmp_path / "in", out, **kw)
    assert res["written"] == [SHARDS[1]] and res["skipped"] == [SHARDS[0], SHARDS[2]]
    for s in (SHARDS[0], SHARDS[2]):       # untouched: same inode, same mtime
        st = os.stat(out / s)
        assert (st.st_ino, st.st_mtime_ns) == (done[s].st_ino, done[s].st_mtime_ns)
    assert (out / SHARDS[1]).read_bytes() == want
    check_output(out, tensors, {"layers.0.attn.q.weight", "layers.0.mlp.up.weight"}, 296, "U8")
    # a shard from another job (mxfp8) under the final name is not taken as done
    res = ck.quantize_checkpoint(tmp_path / "in", out, **dict(kw, format="mxfp8"))
    assert res["written"] == SHARDS


def _nothing_written(out):
    return not os.path.exists(out) or os.listdir(out) == []


@pytest.mark.parametrize("case,include,message", [
    ("non2d", r"norm\.weight$", r"layers.0.norm.weight.*shape \[192\]; only 2-D weights"),
    ("dtype", r"^w\.weight$", r"'w.weight' is F64; npu_dynamic_mx_quant takes BF16, F16, F32"),
    ("corrupt", None, r"model-00002-of-00003.safetensors: not a readable safetensors file"),
    ("truncated", None, r"model-00002-of-00003.safetensors: not a readable safetensors file.*not fully covered"),
])
def test_bad_input_clear_error_nothing_written(tmp_path, capsys, case, include, message):
    src, out = tmp_path / "in", tmp_path / "out"
    make_checkpoint(src)
    if case == "dtype":
        write_safetensors(src / SHARDS[2], {"w.weight": np.ones((4, 64))})
        json.dump({"weight_map": {"w.weight": SHARDS[2], "embed.weight": SHARDS[0]}},
                  open(src / ck.INDEX_NAME, "w"))
    if case == "corrupt":
        (src / SHARDS[1]).write_bytes(b"\xff" * 64)
    if case == "truncated":
        raw = (src / SHARDS[1]).read_bytes()
        (src / SHARDS[1]).write_bytes(raw[:-200])
    with pytest.raises(ck.CheckpointError, match=message):
        ck.quantize_checkpoint(src, out, format="mxfp8", include=include, progress=False)
    assert _nothing_written(out)
    args = ["quantize-checkpoint", str(src), "--format", "mxfp8", "--out", str(out), "--no-progress"]
    assert cli_main(args + (["--include", include] if include else [])) == 2
    assert "npu-emu quantize-checkpoint:" in capsys.readouterr().err
    assert _nothing_written(out)


def test_workers_get_numba_threads(client):
    # the nanny sets OMP_NUM_THREADS only; NUMBA_NUM_THREADS comes from distributed.nanny.environ, and the workers'
    # numba thread pools really have that size (get_num_threads starts the pool)
    want = max(1, (os.cpu_count() or 1) // 2)

    def numba_threads():
        import numba

        return os.environ.get("NUMBA_NUM_THREADS"), numba.config.NUMBA_NUM_THREADS, numba.get_num_threads()

    env = client.run(numba_threads)
    assert len(env) == 2 and all(v == (str(want), want, want) for v in env.values()), env


def test_worker_tasks_keep_no_freed_outputs(client):
    """Dask manages a worker's memory by its resident size: a task's large outputs are plain arrays there, not
    blocks npu_emu.frontend.output_cache would keep after they are freed (in this process they are)."""
    from npu_emu.frontend import output_cache

    def large_output_kept():
        from npu_emu.frontend import output_cache as oc

        a = oc.empty(oc.MIN_BYTES, np.uint8)
        plain = a.flags.owndata
        del a
        return plain, oc.cached_bytes()

    assert client.submit(large_output_kept, pure=False).result() == (True, 0)
    output_cache.release()                 # whatever this process's earlier tests left
    a = output_cache.empty(output_cache.MIN_BYTES, np.uint8)
    assert not a.flags.owndata
    del a
    assert output_cache.release() == output_cache.MIN_BYTES


def test_starting_a_cluster_leaves_this_process_alone(client):
    """The workers' NUMBA_NUM_THREADS must not leak into the process that started the cluster: numba re-reads it
    there at each compile and raises once its own threads have started with another count."""
    import numba

    assert os.environ.get("NUMBA_NUM_THREADS") == _CLIENT_NUMBA_THREADS
    numba.get_num_threads()     # start this process's pool, then compile something new: must not raise
    numba.njit(lambda a: a + 1)(1)


def test_killed_run_resumes(client, tmp_path):
    """SIGKILL the CLI (and its LocalCluster) once a small shard is final, while the large second one is being
    written; a re-run skips the final shard, redoes the second, and all are bit-identical."""
    import signal
    import subprocess
    import sys
    import time

    import ml_dtypes

    src, out = tmp_path / "in", tmp_path / "out"
    os.makedirs(src)
    rng = np.random.default_rng(3)
    small = {"a.weight": rng.standard_normal((64, 128)).astype(ml_dtypes.bfloat16)}
    big = {f"b{i}.weight": rng.standard_normal((2048, 4096)).astype(ml_dtypes.bfloat16) for i in range(2)}
    last = {"c.weight": rng.standard_normal((64, 64)).astype(ml_dtypes.bfloat16)}
    for shard, tensors in zip(SHARDS, (small, big, last)):
        write_safetensors(src / shard, tensors)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "npu_emu.cli", "quantize-checkpoint", str(src), "--format",
                             "mxfp8", "--out", str(out), "--workers", "2", "--chunk-mb", "0.5", "--no-progress"],
                            env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=tmp_path)      # not the checkout: -m would import the source folder npu_emu/
    try:
        deadline = time.monotonic() + 240
        # every shard's tasks run at once and dask picks their order: either small shard may be final first (CI saw
        # the third, then the large one, then the first); wait for one of them, with the large one half-written
        small_final = ()
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the CLI wrote no shard in 240 s"
            time.sleep(0.005)
            # look at the files with the run frozen, so that what is seen is what the kill leaves
            try:
                os.killpg(proc.pid, signal.SIGSTOP)
            except ProcessLookupError:          # the whole run has ended: the checks below say so
                break
            small_final = [s for s in (SHARDS[0], SHARDS[2]) if (out / s).exists()]
            if small_final and (out / (SHARDS[1] + ck.TMP_SUFFIX)).exists():
                break
            os.killpg(proc.pid, signal.SIGCONT)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)        # the CLI, its scheduler and its worker processes
        except ProcessLookupError:
            pass
        proc.wait()
    assert not (out / SHARDS[1]).exists() and not (out / ck.INDEX_NAME).exists(), "the run finished before the kill"
    assert (out / (SHARDS[1] + ck.TMP_SUFFIX)).exists()          # left half-written by the killed run
    res = ck.quantize_checkpoint(src, out, format="mxfp8", client=client, chunk_mb=4, progress=False)
    # a shard final before the kill is skipped (the other small one may have been finished by then too)
    assert set(small_final) <= set(res["skipped"]) and SHARDS[1] in res["written"]
    assert sorted(res["skipped"] + res["written"]) == SHARDS
    check_output(out, {**small, **big, **last}, set(small) | set(big) | set(last), 24, "F8_E4M3")


def test_cli_on_a_running_scheduler_axis0(client, tmp_path, capsys):
    """The command on --scheduler ADDRESS (the module's cluster), blocks along axis 0: a row block of 64 rows owns
    one row of scale pairs."""
    tensors = make_checkpoint(tmp_path / "in", seed=2)
    quantized = {"layers.0.attn.q.weight", "layers.0.mlp.up.weight"}       # bf16, 128 and 200 rows
    rc = cli_main(["quantize-checkpoint", str(tmp_path / "in"), "--format", "mxfp8", "--axis", "0", "--include",
                   r"(q|up)\.weight$", "--out", str(tmp_path / "out"), "--chunk-mb", "0.02", "--no-progress",
                   "--scheduler", client.scheduler.address])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert captured.out.startswith("3 shard(s) written, 0 skipped;")
    check_output(tmp_path / "out", tensors, quantized, 24, "F8_E4M3", axis=0)
    assert header_of(tmp_path / "out" / SHARDS[1])["__metadata__"]["npu_emu.axis"] == "0"
    assert len(client.scheduler_info()["workers"]) == 2            # the command left the cluster running


def test_op_error_in_a_worker_names_the_chunk_and_leaves_nothing(client, tmp_path):
    # every check the plan cannot make runs in the tasks: a bad CANN-version switch fails in the first block
    make_checkpoint(tmp_path / "in")
    with pytest.raises(ck.CheckpointError, match=r"^\[161002 ACLNN_ERR_PARAM_INVALID\] npu_emu.dask.dynamic_mx_quant: "
                                                 r"chunk \(\d+, 0\) \(index range \[\d+:\d+, 0:\d+\]\) of "
                                                 r"model-0000\d-of-00003.safetensors tensor '.*weight': "
                                                 r"cann_version='no-such-version' is not one of"):
        ck.quantize_checkpoint(tmp_path / "in", tmp_path / "out", format="mxfp8", cann_version="no-such-version",
                               client=client, chunk_mb=TINY, progress=False)
    assert os.listdir(tmp_path / "out") == []           # temporary files removed, no final name, no index


def test_in_process_run_is_the_same_job(tmp_path):
    # scheduler="synchronous": the same tasks in this process, no cluster (the benchmark's peak-memory runs)
    tensors = make_checkpoint(tmp_path / "in", seed=4)
    res = ck.quantize_checkpoint(tmp_path / "in", tmp_path / "out", format="mxfp8", scheduler="synchronous",
                                 include=r"(q|up)\.weight$", chunk_mb=TINY, progress=False)
    assert res["written"] == SHARDS
    check_output(tmp_path / "out", tensors, {"layers.0.attn.q.weight", "layers.0.mlp.up.weight"}, 24, "F8_E4M3")
