"""Package discovery for the package-dir mapping kernels/ -> npu_emu.kernels, dtypes/ -> npu_emu.dtypes.

All metadata lives in pyproject.toml; setuptools' static ``packages`` list cannot glob mapped folders.
"""
from setuptools import find_packages, setup


def _mapped(folder, prefix):
    return [prefix] + [f"{prefix}.{p}" for p in find_packages(folder)]


packages = (
    find_packages(include=["npu_emu", "npu_emu.*"])
    + _mapped("kernels", "npu_emu.kernels")
    + _mapped("dtypes", "npu_emu.dtypes")
)

setup(packages=packages)
