"""ModuleBuilder.function_aside() and set_return_type(): a callee built while its caller is open,
its return type settled after its body (how the kernel language emits @func helpers)."""

from __future__ import annotations

import pytest

from hydroplane.spirv import Op, decode, validate
from hydroplane.spirv.builder import BuildError, ModuleBuilder


def test_callee_built_inside_the_caller_and_retyped(spirv_val):
    b = ModuleBuilder()
    f32 = b.scalar("f32")
    data, ptr = b.storage_buffer(f32, binding=0, name="data")
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    zero = b.u32(0)
    slot = b.emit(Op.AccessChain, ptr, data, zero, zero)
    with b.function_aside():  # the caller's block stays open meanwhile
        helper, (x,) = b.function(b.type_void(), [f32], name="twice")
        b.label()
        b.emit(Op.ReturnValue, b.emit(Op.FAdd, f32, x, x))
        b.end_function()
        b.set_return_type(helper, f32)
    value = b.emit(Op.FunctionCall, f32, helper, b.emit(Op.Load, f32, slot))
    b.emit(Op.Store, slot, value)
    b.emit(Op.Return)
    b.end_function()
    b.entry_point("GLCompute", main, local_size=(1,))
    words = b.to_words()
    validate(words)
    function = next(i for i in decode(words).instructions if i.opcode == Op.Function and i.result_id == helper)
    assert function.result_type == f32


def test_an_open_callee_is_reported_and_the_caller_restored():
    b = ModuleBuilder()
    main, _ = b.function(b.type_void(), name="main")
    b.label()
    with pytest.raises(BuildError, match="left open inside function_aside"):
        with b.function_aside():
            b.function(b.type_void(), name="unfinished")
    b.emit(Op.Return)  # the caller's block is still the current one
    b.end_function()


def test_an_error_inside_keeps_its_own_message():
    b = ModuleBuilder()
    b.function(b.type_void(), name="main")
    b.label()
    with pytest.raises(ValueError, match="the real problem"):
        with b.function_aside():
            b.function(b.type_void(), name="callee")
            raise ValueError("the real problem")
    with pytest.raises(BuildError, match="is not a function of this builder"):
        b.set_return_type(12345, b.type_void())
