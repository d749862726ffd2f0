"""Import one AMD machine-readable ISA XML file into the model (`model.ArchitectureSpec`).

Tolerant of the schema versions seen (1.1.1 and 1.2.0): optional elements such as
ConditionId, EncodingCondition@Id, AliasedInstructionNames, Padding, Subtypes and empty
<Operands/> may be absent; unknown elements are ignored. A malformed or truncated file, or
one without the elements the model needs, raises `SpecFormatError` naming the file, the line and the
element path; so does a damaged value: a number that is not one (ASCII digits only), a bit count or
offset beyond MAX_BITS, an expression nested deeper than MAX_EXPRESSION_DEPTH, an operand whose field
its encoding lacks.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from xml.parsers import expat

from hydroplane.isa.errors import SpecFormatError
from hydroplane.isa.model import (
    ArchitectureSpec,
    BitRange,
    Condition,
    DataField,
    DataFormat,
    Document,
    Encoding,
    Field,
    FunctionalGroup,
    Instruction,
    InstructionEncoding,
    Operand,
    OperandType,
    PredefinedValue,
)

MAX_BITS = 1024  # no AMD encoding (with its literals) comes near: a larger bit count or offset is damage
MAX_EXPRESSION_DEPTH = 64
_DECIMAL = re.compile(r"-?[0-9]+")
FLAG_NAMES = ("IsBranch", "IsConditionalBranch", "IsIndirectBranch", "IsProgramTerminator",
              "IsImmediatelyExecuted")


def import_xml(data: bytes, source: str) -> ArchitectureSpec:
    """Parse the bytes of one XML file (`source` names it in errors)."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        line, column = exc.position
        raise SpecFormatError(f"{source}: malformed or truncated XML at line {line}, column {column}: "
                              f"{exc.msg if hasattr(exc, 'msg') else exc}") from None
    return _Importer(source, data, root).spec(root)


def _line_of(data: bytes, index: int) -> int | None:
    """The line of the index-th element (document order) of the XML bytes: read again, only for an error."""
    parser = expat.ParserCreate()
    seen = [0, None]

    def start(tag, attrs):
        if seen[0] == index:
            seen[1] = parser.CurrentLineNumber
        seen[0] += 1

    parser.StartElementHandler = start
    try:
        parser.Parse(data, True)
    except expat.ExpatError:
        pass
    return seen[1]


class _Importer:
    def __init__(self, source: str, data: bytes = b"", root: ET.Element | None = None):
        self.source = source
        self.data = data
        self.root = root
        self.encodings: dict[str, Encoding] = {}

    def fail(self, where: str, what: str, elem: ET.Element | None = None) -> SpecFormatError:
        """A SpecFormatError naming the file, the element's line (when given) and its path."""
        line = None
        if elem is not None and self.root is not None:
            index = next((i for i, e in enumerate(self.root.iter()) if e is elem), None)
            line = _line_of(self.data, index) if index is not None else None
        place = f"{self.source}:{line}" if line is not None else self.source
        return SpecFormatError(f"{place}: {where}: {what}")

    def decimal(self, text: str | None, where: str, what: str, elem: ET.Element, default: int | None = None) -> int:
        """An attribute's decimal number (ASCII digits, an optional minus)."""
        if text is None or not text.strip():
            if default is not None:
                return default
            raise self.fail(where, f"{what} is missing", elem)
        if not _DECIMAL.fullmatch(text.strip()):
            raise self.fail(where, f"{what} {text!r} is not a decimal number", elem)
        return int(text.strip())

    def bits(self, value: int, where: str, what: str, elem: ET.Element, low: int = 0) -> int:
        if not low <= value <= MAX_BITS:
            raise self.fail(where, f"{what} {value} is outside {low} .. {MAX_BITS}", elem)
        return value

    def text(self, elem: ET.Element, tag: str, where: str, default: str | None = None) -> str:
        child = elem.find(tag)
        if child is None or child.text is None:
            if default is not None:
                return default
            raise self.fail(where, f"missing <{tag}>", elem)
        return child.text.strip()

    def integer(self, elem: ET.Element | None, where: str, default: int | None = None) -> int:
        if elem is None or elem.text is None or not elem.text.strip():
            if default is not None:
                return default
            raise self.fail(where, "missing number")
        radix = elem.get("Radix", "10")
        digits = elem.text.strip()
        try:
            if not digits.isascii() or not radix.isascii():
                raise ValueError(digits)
            return int(digits, int(radix))
        except ValueError:
            raise self.fail(where, f"<{elem.tag}> {digits!r} is not a base-{radix} number", elem) from None

    def child_int(self, elem: ET.Element, tag: str, where: str, default: int | None = None) -> int:
        return self.integer(elem.find(tag), f"{where}/{tag}", default)

    def flag(self, value: str | None) -> bool:
        return (value or "").strip().lower() == "true"

    # -- top level ---------------------------------------------------------------------------
    def spec(self, root: ET.Element) -> ArchitectureSpec:
        if root.tag != "Spec":
            raise self.fail("/", f"root element is <{root.tag}>, expected <Spec>")
        isa = root.find("ISA")
        if isa is None:
            raise self.fail("Spec", "missing <ISA>")
        arch = isa.find("Architecture")
        if arch is None:
            raise self.fail("Spec/ISA", "missing <Architecture>")
        doc = root.find("Document")
        doc = doc if doc is not None else ET.Element("Document")
        document = Document(
            architecture=self.text(arch, "ArchitectureName", "Spec/ISA/Architecture"),
            architecture_id=self.child_int(arch, "ArchitectureId", "Spec/ISA/Architecture", -1),
            schema_version=self.text(doc, "SchemaVersion", "Spec/Document", ""),
            release_date=self.text(doc, "ReleaseDate", "Spec/Document", ""),
            copyright=self.text(doc, "Copyright", "Spec/Document", ""),
            license=self.text(doc, "License", "Spec/Document", ""),
        )
        spec = ArchitectureSpec(document=document)
        for i, e in enumerate(isa.iterfind("Encodings/Encoding")):
            enc = self.encoding(e, f"Spec/ISA/Encodings/Encoding[{i}]")
            spec.encodings[enc.name] = enc
        self.encodings = spec.encodings
        for i, e in enumerate(isa.iterfind("Instructions/Instruction")):
            ins = self.instruction(e, f"Spec/ISA/Instructions/Instruction[{i}]")
            spec.instructions[ins.name] = ins
        for i, e in enumerate(isa.iterfind("DataFormats/DataFormat")):
            fmt = self.data_format(e, f"Spec/ISA/DataFormats/DataFormat[{i}]")
            spec.data_formats[fmt.name] = fmt
        for i, e in enumerate(isa.iterfind("OperandTypes/OperandType")):
            opt = self.operand_type(e, f"Spec/ISA/OperandTypes/OperandType[{i}]")
            spec.operand_types[opt.name] = opt
        for i, e in enumerate(isa.iterfind("FunctionalGroups/FunctionalGroup")):
            where = f"Spec/ISA/FunctionalGroups/FunctionalGroup[{i}]"
            name = self.text(e, "Name", where)
            spec.groups[name] = FunctionalGroup(name, self.text(e, "Description", where, ""))
        spec.subgroups = tuple(self.text(e, "Name", "Spec/ISA/FunctionalSubgroups/FunctionalSubgroup")
                               for e in isa.iterfind("FunctionalSubgroups/FunctionalSubgroup"))
        return spec

    # -- encodings ---------------------------------------------------------------------------
    def encoding(self, e: ET.Element, where: str) -> Encoding:
        name = self.text(e, "EncodingName", where)
        where = f"{where} ({name})"
        bit_count = self.bits(self.child_int(e, "BitCount", where), f"{where}/BitCount", "BitCount",
                              e.find("BitCount"), 1)
        mask_elem = e.find("EncodingIdentifierMask")
        mask = self.integer(mask_elem, f"{where}/EncodingIdentifierMask", 0)
        identifiers = tuple(self.integer(x, f"{where}/EncodingIdentifiers")
                            for x in e.iterfind("EncodingIdentifiers/EncodingIdentifier"))
        conditions = tuple(self.condition(c, f"{where}/EncodingConditions")
                           for c in e.iterfind("EncodingConditions/EncodingCondition"))
        fields = tuple(self.field(f, f"{where}/MicrocodeFormat/BitMap/Field[{i}]")
                       for i, f in enumerate(e.iterfind("MicrocodeFormat/BitMap/Field")))
        order = self.decimal(e.get("Order"), where, "Encoding Order", e, 0)
        return Encoding(name=name, order=order, bit_count=bit_count, identifier_mask=mask,
                        identifiers=identifiers, conditions=conditions,
                        description=self.text(e, "Description", where, ""), fields=fields)

    def condition(self, c: ET.Element, where: str) -> Condition:
        name = self.text(c, "ConditionName", where)
        cid = c.find("ConditionId")
        expr = c.find("CondtionExpression")  # AMD's spelling
        if expr is None:
            expr = c.find("ConditionExpression")
        tree = tuple(self.expression(x, where) for x in expr) if expr is not None else ()
        return Condition(name, self.integer(cid, where) if cid is not None else None,
                         tree[0] if len(tree) == 1 else tree)

    def expression(self, x: ET.Element, where: str, depth: int = 0) -> tuple:
        """(tag, value, children): value is op@type, id@val, lit@val or t@base+size."""
        if depth >= MAX_EXPRESSION_DEPTH:
            raise self.fail(where, f"a condition expression nested deeper than {MAX_EXPRESSION_DEPTH} levels", x)
        value = x.get("type") or x.get("val") or (x.get("base", "") + x.get("size", ""))
        return (x.tag, value, tuple(self.expression(c, where, depth + 1) for c in x))

    def ranges(self, layout: ET.Element | None, where: str) -> tuple[BitRange, ...]:
        if layout is None:
            raise self.fail(where, "missing <BitLayout>")
        out = []
        ordered = [(self.decimal(r.get("Order"), f"{where}/Range", "Range Order", r, 0), i, r)
                   for i, r in enumerate(layout.iterfind("Range"))]
        for _, _, r in sorted(ordered, key=lambda item: item[:2]):
            pad = r.find("Padding")
            offset = self.bits(self.child_int(r, "BitOffset", f"{where}/Range"), f"{where}/Range", "BitOffset",
                               r.find("BitOffset"))
            width = self.bits(self.child_int(r, "BitCount", f"{where}/Range"), f"{where}/Range", "BitCount",
                              r.find("BitCount"))
            self.bits(offset + width, f"{where}/Range", "BitOffset + BitCount", r)
            pad_width = self.child_int(pad, "BitCount", f"{where}/Padding", 0) if pad is not None else 0
            out.append(BitRange(
                offset=offset, width=width,
                padding_width=self.bits(pad_width, f"{where}/Padding", "BitCount", pad) if pad is not None else 0,
                padding_value=self.integer(pad.find("Value"), f"{where}/Padding", 0) if pad is not None else 0,
            ))
        if not out:
            raise self.fail(where, "<BitLayout> has no <Range>")
        return tuple(out)

    def field(self, f: ET.Element, where: str) -> Field:
        name = self.text(f, "FieldName", where)
        return Field(name=name, description=self.text(f, "Description", where, ""),
                     ranges=self.ranges(f.find("BitLayout"), f"{where} ({name})"),
                     conditional=self.flag(f.get("IsConditional")))

    # -- instructions ------------------------------------------------------------------------
    def instruction(self, e: ET.Element, where: str) -> Instruction:
        name = self.text(e, "InstructionName", where)
        where = f"{where} ({name})"
        flags_elem = e.find("InstructionFlags")
        flags = tuple(flag for flag in FLAG_NAMES
                      if flags_elem is not None and self.flag(flags_elem.findtext(flag)))
        encodings = tuple(self.instruction_encoding(x, f"{where}/InstructionEncodings")
                          for x in e.iterfind("InstructionEncodings/InstructionEncoding"))
        group = e.find("FunctionalGroup")
        return Instruction(
            name=name,
            aliases=tuple(a.text.strip() for a in e.iterfind("AliasedInstructionNames/InstructionName") if a.text),
            description=self.text(e, "Description", where, ""),
            flags=flags, encodings=encodings,
            group=self.text(group, "Name", where, "") if group is not None else "",
            subgroups=tuple(s.text.strip() for s in e.iterfind("FunctionalGroup/FunctionalSubgroups/Subgroup")
                            if s.text),
        )

    def instruction_encoding(self, x: ET.Element, where: str) -> InstructionEncoding:
        name = self.text(x, "EncodingName", where)
        where = f"{where} ({name})"
        cond = x.find("EncodingCondition")
        cond_id = cond.get("Id") if cond is not None else None
        elements = list(x.iterfind("Operands/Operand"))
        operands = tuple(self.operand(o, f"{where}/Operands") for o in elements)
        encoding = self.encodings.get(name)
        if encoding is not None:
            fields = {f.name for f in encoding.fields}
            for elem, op in zip(elements, operands):
                if op.field_name and not op.implicit and op.field_name not in fields:
                    raise self.fail(f"{where}/Operands", f"operand field {op.field_name!r} is not a field of "
                                    f"{name} (it has: {', '.join(sorted(fields)) or 'none'})", elem)
        return InstructionEncoding(
            encoding=name,
            condition=(cond.text or "").strip() if cond is not None else "",
            condition_id=self.decimal(cond_id, where, "EncodingCondition Id", cond) if cond_id else None,
            opcode=self.child_int(x, "Opcode", where),
            operands=tuple(sorted(operands, key=lambda o: o.order)),
        )

    def operand(self, o: ET.Element, where: str) -> Operand:
        return Operand(
            order=self.decimal(o.get("Order"), where, "Operand Order", o, 0),
            field_name=self.text(o, "FieldName", where, ""),
            data_format=self.text(o, "DataFormatName", where, ""),
            operand_type=self.text(o, "OperandType", where, ""),
            size=self.child_int(o, "OperandSize", where, 0),
            is_input=self.flag(o.get("Input")), is_output=self.flag(o.get("Output")),
            implicit=self.flag(o.get("IsImplicit")),
            microcode_required=self.flag(o.get("IsBinaryMicrocodeRequired", "true")),
        )

    # -- data formats and operand types ------------------------------------------------------
    def data_format(self, e: ET.Element, where: str) -> DataFormat:
        name = self.text(e, "DataFormatName", where)
        where = f"{where} ({name})"
        fields = tuple(
            DataField(self.text(f, "FieldName", where, ""), f.get("Signedness", ""),
                      self.ranges(f.find("BitLayout"), f"{where}/Field"))
            for f in e.iterfind("DataAttributes/BitMap/Field"))
        return DataFormat(name=name, description=self.text(e, "Description", where, ""),
                          data_type=self.text(e, "DataType", where, ""),
                          bit_count=self.child_int(e, "BitCount", where, 0),
                          component_count=self.child_int(e, "ComponentCount", where, 1), fields=fields)

    def operand_type(self, e: ET.Element, where: str) -> OperandType:
        name = self.text(e, "OperandTypeName", where)
        where = f"{where} ({name})"
        values = tuple(
            PredefinedValue(self.text(v, "Name", where), self.text(v, "Description", where, ""),
                            self.child_int(v, "Value", f"{where}/PredefinedValue"))
            for v in e.iterfind("OperandPredefinedValues/PredefinedValue"))
        return OperandType(name=name, description=self.text(e, "Description", where, ""),
                           partitioned=self.flag(e.get("IsPartitioned")),
                           subtypes=tuple(s.text.strip() for s in e.iterfind("Subtypes/Subtype") if s.text),
                           values=values,
                           fields=tuple(self.field(f, f"{where}/MicrocodeFormat/BitMap/Field[{i}]")
                                        for i, f in enumerate(e.iterfind("MicrocodeFormat/BitMap/Field"))))
