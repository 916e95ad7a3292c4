"""data_copy_dequant: a whole int32 L0C accumulator dequantised as the CO1 -> CO2 DataCopy with DEQ8 / DEQ16 /
DEQS16 (and their per-channel V forms) would, bit for bit. checks.py = the argument checks, kernel.py = the
whole-matrix kernels over the instruction's element pipeline, api.py = the front end, cli.py = its CLI verbs.

The instruction itself (one DataCopy on one AI Core, byte images of UB and L0C) is npu_emu.ascendc.deq.
Docs: docs/ops/data_copy_dequant.md.
"""
