"""One run of numba's untyped passes per inlined function, not one per call site: a compile-time saving.

numba inlines an ``inline="always"`` function (``InlineWorker.inline_function``) by running the compiler's untyped
pipeline over the callee (bytecode analysis, IR processing, dead-branch pruning, rewrites and, recursively, the
inlining of every ``inline="always"`` function the callee calls) and splicing a copy of the resulting IR in. It runs
that pipeline again at every call site, although the IR it produces depends only on the callee (its bytecode, the
values of its globals and free variables), the typing context, the caller's local type declarations and four of
the caller's flags (``enable_looplift``, ``auto_parallel``, ``no_rewrites``, ``enable_ssa``: the only ones the
untyped passes read, numba 0.68 numba/core/compiler.py and untyped_passes.py). npu-emu's kernels call the same
instructions at many call sites (``Mul``, ``Muls``, ``Cast``, ...), each with its own nested helpers.

:func:`install` keeps the IR of each such run, under those inputs, and hands it to ``inline_ir`` again at the next
call site with the same inputs. That is safe because ``inline_ir`` copies the callee IR before it changes anything
(its first statement), and nothing else sees the kept IR. The worker's flags get ``enable_ssa = False`` either way,
as numba's ``run_untyped_passes`` sets them. A kept IR also records the inputs of the inlinings nested in it, and is
used only while those are unchanged too (a global rebound between two compiles gets a fresh run). Measured with
numba 0.68 (one configuration per fresh process, empty cache, 2-core box): AscendQuantV2 per channel bf16 24 of 51
runs reused, 9.1-9.3 -> 8.3-8.6 s; DynamicMxQuantWithDualAxis FP4 ``scale_alg=2`` 20 of 43, 10.1 -> 9.7-10.0 s.

It applies to every function the process compiles (a user's own numba code too, with the same result);
``NPU_EMU_INLINE_REUSE=0`` leaves numba untouched.
"""

import os
import threading

from npu_emu.device import method_hooks

_MARK = "_npu_emu_inline_reuse"
ENABLED = os.environ.get("NPU_EMU_INLINE_REUSE", "1").strip() not in ("0", "")

# the caller flags numba's untyped pipeline reads (numba 0.68)
FLAGS = ("enable_looplift", "auto_parallel", "no_rewrites", "enable_ssa")

_kept = {}                  # key -> (callee IR, keys of the inlinings nested in it)
_lock = threading.Lock()
_state = threading.local()  # the nested-inlining records of the runs in progress on this thread


def _value_key(v):
    from numba.core.cpu_options import AbstractOptionValue

    return (type(v).__name__, v.encode()) if isinstance(v, AbstractOptionValue) else v


def values_key(function):
    """The values ``function`` reads from its globals and free variables, by identity."""
    glb = function.__globals__
    return (tuple(id(glb.get(n)) for n in function.__code__.co_names),
            tuple(id(c.cell_contents) for c in (function.__closure__ or ())))


def input_key(worker, function):
    """What the untyped pipeline's IR of ``function`` depends on, when ``worker`` inlines it (hashable). The
    inlinings nested in that run get their worker's context, flags and locals from this one's."""
    return (function, values_key(function), id(worker.typingctx),
            tuple(_value_key(getattr(worker.flags, n)) for n in FLAGS),
            tuple(sorted((k, str(v)) for k, v in (worker.locals or {}).items())))


def _still_valid(nested):
    return all(values_key(fn) == vk for fn, vk in nested)


def install():
    """Reuse the untyped IR of inlined functions; idempotent. Returns True when in place."""
    if not ENABLED:
        return False
    from numba.core import inline_closurecall

    def reusing(inline_function):
        def inline_function_reusing(self, caller_ir, block, i, function, arg_typs=None):
            self.flags.enable_ssa = False            # what run_untyped_passes(function) does to the worker's flags
            key = input_key(self, function)
            for record in getattr(_state, "records", ()):   # the runs this inlining is nested in depend on it
                record.append((function, key[1]))
            with _lock:
                kept = _kept.get(key)
            if kept is not None and _still_valid(kept[1]):
                callee_ir = kept[0]
            else:
                records = getattr(_state, "records", None)
                if records is None:
                    records = _state.records = []
                nested = []
                records.append(nested)
                try:
                    callee_ir = self.run_untyped_passes(function)
                finally:
                    records.pop()
                with _lock:
                    _kept[key] = (callee_ir, tuple(nested))
            # numba's inline_function from here: inline_ir copies callee_ir before changing anything
            return self.inline_ir(caller_ir, block, i, callee_ir, function.__code__.co_freevars, arg_typs=arg_typs)
        return inline_function_reusing

    return method_hooks.wrap(inline_closurecall.InlineWorker, _MARK, inline_function=reusing)


def uninstall():
    """Put numba's method back and forget the kept IR (the tests compare the two)."""
    from numba.core import inline_closurecall

    method_hooks.unwrap(inline_closurecall.InlineWorker, _MARK, "inline_function")
    with _lock:
        _kept.clear()


def installed():
    from numba.core import inline_closurecall

    return method_hooks.wrapped(inline_closurecall.InlineWorker, _MARK)
