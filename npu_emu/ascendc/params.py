"""Ascend C parameter structs shared by the instruction layer (names and fields as in the Ascend C API)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class DataCopyParams:
    """AscendC::DataCopyParams: blockCount bursts of blockLen units; strides are gaps between bursts.

    Units are 32-byte blocks for GM<->UB copies (the CO1->CO2 enhanced form uses its own units,
    see npu_emu.ascendc.deq).
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0

    def __post_init__(self):
        for name, lo, hi in (("blockCount", 1, 4095), ("blockLen", 1, 65535),
                             ("srcStride", 0, 65535), ("dstStride", 0, 65535)):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                from npu_emu.errors import invalid
                raise invalid(f"DataCopyParams.{name}={v!r} is out of range; use an int in [{lo}, {hi}]")
