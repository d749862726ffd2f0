"""The disassembler: a module in spirv-dis syntax, with spirv-dis's friendly names or `%N` ids.

`disassemble(words_or_module, raw_id=False)` prints `%name = OpX operands...` lines with
enumerant names, `|` masks, quoted strings, literals in the format of their type (hex
floats where spirv-dis prints them) and ids named as spirv-dis names them by default
(OpName, type shapes, constant values) or, with raw_id, as `%N`. A module it cannot print
raises `SpirvError` naming the word offset. `InstructionPrinter` prints one instruction; the
reference executor's diagnostics use it too.
"""

from __future__ import annotations

from hydroplane.spirv import grammar
from hydroplane.spirv.binary import Instruction, Module, SpirvError, decode
from hydroplane.spirv.names import FriendlyNames
from hydroplane.spirv.text_literals import format_float, format_literal, scalar_type
from hydroplane.spirv.types import F32, Scalar

Op = grammar.Op
INDENT = 15  # spirv-dis: instruction names start in this column; result names end 3 before it

_GENERATOR_NAMES: dict[int, str] = getattr(grammar, "GENERATORS", {})


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mask_text(kind: str, value: int) -> str:
    values = grammar.enumerant_values(kind)
    if value == 0:
        zero = values.get(0)
        return zero.name if zero else "0"
    names, rest = [], value
    for bit in range(value.bit_length()):
        flag = 1 << bit
        if value & flag and flag in values:
            names.append(values[flag].name)
            rest &= ~flag
    if rest:
        names.append(f"{rest:#x}")
    return "|".join(names)


def disassemble(words_or_module, raw_id: bool = False, header: bool = True, indent: bool = True) -> str:
    """The module in spirv-dis syntax (friendly names, or `%N` ids with raw_id=True)."""
    module = words_or_module if isinstance(words_or_module, Module) else decode(words_or_module)
    printer = InstructionPrinter(None if raw_id else FriendlyNames(module), indent)
    lines: list[str] = []
    if header:
        vendor, tool_version = module.generator >> 16, module.generator & 0xFFFF
        tool = _GENERATOR_NAMES.get(vendor, f"Unknown({vendor})")
        lines += ["; SPIR-V", f"; Version: {module.version[0]}.{module.version[1]}",
                  f"; Generator: {tool}; {tool_version}", f"; Bound: {module.bound}",
                  f"; Schema: {module.schema}"]
    for inst in module.instructions:
        try:
            lines.append(printer.line(inst))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # Only a Module built by hand gets here (decode checks all of this).
            raise SpirvError(f"cannot print instruction {inst.opcode} with operands {inst.operands!r}: "
                             f"{type(exc).__name__}: {exc}", None if inst.offset < 0 else inst.offset) from None
    return "\n".join(lines) + "\n"


class InstructionPrinter:
    """Prints one instruction in spirv-dis syntax: the one printer of the disassembler, the reference
    executor's diagnostics and anything else that shows an instruction.

    Ids print as spirv-dis's friendly names (`names`) or, without names, as `%N`. Literals print in
    their type's format and OpExtInst numbers as names, which needs the types and imports declared
    earlier: `line` learns them from each instruction it prints (the disassembler's single pass);
    `for_module` learns a whole module first, so that `format` prints any one of its instructions.
    An instruction built by hand with operands the grammar does not allow raises KeyError,
    TypeError, ValueError, AttributeError or IndexError (`disassemble` turns them into SpirvError).
    """

    def __init__(self, names: FriendlyNames | None = None, indent: bool = True):
        self.names = names
        self.indent = indent
        self.scalars: dict[int, Scalar] = {}
        self.type_of: dict[int, int] = {}
        self.extinst_sets: dict[int, str] = {}

    @classmethod
    def for_module(cls, module: Module, raw_id: bool = False, indent: bool = False) -> InstructionPrinter:
        """A printer that knows every declaration of `module` (friendly names unless raw_id)."""
        printer = cls(None if raw_id else FriendlyNames(module), indent)
        for inst in module.instructions:
            printer.track(inst)
        return printer

    def id_text(self, id_: int) -> str:
        return f"%{id_}" if self.names is None else f"%{self.names[id_]}"

    def line(self, inst: Instruction) -> str:
        """The instruction as a line of a listing; what it declares is learnt for the lines after it."""
        text = self.format(inst)
        self.track(inst)
        return text

    def format(self, inst: Instruction) -> str:
        """`%name = OpX %type operands...` (aligned as spirv-dis does when the printer indents)."""
        info = grammar.INSTRUCTIONS[inst.opcode]
        parts = [info.name]
        if inst.result_type is not None:
            parts.append(self.id_text(inst.result_type))
        parts += self.operand_texts(inst)
        body = " ".join(parts)
        if inst.result_id is None:
            return f"{' ' * INDENT if self.indent else ''}{body}"
        rid = self.id_text(inst.result_id)
        pad = max(0, INDENT - 3 - len(rid)) if self.indent else 0
        return f"{' ' * pad}{rid} = {body}"

    def operand_texts(self, inst: Instruction) -> list[str]:
        parts = []
        literal_type = self.scalars.get(inst.result_type)
        if inst.opcode == Op.Switch and inst.operands:
            literal_type = self.scalars.get(self.type_of.get(inst.operands[0].value))
        last_id = None
        for o in inst.operands:
            kind, value = o.kind, o.value
            if kind in grammar.ID_KINDS:
                parts.append(self.id_text(value))
                last_id = value
            elif kind == "LiteralString":
                parts.append(_quote(value))
            elif kind == "LiteralContextDependentNumber":
                parts.append(format_literal(value, literal_type, o.nwords))
            elif kind == "LiteralExtInstInteger":
                table = grammar.extinst_set(self.extinst_sets.get(last_id, "")) or {}
                parts.append(table[value].name if value in table else str(value))
            elif kind == "LiteralSpecConstantOpInteger":
                info = grammar.INSTRUCTIONS.get(value)
                parts.append(info.name[2:] if info else str(value))
            elif kind == "LiteralFloat":
                parts.append(format_float(value, F32))
            elif kind == "LiteralInteger":
                parts.append(str(int(value)))
            elif grammar.KINDS[kind].category == "BitEnum":
                parts.append(_mask_text(kind, value))
            else:
                e = grammar.enumerant_values(kind).get(value)
                parts.append(e.name if e else str(int(value)))
        return parts

    def track(self, inst: Instruction) -> None:
        """Learn what `inst` declares: a scalar type, an extended-instruction import, a result's type."""
        t = scalar_type(inst)
        if t is not None and inst.result_id is not None:
            self.scalars[inst.result_id] = t
        elif inst.opcode == Op.ExtInstImport and inst.operands:
            self.extinst_sets[inst.result_id] = inst.operands[0].value
        if inst.result_type is not None and inst.result_id is not None:
            self.type_of[inst.result_id] = inst.result_type
