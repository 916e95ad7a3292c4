"""add_one: y = x + 1 over float32, the worked example of the device model (not a CANN op).

tiling.py is the op_host side (TilingData, tiling function, access pattern), kernel.py the per-core kernel,
api.py the front end tying them together. Read them in that order.
"""
