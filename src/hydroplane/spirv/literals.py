"""Numbers encoded as SPIR-V literal words, for scalar types of the type model (spirv/types.py).

`number_literal` turns a
Python number into the (value, nwords) an OpConstant/OpSpecConstant literal carries,
with the SPIR-V rules: narrow signed integers sign-extended to 32 bits, narrow floats
and unsigned integers zero-extended, 64-bit values in two words (low word first).
"""

from __future__ import annotations

import math
import struct

from hydroplane.spirv.build_error import BuildError
from hydroplane.spirv.enums import FPEncoding
from hydroplane.spirv.types import Scalar


class LiteralError(BuildError):
    """A number that does not fit the type of the literal it is meant for."""


def _bfloat16_bits(value: float) -> int:
    """Round a number to bfloat16 (round to nearest even), as bits."""
    if math.isnan(value):
        return 0x7FC0
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _float_bits(ty: Scalar, value: float) -> int:
    try:
        if ty.encoding == FPEncoding.BFloat16KHR:
            struct.pack("<f", value)  # raises OverflowError beyond the f32 range
            return _bfloat16_bits(value)
        if ty.encoding is not None:
            raise LiteralError(f"{ty.encoding.name} constants need a bit pattern (constant_bits), not {value!r}")
        fmt = {16: "<e", 32: "<f", 64: "<d"}.get(ty.width)
        if fmt is None:
            raise LiteralError(f"no numeric encoding for a {ty.width}-bit float; give a bit pattern")
        size = struct.calcsize(fmt)
        return int.from_bytes(struct.pack(fmt, value), "little") & ((1 << (8 * size)) - 1)
    except (OverflowError, struct.error):
        raise LiteralError(f"{value!r} is out of range of a {ty.width}-bit float") from None


def number_literal(ty: Scalar, value: int | float) -> tuple[int, int]:
    """(value word(s) as one int, nwords) of a literal number of scalar type `ty`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LiteralError(f"a literal number must be an int or float, not {type(value).__name__}")
    if ty.kind == "int":
        if not isinstance(value, int):
            if not float(value).is_integer():
                raise LiteralError(f"{value!r} is not an integer, the type is a {ty.width}-bit int")
            value = int(value)
        lo, hi = (-(1 << (ty.width - 1)), 1 << (ty.width - 1)) if ty.signed else (0, 1 << ty.width)
        if not lo <= value < hi:
            kind = "signed" if ty.signed else "unsigned"
            raise LiteralError(f"{value} does not fit a {ty.width}-bit {kind} integer")
        return bits_literal(ty, value & ((1 << ty.width) - 1))
    if ty.kind == "float":
        return bits_literal(ty, _float_bits(ty, float(value)))
    raise LiteralError(f"a {ty.kind} has no literal number")


def bits_literal(ty: Scalar, bits: int) -> tuple[int, int]:
    """(words as one int, nwords) of a literal given as the type's raw bit pattern."""
    if not isinstance(bits, int) or isinstance(bits, bool) or not 0 <= bits < (1 << max(ty.width, 1)):
        raise LiteralError(f"bit pattern {bits!r} does not fit {ty.width} bits")
    if ty.width > 32:
        return bits, 2
    if ty.kind == "int" and ty.signed and ty.width < 32 and bits >> (ty.width - 1):
        bits |= 0xFFFFFFFF ^ ((1 << ty.width) - 1)  # sign-extend into the high bits
    return bits, 1
