"""No SPIR-V enumerant value is typed by hand in src/: they come from hydroplane.spirv.enums / grammar.

An AST scan of src/hydroplane (not the generated spirv/enums.py and spirv/_grammar_generated.py,
not vk/, which mirrors Vulkan's C enums, nor isa/) that finds
  (a) an Enum / IntEnum / IntFlag / Flag class whose members are SPIR-V enumerants (their names,
      with or without the vendor suffix, or a leading part of one, with the grammar's values), and
  (b) a module- or class-level constant `NAME = <int>` (tuple assignments too) whose name is an
      enumerant's with its value (`REDUCE = 0`), or names an operand kind and one of its
      enumerants with its value (`SCOPE_SUBGROUP = 3`, `USE_A = 0`, `STORAGE_PUSH_CONSTANT = 9`).
The table of enumerants is the grammar's, so the scan follows the grammar as it grows.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from conftest import REPO

from hydroplane.spirv import grammar

SRC = REPO / "src" / "hydroplane"
EXCLUDED_FILES = {"spirv/enums.py", "spirv/_grammar_generated.py"}
EXCLUDED_FOLDERS = ("vk/", "isa/")
ENUM_BASES = {"Enum", "IntEnum", "IntFlag", "Flag", "StrEnum"}

# A word in a constant's name -> the operand kinds whose enumerants such a constant would copy.
KIND_WORDS = {
    "SCOPE": ("Scope",), "USE": ("CooperativeMatrixUse",), "STORAGE": ("StorageClass",),
    "DECORATION": ("Decoration",), "CAP": ("Capability",), "CAPABILITY": ("Capability",),
    "LAYOUT": ("CooperativeMatrixLayout", "CooperativeVectorMatrixLayout"),
    "SEMANTICS": ("MemorySemantics",), "BUILTIN": ("BuiltIn",), "MODE": ("ExecutionMode",),
    "MODEL": ("ExecutionModel", "AddressingModel", "MemoryModel"), "ROUNDING": ("FPRoundingMode",),
    "GROUP": ("GroupOperation",), "CLAMP": ("TensorClampMode",), "ACCESS": ("MemoryAccess",),
    "OPERANDS": ("CooperativeMatrixOperands",), "REDUCE": ("CooperativeMatrixReduce",),
    "ENCODING": ("FPEncoding",), "DIM": ("Dim",),
}


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


@cache
def _vendor_suffixes() -> tuple[str, ...]:
    """KHR, EXT, NV, INTEL, ...: the vendor parts of every extension the grammar names."""
    vendors = set()
    for kind in grammar.KINDS.values():
        for e in kind.enumerants:
            vendors.update(x.split("_")[1] for x in e.extensions if x.count("_") >= 2)
    for inst in grammar.INSTRUCTIONS.values():
        vendors.update(x.split("_")[1] for x in inst.extensions if x.count("_") >= 2)
    return tuple(sorted(vendors, key=len, reverse=True))


def _spellings(name: str) -> set[str]:
    """A grammar name, normalised, with and without its vendor suffix."""
    out = {_norm(name)}
    for vendor in _vendor_suffixes():
        if name.endswith(vendor) and len(name) > len(vendor):
            out.add(_norm(name[:-len(vendor)]))
    return out


@cache
def _enumerants() -> dict[str, list[tuple[set[str], int]]]:
    """Operand kind -> [(normalised spellings of an enumerant and its aliases, value)]."""
    table: dict[str, list[tuple[set[str], int]]] = {}
    for kind, info in grammar.KINDS.items():
        if info.is_enum:
            table[kind] = [(set().union(*(_spellings(n) for n in (e.name, *e.aliases))), e.value)
                           for e in info.enumerants]
    return table


def _member_kinds(name: str, value: int) -> set[str]:
    """The kinds with an enumerant of this value that `name` spells (or begins to spell)."""
    key = _norm(name)
    found = set()
    for kind, enumerants in _enumerants().items():
        for spellings, v in enumerants:
            if v == value and (key in spellings or (len(key) >= 3 and any(s.startswith(key) for s in spellings))):
                found.add(kind)
                break
    return found


def _constant_kinds(name: str, value: int) -> set[str]:
    """The kinds a constant `NAME = value` copies an enumerant of (see the module docstring)."""
    key = _norm(name)
    found = {kind for kind, enumerants in _enumerants().items()
             if any(v == value and key in spellings for spellings, v in enumerants)}
    words = [w for w in name.upper().strip("_").split("_") if w]
    for i, word in enumerate(words):
        rest = _norm("".join(words[i + 1:]))
        if word not in KIND_WORDS or not rest:
            continue
        for kind in KIND_WORDS[word]:
            if any(v == value and any(rest in s for s in spellings) for spellings, v in _enumerants()[kind]):
                found.add(kind)
    return found


def _int_value(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_value(node.operand)
        return None if inner is None else -inner
    return None


def _assignments(body) -> list[tuple[str, int, int]]:
    """(name, int value, line) of every `NAME = int` and `A, B = int, int` in a block's statements."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            pairs = [(stmt.target, stmt.value)]
        elif isinstance(stmt, ast.Assign):
            pairs = []
            for target in stmt.targets:
                if isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple):
                    pairs += zip(target.elts, stmt.value.elts)
                else:
                    pairs.append((target, stmt.value))
        else:
            continue
        for target, value in pairs:
            number = _int_value(value)
            if isinstance(target, ast.Name) and number is not None:
                out.append((target.id, number, stmt.lineno))
    return out


def _is_enum_class(node: ast.ClassDef) -> bool:
    for base in node.bases:
        name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else None
        if name in ENUM_BASES:
            return True
    return False


def hand_typed_enums(path: Path) -> list[str]:
    """Every hand-typed SPIR-V enumerant in one Python file, as 'file:line: what'."""
    tree = ast.parse(path.read_text(), str(path))
    hits = []
    blocks = [(tree.body, None)]
    blocks += [(node.body, node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    for body, owner in blocks:
        members = _assignments(body)
        if owner is not None and _is_enum_class(owner):
            counts: dict[str, int] = {}
            for name, value, _ in members:
                for kind in _member_kinds(name, value):
                    counts[kind] = counts.get(kind, 0) + 1
            need = min(2, len(members))
            copied = sorted(kind for kind, n in counts.items() if need and n >= need)
            if copied:
                hits.append(f"{path}:{owner.lineno}: enum class {owner.name} copies the grammar's "
                            f"{' / '.join(copied)} (use hydroplane.spirv.enums.{copied[0]})")
            continue
        for name, value, line in members:
            kinds = _constant_kinds(name, value)
            if kinds:
                hits.append(f"{path}:{line}: {name} = {value} is a {' / '.join(sorted(kinds))} enumerant "
                            f"typed by hand (use hydroplane.spirv.enums)")
    return hits


def _scanned_files() -> list[Path]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if relative in EXCLUDED_FILES or relative.startswith(EXCLUDED_FOLDERS):
            continue
        out.append(path)
    return out


def test_src_types_no_spirv_enumerant_by_hand():
    files = _scanned_files()
    assert len(files) > 50 and any(p.name == "program.py" for p in files)  # the scan sees the tree
    hits = [hit for path in files for hit in hand_typed_enums(path)]
    assert not hits, "\n".join(hits)


def test_scan_catches_planted_copies(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "import enum\n"
        "from enum import IntEnum\n\n"
        "SCOPE_SUBGROUP = 3\n"
        "REDUCE, INCLUSIVE_SCAN = 0, 1\n"
        "HEADER_WORDS = 5\n"
        "MAX_DIM = 5\n\n"
        "class Use(IntEnum):\n"
        "    MatrixA = 0\n\n"
        "class Rounding(enum.IntEnum):\n"
        "    RTE = 0\n"
        "    RTZ = 1\n\n"
        "class Holder:\n"
        "    STORAGE_PUSH_CONSTANT = 9\n"
        "    USE_A = 0\n\n"
        "class Colour(enum.Enum):\n"
        "    Red = 0\n"
        "    Green = 1\n\n"
        "def f():\n"
        "    SCOPE_WORKGROUP = 2  # a function's local: not a module constant\n"
        "    return SCOPE_WORKGROUP\n")
    hits = hand_typed_enums(planted)
    lines = sorted(int(hit.split(":")[-2]) for hit in hits)
    assert lines == [4, 5, 5, 9, 12, 17, 18], "\n".join(hits)
    assert any("enum class Use copies the grammar's CooperativeMatrixUse" in hit for hit in hits)
    assert any("SCOPE_SUBGROUP = 3 is a Scope enumerant" in hit for hit in hits)
    assert any("enum class Rounding" in hit and "FPRoundingMode" in hit for hit in hits)


def test_scan_leaves_wrong_values_and_unrelated_names_alone(tmp_path):
    clean = tmp_path / "clean.py"
    clean.write_text("SCOPE_SUBGROUP = 4\nUSE_CACHE = 1\nINDENT = 15\n"
                     "class Layout:\n    MAX_LAYOUT_RANK = 5\n")
    assert hand_typed_enums(clean) == []
