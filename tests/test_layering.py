"""The package's layers import only downwards (docs/contributing/layout.md §2).

public fronts (ops, aclnn, cli, demo) -> op fronts (kernels/<op>/api, checks, cli, ...) -> op kernels (tiling*,
*kernel*, common, accum) -> launch model, instruction layer (npu_emu.ascendc), platforms -> codecs (npu_emu.dtypes).
Goldens sit beside them and import no kernel, instruction or njit codec. Every import counts, including those
inside functions.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRONTS = ("npu_emu.frontend.core", "npu_emu.ops", "npu_emu.aclnn", "npu_emu.cli", "npu_emu.cli.demo", "npu_emu.cli.compile",
          "npu_emu.cli.op_configs", "npu_emu.dask", "npu_emu.dask.checkpoint", "npu_emu.cabi")
DEVICE = ("npu_emu.device.launch", "npu_emu.device.validate", "npu_emu.device.platforms", "npu_emu.device.tiling_data", "npu_emu.device.specialize",
          "npu_emu.device.memo", "npu_emu.device.jit_options", "npu_emu.device.cache_lock")


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] in ("kernels", "dtypes"):
        parts = ["npu_emu"] + parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path):
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("npu_emu"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("npu_emu"):
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def _under(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def is_front(name):
    parts = name.split(".")
    return _under(name, FRONTS) or (len(parts) >= 4 and parts[1] == "kernels" and not is_kernel(".".join(parts[:4])))


def is_kernel(name):
    parts = name.split(".")
    return len(parts) >= 4 and parts[1] == "kernels" and (
        re.search(r"(^|_)(tiling|kernel)($|_)", parts[3]) is not None or parts[3] in ("common", "accum"))


def layer(name):
    if _under(name, ("npu_emu.dtypes",)):
        return "codecs"
    if _under(name, ("npu_emu.goldens",)):
        return "goldens"
    if _under(name, ("npu_emu.ascendc",)) or _under(name, DEVICE):
        return "device"
    if is_kernel(name):
        return "kernel"
    return "front"


def violations(name, targets):
    own = layer(name)
    bad = []
    for t in sorted(targets):
        if own in ("kernel", "device", "codecs") and is_front(t):
            bad.append(f"{name} ({own}) imports the front end {t}")
        elif own == "device" and _under(t, ("npu_emu.kernels",)):
            bad.append(f"{name} (device model) imports the op {t}")
        elif own == "codecs" and not _under(t, ("npu_emu.dtypes", "npu_emu.errors", "npu_emu.device.jit_options")):
            bad.append(f"{name} (codecs) imports {t}")
        elif own == "goldens" and _under(t, ("npu_emu.kernels", "npu_emu.ascendc", "npu_emu.dtypes")):
            bad.append(f"{name} (golden) imports the code under test {t}")
    return bad


def test_layers_import_downwards():
    bad = []
    for folder in ("npu_emu", "kernels", "dtypes"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            bad += violations(module_name(path), imports(path))
    assert not bad, "\n".join(bad)


def test_the_rules_catch_upward_imports():
    assert violations("npu_emu.ascendc.deq", {"npu_emu.frontend.as_array"})
    assert violations("npu_emu.kernels.sign_bits.kernel", {"npu_emu.frontend.GmOverrun"})
    assert violations("npu_emu.kernels.mx_quant.tiling", {"npu_emu.kernels.mx_quant.api"})
    assert violations("npu_emu.device.launch", {"npu_emu.kernels.sign_bits.kernel"})
    assert violations("npu_emu.kernels.mx_quant.golden", {"npu_emu.dtypes.scalar"})
    assert violations("npu_emu.dtypes.scalar", {"npu_emu.device.platforms"})
    assert not violations("npu_emu.kernels.sign_bits.api", {"npu_emu.frontend.core", "npu_emu.kernels.sign_bits.kernel"})
    assert not violations("npu_emu.kernels.data_copy_dequant.kernel", {"npu_emu.ascendc.deq_kernels.deq8_element"})
