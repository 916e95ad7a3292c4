"""npu_emu.device.platforms against docs/device/platforms.md (section numbers cited per test)."""

import dataclasses
import pickle

import pytest

from npu_emu.device import platforms
from npu_emu.errors import AclnnError
from npu_emu.device.platforms import UNKNOWN, Platform

# docs/device/platforms.md §1, in table order.
SPEC_KEYS = ("ascend910b1", "ascend910b2", "ascend910b2c", "ascend910b3", "ascend910b4", "ascend910_93",
             "ascend950pr", "ascend950dt", "kirin9020", "ascend310p", "ascend910", "ut_faker")
A2_A3 = SPEC_KEYS[:6]


def test_names_are_exactly_the_spec_keys():
    assert platforms.names() == SPEC_KEYS


@pytest.mark.parametrize("spelling", ["ascend910b2", "Ascend910B2", "ASCEND910B2"])
def test_get_is_case_insensitive(spelling):
    assert platforms.get(spelling) is platforms.get("ascend910b2")


def test_get_passes_a_platform_through():
    p = platforms.get("ascend910b4")
    assert platforms.get(p) is p


@pytest.mark.parametrize("bad", ["ascend910c", "910B2", "", None, 3])
def test_get_unknown_lists_valid_names(bad):
    with pytest.raises(AclnnError) as e:
        platforms.get(bad)
    assert e.value.status == 161002
    for key in SPEC_KEYS:
        assert key in e.value.message


@pytest.mark.parametrize("key", A2_A3)
def test_910b_ub_reserve(key):
    # docs/device/platforms.md §2: GetCoreMemSize(UB) = ini 196608 minus LOCAL_RESERV_SIZE 256 on SocVersion
    # ASCEND910B.
    p = platforms.get(key)
    assert (p.ub_bytes, p.ub_reserve, p.ub_size) == (196608, 256, 196352)
    assert p.GetCoreMemSize("UB") == 196352


@pytest.mark.parametrize("key,aic,aiv", [("ascend910b1", 24, 48), ("ascend910b2", 24, 48), ("ascend910b2c", 24, 48),
                                         ("ascend910_93", 24, 48), ("ascend910b3", 20, 40), ("ascend910b4", 20, 40)])
def test_a2_core_counts(key, aic, aiv):
    # docs/device/platforms.md §3.1 and docs/ops/sign_bits.md §2.4: GetCoreNum() is the AIV count on split chips.
    p = platforms.get(key)
    assert (p.GetCoreNumAic(), p.GetCoreNumAiv(), p.GetCoreNum()) == (aic, aiv, aiv)


def test_l1_loses_the_reserve_too():
    # docs/device/platforms.md §2: "minus 256 on SocVersion ASCEND910B (also for L1)".
    p = platforms.get("ascend910b2")
    assert p.GetCoreMemSize("L1") == 524288 - 256
    assert p.GetCoreMemSize("l0a") == p.GetCoreMemSize("L0_A") == 65536
    assert p.GetCoreMemSize("L0_C") == 131072
    with pytest.raises(AclnnError, match="CoreMemType"):
        p.GetCoreMemSize("L3")


@pytest.mark.parametrize("key,expected", [(k, 16 * 2**20) for k in A2_A3 + ("ascend950pr", "ascend950dt")]
                         + [(k, 2 * 2**20) for k in ("kirin9020", "ascend310p", "ascend910")])
def test_system_workspace(key, expected):
    # docs/device/platforms.md §2: 16 MiB on DAV_2201 and DAV_3510, 2 MiB on every other arch.
    assert platforms.get(key).GetLibApiWorkSpaceSize() == expected


def test_anchor_table_910b2_and_910b4():
    # docs/device/platforms.md §4 anchor table; peaks derived as 16*16*16*2 * cube_cores * cube_hz (§3.1).
    b2 = platforms.get("ascend910b2")
    assert (b2.hbm_Bps, b2.cube_cores, b2.vector_cores, b2.cube_hz, b2.ub_bytes, b2.l2_bytes) == (
        1.6e12, 24, 48, 1.8e9, 196608, 201326592)
    assert b2.fp16_peak_flops == 24 * 8192 * 1_800_000_000
    assert b2.fp16_peak_flops == pytest.approx(3.54e14, rel=1e-3)
    assert b2.int8_peak_ops == 2 * b2.fp16_peak_flops
    b4 = platforms.get("ascend910b4")
    assert (b4.hbm_Bps, b4.cube_cores, b4.vector_cores, b4.cube_hz, b4.l2_bytes) == (
        0.8e12, 20, 40, 1.5e9, 100663296)
    assert b4.fp16_peak_flops == pytest.approx(2.458e14, rel=1e-3)


def test_950_placeholders_are_flagged():
    # §3.2 / §6 and docs/conventions.md §8 #38: AIV 56, AIC 28 assumed, UB placeholder 262144, no reserve.
    pr = platforms.get("ascend950pr")
    assert (pr.core_num, pr.cube_cores, pr.ub_size, pr.ub_reserve, pr.hbm_Bps) == (56, 28, 262144, 0, 1.6e12)
    for f in ("ub_size", "ub_bytes", "cube_cores", "core_num"):
        assert pr.placeholder_reason(f), f
    assert pr.placeholder_reason("hbm_Bps") is None
    dt = platforms.get("ascend950dt")
    assert dt.hbm_Bps == 4.0e12 and dt.cube_hz is UNKNOWN
    assert dt.placeholder_reason("vector_cores") and dt.placeholder_reason("ub_size")


def test_910b2c_sizes_are_assumed_from_910b2():
    # docs/device/platforms.md §6: "910B2C detailed sizes = 910B2".
    b2, b2c = platforms.get("ascend910b2"), platforms.get("ascend910b2c")
    assert b2c.ub_size == b2.ub_size and b2c.hbm_Bps == b2.hbm_Bps
    assert b2c.placeholder_reason("ub_size") and b2c.placeholder_reason("hbm_Bps")
    assert b2c.placeholder_reason("vector_cores") is None          # AIV 48 is sourced (torchair)


@pytest.mark.parametrize("key", ["kirin9020", "ascend310p", "ascend910"])
def test_unpublished_figures_are_unknown_not_guessed(key):
    # docs/device/platforms.md §3.3/§3.4/§6: no core counts, UB, bandwidth for these.
    p = platforms.get(key)
    for f in ("core_num", "ub_size", "hbm_Bps", "cube_hz", "l1_bytes"):
        assert getattr(p, f) is UNKNOWN, f
    with pytest.raises(AclnnError) as e:
        p.GetCoreMemSize("UB")
    assert e.value.status == 161002 and "ub_size=" in e.value.message and key in e.value.message
    with pytest.raises(AclnnError, match="core_num="):
        p.GetCoreNum()
    with pytest.raises(AclnnError):
        p.device_seconds(1e9)


def test_known_figures_are_numbers():
    for key in SPEC_KEYS:
        p = platforms.get(key)
        for f in p.placeholders:
            assert f[0] in {x.name for x in dataclasses.fields(Platform)}, (key, f)
        for name, value in p.known_figures().items():
            if name not in ("soc_version", "arch_name", "core_layout"):
                assert isinstance(value, int) and not isinstance(value, bool) and value >= 0, (key, name)


def test_ut_faker_defaults():
    # hicann/ops-math tests/ut/common/tiling_context_faker.h: coreNum 64, ubSize 262144; ws 16 MiB (sign_bits T1).
    p = platforms.get("ut_faker")
    assert (p.GetCoreNum(), p.GetCoreMemSize("UB"), p.GetLibApiWorkSpaceSize()) == (64, 262144, 16777216)


def test_platform_feeds_the_sign_bits_derived_values():
    # docs/ops/sign_bits.md §2.5 step 2/4 with ubSize 196352: f32 single t = 3968, f32 double 4752, f16 single 11536,
    # f16 double 11520; and T1 (ut_faker, ub 262144) tileDataNum = floor(t/64)*64 = 5312.
    def t(ub, per, keep):
        return ub - -(-ub // per) * keep
    ub = platforms.get("ascend910b2").GetCoreMemSize("UB")
    assert (t(ub, 49, 48), t(ub, 82, 80), t(ub, 17, 16), t(ub, 34, 32)) == (3968, 4752, 11536, 11520)
    faker = platforms.get("ut_faker").GetCoreMemSize("UB")
    assert t(faker, 49, 48) // 64 * 64 == 5312


def test_override():
    p = platforms.get("ascend950pr").override(core_num=32, ub_size=131072)
    assert (p.GetCoreNum(), p.GetCoreNumAiv(), p.GetCoreMemSize("UB")) == (32, 32, 131072)
    assert p.placeholder_reason("ub_size") is None and p.placeholder_reason("core_num") is None
    assert any("core_num overridden to 32" in n for n in p.notes)
    assert platforms.get("ascend950pr").core_num == 56                 # the table is untouched
    k = platforms.get("kirin9020").override(ub_size=65536)
    assert k.GetCoreMemSize("UB") == 65536
    same = platforms.get("ascend910b2")
    assert same.override() is same


@pytest.mark.parametrize("kwargs", [{"core_num": 0}, {"core_num": "48"}, {"ub_size": -1}, {"ub_size": True}])
def test_override_rejects_bad_values(kwargs):
    with pytest.raises(AclnnError) as e:
        platforms.get("ascend910b2").override(**kwargs)
    assert e.value.status == 161002


def test_device_seconds():
    # docs/device/platforms.md §4: max(bytes / hbm_Bps, flops / peak).
    p = platforms.get("ascend910b2")
    assert p.device_seconds(1.6e9) == pytest.approx(1e-3)
    assert p.device_seconds(0, flops=p.fp16_peak_flops) == pytest.approx(1.0)
    dt = platforms.get("ascend950dt")
    assert dt.device_seconds(4e9, flops=1e15, peak="fp8_peak_flops") == pytest.approx(1.0)
    with pytest.raises(AclnnError, match="fp16_peak_flops"):
        dt.device_seconds(1, flops=1)


def test_unknown_marker_cannot_be_used_as_a_number():
    assert repr(UNKNOWN) == "UNKNOWN"
    assert pickle.loads(pickle.dumps(UNKNOWN)) is UNKNOWN
    assert platforms.Unknown() is UNKNOWN
    with pytest.raises(TypeError):
        bool(UNKNOWN)
    with pytest.raises(TypeError):
        UNKNOWN * 2
    assert UNKNOWN != 0


def test_platform_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        platforms.get("ascend910b2").ub_size = 1
