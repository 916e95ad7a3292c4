"""Threads inside one Dask worker: several threads' first calls of an op load its specialised kernel module at the
same time (npu_emu/device/specialize.py). Each must get the finished module: before the fix a second thread could take
the copy from sys.modules while the first was still executing its source and fail with an AttributeError."""

import os
import subprocess
import sys
import textwrap


def test_concurrent_first_load_gets_the_finished_module(tmp_path):
    # a fresh process, so that the specialisation is not loaded yet; loading executes the source, compiles nothing.
    # Its working directory is not the checkout, whose source folder npu_emu/ would shadow the install
    code = textwrap.dedent("""
        import builtins, threading, time
        from npu_emu.device import specialize

        def slow_exec(*args):                 # widen the window in which the copy is registered but not executed
            time.sleep(0.3)
            return builtins.exec(*args)

        specialize.exec = slow_exec
        bad = []

        def one(k):
            time.sleep(0.05 * k)              # later threads arrive while the first one executes the source
            mod = specialize.load("npu_emu.kernels.mx_quant.kernel", DST=0, MODE=0, WALK=0)
            if not hasattr(mod, "dynamic_mx_quant_kernel"):
                bad.append(mod)

        threads = [threading.Thread(target=one, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("half-loaded", len(bad))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["half-loaded", "0"]      # 7 of 8 without the fix


def test_threaded_scheduler_on_the_workqueue_layer_does_not_abort(tmp_path):
    # numba's workqueue layer aborts the process (status 134) when two threads launch parallel kernels at once;
    # npu_emu.dask makes the chunks of one process take turns on that layer
    code = textwrap.dedent("""
        import dask, dask.array as da, ml_dtypes, numba, numpy as np
        import npu_emu.ops as ops
        from npu_emu import dask as nd

        x = np.random.default_rng(0).standard_normal((512, 256)).astype(np.float32).astype(ml_dtypes.bfloat16)
        y, s = nd.dynamic_mx_quant(da.from_array(x, chunks=(32, 256)), dst_type=24)
        with dask.config.set(scheduler="threads", num_workers=4):
            y, s = dask.compute(y, s)
        wy, ws = ops.npu_dynamic_mx_quant(x, dst_type=24)
        assert np.array_equal(y.view(np.uint8), wy.view(np.uint8)) and np.array_equal(s, ws)
        print(numba.threading_layer())
    """)
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", NUMBA_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["workqueue"]
