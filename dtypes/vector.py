"""The MX kernels' 16-bit element casts written as LLVM vector code, one MX block chunk of 32 BF16 values per call.

rint_code_bf16_pow2 (npu_emu.dtypes.scalar) is the cast of a BF16 value times a power-of-two reciprocal, worked as
16-bit integer steps. A numba loop over it vectorises only while LLVM's loop vectoriser accepts the loop, and the
MX run along a row (a block maximum, then the block's scale, then its 32 casts) is not such a loop: the previous
loop forms left it at about 0.6 ns per element on one thread (a row of column blocks, which LLVM did vectorise:
0.37, against 0.26 here). These numba intrinsics state the vectors outright:
one call loads 32 BF16 values (two AVX2 registers), works the same steps on all 32 lanes, and stores their 32 codes
(16 packed bytes for FP4). tests/dtypes/test_pow2_vector.py proves each form equal to rint_code_bf16_pow2 for every
BF16 pattern and every shift pow2_shift_ok admits (that scalar form is proven equal to the FP32 codecs in
tests/dtypes/test_pow2_codes.py).

Forms, per output format (constants of docs/codecs.md §5.1, §7.1), each with one shift for the 32 lanes (a block of a
run along a row: ``*32``) or one shift per lane read from an int16 array (a row of 32 column blocks: ``*_cols32``):

* ``*_pow2_normal*`` (FP8): the normal-code steps only, returning whether any of the 32 lanes holds a value whose
  code these steps may get wrong (NaN/Inf, or a product whose code is a nonzero subnormal one); the caller then forms
  the chunk again with the full form. Within one token's block such values sit 2^14 (E4M3) or 2^29 (E5M2) below the
  block maximum, so almost no run block needs it.
* ``*_pow2_full*``: every code, the subnormal ones by counting the midpoints the product passes, NaN -> 0, Inf and
  overflow saturating. FP4 codes are packed two per byte, element 0 in the low nibble.

``*_pow2_dual32`` (the dual-axis op) casts one chunk twice from one load: with one shift (FP8 in the normal-only
form, returning its flag) and with a shift per lane (the full form).

``bf16_masked_max32`` is the integer block maximum the OCP and dynamic-range scales start from;
``bf16_masked_max32_acc`` also keeps a running maximum per lane (the column maxima of a block of rows).

Every intrinsic takes 1-D C-contiguous arrays and element offsets; it reads xs[i:i + 32] (and dds[k:k + 32]) and
writes ys[j:j + 32] (FP4: ys[j:j + 16]). With NUMBA_BOUNDSCHECK=1 both ends are checked as numba checks an index.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

LANES = 32

_I1, _I8, _I16, _I32 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32)


def _vec(t, n=LANES):
    return ir.VectorType(t, n)


def _k(v, n=LANES):
    """A constant <n x i16> with every lane v."""
    return ir.Constant(_vec(_I16, n), [ir.Constant(_I16, v & 0xFFFF)] * n)


def _check_array(arr, dtype, what):
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C" and arr.dtype == dtype):
        raise TypingError(f"{what} must be a 1-D C-contiguous {dtype} array, got {arr}")


def _chunk_ptr(context, builder, arrty, arr, idx, idxty, elt, n):
    """Pointer to arr[idx : idx + n] as <n x elt> (bounds-checked when numba checks bounds)."""
    ary = context.make_array(arrty)(context, builder, arr)
    i = context.cast(builder, idx, idxty, types.intp)
    if context.enable_boundscheck:
        size = builder.extract_value(ary.shape, 0)
        cgutils.do_boundscheck(context, builder, i, size)
        cgutils.do_boundscheck(context, builder, builder.add(i, i.type(n - 1)), size)
    return builder.bitcast(builder.gep(ary.data, [i]), _vec(elt, n).as_pointer())


def _reduce(builder, op, v):
    n, elt = v.type.count, v.type.element
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(elt, [v.type]),
                                        f"llvm.vector.reduce.{op}.v{n}i{elt.width}")
    return builder.call(fn, [v])


def _splat(context, builder, val, valty):
    """A scalar integer of numba type valty as <32 x i16> (truncated to 16 bits)."""
    s = context.cast(builder, val, valty, types.int16)
    v = builder.insert_element(ir.Constant(_vec(_I16), ir.Undefined), s, _I32(0))
    return builder.shuffle_vector(v, v, ir.Constant(_vec(_I32), [0] * LANES))


@intrinsic
def bf16_masked_max32(typingctx, xs, i, mask):
    """max over k < 32 of xs[i + k] & mask, as uint16 (xs: BF16 bits)."""
    _check_array(xs, types.uint16, "xs")

    def codegen(context, builder, sig, args):
        v = builder.load(_chunk_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1], _I16, LANES),
                         align=2)
        return _reduce(builder, "umax", builder.and_(v, _splat(context, builder, args[2], sig.args[2])))
    return types.uint16(xs, i, mask), codegen


@intrinsic
def bf16_masked_max32_acc(typingctx, xs, i, acc, k, mask):
    """bf16_masked_max32 that also folds the 32 lanes into a running maximum per lane: acc[k + l] = max(acc[k + l],
    xs[i + l] & mask) for l < 32 (acc: uint16). A block of rows met row by row gives both axes' maxima from one
    load of each chunk: the row chunk's (returned) and each column's (in acc)."""
    _check_array(xs, types.uint16, "xs")
    _check_array(acc, types.uint16, "acc")

    def codegen(context, builder, sig, args):
        v = builder.load(_chunk_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1], _I16, LANES),
                         align=2)
        v = builder.and_(v, _splat(context, builder, args[4], sig.args[4]))
        pa = _chunk_ptr(context, builder, sig.args[2], args[2], args[3], sig.args[3], _I16, LANES)
        a = builder.load(pa, align=2)
        builder.store(builder.select(builder.icmp_unsigned(">", v, a), v, a), pa, align=2)
        return _reduce(builder, "umax", v)
    return types.uint16(xs, i, acc, k, mask), codegen


# the steps of rint_code_bf16_pow2 (see its docstring for why each one is right); u = |h| + dd

def _normal(builder, u, mb, max_code):
    """The normal code of u: u's pattern rounded to mb mantissa bits (ties to even), clamped to [0, max_code]."""
    sh = 7 - mb
    t = builder.add(builder.add(u, _k((1 << (sh - 1)) - 1)), builder.and_(builder.ashr(u, _k(sh)), _k(1)))
    v = builder.ashr(t, _k(sh))
    v = builder.select(builder.icmp_signed(">", v, _k(max_code)), _k(max_code), v)
    return builder.select(builder.icmp_signed("<", v, _k(0)), _k(0), v)


def _sign(builder, h, sbit):
    return builder.and_(builder.lshr(h, _k(15 - sbit)), _k(1 << sbit))


def _full(builder, h, dd, mb, max_code, sbit):
    a = builder.and_(h, _k(0x7FFF))
    u = builder.add(a, dd)
    hi = _normal(builder, u, mb, max_code)
    # subnormal codes: how many midpoints o * 2^(emin - mb - 1), o = 2k + 1, the product has passed (reached, for
    # odd k: ties to even); midpoint k in u's terms as in rint_code_bf16_pow2
    lo = _k(0)
    for k in range(1 << mb):
        o = 2 * k + 1
        j = (o >= 2) + (o >= 4) + (o >= 8)
        m = ((j - mb) << 7) + ((o - (1 << j)) << (7 - j))
        lo = builder.add(lo, builder.zext(builder.icmp_signed(">=" if k % 2 == 1 else ">", u, _k(m)), _vec(_I16)))
    c = builder.select(builder.icmp_signed(">=", u, _k(128)), hi, lo)
    c = builder.select(builder.icmp_signed(">=", a, _k(0x7F80)), _k(max_code), c)
    c = builder.or_(c, _sign(builder, h, sbit))
    return builder.select(builder.icmp_signed(">", a, _k(0x7F80)), _k(0), c)


def _normal_redo(builder, a, u, mb):
    """The lanes whose code the normal-only steps may get wrong: NaN/Inf, or a product whose code is a nonzero
    subnormal one (below -mb * 128 the product is at most half the smallest subnormal: code 0, which the clamp
    gives)."""
    return builder.or_(builder.and_(builder.icmp_signed(">", u, _k(-(mb << 7))), builder.icmp_signed("<", u, _k(128))),
                       builder.icmp_signed(">=", a, _k(0x7F80)))


def _store_codes(builder, c, py, fp4):
    if fp4:
        # lanes 2k and 2k + 1 as one 32-bit lane w = c[2k] | c[2k + 1] << 16: its low byte after w | w >> 12 is
        # c[2k] | c[2k + 1] << 4 (codes are below 16), cheaper than splitting the even and odd lanes apart
        w = builder.bitcast(c, _vec(_I32, LANES // 2))
        c = builder.or_(w, builder.lshr(w, ir.Constant(w.type, [ir.Constant(_I32, 12)] * (LANES // 2))))
    builder.store(builder.trunc(c, _vec(_I8, c.type.count)), py, align=1)


def _make_cast(mb, max_code, sbit, fp4, normal, per_lane, name):
    """The intrinsic (xs, i, ys, j, dd) with one shift dd for all 32 lanes, or, ``per_lane``, (xs, i, ys, j, dds, k)
    with lane l's shift dds[k + l] (int16: a row of column blocks, one shift per column)."""
    ybytes = LANES // 2 if fp4 else LANES

    def typer(xs, i, ys, j, dd, k):
        _check_array(xs, types.uint16, "xs")
        _check_array(ys, types.uint8, "ys")
        if per_lane:
            _check_array(dd, types.int16, "dds")
        elif not isinstance(dd, types.Integer):
            raise TypingError(f"{name} takes one integer shift dd, got {dd}")

        def codegen(context, builder, sig, args):
            px = _chunk_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1], _I16, LANES)
            py = _chunk_ptr(context, builder, sig.args[2], args[2], args[3], sig.args[3], _I8, ybytes)
            h = builder.load(px, align=2)
            if per_lane:
                ddv = builder.load(_chunk_ptr(context, builder, sig.args[4], args[4], args[5], sig.args[5], _I16,
                                              LANES), align=2)
            else:
                ddv = _splat(context, builder, args[4], sig.args[4])
            if not normal:
                _store_codes(builder, _full(builder, h, ddv, mb, max_code, sbit), py, fp4)
                return context.get_dummy_value()
            a = builder.and_(h, _k(0x7FFF))
            u = builder.add(a, ddv)
            _store_codes(builder, builder.or_(_normal(builder, u, mb, max_code), _sign(builder, h, sbit)), py, fp4)
            return _reduce(builder, "or", _normal_redo(builder, a, u, mb))
        ret = types.boolean if normal else types.none
        return (ret(xs, i, ys, j, dd, k) if per_lane else ret(xs, i, ys, j, dd)), codegen

    if per_lane:
        def cast(typingctx, xs, i, ys, j, dds, k):
            return typer(xs, i, ys, j, dds, k)
    else:
        def cast(typingctx, xs, i, ys, j, dd):
            return typer(xs, i, ys, j, dd, None)
    cast.__name__ = cast.__qualname__ = name
    return intrinsic(cast)


def _make_dual(mb, max_code, sbit, fp4, name):
    """The intrinsic (xs, i, y1, y2, j, dd, dds, k): one load of a chunk, cast twice (the two forms' common steps,
    |h| and the sign, formed once): into y1[j:] with the one shift dd (FP8: the normal-only form, whose redo flag it
    returns; FP4: the full form, returning False) and into y2[j:] with lane l's shift dds[k + l] (the full form)."""
    ybytes = LANES // 2 if fp4 else LANES

    def dual(typingctx, xs, i, y1, y2, j, dd, dds, k):
        _check_array(xs, types.uint16, "xs")
        _check_array(y1, types.uint8, "y1")
        _check_array(y2, types.uint8, "y2")
        _check_array(dds, types.int16, "dds")
        if not isinstance(dd, types.Integer):
            raise TypingError(f"{name} takes one integer shift dd for y1, got {dd}")

        def codegen(context, builder, sig, args):
            px = _chunk_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1], _I16, LANES)
            p1 = _chunk_ptr(context, builder, sig.args[2], args[2], args[4], sig.args[4], _I8, ybytes)
            p2 = _chunk_ptr(context, builder, sig.args[3], args[3], args[4], sig.args[4], _I8, ybytes)
            h = builder.load(px, align=2)
            ddv = builder.load(_chunk_ptr(context, builder, sig.args[6], args[6], args[7], sig.args[7], _I16, LANES),
                               align=2)
            dd1 = _splat(context, builder, args[5], sig.args[5])
            c2 = _full(builder, h, ddv, mb, max_code, sbit)
            if fp4:
                c1 = _full(builder, h, dd1, mb, max_code, sbit)
                redo = ir.Constant(_I1, 0)
            else:
                a = builder.and_(h, _k(0x7FFF))
                u = builder.add(a, dd1)
                c1 = builder.or_(_normal(builder, u, mb, max_code), _sign(builder, h, sbit))
                redo = _reduce(builder, "or", _normal_redo(builder, a, u, mb))
            _store_codes(builder, c1, p1, fp4)
            _store_codes(builder, c2, p2, fp4)
            return redo
        return types.boolean(xs, i, y1, y2, j, dd, dds, k), codegen

    dual.__name__ = dual.__qualname__ = name
    return intrinsic(dual)


# (mantissa bits, largest finite code, sign bit) per format: §5.1 (FP8), §7.1 (FP4, code in the low nibble);
# a run's block: one shift; a row of column blocks (``*_cols32``): one shift per lane
_FMT = {"e4m3": (3, 0x7E, 7, False), "e5m2": (2, 0x7B, 7, False), "e2m1": (1, 7, 3, True), "e1m2": (2, 7, 3, True)}
e4m3_pow2_normal32 = _make_cast(*_FMT["e4m3"], True, False, "e4m3_pow2_normal32")
e5m2_pow2_normal32 = _make_cast(*_FMT["e5m2"], True, False, "e5m2_pow2_normal32")
e2m1_pow2_full32 = _make_cast(*_FMT["e2m1"], False, False, "e2m1_pow2_full32")
e1m2_pow2_full32 = _make_cast(*_FMT["e1m2"], False, False, "e1m2_pow2_full32")
e4m3_pow2_normal_cols32 = _make_cast(*_FMT["e4m3"], True, True, "e4m3_pow2_normal_cols32")
e5m2_pow2_normal_cols32 = _make_cast(*_FMT["e5m2"], True, True, "e5m2_pow2_normal_cols32")
e4m3_pow2_full_cols32 = _make_cast(*_FMT["e4m3"], False, True, "e4m3_pow2_full_cols32")
e5m2_pow2_full_cols32 = _make_cast(*_FMT["e5m2"], False, True, "e5m2_pow2_full_cols32")
e2m1_pow2_full_cols32 = _make_cast(*_FMT["e2m1"], False, True, "e2m1_pow2_full_cols32")
e1m2_pow2_full_cols32 = _make_cast(*_FMT["e1m2"], False, True, "e1m2_pow2_full_cols32")
# both axes of a chunk at once (the dual-axis op): y1 with the chunk's shift, y2 with one shift per column
e4m3_pow2_dual32 = _make_dual(*_FMT["e4m3"], "e4m3_pow2_dual32")
e5m2_pow2_dual32 = _make_dual(*_FMT["e5m2"], "e5m2_pow2_dual32")
e2m1_pow2_dual32 = _make_dual(*_FMT["e2m1"], "e2m1_pow2_dual32")
e1m2_pow2_dual32 = _make_dual(*_FMT["e1m2"], "e1m2_pow2_dual32")
