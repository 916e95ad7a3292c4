"""What an installed npu_emu costs to import, and that CI's tests run against the install rather than the source.

Both run probes in a fresh interpreter whose working directory is not the repository: ``python -c`` puts its working
directory first on sys.path, where the source folder npu_emu/ (which has no kernels/ or dtypes/ under it) would
shadow the installed package.
"""

import importlib
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import npu_emu

ROOT = Path(__file__).resolve().parents[1]


def _probe(code, tmp_path):
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# Modules that naming the API must not load: every op family's kernel, tiling and front-end code, the instruction
# layer, the codecs (all numba-decorated), and numba, llvmlite and ml_dtypes themselves (ml_dtypes 0.7.0 alone
# takes ~1 s to import).
_HEAVY = ("npu_emu.kernels", "npu_emu.ascendc", "npu_emu.dtypes", "npu_emu.frontend.core", "npu_emu.device.launch",
          "npu_emu.device.validate", "npu_emu.device.tiling_data", "numba", "llvmlite", "ml_dtypes")

_IMPORT_PROBE = f"""
import json, sys
heavy = {_HEAVY!r}
def loaded():
    return sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))
import npu_emu, npu_emu.ops, npu_emu.aclnn
out = {{"after_import": loaded(),
        "ops_dir": sorted(set(npu_emu.ops.__all__) - set(dir(npu_emu.ops))),
        "aclnn_dir": sorted(set(npu_emu.aclnn.__all__) - set(dir(npu_emu.aclnn))),
        "dtype_constant": npu_emu.ops.float4_e2m1fn_x2}}
out["after_constant"] = loaded()
from npu_emu.ops import npu_sign_bits_pack
out["after_one_name"] = loaded()
from npu_emu.ops import *
from npu_emu.aclnn import *
out["unresolved"] = [n for m in (npu_emu.ops, npu_emu.aclnn) for n in m.__all__ if not callable(getattr(m, n))
                     and not isinstance(getattr(m, n), int)]
print(json.dumps(out))
"""


def test_naming_the_api_loads_no_op_family(tmp_path):
    out = _probe(_IMPORT_PROBE, tmp_path)
    top = [m for m in out["after_import"] if m.startswith("npu_emu") or "." not in m]
    assert out["after_import"] == [], "import npu_emu.ops / npu_emu.aclnn loaded " + ", ".join(top)
    assert out["ops_dir"] == [] and out["aclnn_dir"] == [], "dir() lacks names of __all__"
    assert out["dtype_constant"] == 296 and out["after_constant"] == []  # torch_npu's constants cost nothing
    # the first name of a family loads that family (and numba), and only that family
    one = out["after_one_name"]
    assert "npu_emu.kernels.sign_bits.kernel" in one and "numba" in one, one
    assert not any(m.startswith(("npu_emu.kernels.mx_quant", "npu_emu.kernels.quant_matmul")) for m in one), one
    assert out["unresolved"] == []


@pytest.mark.skipif(os.environ.get("NPU_EMU_EXPECT_INSTALLED") != "1",
                    reason="NPU_EMU_EXPECT_INSTALLED=1 (set by .ci/run) asks for a non-editable install")
def test_tests_run_against_the_installed_package(tmp_path):
    pkg = Path(npu_emu.__file__).resolve().parent
    # README's venv sits in the checkout (.venv), so the install may be under ROOT, but only inside site-packages
    assert pkg != ROOT / "npu_emu" and {"site-packages", "dist-packages"} & set(pkg.parts), \
        f"the tests imported npu_emu from the source tree {pkg}, not the install"
    # the wheel's layout: kernels/ and dtypes/ installed under npu_emu/
    for sub in (importlib.import_module("npu_emu.kernels"), importlib.import_module("npu_emu.dtypes")):
        assert Path(sub.__file__).resolve().parent.parent == pkg, sub.__file__
    direct = metadata.distribution("npu-emu").read_text("direct_url.json") or "{}"
    assert not json.loads(direct).get("dir_info", {}).get("editable", False), f"an editable install: {direct}"
    # and a fresh interpreter (as the subprocess tests start) finds the same package
    assert _probe("import json, npu_emu; print(json.dumps(npu_emu.__file__))", tmp_path) == npu_emu.__file__
