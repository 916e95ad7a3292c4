"""The Ascend C instruction layer: njit functions with the semantics of the Ascend C basic APIs.

A kernel in ``kernels/<op>/kernel.py`` calls these with the names and argument order of its Ascend C original, on
typed 1-D views: a LocalTensor is a numpy view of the core's UB, a GlobalTensor a 1-D array (``x_gm[offset:]``
for ``xGm[offset]``). Formats numba cannot hold (half, bf16, FP8, HiF8, FP4, E8M0) travel as uint16 / uint8 bit
views; instructions whose result depends on the format take a ``DT_*`` tag (``constants``). Every function is
``@njit(inline='always', cache=True, error_model='numpy')``; nothing is compiled at import.

Count-mode ("tensor前n个数据计算") forms only; the mask / repeat forms are not needed by the kernels in scope
(docs/ops/sign_bits.md, docs/ops/gather_dequant_int8.md, docs/ops/mx_quant.md, docs/ops/quant_matmul.md).

Modules: ``datacopy`` (DataCopy, DataCopyPad and their Python-level struct forms), ``vector`` (Duplicate, Add, Sub,
Mul, Div, Max, Min, Adds, Muls, Maxs, Mins, Abs, ShiftLeft, ShiftRight, And, Or, Not, ReduceMax, ReduceMin),
``transcendental`` (Exp and Reciprocal, with the Exp model switch), ``activation`` (Relu, Silu, FasterGelu, Gelu),
``cmpsel`` (Compare, CompareScalar / Compares, Select), ``cast`` (Cast), ``mmad`` (Mmad, MmadParams, layout
helpers), ``constants`` (SELMODE, CMPMODE, RoundMode, DT_* tags, Cast flags), ``params`` (DataCopyParams), ``nz``
(NZ layout helpers), ``deq`` (the enhanced CO1 -> CO2 DataCopy with dequantisation).
"""

from npu_emu.ascendc.activation import FasterGelu, Gelu, Relu, Silu
from npu_emu.ascendc.cast import Cast
from npu_emu.ascendc.cmpsel import Compare, Compares, CompareScalar, Select
from npu_emu.ascendc.constants import *  # noqa: F401,F403  (the enums are part of the API)
from npu_emu.ascendc.constants import __all__ as _constants_all
from npu_emu.ascendc.datacopy import (
    DataCopy,
    DataCopyExtParams,
    DataCopyPad,
    DataCopyPadExtParams,
    data_copy,
    data_copy_pad,
)
from npu_emu.ascendc.mmad import Mmad, MmadParams, l0c_to_nd, mmad, nd_to_l0a, nd_to_l0b
from npu_emu.ascendc.params import DataCopyParams
from npu_emu.ascendc.vector import (
    Abs,
    Add,
    Adds,
    And,
    Div,
    Duplicate,
    Max,
    Min,
    Maxs,
    Mins,
    Mul,
    Muls,
    Not,
    Or,
    ReduceMax,
    ReduceMin,
    ShiftLeft,
    ShiftRight,
    Sub,
)
from npu_emu.ascendc.transcendental import EXP_CORRECTLY_ROUNDED, EXP_EXP2, Exp, Reciprocal

__all__ = [
    "DataCopy", "DataCopyPad", "DataCopyParams", "DataCopyExtParams", "DataCopyPadExtParams", "data_copy",
    "data_copy_pad",
    "Duplicate", "Add", "Sub", "Mul", "Div", "Max", "Min", "Adds", "Muls", "Maxs", "Mins", "Abs", "ShiftLeft",
    "ShiftRight", "And", "Or", "Not", "ReduceMax", "ReduceMin",
    "Exp", "Reciprocal", "EXP_CORRECTLY_ROUNDED", "EXP_EXP2",
    "Relu", "Silu", "FasterGelu", "Gelu",
    "Compare", "CompareScalar", "Compares", "Select",
    "Cast",
    "Mmad", "MmadParams", "mmad", "nd_to_l0a", "nd_to_l0b", "l0c_to_nd",
] + list(_constants_all)

# The enhanced CO1 -> CO2 DataCopy with dequantisation lives in ``deq`` (its own helper); its public names are also
# reachable from here, imported on first use so that a problem there never breaks the rest of the layer.
_DEQ_NAMES = {"DataCopyEnhancedParams", "DeqValue", "DeqVector", "data_copy_co1_to_co2", "data_copy_enhanced"}


def __getattr__(name):
    if name in _DEQ_NAMES:
        from npu_emu.ascendc import deq

        return getattr(deq, name)
    raise AttributeError(f"module 'npu_emu.ascendc' has no attribute {name!r}")

