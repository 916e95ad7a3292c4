"""Kernels shipped in the wheel: numba cache files built with the wheel, loaded on an npu_emu kernel's first call.

A wheel built with ``NPU_EMU_BUILD_KERNELS=1`` (setup.py; docs/getting_started.md) carries, under
``npu_emu/_kernel_cache/``, the numba cache files (``*.nbi`` index, ``*.nbc`` machine code) of every configuration
``npu-emu compile`` runs, compiled for a portable x86-64 level (``NUMBA_CPU_NAME=x86-64-v3``, no extra features) and
laid out by the package-relative folder of each kernel's source file, so they hold wherever the wheel is installed.

How numba keys its cache (numba 0.68, numba/core/caching.py), and what that means here:

* each cached function has an index file named after its source file's base name, its qualified name, its first
  line and the Python version (``kernel.dynamic_mx_quant_kernel[DST=0,MODE=0]-612.py311.nbi``); the index holds
  numba's version and the sha256 of the source file: an index of another numba version or another source is
  ignored. Nothing in it names the folder the source sits in (the cache *folder* does, which is why the bundle is
  laid out by package-relative path and read from there);
* an index entry's key is (signature, (target triple, CPU name, CPU feature string), hashes of the bytecode and
  closure variables). The process's own CPU name and features (``znver3``, ``+64bit,+adx,...``) never equal the
  portable ones, so numba's own lookup never finds a shipped entry. This module looks the entry up again with the
  bundle's (triple, ``x86-64-v3``, ``""``) when numba found nothing and the host has every feature of that level.

:func:`install` (called by npu_emu.jit_options, beside the cache lock) wraps ``FunctionCache.load_overload``: when
numba's own lookup (``NUMBA_CACHE_DIR``, ``__pycache__`` or the user-wide cache, as always) finds nothing *and* the
function's source file lies inside this npu_emu package, the shipped index of that function is read (read-only: a
read-only site-packages works) and its machine code loaded. For any other function (a user's own numba code in the
same process) the wrapper returns what numba returned, untouched; no locator list or environment variable of numba
is changed. Nothing is written into the bundle; a compile still saves into numba's usual cache.

The shipped files are not used, and calls compile as they would without them, when: the numba version, the Python
minor version or the target triple differ from the build's (numba's own checks, or :func:`why_not`); the host lacks
a feature of x86-64-v3; the process asks numba for another target (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` other
than the bundle's), another optimisation level, bounds checks, or npu-emu's serial kernels
(``NPU_EMU_SERIAL_KERNELS=1``; numba does not key its cache by these); ``NPU_EMU_SHIPPED_KERNELS=0`` is set.
"""

import json
import os
import sys

from npu_emu.device import lean_compile

BUNDLE_DIR = "_kernel_cache"          # under the npu_emu package folder
MANIFEST = "manifest.json"
PORTABLE_CPU = "x86-64-v3"
PORTABLE_FEATURES = ""
# the CPU features of the x86-64-v3 level (x86-64 psABI: v2 + AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, XSAVE),
# as LLVM names them in numba's host feature string; the host must have each for the shipped machine code to run
V3_FEATURES = ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3", "avx", "avx2", "bmi", "bmi2", "f16c",
               "fma", "lzcnt", "movbe", "xsave")

_MARK = "_npu_emu_shipped_kernels"
_state = {}


def package_dir():
    import npu_emu

    return os.path.dirname(os.path.abspath(npu_emu.__file__))


def bundle_dir():
    return os.path.join(package_dir(), BUNDLE_DIR)


def manifest():
    """The bundle's manifest (dict), or None when this install carries no shipped kernels."""
    try:
        with open(os.path.join(bundle_dir(), MANIFEST)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def build_facts():
    """What a bundle built in this process would be tied to (the manifest's fields)."""
    import numba
    from numba.core import config
    from numba.core.registry import cpu_target

    # npu_emu.device.jit_options.SERIAL_KERNELS, read as it reads it (that module imports this one)
    serial = os.environ.get("NPU_EMU_SERIAL_KERNELS", "0").strip() not in ("", "0")
    magic = cpu_target.target_context.codegen().magic_tuple()
    return {"numba": numba.__version__, "python": "%d.%d" % sys.version_info[:2], "magic": list(magic),
            "opt": int(config.OPT), "boundscheck": bool(config.BOUNDSCHECK), "serial_kernels": serial}


def why_not(man=None):
    """Why the shipped kernels cannot be used in this process (a sentence), or None when they can."""
    if os.environ.get("NPU_EMU_SHIPPED_KERNELS", "1").strip().lower() in ("0", "no", "false", "off"):
        return "NPU_EMU_SHIPPED_KERNELS=0"
    man = manifest() if man is None else man
    if man is None:
        return "this install carries no shipped kernels (a wheel built without NPU_EMU_BUILD_KERNELS=1)"
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features
    from llvmlite import binding as ll

    here = build_facts()
    triple, cpu, feats = man["magic"]
    if here["numba"] != man["numba"]:
        return f"built for numba {man['numba']}, this is numba {here['numba']}"
    if here["python"] != man["python"]:
        return f"built for Python {man['python']}, this is Python {here['python']}"
    if here["magic"][0] != triple:
        return f"built for {triple}, this is {here['magic'][0]}"
    if config.CPU_NAME is not None and (config.CPU_NAME, config.CPU_FEATURES or "") != (cpu, feats):
        return f"NUMBA_CPU_NAME={config.CPU_NAME} asks for another target than the shipped {cpu}"
    if config.CPU_NAME is None and config.CPU_FEATURES is not None:
        return "NUMBA_CPU_FEATURES asks for another target than the shipped one"
    host = set(f[1:] for f in get_host_cpu_features().split(",") if f.startswith("+"))
    missing = [f for f in man.get("requires", V3_FEATURES) if f not in host]
    if missing:
        return f"this CPU ({ll.get_host_cpu_name()}) lacks {', '.join(missing)} of {cpu}"
    for key, what in (("opt", "NUMBA_OPT"), ("boundscheck", "NUMBA_BOUNDSCHECK"),
                      ("serial_kernels", "NPU_EMU_SERIAL_KERNELS")):
        if here[key] != man[key]:
            return f"{what} differs from the build's ({here[key]} against {man[key]})"
    return None


def _bundle():
    """(package dir, bundle dir, portable magic tuple), or None when the shipped kernels are not used here."""
    if "bundle" not in _state:
        man = manifest()
        ok = man is not None and why_not(man) is None
        _state["bundle"] = (package_dir(), bundle_dir(), tuple(man["magic"])) if ok else None
    return _state["bundle"]


def _shipped_index(cache):
    """numba's IndexDataCacheFile of ``cache``'s function in the bundle, or None (not an npu_emu function, or no
    bundle in use); memoised on the cache object."""
    found = cache.__dict__.get(_MARK)
    if found is None:
        found = False
        b = _bundle()
        if b is not None:
            import inspect

            from numba.core.caching import IndexDataCacheFile

            pkg, root, _ = b
            try:
                src = os.path.abspath(inspect.getfile(cache._py_func))
            except TypeError:
                src = None
            if src is not None and src.startswith(pkg + os.sep):
                rel = os.path.relpath(os.path.dirname(src), pkg)
                found = IndexDataCacheFile(cache_path=os.path.join(root, rel),
                                           filename_base=cache._impl.filename_base,
                                           source_stamp=cache._cache_file._source_stamp)
        cache.__dict__[_MARK] = found
    return found or None


def _load_shipped(cache, sig, target_context):
    index = _shipped_index(cache)
    if index is None:
        return None
    try:
        key = cache._index_key(sig, target_context.codegen())
        # the index's own _load_index / _load_data: the bundle is never written, so no lock (npu_emu.cache_lock)
        entries = index._load_index()
        name = next(filter(None, (entries.get(k) for k in lean_compile.keys_to_load((key[0], _bundle()[2], key[2])))),
                    None)
        if name is None:
            return None
        data = cache._impl.rebuild(target_context, index._load_data(name))
    except Exception:   # an unreadable or foreign bundle file: compile as without the bundle
        return None
    _state["hits"] = _state.get("hits", 0) + 1
    return data


def hits():
    """How many functions this process loaded from the shipped kernels."""
    return _state.get("hits", 0)


def install():
    """Wrap numba's ``FunctionCache.load_overload`` so that npu_emu's functions fall back to the shipped kernels
    (see the module docstring); idempotent. Other functions' loads are unchanged."""
    from numba.core import caching

    cls = caching.FunctionCache
    if getattr(cls, _MARK, False):
        return
    load = cls.load_overload

    def load_overload(self, sig, target_context):
        data = load(self, sig, target_context)
        if data is None and self._enabled:
            data = _load_shipped(self, sig, target_context)
        return data

    load_overload.__wrapped__ = load
    load_overload.__doc__ = load.__doc__
    cls.load_overload = load_overload
    setattr(cls, _MARK, True)
