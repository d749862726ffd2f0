"""SIMT execution of one function over a lane vector: structured control flow with active-lane masks.

Every lane has a program counter (a block's position in structured order). The scheduler runs
the block with the lowest position among the lanes still running, with exactly the lanes
waiting there active. Because a construct's merge block comes after all of its blocks, lanes
that leave a selection or loop early wait at the merge until the others arrive: they
reconverge there, which is where barriers and subgroup operations expect them. OpPhi picks
each lane's value by the block that lane came from.
"""

from __future__ import annotations

import time

import numpy as np

from hydroplane.errors import HydroplaneError
from hydroplane.ref.access import store_value
from hydroplane.ref.errors import InvalidModuleError
from hydroplane.ref.layout import size_of
from hydroplane.ref.memory import Region
from hydroplane.ref.ops import Op
from hydroplane.ref.values import Cell, Pointer, merge

DONE = np.iinfo(np.int32).max


def allocate_variables(ctx, fn) -> None:
    """Function-storage variables of a call: register values or per-lane memory."""
    program = ctx.program
    for var in fn.variables:
        t = var.type.pointee
        rid = var.result_id
        init = var.args[0] if var.args else None
        if rid in program.register_variables:
            cell = Cell(int(np.count_nonzero(ctx.mask)), program.names.get(rid, f"%{rid}"),
                        ctx.get(init) if init is not None else None)
            ctx.frame[rid] = Pointer(None, np.zeros(1, np.int64), t, var=cell)
            continue
        count = ctx.lanes.count
        region = Region(program.names.get(rid, f"%{rid}"), "Function", size_of(t), rows=count,
                        row_of_lane=np.arange(count))
        ptr = Pointer(region, np.zeros(1, np.int64), t)
        ctx.frame[rid] = ptr
        if init is not None:
            store_value(ctx, ptr, t, ctx.get(init))


def run_function(ctx, fn, args: list):
    """Run `fn` on ctx.mask's lanes with `args`; return its merged return value (None for void)."""
    saved = ctx.frame, ctx.mask, ctx.mask_full, ctx.inst
    ctx.frame = dict(zip(fn.params, args))
    entry_mask = ctx.mask
    entered = int(entry_mask.sum())
    ctx.mask_full = True
    try:
        allocate_variables(ctx, fn)
        blocks = [fn.blocks[label] for label in fn.order]
        pc = np.full(ctx.lanes.count, DONE, np.int32)
        pc[entry_mask] = 0
        prev = np.full(ctx.lanes.count, -1, np.int64)
        track_prev = any(b.phis for b in blocks)
        result = None
        while True:
            here = int(pc.min())
            if here == DONE:
                break
            mask = pc == here
            block = blocks[here]
            ctx.mask = mask
            ctx.mask_full = entered == int(np.count_nonzero(mask))
            try:
                if block.phis:
                    _phis(ctx, block, mask, prev)
                stats = ctx.stats
                stats["instructions"] += len(block.body)
                stats["blocks"] += 1
                if stats["blocks"] > ctx.max_blocks:
                    ctx.inst = block.terminator
                    ctx.diagnose("limit", f"step budget: more than {ctx.max_blocks} block executions (an endless "
                                 "loop?); raise it with Executor(max_blocks=...) or `hydroplane run --max-steps N` "
                                 "for longer kernels", np.flatnonzero(mask))
                if ctx.deadline is not None and not stats["blocks"] & 63 and time.monotonic() > ctx.deadline[0]:
                    ctx.inst = block.terminator
                    ctx.diagnose("limit", f"time limit: the dispatch ran longer than {ctx.deadline[1]:g} s (an "
                                 "endless loop?); raise it with Executor(time_limit=...) or `hydroplane run "
                                 "--timeout S`", np.flatnonzero(mask))
                for inst in block.body:
                    ctx.inst = inst
                    inst.handler(ctx, inst)
                term = block.terminator
                ctx.inst = term
                if term is None:
                    ctx.diagnose("invalid", f"block %{block.label} has no terminator")
                op = term.opcode
                if op == Op.Branch:
                    np.putmask(pc, mask, fn.blocks[term.args[0]].order)
                elif op == Op.BranchConditional:
                    cond = ctx.get(term.args[0])
                    t, f = fn.blocks[term.args[1]].order, fn.blocks[term.args[2]].order
                    if cond.shape[0] == 1:
                        np.putmask(pc, mask, t if cond[0] else f)
                    else:
                        np.copyto(pc, np.where(cond, np.int32(t), np.int32(f)), where=mask)
                elif op == Op.Switch:
                    pc[mask] = _switch_targets(ctx, fn, term, mask)
                elif op in (Op.Return, Op.ReturnValue):
                    if op == Op.ReturnValue:
                        value = ctx.get(term.args[0])
                        result = value if result is None else merge(ctx.mask_for(fn.type.result, mask), value, result)
                    pc[mask] = DONE
                elif op == Op.Unreachable:
                    ctx.diagnose("unreachable", "OpUnreachable was executed", np.flatnonzero(mask))
                    pc[mask] = DONE
                else:
                    ctx.diagnose("unsupported", f"{term.name} in a compute shader")
                if track_prev:
                    np.putmask(prev, mask, block.label)
            except HydroplaneError:
                raise
            except (KeyError, IndexError, ValueError, TypeError, AttributeError, OverflowError, MemoryError) as exc:
                where = (f" at word {ctx.inst.offset} `{ctx.program.describe(ctx.inst)}`"
                         if ctx.inst is not None else "")
                raise InvalidModuleError(f"malformed module or executor bug{where}: "
                                         f"{type(exc).__name__}: {exc}") from exc
        return result
    finally:
        ctx.frame, ctx.mask, ctx.mask_full, ctx.inst = saved


def _phis(ctx, block, mask, prev) -> None:
    values = []
    for phi in block.phis:
        ctx.inst = phi
        result = None
        pairs = phi.args
        for i in range(0, len(pairs), 2):
            sel = mask & (prev == pairs[i + 1])
            if not sel.any():
                continue
            value = ctx.get(pairs[i])
            try:
                result = value if result is None else merge(ctx.mask_for(phi.type, sel), value, result)
            except TypeError:
                ctx.unsupported("OpPhi of pointers to different objects in different lanes (variable pointers)")
        values.append((phi.result_id, result))
    for rid, value in values:
        if value is not None:
            ctx.set(rid, value)


def _switch_targets(ctx, fn, term, mask):
    selector = ctx.get(term.args[0])
    sel = selector.astype(np.int64) if selector.dtype.kind == "i" else selector.astype(np.uint64).astype(np.int64)
    sel = np.broadcast_to(sel, mask.shape)[mask]
    bits = selector.dtype.itemsize * 8
    target = np.full(sel.shape, fn.blocks[term.args[1]].order, np.int32)
    ops = term.operands[2:]
    for i in range(0, len(ops), 2):
        literal, label = ops[i].value, ops[i + 1].value
        if selector.dtype.kind == "i" and literal >= 1 << (bits - 1):
            literal -= 1 << bits
        target[sel == literal] = fn.blocks[label].order
    return target
