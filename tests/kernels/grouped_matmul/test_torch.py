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
