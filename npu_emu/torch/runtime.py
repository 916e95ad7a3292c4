"""The device-runtime half of the emulated ``torch_npu.npu`` (also ``torch.npu``): streams, events, device queries
(docs/integrations/torch.md §3.2).

npu-emu runs every op on the CPU and returns when it has finished, so there is nothing to order or wait for: a
:class:`Stream` is a real class (code annotates with it, subclasses it, compares streams), every wait / record /
synchronize returns at once, :class:`Event` timing uses the host clock. Device queries describe "no NPU":
``is_available()`` False, ``device_count()`` 0; ``current_device()`` 0 and ``set_device()`` accept device 0 so
that code which pins its rank's device keeps going. Memory queries report host figures (``mem_get_info``) or 0.
"""

import contextlib
import time
import types

PAGE = "docs/integrations/torch.md"


class NotEmulatedError(NotImplementedError):
    """A torch_npu name npu-emu knows but does not emulate yet."""


def not_emulated(qualname, why=""):
    """A callable standing for ``qualname``: raises NotEmulatedError naming the docs page when called."""
    def stub(*args, **kwargs):
        raise NotEmulatedError(f"{qualname} is not emulated yet by npu-emu{': ' + why if why else ''} "
                               f"(what is emulated: {PAGE} §3.3)")
    stub.__name__ = qualname.rsplit(".", 1)[-1]
    stub.__qualname__ = qualname
    stub.__doc__ = f"{qualname}: not emulated yet ({PAGE} §3.3)."
    stub.__npu_emu_not_emulated__ = True
    return stub


class Stream:
    """torch_npu.npu.Stream on the CPU: ops run in call order and have finished when they return."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device = device
        self.priority = priority

    def wait_stream(self, stream):
        """Nothing to wait for."""

    def wait_event(self, event):
        """Nothing to wait for."""

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def synchronize(self):
        """Every op on it has finished."""

    def query(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __repr__(self):
        return f"<npu_emu Stream (CPU, in order) priority={self.priority}>"


class Event:
    """torch_npu.npu.Event: record / wait / synchronize return at once; ``elapsed_time`` is host time (ms)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
        self.enable_timing = enable_timing
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()

    def wait(self, stream=None):
        """Nothing to wait for."""

    def synchronize(self):
        """Already complete."""

    def query(self):
        return True

    def elapsed_time(self, end_event):
        if self._t is None or end_event._t is None:
            raise RuntimeError("elapsed_time: both events must have been recorded")
        return (end_event._t - self._t) * 1000.0


class ExternalEvent(Event):
    """torch_npu.npu.ExternalEvent: an Event (same no-op semantics)."""


_DEFAULT = Stream()
_CURRENT = [_DEFAULT]


def current_stream(device=None):
    return _CURRENT[0]


def default_stream(device=None):
    return _DEFAULT


def set_stream(stream):
    _CURRENT[0] = stream


@contextlib.contextmanager
def stream(s):
    """``with torch.npu.stream(s):`` makes ``s`` current inside the block."""
    prev = _CURRENT[0]
    if s is not None:
        _CURRENT[0] = s
    try:
        yield s
    finally:
        _CURRENT[0] = prev


class device:
    """``with torch.npu.device(i):`` (a no-op context; every tensor stays on the CPU)."""

    def __init__(self, device):
        self.idx = device

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def synchronize(device=None):
    """Nothing to wait for: every emulated op has finished when it returns."""


def is_available():
    return False


def device_count():
    return 0


def current_device():
    return 0


def set_device(device):
    """Accepted and ignored: tensors stay on the CPU."""


def empty_cache():
    """Free the memory of freed outputs that npu-emu keeps for reuse (npu_emu.frontend.output_cache)."""
    from npu_emu.frontend import output_cache

    output_cache.release()


def mem_get_info(device=None):
    """(free, total) bytes of the host memory npu-emu may use (npu_emu.frontend.available_memory)."""
    from npu_emu.frontend.core import available_memory

    free = int(available_memory())
    return free, free


def _zero(*args, **kwargs):
    return 0


def _none(*args, **kwargs):
    return None


def memory_stats(device=None):
    return {}


def get_device_name(device=None):
    return "npu-emu (CPU)"


def get_device_properties(device=None):
    from npu_emu.frontend.core import available_memory

    return types.SimpleNamespace(name=get_device_name(), total_memory=int(available_memory()), major=0, minor=0,
                                 multi_processor_count=0)


def is_current_stream_capturing():
    return False


def populate(npu):
    """Add the runtime names to the ``torch_npu.npu`` namespace module ``npu``."""
    for name, value in (("Stream", Stream), ("Event", Event), ("ExternalEvent", ExternalEvent),
                        ("current_stream", current_stream), ("default_stream", default_stream),
                        ("set_stream", set_stream), ("stream", stream), ("device", device),
                        ("synchronize", synchronize), ("is_available", is_available),
                        ("device_count", device_count), ("current_device", current_device),
                        ("set_device", set_device), ("empty_cache", empty_cache), ("mem_get_info", mem_get_info),
                        ("memory_allocated", _zero), ("max_memory_allocated", _zero), ("memory_reserved", _zero),
                        ("reset_peak_memory_stats", _none), ("memory_stats", memory_stats),
                        ("get_device_name", get_device_name), ("get_device_properties", get_device_properties),
                        ("is_current_stream_capturing", is_current_stream_capturing),
                        ("set_compile_mode", _none)):
        setattr(npu, name, value)
    npu.config = types.SimpleNamespace(allow_internal_format=False)
    for name in ("NPUGraph", "graph", "graph_pool_handle", "graph_task_group_begin", "graph_task_group_end",
                 "graph_task_update_begin", "graph_task_update_end", "get_soc_version"):
        setattr(npu, name, not_emulated(f"torch_npu.npu.{name}", "NPU graphs and SoC queries need a device"))
    memory = types.ModuleType("torch_npu.npu.memory", "npu-emu: no device memory pools")
    for name in ("NPUPluggableAllocator", "MemPool", "use_mem_pool", "memory_snapshot"):
        setattr(memory, name, not_emulated(f"torch_npu.npu.memory.{name}", "no device memory pools"))
    npu.memory = memory
    return npu
