"""The bit layout behind an instruction form, including literal forms derived from their base.

AMD's files describe literal forms (VOP1_INST_LITERAL, VOP1_INST_LITERAL64, ...) as encodings
of their own. When a file lacks such a layout but has the base (ENC_VOP1), the literal form
is derived from facts the file does carry: the base layout, followed by a literal dword (or
two) in a LITERAL field, with the base's source field set to the operand type's literal
value (SRC_LITERAL = 255, SRC_LITERAL64 = 254 in OPR_SRC). A derived layout says so
(`Encoding.derived_from`), and pages mark it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydroplane.isa.model import BitRange, Encoding, Field, Instruction, InstructionEncoding
from hydroplane.isa.spec import Spec

# (suffix of the literal form's encoding name, predefined value naming the literal, bits)
LITERAL_FORMS = (
    ("_INST_LITERAL64", "SRC_LITERAL64", 64),
    ("_INST_LITERAL", "SRC_LITERAL", 32),
)
LITERAL_FIELD = "LITERAL"  # AMD names the literal operand's field LITERAL or LITERAL64


@dataclass(frozen=True)
class Layout:
    """An encoding's layout for one form, and field values the form implies (literal markers)."""

    encoding: Encoding
    fixed: tuple[tuple[str, int], ...] = ()

    @property
    def derived(self) -> bool:
        return bool(self.encoding.derived_from)


def layout_for(spec: Spec, instruction: Instruction, form: InstructionEncoding) -> Layout | None:
    """The layout of `form`, AMD's own or derived; None when neither is possible."""
    own = spec.encoding(form.encoding)
    if own is not None:
        return Layout(own)
    return _derived_literal(spec, instruction, form)


def _derived_literal(spec: Spec, instruction: Instruction, form: InstructionEncoding) -> Layout | None:
    for suffix, marker_name, bits in LITERAL_FORMS:
        if not form.encoding.endswith(suffix):
            continue
        base_name = "ENC_" + form.encoding[: -len(suffix)]
        base = spec.encoding(base_name)
        base_form = instruction.encoding(base_name)
        literal = next((o for o in form.operands if o.field_name.startswith(LITERAL_FIELD)), None)
        if base is None or base_form is None or literal is None:
            return None
        source = next((o for o in base_form.operands if o.order == literal.order), None)
        operand_type = spec.operand_type(literal.operand_type)
        marker = operand_type.value_named(marker_name) if operand_type else None
        if source is None or marker is None or base.field(source.field_name) is None:
            return None
        field = Field(literal.field_name, f"Literal constant ({bits} bits) following the {base.short_name} word.",
                      (BitRange(base.bit_count, bits),))
        derived = Encoding(name=form.encoding, order=base.order, bit_count=base.bit_count + bits,
                           identifier_mask=base.identifier_mask, identifiers=base.identifiers,
                           conditions=(), description=f"{base.name} followed by a {bits}-bit literal.",
                           fields=base.fields + (field,), derived_from=base.name)
        return Layout(derived, ((source.field_name, marker.value),))
    return None


def opcode_field(encoding: Encoding) -> Field | None:
    return encoding.field("OP")


def identifier_for(encoding: Encoding, opcode: int) -> int | None:
    """The identifier word listed for `opcode` (OP field value), or None if none is listed."""
    op = opcode_field(encoding)
    if op is None:
        return None
    for ident in encoding.identifiers:
        if op.extract(ident) == opcode:
            return ident
    return None


def constant_bits(encoding: Encoding) -> list[tuple[int, int]]:
    """(high, low) runs of bits outside every field: the bits a page marks unassigned."""
    covered = 0
    for f in encoding.fields:
        covered |= f.mask
    runs, bit = [], encoding.bit_count - 1
    while bit >= 0:
        if not covered >> bit & 1:
            high = bit
            while bit >= 0 and not covered >> bit & 1:
                bit -= 1
            runs.append((high, bit + 1))
        else:
            bit -= 1
    return runs
