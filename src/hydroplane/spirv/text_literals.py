"""Literal words of SPIR-V text: the scalar type a literal has, and numbers printed and parsed as
spirv-dis / spirv-as write them (shortest exact decimals or C hex floats, every float format the
grammar's FPEncoding names, integers sized and signed by their type).
"""

from __future__ import annotations

import re
import struct
from fractions import Fraction

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import Instruction
from hydroplane.spirv.enums import FPEncoding
from hydroplane.spirv.types import Scalar

Op = grammar.Op

# (exponent bits, mantissa bits) of each float format, by (width, FPEncoding or None).
FLOAT_FORMATS = {
    (16, None): (5, 10),
    (32, None): (8, 23),
    (64, None): (11, 52),
    (16, FPEncoding.BFloat16KHR): (8, 7),
    (8, FPEncoding.Float8E4M3EXT): (4, 3),
    (8, FPEncoding.Float8E5M2EXT): (5, 2),
}
NO_INFINITY = {FPEncoding.Float8E4M3EXT}  # formats whose all-ones exponent still holds finite values


def float_format(t: Scalar) -> tuple[int, int] | None:
    """(exponent bits, mantissa bits) of a float type; None when its literals have no number syntax."""
    return FLOAT_FORMATS.get((t.width, t.encoding))


def scalar_type(inst: Instruction) -> Scalar | None:
    """The scalar type an OpTypeInt / OpTypeFloat declares, any width (None for other instructions, and
    for an FPEncoding the grammar does not know: its literals print as plain numbers)."""
    ops = inst.operands
    if inst.opcode == Op.TypeInt and len(ops) >= 2:
        return Scalar("int", ops[0].value, bool(ops[1].value))
    if inst.opcode == Op.TypeFloat and ops:
        encoding = None
        if len(ops) > 1:
            if ops[1].value not in FPEncoding.__members__.values():
                return None
            encoding = FPEncoding(ops[1].value)
        return Scalar("float", ops[0].value, encoding=encoding)
    return None


def hex_float(bits: int, exp_bits: int, mant_bits: int) -> str:
    """`bits` of a binary float format as a C hex float, exactly as spirv-dis prints it."""
    sign = "-" if (bits >> (exp_bits + mant_bits)) & 1 else ""
    field = (bits >> mant_bits) & ((1 << exp_bits) - 1)
    frac = bits & ((1 << mant_bits) - 1)
    bias = (1 << (exp_bits - 1)) - 1
    if field == 0 and frac == 0:
        return sign + "0x0p+0"
    if field == 0:  # subnormal: normalise so that the leading one is implicit
        top = frac.bit_length() - 1
        exponent = top + 1 - bias - mant_bits
        frac = (frac << (mant_bits - top)) & ((1 << mant_bits) - 1)
    else:
        exponent = field - bias
    nibbles = (mant_bits + 3) // 4
    frac <<= 4 * nibbles - mant_bits
    while nibbles and not frac & 0xF:
        frac >>= 4
        nibbles -= 1
    digits = f".{frac:0{nibbles}x}" if nibbles else ""
    return f"{sign}0x1{digits}p{'+' if exponent >= 0 else ''}{exponent}"


def format_float(bits: int, t: Scalar) -> str:
    """A float literal as spirv-dis prints it: shortest exact decimal for 32/64-bit zero and
    normal numbers (9 / 17 significant digits), a hex float for everything else."""
    fmt = float_format(t)
    if fmt is None:
        return str(bits)
    exp_bits, mant_bits = fmt
    if t.encoding is None and t.width in (32, 64):
        field = (bits >> mant_bits) & ((1 << exp_bits) - 1)
        subnormal = field == 0 and bits & ((1 << mant_bits) - 1)
        if field != (1 << exp_bits) - 1 and not subnormal:
            if t.width == 32:
                return f"{struct.unpack('<f', struct.pack('<I', bits))[0]:.9g}"
            return f"{struct.unpack('<d', struct.pack('<Q', bits))[0]:.17g}"
    return hex_float(bits, exp_bits, mant_bits)


def format_literal(value: int, t: Scalar | None, nwords: int) -> str:
    """A context-dependent literal (OpConstant value, OpSwitch case) in its type's form."""
    if t is None:
        return str(value)
    if t.kind == "float":
        return format_float(value, t)
    width = min(t.width, 32 * nwords)
    if width <= 0:  # OpTypeInt 0: invalid, print the raw value
        return str(value)
    value &= (1 << width) - 1
    if t.signed and value >> (width - 1):
        value -= 1 << width
    return str(value)


_DECIMAL_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")
_HEX_FLOAT = re.compile(r"([+-]?)0[xX]([0-9a-fA-F]*)\.?([0-9a-fA-F]*)(?:[pP]([+-]?\d+))?\Z")
_LONGEST_FLOAT = 1000  # characters; longer literals are rejected rather than computed
# Exponents beyond these over- or underflow every format whatever 1000 digits say: 1000 digits
# span 10**±1000 (decimal) or 2**±4000 (hex); the formats span 10**±330, 2**±1100.
_EXTREME_SCALE = {False: 1500, True: 6000}
_INTEGER = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|\d+)\Z")


def parse_integer(token: str) -> int | None:
    m = _INTEGER.match(token)
    if not m:
        return None
    digits = m.group(2)
    if len(digits.lstrip("0")) > 40:  # far out of every range; int() of huge decimals is slow
        value = 1 << 200
    else:
        value = int(digits, 16) if digits[:2].lower() == "0x" else int(digits)
    return -value if m.group(1) == "-" else value


def encode_float(token: str, exp_bits: int, mant_bits: int, no_infinity: bool = False) -> int | None:
    """The bits of a decimal or hex float literal in a binary format (round to nearest even).

    None when the token is not a float or does not fit. A hex float may name the all-ones
    exponent (spirv-dis prints infinities and NaNs that way); a decimal one may not."""
    if len(token) > _LONGEST_FLOAT:
        return None
    m = _HEX_FLOAT.match(token)
    if m and (m.group(2) or m.group(3)):
        negative = m.group(1) == "-"
        value = Fraction(int(m.group(2) + m.group(3) or "0", 16), 16 ** len(m.group(3)))
        scale = int(m.group(4) or 0)
        is_hex = True
    elif (d := _DECIMAL_FLOAT.match(token)):
        negative = token.startswith("-")
        value = abs(Fraction(token[:d.start(2)] if d.group(2) else token))
        scale = int(d.group(2)[1:]) if d.group(2) else 0
        is_hex = False
    else:
        return None
    sign = int(negative) << (exp_bits + mant_bits)
    if value == 0 or scale < -_EXTREME_SCALE[is_hex]:
        return sign  # zero, or far below every format's smallest subnormal
    if scale > _EXTREME_SCALE[is_hex]:
        return None  # far above every format's range
    value *= Fraction(2 if is_hex else 10) ** scale
    bias = (1 << (exp_bits - 1)) - 1
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** exponent > value:
        exponent -= 1
    subnormal = exponent < 1 - bias
    quantum = (1 - bias if subnormal else exponent) - mant_bits
    n = round(value / Fraction(2) ** quantum)
    if subnormal:
        return sign | n  # n == 2**mant_bits lands exactly on the smallest normal encoding
    if n >> (mant_bits + 1):
        n >>= 1
        exponent += 1
    field = exponent + bias
    max_field = (1 << exp_bits) - 1
    if field > max_field or (field == max_field and not is_hex and not no_infinity):
        return None
    bits = sign | (field << mant_bits) | (n - (1 << mant_bits))
    if no_infinity and not is_hex and field == max_field and n == (1 << (mant_bits + 1)) - 1:
        return None  # E4M3's only NaN pattern
    return bits
