"""One dtype table: every spelling it lists means the same dtype through npu_emu.ops, npu_emu.aclnn, npu_emu.dtypes and
the CLI (npu_emu/dtype_table.py)."""

import argparse

import ml_dtypes
import numpy as np
import pytest

import npu_emu.aclnn
import npu_emu.ops
from npu_emu import dtype_table, dtypes
from npu_emu.cli import _dtype_arg
from npu_emu.errors import AclnnError
from npu_emu.frontend.core import resolve_dtype, resolve_torch_npu_dtype

ALIASES = sorted(dtype_table.ALIASES.items())
MX_FORMATS = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1", "float4_e1m2")


def test_the_table_is_consistent():
    assert len({d.name for d in dtype_table.TABLE}) == len(dtype_table.TABLE)
    assert len({d.acl for d in dtype_table.TABLE}) == len(dtype_table.TABLE)
    for d in dtype_table.TABLE:
        if d.torch_npu:
            assert d.torch_npu_code == 256 + d.acl
    # torch_npu's constants keep their documented values (torch_npu.hifloat8 = 290, float4_e2m1fn_x2 = 296)
    assert (npu_emu.ops.hifloat8, npu_emu.ops.float8_e5m2, npu_emu.ops.float8_e4m3fn, npu_emu.ops.float8_e8m0fnu,
            npu_emu.ops.float4_e2m1fn_x2, npu_emu.ops.float4_e1m2fn_x2) == (290, 291, 292, 293, 296, 297)


@pytest.mark.parametrize("alias,name", ALIASES)
def test_every_spelling_resolves_alike(alias, name):
    d = dtype_table.BY_NAME[name]
    spellings = (alias, alias.upper(), f"torch.{alias}")
    for s in spellings:
        assert dtype_table.canonical(s) == name
        if d.storage:
            assert resolve_dtype(s) == name                      # npu_emu.ops / npu_emu.aclnn dtype arguments
            assert resolve_torch_npu_dtype(s) == name            # torch_npu-style dst_type arguments
            assert _dtype_arg(s) == name                         # the CLI's --dtype
        else:
            with pytest.raises(AclnnError):
                resolve_dtype(s)
            with pytest.raises(argparse.ArgumentTypeError):
                _dtype_arg(s)
        if d.codec:
            assert dtypes.resolve_format(s) == name              # npu_emu.dtypes
        elif name in ("float32", "float16", "bfloat16"):
            assert dtypes._resolve_type(s, "t") == name          # npu_emu.dtypes.cast's types
        else:
            with pytest.raises(AclnnError):
                dtypes.resolve_format(s)


def test_codes_resolve_alike():
    for d in dtype_table.TABLE:
        if d.storage:
            assert resolve_dtype(d.acl) == d.name
        if d.codec:
            assert dtypes.resolve_format(d.acl) == d.name
            assert resolve_torch_npu_dtype(d.torch_npu_code) == d.name
    assert resolve_torch_npu_dtype(23) == "float8_e5m2" and resolve_torch_npu_dtype(24) == "float8_e4m3fn"


def _x():
    return (np.random.default_rng(5).standard_normal((4, 64)).astype(np.float32) * 3).astype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("name", MX_FORMATS)
def test_an_op_call_takes_every_spelling(name):
    """The same call through npu_emu.ops and npu_emu.aclnn with each spelling of the dst format: the same bits."""
    x = _x()
    spellings = [a for a, n in ALIASES if n == name]
    want_y, want_s = npu_emu.ops.npu_dynamic_mx_quant(x, dst_type=name, soc="ascend950pr")
    for s in spellings:
        y, sc = npu_emu.ops.npu_dynamic_mx_quant(x, dst_type=s, soc="ascend950pr")
        assert np.array_equal(np.asarray(y).view(np.uint8), np.asarray(want_y).view(np.uint8)), s
        assert np.array_equal(np.asarray(sc).view(np.uint8), np.asarray(want_s).view(np.uint8)), s
    acl = dtype_table.BY_NAME[name].acl
    for s in spellings:
        y = np.zeros(want_y.shape, np.uint8)
        sc = np.zeros(want_s.shape, np.uint8)
        st, ws, ex = npu_emu.aclnn.aclnnDynamicMxQuantGetWorkspaceSize(x, -1, "rint", acl, 32, 0, y, sc,
                                                                        soc="ascend950pr", y_dtype=s)
        assert st == 0 and npu_emu.aclnn.aclnnDynamicMxQuant(None, ws, ex) == 0, s
        assert np.array_equal(y, np.asarray(want_y).view(np.uint8)), s
