"""The reference page of one instruction, built from the loaded data, and its text rendering.

`build_page(library, name, arch)` gathers what seed 001's page shows: title, group,
description, the bit-layout cells of the main encoding, format/width/opcode/identifier, the
operands, the comparison across loaded generations, gfx targets, related instructions,
semantics (curated family) and an example line checked with llvm-mc when it is available.
`render_text(page)` lays it out as text; page_html renders the same page as HTML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hydroplane.isa.errors import IsaError
from hydroplane.isa.layouts import Layout, constant_bits, identifier_for, layout_for
from hydroplane.isa.library import Comparison, IsaLibrary
from hydroplane.isa.llvm import assemble_lines, find_llvm_mc
from hydroplane.isa.model import Encoding, Instruction, InstructionEncoding
from hydroplane.isa.semantics import lookup_table, semantics_of
from hydroplane.isa.spec import Spec
from hydroplane.isa.syntax import assemble, format_operand, operand_list
from hydroplane.isa.targets import GFX_TARGETS, targets_of

# AMD functional group -> (title word, section name) shown on pages.
GROUP_TITLES = {
    "VALU": ("Vector", "Vector Arithmetic"), "SALU": ("Scalar", "Scalar Arithmetic"),
    "SMEM": ("Scalar", "Scalar Memory"), "VMEM": ("Vector", "Vector Memory"),
    "EXPORT": ("Export", "Export"), "BRANCH": ("Branch", "Branch"), "MESSAGE": ("Message", "Message"),
    "WAVE_CONTROL": ("Wave", "Wave Control"), "TRAP": ("Trap", "Trap"),
}
UNASSIGNED = "unassigned"
# Registers of the example line: v5 / v[4:5] for results, v1 / v[2:3] for sources.
EXAMPLE_REGISTERS = {"dst": "v5", "dst64": "v4", "src": "v1", "src64": "v2"}


@dataclass(frozen=True)
class LayoutCell:
    text: str  # field name, constant bits in binary, or 'unassigned'
    bits: str  # '31:25' or '16'


@dataclass(frozen=True)
class OperandRow:
    name: str
    access: str
    type_description: str
    format_description: str
    operand_type: str
    data_format: str
    field_bits: str
    field_width: int
    size: int


@dataclass(frozen=True)
class FormRow:
    encoding: str
    opcode: int
    bits: int | None
    layout: str  # "AMD's layout", "derived from ENC_VOP1", "layout not in the loaded file"


@dataclass
class Page:
    name: str
    architecture: str
    title_word: str
    group_title: str
    group: str
    subgroups: tuple[str, ...]
    description: str
    encoding: str
    format_name: str
    width: int
    opcode: int
    identifier: int | None
    cells: list[LayoutCell]
    layout_note: str
    operands: list[OperandRow]
    comparison: Comparison
    targets: list[tuple[str, str]]  # (target, support text)
    related: list[str]
    forms: list[FormRow]
    semantics: str = ""
    table: list[tuple[str, str]] = field(default_factory=list)
    table_bits: int = 0
    example: str = ""
    example_bytes: bytes = b""
    example_check: str = ""
    sources: list[str] = field(default_factory=list)
    aliases: tuple[str, ...] = ()


def clean_text(text: str) -> str:
    """AMD's descriptions carry escaped HTML (<p>...</p>); pages show plain sentences."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text)).strip()


def layout_cells(encoding: Encoding, identifier: int | None) -> list[LayoutCell]:
    """Cells from the most significant bit down: fields, constant bits, unassigned runs."""
    spans = [(r.high, r.offset, f, r) for f in encoding.fields for r in f.ranges]
    spans += [(high, low, None, None) for high, low in constant_bits(encoding)]
    cells = []
    for high, low, f, r in sorted(spans, key=lambda s: -s[0]):
        bits = f"{high}:{low}" if high != low else f"{high}"
        if f is None:
            cells.append(LayoutCell(UNASSIGNED, bits))
            continue
        run_mask = ((1 << r.width) - 1) << r.offset
        if identifier is not None and encoding.identifier_mask & run_mask == run_mask:
            value = (identifier >> r.offset) & ((1 << r.width) - 1)
            cells.append(LayoutCell(format(value, f"0{r.width}b"), bits))
        else:
            cells.append(LayoutCell(f.name, bits))
    return cells


def main_form(spec: Spec, instruction: Instruction) -> tuple[InstructionEncoding, Layout | None]:
    """The form a page shows: the first AMD-layout ENC_* form, else the first form."""
    for form in instruction.encodings:
        layout = layout_for(spec, instruction, form)
        if layout is not None and not layout.derived:
            return form, layout
    if not instruction.encodings:
        raise IsaError(f"{instruction.name} has no encoding in {spec.architecture}")
    form = instruction.encodings[0]
    return form, layout_for(spec, instruction, form)


def build_page(library: IsaLibrary, name: str, arch: str | None = None, check_with_llvm: bool = True) -> Page:
    spec, instruction = library.find(name, arch)
    form, layout = main_form(spec, instruction)
    enc = layout.encoding if layout else None
    identifier = identifier_for(enc, form.opcode) if enc else None
    title_word, group_title = GROUP_TITLES.get(instruction.group, (instruction.group.title(), instruction.group))
    page = Page(
        name=instruction.name.lower(), architecture=spec.architecture, title_word=title_word,
        group_title=group_title, group=instruction.group, subgroups=instruction.subgroups,
        description=clean_text(instruction.description), encoding=form.encoding,
        format_name=enc.short_name if enc else form.encoding, width=enc.bit_count if enc else 0,
        opcode=form.opcode, identifier=identifier, cells=layout_cells(enc, identifier) if enc else [],
        layout_note="", operands=_operand_rows(spec, form, enc),
        comparison=library.compare(name, form.encoding, spec.architecture),
        targets=_targets(library, name), related=_related(spec, instruction),
        forms=[_form_row(spec, instruction, f) for f in instruction.encodings], aliases=instruction.aliases,
    )
    page.layout_note = _layout_note(page, enc)
    sem = semantics_of(instruction.name)
    if sem:
        page.semantics = sem.pseudocode
        page.table_bits = sem.table_bits
        page.table = [(format(i, f"0{sem.table_bits}b"), f"{v:+.4f}f") for i, v in lookup_table(instruction.name)]
    if enc is not None:
        _example(page, spec, instruction, form, check_with_llvm)
    page.sources = [f"AMD machine-readable ISA specification, {spec.architecture} "
                    f"(schema {spec.document.schema_version}, released {spec.document.release_date}): "
                    f"{spec.source} (SHA-256 {spec.sha256[:16]}...)"]
    return page


def _operand_rows(spec: Spec, form: InstructionEncoding, enc: Encoding | None) -> list[OperandRow]:
    rows = []
    for o in form.operands:
        otype, fmt = spec.operand_type(o.operand_type), spec.data_format(o.data_format)
        f = enc.field(o.field_name) if enc else None
        rows.append(OperandRow(
            name=o.field_name or "(implicit)", access=o.access,
            type_description=clean_text(otype.description) if otype else "(operand type not in the loaded file)",
            format_description=clean_text(fmt.description) if fmt else "(data format not in the loaded file)",
            operand_type=o.operand_type, data_format=o.data_format,
            field_bits=f.bits_text() if f else "", field_width=f.width if f else 0, size=o.size))
    return rows


def _layout_note(page: Page, enc: Encoding | None) -> str:
    arch = page.architecture
    if enc is None:
        return f"The layout of {page.encoding} is not in the loaded {arch} file."
    parts = [f"The {enc.name} layout from AMD's machine-readable ISA specification ({arch})."]
    if page.identifier is not None:
        parts.append(f"Opcode {page.opcode} in OP rebuilds 0x{page.identifier:0{enc.bit_count // 4}X}, "
                     "an identifier AMD lists for this encoding.")
    if any(c.text == UNASSIGNED for c in page.cells):
        parts.append("Bits marked unassigned have no field in the specification.")
    parts.append(comparison_sentence(page.comparison))
    return " ".join(parts)


def comparison_sentence(c: Comparison) -> str:
    """'Compared with ...: Not the same in every generation: X (field layout). The same in Y.'"""
    compared = [a for a, _ in c.different] + list(c.same)
    if not compared:
        text = f"No other generation is loaded to compare {c.encoding} with."
    else:
        text = f"Compared across the loaded generations ({', '.join([c.architecture] + compared)})."
        if c.different:
            text += " Not the same in every generation: " + ", ".join(
                f"{a} ({', '.join(aspects)})" for a, aspects in c.different) + "."
        if c.same:
            text += f" The same in {', '.join(c.same)}."
    if c.not_loaded:
        text += f" Not compared (no file loaded): {', '.join(c.not_loaded)}."
    return text


def _targets(library: IsaLibrary, name: str) -> list[tuple[str, str]]:
    rows = []
    loaded = {s.architecture: s for s in library.specs}
    for arch in list(GFX_TARGETS) + [a for a in loaded if a not in GFX_TARGETS]:
        if arch not in loaded:
            continue
        support = ("✅ Supported" if loaded[arch].has_instruction(name) else "❌ Not in this generation") + f" ({arch})"
        rows += [(t, support) for t in targets_of(arch)] or [(f"({arch}: no gfx target known)", support)]
    return rows


def _related(spec: Spec, instruction: Instruction) -> list[str]:
    return [e.name.lower() for e in spec.catalog() if e.name != instruction.name
            and e.group == instruction.group and set(e.subgroups) == set(instruction.subgroups)]


def _form_row(spec: Spec, instruction: Instruction, form: InstructionEncoding) -> FormRow:
    layout = layout_for(spec, instruction, form)
    if layout is None:
        return FormRow(form.encoding, form.opcode, None, "layout not in the loaded file")
    note = f"derived from {layout.encoding.derived_from}" if layout.derived else "AMD's layout"
    return FormRow(form.encoding, form.opcode, layout.encoding.bit_count, note)


def example_line(spec: Spec, instruction: Instruction, form: InstructionEncoding) -> str:
    """An assembly line for the form's operands: v5 for results, v1 / v[2:3] for sources."""
    parts = []
    for o in operand_list(form):
        otype = spec.operand_type(o.operand_type)
        register = EXAMPLE_REGISTERS[("dst" if o.is_output else "src") + ("64" if o.size > 32 else "")]
        value = otype.value_named(register) if otype else None
        if value is None:
            raise IsaError(f"{instruction.name}: operand {o.field_name} ({o.operand_type}) has no value "
                           f"{register} to build an example from")
        parts.append(format_operand(spec, o, value.value))
    return instruction.name.lower() + (" " + ", ".join(parts) if parts else "")


def _example(page: Page, spec: Spec, instruction: Instruction, form: InstructionEncoding, check: bool) -> None:
    line = example_line(spec, instruction, form)
    data, _, _ = assemble(spec, line)
    page.example, page.example_bytes = line, data
    targets = targets_of(spec.architecture)
    tool = find_llvm_mc() if check else None
    if not targets or tool is None:
        why = (f"no gfx target known for {spec.architecture}." if not targets else
               "llvm-mc was not found." if check else "the check was turned off (--no-llvm).")
        page.example_check = "Not checked with LLVM's assembler: " + why
        return
    tool_name = tool.rsplit("/", 1)[-1]
    try:
        result = assemble_lines([line], targets[0], tool)[0]
    except IsaError as exc:
        page.example_check = f"Not checked with LLVM's assembler: {exc}."
        return
    if isinstance(result, str):
        page.example_check = f"{tool_name} -mcpu={targets[0]} rejects it: {result}"
    elif result == data:
        page.example_check = f"Checked: {tool_name} -mcpu={targets[0]} produces the same bytes."
    else:
        page.example_check = (f"Differs: {tool_name} -mcpu={targets[0]} produces {result.hex(' ')}, "
                              f"the XML layout gives {data.hex(' ')}.")


def render_text(page: Page) -> str:
    out = [f"{page.name} GPU Native ISA AMD {page.title_word}", "", page.group_title, "", page.name]
    if page.aliases:
        out.append("Also named: " + ", ".join(a.lower() for a in page.aliases))
    out += ["", page.description, "", "Encoding", "", f"Binary Layout ({page.architecture})"]
    for cell in page.cells:
        out += [cell.text, cell.bits]
    width = f"Width {page.width} bits" if page.width else "Width unknown (layout not in the loaded file)"
    out += ["", page.layout_note, "", f"Format {page.format_name}", width, f"Opcode {page.opcode}"]
    if page.identifier is not None:
        out.append(f"Identifier 0x{page.identifier:0{page.width // 4}X}")
    out += ["", "All encodings"]
    for f in page.forms:
        width = f"{f.bits} bits" if f.bits else "width unknown"
        out.append(f"  {f.encoding}: opcode {f.opcode}, {width}, {f.layout}")
    out += ["", "Operands", ""]
    for o in page.operands:
        out.append(f"  • {o.name}")
        out.append(f"    {o.access}. {o.type_description} Data format: {o.format_description} "
                   f"({o.operand_type}, {o.data_format})")
        if o.field_bits:
            out.append(f"    Field {o.name}: bits {o.field_bits} ({o.field_width} bits); operand size {o.size} bits.")
    out += ["", f"In AMD's order, as its machine-readable ISA specification lists them for the "
                f"{page.encoding} encoding ({page.architecture}).", "", "GFX Target Compatibility", "",
            f"{'Target':<10}Support"]
    out += [f"{t:<10}{s}" for t, s in page.targets]
    out += ["", "Related", "", f"More in {page.group_title}"]
    out += [f"  {r}" for r in page.related] or ["  (none loaded)"]
    out += ["", "Reference", "", "AMDGPU / GFX ISA", "", "Description", "", page.description]
    if page.table:
        bits = page.table_bits
        out.append(f"Lookup table on S0[{bits - 1}:0]: S0 binary Result " +
                   " ".join(f"{b} {v}" for b, v in page.table))
    if page.semantics:
        out += ["", "Semantics", "", page.semantics]
    if page.example:
        out += ["", "Example", "", page.example, f"Encoded from the XML layout: {page.example_bytes.hex(' ')}",
                page.example_check]
    out += ["", "Sources", ""] + page.sources
    return "\n".join(out) + "\n"
