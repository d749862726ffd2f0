"""The in-memory model of one AMD ISA XML file: plain frozen dataclasses.

Names follow AMD's schema (Encoding, Field, InstructionEncoding, Operand, DataFormat,
OperandType, ...). Bit offsets count from the least significant bit of the instruction,
whose first dword is the lowest 32 bits (AMD's convention). `pack`/`unpack` turn a model
object into JSON-able lists and back, for the on-disk cache.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class BitRange:
    """A run of bits of a field: `width` bits at `offset`; padding bits follow it in the value."""

    offset: int
    width: int
    padding_width: int = 0
    padding_value: int = 0

    @property
    def high(self) -> int:
        return self.offset + self.width - 1


@dataclass(frozen=True)
class Field:
    """A named field of an encoding; its ranges in AMD's order, least significant part first."""

    name: str
    description: str
    ranges: tuple[BitRange, ...]
    conditional: bool = False
    NESTED: ClassVar[dict[str, type]] = {"ranges": BitRange}

    @property
    def width(self) -> int:
        return sum(r.width for r in self.ranges)

    @property
    def mask(self) -> int:
        return sum(((1 << r.width) - 1) << r.offset for r in self.ranges)

    def extract(self, word: int) -> int:
        """The field's value in the instruction `word` (an int of any width)."""
        value, shift = 0, 0
        for r in self.ranges:
            value |= ((word >> r.offset) & ((1 << r.width) - 1)) << shift
            shift += r.width
        return value

    def insert(self, word: int, value: int) -> int:
        """`word` with the field set to `value` (the caller checked that it fits)."""
        for r in self.ranges:
            part = value & ((1 << r.width) - 1)
            word = (word & ~(((1 << r.width) - 1) << r.offset)) | (part << r.offset)
            value >>= r.width
        return word

    def bits_text(self) -> str:
        """AMD-style bit ranges, most significant first: '24:17' or '16' or '63:32, 7:0'."""
        parts = [f"{r.high}:{r.offset}" if r.width > 1 else f"{r.offset}" for r in reversed(self.ranges)]
        return ", ".join(parts)


@dataclass(frozen=True)
class Condition:
    """An encoding condition: name, optional id (schema 1.2), expression tree as nested tuples."""

    name: str
    condition_id: int | None
    expression: Any


@dataclass(frozen=True)
class Encoding:
    """An encoding (microcode format): its fields and the identifier words of its opcodes.

    `derived_from` names the encoding a literal form was derived from when the XML file does
    not carry the literal form's own layout (see `derived.py`); it is empty for AMD's own.
    """

    name: str
    order: int
    bit_count: int
    identifier_mask: int
    identifiers: tuple[int, ...]
    conditions: tuple[Condition, ...]
    description: str
    fields: tuple[Field, ...]
    derived_from: str = ""
    NESTED: ClassVar[dict[str, type]] = {"conditions": Condition, "fields": Field}

    def field(self, name: str) -> Field | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    @property
    def short_name(self) -> str:
        """'VOP1' for ENC_VOP1; other names unchanged."""
        return self.name[4:] if self.name.startswith("ENC_") else self.name


@dataclass(frozen=True)
class Operand:
    """One operand of an instruction in one encoding, in AMD's order."""

    order: int
    field_name: str
    data_format: str
    operand_type: str
    size: int
    is_input: bool
    is_output: bool
    implicit: bool = False
    microcode_required: bool = True

    @property
    def access(self) -> str:
        return {(True, True): "Read and written", (True, False): "Read",
                (False, True): "Written"}.get((self.is_input, self.is_output), "Neither read nor written")


@dataclass(frozen=True)
class InstructionEncoding:
    """An instruction's form in one encoding: opcode, condition, operands."""

    encoding: str
    condition: str
    condition_id: int | None
    opcode: int
    operands: tuple[Operand, ...]
    NESTED: ClassVar[dict[str, type]] = {"operands": Operand}


@dataclass(frozen=True)
class Instruction:
    """An instruction: name, aliases, description, flags, encodings, functional group."""

    name: str
    aliases: tuple[str, ...]
    description: str
    flags: tuple[str, ...]
    encodings: tuple[InstructionEncoding, ...]
    group: str
    subgroups: tuple[str, ...]
    NESTED: ClassVar[dict[str, type]] = {"encodings": InstructionEncoding}

    def encoding(self, name: str) -> InstructionEncoding | None:
        for e in self.encodings:
            if e.encoding == name:
                return e
        return None


@dataclass(frozen=True)
class DataField:
    name: str
    signedness: str
    ranges: tuple[BitRange, ...]
    NESTED: ClassVar[dict[str, type]] = {"ranges": BitRange}


@dataclass(frozen=True)
class DataFormat:
    name: str
    description: str
    data_type: str
    bit_count: int
    component_count: int
    fields: tuple[DataField, ...]
    NESTED: ClassVar[dict[str, type]] = {"fields": DataField}


@dataclass(frozen=True)
class PredefinedValue:
    name: str
    description: str
    value: int


@dataclass(frozen=True)
class OperandType:
    name: str
    description: str
    partitioned: bool
    subtypes: tuple[str, ...]
    values: tuple[PredefinedValue, ...]
    fields: tuple[Field, ...] = ()  # the sub-fields of a partitioned type (its MicrocodeFormat)
    NESTED: ClassVar[dict[str, type]] = {"values": PredefinedValue, "fields": Field}

    def value_named(self, name: str) -> PredefinedValue | None:
        return self._by_name.get(name.upper())

    def names_by_value(self) -> dict[int, str]:
        """Value -> its first name (the caller must not change the dict)."""
        return self._by_value

    @functools.cached_property
    def _by_name(self) -> dict[str, PredefinedValue]:
        out: dict[str, PredefinedValue] = {}
        for v in self.values:
            out.setdefault(v.name.upper(), v)
        return out

    @functools.cached_property
    def _by_value(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for v in self.values:
            out.setdefault(v.value, v.name)
        return out


@dataclass(frozen=True)
class FunctionalGroup:
    name: str
    description: str


@dataclass(frozen=True)
class Document:
    """The <Document> header and the architecture of one XML file."""

    architecture: str
    architecture_id: int
    schema_version: str
    release_date: str
    copyright: str = ""
    license: str = ""


@dataclass
class ArchitectureSpec:
    """Everything imported from one XML file (the importer's output, before caching)."""

    document: Document
    encodings: dict[str, Encoding] = field(default_factory=dict)
    instructions: dict[str, Instruction] = field(default_factory=dict)
    data_formats: dict[str, DataFormat] = field(default_factory=dict)
    operand_types: dict[str, OperandType] = field(default_factory=dict)
    groups: dict[str, FunctionalGroup] = field(default_factory=dict)
    subgroups: tuple[str, ...] = ()


def pack(obj: Any) -> Any:
    """A model object as nested lists (dataclass fields in declaration order)."""
    if dataclasses.is_dataclass(obj):
        return [pack(getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    if isinstance(obj, (tuple, list)):
        return [pack(x) for x in obj]
    return obj


def unpack(cls: type, data: list) -> Any:
    """The inverse of `pack` for a dataclass `cls` (nested classes from its NESTED table)."""
    nested = getattr(cls, "NESTED", {})
    kwargs = {}
    for f, value in zip(dataclasses.fields(cls), data):
        if f.name in nested:
            value = tuple(unpack(nested[f.name], v) for v in value)
        elif isinstance(value, list):
            value = _tuples(value)
        kwargs[f.name] = value
    return cls(**kwargs)


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
