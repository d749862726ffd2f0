"""Encode the Python operands of one instruction into binary Operands, by grammar kind.

Used by ModuleBuilder.emit: ids are ints the builder allocated, enumerants a name or a
value (their parameters follow them), bit masks 'A|B', a sequence of names or an int,
literal numbers sized by the result type (or OpSwitch's selector type), strings as str,
an OpSpecConstantOp's opcode by name. A ready `binary.Operand` passes through unchanged.
"""

from __future__ import annotations

from functools import cache

from hydroplane.spirv import grammar, literals
from hydroplane.spirv.binary import Instruction, Operand
from hydroplane.spirv.build_error import BuildError

Op = grammar.Op



class OperandEncoder:
    """Encodes the Python operands of one instruction into binary Operands, by grammar kind."""

    def __init__(self, builder, info: grammar.InstructionInfo, inst: Instruction):
        self.builder = builder
        self.info = info
        self.inst = inst
        self.out: list[Operand] = []

    def fail(self, message: str) -> BuildError:
        return BuildError(f"{self.info.name}: {message}")

    def encode(self, args: list) -> list[Operand]:
        self.operands(self.info.operands, args)
        if self.info.opcode == Op.SpecConstantOp:
            # the operands of the opcode it names follow, less that opcode's result type and id
            self.operands(grammar.instruction(self.out[0].value).operands, args)
        if args:
            raise self.fail(f"{len(args)} operand(s) too many: {args!r}")
        return self.out

    def operands(self, grammar_operands, args: list) -> None:
        for position, o in enumerate(_after_result(grammar_operands)):
            label = o.name or o.kind
            if o.quantifier == "":
                if not args:
                    raise self.fail(f"missing operand {position + 1} ({label}: {o.kind})")
                self.one(o.kind, args, label)
            elif o.quantifier == "?":
                if args:
                    self.one(o.kind, args, label)
            else:
                while args:
                    self.one(o.kind, args, label)

    def one(self, kind: str, args: list, label: str) -> None:
        value = args.pop(0)
        if isinstance(value, Operand):
            self.out.append(value)
            return
        if kind in grammar.ID_KINDS:
            self.out.append(Operand(kind, self.builder._check_id(self.info, label, value)))
        elif kind == "LiteralString":
            if not isinstance(value, str):
                raise self.fail(f"{label} must be a string, not {value!r}")
            self.out.append(Operand(kind, value))
        elif kind == "LiteralSpecConstantOpInteger":
            try:
                opcode = grammar.instruction(int(value) if isinstance(value, grammar.Op) else value).opcode
            except grammar.GrammarError as err:
                raise self.fail(f"{label}: {err}") from None
            self.out.append(Operand(kind, opcode))
        elif kind in ("LiteralInteger", "LiteralExtInstInteger"):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFF:
                raise self.fail(f"{label} must be an unsigned 32-bit integer, not {value!r}")
            self.out.append(Operand(kind, value))
        elif kind == "LiteralContextDependentNumber":
            self.out.append(self.number(value, label))
        elif kind in grammar.COMPOSITE_KINDS:
            args.insert(0, value)
            for part in grammar.COMPOSITE_KINDS[kind]:
                if not args:
                    raise self.fail(f"{label} ({kind}) is cut short")
                self.one(part, args, label)
        else:
            self.enumerant(kind, value, args, label)

    def number(self, value, label: str) -> Operand:
        if self.inst.opcode == Op.Switch:
            selector = self.builder._defs.get(self.out[0].value)
            type_id = selector.result_type if selector is not None else None
        else:
            type_id = self.inst.result_type
        ty = self.builder._scalar_of(type_id, self.info.name) if type_id is not None else None
        if ty is None:
            raise self.fail(f"{label}: no type to size the literal by")
        try:
            bits, nwords = literals.number_literal(ty, value)
        except literals.LiteralError as err:
            raise self.fail(f"{label}: {err.message}") from None
        return Operand("LiteralContextDependentNumber", bits, nwords)

    def enumerant(self, kind: str, value, args: list, label: str) -> None:
        info = grammar.KINDS.get(kind)
        if info is None or not info.is_enum:
            raise self.fail(f"operand kind {kind} cannot be built")
        try:
            if info.category == "ValueEnum":
                found = [grammar.enumerant(kind, value)]
                number = found[0].value
            else:
                found, number = _mask(kind, value)
        except grammar.GrammarError as err:
            raise self.fail(f"{label}: {err}") from None
        self.out.append(Operand(kind, number))
        for e in sorted(found, key=lambda e: e.value):
            for param in e.parameters:
                if not args:
                    raise self.fail(f"{kind} {e.name} needs its parameter {param.name or param.kind}")
                self.one(param.kind, args, f"{e.name} {param.name or param.kind}")


@cache
def _after_result(grammar_operands: tuple[grammar.OperandInfo, ...]) -> tuple[grammar.OperandInfo, ...]:
    """The operands a caller gives: all but the result type and the result id."""
    return tuple(o for o in grammar_operands if o.kind not in ("IdResultType", "IdResult"))


def _mask(kind: str, value) -> tuple[list[grammar.EnumerantInfo], int]:
    """A BitEnum from 'A|B', a sequence of names/values, or an int -> (set enumerants, mask)."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split("|") if p.strip()]
    elif isinstance(value, int) and not isinstance(value, bool):
        values = grammar.enumerant_values(kind)
        parts = [v for v in values if v and value & v == v]
        if value & ~sum(parts, 0):
            raise grammar.GrammarError(f"{kind} mask {value:#x} has unknown bits")
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        raise grammar.GrammarError(f"{kind} mask must be names, 'A|B' or an int, not {value!r}")
    found = [grammar.enumerant(kind, p) for p in parts]
    mask = 0
    for e in found:
        mask |= e.value
    return [e for e in found if e.value], mask
