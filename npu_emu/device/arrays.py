"""How an input array reaches a kernel: read-only, whatever the caller passed.

numba types a read-only array apart from a writable one, so a kernel handed a caller's array as is compiles once
more for a caller whose array is read-only (np.frombuffer, a memory map, a Dask chunk of one), and misses the
kernels a wheel ships. The front ends (``npu_emu.frontend.core.as_array``) and the codecs' entries hand every input
over through :func:`read_only`; arrays made on the host (outputs, workspaces, converted copies) stay writable.
Numba-free, below the codecs.
"""


def read_only(a):
    """``a`` if it is read-only already, else a read-only view of it (the caller's array keeps its flags)."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.flags.writeable = False
    return v
