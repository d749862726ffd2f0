"""Encode an instruction form into machine words and decode words back, from the XML layouts.

`encode(spec, name, encoding, values)` places the opcode's identifier and each field value
(operand fields by AMD's field names, e.g. {"VDST": 5, "SRC0": 257}); `decode(spec, data)`
finds the encoding whose identifier mask and identifier match, the instruction with that
opcode, checks the encoding's condition, and reads the fields back. Words are little-endian,
first dword lowest, as the hardware and LLVM lay them out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hydroplane.isa.conditions import describe, evaluate
from hydroplane.isa.errors import DecodeError, EncodeError
from hydroplane.isa.layouts import LITERAL_FIELD, Layout, identifier_for, layout_for, opcode_field
from hydroplane.isa.model import Instruction, InstructionEncoding
from hydroplane.isa.spec import Spec


@dataclass(frozen=True)
class Decoded:
    """Words decoded to an instruction form and its field values."""

    architecture: str
    instruction: Instruction
    form: InstructionEncoding
    layout: Layout
    values: dict[str, int]
    data: bytes

    @property
    def length(self) -> int:
        return len(self.data)

    @property
    def unused_bits(self) -> int:
        """Set bits the instruction does not use: outside every field (AMD's 'unassigned'), or in a
        field that is neither the opcode/encoding nor one of its operands (v_pipeflush's VDST)."""
        enc = self.layout.encoding
        used = enc.identifier_mask
        names = {o.field_name for o in self.form.operands} | {f for f, _ in self.layout.fixed}
        for f in enc.fields:
            if f.name in names:
                used |= f.mask
        return int.from_bytes(self.data, "little") & ~used


def find_form(spec: Spec, name: str, encoding: str) -> tuple[Instruction, InstructionEncoding, Layout]:
    """The instruction, its form in `encoding`, and that form's layout (errors name what lacks)."""
    instruction = spec.instruction(name)
    form = instruction.encoding(encoding) or instruction.encoding("ENC_" + encoding.upper())
    if form is None:
        have = ", ".join(e.encoding for e in instruction.encodings)
        raise EncodeError(f"{instruction.name} has no {encoding} form in {spec.architecture} (it has: {have})")
    layout = layout_for(spec, instruction, form)
    if layout is None:
        raise EncodeError(f"{instruction.name}: the layout of encoding {form.encoding} is not in the loaded "
                          f"{spec.architecture} specification ({spec.source}), so this form cannot be encoded")
    return instruction, form, layout


def encode(spec: Spec, name: str, encoding: str, values: dict[str, int]) -> bytes:
    """The bytes of instruction `name` in `encoding` with field `values` (unnamed fields are 0)."""
    instruction, form, layout = find_form(spec, name, encoding)
    enc = layout.encoding
    ident = identifier_for(enc, form.opcode)
    if ident is None:
        raise EncodeError(f"{instruction.name}: opcode {form.opcode} has no identifier in {enc.name} "
                          f"of {spec.architecture}")
    word = ident
    fixed = dict(layout.fixed)
    for field_name, value in list(values.items()) + list(fixed.items()):
        field = enc.field(field_name)
        if field is None:
            raise EncodeError(f"{instruction.name} {enc.name}: no field {field_name!r} "
                              f"(fields: {', '.join(f.name for f in enc.fields)})")
        if field_name in fixed and field_name in values and values[field_name] != fixed[field_name]:
            raise EncodeError(f"{instruction.name} {enc.name}: field {field_name} is fixed to "
                              f"{fixed[field_name]} in this literal form, got {values[field_name]}")
        if field_name in ("OP", "ENCODING"):
            raise EncodeError(f"{instruction.name} {enc.name}: field {field_name} comes from the opcode")
        if not isinstance(value, int) or value < 0 or value >= 1 << field.width:
            raise EncodeError(f"{instruction.name} {enc.name}: value {value!r} does not fit the "
                              f"{field.width}-bit field {field_name} (bits {field.bits_text()})")
        _check_operand_value(spec, instruction, form, field_name, value, field_name in fixed)
        word = field.insert(word, value)
    _check_condition(spec, instruction, form, layout, word)
    return word.to_bytes(enc.bit_count // 8, "little")


def _check_operand_value(spec: Spec, instruction: Instruction, form: InstructionEncoding,
                         field_name: str, value: int, fixed: bool) -> None:
    problem = None if fixed else _invalid_operand(spec, form, field_name, value)
    if problem:
        raise EncodeError(f"{instruction.name} {form.encoding}: {problem}")


def _invalid_operand(spec: Spec, form: InstructionEncoding, field_name: str, value: int) -> str | None:
    """Why `value` cannot be the operand in `field_name`, or None when it can."""
    operand = next((o for o in form.operands if o.field_name == field_name), None)
    if operand is None or field_name.startswith(LITERAL_FIELD):
        return None  # not an operand field, or a literal: any bit pattern
    operand_type = spec.operand_type(operand.operand_type)
    if operand_type is None or not operand_type.values:
        return None
    name = operand_type.names_by_value().get(value)
    if name is None:
        return f"{value} is not a value of operand type {operand.operand_type} for field {field_name}"
    return _register_span_problem(operand, operand_type, name)


REGISTER_NAME = re.compile(r"^(s|v|ttmp)(\d+)$", re.I)


def _register_span_problem(operand, operand_type, name: str) -> str | None:
    """A wide operand takes consecutive registers: they must exist, SGPR/TTMP pairs start even."""
    count = operand.size // 32
    m = REGISTER_NAME.match(name)
    if count <= 1 or not m:
        return None
    prefix, first = m.group(1), int(m.group(2))
    last = f"{prefix}{first + count - 1}"
    if operand_type.value_named(last) is None:
        return (f"{name} cannot start the {operand.size}-bit operand {operand.field_name}: "
                f"{last} is not a value of {operand.operand_type}")
    if prefix.lower() in ("s", "ttmp") and first % 2:
        return f"{name} cannot start the {operand.size}-bit operand {operand.field_name}: scalar pairs start even"
    return None


def _checked(spec: Spec, instruction: Instruction, form: InstructionEncoding, layout: Layout, data: bytes,
             values: dict[str, int]) -> Decoded:
    fixed = dict(layout.fixed)
    for field_name, value in values.items():
        problem = None if field_name in fixed else _invalid_operand(spec, form, field_name, value)
        if problem:
            raise DecodeError(f"{data.hex(' ')} is {instruction.name} {form.encoding}, but {problem}")
    return Decoded(spec.architecture, instruction, form, layout, values, data)


def _check_condition(spec: Spec, instruction: Instruction, form: InstructionEncoding, layout: Layout,
                     word: int) -> None:
    enc = layout.encoding
    condition = next((c for c in enc.conditions if c.name == form.condition), None)
    if condition is None:
        return
    ok = evaluate(condition.expression, lambda n: enc.field(n).extract(word) if enc.field(n) else None)
    if ok is False:
        raise EncodeError(f"{instruction.name} {enc.name}: the fields break condition {condition.name!r} "
                          f"({describe(condition.expression)}); such values select another form")


def _opcode_table(spec: Spec) -> dict[tuple[str, int], str]:
    table = spec.memo.get("opcodes")
    if table is None:
        table = {}
        for entry in spec.catalog():
            for encoding, opcode in entry.encodings:
                table.setdefault((encoding, opcode), entry.name)
        spec.memo["opcodes"] = table
    return table


def decode(spec: Spec, data: bytes) -> Decoded:
    """The first instruction in `data` (bytes, little-endian)."""
    if len(data) < 4:
        raise DecodeError(f"need at least 4 bytes to decode, got {len(data)}")
    table = _opcode_table(spec)
    tried = []
    for name in spec.encoding_names():
        enc = spec.encoding(name)
        size = enc.bit_count // 8
        if size == 0 or len(data) < size or opcode_field(enc) is None:
            continue
        word = int.from_bytes(data[:size], "little")
        if word & enc.identifier_mask not in _identifier_sets(spec)[name]:
            continue
        opcode = opcode_field(enc).extract(word)
        ins_name = table.get((enc.name, opcode))
        tried.append(enc.name)
        if ins_name is None:
            raise DecodeError(f"0x{word:0{size * 2}X} matches {enc.name} of {spec.architecture}, "
                              f"but no loaded instruction has opcode {opcode} there")
        instruction = spec.instruction(ins_name)
        form = instruction.encoding(enc.name)
        return _decode_form(spec, instruction, form, Layout(enc), data, word)
    first = int.from_bytes(data[:4], "little")
    raise DecodeError(f"word 0x{first:08X} matches no encoding of {spec.architecture} "
                      f"(encodings in the file: {', '.join(spec.encoding_names())})")


def _identifier_sets(spec: Spec) -> dict[str, frozenset[int]]:
    sets = spec.memo.get("identifiers")
    if sets is None:
        sets = {n: frozenset(spec.encoding(n).identifiers) for n in spec.encoding_names()}
        spec.memo["identifiers"] = sets
    return sets


def _decode_form(spec: Spec, instruction: Instruction, form: InstructionEncoding, layout: Layout,
                 data: bytes, word: int) -> Decoded:
    enc = layout.encoding
    condition = next((c for c in enc.conditions if c.name == form.condition), None)
    if condition is not None:
        ok = evaluate(condition.expression, lambda n: enc.field(n).extract(word) if enc.field(n) else None)
        if ok is False:
            return _decode_other_form(spec, instruction, enc.name, data, word, describe(condition.expression))
    values = {f.name: f.extract(word) for f in enc.fields if f.name not in ("OP", "ENCODING")}
    return _checked(spec, instruction, form, layout, bytes(data[: enc.bit_count // 8]), values)


def _decode_other_form(spec: Spec, instruction: Instruction, base: str, data: bytes, word: int,
                       broken: str) -> Decoded:
    """The word breaks the base form's condition: find the derived form its marker selects."""
    missing = []
    for form in instruction.encodings:
        layout = layout_for(spec, instruction, form)
        if layout is None:
            missing.append(f"{form.encoding} ({form.condition})")
            continue
        if not layout.derived or layout.encoding.derived_from != base:
            continue
        enc = layout.encoding
        if all(enc.field(f).extract(word) == v for f, v in layout.fixed):
            size = enc.bit_count // 8
            if len(data) < size:
                raise DecodeError(f"{instruction.name} {form.encoding} needs {size} bytes, got {len(data)}")
            full = int.from_bytes(data[:size], "little")
            values = {f.name: f.extract(full) for f in enc.fields if f.name not in ("OP", "ENCODING")}
            return _checked(spec, instruction, form, layout, bytes(data[:size]), values)
    raise DecodeError(f"0x{word:08X} is {instruction.name} in {base} but breaks its condition ({broken}); "
                      f"the form it selects is not decodable from the loaded file "
                      f"(forms without a layout: {', '.join(missing) or 'none'})")
