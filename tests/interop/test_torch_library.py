"""npu_emu.torch: op-plugin's schemas under torch.ops.npu (and our own under torch.ops.npu_emu) with CPU kernels
that are npu_emu.ops, fake kernels for tracing, and coexistence with a real torch_npu.

opcheck runs torch's four registration checks with the real kernels; compiled graphs and exported programs are
compared with eager calls bit for bit (opcheck itself compares with tolerances); the coexistence cases run in
subprocesses against a dummy ``torch_npu`` package written to a temporary directory.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import npu_emu.ops


@pytest.fixture(scope="module")
def nt(torch):
    import npu_emu.torch

    return npu_emu.torch


def _gen(torch, seed):
    return torch.Generator().manual_seed(seed)


# one small, valid call per op: (op name, args, kwargs)
def _samples(torch):
    g = _gen(torch, 0)
    x_bf = torch.randn(4, 64, generator=g).to(torch.bfloat16)
    y8, s8 = npu_emu.ops.npu_dynamic_mx_quant(x_bf, dst_type=24)
    y4, s4 = npu_emu.ops.npu_dynamic_mx_quant(x_bf, dst_type=296)
    x1 = torch.randint(-128, 128, (8, 32), dtype=torch.int8, generator=g)
    w = torch.randint(-128, 128, (16, 32), dtype=torch.int8, generator=g)
    scale = torch.rand(16, generator=g) * 0.01 + 0.001
    pertoken = torch.rand(8, generator=g) + 0.5
    word = int(np.float32(2.0 ** -7).view(np.uint32)) | (1 << 46)
    return {
        "npu_sign_bits_pack": ((torch.randn(64, generator=g), 2), {}),
        "npu_sign_bits_unpack": ((torch.randint(0, 256, (16,), dtype=torch.uint8, generator=g), 2, torch.float16), {}),
        "npu_dynamic_mx_quant": ((x_bf,), {"dst_type": torch.float8_e4m3fn}),
        "npu_grouped_dynamic_mx_quant": (
            (torch.randn(64, 32, generator=g).half(), torch.tensor([32, 64], dtype=torch.int32)), {"dst_type": 23}),
        "npu_quant_matmul": ((x1, w.t(), scale), {"pertoken_scale": pertoken, "output_dtype": torch.bfloat16}),
        "npu_trans_quant_param": ((scale,), {}),
        "npu_anti_mx_quant": ((y8, s8), {"dst_type": torch.bfloat16, "src_type": torch.float8_e4m3fn}),
        "npu_anti_mx_quant_fp4": ((y4, s4), {"dst_type": torch.float16, "src_type": 296}),
        "gather_dequant_int8": ((torch.randint(0, 256, (10, 32), dtype=torch.uint8, generator=g),
                                 torch.tensor([[3, 0, 9]], dtype=torch.int32),
                                 (torch.rand(10, generator=g) * 0.01).half(),
                                 (torch.rand(10, generator=g) * 255).half()), {}),
        "data_copy_dequant": ((torch.randint(-5000, 5000, (4, 16), dtype=torch.int32, generator=g), word), {}),
    }


def _op_name(sample):
    return sample.removesuffix("_fp4")


def _bits(t):
    import torch

    t = t.detach().contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _same_bits(a, b):
    import torch

    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_bits(x, y) for x, y in zip(a, b))
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(_bits(a), _bits(b))


# ---------------------------------------------------------------------------------------------------------------
# registration: schemas, names, dtype codes
# ---------------------------------------------------------------------------------------------------------------

def test_registered_schemas_are_op_plugins(torch, nt):
    from npu_emu.torch.schemas import NPU_EMU_SCHEMAS, TORCH_NPU_SCHEMAS

    assert nt.TORCH_NPU_OPS == tuple(TORCH_NPU_SCHEMAS) and len(nt.TORCH_NPU_OPS) == 14
    assert len(nt.OP_PLUGIN_VERSION) == 40 and nt.register() is nt.STATUS          # idempotent
    assert nt.STATUS == {name: "defined" for name in nt.TORCH_NPU_OPS}              # no torch_npu here
    for ns, schemas in (("npu", TORCH_NPU_SCHEMAS), ("npu_emu", NPU_EMU_SCHEMAS)):
        for name, schema in schemas.items():
            live = getattr(getattr(torch.ops, ns), name).default._schema
            assert str(live) == str(torch._C.parse_schema(f"{ns}::{schema}")), name
    # torch_npu's live name for npu_sign_bits_pack's first argument (the yaml says self)
    assert torch.ops.npu.npu_sign_bits_pack.default._schema.arguments[0].name == "input"


def test_dtype_codes(torch, nt):
    # the codes torch_npu callers' dtypes arrive as (c10::ScalarType) and torch_npu's own constants
    pinned = {torch.uint8: 0, torch.int8: 1, torch.int32: 3, torch.float16: 5, torch.float32: 6, torch.bfloat16: 15,
              torch.float8_e5m2: 23, torch.float8_e4m3fn: 24, torch.float8_e8m0fnu: 44}
    assert {d: nt.scalar_type_code(d) for d in pinned} == pinned
    assert all(nt.dtype_arg(code, "t") is d for d, code in pinned.items())
    assert [nt.dtype_arg(c, "t") for c in (290, 292, 293, 296, 285)] == \
        ["hifloat8", "float8_e4m3fn", "float8_e8m0", "float4_e2m1", "int4"]
    # torch_npu.bfloat16 / float16 / int8 (aclDataType + 256) are the torch dtypes
    assert [nt.dtype_arg(c, "t") for c in (283, 257, 258)] == [torch.bfloat16, torch.float16, torch.int8]
    assert nt.dtype_arg(None, "t") is None and nt.dtype_arg(torch.float16, "t") is torch.float16
    with pytest.raises(npu_emu.AclnnError, match="output_dtype=250 is neither"):
        nt.dtype_arg(250, "output_dtype")


def test_int_slots_take_torch_dtypes_and_codes(torch, nt):
    (x1, w, scale), kw = _samples(torch)["npu_quant_matmul"]
    pertoken = kw["pertoken_scale"]
    want = npu_emu.ops.npu_quant_matmul(x1, w, scale, pertoken_scale=pertoken, output_dtype=torch.bfloat16)
    for out in (torch.bfloat16, 15):
        got = torch.ops.npu.npu_quant_matmul(x1, w, scale, pertoken_scale=pertoken, output_dtype=out)
        assert _same_bits(got, want)
    # default output int8, as torch_npu (a float32 scale is packed by npu_trans_quant_param first)
    assert torch.ops.npu.npu_quant_matmul(x1, w, scale).dtype == torch.int8
    with pytest.raises(npu_emu.AclnnError, match="x1_dtype=250"):
        torch.ops.npu.npu_quant_matmul(x1, w, scale, x1_dtype=250)


def test_eager_results_are_npu_emu_ops(torch, nt):
    for sample, (args, kwargs) in _samples(torch).items():
        name = _op_name(sample)
        fn = getattr(npu_emu.ops, name, None)
        for ns in ("npu", "npu_emu"):
            op = getattr(getattr(torch.ops, ns), name, None)
            if op is None:
                continue
            got = op(*args, **kwargs)
            if name == "npu_anti_mx_quant":
                continue                                  # checked against mx_dequantize below
            assert _same_bits(got, fn(*args, **{k: (nt.dtype_arg(v, k) if k.endswith("dtype") else v)
                                                  for k, v in kwargs.items()})), (ns, sample)


# ---------------------------------------------------------------------------------------------------------------
# npu_anti_mx_quant: AntiMxQuant (hicann/ops-nn), on top of mx_dequantize
# ---------------------------------------------------------------------------------------------------------------

def test_mxfp8_pipeline_on_the_950(torch, nt):
    # vLLM-Ascend's w8a8_mxfp8: MXFP8 activations and weights, then the MX matmul; a 950 op pair, so the emulated
    # device is named once for both (the matmul's own default is the A2 910B2, which has no MX matmul)
    nt.set_soc("ascend950pr")
    try:
        g = torch.Generator().manual_seed(7)
        x = torch.randn(4, 64, generator=g).to(torch.bfloat16)
        w = torch.randn(16, 64, generator=g).to(torch.bfloat16)
        qx, sx = torch.ops.npu.npu_dynamic_mx_quant(x, dst_type=torch.float8_e4m3fn)
        qw, sw = torch.ops.npu.npu_dynamic_mx_quant(w, dst_type=torch.float8_e4m3fn)
        # x2 as a transposed view of the (n, k) weight, its scale as the matching view (as vLLM-Ascend passes them)
        y = torch.ops.npu.npu_quant_matmul(qx, qw.t(), sw.transpose(0, 1), pertoken_scale=sx,
                                           output_dtype=torch.bfloat16, scale_dtype=293, pertoken_scale_dtype=293,
                                           group_sizes=[1, 1, 32])
    finally:
        nt.set_soc(None)
    want = npu_emu.ops.npu_quant_matmul(qx, qw.t(), sw.transpose(0, 1), pertoken_scale=sx, output_dtype=torch.bfloat16,
                                        scale_dtype="float8_e8m0", pertoken_scale_dtype="float8_e8m0",
                                        group_sizes=[1, 1, 32], soc="ascend950pr")
    assert y.shape == (4, 16) and torch.equal(y.view(torch.int16), want.view(torch.int16))
    with pytest.raises(npu_emu.AclnnError, match="unknown soc"):
        nt.set_soc("ascend9999")


def test_anti_mx_quant_aclnn_doc_example(torch, nt):
    # aclnnAntiMxQuant.md example: x e4m3fn bits {0, 72, 96, 120}, mxscale {128, 0} -> bf16 {0, 16640, 17024, 17408}
    x = torch.tensor([[0, 72, 96, 120]], dtype=torch.uint8).view(torch.float8_e4m3fn)
    s = torch.tensor([[[128, 0]]], dtype=torch.uint8)
    y = torch.ops.npu.npu_anti_mx_quant(x, s)                      # schema defaults: dst bf16, src float8_e4m3fn
    assert y.dtype == torch.bfloat16 and y.view(torch.int16).tolist() == [[0, 16640, 17024, 17408]]


@pytest.mark.parametrize("sample", ["npu_anti_mx_quant", "npu_anti_mx_quant_fp4"])
def test_anti_mx_quant_is_mx_dequantize_rounded_once(torch, nt, sample):
    (x, s), kw = _samples(torch)[sample]
    src = {296: "float4_e2m1"}.get(kw["src_type"], "float8_e4m3fn")
    want = torch.from_numpy(npu_emu.ops.mx_dequantize(x, s, dst_type=src))
    got32 = torch.ops.npu.npu_anti_mx_quant(x, s, dst_type=torch.float32, src_type=kw["src_type"])
    assert got32.shape == want.shape and torch.equal(got32.view(torch.int32), want.view(torch.int32))
    got = torch.ops.npu.npu_anti_mx_quant(x, s, **kw)
    assert _same_bits(got, want.to(nt.dtype_arg(kw["dst_type"], "dst_type")))


def test_anti_mx_quant_rejections(torch, nt):
    (x, s), _ = _samples(torch)["npu_anti_mx_quant"]
    for kwargs, match in (({"axis": 0}, "only the last axis"), ({"dst_type": torch.int8}, "y must be"),
                          ({"src_type": 23}, "src_type 23 says float8_e5m2"), ({"src_type": 296}, "packed in uint8")):
        with pytest.raises(npu_emu.AclnnError, match=match):
            torch.ops.npu.npu_anti_mx_quant(x, s, **kwargs)
    with pytest.raises(npu_emu.AclnnError, match="mxscale has shape"):
        torch.ops.npu.npu_anti_mx_quant(x, s[:, :0])


# ---------------------------------------------------------------------------------------------------------------
# opcheck, torch.compile, torch.export
# ---------------------------------------------------------------------------------------------------------------

_NPU_SAMPLES = ["npu_sign_bits_pack", "npu_sign_bits_unpack", "npu_dynamic_mx_quant", "npu_grouped_dynamic_mx_quant",
                "npu_quant_matmul", "npu_trans_quant_param", "npu_anti_mx_quant", "npu_anti_mx_quant_fp4"]


@pytest.mark.parametrize("ns, sample", [("npu", s) for s in _NPU_SAMPLES] + [("npu_emu", s) for s in _NPU_SAMPLES]
                         + [("npu_emu", "gather_dequant_int8"), ("npu_emu", "data_copy_dequant")])
def test_opcheck(torch, nt, ns, sample):
    args, kwargs = _samples(torch)[sample]
    op = getattr(getattr(torch.ops, ns), _op_name(sample)).default
    fp8 = [a for a in args if isinstance(a, torch.Tensor) and a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)]
    checks = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
    if fp8:
        # test_schema's mutation check calls torch.allclose, which CPU torch lacks for float8: compare bits here
        checks = checks[1:]
        before = [_bits(a).clone() for a in args if isinstance(a, torch.Tensor)]
        out = op(*args, **kwargs)
        assert all(torch.equal(b, _bits(a)) for b, a in zip(before, (a for a in args if isinstance(a, torch.Tensor))))
        assert all(out.untyped_storage().data_ptr() != a.untyped_storage().data_ptr() for a in args
                   if isinstance(a, torch.Tensor))
    result = torch.library.opcheck(op, args, kwargs, test_utils=checks)
    assert result == dict.fromkeys(checks, "SUCCESS"), result


def _compiled_equals_eager(torch, fn, *args):
    torch._dynamo.reset()
    eager = fn(*args)
    compiled = torch.compile(fn, fullgraph=True)(*args)
    assert _same_bits(compiled, eager)
    return eager


def test_compile_sign_bits_round_trip(torch, nt):
    def f(x):
        packed = torch.ops.npu.npu_sign_bits_pack(x, 2)
        return packed, torch.ops.npu.npu_sign_bits_unpack(packed.flatten(), 2, torch.float32)

    x = torch.randn(128, generator=_gen(torch, 1))
    _, unpacked = _compiled_equals_eager(torch, f, x)
    assert torch.equal(unpacked, torch.where(x >= 0, 1.0, -1.0).reshape(2, -1))


def test_compile_dynamic_mx_quant(torch, nt):
    def f(x):
        return torch.ops.npu.npu_dynamic_mx_quant(x, axis=-1, dst_type=torch.float8_e4m3fn, scale_alg=1)

    y, s = _compiled_equals_eager(torch, f, torch.randn(8, 64, generator=_gen(torch, 2)).to(torch.bfloat16))
    assert y.dtype == torch.float8_e4m3fn and s.shape == (8, 1, 2)


def test_compile_quant_matmul_int8_per_channel(torch, nt):
    (x1, w, scale), kw = _samples(torch)["npu_quant_matmul"]

    def f(x, weight, sc, pt):
        return torch.ops.npu.npu_quant_matmul(x, weight, sc, pertoken_scale=pt, output_dtype=torch.bfloat16)

    y = _compiled_equals_eager(torch, f, x1, w, scale, kw["pertoken_scale"])
    assert y.dtype == torch.bfloat16 and y.shape == (8, 16)


def test_export_keeps_npu_targets(torch, nt):
    class MxLinear(torch.nn.Module):
        def forward(self, x, w, scale, pertoken):
            q, s = torch.ops.npu.npu_dynamic_mx_quant(x, dst_type=torch.float8_e4m3fn)
            deq = torch.ops.npu.npu_anti_mx_quant(q, s, dst_type=torch.bfloat16)
            y = torch.ops.npu.npu_quant_matmul(deq.to(torch.int8), w, scale, pertoken_scale=pertoken,
                                               output_dtype=torch.bfloat16)
            return y, deq

    (_, w, scale), kw = _samples(torch)["npu_quant_matmul"]
    x = torch.randn(8, 32, generator=_gen(torch, 3)).to(torch.bfloat16) * 8
    args = (x, w, scale, kw["pertoken_scale"])
    ep = torch.export.export(MxLinear(), args)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert {"npu.npu_dynamic_mx_quant.default", "npu.npu_anti_mx_quant.default",
            "npu.npu_quant_matmul.default"} <= targets
    assert _same_bits(ep.module()(*args), MxLinear()(*args))


# ---------------------------------------------------------------------------------------------------------------
# coexistence with a real torch_npu (a dummy package stands in for it)
# ---------------------------------------------------------------------------------------------------------------

DUMMY_TORCH_NPU = '''
"""Stands in for torch_npu: defines npu:: in its own DEF library with Meta kernels, as its C++ library does."""
import torch

TORCH_NPU_SCHEMAS = {schemas!r}
META_CALLS = []
_lib = torch.library.Library("npu", "DEF")
for _name, _schema in TORCH_NPU_SCHEMAS.items():
    if _name != "npu_anti_mx_quant":                      # an older torch_npu without it
        _lib.define(_schema)


def _pack_meta(input, size):
    META_CALLS.append("npu_sign_bits_pack")
    return input.new_empty((size, (input.numel() + 7) // 8 // size), dtype=torch.uint8)


_lib.impl("npu_sign_bits_pack", _pack_meta, "Meta")
'''


def _run(tmp_path, script):
    (tmp_path / "torch_npu").mkdir()
    from npu_emu.torch.schemas import TORCH_NPU_SCHEMAS

    # the schema strings go in as a literal: importing npu_emu.torch from the dummy would register first
    dummy = DUMMY_TORCH_NPU.replace("{schemas!r}", repr(TORCH_NPU_SCHEMAS))
    (tmp_path / "torch_npu" / "__init__.py").write_text(dummy)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_torch_npu_loaded_first_gets_cpu_kernels_only(torch, tmp_path):
    out = _run(tmp_path, """
        import torch, torch_npu
        import npu_emu.ops, npu_emu.torch
        status = npu_emu.torch.register()
        assert status == {n: ("defined" if n == "npu_anti_mx_quant" else "kernel") for n in status}, status
        x = torch.randn(64, generator=torch.Generator().manual_seed(0))
        got = torch.ops.npu.npu_sign_bits_pack(x, 2)
        assert torch.equal(got, npu_emu.ops.npu_sign_bits_pack(x, 2))
        meta = torch.ops.npu.npu_sign_bits_pack(x.to("meta"), 2)            # torch_npu's Meta kernel, not ours
        assert torch_npu.META_CALLS == ["npu_sign_bits_pack"] and meta.shape == (2, 4)
        u = torch.ops.npu.npu_sign_bits_unpack(got.flatten(), 2, torch.float32)
        assert torch.equal(u, torch.where(x >= 0, 1.0, -1.0).reshape(2, -1))
        print("ok")
    """)
    assert out.strip() == "ok"


def test_torch_npu_installed_not_imported_is_refused(torch, nt, tmp_path):
    out = _run(tmp_path, f"""
        import sys, torch
        NAMES = {list(nt.TORCH_NPU_OPS)!r}
        try:
            import npu_emu.torch
        except RuntimeError as e:
            print(e)
        else:
            raise SystemExit("register() did not refuse")
        assert "torch_npu" not in sys.modules
        assert not any(hasattr(torch.ops.npu, n) for n in NAMES) and not hasattr(torch.ops.npu_emu, NAMES[0])
        import torch_npu                                  # its own DEF library still loads ...
        import npu_emu.torch                              # ... and registration then succeeds
        assert npu_emu.torch.STATUS["npu_sign_bits_pack"] == "kernel"
        print("ok")
    """)
    message, ok = out.strip().rsplit("\n", 1)
    assert ok == "ok"
    assert "torch_npu is installed" in message and "but not imported" in message and "Import torch_npu first" in message
