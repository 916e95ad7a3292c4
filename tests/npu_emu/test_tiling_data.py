"""TilingData: C layout, byte images against hand-computed packings, range checks, numba view."""

import dataclasses
import pickle
from dataclasses import dataclass, field

import numba
import numpy as np
import pytest
from numba import njit

from npu_emu.errors import AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult


@dataclass(frozen=True)
class SignBitsPackTilingData(TilingData):
    # docs/ops/sign_bits.md §3.4: eight uint64_t then four uint32_t (80 bytes).
    _ctypes = ("uint64",) * 8 + ("uint32",) * 4
    smallCoreDataNum: int
    bigCoreDataNum: int
    finalBigTileNum: int
    finalSmallTileNum: int
    tileDataNum: int
    smallTailDataNum: int
    bigTailDataNum: int
    tailBlockNum: int
    usedDb: int
    lastCopyLength: int
    rightPaddingElemNums: int
    lastCalcLength: int


@dataclass(frozen=True)
class Mixed(TilingData):
    _ctypes = ("uint8", "uint32_t", "uint16", "uint64", "int8")
    a: int
    b: int
    c: int
    d: int
    e: int


@dataclass(frozen=True)
class Inner(TilingData):
    x: int = field(metadata={"ctype": "uint16"})
    y: int = field(metadata={"ctype": "uint8"})


@dataclass(frozen=True)
class Outer(TilingData):
    a: int = field(metadata={"ctype": "uint8"})
    inner: Inner = field(metadata={"ctype": Inner})
    arr: tuple = field(metadata={"ctype": "uint32[3]"})
    f: float = field(metadata={"ctype": "double"})
    g: float = field(metadata={"ctype": "float"})


def test_sign_bits_pack_matches_the_cann_ut_dump():
    # docs/ops/sign_bits.md §3.4 / T5: the UT prints the 80-byte struct as ten little-endian uint64 words:
    # "128 256 2 1 128 128 128 0 60129542144 274877906946", the last two packing the uint32 pairs
    # (14 << 32 | 0) and (64 << 32 | 2).
    td = SignBitsPackTilingData(128, 256, 2, 1, 128, 128, 128, 0, 0, 14, 2, 64)
    raw = td.to_bytes()
    assert len(raw) == td.nbytes() == 80
    words = np.frombuffer(raw, "<u8").tolist()
    assert words == [128, 256, 2, 1, 128, 128, 128, 0, 60129542144, 274877906946]
    assert SignBitsPackTilingData.from_bytes(raw) == td


def test_mixed_alignment_hand_packed():
    # uint8 a @0, uint32 b @4 (3 pad bytes), uint16 c @8, uint64 d @16 (6 pad), int8 e @24, size 25 -> 32.
    td = Mixed(0x11, 0x22334455, 0x6677, 0x8899AABBCCDDEEFF, -2)
    expected = bytes.fromhex("11000000 55443322 7766000000000000 FFEEDDCCBBAA9988 FE00000000000000")
    assert Mixed.offsets() == {"a": 0, "b": 4, "c": 8, "d": 16, "e": 24}
    assert td.to_bytes() == expected
    assert Mixed.from_bytes(expected) == td
    assert Mixed.from_bytes(np.frombuffer(expected, np.uint8)) == td


def test_nested_struct_and_array_hand_packed():
    # Inner {uint16 x @0; uint8 y @2} is 4 bytes, align 2. Outer: a @0, inner @2, arr uint32[3] @8 (2 pad),
    # f double @24 (4 pad), g float @32, size 36 -> 40. 1.5 = 0x3FF8000000000000, -2.0f = 0xC0000000.
    td = Outer(1, Inner(0x0203, 4), (5, 6, 7), 1.5, -2.0)
    expected = bytes.fromhex("0100030204000000 0500000006000000 0700000000000000 000000000000F83F "
                             "000000C000000000")
    assert Outer.offsets() == {"a": 0, "inner": 2, "arr": 8, "f": 24, "g": 32}
    assert Outer.nbytes() == 40
    assert td.to_bytes() == expected
    assert Outer.from_bytes(expected) == td
    assert td.fields() == {"a": 1, "inner": {"x": 0x0203, "y": 4}, "arr": (5, 6, 7), "f": 1.5, "g": -2.0}
    assert Outer.ctypes() == {"a": "uint8_t", "inner": "Inner", "arr": "uint32_t[3]", "f": "double", "g": "float"}


def test_float_member_holds_the_float32_value():
    td = Outer(0, Inner(0, 0), (0, 0, 0), 0.1, 0.1)
    assert td.g == float(np.float32(0.1)) and td.f == 0.1
    assert Outer.from_bytes(td.to_bytes()) == td


@pytest.mark.parametrize("field_name,value", [
    ("a", 256), ("a", -1), ("b", 2**32), ("d", 2**64), ("e", 128), ("e", -129)])
def test_out_of_range_values_are_tiling_errors(field_name, value):
    kwargs = dict(a=0, b=0, c=0, d=0, e=0)
    kwargs[field_name] = value
    with pytest.raises(AclnnError) as e:
        Mixed(**kwargs)
    assert e.value.status == 561002
    assert f"Mixed.{field_name} = {value}" in e.value.message and "does not fit" in e.value.message


def test_range_edges_are_accepted():
    td = Mixed(255, 2**32 - 1, 65535, 2**64 - 1, -128)
    assert Mixed.from_bytes(td.to_bytes()) == td


@pytest.mark.parametrize("value", [1.0, True, "3", None])
def test_non_integers_are_rejected(value):
    with pytest.raises(AclnnError, match="must be an integer"):
        Mixed(value, 0, 0, 0, 0)


def test_float_overflow_and_array_length():
    with pytest.raises(AclnnError, match="overflows float"):
        Outer(0, Inner(0, 0), (0, 0, 0), 0.0, 1e39)
    with pytest.raises(AclnnError, match="sequence of 3"):
        Outer(0, Inner(0, 0), (0, 0), 0.0, 0.0)
    with pytest.raises(AclnnError, match="must be a Inner"):
        Outer(0, (0, 0), (0, 0, 0), 0.0, 0.0)


def test_numpy_integers_are_normalised():
    td = Mixed(np.uint8(1), np.int64(2), np.uint16(3), np.uint64(4), np.int8(-5))
    assert all(type(v) is int for v in td.fields().values())
    assert td == Mixed(1, 2, 3, 4, -5) and hash(td) == hash(Mixed(1, 2, 3, 4, -5))


def test_from_bytes_wrong_length():
    with pytest.raises(AclnnError) as e:
        Mixed.from_bytes(b"\0" * 25)
    assert e.value.status == 561002 and "32 bytes" in e.value.message


def test_fields_order_and_describe():
    td = SignBitsPackTilingData(128, 256, 2, 1, 128, 128, 128, 0, 0, 14, 2, 64)
    assert list(td.fields()) == [f.name for f in dataclasses.fields(td)]
    text = td.describe()
    assert text.splitlines()[0] == "SignBitsPackTilingData (80 bytes)"
    assert "    68  uint32_t       lastCopyLength           14 (0xe)" in text
    nested = Outer(1, Inner(2, 3), (4, 5, 6), 0.5, 0.25).describe()
    assert "inner.y" in nested and "     4  uint8_t" in nested


def test_to_numba_namedtuple():
    td = Mixed(1, 2, 3, 2**63 - 1, -5)
    nt = td.to_numba()
    assert type(nt) is Mixed.NumbaTuple and type(nt).__name__ == "Mixed"
    assert nt._fields == ("a", "b", "c", "d", "e")
    assert all(type(v) is int for v in nt) and nt.d == 2**63 - 1
    # typed int64, the same numba type an np.int64 value has: one kernel signature either way
    assert numba.typeof(nt) == numba.typeof(type(nt)(*[np.int64(v) for v in nt]))
    assert numba.typeof(nt)[3] == numba.int64
    # the class is published under its qualified name, so numba's cache index can unpickle it
    assert pickle.loads(pickle.dumps(Mixed.NumbaTuple)) is Mixed.NumbaTuple
    assert Mixed.NumbaTuple is not Outer.NumbaTuple


def test_to_numba_rejects_values_beyond_int64():
    with pytest.raises(AclnnError, match="exceeds int64"):
        Mixed(0, 0, 0, 2**63, 0).to_numba()


def test_to_numba_inside_njit():
    @njit(error_model="numpy")
    def use(td):
        return td.a * 1000 + td.inner.y * 100 + td.arr[2] * 10, td.g * np.float32(2.0)

    ints, g = use(Outer(3, Inner(1, 4), (0, 0, 5), 0.0, 0.75).to_numba())
    assert ints == 3000 + 400 + 50 and g == np.float32(1.5)


def test_declaration_errors_say_what_to_change():
    @dataclass
    class NotFrozen(TilingData):
        _ctypes = ("uint32",)
        a: int

    with pytest.raises(TypeError, match=r"@dataclass\(frozen=True\)"):
        NotFrozen(1)

    @dataclass(frozen=True)
    class WrongCount(TilingData):
        _ctypes = ("uint32",)
        a: int
        b: int

    with pytest.raises(TypeError, match="one C type per field"):
        WrongCount(1, 2)

    @dataclass(frozen=True)
    class BadType(TilingData):
        _ctypes = ("uint128",)
        a: int

    with pytest.raises(TypeError, match="unknown C type 'uint128'"):
        BadType(1)

    @dataclass(frozen=True)
    class NoType(TilingData):
        a: int

    with pytest.raises(TypeError, match="has no C type"):
        NoType(1)


def test_instances_are_frozen():
    td = Mixed(1, 2, 3, 4, 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        td.a = 7


def test_tiling_result_carries_the_launch_facts():
    td = Mixed(1, 2, 3, 4, 5)
    tr = TilingResult(td, 48, 1, 16 * 2**20, 196352, 48, "ascend910b2")
    assert (tr.tiling, tr.block_dim, tr.tiling_key, tr.workspace_size, tr.ub_size, tr.core_num, tr.soc,
            tr.notes) == (td, 48, 1, 16 * 2**20, 196352, 48, "ascend910b2", ())
    assert dataclasses.replace(tr, block_dim=2).block_dim == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.block_dim = 3


def test_coerce_takes_instance_dict_and_bytes():
    td = SignBitsPackTilingData(*range(1, 13))
    assert SignBitsPackTilingData.coerce(td) is td
    assert SignBitsPackTilingData.coerce(td.fields()) == td
    assert SignBitsPackTilingData.coerce(td.to_bytes()) == td
    assert SignBitsPackTilingData.coerce(np.frombuffer(td.to_bytes(), np.uint8)) == td


@pytest.mark.parametrize("bad, words", [
    ({"smallCoreDataNum": 1}, "missing"),
    ({**{f.name: 1 for f in dataclasses.fields(SignBitsPackTilingData)}, "extra": 2}, "unknown ['extra']"),
    ([1, 2, 3], "not list"),
    (b"\x00" * 3, "got 3 bytes"),
])
def test_coerce_rejects_with_aclnn_errors(bad, words):
    with pytest.raises(AclnnError, match=words.replace("[", r"\[").replace("]", r"\]")):
        SignBitsPackTilingData.coerce(bad)
