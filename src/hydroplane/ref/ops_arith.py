"""Element-wise arithmetic, bitwise, comparison and logical instructions as data tables.

Each integer entry names how its operands are read: 'any' (the result's signedness; the bits
are the same), 's' (as signed) or 'u' (as unsigned). Integer arithmetic wraps around at the
type's width. Float arithmetic is IEEE in the type's precision (f16, bf16 and fp8 round once:
NumPy and ml_dtypes compute in float32, which is exact enough to round correctly).
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.layout import value_dtype
from hydroplane.ref.ops import Op, register
from hydroplane.ref.values import Pointer, as_signed, as_unsigned, broadcast_lanes, merge, reinterpret, width


# Division by zero, INT_MIN / -1 and shifts by the width or more are undefined in SPIR-V. The reference gives the
# kernel language's own definitions (docs/language.md, "Defined semantics"), which its portable sequences emit:
# a divisor of 0 acts as 1 (a / 0 == a, a % 0 == 0), INT_MIN / -1 wraps to INT_MIN; a shift count is read as
# unsigned, and a count of the width or more gives 0 (an arithmetic right shift: the sign, 0 or -1).
def _nonzero(b):
    return np.where(b == 0, np.ones((), b.dtype), b)


def _udiv(a, b):
    return np.floor_divide(a, _nonzero(b))


def _umod(a, b):
    return np.remainder(a, _nonzero(b))


def _sdiv(a, b):  # toward zero
    b = _nonzero(b)
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _srem(a, b):  # sign of the dividend
    return np.fmod(a, _nonzero(b))


def _smod(a, b):  # sign of the divisor
    return np.remainder(a, _nonzero(b))


def _fmod(a, b):  # sign of the divisor
    return np.mod(a, b)


def _shift(fn, fill_sign: bool):
    """A shift whose count (read as unsigned, any width) may be the base's width or more."""
    def shift(a, count):
        width = a.dtype.itemsize * 8
        count = as_unsigned(count)
        clamped = np.minimum(count, width - 1).astype(a.dtype)
        r = fn(a, clamped)
        return r if fill_sign else np.where(count >= width, np.zeros((), a.dtype), r)
    return shift


_shift_left = _shift(np.left_shift, False)
_shift_right_logical = _shift(np.right_shift, False)
_shift_right_arith = _shift(np.right_shift, True)


def _bit_count(a):
    u = as_unsigned(a)
    bits = np.unpackbits(np.ascontiguousarray(u).view(np.uint8).reshape(u.shape + (u.dtype.itemsize,)), axis=-1)
    return bits.sum(axis=-1).astype(a.dtype)


def _bit_reverse(a):
    u = np.ascontiguousarray(as_unsigned(a))
    size = u.dtype.itemsize
    bits = np.unpackbits(u.view(np.uint8).reshape(u.shape + (size,)), axis=-1, bitorder="little")
    packed = np.packbits(bits[..., ::-1], axis=-1, bitorder="little")
    return packed.view(u.dtype).reshape(u.shape).view(a.dtype)


FLOAT_BINARY = {
    Op.FAdd: np.add,
    Op.FSub: np.subtract,
    Op.FMul: np.multiply,
    Op.FDiv: np.divide,
    Op.FRem: np.fmod,
    Op.FMod: _fmod,
}
FLOAT_UNARY = {Op.FNegate: np.negative}

INT_BINARY = {
    Op.IAdd: ("any", np.add),
    Op.ISub: ("any", np.subtract),
    Op.IMul: ("any", np.multiply),
    Op.UDiv: ("u", _udiv),
    Op.SDiv: ("s", _sdiv),
    Op.UMod: ("u", _umod),
    Op.SRem: ("s", _srem),
    Op.SMod: ("s", _smod),
    Op.ShiftRightLogical: ("u", _shift_right_logical),
    Op.ShiftRightArithmetic: ("s", _shift_right_arith),
    Op.ShiftLeftLogical: ("any", _shift_left),
    Op.BitwiseOr: ("any", np.bitwise_or),
    Op.BitwiseXor: ("any", np.bitwise_xor),
    Op.BitwiseAnd: ("any", np.bitwise_and),
}
INT_UNARY = {
    Op.SNegate: ("s", np.negative),
    Op.Not: ("any", np.invert),
    Op.BitCount: ("any", _bit_count),
    Op.BitReverse: ("any", _bit_reverse),
}

INT_COMPARE = {
    Op.IEqual: ("any", np.equal),
    Op.INotEqual: ("any", np.not_equal),
    Op.UGreaterThan: ("u", np.greater),
    Op.SGreaterThan: ("s", np.greater),
    Op.UGreaterThanEqual: ("u", np.greater_equal),
    Op.SGreaterThanEqual: ("s", np.greater_equal),
    Op.ULessThan: ("u", np.less),
    Op.SLessThan: ("s", np.less),
    Op.ULessThanEqual: ("u", np.less_equal),
    Op.SLessThanEqual: ("s", np.less_equal),
}


def _unordered(cmp):
    return lambda a, b: cmp(a, b) | np.isnan(a) | np.isnan(b)


def _ordered(cmp):
    return lambda a, b: cmp(a, b) & ~np.isnan(a) & ~np.isnan(b)


FLOAT_COMPARE = {
    Op.FOrdEqual: np.equal,
    Op.FUnordEqual: _unordered(np.equal),
    Op.FOrdNotEqual: _ordered(np.not_equal),
    Op.FUnordNotEqual: np.not_equal,
    Op.FOrdLessThan: np.less,
    Op.FUnordLessThan: _unordered(np.less),
    Op.FOrdGreaterThan: np.greater,
    Op.FUnordGreaterThan: _unordered(np.greater),
    Op.FOrdLessThanEqual: np.less_equal,
    Op.FUnordLessThanEqual: _unordered(np.less_equal),
    Op.FOrdGreaterThanEqual: np.greater_equal,
    Op.FUnordGreaterThanEqual: _unordered(np.greater_equal),
    Op.LessOrGreater: _ordered(np.not_equal),
    Op.Ordered: lambda a, b: ~np.isnan(a) & ~np.isnan(b),
    Op.Unordered: lambda a, b: np.isnan(a) | np.isnan(b),
}


def _is_normal(a):
    tiny = np.finfo(a.dtype).tiny if a.dtype.kind == "f" else float(np.finfo(np.float32).tiny)
    return np.isfinite(a) & (np.abs(a.astype(np.float64)) >= float(tiny))


FLOAT_TESTS = {
    Op.IsNan: np.isnan,
    Op.IsInf: np.isinf,
    Op.IsFinite: np.isfinite,
    Op.IsNormal: _is_normal,
    Op.SignBitSet: np.signbit,
}

LOGICAL_BINARY = {
    Op.LogicalAnd: np.logical_and,
    Op.LogicalOr: np.logical_or,
    Op.LogicalEqual: np.equal,
    Op.LogicalNotEqual: np.not_equal,
}

READ_AS = {"s": as_signed, "u": as_unsigned}


def _operand(ctx, ident, how, dtype):
    v = ctx.get(ident)
    if how == "any":
        return reinterpret(v, dtype) if v.dtype.itemsize == dtype.itemsize else v
    return READ_AS[how](v)


def _float_binary(fn):
    def handler(ctx, inst):
        with np.errstate(all="ignore"):
            ctx.set(inst.result_id, fn(ctx.get(inst.args[0]), ctx.get(inst.args[1])))
    return handler


def _float_unary(fn):
    def handler(ctx, inst):
        ctx.set(inst.result_id, fn(ctx.get(inst.args[0])))
    return handler


def _int_binary(how, fn):
    def handler(ctx, inst):
        dt = inst.dtype
        a = _operand(ctx, inst.args[0], how, dt)
        b = _operand(ctx, inst.args[1], how, dt)
        with np.errstate(all="ignore"):
            r = fn(a, b)
        ctx.set(inst.result_id, reinterpret(np.asarray(r), dt))
    return handler


def _int_unary(how, fn):
    def handler(ctx, inst):
        dt = inst.dtype
        with np.errstate(all="ignore"):
            r = fn(_operand(ctx, inst.args[0], how, dt))
        ctx.set(inst.result_id, reinterpret(np.asarray(r), dt))
    return handler


def _int_compare(how, fn):
    def handler(ctx, inst):
        a = ctx.get(inst.args[0])
        b = ctx.get(inst.args[1])
        if how == "any":
            b = reinterpret(b, a.dtype)
        else:
            a, b = READ_AS[how](a), READ_AS[how](b)
        ctx.set(inst.result_id, fn(a, b))
    return handler


def _float_compare(fn):
    def handler(ctx, inst):
        with np.errstate(all="ignore"):
            ctx.set(inst.result_id, np.asarray(fn(ctx.get(inst.args[0]), ctx.get(inst.args[1]))))
    return handler


def _float_test(fn):
    def handler(ctx, inst):
        ctx.set(inst.result_id, np.asarray(fn(ctx.get(inst.args[0]))))
    return handler


for _op, _fn in FLOAT_BINARY.items():
    register(_op)(_float_binary(_fn))
for _op, _fn in FLOAT_UNARY.items():
    register(_op)(_float_unary(_fn))
for _op, (_how, _fn) in INT_BINARY.items():
    register(_op)(_int_binary(_how, _fn))
for _op, (_how, _fn) in INT_UNARY.items():
    register(_op)(_int_unary(_how, _fn))
for _op, (_how, _fn) in INT_COMPARE.items():
    register(_op)(_int_compare(_how, _fn))
for _op, _fn in FLOAT_COMPARE.items():
    register(_op)(_float_compare(_fn))
for _op, _fn in FLOAT_TESTS.items():
    register(_op)(_float_test(_fn))
for _op, _fn in LOGICAL_BINARY.items():
    register(_op)(_float_compare(_fn))


@register(Op.LogicalNot)
def _logical_not(ctx, inst):
    ctx.set(inst.result_id, np.logical_not(ctx.get(inst.args[0])))


@register(Op.Select)
def _select(ctx, inst):
    cond, a, b = (ctx.get(i) for i in inst.args)
    if isinstance(a, (tuple, Pointer)) or cond.ndim == 1:
        w = max(cond.shape[0], width(a), width(b))
        c = np.broadcast_to(cond, (w,))
        try:
            ctx.set(inst.result_id, merge(c, broadcast_lanes(a, w), broadcast_lanes(b, w)))
        except TypeError:
            ctx.diagnose("unsupported", "OpSelect between pointers to different objects")
        return
    ctx.set(inst.result_id, np.where(cond, a, b))


def _carry(ctx, inst, fn):
    dt = value_dtype(inst.type.members[0].type)
    a = as_unsigned(reinterpret(ctx.get(inst.args[0]), dt))
    b = as_unsigned(reinterpret(ctx.get(inst.args[1]), dt))
    low, high = fn(a, b)
    ctx.set(inst.result_id, (reinterpret(low, dt), reinterpret(high, dt)))


@register(Op.IAddCarry)
def _iadd_carry(ctx, inst):
    _carry(ctx, inst, lambda a, b: (a + b, (a + b < a).astype(a.dtype)))


@register(Op.ISubBorrow)
def _isub_borrow(ctx, inst):
    _carry(ctx, inst, lambda a, b: (a - b, (a < b).astype(a.dtype)))


def _mul_extended(ctx, inst, signed: bool):
    dt = value_dtype(inst.type.members[0].type)
    bits = dt.itemsize * 8
    a = reinterpret(ctx.get(inst.args[0]), dt)
    b = reinterpret(ctx.get(inst.args[1]), dt)
    conv = as_signed if signed else as_unsigned
    wide = [int(x) * int(y) for x, y in zip(*(np.broadcast_arrays(conv(a), conv(b))[i].reshape(-1) for i in (0, 1)))]
    shape = np.broadcast_shapes(a.shape, b.shape)
    mask = (1 << bits) - 1
    low = np.array([w & mask for w in wide], dtype=np.dtype(f"u{bits // 8}")).reshape(shape)
    high = np.array([(w >> bits) & mask for w in wide], dtype=np.dtype(f"u{bits // 8}")).reshape(shape)
    ctx.set(inst.result_id, (reinterpret(low, dt), reinterpret(high, dt)))


@register(Op.UMulExtended)
def _umul_extended(ctx, inst):
    _mul_extended(ctx, inst, False)


@register(Op.SMulExtended)
def _smul_extended(ctx, inst):
    _mul_extended(ctx, inst, True)


def _bitfield_mask(count, bits):
    count = count.astype(np.uint64)
    return np.where(count >= bits, np.uint64((1 << bits) - 1) if bits < 64 else np.uint64(2**64 - 1),
                    (np.uint64(1) << np.minimum(count, 63)) - np.uint64(1))


@register(Op.BitFieldInsert)
def _bitfield_insert(ctx, inst):
    base, insert, offset, count = (ctx.get(i) for i in inst.args)
    dt = inst.dtype
    bits = dt.itemsize * 8
    ub = as_unsigned(reinterpret(base, dt)).astype(np.uint64)
    ui = as_unsigned(reinterpret(insert, dt)).astype(np.uint64)
    off = offset.astype(np.uint64)
    m = _bitfield_mask(count, bits) << off
    r = (ub & ~m) | ((ui << off) & m)
    ctx.set(inst.result_id, reinterpret(r.astype(np.dtype(f"u{bits // 8}")), dt))


def _bitfield_extract(ctx, inst, signed):
    base, offset, count = (ctx.get(i) for i in inst.args)
    dt = inst.dtype
    bits = dt.itemsize * 8
    u = as_unsigned(reinterpret(base, dt)).astype(np.uint64)
    field = (u >> offset.astype(np.uint64)) & _bitfield_mask(count, bits)
    r = field.astype(np.dtype(f"u{bits // 8}"))
    if signed:
        c = count.astype(np.int64)
        sign = (c > 0) & (((field >> np.maximum(c - 1, 0).astype(np.uint64)) & np.uint64(1)) == 1)
        ext = ~_bitfield_mask(count, bits)
        r = np.where(sign, (field | ext).astype(np.dtype(f"u{bits // 8}")), r)
    ctx.set(inst.result_id, reinterpret(r, dt))


@register(Op.BitFieldSExtract)
def _bitfield_sextract(ctx, inst):
    _bitfield_extract(ctx, inst, True)


@register(Op.BitFieldUExtract)
def _bitfield_uextract(ctx, inst):
    _bitfield_extract(ctx, inst, False)


@register(Op.Any)
def _any(ctx, inst):
    ctx.set(inst.result_id, ctx.get(inst.args[0]).any(axis=-1))


@register(Op.All)
def _all(ctx, inst):
    ctx.set(inst.result_id, ctx.get(inst.args[0]).all(axis=-1))


# -- integer dot products (SPV_KHR_integer_dot_product) -----------------------------------------
# opcode -> (first operand signed, second operand signed, accumulates with saturation)
INTEGER_DOT = {
    Op.SDot: (True, True, False),
    Op.UDot: (False, False, False),
    Op.SUDot: (True, False, False),
    Op.SDotAccSat: (True, True, True),
    Op.UDotAccSat: (False, False, True),
    Op.SUDotAccSat: (True, False, True),
}


def _dot_vector(v: np.ndarray, signed: bool, packed: bool) -> np.ndarray:
    if packed:  # PackedVectorFormat4x8Bit: a 32-bit scalar holding four 8-bit components
        v = np.ascontiguousarray(as_unsigned(v).astype(np.uint32)).view(np.uint8).reshape(v.shape[0], 4)
        v = v.view(np.int8) if signed else v
    else:
        v = as_signed(v) if signed else as_unsigned(v)
    return v.astype(np.int64)


def _integer_dot(a_signed, b_signed, saturating):
    def handler(ctx, inst):
        packed = bool(inst.literals)
        dt = inst.dtype
        a = _dot_vector(ctx.get(inst.args[0]), a_signed, packed)
        b = _dot_vector(ctx.get(inst.args[1]), b_signed, packed)
        total = (a * b).sum(axis=-1)
        if not saturating:
            ctx.set(inst.result_id, reinterpret(total.astype(np.dtype(f"u{dt.itemsize}") if dt.kind == "u"
                                                            else np.dtype(f"i{dt.itemsize}")), dt))
            return
        signed_result = a_signed or b_signed
        acc = ctx.get(inst.args[2])
        acc = (as_signed(acc) if signed_result else as_unsigned(acc)).astype(np.int64)
        info = np.iinfo(np.dtype(f"{'i' if signed_result else 'u'}{dt.itemsize}"))
        exact = [int(x) + int(y) for x, y in zip(*np.broadcast_arrays(acc, total))]
        clipped = np.array([min(max(x, info.min), info.max) for x in exact], dtype=info.dtype)
        ctx.set(inst.result_id, reinterpret(clipped.reshape(np.broadcast_shapes(acc.shape, total.shape)), dt))
    return handler


for _op, (_sa, _sb, _sat) in INTEGER_DOT.items():
    register(_op)(_integer_dot(_sa, _sb, _sat))
