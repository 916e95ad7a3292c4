"""Inputs shared by the DynamicMxQuantWithDualAxis tests (the module ``dual_cases``, registered by
tests/conftest.py)."""

import ml_dtypes
import numpy as np

X_DTYPES = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
TORCH_CODE = {"float8_e5m2": 23, "float8_e4m3fn": 24, "float4_e2m1": 296, "float4_e1m2": 297}
# (dst, round_mode, scale_alg, dst_type_max): every combination the checks accept, dst_type_max classes included
COMBOS = (
    [(d, "rint", a, 0.0) for d in ("float8_e4m3fn", "float8_e5m2") for a in (0, 1)]
    + [("float4_e2m1", r, 0, 0.0) for r in ("rint", "round", "floor")]
    + [("float4_e2m1", r, 2, t) for r in ("rint", "floor") for t in (0.0, 6.0, 7.0, 9.5)]
    + [("float4_e2m1", "round", 2, 12.0)]
    + [("float4_e1m2", r, 0, 0.0) for r in ("rint", "round", "floor")]
)


def random_x(shape, x_dtype, seed, *, spread=12):
    """Normal values times 2^k, k uniform in [-spread, spread): blocks of very different magnitudes."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread, shape))
    if x_dtype == "float16":
        v = np.clip(v, -60000, 60000)
    return v.astype(X_DTYPES[x_dtype])


def special_x(x_dtype, seed, shape=(2, 100, 200)):
    """Random values with whole 32 x 32 tiles (so both axes see them) and single elements set to the cases the
    scale rules treat apart: zeros of both signs, Inf, NaN, tiny blocks (0 < E <= emax), subnormals, huge values,
    negative values that round to zero."""
    rng = np.random.default_rng(seed)
    x = random_x(shape, x_dtype, seed).astype(np.float32)
    big = 3.0e38 if x_dtype == "bfloat16" else 60000.0
    tiny = 2.0 ** -125 if x_dtype == "bfloat16" else 2.0 ** -20
    sub = 2.0 ** -130 if x_dtype == "bfloat16" else 2.0 ** -24
    fills = [0.0, -0.0, np.inf, -np.inf, np.nan, None, None, None, None]
    b, m, n = x.shape
    k = 0
    for r0 in range(0, m, 32):
        for c0 in range(0, n, 32):
            kind = fills[(k // 3) % len(fills)] if k % 3 == 0 else "rand"
            k += 1
            tile = x[:, r0:r0 + 32, c0:c0 + 32]
            if kind is None:
                tile[...] = rng.standard_normal(tile.shape) * (tiny if k % 2 else sub)
            elif kind != "rand":
                if isinstance(kind, float) and np.isfinite(kind):
                    tile[...] = kind
                else:
                    tile[0, (r0 // 32) % tile.shape[1], 3 % tile.shape[2]] = kind   # one special element in a random tile
    x[0, 5 % m, 7 % n], x[-1, 40 % m, 9 % n] = big, -big
    x[0, 70 % m, 150 % n] = -1e-30
    x[-1, m - 1, n - 1] = sub
    return x.astype(X_DTYPES[x_dtype])
