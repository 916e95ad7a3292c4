"""Enhanced DataCopy CO1 (L0C) -> CO2 (UB) with on-the-fly dequantisation (docs/ops/data_copy_dequant.md).

Ascend C: ``DataCopy(dst, src, DataCopyParams, DataCopyEnhancedParams)`` on the Atlas inference AI Core (310P,
dav-m200; the Atlas training dav-c100 header has the same code). The hardware semantics are closed; npu-emu
reconstructs them from the API implementation (``cannmirror/asc-devkit:
impl/basic_api/dav_m200/kernel_operator_data_copy_impl.h``), Huawei's docs and golden scripts. Disputed points are
keyword switches (docs/conventions.md §3.1) with the documented defaults.

Public pieces:
* enums ``BlockMode``, ``DeqScale``, ``pad_t``, ``ConvRelu_t`` and their members as module constants;
* ``DeqValue`` (one 64-bit deq word), ``DeqVector`` (the 16 words of one VDEQ burst), ``DataCopyEnhancedParams``;
* ``deq_register`` (the DEQSCALE word the API writes), ``data_copy_enhanced`` (the instruction on byte images of
  UB and L0C), ``data_copy_co1_to_co2`` (the same on LocalTensor views);
* the argument rules the op data_copy_dequant shares (``resolve_switches``, ``check_soc``, ``check_words``, ...).

The op that dequantises a whole accumulator in one call, ``data_copy_dequant``, is npu_emu.kernels.data_copy_dequant:
this module is the instruction only and imports no front end.
"""

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from npu_emu.ascendc import deq_kernels as k
from npu_emu.ascendc.params import DataCopyParams
from npu_emu.dtypes.scalar import CAST_RINT, CAST_ROUND
from npu_emu.errors import invalid, nullptr

# ---------------------------------------------------------------------------------------------------------------
# Enums (cannmirror/asc-devkit: impl/basic_api/utils/kernel_utils_mode.h; pad_t and ConvRelu_t are the CCE
# compiler's, mirrored in xiaobingling93-pixel/Ascend-mssanitizer: csrc/core/framework/record_defs.h)
# ---------------------------------------------------------------------------------------------------------------


class BlockMode(IntEnum):
    BLOCK_MODE_NORMAL = 0
    BLOCK_MODE_MATRIX = 1
    BLOCK_MODE_VECTOR = 2
    BLOCK_MODE_SMALL_CHANNEL = 3
    BLOCK_MODE_DEPTHWISE = 4


class DeqScale(IntEnum):
    DEQ_NONE = 0
    DEQ = 1
    VDEQ = 2
    DEQ8 = 3
    VDEQ8 = 4
    DEQ16 = 5
    VDEQ16 = 6


class pad_t(IntEnum):  # noqa: N801 -- the CCE type name, verbatim
    PAD_NONE = 0
    PAD_MODE1 = 1
    PAD_MODE2 = 2
    PAD_MODE3 = 3
    PAD_MODE4 = 4
    PAD_MODE5 = 5
    PAD_MODE6 = 6
    PAD_MODE7 = 7
    PAD_MODE8 = 8


class ConvRelu_t(IntEnum):  # noqa: N801 -- the hardware crMode passed to copy_matrix_cc_to_ubuf
    CRMODE_NONE = 0
    CRMODE_F32toF16_NONE = 1
    CRMODE_F32toF16_RELU = 2
    CRMODE_S32toF16_NONE = 3
    CRMODE_F16toF32_NONE = 4
    CRMODE_NONE_RELU = 5
    CRMODE_F16_MUL = 6
    CRMODE_S32toF16_DEQSCALE_SPR = 7
    CRMODE_DEQSCALE_VDEQ8 = 8
    CRMODE_DEQSCALE_DEQ8 = 9
    CRMODE_DEQSCALE_VDEQ16 = 10
    CRMODE_DEQSCALE_DEQ16 = 11
    CRMODE_DEQSCALE_VDEQS16 = 12
    CRMODE_DEQSCALE_DEQS16 = 13


# The members as module constants, as Ascend C code names them (BLOCK_MODE_MATRIX, DEQ8, PAD_NONE, CRMODE_...).
BLOCK_MODE_NORMAL, BLOCK_MODE_MATRIX, BLOCK_MODE_VECTOR, BLOCK_MODE_SMALL_CHANNEL, BLOCK_MODE_DEPTHWISE = BlockMode
DEQ_NONE, DEQ, VDEQ, DEQ8, VDEQ8, DEQ16, VDEQ16 = DeqScale
PAD_NONE, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6, PAD_MODE7, PAD_MODE8 = pad_t
(CRMODE_NONE, CRMODE_F32toF16_NONE, CRMODE_F32toF16_RELU, CRMODE_S32toF16_NONE, CRMODE_F16toF32_NONE,
 CRMODE_NONE_RELU, CRMODE_F16_MUL, CRMODE_S32toF16_DEQSCALE_SPR, CRMODE_DEQSCALE_VDEQ8, CRMODE_DEQSCALE_DEQ8,
 CRMODE_DEQSCALE_VDEQ16, CRMODE_DEQSCALE_DEQ16, CRMODE_DEQSCALE_VDEQS16, CRMODE_DEQSCALE_DEQS16) = ConvRelu_t

# sidStoreMode values (a plain uint8_t in Ascend C; named after the doc's "前半段" / "后半段" / "完整的DataBlock").
# With sid0_half="low" (default) FIRST_HALF writes bytes [0, 16) of each 32 B block, SECOND_HALF bytes [16, 32).
SID_STORE_MODE_FIRST_HALF = 0
SID_STORE_MODE_SECOND_HALF = 1
SID_STORE_MODE_FULL_BLOCK = 2

# ---------------------------------------------------------------------------------------------------------------
# Switches (docs/ops/data_copy_dequant.md §0; docs/conventions.md §3.1)
# ---------------------------------------------------------------------------------------------------------------

SWITCH_CHOICES = {
    "mcb_shift": ("n_plus_1", "n"),
    "mcb_shift_rounding": ("floor", "trunc"),
    "mcb_saturate": ("int16", "wrap"),
    "clamp9": (True, False),
    "relu_mode": ("input_sign", "scaled", "final"),
    "offset_signed": (True, False),
    "m_truncate": (True, False),
    "deq_mul": ("f32", "exact"),
    "deq8_round": ("rne", "half_away"),
    "deq16_overflow": ("saturate", "inf"),
}
SWITCH_DEFAULTS = {name: choices[0] for name, choices in SWITCH_CHOICES.items()}
GEOMETRY_CHOICES = {"sid0_half": ("low", "high"), "vector_src_layout": ("slot", "contiguous")}
DEFAULT_SOC = "ascend310p"
# The CO1 -> CO2 copy exists only in the dav-m200 (310P) and dav-c100 (910) implementations; every other arch's
# DataCopyL0C2UBImpl asserts "unsupported" (A2/A3/950 move L0C out through Fixpipe).
DEQ_COPY_SOCS = ("ascend310p", "ascend910")

_U64 = (1 << 64) - 1


def _switch_value(name, value):
    choices = SWITCH_CHOICES.get(name) or GEOMETRY_CHOICES[name]
    for c in choices:
        if value is c or (type(value) is type(c) and value == c) or \
                (isinstance(c, bool) and isinstance(value, (bool, np.bool_)) and bool(value) == c):
            return c
    raise invalid(f"switch {name}={value!r} is not valid; use one of {list(choices)} (default {choices[0]!r})")


def resolve_switches(**switches):
    """The data_copy_deq arithmetic switches as the njit ``DeqSwitches`` tuple (validated, defaults filled in)."""
    unknown = set(switches) - set(SWITCH_CHOICES)
    if unknown:
        raise invalid(f"unknown data_copy_deq switch(es) {sorted(unknown)}; known: {sorted(SWITCH_CHOICES)}")
    sw = dict(SWITCH_DEFAULTS)
    for name, value in switches.items():
        sw[name] = _switch_value(name, value)
    relu = {"input_sign": k.RELU_INPUT_SIGN, "scaled": k.RELU_SCALED, "final": k.RELU_FINAL}[sw["relu_mode"]]
    return k.DeqSwitches(
        mcb_shift_plus1=int(sw["mcb_shift"] == "n_plus_1"),
        mcb_trunc=int(sw["mcb_shift_rounding"] == "trunc"),
        mcb_wrap=int(sw["mcb_saturate"] == "wrap"),
        clamp9=int(sw["clamp9"]),
        relu_mode=relu,
        offset_signed=int(sw["offset_signed"]),
        m_truncate=int(sw["m_truncate"]),
        mul_exact=int(sw["deq_mul"] == "exact"),
        deq8_rmode=int(CAST_RINT if sw["deq8_round"] == "rne" else CAST_ROUND),
        deq16_sat=int(sw["deq16_overflow"] == "saturate"),
    )


def check_soc(soc):
    if soc not in DEQ_COPY_SOCS:
        raise invalid(f"DataCopy CO1 -> CO2 is not available on soc={soc!r}: only the Atlas inference AI Core "
                      f"('ascend310p', dav-m200) and Atlas training ('ascend910', dav-c100) implement it; other "
                      f"products assert 'unsupported data copy from l0c to ubuf' and move L0C out with Fixpipe")


# ---------------------------------------------------------------------------------------------------------------
# The 64-bit deq word (§3.1)
# ---------------------------------------------------------------------------------------------------------------

def as_u64(v, what):
    """A uint64 bit pattern from a Python int in [0, 2^64), a numpy integer (int64 is read as its bits) or a
    DeqValue."""
    if isinstance(v, DeqValue):
        return v.word
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise invalid(f"{what}={v!r} must be an unsigned 64-bit integer")
    if isinstance(v, np.signedinteger):
        return int(np.int64(v).view(np.uint64)) if v < 0 else int(v)
    v = int(v)
    if not 0 <= v <= _U64:
        raise invalid(f"{what}={v} does not fit a uint64_t; use a value in [0, 2**64)")
    return v


def _f32_bits(x):
    return int(np.array(x, dtype=np.float32).view(np.uint32))


def _scale_ok(bits32, m_truncate=True):
    """M must be zero or a normal finite float (documented constraint); judged on the bits the hardware reads."""
    if m_truncate:
        bits32 &= 0xFFFFE000
    exp = (bits32 >> 23) & 0xFF
    return exp != 0xFF and not (exp == 0 and bits32 & 0x7FFFFF)


def _check_int(v, what, lo, hi):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or not lo <= int(v) <= hi:
        raise invalid(f"{what}={v!r} is out of range; use an int in [{lo}, {hi}]")
    return int(v)


def check_bool(v, what):
    if not isinstance(v, (bool, np.bool_)):
        raise invalid(f"{what}={v!r} must be a bool")
    return bool(v)


class DeqValue:
    """One 64-bit deq word: ``deqValue`` of DEQ8/DEQ16, or one entry of a VDEQ8/VDEQ16 vector (§3.1).

    | bits  | field  | property                                                           |
    | 0-31  | M      | ``scale_bits``; ``scale`` = float32(bits & 0xFFFFE000) (the hardware ignores bits 12..0) |
    | 32-35 | N      | ``n``; ``shift`` = N + 1 (1..16)                                   |
    | 36    | MCB    | ``mcb``: shift to int16 before the float conversion                |
    | 37-45 | offset | ``offset``: 9-bit two's complement, [-256, 255] (DEQ8 only)        |
    | 46    | sign   | ``sign``: int8 (True) or uint8 (False) result (DEQ8 only)          |
    | 47    | ReLU   | ``relu``                                                           |
    | 48-63 | -      | ``reserved``                                                       |

    ``DeqValue(word)`` parses; ``DeqValue.build(scale, shift=, mcb=, offset=, sign=, relu=)`` builds with range
    checks. ``int(v)`` / ``v.word`` give the uint64 back; ``decode(...)`` applies the switch readings.
    """

    __slots__ = ("_word",)

    def __init__(self, word=0):
        self._word = as_u64(word, "deqValue")

    @classmethod
    def build(cls, scale=1.0, *, shift=1, mcb=False, offset=0, sign=False, relu=False, scale_bits=None,
              reserved=0):
        """A word from its fields. ``scale`` is rounded to float32 (RNE) and stored with all 32 bits; pass
        ``scale_bits`` instead to give the bit pattern. Zero or a normal finite float is required."""
        if scale_bits is not None:
            bits = _check_int(scale_bits, "scale_bits", 0, 0xFFFFFFFF)
        else:
            if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, (int, float, np.integer, np.floating)):
                raise invalid(f"scale={scale!r} must be a real number")
            with np.errstate(over="ignore"):
                bits = _f32_bits(scale)
        if not _scale_ok(bits, m_truncate=False):
            raise invalid(f"scale {np.uint32(bits).view(np.float32)!r} (bits 0x{bits:08X}) is Inf, NaN or a "
                          f"float32 subnormal; the deq unit needs 0 or a normal finite float")
        n = _check_int(shift, "shift", 1, 16) - 1
        off = _check_int(offset, "offset", -256, 255) & 0x1FF
        res = _check_int(reserved, "reserved", 0, 0xFFFF)
        word = (bits | (n << 32) | (int(check_bool(mcb, "mcb")) << 36) | (off << 37)
                | (int(check_bool(sign, "sign")) << 46) | (int(check_bool(relu, "relu")) << 47) | (res << 48))
        return cls(word)

    @classmethod
    def build_array(cls, scales, *, shift=1, mcb=False, offset=0, sign=False, relu=False):
        """Vectorised ``build``: a uint64 array of words, one per element of ``scales`` (fields broadcast)."""
        s = np.asarray(scales, dtype=np.float64)
        with np.errstate(over="ignore"):
            bits = s.astype(np.float32).view(np.uint32).astype(np.uint64)
        bad = [i for i, b in np.ndenumerate(bits) if not _scale_ok(int(b), m_truncate=False)]
        if bad:
            raise invalid(f"scales{list(bad[0])} = {s[bad[0]]!r} is Inf, NaN or a float32 subnormal; the deq unit "
                          f"needs 0 or a normal finite float")
        fields_ = {"shift": (shift, 1, 16), "offset": (offset, -256, 255)}
        arrs = {}
        for name, (v, lo, hi) in fields_.items():
            a = np.asarray(v)
            if a.dtype.kind not in "iu" or a.size and (a.min() < lo or a.max() > hi):
                raise invalid(f"{name} must hold ints in [{lo}, {hi}]")
            arrs[name] = a.astype(np.int64)
        flags = {}
        for name, v in (("mcb", mcb), ("sign", sign), ("relu", relu)):
            a = np.asarray(v)
            if a.dtype != np.bool_:
                raise invalid(f"{name} must be bool (or an array of bools)")
            flags[name] = a.astype(np.uint64)
        word = (bits | ((arrs["shift"] - 1).astype(np.uint64) << np.uint64(32))
                | (flags["mcb"] << np.uint64(36)) | ((arrs["offset"] & 0x1FF).astype(np.uint64) << np.uint64(37))
                | (flags["sign"] << np.uint64(46)) | (flags["relu"] << np.uint64(47)))
        return np.ascontiguousarray(np.broadcast_to(word, np.broadcast(bits, word).shape), dtype=np.uint64)

    # -- fields --------------------------------------------------------------------------------------------------
    word = property(lambda self: self._word, doc="the uint64 word")
    scale_bits = property(lambda self: self._word & 0xFFFFFFFF, doc="bits 0..31 as stored")
    n = property(lambda self: (self._word >> 32) & 0xF, doc="raw 4-bit N field")
    shift = property(lambda self: self.n + 1, doc="right shift of the MCB / DEQS16 path: N + 1")
    mcb = property(lambda self: bool((self._word >> 36) & 1))
    offset_unsigned = property(lambda self: (self._word >> 37) & 0x1FF, doc="the 9 offset bits, 0..511")
    offset = property(lambda self: self.offset_unsigned - 512 if self.offset_unsigned >= 256
                      else self.offset_unsigned, doc="9-bit two's complement offset, [-256, 255]")
    sign = property(lambda self: bool((self._word >> 46) & 1))
    relu = property(lambda self: bool((self._word >> 47) & 1))
    reserved = property(lambda self: self._word >> 48)

    @property
    def scale(self):
        """M' = float32(bits & 0xFFFFE000): the scale the hardware multiplies by."""
        return np.uint32(self.scale_bits & 0xFFFFE000).view(np.float32)

    @property
    def scale_full(self):
        """float32 of all 32 stored bits (what m_truncate=False reads)."""
        return np.uint32(self.scale_bits).view(np.float32)

    def decode(self, *, mcb_shift="n_plus_1", offset_signed=True, m_truncate=True):
        """The fields as the deq unit reads them under the given switches."""
        mcb_shift = _switch_value("mcb_shift", mcb_shift)
        return {
            "scale": self.scale if _switch_value("m_truncate", m_truncate) else self.scale_full,
            "shift": self.n + (1 if mcb_shift == "n_plus_1" else 0),
            "mcb": self.mcb,
            "offset": self.offset if _switch_value("offset_signed", offset_signed) else self.offset_unsigned,
            "sign": self.sign,
            "relu": self.relu,
        }

    def fields(self):
        return {"scale_bits": self.scale_bits, "scale": float(self.scale), "n": self.n, "shift": self.shift,
                "mcb": self.mcb, "offset": self.offset, "sign": self.sign, "relu": self.relu,
                "reserved": self.reserved}

    def scale_is_valid(self, m_truncate=True):
        return _scale_ok(self.scale_bits, m_truncate)

    def with_relu(self, relu=True):
        return DeqValue((self._word & ~(1 << 47)) | (int(bool(relu)) << 47))

    def __int__(self):
        return self._word

    __index__ = __int__

    def __eq__(self, other):
        if isinstance(other, DeqValue):
            return self._word == other._word
        if isinstance(other, (int, np.integer)) and not isinstance(other, (bool, np.bool_)):
            return self._word == int(other)
        return NotImplemented

    def __hash__(self):
        return hash(self._word)

    def __repr__(self):
        return (f"DeqValue(0x{self._word:016X}: scale={float(self.scale)!r}, shift={self.shift}, mcb={self.mcb}, "
                f"offset={self.offset}, sign={self.sign}, relu={self.relu}"
                + (f", reserved=0x{self.reserved:X}" if self.reserved else "") + ")")


DEQ_VECTOR_ENTRIES = 16
DEQ_VECTOR_BYTES = 128
DEQADDR_LIMIT = 1 << 19  # DEQADDR is 14 bits of 32-byte units


def check_deq_tensor_addr(addr):
    """deqTensorAddr: a UB byte address, 32-byte aligned, inside the 14-bit DEQADDR field (in 32 B units)."""
    addr = as_u64(addr, "deqTensorAddr")
    if addr % 32:
        raise invalid(f"deqTensorAddr={addr} is not 32-byte aligned; the DEQSCALE register holds it in 32 B units")
    if addr >= DEQADDR_LIMIT:
        raise invalid(f"deqTensorAddr={addr} does not fit the 14-bit DEQADDR field (addr >> 5 < 16384)")
    return addr


class DeqVector:
    """The 16 deq words of one VDEQ8 / VDEQ16 burst: 128 little-endian bytes at UB address deqTensorAddr + 128*b
    (docs/ops/data_copy_dequant.md §3.3); an element in column c (c = n % 16) uses entry c. All entries must share the
    MCB bit."""

    __slots__ = ("_words",)

    def __init__(self, words):
        if isinstance(words, DeqVector):
            words = words.words
        items = list(words) if not isinstance(words, np.ndarray) or words.dtype.kind not in "iu" \
            else list(words.reshape(-1))
        if len(items) != DEQ_VECTOR_ENTRIES:
            raise invalid(f"a VDEQ vector has {DEQ_VECTOR_ENTRIES} entries, got {len(items)}")
        self._words = np.array([as_u64(w, f"entry {i}") for i, w in enumerate(items)], dtype=np.uint64)
        mcb = (self._words >> np.uint64(36)) & np.uint64(1)
        if mcb.min() != mcb.max():
            raise invalid(f"the MCB bit (bit 36) differs across the VDEQ vector (entries {np.flatnonzero(mcb)} set); "
                          f"all 16 entries of one vector must share it")

    @classmethod
    def build(cls, scales, **fields_):
        """16 words from 16 scales and shared (or per-entry) fields; see DeqValue.build_array."""
        s = np.asarray(scales)
        if s.shape != (DEQ_VECTOR_ENTRIES,):
            raise invalid(f"scales must have shape (16,), got {s.shape}")
        return cls(DeqValue.build_array(s, **fields_))

    @property
    def words(self):
        return self._words.copy()

    @property
    def entries(self):
        return [DeqValue(int(w)) for w in self._words]

    def __getitem__(self, c):
        return DeqValue(int(self._words[c]))

    def __len__(self):
        return DEQ_VECTOR_ENTRIES

    def __eq__(self, other):
        return isinstance(other, DeqVector) and bool(np.array_equal(self._words, other._words))

    def __repr__(self):
        return "DeqVector([" + ", ".join(f"0x{int(w):X}" for w in self._words) + "])"

    def to_bytes(self):
        return self._words.astype("<u8").tobytes()

    @classmethod
    def from_bytes(cls, data):
        data = bytes(data)
        if len(data) != DEQ_VECTOR_BYTES:
            raise invalid(f"a VDEQ vector is {DEQ_VECTOR_BYTES} bytes, got {len(data)}")
        return cls(np.frombuffer(data, dtype="<u8").astype(np.uint64))

    def write(self, ub, addr):
        """Store the 128 bytes into a UB byte image at ``addr`` (the deqTensorAddr of this burst)."""
        addr = check_deq_tensor_addr(addr)
        ub = _byte_image(ub, "ub", writeable=True)
        if addr + DEQ_VECTOR_BYTES > ub.size:
            raise invalid(f"the VDEQ vector at {addr} ends past the {ub.size}-byte UB image")
        ub[addr:addr + DEQ_VECTOR_BYTES] = np.frombuffer(self.to_bytes(), dtype=np.uint8)

    @classmethod
    def read(cls, ub, addr):
        addr = check_deq_tensor_addr(addr)
        ub = _byte_image(ub, "ub")
        if addr + DEQ_VECTOR_BYTES > ub.size:
            raise invalid(f"the VDEQ vector at {addr} ends past the {ub.size}-byte UB image")
        return cls.from_bytes(ub[addr:addr + DEQ_VECTOR_BYTES].tobytes())


# ---------------------------------------------------------------------------------------------------------------
# DataCopyEnhancedParams (cannmirror/asc-devkit: include/basic_api/kernel_struct_data_copy.h)
# ---------------------------------------------------------------------------------------------------------------

_ENHANCED_FIELDS = {
    "blockMode": lambda v: BlockMode(_check_int(v, "DataCopyEnhancedParams.blockMode", 0, 4)),
    "deqScale": lambda v: DeqScale(_check_int(v, "DataCopyEnhancedParams.deqScale", 0, 6)),
    "deqValue": lambda v: as_u64(v, "DataCopyEnhancedParams.deqValue"),
    "sidStoreMode": lambda v: _check_int(v, "DataCopyEnhancedParams.sidStoreMode", 0, 255),
    "isRelu": lambda v: check_bool(v, "DataCopyEnhancedParams.isRelu"),
    "padMode": lambda v: pad_t(_check_int(v, "DataCopyEnhancedParams.padMode", 0, 8)),
    "padValue": lambda v: as_u64(v, "DataCopyEnhancedParams.padValue"),
    "deqTensorAddr": lambda v: as_u64(v, "DataCopyEnhancedParams.deqTensorAddr"),
}


@dataclass
class DataCopyEnhancedParams:
    """AscendC::DataCopyEnhancedParams. Positional order = the C++ constructor's (deqTensorAddr is not in it);
    fields are range-checked (C types) on construction and on every assignment, as in
    ``p = DataCopyEnhancedParams(); p.blockMode = BLOCK_MODE_MATRIX``."""

    blockMode: BlockMode = BlockMode.BLOCK_MODE_NORMAL
    deqScale: DeqScale = DeqScale.DEQ_NONE
    deqValue: int = 0
    sidStoreMode: int = 0
    isRelu: bool = False
    padMode: pad_t = pad_t.PAD_NONE
    padValue: int = 0
    deqTensorAddr: int = 0

    def __setattr__(self, name, value):
        if name not in _ENHANCED_FIELDS:
            raise AttributeError(f"DataCopyEnhancedParams has no field {name!r}; fields: {list(_ENHANCED_FIELDS)}")
        super().__setattr__(name, _ENHANCED_FIELDS[name](value))


_SCALAR_DEQ = (DeqScale.DEQ8, DeqScale.DEQ16)
_VECTOR_DEQ = (DeqScale.VDEQ8, DeqScale.VDEQ16, DeqScale.VDEQ)


def deq_register(enhanced, dst_dtype):
    """The DEQSCALE special-register word ``DataCopyL0C2UBImpl`` writes before the copy, or None if it writes none.

    DEQ8/DEQ16: deqValue, OR-ed with bit 47 if isRelu and bit 46 if dst is int8_t (bits are only ever set).
    VDEQ8/VDEQ16/VDEQ: (deqTensorAddr >> 5) | isRelu << 15. DEQ: deqValue as is.
    """
    if not isinstance(enhanced, DataCopyEnhancedParams):
        raise invalid("enhanced must be a DataCopyEnhancedParams")
    if enhanced.deqScale in _SCALAR_DEQ:
        reg = enhanced.deqValue
        if enhanced.isRelu:
            reg |= 1 << 47
        if np.dtype(dst_dtype) == np.int8:
            reg |= 1 << 46
        return reg
    if enhanced.deqScale in _VECTOR_DEQ:
        return (enhanced.deqTensorAddr >> 5) | (int(enhanced.isRelu) << 15)
    if enhanced.deqScale == DeqScale.DEQ:
        return enhanced.deqValue
    return None


# ---------------------------------------------------------------------------------------------------------------
# The instruction: DataCopy CO1 -> CO2 on byte images
# ---------------------------------------------------------------------------------------------------------------

def _byte_image(a, what, writeable=False):
    if a is None:
        raise nullptr(what)
    if not isinstance(a, np.ndarray) or a.dtype != np.uint8 or a.ndim != 1 or not a.flags.c_contiguous:
        raise invalid(f"{what} must be a 1-D C-contiguous uint8 numpy array (a byte image of the buffer)")
    if writeable and not a.flags.writeable:
        raise invalid(f"{what} is read-only; pass a writeable byte image")
    return a


_SRC_TYPES = ("float16", "float32", "int32", "uint32")
_DST_TYPES = ("float16", "float32", "int32", "uint32", "int8", "uint8", "int16")


def _dtype_name(d, what):
    try:
        nd = np.dtype(d)
    except TypeError:
        raise invalid(f"{what}={d!r} is not a dtype") from None
    return nd.name


def _select_kind(src, dst, enhanced):
    """(kernel kind, crMode) for the (src, dst, deqScale, isRelu) combination (docs/ops/data_copy_dequant.md §1.2), or
    an AclnnError."""
    ds = enhanced.deqScale
    relu = enhanced.isRelu
    pair = f"{src} -> {dst}"
    if src == "int8":
        raise invalid("DataCopy from CO1 to CO2 with type int8_t is not supported (the API reports 'not supported')")
    if src not in _SRC_TYPES or dst not in _DST_TYPES:
        raise invalid(f"DataCopy CO1 -> CO2 has no {pair} overload; L0C holds half/float/int32/uint32 and the "
                      f"supported pairs are same-type, float -> half and int32 -> int8/uint8/int16/half")
    if ds in (DeqScale.DEQ, DeqScale.VDEQ) and (src, dst) in (("float16", "float16"), ("int32", "float16")):
        raise invalid(f"deqScale={ds.name} ({pair}, half-M scaling) is not emulated: the older docs mark it "
                      f"'当前暂不支持' and its arithmetic is unverified "
                      f"(docs/ops/data_copy_dequant.md §1.2 [L]); use DEQ16/VDEQ16")
    if src == dst:
        if src == "uint32":
            return k.K_COPY, ConvRelu_t.CRMODE_NONE  # the uint32 overload ignores isRelu
        if not relu:
            return k.K_COPY, ConvRelu_t.CRMODE_NONE
        kind = {"int32": k.K_RELU_S32, "float32": k.K_RELU_F32, "float16": k.K_RELU_F16}[src]
        return kind, ConvRelu_t.CRMODE_NONE_RELU
    if (src, dst) == ("float32", "float16"):
        return k.K_F32_TO_F16, (ConvRelu_t.CRMODE_F32toF16_RELU if relu else ConvRelu_t.CRMODE_F32toF16_NONE)
    if src == "int32" and dst == "float16":
        if ds == DeqScale.DEQ16:
            return k.K_DEQ16, ConvRelu_t.CRMODE_DEQSCALE_DEQ16
        if ds == DeqScale.VDEQ16:
            return k.K_DEQ16, ConvRelu_t.CRMODE_DEQSCALE_VDEQ16
        raise invalid(f"{pair} needs deqScale DEQ16 or VDEQ16 (got {ds.name}); the API asserts "
                      f"'deqScale should be DEQ / VDEQ / DEQ16 / VDEQ16'")
    if src == "int32" and dst in ("int8", "uint8"):
        if ds == DeqScale.DEQ8:
            return k.K_DEQ8, ConvRelu_t.CRMODE_DEQSCALE_DEQ8
        if ds == DeqScale.VDEQ8:
            return k.K_DEQ8, ConvRelu_t.CRMODE_DEQSCALE_VDEQ8
        raise invalid(f"{pair} with deqScale={ds.name} narrows int32 to 8 bits without a deq word (undefined on "
                      f"the device); use DEQ8 or VDEQ8")
    if src == "int32" and dst == "int16":
        if ds == DeqScale.DEQ16:
            return k.K_DEQS16, ConvRelu_t.CRMODE_DEQSCALE_DEQS16
        if ds == DeqScale.VDEQ16:
            return k.K_DEQS16, ConvRelu_t.CRMODE_DEQSCALE_VDEQS16
        raise invalid(f"{pair} with deqScale={ds.name} narrows int32 to int16 without a shift (undefined on the "
                      f"device); use DEQ16 (DEQS16) or VDEQ16 (VDEQS16)")
    raise invalid(f"DataCopy CO1 -> CO2 has no {pair} overload; supported pairs are same-type (half, float, "
                  f"int32, uint32), float -> half and int32 -> int8/uint8/int16/half")


def check_words(words, kind, what, m_truncate):
    """M must be zero or a normal finite float wherever the mode reads it (DEQ8 / DEQ16; DEQS16 ignores M)."""
    if kind not in (k.K_DEQ8, k.K_DEQ16):
        return
    bits = (np.asarray(words, np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    if m_truncate:
        bits &= np.uint32(0xFFFFE000)
    exp = (bits >> np.uint32(23)) & np.uint32(0xFF)
    bad = np.flatnonzero((exp == 0xFF) | ((exp == 0) & ((bits & np.uint32(0x7FFFFF)) != 0)))
    if bad.size:
        i = int(bad[0])
        raise invalid(f"{what}[{i}] = 0x{int(words[i]):016X}: its scale M is Inf, NaN or a float32 subnormal "
                      f"(documented constraint of the deq unit); use 0 or a normal finite float")


def data_copy_enhanced(dst_ub, dst_addr, src_l0c, src_addr, src_dtype, dst_dtype, params, enhanced, *,
                       soc=DEFAULT_SOC, sid0_half="low", vector_src_layout="slot", **switches):
    """One ``DataCopy(dst, src, intriParams, enhancedParams)`` from CO1 (L0C) to CO2 (UB), on byte images.

    dst_ub / src_l0c: 1-D uint8 images of this core's UB and L0C; dst_addr / src_addr: byte offsets of the dst and
    src LocalTensors; src_dtype / dst_dtype: their element types. The VDEQ table is read from dst_ub at
    ``enhanced.deqTensorAddr``. Writes dst_ub in place (with sidStoreMode 0/1 the other 16 B of each 32 B block keep
    their bytes) and returns the crMode used. Every unsupported combination raises AclnnError(161002).
    """
    dst_ub = _byte_image(dst_ub, "dst_ub (UB image)", writeable=True)
    src_l0c = _byte_image(src_l0c, "src_l0c (L0C image)")
    if not isinstance(params, DataCopyParams):
        raise invalid("intriParams must be a npu_emu.ascendc.params.DataCopyParams")
    if not isinstance(enhanced, DataCopyEnhancedParams):
        raise invalid("enhancedParams must be a DataCopyEnhancedParams")
    dst_addr = _check_int(dst_addr, "dst address", 0, dst_ub.size)
    src_addr = _check_int(src_addr, "src address", 0, src_l0c.size)
    check_soc(soc)
    sid0_half = _switch_value("sid0_half", sid0_half)
    vector_src_layout = _switch_value("vector_src_layout", vector_src_layout)
    sw = resolve_switches(**switches)

    src = _dtype_name(src_dtype, "src_dtype")
    dst = _dtype_name(dst_dtype, "dst_dtype")
    if enhanced.blockMode not in (BlockMode.BLOCK_MODE_MATRIX, BlockMode.BLOCK_MODE_VECTOR):
        raise invalid(f"blockMode={enhanced.blockMode.name} is not supported from CO1 to CO2 (当前暂不支持); the "
                      f"API asserts 'blockMode should be BLOCK_MODE_MATRIX / BLOCK_MODE_VECTOR'")
    if enhanced.padMode != pad_t.PAD_NONE:
        raise invalid(f"padMode={enhanced.padMode.name} is a reserved parameter (预留参数，当前暂不支持); "
                      f"use PAD_NONE")
    kind, crmode = _select_kind(src, dst, enhanced)
    s_size = np.dtype(src).itemsize
    d_size = np.dtype(dst).itemsize
    sid = enhanced.sidStoreMode
    if d_size == 1 and sid not in (0, 1, 2):
        raise invalid(f"sidStoreMode={sid} is not valid for an 8-bit dst; use 0 (first 16 B of each 32 B block), "
                      f"1 (second 16 B) or 2 (dense)")
    if dst_addr % 32:
        raise invalid(f"dst address {dst_addr} is not 32-byte aligned (the API asserts 'dst address should be "
                      f"32B aligned')")
    if src_addr % s_size:
        raise invalid(f"src address {src_addr} is not a multiple of the {s_size}-byte element size (emulator check)")

    bc, bl = params.blockCount, params.blockLen
    vector = enhanced.blockMode == BlockMode.BLOCK_MODE_VECTOR
    rows = 1 if vector else 16
    slot_elems = 16 if (vector and vector_src_layout == "contiguous") else 256
    half_split = d_size == 1 and sid in (0, 1)
    if half_split:
        h = sid if sid0_half == "low" else 1 - sid
        dst_half = 16 * h
        dst_frac, dst_row = (32, 0) if vector else (512, 32)
    else:
        dst_half = 0
        dst_frac, dst_row = (16 * d_size, 0) if vector else (256 * d_size, 16 * d_size)
    dst_burst = bl * dst_frac + params.dstStride * 32

    # bytes actually touched by burst b: [base + b*step, base + b*step + span)
    src_step = (bl + params.srcStride) * slot_elems * s_size
    src_span = ((bl - 1) * slot_elems + 16 * rows) * s_size
    dst_span = (bl - 1) * dst_frac + (rows - 1) * dst_row + dst_half + 16 * d_size
    _check_bursts(src_addr, src_step, src_span, bc, src_l0c.size, "reads L0C", "src_l0c")
    _check_bursts(dst_addr, dst_burst, dst_span, bc, dst_ub.size, "writes UB", "dst_ub")
    src_end = src_addr + (bc - 1) * src_step + src_span
    dst_end = dst_addr + (bc - 1) * dst_burst + dst_span

    relu = False
    burst_words = 0
    words = np.zeros(16, np.uint64)
    if kind in (k.K_DEQ8, k.K_DEQ16, k.K_DEQS16):
        if enhanced.deqScale in _SCALAR_DEQ:
            reg = deq_register(enhanced, dst)
            relu = bool((reg >> 47) & 1)
            words[:] = reg
            check_words(words[:1], kind, "deqValue (DEQSCALE register)", sw.m_truncate)
        else:
            addr = check_deq_tensor_addr(enhanced.deqTensorAddr)
            end = addr + DEQ_VECTOR_BYTES * bc
            if end > dst_ub.size:
                raise invalid(f"the VDEQ table for {bc} bursts ({DEQ_VECTOR_BYTES} B each) at deqTensorAddr={addr} "
                              f"ends at {end}, past the {dst_ub.size}-byte UB image")
            if addr < dst_end and dst_addr < end:
                raise invalid(f"the VDEQ table [{addr}, {end}) overlaps the bytes this copy writes [{dst_addr}, "
                              f"{dst_end}); the device's read order is not public (emulator check)")
            words = dst_ub[addr:end].copy().view("<u8").astype(np.uint64)
            mcb = ((words >> np.uint64(36)) & np.uint64(1)).reshape(bc, 16)
            mixed = np.flatnonzero(mcb.min(axis=1) != mcb.max(axis=1))
            if mixed.size:
                b = int(mixed[0])
                raise invalid(f"burst {b}: the VDEQ vector at {addr + DEQ_VECTOR_BYTES * b} mixes MCB bits (bit 36 "
                              f"set in entries {np.flatnonzero(mcb[b]).tolist()}); all 16 entries must share it")
            check_words(words, kind, f"VDEQ table at {addr}: entry", sw.m_truncate)
            relu = enhanced.isRelu  # DEQSCALE bit 15; the entries' bit 47 is ignored
            burst_words = 16
    elif kind in (k.K_RELU_S32, k.K_RELU_F32, k.K_RELU_F16, k.K_F32_TO_F16):
        relu = enhanced.isRelu

    src_region = src_l0c[src_addr:src_end]
    dst_region = dst_ub[dst_addr:dst_end]
    empty16, empty32 = np.empty(0, np.uint16), np.empty(0, np.uint32)
    src16 = src_region.view(np.uint16) if s_size == 2 else empty16
    src32 = src_region.view(np.uint32) if s_size == 4 else empty32
    dst16 = dst_region[:dst_region.size // 2 * 2].view(np.uint16) if d_size == 2 else empty16
    dst32 = dst_region[:dst_region.size // 4 * 4].view(np.uint32) if d_size == 4 else empty32
    m = np.empty(16, np.float64 if sw.mul_exact else np.float32)  # the scale dtype selects the datapath
    k.l0c_to_ub_kernel(dst_region, dst16, dst32, src16, src32, words, burst_words, m, kind, relu, bc, bl,
                       params.srcStride, slot_elems, rows, dst_burst, dst_frac, dst_row, dst_half, sw)
    return crmode


def _image_of(view, what):
    """(byte image, byte offset) of a LocalTensor view: the root buffer it views and where it starts in it."""
    if view is None:
        raise nullptr(what)
    if not isinstance(view, np.ndarray) or view.ndim != 1 or not view.flags.c_contiguous:
        raise invalid(f"{what} must be a 1-D C-contiguous numpy view of the buffer image (a LocalTensor)")
    root = view
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.c_contiguous:
        raise invalid(f"{what} views a non-contiguous buffer; pass a view of a contiguous UB / L0C image")
    image = root.reshape(-1).view(np.uint8)
    return image, view.__array_interface__["data"][0] - image.__array_interface__["data"][0]


def data_copy_co1_to_co2(dst, src, intriParams, enhancedParams, *, dst_dtype=None, src_dtype=None, **kwargs):
    """``DataCopy(dst, src, intriParams, enhancedParams)`` with LocalTensors given as typed 1-D numpy views of the
    core's UB (dst) and L0C (src) images, as the instruction layer represents them. The view's position inside
    its image is the tensor's address; deqTensorAddr is an address in dst's image. half travels as uint16 (this
    copy has no uint16 type, so uint16 means half); ``dst_dtype`` / ``src_dtype`` override the view dtypes.
    Keyword arguments are those of ``data_copy_enhanced`` (soc, sid0_half, vector_src_layout, switches)."""
    dst_img, dst_addr = _image_of(dst, "dst")
    src_img, src_addr = _image_of(src, "src")
    ddt = np.dtype(dst_dtype) if dst_dtype is not None else (np.dtype(np.float16) if dst.dtype == np.uint16
                                                             else dst.dtype)
    sdt = np.dtype(src_dtype) if src_dtype is not None else (np.dtype(np.float16) if src.dtype == np.uint16
                                                             else src.dtype)
    return data_copy_enhanced(dst_img, dst_addr, src_img, src_addr, sdt, ddt, intriParams, enhancedParams, **kwargs)


def _check_bursts(base, step, span, count, size, verb, what):
    """Raise naming the first burst whose byte range [base + b*step, +span) leaves an image of ``size`` bytes."""
    last_end = base + (count - 1) * step + span
    if last_end <= size:
        return
    room = size - base - span
    first = 0 if room < 0 else room // step + 1
    start = base + first * step
    raise invalid(f"burst {first} {verb} bytes [{start}, {start + span}) past the end of {what} ({size} bytes); "
                  f"enlarge the buffer or reduce blockCount/blockLen/strides")


__all__ = [
    "BlockMode", "DeqScale", "pad_t", "ConvRelu_t",
    *[e.name for enum in (BlockMode, DeqScale, pad_t, ConvRelu_t) for e in enum],
    "SID_STORE_MODE_FIRST_HALF", "SID_STORE_MODE_SECOND_HALF", "SID_STORE_MODE_FULL_BLOCK",
    "SWITCH_CHOICES", "SWITCH_DEFAULTS", "GEOMETRY_CHOICES", "DEQ_COPY_SOCS", "resolve_switches",
    "DeqValue", "DeqVector", "check_deq_tensor_addr", "DataCopyEnhancedParams", "deq_register",
    "data_copy_enhanced", "data_copy_co1_to_co2", "DEFAULT_SOC",
]
