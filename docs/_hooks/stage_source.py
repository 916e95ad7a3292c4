"""mkdocs hook: let mkdocstrings read the package as it installs, from the source tree.

setuptools maps the folders ``kernels/`` and ``dtypes/`` to ``npu_emu.kernels`` and ``npu_emu.dtypes``
(pyproject.toml). An editable install resolves that mapping with an import hook, which griffe's static analysis
cannot follow, so ``::: npu_emu.kernels...`` would not be found there. Before the build, this hook stages
``build/docs-src/npu_emu/`` as the installed layout (symlinks into the source tree, nothing copied) and
mkdocs.yml points the Python handler at it. The same tree serves editable and wheel installs alike.
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGE = ROOT / "build" / "docs-src"
MAPPED = {"kernels": ROOT / "kernels", "dtypes": ROOT / "dtypes"}


def _link(target, link):
    if link.is_symlink() and Path(os.readlink(link)) == target:
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def on_startup(**kwargs):
    pkg = STAGE / "npu_emu"
    pkg.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p for p in (ROOT / "npu_emu").iterdir() if p.name != "__pycache__"}
    wanted.update(MAPPED)
    for stale in pkg.iterdir():
        if stale.name not in wanted:
            stale.unlink()
    for name, target in wanted.items():
        _link(target, pkg / name)
