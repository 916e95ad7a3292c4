"""SoC facts for host tiling and for the roofline benchmarks (docs/device/platforms.md).

One frozen :class:`Platform` per ``soc`` key of docs/device/platforms.md §1. Figures nobody has published are the
:data:`UNKNOWN` marker, never a guess: it has no truth value and no arithmetic, so code that would silently
use a missing figure fails loudly instead. Figures npu-emu *assumes* (the Ascend 950 UB size, 950 core counts,
910B2C sizes) are real numbers flagged in ``Platform.placeholders`` with the reason.

Host tiling code reads the platform through the ``PlatformAscendC`` method names (``GetCoreNum()``,
``GetCoreMemSize("UB")``, ``GetLibApiWorkSpaceSize()``, ...) so a port reads like its op_host original; those
methods raise :class:`~npu_emu.errors.AclnnError` 161002 naming the ``core_num=`` / ``ub_size=`` override when
the figure is unknown.

Usage::

    p = platforms.get("ascend910b2")              # case-insensitive
    p = p.override(core_num=64, ub_size=262144)   # the per-call switches of docs/conventions.md §3.1
    ub = p.GetCoreMemSize("UB")                   # 196352 on 910B: 196608 minus the 256-byte reserve
"""

from dataclasses import dataclass, field, fields as dc_fields, replace

from npu_emu.errors import ACLNN_ERR_PARAM_INVALID, AclnnError

__all__ = ["UNKNOWN", "Unknown", "Platform", "get", "names", "PLATFORMS"]


class Unknown:
    """The marker for a figure no public source gives (singleton :data:`UNKNOWN`)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "UNKNOWN"

    def __bool__(self):
        # `p.ub_size or 196352` would silently guess; make that a bug the caller sees.
        raise TypeError("an UNKNOWN platform figure has no truth value; test it with `is UNKNOWN`")

    def __reduce__(self):
        return (Unknown, ())


UNKNOWN = Unknown()

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

# Cube FLOP per cycle per AI Core for fp16: a 16x16x16 MMAD, 2 FLOP per multiply-add (docs/device/platforms.md §3.1).
_CUBE_FP16_FLOP_PER_CYCLE = 16 * 16 * 16 * 2

_MEM_TYPES = ("UB", "L1", "L0_A", "L0_B", "L0_C", "L2", "HBM")


@dataclass(frozen=True)
class Platform:
    """Facts about one SoC. Sizes in bytes, rates in bytes/s, clocks in Hz, peaks in operations/s.

    ``core_num`` is what ``GetCoreNum()`` returns (the vector-core count on split chips); ``cube_cores`` /
    ``vector_cores`` are AIC / AIV. ``ub_bytes`` is the ini UB size, ``ub_size`` what ``GetCoreMemSize(UB)``
    returns (ini minus ``ub_reserve``; tiling uses this one).
    """

    name: str
    product: str
    soc_version: object          # short SoC version string ("Ascend910B") or UNKNOWN
    npu_arch: object             # DAV number (2201, 3510, ...) or UNKNOWN
    arch_name: object            # "dav-c310", "dav_l310", ... where a source names it, else UNKNOWN
    core_layout: object          # "split" (AIC + AIV) | "coupled" (one AI Core) | UNKNOWN
    core_num: object
    cube_cores: object
    vector_cores: object
    ub_bytes: object
    ub_reserve: int
    ub_size: object
    l1_bytes: object
    l0a_bytes: object
    l0b_bytes: object
    l0c_bytes: object
    l2_bytes: object
    hbm_bytes: object
    hbm_Bps: object              # HBM bandwidth used by the device roofline (docs/device/platforms.md §4)
    cube_hz: object
    fp16_peak_flops: object
    int8_peak_ops: object
    fp8_peak_flops: object
    fp4_peak_flops: object
    sys_workspace_size: object   # GetLibApiWorkSpaceSize(): the system part of every op's workspace
    placeholders: tuple = ()     # ((field, why), ...): assumed values, usable but unverified
    notes: tuple = ()
    sources: tuple = field(default=(), repr=False, compare=False)

    # ---- queries -------------------------------------------------------------------------------------
    def is_known(self, name):
        return getattr(self, name) is not UNKNOWN

    def placeholder_reason(self, name):
        """Why ``name`` is an assumed value, or None when it is sourced (or unknown)."""
        return dict(self.placeholders).get(name)

    def known_figures(self):
        """{field: value} of every figure that is not UNKNOWN (descriptive fields excluded)."""
        skip = {"name", "product", "placeholders", "notes", "sources"}
        return {f.name: getattr(self, f.name) for f in dc_fields(self)
                if f.name not in skip and getattr(self, f.name) is not UNKNOWN}

    def _require(self, name, override_hint):
        value = getattr(self, name)
        if value is UNKNOWN:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"the {name} of soc {self.name!r} is not published (docs/device/platforms.md §6); "
                             f"{override_hint}")
        return value

    # ---- PlatformAscendC (CANN platform library) ----------------------------------------------------
    def GetCoreNum(self):
        """Vector cores on split chips, AI Cores on coupled ones (hiascend doc "GetCoreNum")."""
        return self._require("core_num", "pass core_num=<cores>")

    def GetCoreNumAic(self):
        # GetCoreNumByType: split chips report cube_core_cnt, coupled ones ai_core_cnt for both.
        if self.core_layout == "coupled":
            return self.GetCoreNum()
        return self._require("cube_cores", "pass core_num=<cores> (the AIC count is not published)")

    def GetCoreNumAiv(self):
        if self.core_layout == "coupled":
            return self.GetCoreNum()
        return self._require("vector_cores", "pass core_num=<cores>")

    def GetCoreMemSize(self, mem_type):
        """Usable bytes of a memory. UB and L1 lose the 256-byte KFC reserve on SocVersion ASCEND910B."""
        key = str(mem_type).upper().replace("L0A", "L0_A").replace("L0B", "L0_B").replace("L0C", "L0_C")
        if key not in _MEM_TYPES:
            raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                             f"unknown CoreMemType {mem_type!r}; use one of {', '.join(_MEM_TYPES)}")
        if key == "UB":
            return self._require("ub_size", "pass ub_size=<bytes>")
        attr = {"L1": "l1_bytes", "L0_A": "l0a_bytes", "L0_B": "l0b_bytes", "L0_C": "l0c_bytes",
                "L2": "l2_bytes", "HBM": "hbm_bytes"}[key]
        value = self._require(attr, "this op cannot be tiled for this soc without it")
        return value - self.ub_reserve if key == "L1" else value

    def GetLibApiWorkSpaceSize(self):
        return self._require("sys_workspace_size", "the system workspace size is needed")

    # ---- overrides and roofline ----------------------------------------------------------------------
    def override(self, *, core_num=None, ub_size=None):
        """A copy with the per-call ``core_num=`` / ``ub_size=`` switches applied (None keeps the table value).

        ``ub_size`` is the usable size (what tiling sees), as in the UT fixtures' values 64 / 262144.
        """
        changes, notes = {}, list(self.notes)
        for name, value in (("core_num", core_num), ("ub_size", ub_size)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"{name}={value!r} is invalid; pass a positive int")
            changes[name] = value
            notes.append(f"{name} overridden to {value} (table value {getattr(self, name)!r})")
        if not changes:
            return self
        if "core_num" in changes and self.core_layout == "split":
            changes["vector_cores"] = changes["core_num"]      # GetCoreNum() is the AIV count on split chips
        if "ub_size" in changes:
            changes["ub_bytes"] = changes["ub_size"] + self.ub_reserve
        overridden = set(changes)
        kept = tuple((f, why) for f, why in self.placeholders if f not in overridden)
        return replace(self, placeholders=kept, notes=tuple(notes), **changes)

    def device_seconds(self, bytes_moved, flops=0, peak="fp16_peak_flops"):
        """Roofline device time max(bytes / hbm_Bps, flops / peak) of docs/device/platforms.md §4."""
        bw = self._require("hbm_Bps", "no device roofline can be computed for it (report the host roofline)")
        t = bytes_moved / bw
        if flops:
            t = max(t, flops / self._require(peak, "no compute roofline can be computed for it"))
        return t


# ---- the table -----------------------------------------------------------------------------------------
_SRC_910B = (
    "CANN platform_config Ascend910B1/B2/B4 .ini as quoted in public fixtures (docs/device/platforms.md §3.1)",
    "Ascend/torchair: docs/context/limit_core_num.md (ai_core_cnt / cube_core_cnt / vector_core_cnt)",
    "hicann/catlass: include/acot/arch/arch.hpp (AtlasA2 / AscendC910B3: MaxBlock 20, MaxAivBlock 40, UB 192 KiB)",
    "JiusiServe/light-llm-simulator: conf/hardware_config.py (910B2 1.8 GHz, 1.6 TB/s)",
    "CANN platform_ascendc.cpp: GetCoreMemSize LOCAL_RESERV_SIZE = 256, WORK_SPACE_SIZE_910B = 16 MiB",
)
_SRC_950 = (
    "docs/device/platforms.md §3.2: public note for SKU 950PR_9579 (56 AIV, 1650 MHz), "
        "Huawei Connect 2025 press coverage",
    "CANN platform_ascendc.cpp: WORK_SPACE_SIZE_950 = 16 MiB",
)


def _a2(name, product, aic, aiv, cube_hz, l2, hbm, hbm_Bps, l1=512 * KiB, l0a=64 * KiB, l0b=64 * KiB,
        l0c=128 * KiB, placeholders=(), notes=()):
    peak = (_CUBE_FP16_FLOP_PER_CYCLE * aic * cube_hz
            if UNKNOWN not in (aic, cube_hz) else UNKNOWN)
    return Platform(
        name=name, product=product, soc_version="Ascend910B", npu_arch=2201, arch_name=UNKNOWN,
        core_layout="split", core_num=aiv, cube_cores=aic, vector_cores=aiv,
        ub_bytes=196608, ub_reserve=256, ub_size=196608 - 256,
        l1_bytes=l1, l0a_bytes=l0a, l0b_bytes=l0b, l0c_bytes=l0c, l2_bytes=l2, hbm_bytes=hbm,
        hbm_Bps=hbm_Bps, cube_hz=cube_hz,
        # int8 MMAD is 16x32x16 per cycle: twice the fp16 rate ([DtypeMKN] of the ini).
        fp16_peak_flops=peak, int8_peak_ops=UNKNOWN if peak is UNKNOWN else 2 * peak,
        fp8_peak_flops=UNKNOWN, fp4_peak_flops=UNKNOWN,
        sys_workspace_size=16 * MiB,
        placeholders=tuple(placeholders),
        notes=("fp16_peak_flops derived as 16*16*16*2 * cube_cores * cube_hz "
               "(docs/device/platforms.md §3.1)",) + tuple(notes),
        sources=_SRC_910B)


_B2C_ASSUMED = "910B2C detailed figures are not published; npu-emu uses the 910B2 values (docs/device/platforms.md §6)"

_TABLE = (
    _a2("ascend910b1", "Atlas A2 (Ascend 910B1)", aic=24, aiv=48, cube_hz=1_850_000_000,
        l2=192 * MiB, hbm=64 * GiB, hbm_Bps=1_600_000_000_000,
        notes=("25 physical cube cores per some tables; 24 usable (ini cube_core_cnt)",
               "hbm_Bps 1.6 TB/s quoted; the ini-derived figure is 24 * 32 B * 1.85 GHz = 1.42 TB/s")),
    _a2("ascend910b2", "Atlas A2 (Ascend 910B2)", aic=24, aiv=48, cube_hz=1_800_000_000,
        l2=192 * MiB, hbm=64 * GiB, hbm_Bps=1_600_000_000_000,
        notes=("marketing quotes 376 TFLOPS fp16 at a higher clock",)),
    _a2("ascend910b2c", "Atlas A2 (Ascend 910B2C)", aic=24, aiv=48, cube_hz=1_800_000_000,
        l2=192 * MiB, hbm=64 * GiB, hbm_Bps=1_600_000_000_000,
        placeholders=[(f, _B2C_ASSUMED) for f in (
            "ub_bytes", "ub_size", "l1_bytes", "l0a_bytes", "l0b_bytes", "l0c_bytes", "l2_bytes",
            "hbm_bytes", "hbm_Bps", "cube_hz", "fp16_peak_flops", "int8_peak_ops")]),
    _a2("ascend910b3", "Atlas A2 (Ascend 910B3)", aic=20, aiv=40, cube_hz=1_800_000_000,
        l2=192 * MiB, hbm=64 * GiB, hbm_Bps=1_600_000_000_000,
        notes=("marketing quotes 313 TFLOPS fp16",)),
    _a2("ascend910b4", "Atlas A2 (Ascend 910B4)", aic=20, aiv=40, cube_hz=1_500_000_000,
        l2=96 * MiB, hbm=32 * GiB, hbm_Bps=800_000_000_000,
        notes=("hbm_Bps 0.8 TB/s; the ini-derived figure is 20 * 32 B * 1.5 GHz = 0.96 TB/s",)),
    _a2("ascend910_93", "Atlas A3 (one die of the Ascend 910_93 package)", aic=24, aiv=48,
        cube_hz=1_800_000_000, l2=192 * MiB, hbm=64 * GiB, hbm_Bps=1_600_000_000_000,
        l1=UNKNOWN, l0a=UNKNOWN, l0b=UNKNOWN,
        notes=("figures per die; a 2-die package has about 3.2 TB/s and 128 GB",
               "cube clock 1.85 GHz in A3 tuning notes; 24-25 AIC and 48-50 AIV in some tables",
               "L0C 128 KiB from the A2/A3 geometry 16 banks x 128 rows x 64 B")),
    Platform(
        name="ascend950pr", product="Ascend 950PR", soc_version="Ascend950", npu_arch=3510,
        arch_name="dav-c310", core_layout="split", core_num=56, cube_cores=28, vector_cores=56,
        ub_bytes=262144, ub_reserve=0, ub_size=262144,
        l1_bytes=UNKNOWN, l0a_bytes=UNKNOWN, l0b_bytes=UNKNOWN, l0c_bytes=UNKNOWN, l2_bytes=UNKNOWN,
        hbm_bytes=128 * 10**9, hbm_Bps=1_600_000_000_000, cube_hz=1_650_000_000,
        fp16_peak_flops=UNKNOWN, int8_peak_ops=UNKNOWN,
        fp8_peak_flops=10**15, fp4_peak_flops=2 * 10**15,
        sys_workspace_size=16 * MiB,
        placeholders=(
            ("core_num", "56 AIV from one public note for SKU 950PR_9579, unverified (docs/conventions.md §8 #38)"),
            ("vector_cores", "56 AIV from one public note for SKU 950PR_9579, unverified"),
            ("cube_cores", "unknown; npu-emu assumes 28 = AIV / 2 (docs/device/platforms.md §3.2)"),
            ("ub_bytes", "placeholder 262144: the 950 UB size is not published (docs/device/platforms.md §6)"),
            ("ub_size", "placeholder 262144: the 950 UB size is not published; no 256-byte reserve on 950"),
        ),
        notes=("HBM '128 GB HiBL 1.0' (press; GB vs GiB not stated)",
               "measured MTE2 read about 1.7 TB/s; tuned kernels 1.68-1.74 TB/s",
               "fp8_peak_flops covers FP8/MXFP8/HiF8 (1 PFLOPS); fp4_peak_flops is MXFP4 (2 PFLOPS)",
               "no 950 op in scope changes its values with the core count or UB size"),
        sources=_SRC_950),
    Platform(
        name="ascend950dt", product="Ascend 950DT", soc_version="Ascend950", npu_arch=3510,
        arch_name="dav-c310", core_layout="split", core_num=56, cube_cores=28, vector_cores=56,
        ub_bytes=262144, ub_reserve=0, ub_size=262144,
        l1_bytes=UNKNOWN, l0a_bytes=UNKNOWN, l0b_bytes=UNKNOWN, l0c_bytes=UNKNOWN, l2_bytes=UNKNOWN,
        hbm_bytes=144 * 10**9, hbm_Bps=4_000_000_000_000, cube_hz=UNKNOWN,
        fp16_peak_flops=UNKNOWN, int8_peak_ops=UNKNOWN,
        fp8_peak_flops=10**15, fp4_peak_flops=2 * 10**15,
        sys_workspace_size=16 * MiB,
        placeholders=tuple((f, "950DT core split is unknown (differs from 950PR); npu-emu uses the 950PR values "
                               "(docs/device/platforms.md §6)")
                           for f in ("core_num", "vector_cores", "cube_cores")) + (
            ("ub_bytes", "placeholder 262144: the 950 UB size is not published (docs/device/platforms.md §6)"),
            ("ub_size", "placeholder 262144: the 950 UB size is not published; no 256-byte reserve on 950"),
        ),
        notes=("HBM '144 GB HiZQ 2.0' (press; GB vs GiB not stated)",
               "the roofline uses the bandwidth term only: the 950DT clock is unknown"),
        sources=_SRC_950),
    Platform(
        name="kirin9020", product="Kirin 9020 phone SoC NPU", soc_version=UNKNOWN, npu_arch=UNKNOWN,
        arch_name="dav_l310", core_layout="split", core_num=UNKNOWN, cube_cores=UNKNOWN,
        vector_cores=UNKNOWN, ub_bytes=UNKNOWN, ub_reserve=0, ub_size=UNKNOWN,
        l1_bytes=UNKNOWN, l0a_bytes=UNKNOWN, l0b_bytes=UNKNOWN, l0c_bytes=UNKNOWN, l2_bytes=UNKNOWN,
        hbm_bytes=UNKNOWN, hbm_Bps=UNKNOWN, cube_hz=UNKNOWN,
        fp16_peak_flops=UNKNOWN, int8_peak_ops=UNKNOWN, fp8_peak_flops=UNKNOWN, fp4_peak_flops=UNKNOWN,
        sys_workspace_size=2 * MiB,
        placeholders=(("sys_workspace_size", "2 MiB by the platform-library rule for archs other than "
                                             "2201/3510; unverified for Kirin, unused by GatherDequantInt8"),),
        notes=("Huawei publishes no NPU core counts, UB size, clocks or bandwidth for the Kirin 9020",
               "GatherDequantInt8 runs on one core: no UB check unless ub_size= is given; no device roofline"),
        sources=("HarmonyOS CANN Kit docs (developer.huawei.com cannkit-* pages): separate Cube/Vector",
                 "GatherDequantInt8 kernel comment: dav_l310 (Kirin 9020)")),
    Platform(
        name="ascend310p", product="Atlas inference series (Ascend 310P)", soc_version="Ascend310P",
        npu_arch=2002, arch_name="dav-m200", core_layout="coupled", core_num=UNKNOWN, cube_cores=UNKNOWN,
        vector_cores=UNKNOWN, ub_bytes=UNKNOWN, ub_reserve=0, ub_size=UNKNOWN,
        l1_bytes=UNKNOWN, l0a_bytes=UNKNOWN, l0b_bytes=UNKNOWN, l0c_bytes=UNKNOWN, l2_bytes=UNKNOWN,
        hbm_bytes=UNKNOWN, hbm_Bps=UNKNOWN, cube_hz=UNKNOWN,
        fp16_peak_flops=UNKNOWN, int8_peak_ops=UNKNOWN, fp8_peak_flops=UNKNOWN, fp4_peak_flops=UNKNOWN,
        sys_workspace_size=2 * MiB,
        notes=("coupled AI Cores plus separate Vector Cores; the enhanced CO1 -> CO2 DataCopy is emulated on "
               "caller-provided UB/L0C images, so no sizes are needed (docs/device/platforms.md §3.4)",),
        sources=("CANN platform_ascendc.cpp: WORK_SPACE_SIZE = 2 MiB on archs other than 2201/3510",)),
    Platform(
        name="ascend910", product="Atlas training series, first-generation Ascend 910", soc_version="Ascend910",
        npu_arch=1001, arch_name="dav-c100", core_layout="coupled", core_num=UNKNOWN, cube_cores=UNKNOWN,
        vector_cores=UNKNOWN, ub_bytes=UNKNOWN, ub_reserve=0, ub_size=UNKNOWN,
        l1_bytes=UNKNOWN, l0a_bytes=UNKNOWN, l0b_bytes=UNKNOWN, l0c_bytes=UNKNOWN, l2_bytes=UNKNOWN,
        hbm_bytes=UNKNOWN, hbm_Bps=UNKNOWN, cube_hz=UNKNOWN,
        fp16_peak_flops=UNKNOWN, int8_peak_ops=UNKNOWN, fp8_peak_flops=UNKNOWN, fp4_peak_flops=UNKNOWN,
        sys_workspace_size=2 * MiB,
        notes=("only for the enhanced DataCopy, whose dav-c100 header has the same code as 310P",
               "marketing figures '32 Da Vinci cores, 256 TFLOPS' (2019) are not used (docs/device/platforms.md §5)"),
        sources=("CANN platform_ascendc.cpp: WORK_SPACE_SIZE = 2 MiB on archs other than 2201/3510",)),
    Platform(
        name="ut_faker", product="ops-math host-tiling UT fixture (TilingContextPara defaults)",
        soc_version=UNKNOWN, npu_arch=UNKNOWN, arch_name=UNKNOWN, core_layout=UNKNOWN,
        core_num=64, cube_cores=UNKNOWN, vector_cores=UNKNOWN,
        ub_bytes=262144, ub_reserve=0, ub_size=262144,
        l1_bytes=UNKNOWN, l0a_bytes=UNKNOWN, l0b_bytes=UNKNOWN, l0c_bytes=UNKNOWN, l2_bytes=UNKNOWN,
        hbm_bytes=UNKNOWN, hbm_Bps=UNKNOWN, cube_hz=UNKNOWN,
        fp16_peak_flops=UNKNOWN, int8_peak_ops=UNKNOWN, fp8_peak_flops=UNKNOWN, fp4_peak_flops=UNKNOWN,
        sys_workspace_size=16 * MiB,
        notes=("the fixture hands coreNum 64 and ubSize 262144 to tiling unchanged (docs/ops/sign_bits.md T1: "
               "tileDataNum 5312)", "its UTs expect workspace {16777216}"),
        sources=("hicann/ops-math: tests/ut/common/tiling_context_faker.h (coreNum = 64, ubSize = 262144)",)),
)

PLATFORMS = {p.name: p for p in _TABLE}


def names():
    """The soc keys of docs/device/platforms.md §1, in its order."""
    return tuple(PLATFORMS)


def get(name):
    """The :class:`Platform` for a soc key (case-insensitive); a Platform is returned unchanged."""
    if isinstance(name, Platform):
        return name
    key = name.lower() if isinstance(name, str) else None
    if key not in PLATFORMS:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID,
                         f"unknown soc {name!r}; use one of: {', '.join(PLATFORMS)}")
    return PLATFORMS[key]
