"""Wrapping a numba class's methods in place, idempotently and reversibly: the one way the cache lock and the
compile-time hooks (cache_lock.py, inline_copy.py, inline_reuse.py, wrapper_passes.py, overload_reuse.py,
lean_compile.py, gc_pause.py) change numba's behaviour.

A hooked class carries a mark attribute, so a second ``wrap`` is a no-op; each wrapper keeps the original as
``__wrapped__`` (``functools.wraps``), which ``unwrap`` puts back (the tests compare numba with and without a hook).
"""

import functools


def wrap(cls, mark, **makers):
    """Replace each method ``name`` of ``cls`` by ``makers[name](original)``; no-op when ``cls`` carries ``mark``.
    A classmethod defined on ``cls`` itself is wrapped as a classmethod (``original`` then takes the class first).
    Returns True."""
    if getattr(cls, mark, False):
        return True
    for name, make in makers.items():
        original = cls.__dict__.get(name)
        if isinstance(original, classmethod):
            # the wrapper takes the class first, as the classmethod's function does, and stays a classmethod
            setattr(cls, name, classmethod(functools.wraps(original.__func__)(make(original.__func__))))
            continue
        original = getattr(cls, name)
        setattr(cls, name, functools.wraps(original)(make(original)))
    setattr(cls, mark, True)
    return True


def unwrap(cls, mark, *names):
    """Put back the originals of the methods ``names`` that :func:`wrap` replaced."""
    if not getattr(cls, mark, False):
        return
    for name in names:
        current = cls.__dict__.get(name)
        if isinstance(current, classmethod):
            setattr(cls, name, classmethod(current.__func__.__wrapped__))
            continue
        setattr(cls, name, getattr(cls, name).__wrapped__)
    setattr(cls, mark, False)


def wrapped(cls, mark):
    return bool(getattr(cls, mark, False))
