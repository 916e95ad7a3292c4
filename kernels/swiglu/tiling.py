"""op_host tiling of SwiGlu on the 910B / 910_93 (docs/ops/swiglu.md §3).

hicann/ops-nn: activation/swi_glu/op_host/swi_glu_tiling.cpp (Tiling4SwiGlu<SWIGLU_SINGLE>,
GluSingleTilingCalculator: SetTotalShape, CalcTiling, CalcOptTiling, CalcOptBaseShape, SaveOptBaseShape) and
op_host/swi_glu_tiling.h (SwiGluTilingData). The kernel side of the split (tile counts, tails, copy parameters)
is activation/swi_glu/op_kernel/glu_tiling_kernel.hpp (SwigluSingleTilingKernel), reproduced by
:func:`kernel_tiling`. All arithmetic is unsigned integer with truncating division, as in the C++.
"""

from dataclasses import dataclass

from npu_emu.device import platforms
from npu_emu.errors import ACLNN_ERR_INNER_TILING_ERROR, ACLNN_ERR_PARAM_INVALID, AclnnError
from npu_emu.device.tiling_data import TilingData, TilingResult

UB_RESERVED_BUFF = 0
L2_CACHE_LINE_SIZE = 512
UB_MIN_BLOCK_SIZE = 32
XXGLU_TQUE_NUM = 3
SWIGLU_TBUF_NUM_HALF = 2
SWIGLU_TBUF_NUM_BF16 = 2
SWIGLU_TBUF_NUM_FLOAT = 1
DISCONTINE_COPY_MAX_BLOCKCNT = 4095
DISCONTINE_COPY_MAX_BLOCKLEN = 65535
DISCONTINE_COPY_MAX_STRIDE = 65535
WORKSPACE_BUFFER = 16 * 1024 * 1024

#: tiling key = the input's ge::DataType
DT_KEYS = {"float32": 0, "float16": 1, "bfloat16": 27}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


@dataclass(frozen=True)
class SwiGluTilingData(TilingData):
    """op_host/swi_glu_tiling.h SwiGluTilingData (shared with SwiGluGrad and DequantSwigluQuant's 910B key)."""

    is32BAligned: int
    isDoubleBuffer: int
    rowLen: int
    colLen: int
    baseRowLen: int
    baseColLen: int
    activateLeft: int = 0
    biasIsEmpty: int = 0
    quantScaleIsEmpty: int = 0
    activateScaleIsEmpty: int = 0
    swiColLen: int = 0
    perRowLen: int = 0
    modRowLen: int = 0
    usedCoreNum: int = 0

    _ctypes = ("uint32", "uint32", "uint64", "uint64", "uint32", "uint32", "uint32", "uint32", "uint32", "uint32",
               "uint64", "uint64", "uint64", "uint32")


def _align_up(num, rnd):
    return 0 if rnd == 0 else (num + rnd - 1) // rnd * rnd


def _align_down(num, rnd):
    return 0 if (rnd == 0 or num < rnd) else num // rnd * rnd


def _div_ceil(num, div):
    return 0 if div == 0 else (num + div - 1) // div


def split_shape(shape, dim):
    """SetTotalShape: (rowLen, colLen) = (product of the dims before ``dim``, half the product of the rest).
    Raises AclnnError 161002 for a dim out of range or an odd split axis (the C++ fails the tiling)."""
    nd = len(shape)
    if dim < -nd or dim >= nd:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: dim={dim} is out of range for a {nd}-D x; pass a dim "
                                                  f"in [{-nd}, {nd - 1}]")
    split = dim + nd if dim < 0 else dim
    before = 1
    for d in shape[:split]:
        before *= int(d)
    after = 1
    for d in shape[split:]:
        after *= int(d)
    if after % 2 != 0:
        raise AclnnError(ACLNN_ERR_PARAM_INVALID, f"SwiGlu: the split axis of x (axis {split}, shape "
                                                  f"{tuple(shape)}) must be even; pass an x whose dim {dim} "
                                                  f"has an even length")
    return before, after // 2


class _Calc:
    """GluSingleTilingCalculator for SWIGLU_SINGLE."""

    def __init__(self, row_len, col_len, dtype, total_core):
        self.row_len = row_len
        self.col_len = col_len
        self.dtype = dtype
        self.dlen = ITEMSIZE[dtype]
        self.ub_min_block_len = UB_MIN_BLOCK_SIZE // self.dlen
        self.cache_line_len = L2_CACHE_LINE_SIZE // self.dlen
        self.align_pack_len = self.cache_line_len
        self.total_core = total_core
        self.is32b = 1 if col_len % self.ub_min_block_len == 0 else 0

    def max_tile_len(self, ub_size, buffer_num):
        if self.dtype == "float16":
            single = buffer_num * XXGLU_TQUE_NUM * 2 + SWIGLU_TBUF_NUM_HALF * 4
        elif self.dtype == "bfloat16":
            single = buffer_num * XXGLU_TQUE_NUM * 2 + SWIGLU_TBUF_NUM_BF16 * 4
        else:
            single = buffer_num * XXGLU_TQUE_NUM * 4 + SWIGLU_TBUF_NUM_FLOAT * 4
        return _align_down(ub_size // single, self.ub_min_block_len)

    def must_be_single_row(self, base_col):
        if self.is32b:
            return (self.col_len * 2 - base_col) > DISCONTINE_COPY_MAX_STRIDE * self.ub_min_block_len
        return (self.col_len * 2 - base_col) * self.dlen > DISCONTINE_COPY_MAX_STRIDE

    def invalid_base(self, base_row, base_col):
        return base_row < 1 or (base_row > 1 and self.must_be_single_row(base_col))

    def valid_tail_col(self, base_row, base_col):
        if base_col == 0:
            return False
        return not (base_row > 1 and self.must_be_single_row(self.col_len % base_col))

    def col_up_bound(self, max_tile):
        up = min(self.col_len, max_tile)
        if self.is32b:
            up = min(up, DISCONTINE_COPY_MAX_BLOCKLEN)
        else:
            up = min(up, DISCONTINE_COPY_MAX_BLOCKLEN // self.dlen)
        up &= 0xFFFFFFFF
        if up < self.col_len and up > self.cache_line_len:
            return _align_down(up, self.cache_line_len)
        return up

    def row_up_bound(self):
        return min(self.row_len, DISCONTINE_COPY_MAX_BLOCKCNT)

    def save(self, opt, base_row, base_col):
        if base_row == 0 or base_col == 0:
            return
        total_tiles = _div_ceil(self.row_len, base_row) * _div_ceil(self.col_len, base_col)
        base_size = base_row * base_col
        base_tiles = (self.row_len // base_row) * (self.col_len // base_col)
        used = min(total_tiles, self.total_core)
        o = opt
        if (o["optTotalTileNum"] == 0 or used > o["totalUsedCoreNum"]
                or (used == o["totalUsedCoreNum"] and total_tiles < o["optTotalTileNum"])
                or (used == o["totalUsedCoreNum"] and total_tiles == o["optTotalTileNum"]
                    and base_size > o["optBaseSize"])
                or (used == o["totalUsedCoreNum"] and total_tiles == o["optTotalTileNum"]
                    and base_size == o["optBaseSize"] and base_tiles > o["optBaseTileNum"])):
            o.update(optBaseRowLen=base_row, optBaseColLen=base_col, optTotalTileNum=total_tiles,
                     optBaseSize=base_size, optBaseTileNum=base_tiles, totalUsedCoreNum=used,
                     tileNumPerCore=_div_ceil(total_tiles, used))

    def opt_base_shape(self, opt, max_tile):
        base_col = self.col_up_bound(max_tile)
        if self.must_be_single_row(base_col):
            self.save(opt, 1, base_col)
            return True
        while True:
            base_row = min(max_tile // _align_up(base_col, self.ub_min_block_len) if base_col else 0,
                           self.row_up_bound())
            if self.invalid_base(base_row, base_col):
                return opt["optTotalTileNum"] > 0
            if self.valid_tail_col(base_row, base_col):
                self.save(opt, base_row, base_col)
            if base_col <= self.align_pack_len or base_row >= self.row_up_bound():
                return True
            if base_col % self.align_pack_len == 0:
                base_col -= self.align_pack_len
            else:
                base_col = _align_down(base_col, self.align_pack_len)

    def opt_tiling(self, ub_size, buffer_num):
        opt = dict(optBaseRowLen=0, optBaseColLen=0, optTotalTileNum=0, optBaseSize=0, optBaseTileNum=0,
                   totalUsedCoreNum=0, tileNumPerCore=0)
        max_tile = self.max_tile_len(ub_size, buffer_num)
        return (opt if self.opt_base_shape(opt, max_tile) else None), max_tile


def swiglu_tiling(shape, dim, dtype, *, soc="ascend910b2", core_num=None, ub_size=None):
    """Tiling4SwiGlu<SWIGLU_SINGLE> for x of ``shape`` (``dtype`` "float32" / "float16" / "bfloat16")."""
    plat = platforms.get(soc).override(core_num=core_num, ub_size=ub_size)
    total_core = int(plat.GetCoreNumAiv())
    ub = int(plat.GetCoreMemSize("UB")) - UB_RESERVED_BUFF
    row_len, col_len = split_shape(shape, int(dim))
    c = _Calc(row_len, col_len, dtype, total_core)
    db = 1
    opt, _ = c.opt_tiling(ub, 2)
    if opt is None:
        raise AclnnError(ACLNN_ERR_INNER_TILING_ERROR, f"SwiGlu tiling: no base tile fits rowLen={row_len}, "
                                                       f"colLen={col_len} in {ub} bytes of UB")
    if opt["tileNumPerCore"] == 2:
        nodb, _ = c.opt_tiling(ub, 1)
        if nodb is not None and nodb["tileNumPerCore"] == 1 and nodb["totalUsedCoreNum"] >= opt["totalUsedCoreNum"]:
            opt = nodb
            db = 0
    td = SwiGluTilingData(is32BAligned=c.is32b, isDoubleBuffer=db, rowLen=row_len, colLen=col_len,
                          baseRowLen=opt["optBaseRowLen"], baseColLen=opt["optBaseColLen"])
    return TilingResult(td, opt["totalUsedCoreNum"], DT_KEYS[dtype], WORKSPACE_BUFFER + plat.GetLibApiWorkSpaceSize(),
                        ub, total_core, plat.name)


@dataclass(frozen=True)
class KernelTiling:
    """SwigluSingleTilingKernel::GetTilingAndOffset: what every core derives from the struct (elements)."""

    tileLength: int        # UB elements per queue slot (rows padded to 32 bytes when not 32B-aligned)
    rowTileNum: int
    colTileNum: int
    totalTileNum: int
    baseRowTileNum: int
    baseColTileNum: int
    tailRowLen: int
    tailColLen: int
    padColLen: int         # baseColLen rounded up to 32 bytes (the UB row pitch)


def kernel_tiling(td, itemsize):
    blk = max(1, UB_MIN_BLOCK_SIZE // itemsize)
    pad_col = td.baseColLen if td.is32BAligned == 1 else _align_up(td.baseColLen, blk)
    tile_length = td.baseRowLen * pad_col
    base_row_tiles = td.rowLen // td.baseRowLen if td.baseRowLen else 0
    base_col_tiles = td.colLen // td.baseColLen if td.baseColLen else 0
    tail_row = td.rowLen % td.baseRowLen if td.baseRowLen else 0
    tail_col = td.colLen % td.baseColLen if td.baseColLen else 0
    row_tiles = base_row_tiles + (1 if tail_row > 0 else 0)
    col_tiles = base_col_tiles + (1 if tail_col > 0 else 0)
    return KernelTiling(tile_length, row_tiles, col_tiles, row_tiles * col_tiles, base_row_tiles, base_col_tiles,
                        tail_row, tail_col, pad_col)


def ub_bytes(td, dtype):
    """The UB the kernel's InitUbBuffer asks for: 3 queues of bufferNum slots of tileLength, plus the fp32 TBufs."""
    it = ITEMSIZE[dtype]
    kt = kernel_tiling(td, it)
    bn = 2 if td.isDoubleBuffer == 1 else 1
    tbufs = 1 if dtype == "float32" else 2
    return 3 * bn * kt.tileLength * it + tbufs * kt.tileLength * 4
