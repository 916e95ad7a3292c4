"""A call compiles what it needs and nothing else (issue: time to first result).

Each case runs one public call in a fresh interpreter and lists which specialised copies of a kernel module
(npu_emu.device.specialize) the call loaded and, with an empty numba cache (``cold``), the numba dispatchers of npu_emu
that hold a compiled signature afterwards (a call that loads its kernel from the cache only touches the kernel's
own dispatcher: its callees are linked into the cached code). A copy is loaded for one output format
and path, and numba prunes the branches of the others in it before typing them; so "only the E4M3 copy was loaded"
means no E5M2/FP4 loop was compiled, and "the per-element transliteration holds no signature" means the fused call
did not compile the faithful path.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent("""
    import json, sys
    import numpy as np
    import ml_dtypes
    from numba.core.registry import CPUDispatcher
    import npu_emu.ops as ops

    exec(sys.argv[1])
    compiled = []
    for name, mod in list(sys.modules.items()):
        if not name.startswith("npu_emu"):
            continue
        for attr, obj in list(vars(mod).items()):
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name and obj.signatures:
                compiled.append(name + ":" + attr)
    copies = sorted(n for n in sys.modules if n.startswith("npu_emu") and "[" in n)
    from npu_emu.device import specialize
    print(json.dumps({"compiled": sorted(compiled), "copies": copies, "unshared": specialize.unshared}))
""")

MX = "npu_emu.kernels.mx_quant.kernel"
QMM = "npu_emu.kernels.quant_matmul.kernel"


def probe(call, cold_cache=None):
    env = dict(os.environ)
    if cold_cache is not None:
        # what the call compiles: not what a wheel built with the kernels ships (npu_emu/device/shipped_kernels.py).
        # Which functions get compiled is decided before LLVM optimises anything, so the probe skips LLVM's
        # optimisation (NUMBA_OPT=0; this file on the 2-core box, 2026-12-06: 53.8 against 65.2 s); numba then declines
        # to cache the code (its constants stay addresses), and the probe's cache is thrown away anyway.
        env.update(NUMBA_CACHE_DIR=str(cold_cache), NPU_EMU_SHIPPED_KERNELS="0", NUMBA_OPT="0")
    out = subprocess.run([sys.executable, "-c", PROBE, textwrap.dedent(call)], capture_output=True, text=True,
                         env=env, cwd=os.path.dirname(__file__), timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    # a function the source analysis took for one that reads fewer switches, refused by the value check
    assert res["unshared"] == []
    return set(res["compiled"]), res["copies"]


def _split(copy):
    """"module[A=1,B=2]" -> ("module", {"A": "1", "B": "2"})"""
    mod, _, tag = copy.partition("[")
    return mod, dict(kv.split("=") for kv in tag.rstrip("]").split(",") if kv)


def _within(sub, copy):
    """sub is copy's module made with some of copy's switches, with the same values: where the functions of copy
    that read only those switches come from (npu_emu.device.specialize shares them between copies)."""
    (m1, s1), (m2, s2) = _split(sub), _split(copy)
    return m1 == m2 and s1.items() <= s2.items()


def full_copies(copies, module):
    """The copies of module the call loaded for its own switches: the others it loaded lie within one of them."""
    mine = [c for c in copies if c.startswith(module + "[")]
    return [c for c in mine if not any(c != o and _within(c, o) for o in mine)]


def in_copy(compiled, copy):
    """The functions of copy that hold a signature, wherever they come from (copy or a copy within it)."""
    return {c.split(":")[1] for c in compiled if "[" in c and _within(c.split(":")[0], copy)}


BF16_X = "x = np.random.default_rng(0).standard_normal((64, 256)).astype(ml_dtypes.bfloat16)\n"


def test_mx_e4m3_fused_call_compiles_one_format_and_one_path(tmp_path):
    compiled, copies = probe(BF16_X + "ops.npu_dynamic_mx_quant(x, axis=-1, dst_type=24)", tmp_path)
    copy = f"{MX}[DST=0,MODE=0,WALK=3]"
    # no E5M2 / FP4 copy, no per-element or faithful one, no copy that walks column blocks or other block sizes
    assert full_copies(copies, MX) == [copy] and all(c.startswith(MX) for c in copies)
    mine = in_copy(compiled, copy)
    assert {"dynamic_mx_quant_kernel", "_convert_run"} <= mine
    assert not mine & {"_column_blocks", "_pow2_rows", "_pow2_shifts"}       # the column walk's loops
    # the per-element transliteration and the grouped op's kernels are not compiled
    assert not mine & {"_enc_one", "grouped_dynamic_mx_quant_kernel", "grouped_fused_kernel"}
    # nor the UB-staged copies of the plain module's DataCopyPad helpers
    assert not {f"{MX[:-7]}.common:_copy_in", f"{MX[:-7]}.common:_copy_out"} & compiled


def test_mx_faithful_fp4_call_compiles_no_fused_loop(tmp_path):
    compiled, copies = probe(BF16_X + "ops.npu_dynamic_mx_quant(x, axis=-1, dst_type=296, faithful=True)", tmp_path)
    copy = f"{MX}[DST=2,MODE=2,WALK=3]"
    assert full_copies(copies, MX) == [copy] and all(c.startswith(MX) for c in copies)
    mine = in_copy(compiled, copy)
    assert {"dynamic_mx_quant_kernel", "_enc_one"} <= mine
    assert not mine & {"_convert_fast", "_convert_run", "_fp32_rows", "_pow2_rows", "_run_pass"}


def test_mx_grouped_call_loads_its_format_only(tmp_path):
    # cold: with a warm cache only the kernel's own dispatcher holds a signature, whatever it compiled
    compiled, copies = probe(
        BF16_X + "ops.npu_grouped_dynamic_mx_quant(x, np.array([32, 64], np.int32), dst_type=23)", tmp_path)
    copy = f"{MX}[DST=1,MODE=0,WALK=2]"
    assert full_copies(copies, MX) == [copy] and all(c.startswith(MX) for c in copies)
    mine = in_copy(compiled, copy)
    assert {"grouped_fused_kernel", "_column_blocks"} <= mine
    # no dynamic walk, no run (last-axis) loops, no per-element path
    assert not mine & {"dynamic_mx_quant_kernel", "_dynamic_unit", "_row_blocks", "_run_pass", "_enc_one"}


def test_dual_fused_call_shares_the_column_copy(tmp_path):
    # the dual-axis fused walk takes mx_quant's FP32 loops from the column-walk copy (their per-column form only)
    compiled, copies = probe(BF16_X + "ops.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=296)", tmp_path)
    mx_copy = f"{MX}[DST=2,MODE=0,WALK=2]"
    assert full_copies(copies, MX) == [mx_copy]
    assert in_copy(compiled, mx_copy) == {"_fp32_rows"}


def test_dual_scale_alg_call_compiles_no_ocp_scales_and_no_16_bit_forms(tmp_path):
    # scale_alg 1 never forms OCP scales and takes the per-axis walk: its mx_quant copy is the one without OCP scales
    # (OCP=0) and with the FP32 loops alone (NO16=1); neither the OCP scale loop nor a 16-bit form holds a signature
    compiled, copies = probe(BF16_X + "ops.npu_dynamic_mx_quant_with_dual_axis(x, dst_type=24, scale_alg=1)",
                             tmp_path)
    mx_copy = f"{MX}[DST=0,MODE=0,NO16=1,OCP=0,WALK=0]"
    assert full_copies(copies, MX) == [mx_copy]
    mine = in_copy(compiled, mx_copy)
    assert {"_row_blocks", "_column_blocks", "_fp32_rows"} <= mine
    assert not mine & {"_run_pass", "_convert_run", "_pow2_rows", "_pow2_shifts", "_pow2_redo"}
    assert "npu_emu.kernels.mx_quant.common:_ocp_scales" not in compiled


def test_mx_call_along_another_axis_compiles_no_last_axis_loops(tmp_path):
    compiled, copies = probe(BF16_X + "ops.npu_dynamic_mx_quant(x, axis=-2, dst_type=24)", tmp_path)
    copy = f"{MX}[DST=0,MODE=0,WALK=2]"
    assert full_copies(copies, MX) == [copy] and all(c.startswith(MX) for c in copies)
    mine = in_copy(compiled, copy)
    assert {"dynamic_mx_quant_kernel", "_column_blocks"} <= mine
    assert not mine & {"_row_blocks", "_run_pass", "_convert_run", "_pow2_redo"}


def test_int8_quant_matmul_compiles_one_epilogue_and_no_float_path(tmp_path):
    compiled, copies = probe("""
        rng = np.random.default_rng(0)
        x1 = rng.integers(-128, 128, (16, 64), dtype=np.int8)
        x2 = rng.integers(-128, 128, (64, 32), dtype=np.int8)
        ops.npu_quant_matmul(x1, x2, rng.random(32, dtype=np.float32), pertoken_scale=rng.random(16,
                             dtype=np.float32), output_dtype="bfloat16")
    """, tmp_path)
    copy = f"{QMM}[ACC_INT=1,OUT=1,RINT=1]"
    assert full_copies(copies, QMM) == [copy] and all(c.startswith(QMM) for c in copies)   # the bf16 chain only
    assert {"epilogue_kernel", "_epilogue_block"} <= in_copy(compiled, copy)
    plain = {c.split(":")[1] for c in compiled if c.startswith(QMM + ":")}
    assert not plain & {"qbmm_perblock_kernel", "qbmm_cube_faithful_kernel"}
    accum = {c.split(":")[1] for c in compiled if c.startswith("npu_emu.kernels.quant_matmul.accum:")}
    assert not accum & {"exact_sum_f32", "fast_sum_f32", "_sequential", "_combine"}   # the float matmul paths
    assert not any(c.startswith(("npu_emu.kernels.quant_matmul.v4_kernel:", "npu_emu.kernels.mx_quant"))
                   for c in compiled)


@pytest.mark.parametrize("out", ["float16", "int8"])
def test_quant_matmul_output_types_load_their_own_copy(out):
    compiled, copies = probe(f"""
        rng = np.random.default_rng(0)
        x1 = rng.integers(-128, 128, (16, 64), dtype=np.int8)
        x2 = rng.integers(-128, 128, (64, 32), dtype=np.int8)
        scale = ops.npu_trans_quant_param(rng.random(32, dtype=np.float32) * 0.01)
        ops.npu_quant_matmul(x1, x2, scale, output_dtype="{out}")
    """)
    code = {"float16": 0, "int8": 3}[out]
    assert full_copies(copies, QMM) == [f"{QMM}[ACC_INT=1,OUT={code},RINT=1]"]
    assert all(c.startswith(QMM) for c in copies)
