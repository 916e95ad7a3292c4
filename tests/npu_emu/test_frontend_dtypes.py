"""dtype arguments: aclDataType ints (aclnn layer) versus torch / torch_npu codes (torch_npu-style dst_type)."""

import ml_dtypes
import numpy as np
import pytest

from npu_emu.errors import AclnnError
from npu_emu.frontend.core import resolve_dtype, resolve_torch_npu_dtype


@pytest.mark.parametrize("code, name", [
    # torch.float8_e5m2 / e4m3fn are 23 / 24 in torch_npu's dst_type (docs/conventions.md §5); 290/293/296 as torch_npu
    # defines its attributes (torch_npu.hifloat8 = 290, float8_e8m0fnu = 293, float4_e2m1fn_x2 = 296), 297 e1m2
    (23, "float8_e5m2"), (24, "float8_e4m3fn"), (290, "hifloat8"), (291, "float8_e5m2"), (292, "float8_e4m3fn"),
    (293, "float8_e8m0"), (296, "float4_e2m1"), (297, "float4_e1m2"),
])
def test_torch_npu_codes(code, name):
    assert resolve_torch_npu_dtype(code) == name
    assert resolve_torch_npu_dtype(np.int64(code)) == name


def test_the_two_code_spaces_stay_apart():
    # 35 is aclDataType FLOAT8_E5M2 but no torch_npu code; 296 is torch_npu's FP4 E2M1 but no aclDataType value
    assert resolve_dtype(35) == "float8_e5m2"
    with pytest.raises(AclnnError) as e:
        resolve_torch_npu_dtype(35)
    assert e.value.status == 161002 and "torch_npu dtype code" in str(e.value)
    with pytest.raises(AclnnError):
        resolve_dtype(296)
    with pytest.raises(AclnnError):
        resolve_torch_npu_dtype(True)


def test_names_and_dtypes_pass_through():
    assert resolve_torch_npu_dtype("float4_e2m1fn_x2") == "float4_e2m1"
    assert resolve_torch_npu_dtype(ml_dtypes.float8_e4m3fn) == "float8_e4m3fn"
    assert resolve_torch_npu_dtype("torch.float8_e5m2") == "float8_e5m2"


def test_ops_carries_torch_npu_dtype_constants():
    import npu_emu.ops as torch_npu

    for attr, name in (("hifloat8", "hifloat8"), ("float8_e5m2", "float8_e5m2"), ("float8_e4m3fn", "float8_e4m3fn"),
                       ("float8_e8m0fnu", "float8_e8m0"), ("float4_e2m1fn_x2", "float4_e2m1"),
                       ("float4_e1m2fn_x2", "float4_e1m2")):
        assert resolve_torch_npu_dtype(getattr(torch_npu, attr)) == name
