"""No cyclic garbage collection while numba compiles an npu-emu function: a compile-time saving.

numba's compiler allocates and drops millions of container objects (IR nodes, type tuples, templates). Python's
cyclic collector runs a young collection every 700 net allocations and, as the process's heap grows, full
collections that walk every tracked object in it. Measured on the 2-core box (gc callbacks, numba 0.68, Python 3.11,
2026-12-07): a cold first call of DynamicMxQuant E4M3 or of GroupedDynamicMxQuant FP4 `faithful=True` spent
0.5-0.9 s of its 9-12 s in 800-900 collections; a test worker running the mx_quant folder cold spent 39 of its 371
CPU-s there, 32 s of it in 33 full collections over a heap of up to 2.5 million objects, each one started by a
compile's allocations.

:func:`install` pauses the collector (``gc.disable``) while a thread compiles a function of the npu_emu package (its
outermost ``Dispatcher.compile``: a kernel called for the first time, ``npu-emu compile``, or a cache load) and
turns it back on when the last such compile in the process ends, if it was on before. What a compile drops is freed
by reference counting as before; the garbage cycles it leaves wait for the first collection after it, which runs at
the next allocation since the young generation's count kept growing. The pause is process-wide while it lasts:
another thread's cycles wait for the end of the compile too (seconds), then go the same way. A process that turned
the collector off itself finds it off afterwards. ``NPU_EMU_GC_PAUSE=0`` leaves the collector alone.
"""

import gc
import os
import threading

from npu_emu.device import method_hooks
from npu_emu.device.lean_compile import is_own

_MARK = "_npu_emu_gc_pause"
ENABLED = os.environ.get("NPU_EMU_GC_PAUSE", "1").strip() not in ("0", "")

_lock = threading.Lock()
_state = {"compiling": 0, "paused": False}      # compiles of npu_emu functions in progress; whether we disabled gc


def _enter():
    with _lock:
        if _state["compiling"] == 0 and gc.isenabled():
            gc.disable()
            _state["paused"] = True
        _state["compiling"] += 1


def _leave():
    with _lock:
        _state["compiling"] -= 1
        if _state["compiling"] == 0 and _state["paused"]:
            _state["paused"] = False
            gc.enable()


def install():
    """Pause the cyclic collector while npu_emu's functions compile; idempotent. Returns True when in place."""
    if not ENABLED:
        return False
    from numba.core import dispatcher

    def pausing(compile_):
        def compile_pausing(self, sig):
            if not is_own(getattr(self.py_func, "__module__", None)):
                return compile_(self, sig)
            _enter()
            try:
                return compile_(self, sig)
            finally:
                _leave()
        return compile_pausing

    return method_hooks.wrap(dispatcher.Dispatcher, _MARK, compile=pausing)


def installed():
    from numba.core import dispatcher

    return method_hooks.wrapped(dispatcher.Dispatcher, _MARK)


def paused():
    """Whether the collector is paused for a compile now."""
    return _state["paused"]
