"""Run ONNX models that carry Ascend custom nodes on the CPU, with the device's bits (docs/integrations/onnx.md).

Models reach Ascend devices through ONNX with nodes no ONNX runtime knows: the Kirin sample's ``GatherDequantInt8``
(converted by ATC for the device) and the ``npu``-domain nodes torch_npu's exporter writes for its own ops. This
module runs such a model with ``onnx.reference.ReferenceEvaluator``: every node of :data:`NODES` is an ``OpRun``
that calls the op through ``npu_emu.ops`` (with the op's checks), every other node runs on the reference
implementation. Needs the ``onnx`` package (``pip install 'npu-emu[onnx]'``); ``import npu_emu`` does not import it.

A node is declared once, by its op (kernels/<op>/op.py: OnnxNode), saying how it maps to the op: its op_type and domain, its inputs in the exporter's
order, its attributes with their defaults, and the call. An input or attribute the op rejects raises the op's
``AclnnError`` (CANN status code), its message prefixed with the node's name.

Why not onnxruntime: its Python custom ops (onnxruntime-extensions) cannot take or return float16 or bfloat16 and
pass data through Python lists, and rewriting the node into standard ops (Gather -> Cast -> Sub -> Mul) is not
exact on its CPU provider, which computes float16 chains in float32 (docs/integrations/onnx.md §3).
"""

from dataclasses import dataclass, field

import numpy as np

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

__all__ = ["NODES", "NodeSpec", "evaluator", "run", "check", "load"]

REQUIRED = object()


@dataclass(frozen=True)
class NodeSpec:
    """One emulated node: ``call(*inputs, **attributes)`` returns the node's outputs as a tuple of arrays."""

    op_type: str
    domain: str
    inputs: tuple
    attributes: dict = field(default_factory=dict)   # name -> default (REQUIRED: must be on the node)
    call: object = None
    op: str = ""                                      # the npu_emu.ops function it runs (for `check`)


def _spec(node):
    """The NodeSpec of a declared node (kernels/<op>/op.py: OnnxNode)."""
    from npu_emu.frontend import registry

    attributes = {name: REQUIRED if default is None else default for name, default in node.attributes}
    return NodeSpec(node.op_type, node.domain, tuple(node.inputs), attributes, registry.load(node.call), node.op)


def _nodes():
    from npu_emu.frontend import registry

    return tuple(_spec(n) for n, _ in registry.onnx_nodes())


NODES = _nodes()

_BY_KEY = {(spec.domain, spec.op_type): spec for spec in NODES}


def _node_name(node):
    return node.name or f"<unnamed {node.op_type}>"


def _call(spec, node, inputs, attributes):
    where = f"node {_node_name(node)!r} ({spec.domain + '::' if spec.domain else ''}{spec.op_type})"
    unknown = sorted(set(attributes) - set(spec.attributes))
    if unknown:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{where}: attribute(s) {unknown} are not known for this node; "
                                                  f"known: {sorted(spec.attributes) or 'none'}")
    kwargs = {}
    for name, default in spec.attributes.items():
        if name in attributes:
            kwargs[name] = attributes[name]
        elif default is REQUIRED:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{where}: attribute {name!r} is missing")
        else:
            kwargs[name] = default
    if len(inputs) != len(spec.inputs):
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{where}: {len(inputs)} input(s), expected {len(spec.inputs)} "
                                                  f"({', '.join(spec.inputs)})")
    try:
        return spec.call(*inputs, **kwargs)
    except AclnnError as e:
        raise AclnnError(e.status, f"{where}: {e.message}") from None


def _op_classes():
    """One onnx.reference OpRun class per entry of NODES."""
    from onnx.reference.op_run import OpRun

    classes = []
    for spec in NODES:
        def _run(self, *inputs, _spec=spec, **attributes):
            return _call(_spec, self.onnx_node, inputs, attributes)

        # the evaluator finds a new op by (op_domain, class name): the class is named after the op_type
        classes.append(type(spec.op_type, (OpRun,), {"op_domain": spec.domain, "_run": _run, "__module__": __name__}))
    return classes


def load(model):
    """An onnx.ModelProto from a ModelProto, a path or bytes."""
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_from_string(bytes(model))
        return onnx.load(str(model))
    except DecodeError as e:
        what = "the bytes given" if isinstance(model, (bytes, bytearray)) else str(model)
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} is not an ONNX model ({e})") from None


def evaluator(model, **kwargs):
    """A ReferenceEvaluator of ``model`` whose Ascend custom nodes run on npu-emu. ``kwargs`` go to the evaluator.

    A model built by hand may use the ``npu`` or ``custom`` domain without importing it (torch's exporter always
    does); the evaluator needs the import, so a copy of the model gets it (version 1)."""
    from onnx.reference import ReferenceEvaluator

    model = load(model)
    have = {o.domain for o in model.opset_import}
    need = {node.domain for node in model.graph.node if (node.domain, node.op_type) in _BY_KEY} - have
    if need:
        import onnx

        model = onnx.ModelProto.FromString(model.SerializeToString())
        for domain in sorted(need):
            model.opset_import.append(onnx.helper.make_opsetid(domain, 1))
    return ReferenceEvaluator(model, new_ops=_op_classes(), **kwargs)


def run(model, feeds, output_names=None):
    """Run ``model`` on ``feeds`` (input name -> array); returns {output name: array}."""
    model = load(model)
    problems = [row for row in check(model) if row["status"] == "unsupported"]
    if problems:
        row = problems[0]
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"node {row['name']!r} ({row['node']}) is neither an npu-emu node "
                                                  f"nor a standard ONNX one; `npu-emu onnx check` lists the nodes")
    ev = evaluator(model)
    names = list(output_names) if output_names else [o.name for o in model.graph.output]
    feeds = {k: np.asarray(v) for k, v in feeds.items()}
    return dict(zip(names, ev.run(names, feeds)))


def check(model):
    """The model's nodes in order, each with its status: "emulated" (an npu-emu op), "standard" (the ONNX
    reference implementation runs it) or "unsupported"."""
    from onnx.defs import has

    model = load(model)
    rows = []
    for node in model.graph.node:
        domain = node.domain if node.domain not in ("ai.onnx",) else ""
        spec = _BY_KEY.get((domain, node.op_type))
        if spec is not None:
            status, detail = "emulated", f"npu_emu.ops.{spec.op}"
        elif domain == "" and has(node.op_type):
            status, detail = "standard", "onnx reference implementation"
        elif domain == "ai.onnx.ml" and has(node.op_type, domain):
            status, detail = "standard", "onnx reference implementation (ai.onnx.ml)"
        else:
            status, detail = "unsupported", "no implementation"
        rows.append({"name": _node_name(node), "node": f"{domain + '::' if domain else ''}{node.op_type}",
                     "status": status, "runs": detail})
    return rows


# ---------------------------------------------------------------------------------------------------------------
# npu-emu onnx run | check
# ---------------------------------------------------------------------------------------------------------------

def _input_types(model):
    """{graph input name: (numpy dtype, shape with None for a symbolic dim)}, initializers excluded."""
    from onnx.helper import tensor_dtype_to_np_dtype

    inits = {t.name for t in model.graph.initializer}
    types = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
        types[vi.name] = (np.dtype(tensor_dtype_to_np_dtype(tt.elem_type)), dims)
    return types


def cli_run(model_path, inputs, shapes, out_dir):
    """``npu-emu onnx run``: inputs {name: .bin path}, shapes {name: tuple} for symbolic dims; writes
    OUT_DIR/<output>.bin and manifest.json (read by ``npu-emu compare``). Returns the written paths."""
    import os

    model = load(model_path)
    types = _input_types(model)
    unknown = sorted(set(inputs) - set(types))
    missing = sorted(set(types) - set(inputs))
    if unknown or missing:
        raise SystemExit(f"npu-emu: the model's inputs are {sorted(types)}; "
                         + (f"{unknown} are not among them" if unknown else f"give {missing} with --input NAME=FILE"))
    feeds = {}
    for name, path in inputs.items():
        dtype, dims = types[name]
        shape = shapes.get(name, dims)
        if shape is None or any(d is None for d in shape):
            raise SystemExit(f"npu-emu: input {name!r} has symbolic dimensions {dims}; give its shape with "
                             f"--shape {name}=D0,D1,...")
        try:
            data = np.fromfile(path, dtype=dtype)
        except FileNotFoundError:
            raise SystemExit(f"npu-emu: input file {path} does not exist; check the path") from None
        want = int(np.prod(shape))
        if data.size != want:
            raise SystemExit(f"npu-emu: {path} holds {data.size} {dtype} elements, input {name!r} of shape "
                             f"{tuple(shape)} needs {want}")
        feeds[name] = data.reshape(shape)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise SystemExit(f"npu-emu: --output {out_dir} is a file; give a folder (it is created if missing)")
    from npu_emu.frontend.binfile import write_case

    results = run(model, feeds)
    os.makedirs(out_dir, exist_ok=True)           # as other tools do: a missing folder (and its parents) is made
    outputs = {name: (f"{name}.bin", arr) for name, arr in results.items()}
    write_case(out_dir, {"model": os.path.basename(str(model_path))}, {}, outputs)
    return [os.path.join(out_dir, fname) for fname, _ in outputs.values()]


def cli_check(model_path):
    """``npu-emu onnx check``: the node table as text lines, and whether every node can run."""
    model = load(model_path)
    rows = check(model)
    width = max([len(r["name"]) for r in rows] + [4])
    kind = max([len(r["node"]) for r in rows] + [4])
    lines = [f"{'node':{width}s}  {'type':{kind}s}  status       runs on"]
    lines += [f"{r['name']:{width}s}  {r['node']:{kind}s}  {r['status']:11s}  {r['runs']}" for r in rows]
    bad = [r for r in rows if r["status"] == "unsupported"]
    counts = {s: sum(r["status"] == s for r in rows) for s in ("emulated", "standard", "unsupported")}
    lines.append(f"{len(rows)} node{'' if len(rows) == 1 else 's'}: {counts['emulated']} emulated by npu-emu, "
                 f"{counts['standard']} standard, {counts['unsupported']} unsupported"
                 + ("" if bad else "; the model runs with `npu-emu onnx run`"))
    return lines, not bad
