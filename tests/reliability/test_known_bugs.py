"""Minimal reproducers of the bugs the reliability fuzz found; each test states the contract (an AclnnError / a CANN
status / exit status 2 with a message). All of them are fixed, so these are regression tests. A new bug the fuzz
finds gets its reproducer here pinned with ``_xfail`` (strict: the test fails once the bug is fixed, so the mark and
its entry in helpers.KNOWN_SIGNATURES are then removed; the fuzz skips examples that die with a known signature
unless NPU_EMU_FUZZ_KNOWN_BUGS=1)."""

import contextlib
import io

import numpy as np
import pytest

import npu_emu.aclnn as aclnn
import npu_emu.ops as ops
from npu_emu import cli
from npu_emu.errors import AclnnError


def _xfail(reason, raises):
    """Pinned to the exception the bug raises today, so that another failure of the test is not mistaken for it."""
    return pytest.mark.xfail(strict=True, raises=raises, reason="BUG " + reason)


# ---------------------------------------------------------------------------------------------------------------
# library entries
# ---------------------------------------------------------------------------------------------------------------

def _readonly_out_cases():
    x = np.arange(4, dtype=np.uint8)
    yield "aclnnSignBitsUnpack", (x, 1, 0), np.zeros((1, 32), np.float32)
    table, idx, s = np.zeros((4, 32), np.uint8), np.zeros(3, np.int32), np.ones(4, np.float16)
    yield "aclnnGatherDequantInt8", (table, idx, s, s), np.zeros((3, 32), np.float16)
    yield "aclnnTransQuantParamV2", (np.ones(4, np.float32), None), np.zeros(4, np.uint64)
    yield "aclnnQuantMatmulV3", (np.ones((2, 32), np.int8), np.ones((32, 16), np.int8), np.ones(16, np.uint64) << 46,
                                 None, None, False, False), np.zeros((2, 16), np.float16)


# fixed: write_out refuses a read-only out with 161002 (phase 2 returns the status)
@pytest.mark.parametrize("case", list(_readonly_out_cases()), ids=lambda c: c[0])
def test_read_only_out_is_a_status_not_a_value_error(case):
    entry, args, out = case
    out.setflags(write=False)
    st, ws, ex = getattr(aclnn, entry + "GetWorkspaceSize")(*args, out)
    if st == 0:
        st = getattr(aclnn, entry)(None, ws, ex)           # raises ValueError today
    assert st == 161002 and aclnn.aclGetRecentErrMsg()


# fixed: batch dims that do not broadcast are 161002
def test_quant_matmul_batch_mismatch_is_rejected():
    x1, x2 = np.ones((2, 4, 32), np.int8), np.ones((3, 32, 16), np.int8)
    with pytest.raises(AclnnError) as e:
        ops.npu_quant_matmul(x1, x2, np.full(16, 0.01, np.float32), output_dtype="float16")
    assert e.value.status == 161002


# decided: CANN's aclnn returns success on an empty x before the kernel and the ViewCopy into mxscale, so the
# caller's mxscale keeps its bytes (hicann/ops-nn: quant/grouped_dynamic_mx_quant/op_api/
# aclnn_grouped_dynamic_mx_quant.cpp and _v2.cpp; docs/ops/mx_quant.md §3.2(5)); the fuzz had expected gap_fill there
@pytest.mark.parametrize("v2", [False, True], ids=["V1", "V2"])
def test_grouped_mx_aclnn_empty_x_leaves_mxscale_untouched(v2):
    from npu_emu.kernels.mx_quant import api

    x, gi = np.zeros((0, 1), np.float16), np.array([0], np.int32)
    y, s = np.zeros((0, 1), np.uint8), np.full((1, 1, 2), 0xA5, np.uint8)
    if v2:
        st, ws, ex = api.aclnnGroupedDynamicMxQuantV2GetWorkspaceSize(x, gi, "rint", 35, 32, 0, 0.0, y, s,
                                                                      y_dtype="float8_e5m2")
        run = api.aclnnGroupedDynamicMxQuantV2
    else:
        st, ws, ex = api.aclnnGroupedDynamicMxQuantGetWorkspaceSize(x, gi, "rint", 35, 32, y, s,
                                                                    y_dtype="float8_e5m2")
        run = api.aclnnGroupedDynamicMxQuant
    assert st == 0 and ws == 0 and run(None, ws, ex) == 0
    assert (s == 0xA5).all(), s.ravel()


# fixed: the 910B pack checks the last tile of the last core (kernel.pack_tiling_problems): a lastCalcLength
# that is not a whole number of CompareScalar repeats, or a lastCopyLength short of the rest of x, is a 561002
# naming that core and tile
@pytest.mark.parametrize("field", ["lastCalcLength", "lastCopyLength"])
def test_pack_910b_short_last_tile_is_rejected(field):
    import dataclasses

    from npu_emu.kernels.sign_bits import golden as golden
    from npu_emu.kernels.sign_bits import tiling as sbt

    x = np.random.default_rng(12).standard_normal(100_000).astype(np.float32)
    tr = sbt.pack_tiling(x.size, "float32", core_num=2)
    # lastCopyLength = 0 (core_num=5 in the fuzz) leaves the last output byte unwritten: np.empty garbage
    td = dataclasses.replace(tr.tiling, **{field: getattr(tr.tiling, field) - 1 if field == "lastCalcLength" else 0})
    try:
        y = ops.npu_sign_bits_pack(x, 1, tiling=td, block_dim=tr.block_dim)
    except AclnnError as e:
        assert e.status == 561002
        return
    assert np.array_equal(y, golden.sign_bits_pack(x, 1)), "wrong bits returned without an error"


# fixed: tileDataNum must be a positive multiple of 32 bytes (DataCopy granularity, aligned UB buffers):
# kernel.unpack_tiling_problems refuses 191 with 561002 before the kernel builds its UB views
def test_unpack_910b_odd_tile_is_rejected_by_validation():
    import dataclasses

    from npu_emu.kernels.sign_bits import tiling as sbt

    x = np.random.default_rng(11).integers(0, 256, 1000, dtype=np.uint8)
    tr = sbt.unpack_tiling(x.size, "float32", core_num=1, ub_size=16384)
    with pytest.raises(AclnnError) as e:
        ops.npu_sign_bits_unpack(x, 1, 0, tiling=dataclasses.replace(tr.tiling, tileDataNum=191),
                                 block_dim=tr.block_dim, faithful=True)     # the transliterated kernel's UB views
    assert e.value.status == 561002, e.value


# fixed: a tail that is not a multiple of 32 bytes (DataCopy would leave stale UB) or longer than tileDataNum
# (its outputs would overwrite the input buffer) is a 561002 naming the core and tile
@pytest.mark.parametrize("field,value", [("smallTailDataNum", None), ("tileDataNum", 128)])
def test_unpack_910b_short_tail_is_rejected(field, value):
    import dataclasses

    from npu_emu.kernels.sign_bits import golden as golden
    from npu_emu.kernels.sign_bits import tiling as sbt

    x = np.random.default_rng(11).integers(0, 256, 1000, dtype=np.uint8)
    tr = sbt.unpack_tiling(x.size, "float32", core_num=1 if value is None else 5, ub_size=16384)
    # tileDataNum 128 on the 5-core tiling: 1399 of 8000 outputs wrong (fuzz finding)
    td = dataclasses.replace(tr.tiling, **{field: tr.tiling.smallTailDataNum - 1 if value is None else value})
    try:
        y = ops.npu_sign_bits_unpack(x, 1, 0, tiling=td, block_dim=tr.block_dim, faithful=True)
    except AclnnError as e:
        assert e.status == 561002
        return
    assert np.array_equal(y.view(np.uint32), golden.sign_bits_unpack(x, 1).view(np.uint32)), \
        "wrong bits returned without an error"


# ---------------------------------------------------------------------------------------------------------------
# the npu-emu command
# ---------------------------------------------------------------------------------------------------------------

def _cli(argv):
    """Exit status of ``npu-emu argv`` (argparse's SystemExit included); any other exception propagates."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = cli.main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 2
    return rc, err.getvalue()


CLI_BUGS = [
    (ZeroDivisionError, "tiling dynamic_mx_quant block-size 0",
     "(kernels/mx_quant/tiling.py dynamic_unit_tiling, line ~264: block_size <= 0 or an empty --shape is not "
     "checked: ZeroDivisionError)",
     ["tiling", "dynamic_mx_quant", "--shape", "4,64", "--block-size", "0"]),
    (ZeroDivisionError, "tiling dynamic_mx_quant empty shape", "(kernels/mx_quant/tiling.py dynamic_unit_tiling: ZeroDivisionError)",
     ["tiling", "dynamic_mx_quant", "--shape", ""]),
    (ValueError, "tiling grouped_dynamic_mx_quant 3-d shape",
     "(kernels/mx_quant/cli.py _tiling_grouped, line ~122: `m, n = shape` on a 3-d --shape: ValueError)",
     ["tiling", "grouped_dynamic_mx_quant", "--shape", "2,3,32"]),
    (MemoryError, "tiling sign_bits_pack huge n",
     "(kernels/sign_bits tiling / access pattern: --n 2^63 builds a per-tile table: numpy MemoryError)",
     ["tiling", "sign_bits_pack", "--n", str(2 ** 63), "--core-num", str(2 ** 63)]),
    (ValueError, "golden seed -1", "(kernels/gather_dequant_int8/golden.py make_case: --seed -1 reaches np.random.seed: "
                       "ValueError)",
     ["golden", "gather_dequant_int8", "--out", "{tmp}/g", "--seed", "-1"]),
    (ValueError, "golden emb-dim 0", "(kernels/gather_dequant_int8/golden.py quantize_embedding: --emb-dim 0: ValueError 'zero-"
                         "size array to reduction operation')",
     ["golden", "gather_dequant_int8", "--out", "{tmp}/g", "--emb-dim", "0"]),
    (IndexError, "golden deq n 0", "(kernels/data_copy_dequant/golden.py data_copy_dequant line ~163 words.flat[0] on an empty "
                       "table: IndexError)",
     ["golden", "data_copy_dequant", "--out", "{tmp}/g", "--n", "0"]),
    (ValueError, "golden deq rows -1", "(npu_emu/cli/__init__.py _golden_deq: --rows -1: ValueError 'negative dimensions')",
     ["golden", "data_copy_dequant", "--out", "{tmp}/g", "--rows", "-1"]),
    (ValueError, "golden sign_bits size 0", "(kernels/sign_bits/golden.py sign_bits_unpack: --n 0 --size 0: ValueError)",
     ["golden", "sign_bits_unpack", "--out", "{tmp}/g", "--n", "0", "--size", "0"]),
    (ValueError, "golden sign_bits_pack size", "(kernels/sign_bits/golden.py sign_bits_pack: --n 3 --size 32 (not a divisor): "
                                   "ValueError 'cannot reshape')",
     ["golden", "sign_bits_pack", "--out", "{tmp}/g", "--n", "3", "--size", "32"]),
    (ValueError, "golden quant_matmul huge n", "(kernels/quant_matmul/cli.py _golden: --n 2^63: ValueError 'Maximum allowed "
                                   "dimension exceeded')",
     ["golden", "quant_matmul", "--out", "{tmp}/g", "--n", str(2 ** 63)]),
    (ValueError, "golden grouped mx 3-d", "(kernels/mx_quant/golden.py grouped_dynamic_mx_quant: 3-d --shape: ValueError)",
     ["golden", "grouped_dynamic_mx_quant", "--out", "{tmp}/g", "--shape", "2,3,32"]),
    (FileExistsError, "golden --out is a file", "(every kernels/*/cli.py _golden and npu_emu/cli/__init__.py _golden_deq: os.makedirs on an "
                               "existing file: FileExistsError)",
     ["golden", "sign_bits_unpack", "--out", "{tmp}/file.bin"]),
    (IsADirectoryError, "run --output is a directory", "(npu_emu/cli/__init__.py write_bin, line ~98: an existing directory as --output: "
                                    "IsADirectoryError)",
     ["run", "trans_quant_param", "--scale", "{tmp}/file.bin", "--output", "{tmp}"]),
]


# fixed: npu_emu.cli.main reports OSError and option values numpy or a golden refuse as usage errors (exit 2)
@pytest.mark.parametrize("argv", [pytest.param(c[3], id=c[1]) for c in CLI_BUGS])
def test_cli_rejects_with_exit_2(argv, tmp_path):
    (tmp_path / "file.bin").write_bytes(np.ones(4, np.float32).tobytes())
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    rc, err = _cli(argv)
    assert rc == 2 and err.strip()
