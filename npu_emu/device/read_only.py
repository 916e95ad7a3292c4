"""Every array a kernel only reads reaches it as a read-only view, so one compiled kernel serves every caller.

numba types an array's writeable flag as part of its type: ``array(float32, 1d, C)`` and ``readonly array(float32,
1d, C)`` are two signatures, two compilations, and a wheel ships only the one its build compiled. A caller's
array is read-only when it comes from ``np.frombuffer``, a read-only memory map or a broadcast; an array the front
end made (a conversion, a widened operand, a host-made workspace) is writeable. Left to the caller, the flag at a
kernel's door would depend on where each input came from, and which kernel a call needs on the caller's dtypes.

So the flag is set at the door, from what the kernel does with the array: every Python-level kernel call (through
``launch`` or not: a codec, a host helper compiled with numba) passes each array the kernel only reads through
:func:`read_only`. ``launch`` checks it against the access pattern (a writeable buffer that the pattern neither
writes nor declares an output is an error of the launching code). A kernel that wrote an input would fail to compile
instead of writing into the caller's memory.
"""

import numpy as np


def read_only(a):
    """A read-only view of the ndarray ``a`` (``a`` itself when it already is one): no copy, same memory."""
    if not a.flags.writeable and type(a) is np.ndarray:
        return a
    v = a.view(np.ndarray)      # a base ndarray: numba types an np.memmap view as an ndarray anyway
    v.flags.writeable = False
    return v
