"""Package discovery for the package-dir mapping kernels/ -> npu_emu.kernels, dtypes/ -> npu_emu.dtypes, and the
build switch that ships compiled kernels in the wheel.

All metadata lives in pyproject.toml; setuptools' static ``packages`` list cannot glob mapped folders.

``NPU_EMU_BUILD_KERNELS=1 pip wheel --no-deps -w dist .`` compiles every ``npu-emu compile`` configuration for a
portable x86-64 level (x86-64-v3) into the wheel (npu_emu/_kernel_cache, read by npu_emu/device/shipped_kernels.py), so its
first calls compile nothing. The compile runs in the Python that runs pip, with the numba, numpy and ml_dtypes
installed there (pip's isolated build environment has none of them): install npu-emu's dependencies first. The
cache files are tied to that numba and Python version; elsewhere calls compile as usual.
"""
import os
import shutil
import subprocess
import sys

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py


def _mapped(folder, prefix):
    return [prefix] + [f"{prefix}.{p}" for p in find_packages(folder)]


packages = (
    find_packages(include=["npu_emu", "npu_emu.*"])
    + _mapped("kernels", "npu_emu.kernels")
    + _mapped("dtypes", "npu_emu.dtypes")
)


class BuildPyWithKernels(build_py):
    """build_py, then (NPU_EMU_BUILD_KERNELS=1) the kernels compiled into build_lib/npu_emu/_kernel_cache."""

    def run(self):
        super().run()
        pkg = os.path.join(self.build_lib, "npu_emu")
        bundle = os.path.join(pkg, "_kernel_cache")
        shutil.rmtree(bundle, ignore_errors=True)   # a kernels bundle of an earlier build never leaks into this one
        if os.environ.get("NPU_EMU_BUILD_KERNELS", "0").strip() in ("", "0"):
            return
        # pip runs this in an isolated environment (PYTHONPATH, PYTHONNOUSERSITE): the compile runs in pip's own
        # Python without them, i.e. with the packages installed where the wheel will be installed
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
        env["PYTHONPATH"] = os.path.abspath(self.build_lib)
        jobs = os.environ.get("NPU_EMU_BUILD_JOBS", "")
        rc = subprocess.call([sys.executable, "-m", "npu_emu.cli.compile", "--bundle", os.path.abspath(pkg)]
                             + ([jobs] if jobs else []), env=env, cwd=os.path.abspath(self.build_lib))
        if rc != 0:
            raise SystemExit(f"NPU_EMU_BUILD_KERNELS=1: compiling the kernels failed (exit {rc}); the Python running "
                             "pip needs npu-emu's dependencies (numba, numpy, ml_dtypes, tqdm) installed")


setup(packages=packages, cmdclass={"build_py": BuildPyWithKernels})
