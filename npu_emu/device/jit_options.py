"""The numba switch every parallel kernel reads, in one place so that a test mode can flip it.

``NPU_EMU_SERIAL_KERNELS=1`` compiles the per-core ``prange`` loops as plain loops (``parallel=False``). It exists
for the bounds-checked test job (docs/contributing/reliability.md): numba 0.68 does not apply
``NUMBA_BOUNDSCHECK=1`` inside parallel prange bodies (tests/reliability/test_bounds_mode.py), so an out-of-range
index in a kernel is only caught when the kernels run serially. Results are the same either way (cores write
disjoint ranges; determinism tests compare thread counts). numba's cache is keyed neither by this switch nor by
the bounds check, so such a run needs its own ``NUMBA_CACHE_DIR``.
"""

import os

SERIAL_KERNELS = os.environ.get("NPU_EMU_SERIAL_KERNELS", "0").strip() not in ("", "0")
PARALLEL = not SERIAL_KERNELS

# Every module with cached kernels imports this one before it compiles anything: the place to make numba's cache
# index safe for processes that compile at the same time (npu_emu/device/cache_lock.py says why).
from npu_emu.device import cache_lock  # noqa: E402

cache_lock.install()
