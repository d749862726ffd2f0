"""Scalar types by short name (f16, bf16, s8, u32 ...) and numbers encoded as SPIR-V literal words.

`SCALARS` is the one table of the scalar types kernels use; `number_literal` turns a
Python number into the (value, nwords) an OpConstant/OpSpecConstant literal carries,
with the SPIR-V rules: narrow signed integers sign-extended to 32 bits, narrow floats
and unsigned integers zero-extended, 64-bit values in two words (low word first).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from hydroplane.spirv.build_error import BuildError


class LiteralError(BuildError):
    """A number that does not fit the type of the literal it is meant for."""


@dataclass(frozen=True, slots=True)
class Scalar:
    """A scalar SPIR-V type: 'int' (signed 0/1), 'float' (encoding name or None) or 'bool'."""

    kind: str
    width: int = 0
    signed: int = 0
    encoding: str | None = None

    @property
    def nbytes(self) -> int:
        return self.width // 8


SCALARS: dict[str, Scalar] = {
    "bool": Scalar("bool"),
    "s8": Scalar("int", 8, 1),
    "u8": Scalar("int", 8, 0),
    "s16": Scalar("int", 16, 1),
    "u16": Scalar("int", 16, 0),
    "s32": Scalar("int", 32, 1),
    "u32": Scalar("int", 32, 0),
    "s64": Scalar("int", 64, 1),
    "u64": Scalar("int", 64, 0),
    "f16": Scalar("float", 16),
    "bf16": Scalar("float", 16, encoding="BFloat16KHR"),
    "f32": Scalar("float", 32),
    "f64": Scalar("float", 64),
    "e4m3": Scalar("float", 8, encoding="Float8E4M3EXT"),
    "e5m2": Scalar("float", 8, encoding="Float8E5M2EXT"),
}


def scalar(name: str) -> Scalar:
    """The scalar type of a short name ('f16', 's8', ...); LiteralError names the known ones."""
    try:
        return SCALARS[name]
    except KeyError:
        raise LiteralError(f"unknown scalar type {name!r}; known: {', '.join(SCALARS)}") from None


def _bfloat16_bits(value: float) -> int:
    """Round a number to bfloat16 (round to nearest even), as bits."""
    if math.isnan(value):
        return 0x7FC0
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _float_bits(ty: Scalar, value: float) -> int:
    try:
        if ty.encoding == "BFloat16KHR":
            struct.pack("<f", value)  # raises OverflowError beyond the f32 range
            return _bfloat16_bits(value)
        if ty.encoding is not None:
            raise LiteralError(f"{ty.encoding} constants need a bit pattern (constant_bits), not {value!r}")
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
