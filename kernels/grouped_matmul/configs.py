"""The compile configurations of GroupedMatmul (``npu-emu compile``, declared in op.py): each a tiny call through the
public API that makes numba compile one specialisation of the epilogue kernel (docs/cli.md, ``compile``)."""

import numpy as np

from npu_emu.frontend.cases import bf16 as _bf16, collector, rng as _rng  # noqa: F401

CONFIGS, config = collector()


def _gmm(out, per_token, plain=None, act_type=0):
    def build():
        from npu_emu.ops import npu_grouped_matmul

        rng = _rng(37)
        e, m, k, n = 2, 12, 64, 32
        gl = np.array([5, 12], np.int64)
        if plain is not None:
            x = rng.standard_normal((m, k)).astype(plain)
            w = rng.standard_normal((e, k, n)).astype(plain)
            return lambda: npu_grouped_matmul([x], [w], group_list=gl, split_item=3, group_type=0)
        x = rng.integers(-128, 128, (m, k), dtype=np.int16).astype(np.int8)
        w = rng.integers(-128, 128, (e, k, n), dtype=np.int16).astype(np.int8)
        kw = {"output_dtype": out, "group_list": gl, "split_item": 3, "group_type": 0, "act_type": act_type}
        if out == "int8":                     # the uint64 FixPipe words (scale bits only, offset 0)
            s = rng.uniform(1e-3, 1e-2, (e, n)).astype(np.float32)
            kw["scale"] = [s.view(np.uint32).astype(np.uint64)]
        elif out != "int32":
            s = rng.uniform(1e-3, 1e-2, (e, n)).astype(np.float32)
            kw["scale"] = [_bf16(s) if out == "bfloat16" else s]
        if per_token:
            kw["per_token_scale"] = [rng.uniform(0.5, 2.0, m).astype(np.float32)]
        return lambda: npu_grouped_matmul([x], [w], **kw)

    return build


config("grouped_matmul.int8_int32",
       "A8W8 -> int32 (the exact BLAS cube; compiles only the walk of the access check)")(_gmm("int32", False))
config("grouped_matmul.int8_int8", "A8W8 per-channel -> int8 (uint64 FixPipe words)")(_gmm("int8", False))
config("grouped_matmul.int8_pertoken_bf16", "A8W8 per-channel x per-token -> bfloat16")(_gmm("bfloat16", True))
config("grouped_matmul.int8_pertoken_fp16", "A8W8 per-channel x per-token -> float16")(_gmm("float16", True))
config("grouped_matmul.int8_pertoken_bf16_silu",
       "A8W8 per-channel x per-token -> bfloat16 with act_type 5 (SILU)")(_gmm("bfloat16", True, act_type=5))
config("grouped_matmul.int8_pertoken_bf16_relu",
       "A8W8 per-channel x per-token -> bfloat16 with act_type 1 (RELU)")(_gmm("bfloat16", True, act_type=1))
config("grouped_matmul.int8_pertoken_bf16_gelu_tanh",
       "A8W8 per-channel x per-token -> bfloat16 with act_type 2 (GELU_TANH)")(_gmm("bfloat16", True, act_type=2))
config("grouped_matmul.int8_pertoken_bf16_fastgelu",
       "A8W8 per-channel x per-token -> bfloat16 with act_type 4 (FASTGELU)")(_gmm("bfloat16", True, act_type=4))
config("grouped_matmul.bf16", "plain bfloat16 (float_accum exact)")(_gmm(None, False, plain=_bf16(np.zeros(1)).dtype))
config("grouped_matmul.fp16", "plain float16 (float_accum exact)")(_gmm(None, False, plain=np.float16))


def _gmm_mx(fmt, seed, with_bias):
    """An MX split-M call on ascend950pr: x and weight in ``fmt`` with E8M0 scales per 32, -> bfloat16."""
    def build():
        import ml_dtypes

        from npu_emu.ops import npu_grouped_matmul

        rng = _rng(seed)
        e, m, k, n = 2, 12, 64, 32
        dt = getattr(ml_dtypes, fmt)
        x = rng.standard_normal((m, k)).astype(dt)
        w = rng.standard_normal((e, k, n)).astype(dt)
        s2 = rng.integers(120, 134, (e, 1, n, 2)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
        s1 = rng.integers(120, 134, (m, 1, 2)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
        bias = [rng.uniform(-1, 1, (e, n)).astype(np.float32)] if with_bias else None
        gl = np.array([5, 12], np.int64)
        return lambda: npu_grouped_matmul([x], [w], scale=[s2], per_token_scale=[s1], bias=bias, group_list=gl,
                                          split_item=3, group_type=0, output_dtype="bfloat16", soc="ascend950pr")
    return build


config("grouped_matmul.mxfp8_bf16", "MXFP8 e4m3fn with E8M0 scales per 32 on ascend950pr, split M -> bfloat16")(
    _gmm_mx("float8_e4m3fn", 950, False))
config("grouped_matmul.mxfp4_bf16", "MXFP4 e2m1 with E8M0 scales per 32 and a float32 bias on ascend950pr -> bfloat16")(
    _gmm_mx("float4_e2m1fn", 951, True))


def _gmm_w8a16(seed, k, n):
    def build():
        from npu_emu.ops import npu_grouped_matmul

        rng = _rng(seed)
        e, m = 2, 12
        x = _bf16(rng.standard_normal((m, k)))
        w = rng.integers(-128, 128, (e, k, n), dtype=np.int16).astype(np.int8)
        s = _bf16(rng.uniform(0.001, 0.05, (e, n)))
        o = _bf16(rng.uniform(-3, 3, (e, n)))
        gl = np.array([5, 12], np.int64)
        return lambda: npu_grouped_matmul([x], [w], antiquant_scale=[s], antiquant_offset=[o], group_list=gl,
                                          split_item=3, group_type=0)

    return build


config("grouped_matmul.w8a16_bf16", "antiquant W8A16: bfloat16 x, int8 weight, per-channel antiquant scale / "
                                    "offset")(_gmm_w8a16(816, 64, 32))
config("grouped_matmul.w8a16_msd_bf16", "antiquant W8A16 decode shape (the A16W8-MSD kernel): bfloat16 x, int8 "
                                        "weight (K 128, N 1024), per-channel antiquant scale / offset")(
    _gmm_w8a16(817, 128, 1024))


@config("grouped_matmul.w4a8_mx_bf16", "W4A8-MX: float8_e4m3fn x, transposed NZ float4_e2m1 weight, E8M0 antiquant "
                                        "scale, bfloat16 bias on ascend950pr -> bfloat16")
def _gmm_w4a8_mx():
    import ml_dtypes

    from npu_emu.ops import NzWeight, npu_grouped_matmul

    rng = _rng(952)
    e, m, k, n = 2, 12, 64, 64
    x = rng.standard_normal((m, k)).astype(ml_dtypes.float8_e4m3fn)
    w = NzWeight.from_nd(rng.standard_normal((e, n, k)).astype(ml_dtypes.float4_e2m1fn), "float4_e2m1",
                         transposed=True)
    s2 = rng.integers(120, 134, (e, 1, n, 2)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    s1 = rng.integers(120, 134, (m, 1, 2)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    b = _bf16(rng.uniform(-1, 1, (e, n)))
    gl = np.array([5, 12], np.int64)
    return lambda: npu_grouped_matmul([x], [w], antiquant_scale=[s2], per_token_scale=[s1], bias=[b], group_list=gl,
                                      split_item=3, group_type=0, output_dtype="bfloat16", soc="ascend950pr")


@config("grouped_matmul.a4w4_pergroup_bf16", "A4W4: int4 x, int4 weight (INT32 words of 8), uint64 FixPipe scales per "
                                              "K group, float32 per-token scale -> bfloat16")
def _gmm_a4w4():
    from npu_emu.kernels.quant_matmul.trans_quant_param import trans_quant_param
    from npu_emu.ops import npu_grouped_matmul

    rng = _rng(444)
    e, m, k, n, g = 2, 12, 64, 32, 2
    x = rng.integers(0, 2**32, (m, k // 8), dtype=np.uint64).astype(np.uint32).view(np.int32)
    w = rng.integers(0, 2**32, (e, k, n // 8), dtype=np.uint64).astype(np.uint32).view(np.int32)
    s = trans_quant_param(rng.uniform(-0.1, 0.1, (e * g, n)).astype(np.float32)).reshape(e, g, n)
    pt = rng.uniform(0.5, 2.0, m).astype(np.float32)
    gl = np.array([5, 12], np.int64)
    return lambda: npu_grouped_matmul([x], [w], scale=[s], per_token_scale=[pt], group_list=gl, split_item=3,
                                      group_type=0, output_dtype="bfloat16")


@config("grouped_matmul.a8w4_msd_bf16", "A8W4 (A2/A3): int8 x, int4 weight with uint64 per-group scale words, float32 "
                                        "bias and per-token scale -> bfloat16 (the MSD_API_DEQUANT template)")
def _gmm_a8w4():
    import ml_dtypes

    from npu_emu.ops import npu_grouped_matmul

    rng = _rng(848)
    e, m, k, n = 2, 12, 128, 32
    x = rng.integers(-128, 128, (m, k), dtype=np.int16).astype(np.int8)
    w = rng.integers(-8, 8, (e, k, n)).astype(ml_dtypes.int4)
    s = np.zeros((e, 2, n), np.uint64)
    s[:] = rng.uniform(1e-3, 2e-2, (e, 2, n)).astype(np.float32).view(np.uint32)
    b = rng.uniform(-1, 1, (e, n)).astype(np.float32)
    pt = rng.uniform(0.01, 0.1, m).astype(np.float32)
    gl = np.array([5, 7], np.int64)
    return lambda: npu_grouped_matmul([x], [w], scale=[s], bias=[b], per_token_scale=[pt], group_list=gl,
                                      group_list_type=1, split_item=3, group_type=0, output_dtype="bfloat16")
