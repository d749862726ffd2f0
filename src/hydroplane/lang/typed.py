"""Typed run-time values and the type helpers every part of the language's semantics shares.

A `Value` is a run-time value: its type (the one type model, `hydroplane.spirv.types`) and its
SPIR-V id. A Python number in an expression is a literal without a type of its own (`is_literal`).
semantic.py, coop_semantic.py and portable.py build on these; semantic.py re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hydroplane.lang.errors import SemanticError
from hydroplane.spirv import types

GLSL = "GLSL.std.450"


@dataclass(frozen=True, slots=True)
class Value:
    """A run-time value: its type (spirv.types) and its SPIR-V id."""

    type: types.Type
    id: int


def scalar_kind(t: types.Scalar) -> str:
    """'bool', 'float', 'signed', 'unsigned' or 'encoded' (bf16, fp8: conversions only)."""
    if t.kind == "bool":
        return "bool"
    if t.kind == "float":
        return "float" if t.encoding is None else "encoded"
    return "signed" if t.signed else "unsigned"


def component(t: types.Type) -> types.Scalar:
    """The scalar of a scalar, vector or cooperative-matrix type."""
    c = types.component_of(t)
    if not isinstance(c, types.Scalar):
        raise SemanticError(f"{t} has no scalar component")
    return c


def with_component(t: types.Type, c: types.Scalar) -> types.Type:
    """The same shape (scalar, vector, matrix) with another component type."""
    if isinstance(t, types.Scalar):
        return c
    if isinstance(t, types.Vector):
        return types.Vector(c, t.count)
    if isinstance(t, types.CoopMatrix):
        return replace(t, component=c)
    raise SemanticError(f"{t} has no component type to change")


def describe(x) -> str:
    """How a value or literal reads in a message."""
    if isinstance(x, Value):
        return str(x.type)
    if isinstance(x, bool):
        return "a bool literal"
    if isinstance(x, int):
        return "an int literal"
    if isinstance(x, float):
        return "a float literal"
    return type(x).__name__


def is_literal(x) -> bool:
    return isinstance(x, (bool, int, float))
