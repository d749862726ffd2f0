"""The op table: opcode -> handler `fn(ctx, inst)`, plus handlers specialised by operand type.

`register(Op.X, ...)` adds a handler; `register(Op.X, type=CoopMatrix)` adds one used
when the instruction's result type or one of its operands' types is of that class (how the
cooperative-matrix module takes over composite access, conversions and arithmetic on matrices).
Per-op arithmetic lives in data tables in the ops_* modules; this module only routes. The handler modules
register themselves when imported; `ref.handlers` imports every one of them (the complete table).
"""

from __future__ import annotations

from collections.abc import Callable

from hydroplane.spirv import grammar

Op = grammar.Op
Handler = Callable[[object, object], None]

HANDLERS: dict[int, Handler] = {}
TYPED_HANDLERS: dict[tuple[int, type], Handler] = {}


def register(*opcodes: int, type: type | None = None) -> Callable[[Handler], Handler]:
    """Decorator: the handler runs for these opcodes (for operands of `type`, when given)."""

    def add(fn: Handler) -> Handler:
        for op in opcodes:
            if type is None:
                HANDLERS[int(op)] = fn
            else:
                TYPED_HANDLERS[(int(op), type)] = fn
        return fn

    return add


def unsupported(ctx, inst) -> None:
    ctx.diagnose("unsupported", f"{inst.name} is not implemented by the reference executor")


def handler_for(program, inst) -> Handler:
    """The handler of an instruction: a typed one when its types ask for it, else the plain one."""
    op = inst.opcode
    if TYPED_HANDLERS:
        candidates = [inst.type] + [program.value_types.get(i) for i in inst.args]
        for t in candidates:
            if t is not None:
                fn = TYPED_HANDLERS.get((op, t.__class__))
                if fn is not None:
                    return fn
    return HANDLERS.get(op, unsupported)

