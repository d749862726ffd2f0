"""Function calls and instructions with no effect on values (debug info, no-ops, assumptions)."""

from __future__ import annotations

from hydroplane.ref.ops import Op, register


@register(Op.FunctionCall)
def _function_call(ctx, inst):
    args = [ctx.get(i) for i in inst.args[1:]]
    result = ctx.call(inst.args[0], args)
    if result is not None:
        ctx.set(inst.result_id, result)


@register(Op.Nop, Op.AssumeTrueKHR, Op.LifetimeStart, Op.LifetimeStop)
def _no_effect(ctx, inst):
    pass
