"""CPU kernels for a library's PrivateUse1-only custom ops (docs/integrations/torch.md §5.1).

vLLM-Ascend registers its ``torch.ops.vllm.*`` helpers (``quantize``, ``npu_rotary_embedding``, ...) with
``dispatch_key="PrivateUse1"`` only, so a CPU tensor cannot reach them ("Could not run 'vllm::quantize' with
arguments from the 'CPU' backend"). Their Python implementations call torch_npu, which npu-emu emulates on CPU
tensors; :func:`add_cpu_kernels` gives each such op a CPU kernel that runs its PrivateUse1 implementation::

    import vllm_ascend.ops.register_custom_ops          # registers vllm::quantize & co. (PrivateUse1)
    from npu_emu.torch.custom_ops import add_cpu_kernels
    add_cpu_kernels("vllm")                              # now torch.ops.vllm.quantize(cpu_x, ...) works
"""

import torch

_LIBS = []       # a Library drops its registrations when collected: keep them for the process' lifetime


def add_cpu_kernels(namespace="vllm", names=None):
    """For every op ``namespace::name`` with a PrivateUse1 kernel and no CPU kernel (``names``: only these), register
    a CPU kernel that redispatches to the PrivateUse1 one. Idempotent. Returns the qualified names given a kernel."""
    keyset = torch._C.DispatchKeySet(torch._C.DispatchKey.PrivateUse1)
    lib = None
    done = []
    for qualname in sorted(torch._C._dispatch_get_all_op_names()):
        ns, _, rest = qualname.partition("::")
        if ns != namespace:
            continue
        name, _, overload = rest.partition(".")
        if names is not None and name not in names:
            continue
        if not torch._C._dispatch_has_kernel_for_dispatch_key(qualname, "PrivateUse1"):
            continue
        if torch._C._dispatch_has_kernel_for_dispatch_key(qualname, "CPU"):
            continue
        op = getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")

        def kernel(*args, _op=op, **kwargs):
            return _op.redispatch(keyset, *args, **kwargs)

        if lib is None:
            lib = torch.library.Library(namespace, "FRAGMENT")
            _LIBS.append(lib)
        lib.impl(rest, kernel, "CPU")
        done.append(qualname)
    return done
