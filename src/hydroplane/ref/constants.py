"""Constants and specialization constants as lane-width-1 values (OpSpecConstantOp through the op table).

Most are evaluated once, when the Program is built. A constant whose value depends on the dispatch
(an OpSpecConstantOp of a cooperative matrix's length, which needs the subgroup size or workgroup
invocation count and the executor's element distribution), and every constant computed from one,
is deferred: `program.dispatch_constants` lists them in module order and `for_dispatch` evaluates
them per kernel launch on top of the module-time values.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.context import ExecContext
from hydroplane.ref.errors import InvalidModuleError
from hydroplane.ref.handlers import handler_for
from hydroplane.ref.instruction import Instr
from hydroplane.ref.lanes import Lanes
from hydroplane.ref.ops_composite import construct
from hydroplane.ref.values import zeros_of
from hydroplane.spirv import grammar
from hydroplane.spirv import types as T
from hydroplane.spirv.binary import Instruction

Op = grammar.Op


def scalar_from_bits(t: T.Scalar, bits: int) -> np.ndarray:
    """A (1,) array of scalar type `t` from the literal's bits."""
    if t.kind == "bool":
        return np.array([bool(bits)])
    size = t.dtype.itemsize
    raw = np.array([bits & ((1 << (8 * size)) - 1)], dtype=np.dtype(f"u{size}"))
    return raw.view(t.dtype)


def scalar_from_python(t: T.Scalar, value) -> np.ndarray:
    """A (1,) array of scalar type `t` from a Python number, or its little-endian bytes, given as a
    specialization value (the launch layer packs by declared type; bool as a 32-bit VkBool32)."""
    if isinstance(value, (bytes, bytearray)):
        return scalar_from_bits(t, int.from_bytes(value, "little"))
    if t.kind == "bool":
        return np.array([bool(value)])
    if t.kind == "float":
        return np.array([value], np.float64).astype(t.dtype)
    return scalar_from_bits(t, int(value))


def _spec_override(program, rid: int):
    sid = program.decoration(rid, "SpecId")
    if sid is None:
        return None
    program.used_spec_ids.add(sid[0])
    return program.spec.get(sid[0])


# Inner opcodes of OpSpecConstantOp whose value is only known at dispatch.
DISPATCH_DEPENDENT_OPS = frozenset({int(Op.CooperativeMatrixLengthNV), int(Op.CooperativeMatrixLengthKHR)})

# Every constant-creating instruction `evaluate` knows (the loader refuses other module-level ones by name).
CONSTANT_OPS = frozenset({Op.Constant, Op.SpecConstant, Op.ConstantTrue, Op.ConstantFalse, Op.SpecConstantTrue,
                          Op.SpecConstantFalse, Op.ConstantComposite, Op.SpecConstantComposite,
                          Op.ConstantCompositeReplicateEXT, Op.SpecConstantCompositeReplicateEXT, Op.ConstantNull,
                          Op.Undef, Op.SpecConstantOp})
SPEC_OPS = (Op.SpecConstantOp, Op.SpecConstantComposite, Op.SpecConstantCompositeReplicateEXT,
            Op.ConstantComposite, Op.ConstantCompositeReplicateEXT)


def _operand_ids(raw) -> list[int]:
    """The ids a constant-defining instruction reads (an OpSpecConstantOp's by its inner op's grammar)."""
    if raw.opcode != Op.SpecConstantOp:
        return [o.value for o in raw.operands]
    kinds = [o.kind for o in grammar.instruction(raw.operands[0].value).operands
             if o.kind not in ("IdResultType", "IdResult")]
    return [o.value for i, o in enumerate(raw.operands[1:])
            if (kinds[i] if i < len(kinds) else kinds[-1] if kinds else "").startswith("Id")]


def _depends_on_dispatch(program, raw) -> bool:
    if raw.opcode not in SPEC_OPS:
        return False
    if raw.opcode == Op.SpecConstantOp and raw.operands[0].value in DISPATCH_DEPENDENT_OPS:
        return True
    deferred = program.dispatch_constant_ids
    return bool(deferred) and any(i in deferred for i in _operand_ids(raw))


def for_dispatch(program, lanes, options) -> dict:
    """The module's constants with the dispatch-dependent ones evaluated for `lanes` and `options`."""
    values = dict(program.constants)
    for raw in program.dispatch_constants:
        evaluate(program, raw, values, lanes, options)
    return values


def evaluate(program, raw, into: dict | None = None, lanes=None, options=None) -> None:
    """Give the constant-defining instruction `raw` its value in `into` (default program.constants);
    with no `lanes` (module time), a dispatch-dependent constant is deferred instead."""
    op = raw.opcode
    rid = raw.result_id
    t = program.types.get(raw.result_type)
    if t is None:
        return
    if into is None:
        if _depends_on_dispatch(program, raw):
            program.dispatch_constants.append(raw)
            program.dispatch_constant_ids.add(rid)
            return
        into = program.constants
    if op in (Op.Constant, Op.SpecConstant):
        lit = raw.operands[0]
        value = scalar_from_bits(t, lit.value)
        if op == Op.SpecConstant:
            override = _spec_override(program, rid)
            if override is not None:
                value = scalar_from_python(t, override)
    elif op in (Op.ConstantTrue, Op.ConstantFalse, Op.SpecConstantTrue, Op.SpecConstantFalse):
        value = np.array([op in (Op.ConstantTrue, Op.SpecConstantTrue)])
        if op in (Op.SpecConstantTrue, Op.SpecConstantFalse):
            override = _spec_override(program, rid)
            if override is not None:
                value = scalar_from_python(t, override)
    elif op in (Op.ConstantComposite, Op.SpecConstantComposite, Op.ConstantCompositeReplicateEXT,
                Op.SpecConstantCompositeReplicateEXT):
        parts = [into[o.value] for o in raw.operands]
        if op in (Op.ConstantCompositeReplicateEXT, Op.SpecConstantCompositeReplicateEXT):
            parts = parts * _replicate_count(t)
        value = construct(t, parts)
    elif op in (Op.ConstantNull, Op.Undef):
        try:
            value = zeros_of(t, 1)
        except TypeError:
            return
    elif op == Op.SpecConstantOp:
        value = _spec_constant_op(program, raw, into, lanes, options)
    else:
        return
    into[rid] = value


def _replicate_count(t: T.Type) -> int:
    if isinstance(t, T.Vector):
        return t.count
    if isinstance(t, T.Matrix):
        return t.columns
    if isinstance(t, T.Array):
        return t.length
    if isinstance(t, T.CoopMatrix):
        return 1
    return len(t.members)


def _spec_constant_op(program, raw, constants: dict, lanes, options):
    inner_op = raw.operands[0].value
    info = grammar.instruction(inner_op)
    # rebuild the inner instruction's operands with their grammar kinds
    kinds = [o.kind for o in info.operands if o.kind not in ("IdResultType", "IdResult")]
    values = raw.operands[1:]
    operands = []
    for i, o in enumerate(values):
        kind = kinds[i] if i < len(kinds) else kinds[-1] if kinds else o.kind
        operands.append(type(o)(kind, o.value, o.nwords))
    inst = Instr(Instruction(inner_op, raw.result_type, raw.result_id, operands, raw.offset))
    inst.set_type(program.types.get(raw.result_type))
    inst.handler = handler_for(program, inst)
    ctx = ExecContext(program, lanes if lanes is not None else Lanes.flat(1), options=options, globals=constants)
    ctx.inst = inst
    inst.handler(ctx, inst)
    try:
        return ctx.frame[raw.result_id]
    except KeyError:
        raise InvalidModuleError(f"OpSpecConstantOp {info.name} at word {raw.offset} gave no value") from None
