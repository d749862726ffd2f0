"""ModuleBuilder.from_module: a builder that starts from any producer's module, and source locations."""

from __future__ import annotations

import pytest
from spirv_corpus import CORPUS_NAMES, corpus_binaries  # noqa: F401  (fixture)

from hydroplane.spirv import Op, decode, validate
from hydroplane.spirv.builder import ModuleBuilder


def _body(module) -> list[tuple]:
    """Instructions other than the header ones a rebuild may reorder or re-derive."""
    skip = {Op.Capability, Op.Extension, Op.EntryPoint}
    return sorted(((int(i.opcode), i.result_type, i.result_id, tuple(i.operands)) for i in module.instructions
                   if i.opcode not in skip), key=repr)


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_rebuilt_glslang_module_keeps_every_instruction_and_validates(corpus_binaries, spirv_val, name):
    original = decode(corpus_binaries[name])
    rebuilt = ModuleBuilder.from_module(original).module()
    validate(rebuilt.words())
    assert _body(rebuilt) == _body(original)
    entry = [i for i in original.instructions if i.opcode == Op.EntryPoint][0]
    new_entry = [i for i in rebuilt.instructions if i.opcode == Op.EntryPoint][0]
    assert set(map(repr, entry.operands)) == set(map(repr, new_entry.operands))


def test_adopted_types_and_constants_are_reused(corpus_binaries):
    original = decode(corpus_binaries["plain_saxpy"])
    b = ModuleBuilder.from_module(original)
    u32 = b.scalar("u32")
    ints = [i for i in original.instructions if i.opcode == Op.TypeInt
            and i.operands[0].value == 32 and i.operands[1].value == 0]
    assert ints and u32 == ints[0].result_id
    assert b.module().bound == original.bound


def test_locations_emit_oplines_once_per_change_and_block(spirv_val):
    b = ModuleBuilder()
    void = b.type_void()
    f32 = b.scalar("f32")
    fn, _ = b.function(void)
    b.label()
    b.location("kernel.py", 10, 4)
    one = b.constant(f32, 1.0)
    x = b.emit(Op.FAdd, f32, one, one)
    b.emit(Op.FMul, f32, x, x)  # same location: no second OpLine
    b.location("kernel.py", 11, 8)
    b.emit(Op.FSub, f32, x, x)
    b.location(None)
    b.emit(Op.FNegate, f32, x)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", fn, local_size=(1, 1, 1))
    module = b.module()
    validate(module.words())
    ops = [i.opcode for i in module.instructions]
    lines = [(i.operands[1].value, i.operands[2].value) for i in module.instructions if i.opcode == Op.Line]
    assert lines == [(10, 4), (11, 8)]
    assert ops.count(Op.NoLine) == 1 and ops.count(Op.String) == 1
    assert ops.index(Op.Line) == ops.index(Op.FAdd) - 1
