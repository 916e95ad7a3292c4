"""The wheel is what users install: every package folder of the source tree must be in it under its installed name.

A folder without ``__init__.py`` is silently left out of a wheel (setuptools' find_packages skips it) while an
editable install still imports it from the source tree, which is how ``npu_emu.kernels.sign_bits`` went missing from
``pip install .`` once. CI builds the wheel and passes it in ``NPU_EMU_WHEEL``; without it this test builds one.
"""

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# source folder -> installed package name (pyproject.toml [tool.setuptools.package-dir])
MAPPED = {"npu_emu": "npu_emu", "kernels": "npu_emu.kernels", "dtypes": "npu_emu.dtypes"}


def _source_packages():
    """Installed names of every folder under npu_emu/, kernels/ and dtypes/ that holds Python files."""
    found = {}
    for src, name in MAPPED.items():
        base = ROOT / src
        for d in [base, *sorted(p for p in base.rglob("*") if p.is_dir())]:
            if d.name == "__pycache__" or not any(d.glob("*.py")):
                continue
            rel = d.relative_to(base).parts
            found[".".join((name, *rel))] = d
    return found


def test_every_package_folder_has_an_init():
    missing = [str(d.relative_to(ROOT)) for d in _source_packages().values() if not (d / "__init__.py").exists()]
    assert not missing, f"package folders without __init__.py (left out of the wheel): {missing}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    given = os.environ.get("NPU_EMU_WHEEL")
    if given:
        return Path(given)
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("not run from a source checkout: there is no tree to build a wheel from")
    out = tmp_path_factory.mktemp("wheel")
    # from a copy: setuptools reuses build/ of an earlier build, which still holds packages the tree has lost
    src = out / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__",
                                                             ".asv", ".hypothesis", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
                   check=True, capture_output=True, text=True)
    (whl,) = out.glob("npu_emu-*.whl")
    return whl


def test_wheel_holds_every_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    in_wheel = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    missing = sorted(set(_source_packages()) - in_wheel)
    assert not missing, f"{wheel.name} lacks packages {missing}"


def test_wheel_holds_every_module(wheel):
    """Not only the folders: every .py file of the three trees, at its installed path."""
    names = set(zipfile.ZipFile(wheel).namelist())
    want = set()
    for pkg, d in _source_packages().items():
        for f in d.glob("*.py"):
            want.add(pkg.replace(".", "/") + "/" + f.name)
    missing = sorted(want - names)
    assert not missing, f"{wheel.name} lacks modules {missing[:10]}"
    # and nothing numba or git leaves in the tree: numba's cache files belong only to the shipped-kernels bundle of a
    # wheel built with NPU_EMU_BUILD_KERNELS=1 (npu_emu/_kernel_cache, with its manifest), never beside a module
    bundle = "npu_emu/_kernel_cache/"
    stray = sorted(n for n in names if n.endswith((".nbi", ".nbc", ".pyc")) and not n.startswith(bundle))
    assert not stray, f"{wheel.name} carries build leftovers {stray[:5]}"
    shipped = [n for n in names if n.startswith(bundle)]
    if shipped:
        assert bundle + "manifest.json" in shipped, f"{wheel.name} has a kernels bundle without its manifest"
        odd = sorted(n for n in shipped if not n.endswith((".nbi", ".nbc", ".json")))
        assert not odd, f"{wheel.name}'s kernels bundle holds files other than numba's cache: {odd[:5]}"


def test_wheel_holds_the_c_abi_sources(wheel):
    """`npu-emu cabi build` compiles these on the user's machine: they are package data, not Python modules."""
    names = set(zipfile.ZipFile(wheel).namelist())
    csrc = ROOT / "npu_emu" / "cabi" / "csrc"
    want = {"npu_emu/cabi/csrc/" + str(f.relative_to(csrc)) for f in csrc.rglob("*") if f.suffix in (".cpp", ".h")}
    assert want, "no C ABI sources found in the tree"
    missing = sorted(want - names)
    assert not missing, f"{wheel.name} lacks the C ABI sources {missing}"
