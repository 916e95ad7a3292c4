"""DataCopy and DataCopyPad between GM, UB and UB (Ascend C data movement, MTE2 / MTE3).

A LocalTensor is a 1-D numpy view of the core's UB (``npu_emu.device.launch.ub_view``), a GlobalTensor a 1-D numpy
array (or a view of one starting at the tensor offset, ``x_gm[offset:]``); both sides have the same element type
T. The emulator never touches memory outside the two views: a transfer that would run past either end is cut at
the end (on the device that is a GM overrun or a write into the neighbouring UB buffer; kernels report GM
overruns in their trace, see docs/device/launch.md).

Sources: ``cannmirror/asc-devkit: docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/GM与UB数据搬运/``
(``GM与UB连续数据搬运(DataCopy).md``, ``GM与UB高维切分数据搬运(DataCopy).md``,
``GMToUB非对齐数据搬运(DataCopyPad).md``, ``UBToGM非对齐数据搬运(DataCopyPad).md``).
"""

from dataclasses import dataclass

import numpy as np
from numba import njit, types
from numba.extending import overload

from npu_emu.ascendc._elem import itemsize
from npu_emu.ascendc.constants import BLOCK_BYTES
from npu_emu.ascendc.params import DataCopyParams
from npu_emu.errors import invalid

_JIT = dict(inline="always", cache=True, error_model="numpy")


@njit(inline="never", cache=True)
def _element_type_error():
    # Out of line: a `raise` inlined into a kernel's prange body stops numba from running the loop in parallel.
    raise ValueError("DataCopy/DataCopyPad: dst and src must have the same element type")


@njit(**_JIT)
def _copy_run(dst, d0, src, s0, n):
    """dst[d0:d0+n] = src[s0:s0+n], cut at the end of either view."""
    n = min(n, len(dst) - d0, len(src) - s0)
    if d0 >= 0 and s0 >= 0:
        # an explicit loop: LLVM vectorises it behind a run-time overlap check; numba's slice assignment is ~1.5x
        # slower here
        for i in range(n):
            dst[d0 + i] = src[s0 + i]


@njit(**_JIT)
def _fill_run(dst, d0, value, n):
    n = min(n, len(dst) - d0)
    for i in range(max(n, 0)):
        dst[d0 + i] = value


@njit(**_JIT)
def _data_copy_jit(dst, src, count, blockLen=None, srcStride=0, dstStride=0):
    """AscendC::DataCopy, GM -> UB, UB -> GM and UB -> UB (the direction does not change the semantics).

    Two overloads, as in Ascend C:

    * ``DataCopy(dst, src, count)``: ``count`` contiguous elements. ``count * sizeof(T)`` must be a multiple of
      32 bytes; if not, the device silently rounds the transfer **down** to a 32-byte multiple ("搬运量会向下取整
      到32字节对齐", ``GM与UB连续数据搬运(DataCopy).md``; ``kernel_operator_data_copy_intf_impl.h`` DataCopyCheck:
      "In NPU mode, no error is reported"). The emulator does the same, so the tail of dst keeps its old bytes.
    * ``DataCopy(dst, src, blockCount, blockLen, srcStride, dstStride)``: the ``DataCopyParams`` overload with the
      struct unpacked (njit cannot take the dataclass; ``data_copy`` takes it at Python level). ``blockCount``
      bursts of ``blockLen`` 32-byte blocks; ``srcStride`` / ``dstStride`` are the gaps between the end of one
      burst and the start of the next, in 32-byte blocks on both sides (``GM与UB高维切分数据搬运(DataCopy).md``).
      ``blockCount == 0`` or ``blockLen == 0`` is a no-op.
    """
    if itemsize(dst) != itemsize(src):
        _element_type_error()
    unit = BLOCK_BYTES // itemsize(dst)
    if blockLen is None:
        _copy_run(dst, 0, src, 0, count - count % unit)
    else:
        run = blockLen * unit
        for b in range(count):
            _copy_run(dst, b * (blockLen + dstStride) * unit, src, b * (blockLen + srcStride) * unit, run)


@njit(**_JIT)
def DataCopyPad(dst, src, blockCount, blockLen, srcStride, dstStride,
                isPad=None, leftPadding=0, rightPadding=0, paddingValue=0):
    """AscendC::DataCopyPad (Normal padding mode), byte-exact bursts between GM and UB.

    The two Ascend C overloads are told apart as in Ascend C, by the presence of the pad parameters:

    * ``DataCopyPad(dst_ub, src_gm, blockCount, blockLen, srcStride, dstStride, isPad, leftPadding, rightPadding,
      paddingValue)`` = GM -> UB with ``DataCopyExtParams`` and ``DataCopyPadExtParams`` unpacked. Burst b reads
      ``blockLen`` bytes at GM byte offset ``b * (blockLen + srcStride)``; in UB it occupies
      ``ceil32(leftPadding*sizeof(T) + blockLen + rightPadding*sizeof(T))`` bytes starting at
      ``b * (that + 32 * dstStride)``: left pad, data, right pad, then dummy elements up to the 32-byte boundary.
      Fill values (``GMToUB非对齐数据搬运(DataCopyPad).md``, 参数解释): with no left/right padding the dummy
      elements repeat the burst's first element; otherwise pads and dummies are ``paddingValue`` when ``isPad``,
      and "random" on the device when not -- the emulator writes ``paddingValue`` there too (documented fill
      instead of stale UB, docs/conventions.md §3 rule 3). ``SetPadValue`` is not modelled.
    * ``DataCopyPad(dst_gm, src_ub, blockCount, blockLen, srcStride, dstStride)`` = UB -> GM with
      ``DataCopyExtParams`` unpacked: burst b reads ``blockLen`` bytes at UB byte offset
      ``b * (ceil32(blockLen) + 32 * srcStride)`` and writes them at GM byte offset ``b * (blockLen + dstStride)``;
      the dummy bytes up to the 32-byte boundary are dropped (``UBToGM非对齐数据搬运(DataCopyPad).md``).

    Units: ``blockLen`` bytes (a multiple of sizeof(T)); GM-side strides in bytes, UB-side strides in 32-byte
    blocks. With typed views the GM byte offsets must be multiples of sizeof(T) (checked by ``data_copy_pad``).
    Pads are element counts (at most 32 bytes each). ``blockCount == 0`` or ``blockLen == 0`` is a no-op.
    """
    if itemsize(dst) != itemsize(src):
        _element_type_error()
    es = itemsize(dst)
    n = blockLen // es
    if blockLen == 0:
        return
    if isPad is None:
        ub_burst = (blockLen + BLOCK_BYTES - 1) // BLOCK_BYTES * BLOCK_BYTES + srcStride * BLOCK_BYTES
        for b in range(blockCount):
            _copy_run(dst, b * (blockLen + dstStride) // es, src, b * ub_burst // es, n)
    else:
        width = (leftPadding * es + blockLen + rightPadding * es + BLOCK_BYTES - 1) // BLOCK_BYTES * BLOCK_BYTES
        span = width // es
        for b in range(blockCount):
            s0 = b * (blockLen + srcStride) // es
            d0 = b * (width + dstStride * BLOCK_BYTES) // es
            _copy_run(dst, d0 + leftPadding, src, s0, n)
            if leftPadding == 0 and rightPadding == 0:
                if span > n and s0 < len(src):
                    _fill_run(dst, d0 + n, src[s0], span - n)
            else:
                fill = paddingValue
                _fill_run(dst, d0, fill, leftPadding)
                _fill_run(dst, d0 + leftPadding + n, fill, span - leftPadding - n)


# ----------------------------------------------------------------------------------------------------------------

def DataCopy(dst, src, count, blockLen=None, srcStride=0, dstStride=0):
    """AscendC::DataCopy. Inside njit code it is the instruction above (``_data_copy_jit``; count or the unpacked
    DataCopyParams). Called from Python it also takes the structs, validated before any njit call:
    ``DataCopy(dst, src, count)``, ``DataCopy(dst, src, DataCopyParams)`` and the enhanced CO1 -> CO2 form
    ``DataCopy(dst, src, intriParams, enhancedParams)`` with a ``DataCopyEnhancedParams``
    (``deq.data_copy_co1_to_co2``).
    """
    if blockLen is not None and not isinstance(blockLen, (int, np.integer)):
        from npu_emu.ascendc import deq  # the DEQ copy is a separate module; loaded only when it is used

        if isinstance(blockLen, deq.DataCopyEnhancedParams):
            return deq.data_copy_co1_to_co2(dst, src, count, blockLen)
        raise invalid(f"DataCopy: the 4th argument is {type(blockLen).__name__}; pass blockLen (an int) or a "
                      f"DataCopyEnhancedParams for the CO1 -> CO2 copy")
    if blockLen is None:
        return data_copy(dst, src, count)
    _check_views(dst, src, "DataCopy")
    # the unpacked form keeps the instruction's no-op for blockCount == 0 or blockLen == 0 (DataCopyParams wants >= 1)
    for name, v, hi in (("blockCount", count, 4095), ("blockLen", blockLen, 65535), ("srcStride", srcStride, 65535),
                        ("dstStride", dstStride, 65535)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v <= hi:
            raise invalid(f"DataCopy: {name}={v!r} is out of range; use an int in [0, {hi}]")
    _data_copy_jit(dst, src, int(count), int(blockLen), int(srcStride), int(dstStride))


@overload(DataCopy, inline="always")
def _data_copy_overload(dst, src, count, blockLen=None, srcStride=0, dstStride=0):
    # the overload is picked at typing time: forwarding an omitted blockLen as a None value would defeat numba's
    # pruning of `blockLen is None` in the instruction
    if blockLen is None or isinstance(blockLen, (types.NoneType, types.Omitted)):
        def count_form(dst, src, count, blockLen=None, srcStride=0, dstStride=0):
            _data_copy_jit(dst, src, count)
        return count_form

    def params_form(dst, src, count, blockLen=None, srcStride=0, dstStride=0):
        _data_copy_jit(dst, src, count, blockLen, srcStride, dstStride)
    return params_form


# Python-level conveniences: take the Ascend C structs, validate, then call the njit instruction.


@dataclass(frozen=True)
class DataCopyExtParams:
    """AscendC::DataCopyExtParams (``kernel_struct_data_copy.h``): byte-granular bursts for DataCopyPad.

    blockLen in bytes; the GM-side stride in bytes and the UB-side stride in 32-byte blocks (which side is GM
    depends on the direction of the copy).
    """

    blockCount: int = 1
    blockLen: int = 0
    srcStride: int = 0
    dstStride: int = 0
    rsv: int = 0

    def __post_init__(self):
        for name, hi in (("blockCount", 4095), ("blockLen", 2097151), ("srcStride", 2**32 - 1),
                         ("dstStride", 2**32 - 1)):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not 0 <= v <= hi:
                raise invalid(f"DataCopyExtParams.{name}={v!r} is out of range; use an int in [0, {hi}]")


@dataclass(frozen=True)
class DataCopyPadExtParams:
    """AscendC::DataCopyPadExtParams<T>: left/right padding (element counts, at most 32 bytes each)."""

    isPad: bool = False
    leftPadding: int = 0
    rightPadding: int = 0
    paddingValue: object = 0


def _check_views(dst, src, what):
    for name, a in (("dst", dst), ("src", src)):
        if not isinstance(a, np.ndarray) or a.ndim != 1:
            raise invalid(f"{what}: {name} must be a 1-D numpy array (a LocalTensor / GlobalTensor view)")
    if dst.dtype.itemsize != src.dtype.itemsize:
        raise invalid(f"{what}: dst ({dst.dtype}) and src ({src.dtype}) must have the same element type")


def data_copy(dst, src, params):
    """``DataCopy(dst, src, count)`` or ``DataCopy(dst, src, DataCopyParams)`` called from Python."""
    _check_views(dst, src, "DataCopy")
    if isinstance(params, DataCopyParams):
        _data_copy_jit(dst, src, params.blockCount, params.blockLen, params.srcStride, params.dstStride)
        return
    if not isinstance(params, (int, np.integer)) or isinstance(params, bool) or params < 0:
        raise invalid(f"DataCopy: count={params!r} must be a non-negative int or a DataCopyParams")
    _data_copy_jit(dst, src, int(params))


def data_copy_pad(dst, src, copy_params, pad_params=None):
    """``DataCopyPad`` called from Python with the Ascend C structs.

    With ``pad_params`` (a ``DataCopyPadExtParams``) it is the GM -> UB overload, without it UB -> GM.
    """
    _check_views(dst, src, "DataCopyPad")
    if not isinstance(copy_params, DataCopyExtParams):
        raise invalid("DataCopyPad: copy_params must be a DataCopyExtParams")
    es = dst.dtype.itemsize
    p = copy_params
    if p.blockLen % es:
        raise invalid(f"DataCopyPad: blockLen={p.blockLen} must be a multiple of sizeof(T)={es}")
    gm_stride = p.srcStride if pad_params is not None else p.dstStride
    if gm_stride % es:
        raise invalid(f"DataCopyPad: the GM stride {gm_stride} must be a multiple of sizeof(T)={es} for a typed view")
    if pad_params is None:
        DataCopyPad(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride)
        return
    if not isinstance(pad_params, DataCopyPadExtParams):
        raise invalid("DataCopyPad: pad_params must be a DataCopyPadExtParams")
    for name in ("leftPadding", "rightPadding"):
        v = getattr(pad_params, name)
        if not isinstance(v, (int, np.integer)) or v < 0 or v * es > BLOCK_BYTES:
            raise invalid(f"DataCopyPad: {name}={v!r} must be an element count of at most 32 bytes")
    value = np.array(pad_params.paddingValue).astype(dst.dtype, casting="unsafe")[()]
    DataCopyPad(dst, src, p.blockCount, p.blockLen, p.srcStride, p.dstStride,
                bool(pad_params.isPad), int(pad_params.leftPadding), int(pad_params.rightPadding), value)
