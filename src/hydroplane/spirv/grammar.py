"""Typed look-ups over the generated SPIR-V grammar tables (_grammar_generated.py).

Nothing here is hand-typed grammar: every opcode, operand kind, enumerant, capability
and extension comes from the generated modules. `Op` is an IntEnum of every opcode
(names without the `Op` prefix, aliases included: `Op.FAdd`, `Op.CooperativeMatrixReduceNV`),
generated into hydroplane.spirv.enums and re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from hydroplane.errors import HydroplaneError
from hydroplane.spirv import _grammar_generated as _g
from hydroplane.spirv.enums import Op as Op  # re-exported: the generated opcode enum

MAGIC = _g.MAGIC
VERSION = _g.VERSION


class GrammarError(HydroplaneError, KeyError):
    """A name or value the SPIR-V grammar does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True, slots=True)
class OperandInfo:
    """One operand of an instruction or enumerant in the grammar: its kind, quantifier and name."""

    kind: str
    quantifier: str  # '' (exactly one), '?' (optional), '*' (any number)
    name: str


@dataclass(frozen=True, slots=True)
class InstructionInfo:
    """One instruction of the grammar: opcode, name, class, operands, and what enables it."""

    opcode: int
    name: str  # with the Op prefix, as the grammar spells it
    opclass: str
    operands: tuple[OperandInfo, ...]
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    version: str  # first core version, or 'None' when only reachable through extensions
    aliases: tuple[str, ...]

    @property
    def has_result_type(self) -> bool:
        return bool(self.operands) and self.operands[0].kind == "IdResultType"

    @property
    def has_result(self) -> bool:
        return any(o.kind == "IdResult" for o in self.operands[:2])


@dataclass(frozen=True, slots=True)
class EnumerantInfo:
    """One enumerant of an operand kind: name, value, the operands that follow it, what enables it."""

    name: str
    value: int
    parameters: tuple[OperandInfo, ...]
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]
    version: str
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KindInfo:
    """One operand kind of the grammar: its category, its enumerants (enums only) and bases (composites)."""

    kind: str
    category: str  # BitEnum, ValueEnum, Id, Literal, Composite
    enumerants: tuple[EnumerantInfo, ...]
    bases: tuple[str, ...]

    @property
    def is_enum(self) -> bool:
        return self.category in ("BitEnum", "ValueEnum")

    @property
    def is_id(self) -> bool:
        return self.category == "Id"


def _operands(raw) -> tuple[OperandInfo, ...]:
    return tuple(OperandInfo(*o) for o in raw)


# The tables of InstructionInfo, KindInfo and ExtInstInfo records are made on first use (a process that runs kernels
# its disk cache already holds looks few of them up): `grammar.INSTRUCTIONS`, `grammar.KINDS` ... are built by the
# module's __getattr__ at their first read and are plain module attributes after it.
INSTRUCTIONS: dict[int, InstructionInfo]
INSTRUCTIONS_BY_NAME: dict[str, InstructionInfo]
KINDS: dict[str, KindInfo]


@cache
def _instruction_tables() -> tuple[dict[int, InstructionInfo], dict[str, InstructionInfo]]:
    """(INSTRUCTIONS, INSTRUCTIONS_BY_NAME): every instruction by opcode, and by its name and aliases."""
    by_opcode: dict[int, InstructionInfo] = {}
    by_name: dict[str, InstructionInfo] = {}
    for opcode, name, opclass, operands, caps, exts, version, aliases in _g.INSTRUCTIONS:
        info = InstructionInfo(opcode, name, opclass, _operands(operands), caps, exts, version, aliases)
        by_opcode[opcode] = info
        for spelling in (name, *aliases):
            by_name[spelling] = info
    return by_opcode, by_name


@cache
def _kind_info(kind: str) -> KindInfo:
    """One operand kind's record, made from the generated table the first time it is asked for."""
    category, enumerants, bases = _g.OPERAND_KINDS[kind]
    return KindInfo(kind, category,
                    tuple(EnumerantInfo(n, v, _operands(p), c, x, ver, al) for n, v, p, c, x, ver, al in enumerants),
                    bases)


def _kinds_in(*categories: str) -> frozenset[str]:
    return frozenset(k for k, (category, _enumerants, _bases) in _g.OPERAND_KINDS.items() if category in categories)


# Operand-kind categories, from the grammar's own "category" of each kind.
ID_KINDS = _kinds_in("Id")  # IdRef, IdResult, IdResultType, IdScope, IdMemorySemantics
LITERAL_KINDS = _kinds_in("Literal")
ENUM_KINDS = _kinds_in("ValueEnum", "BitEnum")
BIT_ENUM_KINDS = _kinds_in("BitEnum")
VARIABLE_WIDTH_LITERAL_KINDS = frozenset({"LiteralString", "LiteralContextDependentNumber"}) & LITERAL_KINDS
ONE_WORD_KINDS = ID_KINDS | (LITERAL_KINDS - VARIABLE_WIDTH_LITERAL_KINDS)
# Composite kinds -> the kinds of their parts (the grammar's "bases"); OpSwitch's literal, which the grammar
# calls LiteralInteger, is as wide as the selector's type, so it is read as a context-dependent number.
COMPOSITE_KINDS: dict[str, tuple[str, ...]] = {
    k: tuple("LiteralContextDependentNumber" if k == "PairLiteralIntegerIdRef" and b == "LiteralInteger" else b
             for b in _g.OPERAND_KINDS[k][2])
    for k in sorted(_kinds_in("Composite"))
}



def instruction(key: int | str) -> InstructionInfo:
    """The grammar of an instruction, by opcode or name (`OpFAdd` or `FAdd`)."""
    by_opcode, by_name = _instruction_tables()
    if isinstance(key, int):
        try:
            return by_opcode[key]
        except KeyError:
            raise GrammarError(f"unknown opcode {key}") from None
    info = by_name.get(key) or by_name.get("Op" + key)
    if info is None:
        raise GrammarError(f"unknown instruction {key!r}")
    return info


def operand_kind(kind: str) -> KindInfo:
    if kind not in _g.OPERAND_KINDS:
        raise GrammarError(f"unknown operand kind {kind!r}")
    return _kind_info(kind)


@cache
def _enumerant_maps(kind: str) -> tuple[dict[str, EnumerantInfo], dict[int, EnumerantInfo]]:
    info = operand_kind(kind)
    by_name: dict[str, EnumerantInfo] = {}
    by_value: dict[int, EnumerantInfo] = {}
    for e in info.enumerants:
        for n in (e.name, *e.aliases):
            by_name.setdefault(n, e)
        by_value.setdefault(e.value, e)  # the first spelling is the canonical one
    return by_name, by_value


def enumerant(kind: str, key: int | str) -> EnumerantInfo:
    """An enumerant of a ValueEnum/BitEnum kind, by name (aliases too) or value."""
    by_name, by_value = _enumerant_maps(kind)
    found = by_value.get(key) if isinstance(key, int) else by_name.get(key)
    if found is None:
        raise GrammarError(f"{kind} has no enumerant {key!r}")
    return found


def enumerant_names(kind: str) -> dict[str, EnumerantInfo]:
    return _enumerant_maps(kind)[0]


def enumerant_values(kind: str) -> dict[int, EnumerantInfo]:
    return _enumerant_maps(kind)[1]


@dataclass(frozen=True, slots=True)
class ExtInstInfo:
    """One instruction of an extended instruction set (GLSL.std.450, ...): opcode, name, operands."""

    opcode: int
    name: str
    operands: tuple[OperandInfo, ...]
    capabilities: tuple[str, ...]
    extensions: tuple[str, ...]


EXTINST: dict[str, dict[int, ExtInstInfo]]
EXTINST_BY_NAME: dict[str, dict[str, ExtInstInfo]]
GENERATORS: dict[int, str] = {
    tool_id: f"{vendor} {tool}" if tool else vendor for tool_id, (vendor, tool) in _g.GENERATORS.items()
}
"""Generator ids of the module header (the registry's vendor/tool ids) -> 'Vendor Tool'."""


@cache
def _extinst_tables() -> tuple[dict[str, dict[int, ExtInstInfo]], dict[str, dict[str, ExtInstInfo]]]:
    """(EXTINST, EXTINST_BY_NAME): each tabulated extended instruction set's instructions by opcode, and by name."""
    by_opcode = {set_name: {op: ExtInstInfo(op, n, _operands(o), c, x) for op, n, o, c, x in entries}
                 for set_name, entries in _g.EXTINST.items()}
    return by_opcode, {set_name: {i.name: i for i in table.values()} for set_name, table in by_opcode.items()}


# the tables __getattr__ builds on their first read
_LAZY_TABLES = {
    "INSTRUCTIONS": lambda: _instruction_tables()[0],
    "INSTRUCTIONS_BY_NAME": lambda: _instruction_tables()[1],
    "KINDS": lambda: {kind: _kind_info(kind) for kind in _g.OPERAND_KINDS},
    "EXTINST": lambda: _extinst_tables()[0],
    "EXTINST_BY_NAME": lambda: _extinst_tables()[1],
}


def __getattr__(name: str):
    """A table of _LAZY_TABLES, built at its first read and kept as a module attribute (PEP 562)."""
    build = _LAZY_TABLES.get(name)
    if build is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    table = globals()[name] = build()
    return table


def __dir__() -> list[str]:
    """The module's names, the tables not yet built included (as dir() listed them when they were built at import)."""
    return sorted({*globals(), *_LAZY_TABLES})


def _versioned_family(set_name: str) -> str | None:
    """'NonSemantic.Shader.DebugInfo.102' -> 'NonSemantic.Shader.DebugInfo' when only the family
    (its newest revision) is tabulated."""
    family, _, revision = set_name.rpartition(".")
    return family if revision.isdigit() and family in _g.EXTINST else None


def extinst_set(set_name: str) -> dict[int, ExtInstInfo] | None:
    """The instructions of an imported set by opcode, or None when it is not tabulated."""
    tables = _extinst_tables()[0]
    table = tables.get(set_name)
    if table is None and (family := _versioned_family(set_name)):
        table = tables[family]
    return table


def extinst_set_by_name(set_name: str) -> dict[str, ExtInstInfo] | None:
    """The instructions of an imported set by name, or None when it is not tabulated."""
    tables = _extinst_tables()[1]
    table = tables.get(set_name)
    if table is None and (family := _versioned_family(set_name)):
        table = tables[family]
    return table


def extinst(set_name: str, key: int | str) -> ExtInstInfo:
    """An instruction of a tabulated extended instruction set (see tools/gen_grammar.py)."""
    table = extinst_set(set_name)
    if table is None:
        raise GrammarError(f"extended instruction set {set_name!r} is not tabulated")
    found = table.get(key) if isinstance(key, int) else extinst_set_by_name(set_name).get(key)
    if found is None:
        raise GrammarError(f"{set_name} has no instruction {key!r}")
    return found


def version_tuple(version: str) -> tuple[int, int] | None:
    """'1.3' -> (1, 3); 'None' (extension-only) -> None."""
    if version == "None":
        return None
    major, minor = version.split(".")
    return int(major), int(minor)
