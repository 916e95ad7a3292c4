"""TilingData: the typed struct a host tiling hands to its kernel (docs/device/launch.md).

An op declares its CANN TilingData struct as a frozen dataclass whose fields are the struct members in struct
order, each with its C type::

    @dataclass(frozen=True)
    class SignBitsUnpackTilingData(TilingData):
        _ctypes = ("uint64",) * 9          # or per field: x: int = field(metadata={"ctype": "uint32"})
        smallCoreDataNum: int
        ...

C types: ``int8 .. int64``, ``uint8 .. uint64`` (the ``_t`` spellings too), ``float`` / ``double``, fixed
arrays ``"uint32[16]"`` (tuple values) and nested structs (another TilingData subclass as the ctype). The
byte image (:meth:`TilingData.to_bytes`) is little-endian with natural alignment, as the device compiler lays
out the struct (docs/ops/sign_bits.md §3.4: the UT's 8-byte dump shows the uint32 members packed pairwise after the
uint64 ones), so users can feed what their own op_host produced (:meth:`TilingData.from_bytes`).

Values are range-checked against their C type at construction: a tiling that computes a value the struct
cannot hold is a tiling bug (the C code would silently wrap), reported as AclnnError 561002.

Inside njit kernels the tiling arrives as ``td = tiling.to_numba()``: a namedtuple with the same field names,
integers as Python ints that numba types int64 (so unsigned arithmetic never mixes uint64 and int64 into float64
in numba), float fields as float32/float64, arrays as tuples and nested structs as nested namedtuples.

A host tiling function returns a :class:`TilingResult`: the struct plus what op_host sets besides it
(SetBlockDim, the tiling key, the workspace size) and the platform numbers it used.
"""

import collections
import dataclasses
import math
import struct

import numpy as np

from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, ACLNN_ERR_PARAM_INVALID, AclnnError

__all__ = ["TilingData", "TilingResult", "CTYPES"]

# canonical name -> (struct code, size, python kind, lo, hi)
_INT_CODES = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
              "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q"}
CTYPES = {}
for _name, _code in _INT_CODES.items():
    _bits = struct.calcsize(_code) * 8
    _lo, _hi = (0, 2**_bits - 1) if _name.startswith("u") else (-(2**(_bits - 1)), 2**(_bits - 1) - 1)
    CTYPES[_name] = (_code, _bits // 8, "int", _lo, _hi)
CTYPES["float"] = ("f", 4, "float", None, None)
CTYPES["double"] = ("d", 8, "float", None, None)

_ALIASES = {f"{n}_t": n for n in _INT_CODES}
_ALIASES.update({"float32": "float", "float64": "double"})

_INT64_MAX = 2**63 - 1
_FLT_MAX = float(np.finfo(np.float32).max)


def _tiling_error(message):
    return AclnnError(ACLNN_ERR_INNER_TILING_ERROR, message)


class _Member:
    """One struct member: where it sits and how it converts."""

    __slots__ = ("name", "ctype", "offset", "size", "align", "count", "nested")

    def __init__(self, name, ctype, offset, size, align, count, nested):
        self.name, self.ctype, self.offset, self.size = name, ctype, offset, size
        self.align, self.count, self.nested = align, count, nested

    def c_decl(self):
        if self.nested is not None:
            return self.nested.__name__
        base = self.ctype if self.ctype in ("float", "double") else self.ctype + "_t"
        return f"{base}[{self.count}]" if self.count else base


class _Layout:
    __slots__ = ("members", "size", "align", "numba_tuple")

    def __init__(self, members, size, align):
        self.members, self.size, self.align = members, size, align
        self.numba_tuple = None


_LAYOUTS = {}


def _parse_ctype(owner, name, ctype):
    """-> (canonical scalar name or None, array count or 0, nested class or None)."""
    if isinstance(ctype, type) and issubclass(ctype, TilingData):
        return None, 0, ctype
    if not isinstance(ctype, str):
        raise TypeError(f"{owner.__name__}.{name}: C type {ctype!r} is neither a type name nor a TilingData "
                        f"subclass")
    text = ctype.replace(" ", "")
    count = 0
    if text.endswith("]") and "[" in text:
        text, _, dim = text[:-1].partition("[")
        if not dim.isdigit() or int(dim) <= 0:
            raise TypeError(f"{owner.__name__}.{name}: array length in {ctype!r} must be a positive integer")
        count = int(dim)
    canon = _ALIASES.get(text, text)
    if canon not in CTYPES:
        valid = ", ".join(list(CTYPES) + list(_ALIASES))
        raise TypeError(f"{owner.__name__}.{name}: unknown C type {ctype!r}; use one of {valid}, 'T[n]' or a "
                        f"TilingData subclass")
    return canon, count, None


def _layout(cls):
    """Compute (once per class) the C layout of a TilingData subclass."""
    lay = _LAYOUTS.get(cls)
    if lay is not None:
        return lay
    params = getattr(cls, "__dataclass_params__", None)
    if cls is TilingData or "__dataclass_fields__" not in cls.__dict__ or params is None or not params.frozen:
        raise TypeError(f"{cls.__name__} must be declared with @dataclass(frozen=True) (its fields are the "
                        f"CANN TilingData struct members in struct order)")
    fields = dataclasses.fields(cls)
    if not fields:
        raise TypeError(f"{cls.__name__} has no fields; declare the struct members as annotated fields")
    declared = cls.__dict__.get("_ctypes", getattr(cls, "_ctypes", None))
    if declared is not None and len(declared) != len(fields):
        raise TypeError(f"{cls.__name__}._ctypes has {len(declared)} entries for {len(fields)} fields; give one "
                        f"C type per field in struct order")
    members, offset, max_align = [], 0, 1
    for i, f in enumerate(fields):
        ctype = f.metadata.get("ctype")
        if ctype is None:
            if declared is None:
                raise TypeError(f"{cls.__name__}.{f.name} has no C type; add _ctypes = (...) to the class or "
                                f"field(metadata={{'ctype': 'uint32'}}) to the field")
            ctype = declared[i]
        elif declared is not None and declared[i] != ctype:
            raise TypeError(f"{cls.__name__}.{f.name}: metadata says {ctype!r} but _ctypes says "
                            f"{declared[i]!r}; keep one")
        canon, count, nested = _parse_ctype(cls, f.name, ctype)
        if nested is not None:
            sub = _layout(nested)
            size, align = sub.size, sub.align
        else:
            elem = CTYPES[canon][1]
            size, align = elem * max(count, 1), elem
        offset = -(-offset // align) * align               # natural alignment, as the C compiler pads
        members.append(_Member(f.name, canon, offset, size, align, count, nested))
        offset += size
        max_align = max(max_align, align)
    total = -(-offset // max_align) * max_align              # tail padding to the struct's alignment
    lay = _Layout(tuple(members), total, max_align)
    _LAYOUTS[cls] = lay
    return lay


def _check_scalar(cls, member, value, where):
    """Range-check one scalar and return it in canonical Python form (int, or float rounded to the C type)."""
    code, _, kind, lo, hi = CTYPES[member.ctype]
    label = f"{cls.__name__}.{where}"
    if kind == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise _tiling_error(f"{label} = {value!r} ({type(value).__name__}) must be an integer for "
                                f"{member.c_decl()}")
        value = int(value)
        if not lo <= value <= hi:
            raise _tiling_error(f"{label} = {value} does not fit {member.ctype}_t [{lo}, {hi}]: the tiling "
                                f"computed an out-of-range value (the C struct would wrap it); fix the tiling "
                                f"or widen the field's C type if the CANN struct uses a wider one")
        return value
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, (bool, np.bool_)):
        raise _tiling_error(f"{label} = {value!r} must be a number for {member.ctype}")
    value = float(value)
    if code == "f":
        if math.isfinite(value) and abs(value) > _FLT_MAX:
            raise _tiling_error(f"{label} = {value!r} overflows float (max {_FLT_MAX!r})")
        value = float(np.float32(value))                   # what the C float member holds
    return value


class _TilingMeta(type):
    def __getattr__(cls, name):
        # The kernel-side namedtuple class is built lazily per class and published as `Cls.NumbaTuple`, so
        # numba's on-disk cache index (which pickles argument types by qualified name) can resolve it in a
        # fresh process even before any instance exists.
        if name == "NumbaTuple" and cls is not TilingData:
            return cls._numba_tuple_class()
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")


class TilingData(metaclass=_TilingMeta):
    """Base class of every op's TilingData dataclass (see the module docstring)."""

    def __post_init__(self):
        lay = _layout(type(self))
        for m in lay.members:
            value = getattr(self, m.name)
            if m.nested is not None:
                if type(value) is not m.nested:
                    raise _tiling_error(f"{type(self).__name__}.{m.name} must be a {m.nested.__name__} "
                                        f"instance, got {type(value).__name__}")
                continue
            if m.count:
                if isinstance(value, np.ndarray):
                    value = value.tolist()
                if not isinstance(value, (tuple, list)) or len(value) != m.count:
                    raise _tiling_error(f"{type(self).__name__}.{m.name} must be a sequence of {m.count} "
                                        f"values for {m.c_decl()}, got {value!r}")
                clean = tuple(_check_scalar(type(self), m, v, f"{m.name}[{i}]") for i, v in enumerate(value))
            else:
                clean = _check_scalar(type(self), m, value, m.name)
            object.__setattr__(self, m.name, clean)        # normalise numpy scalars etc. on the frozen instance

    # ---- struct description ---------------------------------------------------------------------------
    @classmethod
    def nbytes(cls):
        """sizeof(the C struct), tail padding included."""
        return _layout(cls).size

    @classmethod
    def ctypes(cls):
        """{field: C declaration} in struct order."""
        return {m.name: m.c_decl() for m in _layout(cls).members}

    @classmethod
    def offsets(cls):
        """{field: byte offset} in struct order."""
        return {m.name: m.offset for m in _layout(cls).members}

    def fields(self):
        """{field: value} in struct order; nested structs as dicts, arrays as tuples."""
        out = {}
        for m in _layout(type(self)).members:
            v = getattr(self, m.name)
            out[m.name] = v.fields() if m.nested is not None else v
        return out

    def describe(self):
        """A table of offset, C type, field and value (hex for integers), for traces and error reports."""
        lines = [f"{type(self).__name__} ({self.nbytes()} bytes)",
                 f"{'offset':>6}  {'C type':<14} {'field':<24} value"]
        self._describe_into(lines, 0, "")
        return "\n".join(lines)

    def _describe_into(self, lines, base, prefix):
        for m in _layout(type(self)).members:
            v = getattr(self, m.name)
            if m.nested is not None:
                lines.append(f"{base + m.offset:>6}  {m.c_decl():<14} {prefix + m.name:<24} {{")
                v._describe_into(lines, base + m.offset, prefix + m.name + ".")
                continue
            if CTYPES[m.ctype][2] == "int" and not m.count:
                shown = f"{v} (0x{v & (2**(8 * m.size) - 1):x})"
            else:
                shown = repr(v)
            lines.append(f"{base + m.offset:>6}  {m.c_decl():<14} {prefix + m.name:<24} {shown}")

    def __str__(self):
        return self.describe()

    # ---- bytes --------------------------------------------------------------------------------------
    def to_bytes(self):
        """The struct's byte image: little-endian, natural alignment, zero padding."""
        # Kept on the (frozen) instance: a repeated call keys its memo on these bytes and launches the same tiling.
        raw = self.__dict__.get("_packed")
        if raw is None:
            buf = bytearray(self.nbytes())
            self._pack_into(buf, 0)
            raw = bytes(buf)
            object.__setattr__(self, "_packed", raw)
        return raw

    def _pack_into(self, buf, base):
        for m in _layout(type(self)).members:
            v = getattr(self, m.name)
            if m.nested is not None:
                v._pack_into(buf, base + m.offset)
            elif m.count:
                struct.pack_into(f"<{m.count}{CTYPES[m.ctype][0]}", buf, base + m.offset, *v)
            else:
                struct.pack_into("<" + CTYPES[m.ctype][0], buf, base + m.offset, v)

    @classmethod
    def from_bytes(cls, data):
        """Parse a struct image (bytes, bytearray, memoryview or a uint8 array) of exactly nbytes()."""
        raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        size = cls.nbytes()
        if len(raw) != size:
            raise _tiling_error(f"{cls.__name__}.from_bytes got {len(raw)} bytes; the struct is {size} bytes "
                                f"(check the struct definition against the op_host TilingData)")
        return cls._unpack(raw, 0)

    @classmethod
    def coerce(cls, value, what="tiling"):
        """A user's tiling data as an instance of this struct: an instance, a dict of its fields, or its packed
        bytes (what an op_host wrote). Anything else, or a dict with missing / unknown fields, is an AclnnError."""
        if isinstance(value, cls):
            return value
        if isinstance(value, (bytes, bytearray, memoryview)) or (isinstance(value, np.ndarray)
                                                                 and value.dtype == np.uint8):
            return cls.from_bytes(value)
        if isinstance(value, dict):
            names = [m.name for m in _layout(cls).members]
            missing = [n for n in names if n not in value]
            unknown = [k for k in value if k not in names]
            if missing or unknown:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                                 f"{what}: a {cls.__name__} dict needs exactly the fields {names}"
                                 + (f"; missing {missing}" if missing else "")
                                 + (f"; unknown {unknown}" if unknown else ""))
            return cls(**value)
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{what} must be a {cls.__name__}, a dict of its fields or its "
                                                  f"packed bytes, not {type(value).__name__}")

    @classmethod
    def _unpack(cls, raw, base):
        values = {}
        for m in _layout(cls).members:
            if m.nested is not None:
                values[m.name] = m.nested._unpack(raw, base + m.offset)
            elif m.count:
                values[m.name] = struct.unpack_from(f"<{m.count}{CTYPES[m.ctype][0]}", raw, base + m.offset)
            else:
                values[m.name] = struct.unpack_from("<" + CTYPES[m.ctype][0], raw, base + m.offset)[0]
        return cls(**values)

    # ---- numba ----------------------------------------------------------------------------------------
    @classmethod
    def _numba_tuple_class(cls):
        lay = _layout(cls)
        if lay.numba_tuple is None:
            nt = collections.namedtuple(cls.__name__, [m.name for m in lay.members])
            nt.__module__ = cls.__module__
            nt.__qualname__ = f"{cls.__qualname__}.NumbaTuple"
            lay.numba_tuple = nt
        return lay.numba_tuple

    def to_numba(self):
        """The namedtuple the kernel receives (one class per TilingData class, so one compile)."""
        nt = self.__dict__.get("_numba")
        if nt is None:
            nt = self._build_numba()
            object.__setattr__(self, "_numba", nt)
        return nt

    def _build_numba(self):
        values = []
        for m in _layout(type(self)).members:
            v = getattr(self, m.name)
            if m.nested is not None:
                values.append(v.to_numba())
            elif m.count:
                values.append(tuple(self._numba_scalar(m, x, f"{m.name}[{i}]") for i, x in enumerate(v)))
            else:
                values.append(self._numba_scalar(m, v, m.name))
        return type(self)._numba_tuple_class()(*values)

    def _numba_scalar(self, member, value, where):
        if member.ctype == "float":
            return np.float32(value)
        if member.ctype == "double":
            return np.float64(value)
        if value > _INT64_MAX:
            raise _tiling_error(f"{type(self).__name__}.{where} = {value} exceeds int64, the integer type "
                                f"kernels see; such a tiling cannot be emulated")
        # a Python int: numba types it int64 as it does np.int64 (one signature), and unboxes it faster
        # (a 94-field tiling: 10 against 16 us per kernel call)
        return int(value)


@dataclasses.dataclass(frozen=True)
class TilingResult:
    """What an op_host hands the launcher: the struct plus SetBlockDim, the tiling key and the workspace
    (user + system bytes), the usable UB and core count the tiling saw, and notes for the trace."""

    tiling: TilingData
    block_dim: int
    tiling_key: int
    workspace_size: int
    ub_size: int
    core_num: int
    soc: str
    notes: tuple = ()
