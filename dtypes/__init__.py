"""Bit-exact codecs (installed as npu_emu.dtypes)."""
