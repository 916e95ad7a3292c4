"""The package's layers import only downwards, and no import circle exists (docs/contributing/layout.md §2).

A module's layer is read from its path alone (the table below), so a new file falls into the layer of the folder it
is put in. Every import counts, including those inside functions; the registry's ``"module:attribute"`` strings do
not (they are resolved at run time, from the top).
"""

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (path pattern, layer), first match wins; a higher layer may import any lower one, never a higher one.
LAYERS = (
    # the errors, the dtype table, and the package marker the registry scans
    (r"npu_emu/errors\.py|npu_emu/dtype_table\.py|npu_emu/__init__\.py|kernels/__init__\.py", 0, "base"),
    # numba's options, the cache lock and the shipped-kernel loader every njit function (the codecs' too) is
    # compiled and loaded under, and the read-only view every kernel input is handed over as
    (r"dtypes/|npu_emu/device/(jit_options|cache_lock|inline_copy|inline_reuse|wrapper_passes|overload_reuse|"
     r"method_hooks|shipped_kernels|read_only|lean_compile|gc_pause)\.py", 1, "codecs"),
    (r"npu_emu/device/|npu_emu/ascendc/", 2, "device model"),
    # an op folder's device side: op_host (tiling*), op_kernel (*kernel*), and their shared device helpers
    (r"kernels/\w+/(\w*tiling\w*|\w*kernel\w*|common|accum|launch|row_quant|\w*_launch)\.py", 3, "op kernel"),
    (r"kernels/\w+/golden\w*\.py", 3, "golden"),
    (r"npu_emu/frontend/cases\.py", 7, "op tools"),
    (r"npu_emu/frontend/", 4, "front-end plumbing"),
    (r"kernels/\w+/(op|api|checks|routing|operands|v3|v4|sparse4to2|trans_quant_param|switches|weight_nz|mx|"
     r"antiquant|antiquant_msd|a4w4|a8w4|\w*api\w*)\.py|"
     r"kernels/\w+/__init__\.py|kernels/example/", 5, "op front end"),
    (r"npu_emu/ops\.py|npu_emu/aclnn\.py", 6, "public front ends"),
    # what is built on the public API: an op's CLI verbs, compile configurations, demo cases and bindings
    (r"kernels/\w+/(cli|configs|demo)\.py", 7, "op tools"),
    (r"kernels/\w+/(torch_ops|dask_chunks|onnx_nodes)\.py", 7, "op integration"),
    (r"npu_emu/(torch|dask|cabi)/|npu_emu/(onnx|torch_npu_shim|pytest_plugin)\.py", 7, "integrations"),
    (r"npu_emu/cli/", 8, "command line"),
)


def rel(path):
    return path.relative_to(ROOT).as_posix()


def layer_of(relpath):
    for pattern, level, what in LAYERS:
        if re.match(pattern, relpath):
            return level, what
    raise AssertionError(f"{relpath}: no layer; add its folder or name to LAYERS in tests/test_layering.py")


def module_name(relpath):
    parts = list(Path(relpath).with_suffix("").parts)
    if parts[0] in ("kernels", "dtypes"):
        parts = ["npu_emu"] + parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache          # read once a run: imports() consults it for every file
def sources():
    out = {}
    for folder in ("npu_emu", "kernels", "dtypes"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            out[module_name(rel(path))] = rel(path)
    return out


def imports(path):
    """Modules of this package that ``path`` imports (``from a import b``: a.b when it is a module, else a)."""
    mods = sources()
    found = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("npu_emu"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("npu_emu"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in mods else node.module)
    return {m for m in found if m in mods}


def graph():
    mods = sources()
    return {m: imports(p) for m, p in mods.items()}


def violations(edges, paths):
    bad = []
    for m, targets in edges.items():
        own, what = layer_of(paths[m])
        for t in sorted(targets):
            theirs, twhat = layer_of(paths[t])
            if theirs > own:
                bad.append(f"{paths[m]} ({what}) imports {paths[t]} ({twhat})")
    return bad


def circles(edges):
    """Strongly connected components of more than one module (Tarjan), or a module importing itself."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _parents(m):
    """A package's __init__ runs before any of its submodules: importing a.b.c imports a.b and a."""
    parts = m.split(".")
    return {".".join(parts[:i]) for i in range(2, len(parts))}


def test_every_file_has_a_layer():
    for path in sources().values():
        layer_of(path)


def test_layers_import_downwards():
    paths = sources()
    bad = violations(graph(), paths)
    assert not bad, "\n".join(bad)


def test_no_import_circle():
    edges = graph()
    paths = sources()
    # an import of a.b.c also runs a.b's __init__: count it, so a circle through a package's __init__ shows
    full = {m: set(ts) | {p for t in ts for p in _parents(t) if p in paths and p != m and not m.startswith(p + ".")}
            for m, ts in edges.items()}
    found = circles(full)
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_rules_catch_upward_imports_and_circles():
    paths = {"npu_emu.ascendc.deq": "npu_emu/ascendc/deq.py", "npu_emu.frontend.core": "npu_emu/frontend/core.py",
             "npu_emu.kernels.x.kernel": "kernels/x/kernel.py", "npu_emu.kernels.x.api": "kernels/x/api.py",
             "npu_emu.dtypes.scalar": "dtypes/scalar.py", "npu_emu.device.platforms": "npu_emu/device/platforms.py",
             "npu_emu.kernels.x.golden": "kernels/x/golden.py", "npu_emu.cli": "npu_emu/cli/__init__.py"}
    assert violations({"npu_emu.ascendc.deq": {"npu_emu.frontend.core"}}, paths)
    assert violations({"npu_emu.kernels.x.kernel": {"npu_emu.kernels.x.api"}}, paths)
    assert violations({"npu_emu.dtypes.scalar": {"npu_emu.device.platforms"}}, paths)
    assert violations({"npu_emu.kernels.x.golden": {"npu_emu.frontend.core"}}, paths)
    assert violations({"npu_emu.frontend.core": {"npu_emu.cli"}}, paths)
    assert not violations({"npu_emu.kernels.x.api": {"npu_emu.frontend.core", "npu_emu.kernels.x.kernel"}}, paths)
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_goldens_import_no_code_under_test():
    for m, p in sources().items():
        if re.search(r"/golden\w*\.py$", p):
            # another golden (the codecs' own plain-numpy reference, dtypes/golden.py) is not code under test
            bad = [t for t in imports(p) if t.startswith(("npu_emu.kernels", "npu_emu.ascendc", "npu_emu.dtypes"))
                   and not re.search(r"\.golden\w*$", t)]
            assert not bad, f"{p} imports the code under test: {bad}"
