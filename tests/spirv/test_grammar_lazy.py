"""The grammar's record tables are built on first use (issue 22, the warm first call): the same records as the
generated tables say, whichever way they are reached first, and a new process that imports the ops builds none."""

import os
import subprocess
import sys

import pytest
from conftest import REPO

from hydroplane.spirv import _grammar_generated as _g
from hydroplane.spirv import grammar


def fresh_process(code: str) -> str:
    """stdout of `code` run by a new interpreter on this checkout's package."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_tables_hold_every_generated_record():
    assert list(grammar.INSTRUCTIONS) == [row[0] for row in _g.INSTRUCTIONS]
    assert set(grammar.INSTRUCTIONS_BY_NAME) == {n for row in _g.INSTRUCTIONS for n in (row[1], *row[7])}
    assert list(grammar.KINDS) == list(_g.OPERAND_KINDS)
    assert list(grammar.EXTINST) == list(grammar.EXTINST_BY_NAME) == list(_g.EXTINST)
    fadd = grammar.INSTRUCTIONS[grammar.Op.FAdd]
    assert fadd.name == "OpFAdd" and [o.kind for o in fadd.operands] == ["IdResultType", "IdResult", "IdRef", "IdRef"]


def test_lookups_and_tables_give_the_same_records():
    assert grammar.instruction("OpFAdd") is grammar.INSTRUCTIONS_BY_NAME["OpFAdd"] is grammar.INSTRUCTIONS[129]
    for kind in ("Decoration", "Scope", "IdRef", "PairIdRefIdRef"):
        assert grammar.operand_kind(kind) is grammar.KINDS[kind]
    assert grammar.extinst_set("GLSL.std.450") is grammar.EXTINST["GLSL.std.450"]
    assert grammar.extinst_set_by_name("GLSL.std.450") is grammar.EXTINST_BY_NAME["GLSL.std.450"]
    assert grammar.ENUM_KINDS == frozenset(k for k, info in grammar.KINDS.items() if info.is_enum)
    assert grammar.COMPOSITE_KINDS["PairIdRefIdRef"] == grammar.KINDS["PairIdRefIdRef"].bases


def test_dir_lists_the_tables_before_they_are_built():
    out = fresh_process("from hydroplane.spirv import grammar\n"
                        "names = dir(grammar)\n"
                        "print(all(n in names for n in ('INSTRUCTIONS', 'KINDS', 'EXTINST', 'instruction')), "
                        "'KINDS' in vars(grammar))")
    assert out == "True False"


def test_unknown_names_still_fail():
    with pytest.raises(AttributeError, match="NO_SUCH_TABLE"):
        grammar.NO_SUCH_TABLE  # noqa: B018
    with pytest.raises(grammar.GrammarError, match="unknown operand kind"):
        grammar.operand_kind("NoSuchKind")
    with pytest.raises(grammar.GrammarError, match="unknown opcode"):
        grammar.instruction(99999)


@pytest.mark.parametrize("first", ["table", "lookup"])
def test_either_way_in_builds_the_same_tables(first):
    """A process that reads the tables first and one that looks records up first end with the same records."""
    reach = "grammar.INSTRUCTIONS[129]; grammar.KINDS['Scope']" if first == "table" else \
        "grammar.instruction(129); grammar.operand_kind('Scope')"
    out = fresh_process("from hydroplane.spirv import grammar\n" + reach + "\n"
                        "assert grammar.instruction(129) is grammar.INSTRUCTIONS[129]\n"
                        "assert grammar.operand_kind('Scope') is grammar.KINDS['Scope']\n"
                        "print(len(grammar.INSTRUCTIONS), len(grammar.KINDS))")
    assert out == f"{len(grammar.INSTRUCTIONS)} {len(grammar.KINDS)}"


def test_importing_the_ops_builds_no_table_and_no_subprocess_module():
    """What `hydroplane.matmul` and `hydroplane.attention` import leaves the tables unbuilt and spirv-val's
    subprocess module unimported (both come when a kernel is compiled or validated)."""
    out = fresh_process("import sys, hydroplane\n"
                        "hydroplane.device_array, hydroplane.matmul, hydroplane.attention\n"
                        "from hydroplane.spirv import grammar\n"
                        "print(sorted(n for n in grammar._LAZY_TABLES if n in vars(grammar)), "
                        "'subprocess' in sys.modules)")
    assert out == "[] False"
