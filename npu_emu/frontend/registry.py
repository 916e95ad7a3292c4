"""The op registry: every front end (``npu_emu.ops``, ``npu_emu.aclnn``, the CLI, ``npu-emu demo`` and
``compile``, ``torch.ops.npu`` / ``npu_emu::``, the C ABI, ONNX nodes, Dask) is built from the op declarations
collected here, and none keeps a list of its own.

An op family declares itself once, in ``kernels/<op>/op.py``, as CANN declares an op in its ``op_host/*_def.cpp``:
a module-level ``OP = Op(...)`` of plain data (names, schemas, C signatures, and ``"module:attribute"`` strings for
everything that is code). Declarations come from two places:

* every ``npu_emu/kernels/<op>/op.py`` of this package;
* the ``npu_emu.ops`` entry-point group of any installed distribution, each entry point naming an :class:`Op`
  (``[project.entry-points."npu_emu.ops"] my_op = "my_pkg.my_op.op:OP"``), so an op from another package appears
  in every front end without touching npu-emu (docs/contributing/writing_a_kernel.md).

Discovery imports the declarations only: no kernel, no numpy, no numba. The code an entry names is imported when
that entry is first used (:func:`load`).
"""

import importlib
import threading
from dataclasses import dataclass, field

ENTRY_POINT_GROUP = "npu_emu.ops"


@dataclass(frozen=True)
class TorchOp:
    """One ``torch.library`` operator. ``schema``: op-plugin's string for a torch_npu op, verbatim (its name is the
    op name); ``kernel`` / ``fake``: ``"module:attribute"`` of the CPU kernel and the fake (shape) kernel, both
    taking the schema's arguments. ``torch_npu``: registered as ``torch.ops.npu.<name>`` too (otherwise only under
    ``torch.ops.npu_emu``)."""

    schema: str
    kernel: str
    fake: str
    torch_npu: bool = True

    @property
    def name(self):
        return self.schema.split("(", 1)[0].strip()


@dataclass(frozen=True)
class CFunction:
    """One aclnn entry point of the C ABI: ``name`` is the second phase (``aclnnXxx``; the first is
    ``aclnnXxxGetWorkspaceSize``), ``header`` its ``aclnnop/`` header, ``params`` the first phase's parameters in
    CANN's order as ``"name:kind[:dtype_kw][:nz][:storage]"`` (kinds and flags: npu_emu/cabi/signatures.py)."""

    name: str
    header: str
    params: tuple


@dataclass(frozen=True)
class OnnxNode:
    """An ONNX node type that runs the op: ``call(*inputs, **attributes)`` returns a tuple of arrays;
    ``attributes``: name -> default (``None``: required on the node); ``op``: the ``npu_emu.ops`` function it runs."""

    op_type: str
    domain: str
    inputs: tuple
    call: str
    op: str
    attributes: tuple = ()   # ((name, default), ...)


@dataclass(frozen=True)
class Op:
    """An op family's declaration (``kernels/<op>/op.py``: ``OP = Op(...)``). Every ``str`` naming code is
    ``"module:attribute"`` (``"module"`` alone for ``cli`` and ``golden``)."""

    name: str                     # the family: `npu-emu compile --ops NAME`, docs/ops/NAME.md unless `doc` says
    ops: dict                     # npu_emu.ops name -> "module:attribute"
    aclnn: dict = field(default_factory=dict)      # npu_emu.aclnn name -> "module:attribute"
    torch: tuple = ()             # TorchOp, ...
    cabi: tuple = ()              # CFunction, ...
    cli: str = None               # module with COMMANDS = {verb: (add_parser(sub), run(args))}
    configs: str = None           # -> iterable of Config: the calls `npu-emu compile` makes
    demo: str = None              # -> iterable of DemoCase: the rows of `npu-emu demo`
    golden: str = None            # module: the independent numpy reference
    onnx: tuple = ()              # OnnxNode, ...
    dask: dict = field(default_factory=dict)       # npu_emu.dask name -> "module:attribute"
    schedule_group: str = None    # ops whose kernels share njit functions compile in one `--jobs` worker
    compile_seconds: int = 10     # cold-compile hint: `--jobs` starts the longest groups first
    doc: str = None               # docs page, relative to docs/ (default ops/<name>.md)
    source: str = "npu_emu"       # the distribution that declared it (filled in by discovery)

    @property
    def doc_page(self):
        return self.doc or f"ops/{self.name}.md"


@dataclass(frozen=True)
class Config:
    """One way of calling an op that makes numba compile something of its own (a dst format, an input dtype, a
    mode). ``build() -> call``: builds small inputs (numpy only) and returns the zero-argument call."""

    name: str                     # "<family>.<variant>", unique
    help: str
    build: object

    @property
    def family(self):
        return self.name.split(".", 1)[0]

    def call(self):
        """Build the inputs and run the call once; returns the result."""
        return self.build()()


@dataclass(frozen=True)
class DemoCase:
    """One row of ``npu-emu demo``: ``build(dims, rng) -> npu_emu.frontend.cases.Case`` at ``production`` or
    ``small`` dims; ``key`` names it on the command line (``npu-emu demo --only KEY``). ``tiny``: dims that take
    the same code paths in milliseconds, at which the test suite runs every case."""

    build: object
    production: tuple
    small: tuple
    help: str
    key: str = ""
    tiny: tuple = ()


def load(ref):
    """The object a ``"module:attribute"`` string names (``"module"`` alone: the module)."""
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class DeclarationError(RuntimeError):
    """Two declarations claim one name, or a declaration is not an Op."""


_LOCK = threading.Lock()
_OPS = None


def _builtin():
    """This package's declarations: each ``kernels/<op>/op.py`` read as a file, as CANN reads an op's ``*_def.cpp``,
    without importing the op's package (so that discovering the ops loads nothing of theirs)."""
    import importlib.util
    import os

    found = []
    spec = importlib.util.find_spec("npu_emu.kernels")        # the folder, without running its __init__
    if spec is None:
        import npu_emu

        raise DeclarationError(f"npu_emu.kernels is not importable next to {npu_emu.__file__}: a source checkout's "
                               f"npu_emu/ folder (which has no kernels/ under it) is shadowing the installed package; "
                               f"run from another directory, or install the checkout (pip install -e .)")
    for folder in spec.submodule_search_locations:
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name, "op.py")
            if not os.path.isfile(path):
                continue      # not an op folder, or one without a declaration (the writing-a-kernel example)
            loader_spec = importlib.util.spec_from_file_location(f"npu_emu.kernels.{name}.op (declaration)", path)
            mod = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(mod)
            found.extend(getattr(mod, "OPS", None) or (mod.OP,))   # a folder may hold several families
    return found


def _external():
    from importlib.metadata import entry_points

    found = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        op = ep.load()
        if not isinstance(op, Op):
            raise DeclarationError(f"entry point {ep.name} = {ep.value} (group {ENTRY_POINT_GROUP}) names a "
                                   f"{type(op).__name__}; it must name an npu_emu.frontend.registry.Op")
        dist = getattr(ep, "dist", None)
        found.append(_with_source(op, dist.name if dist is not None else ep.value.split(".", 1)[0]))
    return found


def _with_source(op, source):
    from dataclasses import replace

    return replace(op, source=source)


def _check_unique(decls):
    seen = {}
    for op in decls:
        names = [("family", op.name), *(("ops", n) for n in op.ops), *(("aclnn", n) for n in op.aclnn),
                 *(("torch", t.name) for t in op.torch), *(("dask", n) for n in op.dask)]
        for kind, n in names:
            other = seen.setdefault((kind, n), op)
            if other is not op:
                raise DeclarationError(f"{kind} name {n!r} is declared by both {other.name} ({other.source}) and "
                                       f"{op.name} ({op.source}); rename one of them")


def ops():
    """{family name: Op}: this package's op folders, then the entry-point group's, each in name order."""
    global _OPS
    if _OPS is None:
        with _LOCK:
            if _OPS is None:
                decls = _builtin() + _external()
                _check_unique(decls)
                _OPS = {op.name: op for op in decls}
    return _OPS


def get(name):
    """The declaration of op family ``name``; KeyError lists the known ones."""
    try:
        return ops()[name]
    except KeyError:
        raise KeyError(f"unknown op family {name!r}; known: {', '.join(ops())}") from None


def index(kind):
    """{public name: "module:attribute"} over every declaration, for ``kind`` "ops", "aclnn" or "dask"."""
    out = {}
    for op in ops().values():
        out.update(getattr(op, kind))
    return out


def torch_ops():
    """[(TorchOp, Op)] in declaration order."""
    return [(t, op) for op in ops().values() for t in op.torch]


def c_functions():
    """[(CFunction, Op)] in declaration order."""
    return [(f, op) for op in ops().values() for f in op.cabi]


def onnx_nodes():
    return [(n, op) for op in ops().values() for n in op.onnx]


def _by_ref(attr):
    """{ref: [Op, ...]} for the declarations naming code through ``attr``, in declaration order (families of one
    folder may share one module)."""
    out = {}
    for op in ops().values():
        ref = getattr(op, attr)
        if ref:
            out.setdefault(ref, []).append(op)
    return out


def configs():
    """[Config] of every declaration, in declaration order (built when first asked for)."""
    out = []
    for ref, owners in _by_ref("configs").items():
        names = {op.name for op in owners}
        for c in load(ref):
            if c.family not in names:
                raise DeclarationError(f"configuration {c.name} ({ref}) must be named <family>.<variant> with a "
                                       f"family declared with it: {', '.join(sorted(names))}")
            out.append(c)
    return out


def demo_cases():
    """[(DemoCase, Op)] in declaration order (the first family that names a shared module owns its cases)."""
    return [(c, owners[0]) for ref, owners in _by_ref("demo").items() for c in load(ref)]


def cli_modules():
    return list(_by_ref("cli"))


def reset():
    """Forget what discovery found (tests that install an entry point at run time)."""
    global _OPS
    with _LOCK:
        _OPS = None
