"""Front end of data_copy_dequant (``npu_emu.ops.data_copy_dequant``): normalise -> checks -> allocate -> kernel ->
convert. The op is an Ascend C instruction applied to a whole accumulator, so it has no host tiling and no
per-core split; docs/ops/data_copy_dequant.md §7 describes the interface and §4 the arithmetic.
"""

import numpy as np

from npu_emu.ascendc.deq import DEFAULT_SOC
from npu_emu.frontend.core import Origin, Trace, as_array, check_memory, to_user
from npu_emu.errors import invalid
from npu_emu.device.launch import serial_below
from npu_emu.device.read_only import read_only
from npu_emu.kernels.data_copy_dequant import kernel as K
from npu_emu.kernels.data_copy_dequant.checks import check_call
from npu_emu.ascendc import deq_kernels as deq_core


def data_copy_dequant(acc, deq_value, *, mode="DEQ8", is_relu=False, soc=DEFAULT_SOC, out=None, trace=False,
                      **switches):
    """Dequantise a whole L0C accumulator as CO1 -> CO2 DataCopy would, tile by tile, in one parallel call.

    acc: int32 array (..., N) in ND order. deq_value: a uint64 word (scalar DEQ8 / DEQ16 / DEQS16; the register
    word is deq_value | is_relu << 47 and its bit 47 decides ReLU) or a uint64 array of shape (N,) (VDEQ8 /
    VDEQ16 / VDEQS16: column n uses entry n, i.e. entry n % 16 of the table of N-fractal n // 16; ReLU is is_relu
    alone). mode: "DEQ8" -> int8 (sign bit 46 set) or uint8, "DEQ16" -> float16, "DEQS16" -> int16 ("VDEQ*"
    spellings are accepted with an array). In vector mode all entries must share MCB (and sign for DEQ8).
    soc: "ascend310p" (default) or "ascend910", the products whose DataCopy has this path.
    Keyword switches: ``npu_emu.ascendc.deq.SWITCH_CHOICES`` (defaults and evidence: docs/ops/data_copy_dequant.md
    §0). out: optional preallocated result (written only when every check has passed).
    """
    origin = Origin()
    acc = as_array(acc, "acc", origin=origin)
    call = check_call(acc, deq_value, mode, is_relu, soc, switches)
    out_dtype = call.out_dtype
    if out is None:
        check_memory(acc.size * np.dtype(out_dtype).itemsize, "data_copy_dequant output")
        result = np.empty(acc.shape, dtype=out_dtype)
    else:
        if not isinstance(out, np.ndarray) or out.shape != acc.shape or out.dtype != out_dtype \
                or not out.flags.c_contiguous or not out.flags.writeable:
            raise invalid(f"out must be a writeable C-contiguous {np.dtype(out_dtype).name} array of shape "
                          f"{acc.shape}")
        result = out
    if acc.size:
        with serial_below(acc.nbytes + result.nbytes):      # a small matrix: no thread pool (npu_emu.device.launch)
            _run(acc.reshape(-1), result.reshape(-1), call)
    res = to_user(result, origin)
    if trace:
        return res, Trace(op="data_copy_dequant", soc=soc,
                          quant_mode=("V" if call.per_channel else "") + call.base_mode,
                          notes=["whole-matrix form of the CO1 -> CO2 DataCopy (bit-identical to one copy per "
                                 "tile); an instruction, so no host tiling and no per-core split"])
    return res


def _run(flat_in, flat_out, call):
    sw, words, relu = call.switches, read_only(call.words), call.relu
    flat_in = read_only(flat_in)
    n = words.size
    m = np.empty(n, np.float64 if sw.mul_exact else np.float32)  # the scale dtype selects the datapath
    shift = np.empty(n, np.int32)
    off = np.empty(n, np.int32)
    mcb = bool((int(words[0]) >> 36) & 1)
    default = sw == deq_core.DEFAULT_SWITCHES
    if call.base_mode == "DEQ8":
        K.decode_table(words, sw, m, shift, off)
        m, shift, off = read_only(m), read_only(shift), read_only(off)
        if default:
            K.deq8_matrix_default(flat_in, flat_out.view(np.uint8), m, shift, off, mcb, call.signed, relu)
        else:
            K.deq8_matrix(flat_in, flat_out.view(np.uint8), m, shift, off, mcb, call.signed, relu, sw)
    elif call.base_mode == "DEQ16":
        K.decode_table(words, sw, m, shift, off)
        m, shift = read_only(m), read_only(shift)
        if default:
            K.deq16_matrix_default(flat_in, flat_out.view(np.uint16), m, shift, mcb, relu)
        else:
            K.deq16_matrix(flat_in, flat_out.view(np.uint16), m, shift, mcb, relu, sw)
    else:  # DEQS16 always shifts by N + 1, whatever mcb_shift says
        K.decode_table(words, sw._replace(mcb_shift_plus1=1), m, shift, off)
        K.deqs16_matrix(flat_in, flat_out, read_only(shift), relu)


__all__ = ["data_copy_dequant"]
