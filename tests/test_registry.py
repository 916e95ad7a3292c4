"""One op, one folder: every front end exposes exactly the ops the registry's declarations name, and an op of
another package (an ``npu_emu.ops`` entry point) appears in them without any edit of npu-emu."""

import os
import subprocess
import sys
import textwrap

import pytest

import npu_emu.aclnn
import npu_emu.ops
from npu_emu import dtype_table
from npu_emu.frontend import registry


def _declared(kind):
    return set(registry.index(kind))


def test_every_op_folder_declares_itself():
    import pkgutil

    import npu_emu.kernels as pkg

    folders = {i.name for i in pkgutil.iter_modules(pkg.__path__) if i.ispkg} - {"example"}
    owners = set()
    for op in registry.ops().values():
        for ref in (op.cli, op.configs, op.demo, op.golden, *op.ops.values()):
            if ref and ref.startswith("npu_emu.kernels."):
                owners.add(ref.split(".")[2])
    assert owners == folders
    for op in registry.ops().values():          # each family has its docs page
        assert os.path.isfile(os.path.join(os.path.dirname(__file__), "..", "docs", op.doc_page)), op.name


def test_ops_and_aclnn_are_the_registry():
    constants = {d.torch_npu for d in dtype_table.TABLE if d.codec and d.torch_npu and d.bits != 6}
    assert set(npu_emu.ops.__all__) == _declared("ops") | constants
    assert set(npu_emu.aclnn.__all__) == _declared("aclnn") | {"aclGetRecentErrMsg"}
    for name in _declared("ops"):
        assert callable(getattr(npu_emu.ops, name)), name
    for name in _declared("aclnn"):
        assert callable(getattr(npu_emu.aclnn, name)), name


def test_cli_compile_demo_are_the_registry():
    from npu_emu import cli
    from npu_emu.cli import demo, op_configs

    commands = cli._load_commands()
    verbs = set()
    for mod in registry.cli_modules():
        verbs |= set(__import__(mod, fromlist=["COMMANDS"]).COMMANDS)
    assert set(commands) == verbs and verbs
    families = {op.name for op in registry.ops().values() if op.configs}
    assert set(op_configs.families()) == families | {"codecs"}
    assert {c.name for c in registry.configs()} == {n for n, c in op_configs.CONFIGS.items() if c.family != "codecs"}
    assert {c.key for c, _ in registry.demo_cases()} <= set(demo.BUILDERS)
    assert set(demo.BUILDERS) - {c.key for c, _ in registry.demo_cases()} == {
        "encode_float8_e4m3fn", "decode_float8_e4m3fn", "encode_hifloat8"}


def test_c_abi_onnx_dask_are_the_registry():
    import importlib

    from npu_emu.cabi import signatures

    build = importlib.import_module("npu_emu.cabi.build")     # the package exports a function of that name

    assert [op.name for op in signatures.OPS] == [f.name for f, _ in registry.c_functions()]
    wrappers = build.wrappers_text()
    for f, _ in registry.c_functions():          # the generated C: a header declaration and both phases' wrappers
        ops = [op for op in signatures.OPS if op.header == f.header]
        assert f"aclnnStatus {f.name}GetWorkspaceSize(" in build.header_text(f.header, ops)
        assert f"aclnnStatus {f.name}GetWorkspaceSize(" in wrappers and f"aclnnStatus {f.name}(void*" in wrappers
    onnx = pytest.importorskip("onnx")
    del onnx
    import npu_emu.onnx

    assert [(n.domain, n.op_type) for n in npu_emu.onnx.NODES] == [(n.domain, n.op_type)
                                                                    for n, _ in registry.onnx_nodes()]
    pytest.importorskip("dask")
    import npu_emu.dask

    assert set(npu_emu.dask.__all__) == _declared("dask") | {"RechunkWarning", "worker_environ", "local_cluster"}
    for name in _declared("dask"):
        assert callable(getattr(npu_emu.dask, name))


def test_torch_schemas_are_the_registry():
    pytest.importorskip("torch")                        # npu_emu.torch registers its ops with torch on import
    from npu_emu.torch import schemas

    assert set(schemas.TORCH_NPU_OPS) == {t.name for t, _ in registry.torch_ops() if t.torch_npu}
    assert set(schemas.NPU_EMU_OPS) == {t.name for t, _ in registry.torch_ops()}


def test_torch_namespaces_hold_the_registry():
    torch = pytest.importorskip("torch")
    import npu_emu.torch  # noqa: F401 (registers)

    for t, _ in registry.torch_ops():
        assert hasattr(torch.ops.npu_emu, t.name)
        assert hasattr(torch.ops.npu, t.name) == t.torch_npu


def test_duplicate_names_are_refused():
    a = registry.Op(name="a", ops={"f": "m:f"})
    b = registry.Op(name="b", ops={"f": "n:f"})
    with pytest.raises(registry.DeclarationError, match="'f' is declared by both a"):
        registry._check_unique([a, b])


# ---------------------------------------------------------------------------------------------------------------
# an op from another package: nothing installed but a dist-info folder with an npu_emu.ops entry point
# ---------------------------------------------------------------------------------------------------------------

_TOY = {
    "toy_op/__init__.py": "",
    "toy_op/op.py": '''
        from npu_emu.frontend.registry import Op

        OP = Op(
            name="toy_add",
            ops={"toy_add_one": "toy_op.api:toy_add_one"},
            aclnn={"aclnnToyAddOneGetWorkspaceSize": "toy_op.api:aclnnToyAddOneGetWorkspaceSize",
                   "aclnnToyAddOne": "toy_op.api:aclnnToyAddOne"},
            cli="toy_op.cli",
            configs="toy_op.configs:CONFIGS",
            doc="ops/toy_add.md",
        )
        ''',
    "toy_op/api.py": '''
        import numpy as np

        def toy_add_one(x):
            return np.asarray(x, np.float32) + np.float32(1)

        def aclnnToyAddOneGetWorkspaceSize(x, out):
            return 0, 0, ("toy", x, out)

        def aclnnToyAddOne(workspace, size, executor, stream=None):
            _, x, out = executor
            out[...] = toy_add_one(x)
            return 0
        ''',
    "toy_op/cli.py": '''
        def _add(p):
            p.add_argument("--value", type=float, default=1.0)

        def _run(a):
            from toy_op.api import toy_add_one
            print("toy", float(toy_add_one([a.value])[0]))
            return 0

        COMMANDS = {"toy_add_one": {"help": "x + 1 (a toy op of another package)", "run": (_add, _run)}}
        ''',
    "toy_op/configs.py": '''
        from npu_emu.frontend.cases import collector

        CONFIGS, config = collector()

        @config("toy_add.one", "toy_add_one of a float32 vector")
        def _one():
            from npu_emu.ops import toy_add_one
            return lambda: toy_add_one([1.0, 2.0])
        ''',
    "toy_op-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy-op\nVersion: 0.1\n",
    "toy_op-0.1.dist-info/entry_points.txt": "[npu_emu.ops]\ntoy_add = toy_op.op:OP\n",
}


def test_an_entry_point_op_appears_in_every_front_end(tmp_path):
    for rel, text in _TOY.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    script = textwrap.dedent('''
        import io, contextlib, numpy as np
        import npu_emu.ops, npu_emu.aclnn
        from npu_emu import cli
        from npu_emu.frontend import registry
        assert registry.get("toy_add").source == "toy-op", registry.get("toy_add").source
        assert "toy_add_one" in npu_emu.ops.__all__
        print("ops", npu_emu.ops.toy_add_one([1.5])[0])
        out = np.zeros(1, np.float32)
        st, ws, ex = npu_emu.aclnn.aclnnToyAddOneGetWorkspaceSize(np.array([2.0], np.float32), out)
        assert npu_emu.aclnn.aclnnToyAddOne(None, ws, ex) == 0
        print("aclnn", out[0])
        assert cli.main(["run", "toy_add_one", "--value", "4"]) == 0
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert cli.main(["compile", "--list"]) == 0
        assert "toy_add.one" in buf.getvalue(), buf.getvalue()
        print("compile-list ok")
        ''')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:4] == ["ops 2.5", "aclnn 3.0", "toy 5.0", "compile-list ok"]
