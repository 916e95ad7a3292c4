"""One compile of an ``@overload`` implementation per set of options it inherits: a compile-time saving in numba.

numba types a call to an ``@overload`` function (``np.empty``, ``min``, npu_emu's instruction loops) by building
the implementation's dispatcher and compiling it for the argument types. It keeps the result in the template's
``_impl_cache`` under (typing context, argument types, keywords, *the caller's compile flags*): every flag, among
them ones that describe the caller's own pipeline (``auto_parallel``, ``noalias``, ``enable_ssa``, whether the
caller gets a CPython wrapper). The implementation's compile sees the caller only through the options its flags
inherit (numba/core/cpu.py ``CPUTargetOptions.finalize``: ``nrt``, ``fastmath``, ``error_model``,
``forceinline``); every other flag comes from the implementation's own ``@overload`` options. So a caller whose
flags differ elsewhere misses the cache, builds a new dispatcher and compiles the same implementation again, to
the same code.

A parallel kernel always does: numba types the whole kernel first (its flags say ``auto_parallel``), then types the
``prange`` body again as a function of its own, whose flags differ in ``auto_parallel``, ``enable_ssa`` and
``noalias``. Every ``@overload`` the loop body calls directly compiled twice. Measured with numba 0.68 (one
configuration per fresh process, empty cache, 2-core box): DynamicMxQuantWithDualAxis FP4 ``scale_alg=2`` 45 -> 35
compiles, 10.3-10.6 -> 9.9-10.0 s; DequantSwigluQuant ``faithful=True`` with group_index 51 -> 43 compiles,
9.9-10.0 -> 9.4-9.6 s.

:func:`install` keys that cache on the inherited options instead of the whole flags. A call whose inherited options
match an earlier one's reuses its dispatcher, whose compiled code is what a new compile would produce; callers
whose ``error_model``, ``fastmath``, ``nrt`` or ``forceinline`` differ still get their own. It applies to every
function the process compiles (a user's own numba code compiles the same code, less often);
``NPU_EMU_OVERLOAD_REUSE=0`` leaves numba untouched.
"""

import os

from npu_emu.device import method_hooks

_MARK = "_npu_emu_overload_reuse"
ENABLED = os.environ.get("NPU_EMU_OVERLOAD_REUSE", "1").strip() not in ("0", "")

# the options numba's CPU target lets a compile inherit from its caller (numba 0.68, numba/core/cpu.py)
INHERITED = ("nrt", "fastmath", "error_model", "forceinline")


def inherited_key(flags):
    """The part of a caller's compile flags that an implementation compiled under it inherits (hashable)."""
    if flags is None:
        return None
    from numba.core.cpu_options import AbstractOptionValue

    values = (getattr(flags, name) for name in INHERITED)
    return tuple((type(v).__name__, v.encode()) if isinstance(v, AbstractOptionValue) else v for v in values)


def install():
    """Key ``@overload`` implementations on the inherited options; idempotent. Returns True when in place."""
    if not ENABLED:
        return False
    from numba.core import targetconfig
    from numba.core.typing import templates

    def keyed_on_inherited(get_impl):
        # numba's _get_impl with another key; _build_impl stores the result under the key it is given
        def get_impl_inherited(self, args, kws):
            key = self.context, tuple(args), tuple(kws.items()), inherited_key(targetconfig.ConfigStack.top_or_none())
            try:
                return self._impl_cache[key]
            except KeyError:
                pass
            return self._build_impl(key, args, kws)
        return get_impl_inherited

    return method_hooks.wrap(templates._OverloadFunctionTemplate, _MARK, _get_impl=keyed_on_inherited)


def uninstall():
    """Put numba's method back (the tests compare the two)."""
    from numba.core.typing import templates

    method_hooks.unwrap(templates._OverloadFunctionTemplate, _MARK, "_get_impl")


def installed():
    from numba.core.typing import templates

    return method_hooks.wrapped(templates._OverloadFunctionTemplate, _MARK)
