"""torch.ops.npu.npu_grouped_matmul: the fake gives the list the CPU kernel returns (count, shapes, dtypes) for
every tensor-list form (docs/ops/grouped_matmul.md §2.1), and opcheck's registration checks pass."""

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def op():
    import npu_emu.torch  # noqa: F401

    return torch.ops.npu.npu_grouped_matmul.default


def _i8(g, *shape):
    return torch.randint(-128, 128, shape, dtype=torch.int8, generator=g)


def _samples():
    g = torch.Generator().manual_seed(5)
    x, w = _i8(g, 10, 32), _i8(g, 3, 32, 16)
    return {
        "sss_int32": (([x], [w]), dict(group_list=torch.tensor([4, 4, 10]), split_item=3, group_type=0,
                                       output_dtype=torch.int32)),
        "sss_bf16": (([x], [w]), dict(scale=[torch.rand(3, 16, generator=g).to(torch.bfloat16)],
                                      per_token_scale=[torch.rand(10, generator=g)],
                                      group_list=torch.tensor([4, 0, 6]), group_list_type=1, split_item=3,
                                      group_type=0, output_dtype=torch.bfloat16)),
        "sms": (([x], list(w.unbind(0))), dict(group_list=torch.tensor([4, 4, 10]), split_item=2, group_type=0,
                                               output_dtype=torch.int32)),
        "mms": ((list(x.split([4, 6])), list(w[:2].unbind(0))), dict(split_item=2, group_type=0,
                                                                     output_dtype=torch.int32)),
        "nosplit": (([x, _i8(g, 2, 5, 8)], [w[0], _i8(g, 8, 24)]), dict(split_item=0, group_type=-1,
                                                                        output_dtype=torch.int32)),
        "splitk": (([torch.randn(6, 32, generator=g).to(torch.bfloat16)],
                    [torch.randn(32, 16, generator=g).to(torch.bfloat16)]),
                   dict(group_list=torch.tensor([8, 32]), split_item=3, group_type=2)),
    }


@pytest.mark.parametrize("name", list(_samples()))
def test_fake_matches_eager(op, name):
    from torch._subclasses.fake_tensor import FakeTensorMode

    args, kwargs = _samples()[name]
    eager = op(*args, **kwargs)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fa = [[mode.from_tensor(t) for t in lst] for lst in args]
        fk = {k: ([mode.from_tensor(t) for t in v] if isinstance(v, list) else
                  mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
        fake = op(*fa, **fk)
    assert [(tuple(t.shape), t.dtype) for t in fake] == [(tuple(t.shape), t.dtype) for t in eager]


@pytest.mark.parametrize("name", ["sss_int32", "nosplit", "splitk"])
def test_opcheck(op, name):
    args, kwargs = _samples()[name]
    torch.library.opcheck(op, args, kwargs, test_utils=("test_schema", "test_faketensor"))


def test_antiquant_and_mx_through_torch_ops(op):
    """The modes of docs/ops/grouped_matmul.md §10 / §11 through the binding: antiquant lists on the A2/A3 default;
    MXFP8 on the 950 (set_soc), E8M0 scales as torch.float8_e8m0fnu; the fake gives the same list."""
    import numpy as np

    import npu_emu.torch as nt
    from npu_emu.kernels.grouped_matmul import golden, golden_modes

    g = torch.Generator().manual_seed(6)
    x = torch.randn(10, 32, generator=g).to(torch.bfloat16)
    w = _i8(g, 3, 32, 16)
    s = (torch.rand(3, 16, generator=g) * 0.05).to(torch.bfloat16)
    o = (torch.rand(3, 16, generator=g) * 4 - 2).to(torch.bfloat16)
    gl = torch.tensor([4, 4, 10])
    y = op([x], [w], antiquant_scale=[s], antiquant_offset=[o], group_list=gl, split_item=3, group_type=0)[0]
    bits = lambda t: t.view(torch.int16).numpy()
    xb, sb, ob = (t.view(torch.int16).numpy().view(golden._bf16(np.zeros(1)).dtype) for t in (x, s, o))
    ref = golden.grouped_matmul_float(xb, golden_modes.antiquant_weight(w.numpy(), sb, ob, "bfloat16"), gl.numpy())
    assert np.array_equal(bits(y), ref.view(np.int16))
    from npu_emu.frontend import torch_args

    prev = torch_args.SOC
    nt.set_soc("ascend950pr")
    try:
        xf = torch.randn(10, 64, generator=g).to(torch.float8_e4m3fn)
        wf = torch.randn(3, 64, 16, generator=g).to(torch.float8_e4m3fn)
        s2 = torch.randint(120, 134, (3, 1, 16, 2), generator=g, dtype=torch.uint8).view(torch.float8_e8m0fnu)
        s1 = torch.randint(120, 134, (10, 1, 2), generator=g, dtype=torch.uint8).view(torch.float8_e8m0fnu)
        kw = dict(scale=[s2], per_token_scale=[s1], group_list=gl, split_item=3, group_type=0,
                  output_dtype=torch.bfloat16)
        y = op([xf], [wf], **kw)[0]
        ref = golden_modes.grouped_matmul_mx(xf.float().numpy(), wf.float().numpy(), s2.view(torch.uint8).numpy(),
                                             s1.view(torch.uint8).numpy(), gl.numpy())
        assert np.array_equal(bits(y), ref.view(np.int16))
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fk = {k: ([mode.from_tensor(t) for t in v] if isinstance(v, list) else
                      mode.from_tensor(v) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
            fake = op([mode.from_tensor(xf)], [mode.from_tensor(wf)], **fk)
        assert [(tuple(t.shape), t.dtype) for t in fake] == [(tuple(y.shape), y.dtype)]
    finally:
        nt.set_soc(prev)
