"""One copy of a function's scope per inlining, not one per block: a compile-time saving in numba's inliner.

numba inlines an ``inline="always"`` function (and an ``@overload(..., inline="always")``) by copying the callee's
IR twice at every call site (``InlineWorker.inline_ir``: the copy it splices in and an untouched copy it returns).
It copies block by block, each with ``copy.deepcopy(block)`` and a fresh memo, and every block holds the function's
``Scope``, which holds every variable of the function. So each block drags a private copy of the whole scope along:
the work grows with blocks x variables. npu-emu's instructions are such functions (``Cast`` has 57 blocks and 354
variables after the untyped passes, ``DataCopyPad`` 45 and 407) and its kernels inline them at many call sites:
measured with numba 0.68, those copies were 1.7 s of the 10.3 s cold first call of AscendQuantV2 per channel.

:func:`install` gives the block copies of one IR copy one deepcopy memo, so its scopes and variables are copied once
per copy of the IR and the copy has the original's object graph: one scope object where the blocks shared one, the
same variable objects in every block. Nothing else changes: the inliner renames the variables and
re-points every block at the caller's scope afterwards as before, and the generated code is the same (the whole
test suite runs with it, bit for bit against the goldens). Measured (one configuration per fresh process, empty
cache, 2-core box): AscendQuantV2 per channel 10.9 -> 9.6-10.1 s, Quantize with an int8 zero point 10.0 -> 8.3 s,
DynamicMxQuantWithDualAxis FP4 scale_alg 2 14.1 -> 11.7 s (docs/getting_started.md has the others).

It acts inside numba's inliner for every function the process compiles (a user's own numba code compiles faster
the same way and gives the same result); ``NPU_EMU_INLINE_COPY=0`` leaves numba untouched. How it hooks in: the
inliner module's ``copy`` name is replaced by a stand-in whose ``deepcopy`` uses a shared memo only for an
``ir.Block`` copied without a memo while ``inline_ir`` runs; every other call is ``copy.deepcopy`` itself.

The second IR copy is not made at all while ``inline_ir`` runs. It is ``inline_ir``'s first result, "an unmutated
copy of the callee IR", and each of numba's callers (the untyped ``InlineInlinables`` pass, the typed
``InlineOverloads`` pass, ``inline_function``) discards it. The hooked ``inline_ir`` returns in its place an IR that
copies the callee IR it was given on first use: the same content, since ``inline_ir`` copies that IR before it
changes anything and numba passes IR it keeps for later call sites (``inline_reuse.py`` keeps its runs the same
way). Measured on a znver3 2-core box (one cold call per fresh process, empty cache, three interleaved pairs):
AscendQuantV2 per channel 11.5-12.6 -> 10.5-11.9 s (medians 11.7 -> 10.8 s); DynamicMxQuantWithDualAxis FP4
scale_alg 2 within the box's noise (13.1-14.6 -> 12.9-13.6 s).
"""

import copy as _copy
import os
import threading

from npu_emu.device import method_hooks

_MARK = "_npu_emu_inline_copy"
ENABLED = os.environ.get("NPU_EMU_INLINE_COPY", "1").strip() not in ("0", "")

_state = threading.local()


class _CopyModule:
    """Stands for the ``copy`` module inside numba's inliner module."""

    def __init__(self, block_type):
        self._block = block_type

    def deepcopy(self, x, memo=None, _nil=[]):  # noqa: B006 (copy.deepcopy's own signature)
        stack = getattr(_state, "memos", None)
        if memo is None and stack is not None and stack and type(x) is self._block:
            # inline_ir copies the callee's IR, then copies that copy. A block of the second copy holds a scope the
            # first copy made (the ids in `made` stay alive in `first` until inline_ir returns: no id is reused):
            # it is not copied, since shared_scope_inline_ir replaces the IR those blocks go to (see the module)
            first, made = stack[-1]
            if id(x.scope) in made:
                return x
            out = _copy.deepcopy(x, first, _nil)        # one memo per IR copy
            made.add(id(out.scope))
            return out
        return _copy.deepcopy(x, memo, _nil)

    def __getattr__(self, name):
        return getattr(_copy, name)


def copy_ir(the_ir):
    """A copy of numba IR ``the_ir`` that shares nothing mutable with it (inline_ir's ``copy_ir``, with one memo)."""
    out = the_ir.copy()
    memo = {}
    out.blocks = {label: _copy.deepcopy(block, memo) for label, block in the_ir.blocks.items()}
    return out


_LAZY = []


def _lazy_type():
    """A FunctionIR subclass whose instances hold IR to copy and become that copy on first attribute access (made on
    first use: this module imports numba only when installing)."""
    if not _LAZY:
        from numba.core import ir

        def __getattr__(self, name):
            source = self.__dict__.pop("_npu_emu_source", None)
            if source is None:
                raise AttributeError(name)
            self.__dict__.update(copy_ir(source).__dict__)
            return getattr(self, name)

        _LAZY.append(type("UnmutatedCalleeIR", (ir.FunctionIR,), {"__getattr__": __getattr__}))
    return _LAZY[0]


def unmutated_copy(callee_ir):
    """What inline_ir's first result stands for: a copy of ``callee_ir``, made when something first reads it."""
    out = object.__new__(_lazy_type())
    out.__dict__["_npu_emu_source"] = callee_ir
    return out


def install():
    """Hook the shared memo into numba's inliner; idempotent. Returns True when it is in place."""
    if not ENABLED:
        return False
    from numba.core import inline_closurecall as icc
    from numba.core import ir

    def shared_scope(inline_ir):
        def shared_scope_inline_ir(self, caller_ir, block, i, callee_ir, *args, **kwargs):
            stack = getattr(_state, "memos", None)
            if stack is None:
                stack = _state.memos = []
            stack.append(({}, set()))
            try:
                out = inline_ir(self, caller_ir, block, i, callee_ir, *args, **kwargs)
            finally:
                stack.pop()
            # out[0] went without block copies (the stand-in's deepcopy): its blocks are the spliced ones
            return (unmutated_copy(callee_ir),) + tuple(out[1:])
        return shared_scope_inline_ir

    if not method_hooks.wrapped(icc.InlineWorker, _MARK):
        icc.copy = _CopyModule(ir.Block)
    return method_hooks.wrap(icc.InlineWorker, _MARK, inline_ir=shared_scope)


def uninstall():
    """Put numba's inliner back (the test compares the two)."""
    from numba.core import inline_closurecall as icc

    if method_hooks.wrapped(icc.InlineWorker, _MARK):
        icc.copy = _copy
    method_hooks.unwrap(icc.InlineWorker, _MARK, "inline_ir")


def installed():
    from numba.core import inline_closurecall as icc

    return method_hooks.wrapped(icc.InlineWorker, _MARK)
