"""Portable sequences: the language's own meaning for operations whose SPIR-V result is undefined.

SPIR-V and Vulkan's environment for it leave some results open: OpSRem and OpSMod with a negative
operand (Vulkan's precision appendix; the H200's driver gives -7 % 2 == 1), every division by zero
and INT_MIN / -1, shifts by the width or more, OpConvertFToS/U of NaN or of a value out of range,
GLSL.std.450 FMin/FMax/FClamp when an operand is NaN (and FClamp/SClamp with lo > hi), Pow, Log,
Sqrt, InverseSqrt and Atan2 outside their domains. The language defines each of them
(docs/language.md, "Defined semantics") and emits it here as a sequence of instructions whose
every result SPIR-V defines for all inputs (unsigned division by a non-zero divisor, wrapping
integer arithmetic, in-range shifts and conversions, ordered comparisons, OpIsNan, OpSelect), so
a driver has nothing to choose and the reference executor, which runs the same instructions,
gives the same answer.

Every function takes the module's `Semantic` (for types, constants and the builder) and typed
values of one scalar or vector type, and returns a `Value`.
"""

from __future__ import annotations

import numpy as np

from hydroplane.lang.errors import SemanticError
from hydroplane.lang.typed import GLSL, Value, component, scalar_kind, with_component
from hydroplane.spirv import grammar, types

Op = grammar.Op
NAN, INF = float("nan"), float("inf")


def _op(s, opcode, t: types.Type, *operands: Value | int) -> Value:
    ids = [o.id if isinstance(o, Value) else o for o in operands]
    return Value(t, s.b.emit(opcode, s.type_id(t), *ids))


def _bool(s, opcode, *operands: Value) -> Value:
    return _op(s, opcode, with_component(operands[0].type, types.BOOL), *operands)


def _select(s, condition: Value, a: Value, b: Value) -> Value:
    return _op(s, Op.Select, a.type, condition, a, b)


def _unsigned_type(t: types.Type) -> types.Type:
    return with_component(t, types.Scalar("int", component(t).width, False))


def _negate_unsigned(s, x: Value) -> Value:
    return _op(s, Op.ISub, x.type, s.constant(0, x.type), x)


# integer division and remainder ----------------------------------------------------------------------
def int_divide(s, a: Value, b: Value, remainder: bool, literal_divisor: int | None = None) -> Value:
    """`a // b` (remainder=False) or `a % b`: truncation toward zero, the remainder with the sign of `a`;
    a divisor of 0 acts as 1 (a // 0 == a, a % 0 == 0); INT_MIN // -1 == INT_MIN, INT_MIN % -1 == 0.

    Only unsigned division and remainder by a non-zero divisor are emitted (of the magnitudes, the sign
    fixed afterwards with wrapping negation): OpSDiv, OpSRem and OpSMod are never used."""
    t = a.type
    signed = scalar_kind(component(t)) == "signed"
    if literal_divisor is not None:
        return _int_divide_by_literal(s, a, literal_divisor, remainder, signed)
    if not signed:
        zero, one = s.constant(0, t), s.constant(1, t)
        safe = _select(s, _bool(s, Op.IEqual, b, zero), one, b)
        return _op(s, Op.UMod if remainder else Op.UDiv, t, a, safe)
    ut = _unsigned_type(t)
    a_negative = _bool(s, Op.SLessThan, a, s.constant(0, t))
    b_negative = _bool(s, Op.SLessThan, b, s.constant(0, t))
    a_magnitude = _magnitude(s, a, a_negative, ut)
    b_magnitude = _magnitude(s, b, b_negative, ut)
    safe = _select(s, _bool(s, Op.IEqual, b_magnitude, s.constant(0, ut)), s.constant(1, ut), b_magnitude)
    if remainder:
        r = _op(s, Op.UMod, ut, a_magnitude, safe)
        return _op(s, Op.Bitcast, t, _select(s, a_negative, _negate_unsigned(s, r), r))
    q = _op(s, Op.UDiv, ut, a_magnitude, safe)
    negative = _bool(s, Op.LogicalNotEqual, a_negative, b_negative)
    return _op(s, Op.Bitcast, t, _select(s, negative, _negate_unsigned(s, q), q))


def _magnitude(s, x: Value, negative: Value, ut: types.Type) -> Value:
    """|x| as the unsigned type of x's width (|INT_MIN| = 2^(w-1) fits)."""
    bits = _op(s, Op.Bitcast, ut, x)
    return _select(s, negative, _negate_unsigned(s, bits), bits)


def _int_divide_by_literal(s, a: Value, divisor: int, remainder: bool, signed: bool) -> Value:
    t = a.type
    if divisor == 0 or divisor == 1:
        return s.constant(0, t) if remainder else a
    if not signed:
        return _op(s, Op.UMod if remainder else Op.UDiv, t, a, s.constant(divisor, t))
    if divisor == -1:
        return s.constant(0, t) if remainder else _op(s, Op.SNegate, t, a)
    ut = _unsigned_type(t)
    a_negative = _bool(s, Op.SLessThan, a, s.constant(0, t))
    a_magnitude = _magnitude(s, a, a_negative, ut)
    magnitude = s.constant(abs(divisor), ut)
    if remainder:
        r = _op(s, Op.UMod, ut, a_magnitude, magnitude)
        return _op(s, Op.Bitcast, t, _select(s, a_negative, _negate_unsigned(s, r), r))
    q = _op(s, Op.UDiv, ut, a_magnitude, magnitude)
    negative = a_negative if divisor > 0 else _op(s, Op.LogicalNot, a_negative.type, a_negative)
    return _op(s, Op.Bitcast, t, _select(s, negative, _negate_unsigned(s, q), q))


# shifts -------------------------------------------------------------------------------------------------
SHIFTS = {"lshift": Op.ShiftLeftLogical, "rshift_arithmetic": Op.ShiftRightArithmetic,
          "rshift_logical": Op.ShiftRightLogical}


def shift(s, op: str, base: Value, count: Value, literal_count: int | None = None) -> Value:
    """`base << count` / `base >> count` with the count read as unsigned (a negative count is a large one):
    a count of the width or more gives 0, except an arithmetic right shift, which gives the sign (0 or -1)."""
    t = base.type
    width = component(t).width
    arithmetic = op == "rshift" and scalar_kind(component(t)) == "signed"
    opcode = SHIFTS["lshift" if op == "lshift" else "rshift_arithmetic" if arithmetic else "rshift_logical"]
    if literal_count is not None:
        if 0 <= literal_count < width:
            return _op(s, opcode, t, base, count)
        return _op(s, opcode, t, base, s.constant(width - 1, t)) if arithmetic else s.constant(0, t)
    if isinstance(t, types.Vector) and isinstance(count.type, types.Scalar):
        count = s.splat(count, types.Vector(count.type, t.count))
    ut = _unsigned_type(count.type)
    amount = count if not component(count.type).signed else _op(s, Op.Bitcast, ut, count)
    in_range = _bool(s, Op.ULessThan, amount, s.constant(width, ut))
    if arithmetic:
        return _op(s, opcode, t, base, _select(s, in_range, amount, s.constant(width - 1, ut)))
    shifted = _op(s, opcode, t, base, _select(s, in_range, amount, s.constant(0, ut)))
    return _select(s, in_range, shifted, s.constant(0, t))


# float -> int ------------------------------------------------------------------------------------------
def float_to_int(s, x: Value, target: types.Scalar) -> Value:
    """Truncation toward zero that saturates: below the range gives the smallest value, above it (and +inf)
    the largest, NaN gives 0. The conversion itself only ever sees a value in range."""
    source = component(x.type)
    if source.encoding is not None or source.width < 16:  # bf16 and fp8 have no comparisons: widen exactly
        x = _op(s, Op.FConvert, with_component(x.type, types.F32), x)
        source = types.F32
    result = with_component(x.type, target)
    bits = target.width
    low, high = (-(1 << (bits - 1)), 1 << (bits - 1)) if target.signed else (0, 1 << bits)
    largest = float(np.finfo(source.dtype).max)
    over = (_bool(s, Op.FOrdGreaterThanEqual, x, s.constant(float(high), x.type)) if high <= largest
            else _bool(s, Op.FOrdGreaterThan, x, s.constant(largest, x.type)))
    under = (_bool(s, Op.FOrdLessThan, x, s.constant(float(low), x.type)) if -low <= largest
             else _bool(s, Op.FOrdLessThan, x, s.constant(-largest, x.type)))
    outside = _bool(s, Op.LogicalOr, _bool(s, Op.LogicalOr, over, under), _bool(s, Op.IsNan, x))
    safe = _select(s, outside, s.constant(0.0, x.type), x)
    converted = _op(s, Op.ConvertFToS if target.signed else Op.ConvertFToU, result, safe)
    converted = _select(s, over, s.constant(high - 1, result), converted)
    return _select(s, under, s.constant(low, result), converted)


def clamp_to_int_range(s, x: Value, target: types.Scalar) -> Value:
    """x (a float) clamped to target's range as x's type holds it (the ends rounded inward), NaN -> 0."""
    source = component(x.type)
    bits = target.width
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if target.signed else (0, (1 << bits) - 1)
    dtype = source.dtype
    largest = float(np.finfo(dtype).max)
    with np.errstate(over="ignore"):
        top, bottom = min(float(dtype.type(high)), largest), max(float(dtype.type(low)), -largest)
    if top > high:
        top = float(np.nextafter(dtype.type(top), dtype.type(0)))
    if bottom < low:
        bottom = float(np.nextafter(dtype.type(bottom), dtype.type(0)))
    cleaned = _select(s, _bool(s, Op.IsNan, x), s.constant(0.0, x.type), x)
    cleaned = _select(s, _compare(s, Op.FOrdGreaterThan, cleaned, top), s.constant(top, x.type), cleaned)
    return _select(s, _compare(s, Op.FOrdLessThan, cleaned, bottom), s.constant(bottom, x.type), cleaned)


# min, max, clamp ------------------------------------------------------------------------------------------
def float_extreme(s, name: str, a: Value, b: Value) -> Value:
    """minimum / maximum of floats: a NaN operand gives the other one (both NaN: NaN); equal operands give a."""
    opcode = Op.FOrdLessThan if name == "minimum" else Op.FOrdGreaterThan
    chosen = _select(s, _bool(s, opcode, b, a), b, a)
    return _select(s, _bool(s, Op.IsNan, a), b, chosen)


def int_extreme(s, name: str, a: Value, b: Value) -> Value:
    glsl = {("minimum", True): "SMin", ("minimum", False): "UMin", ("maximum", True): "SMax",
            ("maximum", False): "UMax"}[name, component(a.type).signed]
    return Value(a.type, s.b.ext_inst(GLSL, glsl, s.type_id(a.type), a.id, b.id))


def extreme(s, name: str, a: Value, b: Value) -> Value:
    kind = scalar_kind(component(a.type))
    if kind == "float":
        return float_extreme(s, name, a, b)
    if kind in ("signed", "unsigned"):
        return int_extreme(s, name, a, b)
    raise SemanticError(f"{name} is not defined for {a.type}")


def clamp(s, x: Value, low: Value, high: Value) -> Value:
    """clamp(x, lo, hi) == minimum(maximum(x, lo), hi): lo > hi gives hi, a NaN x gives lo."""
    return extreme(s, "minimum", extreme(s, "maximum", x, low), high)


def int_abs(s, x: Value) -> Value:
    """|x| of a signed integer with wrapping negation: abs(INT_MIN) == INT_MIN."""
    t = x.type
    return _select(s, _bool(s, Op.SLessThan, x, s.constant(0, t)), _op(s, Op.SNegate, t, x), x)


# float remainder and math outside its domain -----------------------------------------------------------
def float_remainder(s, a: Value, b: Value) -> Value:
    """C's fmod: the sign of a; a % 0, inf % b and a NaN operand give NaN; finite a % inf gives a."""
    t = a.type
    r = _op(s, Op.FRem, t, a, b)
    a_special = _bool(s, Op.LogicalOr, _bool(s, Op.IsInf, a), _bool(s, Op.IsNan, a))
    keep_a = _bool(s, Op.LogicalAnd, _bool(s, Op.IsInf, b), _op(s, Op.LogicalNot, a_special.type, a_special))
    r = _select(s, keep_a, a, r)
    nan = _bool(s, Op.LogicalOr, _bool(s, Op.LogicalOr, _bool(s, Op.FOrdEqual, b, s.constant(0.0, t)), a_special),
                _bool(s, Op.IsNan, b))
    return _select(s, nan, s.constant(NAN, t), r)


def _glsl(s, name: str, t: types.Type, *operands: Value) -> Value:
    return Value(t, s.b.ext_inst(GLSL, name, s.type_id(t), *(o.id for o in operands)))


def _fix(s, r: Value, condition: Value, value: float) -> Value:
    return _select(s, condition, s.constant(value, r.type), r)


def _compare(s, opcode, x: Value, value: float) -> Value:
    return _bool(s, opcode, x, s.constant(value, x.type))


def _both(s, a: Value, b: Value) -> Value:
    return _bool(s, Op.LogicalAnd, a, b)


def _either(s, a: Value, b: Value) -> Value:
    return _bool(s, Op.LogicalOr, a, b)


def math_with_domain(s, glsl: str, t: types.Type, operands: list[Value]) -> Value | None:
    """The GLSL.std.450 instruction with the results it leaves undefined given their C values (None: the
    instruction is defined for every input and emitted as it is)."""
    fixes = DOMAIN_FIXES.get(glsl)
    if fixes is None:
        return None
    return fixes(s, _glsl(s, glsl, t, *operands), *operands)


def _sqrt(s, r, x):
    return _fix(s, r, _compare(s, Op.FOrdLessThan, x, 0.0), NAN)


def _inverse_sqrt(s, r, x):
    r = _fix(s, r, _compare(s, Op.FOrdEqual, x, 0.0), INF)
    return _fix(s, r, _compare(s, Op.FOrdLessThan, x, 0.0), NAN)


def _log(s, r, x):
    r = _fix(s, r, _compare(s, Op.FOrdEqual, x, 0.0), -INF)
    return _fix(s, r, _compare(s, Op.FOrdLessThan, x, 0.0), NAN)


def _pow(s, r, x, y):
    """C's pow, except that a negative base gives NaN for every exponent (write (-x) ** y and fix the sign)."""
    zero_base = _compare(s, Op.FOrdEqual, x, 0.0)
    r = _fix(s, r, _both(s, zero_base, _compare(s, Op.FOrdGreaterThan, y, 0.0)), 0.0)
    r = _fix(s, r, _both(s, zero_base, _compare(s, Op.FOrdLessThan, y, 0.0)), INF)
    r = _fix(s, r, _either(s, _compare(s, Op.FOrdLessThan, x, 0.0),
                           _either(s, _bool(s, Op.IsNan, x), _bool(s, Op.IsNan, y))), NAN)
    return _fix(s, r, _either(s, _compare(s, Op.FOrdEqual, x, 1.0), _compare(s, Op.FOrdEqual, y, 0.0)), 1.0)


def _atan2(s, r, y, x):
    both_zero = _both(s, _compare(s, Op.FOrdEqual, y, 0.0), _compare(s, Op.FOrdEqual, x, 0.0))
    return _fix(s, r, both_zero, 0.0)


def _sign(s, r, x):
    return _select(s, _bool(s, Op.IsNan, x), x, r)


DOMAIN_FIXES = {"Sqrt": _sqrt, "InverseSqrt": _inverse_sqrt, "Log": _log, "Log2": _log, "Pow": _pow,
                "Atan2": _atan2, "FSign": _sign}


# subgroup min / max of floats -------------------------------------------------------------------------------
def subgroup_float_extreme(s, opcode, group_operation: str, x: Value) -> Value:
    """subgroup_min / subgroup_max of floats as minimum / maximum define them: NaNs are left out (all NaN: NaN).

    The NaNs become the operation's identity before the reduction; a bitwise-and reduction of 1-per-NaN
    flags says where every active invocation held a NaN (component by component for vectors)."""
    t = x.type
    is_nan = _bool(s, Op.IsNan, x)
    identity = INF if opcode == Op.GroupNonUniformFMin else -INF
    cleaned = _select(s, is_nan, s.constant(identity, t), x)
    subgroup = s.b.scope("Subgroup")
    reduced = Value(t, s.b.emit(opcode, s.type_id(t), subgroup, group_operation, cleaned.id))
    flag_type = with_component(t, types.U32)
    flags = _select(s, is_nan, s.constant(1, flag_type), s.constant(0, flag_type))
    every = Value(flag_type, s.b.emit(Op.GroupNonUniformBitwiseAnd, s.type_id(flag_type), subgroup, "Reduce",
                                      flags.id))
    all_nan = _bool(s, Op.IEqual, every, s.constant(1, flag_type))
    return _select(s, all_nan, s.constant(NAN, t), reduced)


# float -> narrower float ------------------------------------------------------------------------------
def narrow_float(s, x: Value, target: types.Scalar) -> Value:
    """f32 -> f16 or bf16 rounded to nearest even, computed on the bits: an OpFConvert's rounding is the
    driver's (the H200 truncates f32 -> bf16) and a driver may fold f32(f16(x)) back to x (the H200 does, even
    with NoContraction), so the language rounds in integer arithmetic and bitcasts the 16 bits. NaN keeps its
    sign (f16: the top of its payload, as NumPy does; bf16: the quiet NaN 0x7FC0, as ml_dtypes does)."""
    u32 = with_component(x.type, types.U32)
    u = _op(s, Op.Bitcast, u32, x)
    bits = _bf16_bits(s, u, u32) if target.encoding is not None else _f16_bits(s, u, u32)
    return _op(s, Op.Bitcast, with_component(x.type, target),
               _op(s, Op.UConvert, with_component(x.type, types.U16), bits))


def _u(s, t: types.Type, value: int) -> Value:
    return s.constant(value, t)


def _bf16_bits(s, u: Value, t: types.Type) -> Value:
    magnitude = _op(s, Op.BitwiseAnd, t, u, _u(s, t, 0x7FFFFFFF))
    is_nan = _bool(s, Op.UGreaterThan, magnitude, _u(s, t, 0x7F800000))
    odd = _op(s, Op.BitwiseAnd, t, _op(s, Op.ShiftRightLogical, t, u, _u(s, t, 16)), _u(s, t, 1))
    rounded = _op(s, Op.IAdd, t, u, _op(s, Op.IAdd, t, odd, _u(s, t, 0x7FFF)))
    nan = _op(s, Op.BitwiseOr, t, _op(s, Op.BitwiseAnd, t, u, _u(s, t, 0x80000000)), _u(s, t, 0x7FC00000))
    return _op(s, Op.ShiftRightLogical, t, _select(s, is_nan, nan, rounded), _u(s, t, 16))


def _f16_bits(s, u: Value, t: types.Type) -> Value:
    sign = _op(s, Op.BitwiseAnd, t, _op(s, Op.ShiftRightLogical, t, u, _u(s, t, 16)), _u(s, t, 0x8000))
    a = _op(s, Op.BitwiseAnd, t, u, _u(s, t, 0x7FFFFFFF))
    # normal f16 results: rebias the exponent, round the 13 dropped bits to nearest even (a carry is right)
    odd = _op(s, Op.BitwiseAnd, t, _op(s, Op.ShiftRightLogical, t, a, _u(s, t, 13)), _u(s, t, 1))
    normal = _op(s, Op.ShiftRightLogical, t, _op(s, Op.ISub, t, _op(s, Op.IAdd, t, a, _op(
        s, Op.IAdd, t, odd, _u(s, t, 0xFFF))), _u(s, t, 0x38000000)), _u(s, t, 13))
    # subnormal f16 results: the significand with its implicit bit, shifted right by 126 - exponent (14..24)
    exponent = _op(s, Op.ShiftRightLogical, t, a, _u(s, t, 23))
    significand = _op(s, Op.BitwiseOr, t, _op(s, Op.BitwiseAnd, t, a, _u(s, t, 0x7FFFFF)), _u(s, t, 0x800000))
    shift = _op(s, Op.ISub, t, _u(s, t, 126), exponent)
    safe_shift = _select(s, _bool(s, Op.UGreaterThan, shift, _u(s, t, 24)), _u(s, t, 24), shift)
    quotient = _op(s, Op.ShiftRightLogical, t, significand, safe_shift)
    rest = _op(s, Op.ISub, t, significand, _op(s, Op.ShiftLeftLogical, t, quotient, safe_shift))
    half = _op(s, Op.ShiftLeftLogical, t, _u(s, t, 1), _op(s, Op.ISub, t, safe_shift, _u(s, t, 1)))
    up = _bool(s, Op.LogicalOr, _bool(s, Op.UGreaterThan, rest, half), _bool(s, Op.LogicalAnd, _bool(
        s, Op.IEqual, rest, half), _bool(s, Op.INotEqual, _op(s, Op.BitwiseAnd, t, quotient, _u(s, t, 1)),
                                          _u(s, t, 0))))
    subnormal = _op(s, Op.IAdd, t, quotient, _select(s, up, _u(s, t, 1), _u(s, t, 0)))
    subnormal = _select(s, _bool(s, Op.UGreaterThan, shift, _u(s, t, 24)), _u(s, t, 0), subnormal)
    # NaN keeps the top of its payload (at least one bit); inf and what rounds past 65504 give inf
    payload = _op(s, Op.ShiftRightLogical, t, _op(s, Op.BitwiseAnd, t, a, _u(s, t, 0x7FFFFF)), _u(s, t, 13))
    payload = _select(s, _bool(s, Op.IEqual, payload, _u(s, t, 0)), _u(s, t, 1), payload)
    nan = _op(s, Op.BitwiseOr, t, _u(s, t, 0x7C00), payload)
    h = _select(s, _bool(s, Op.ULessThan, a, _u(s, t, 0x38800000)), subnormal, normal)
    h = _select(s, _bool(s, Op.UGreaterThanEqual, a, _u(s, t, 0x477FF000)), _u(s, t, 0x7C00), h)
    h = _select(s, _bool(s, Op.UGreaterThan, a, _u(s, t, 0x7F800000)), nan, h)
    return _op(s, Op.BitwiseOr, t, sign, h)
