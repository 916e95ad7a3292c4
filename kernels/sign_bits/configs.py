"""The compile configurations of SignBitsUnpack / SignBitsPack (``npu-emu compile``, declared in op.py): each a tiny call through
the public API that makes numba compile one specialisation of its own (docs/cli.md, ``compile``)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()

def _unpack(dtype, soc=None):
    def build():
        from npu_emu.ops import npu_sign_bits_unpack

        x = _rng().integers(0, 256, 4096, dtype=np.uint8)
        kw = {} if soc is None else {"soc": soc}
        return lambda: npu_sign_bits_unpack(x, 1, dtype, **kw)

    return build


def _pack(dtype, soc=None):
    def build():
        from npu_emu.ops import npu_sign_bits_pack

        x = _rng().standard_normal(4096).astype(dtype)
        kw = {} if soc is None else {"soc": soc}
        return lambda: npu_sign_bits_pack(x, 1, **kw)

    return build


config("sign_bits.unpack_f32", "npu_sign_bits_unpack -> float32 (910B fused kernel)")(_unpack(0))
config("sign_bits.unpack_f16", "npu_sign_bits_unpack -> float16")(_unpack(1))
config("sign_bits.unpack_950", "npu_sign_bits_unpack -> float32 on ascend950pr (arch35 kernel)")(
    _unpack(0, "ascend950pr"))
config("sign_bits.pack_f32", "npu_sign_bits_pack of float32")(_pack(np.float32))
config("sign_bits.pack_f16", "npu_sign_bits_pack of float16")(_pack(np.float16))
config("sign_bits.pack_950", "npu_sign_bits_pack of float32 on ascend950pr (MSB first, x < 0)")(
    _pack(np.float32, "ascend950pr"))
