"""Group non-uniform (subgroup) instructions: arithmetic with reduce/scan/clustered, ballot, broadcast,
shuffle, vote and quad operations, over the active lanes of each subgroup.

Reductions and scans combine the active lanes in lane order, left to right (inactive lanes
contribute the operation's identity): one fixed order, so float results are reproducible.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.ops import Op, register
from hydroplane.ref.values import as_signed, as_unsigned, reinterpret
from hydroplane.spirv.enums import GroupOperation, Scope


def _max_of(dt):
    return np.iinfo(dt).max if dt.kind in "iu" else np.inf


def _min_of(dt):
    return np.iinfo(dt).min if dt.kind in "iu" else -np.inf


# opcode -> (how operand bits are read, combining ufunc, identity(dtype))
GROUP_ARITHMETIC = {
    Op.GroupNonUniformIAdd: ("any", np.add, lambda dt: 0),
    Op.GroupNonUniformFAdd: ("any", np.add, lambda dt: 0),
    Op.GroupNonUniformIMul: ("any", np.multiply, lambda dt: 1),
    Op.GroupNonUniformFMul: ("any", np.multiply, lambda dt: 1),
    Op.GroupNonUniformSMin: ("s", np.minimum, _max_of),
    Op.GroupNonUniformUMin: ("u", np.minimum, _max_of),
    Op.GroupNonUniformFMin: ("any", np.fmin, _max_of),
    Op.GroupNonUniformSMax: ("s", np.maximum, _min_of),
    Op.GroupNonUniformUMax: ("u", np.maximum, _min_of),
    Op.GroupNonUniformFMax: ("any", np.fmax, _min_of),
    Op.GroupNonUniformBitwiseAnd: ("u", np.bitwise_and, lambda dt: np.iinfo(dt).max),
    Op.GroupNonUniformBitwiseOr: ("u", np.bitwise_or, lambda dt: 0),
    Op.GroupNonUniformBitwiseXor: ("u", np.bitwise_xor, lambda dt: 0),
    Op.GroupNonUniformLogicalAnd: ("any", np.logical_and, lambda dt: True),
    Op.GroupNonUniformLogicalOr: ("any", np.logical_or, lambda dt: False),
    Op.GroupNonUniformLogicalXor: ("any", np.logical_xor, lambda dt: False),
}
READ = {"any": lambda v: v, "s": as_signed, "u": as_unsigned}


def _subgroups(ctx, value):
    """(subgroups, S, ...) view of a value and (subgroups, S) of the active mask."""
    lanes = ctx.lanes
    return lanes.by_subgroup(np.asarray(ctx.full(value))), lanes.by_subgroup(ctx.mask)


def _lanes(ctx, by_sg):
    return by_sg.reshape((ctx.lanes.count,) + by_sg.shape[2:])


def _check_scope(ctx, inst):
    scope = ctx.const_int(inst.args[0])
    if scope != Scope.Subgroup:
        ctx.unsupported(f"{inst.name} with execution scope {_scope_name(scope)} (only Subgroup is supported)")


def _scope_name(value: int) -> str:
    try:
        return Scope(value).name
    except ValueError:
        return str(value)


def _arith(how, fn, identity):
    def handler(ctx, inst):
        _check_scope(ctx, inst)
        op = inst.literals[0]
        dt = inst.dtype
        value = READ[how](reinterpret(ctx.get(inst.args[1]), dt) if dt.kind != "b" else ctx.get(inst.args[1]))
        v, active = _subgroups(ctx, value)
        ident = np.array(identity(v.dtype)).astype(v.dtype)
        m = active.reshape(active.shape + (1,) * (v.ndim - 2))
        v = np.where(m, v, ident)
        if op == GroupOperation.ClusteredReduce:
            size = ctx.const_int(inst.args[2])
            s = v.shape[1]
            if size < 1 or size & (size - 1) or size > s:
                ctx.diagnose("invalid", f"cluster size {size} is not a power of two up to the subgroup size {s}")
            c = v.reshape((v.shape[0], s // size, size) + v.shape[2:])
            red = fn.accumulate(c, axis=2)[:, :, -1:]
            out = np.broadcast_to(red, c.shape).reshape(v.shape)
        elif op == GroupOperation.Reduce:
            out = np.broadcast_to(fn.accumulate(v, axis=1)[:, -1:], v.shape)
        elif op == GroupOperation.InclusiveScan:
            out = fn.accumulate(v, axis=1)
        elif op == GroupOperation.ExclusiveScan:
            scan = fn.accumulate(v, axis=1)
            out = np.concatenate([np.broadcast_to(ident, (v.shape[0], 1) + v.shape[2:]), scan[:, :-1]], axis=1)
        else:
            ctx.unsupported(f"{inst.name} with GroupOperation {op}")
        ctx.set(inst.result_id, reinterpret(np.ascontiguousarray(_lanes(ctx, out)), dt) if dt.kind != "b"
                else _lanes(ctx, out))
    return handler


for _op, (_how, _fn, _id) in GROUP_ARITHMETIC.items():
    register(_op)(_arith(_how, _fn, _id))


def _first_active(active):
    """(subgroups,) index of the first active lane (0 when none)."""
    return np.argmax(active, axis=1)


@register(Op.GroupNonUniformElect)
def _elect(ctx, inst):
    _check_scope(ctx, inst)
    active = ctx.lanes.by_subgroup(ctx.mask)
    first = _first_active(active)
    out = np.zeros(active.shape, bool)
    out[np.arange(active.shape[0]), first] = True
    ctx.set(inst.result_id, _lanes(ctx, out & active))


@register(Op.GroupNonUniformAll)
def _all(ctx, inst):
    _check_scope(ctx, inst)
    v, active = _subgroups(ctx, ctx.get(inst.args[1]))
    r = np.all(v | ~active, axis=1, keepdims=True)
    ctx.set(inst.result_id, _lanes(ctx, np.broadcast_to(r, active.shape)))


@register(Op.GroupNonUniformAny)
def _any(ctx, inst):
    _check_scope(ctx, inst)
    v, active = _subgroups(ctx, ctx.get(inst.args[1]))
    r = np.any(v & active, axis=1, keepdims=True)
    ctx.set(inst.result_id, _lanes(ctx, np.broadcast_to(r, active.shape)))


@register(Op.GroupNonUniformAllEqual)
def _all_equal(ctx, inst):
    _check_scope(ctx, inst)
    v, active = _subgroups(ctx, ctx.get(inst.args[1]))
    first = v[np.arange(v.shape[0]), _first_active(active)][:, None]
    eq = v == first
    if eq.ndim > 2:
        eq = eq.reshape(eq.shape[:2] + (-1,)).all(axis=2)
    r = np.all(eq | ~active, axis=1, keepdims=True)
    ctx.set(inst.result_id, _lanes(ctx, np.broadcast_to(r, active.shape)))


def _read_lane(ctx, value, source):
    """Per lane, `value` of the lane with subgroup-local index `source` (clamped into range)."""
    v, active = _subgroups(ctx, value)
    s = v.shape[1]
    src = np.broadcast_to(np.asarray(source).astype(np.int64), (ctx.lanes.count,))
    src = ctx.lanes.by_subgroup(src)
    ok = (src >= 0) & (src < s)
    src = np.where(ok, src, 0)
    rows = np.arange(v.shape[0])[:, None]
    out = v[rows, src]
    return _lanes(ctx, out)


@register(Op.GroupNonUniformBroadcast)
def _broadcast(ctx, inst):
    _check_scope(ctx, inst)
    ctx.set(inst.result_id, _read_lane(ctx, ctx.get(inst.args[1]), as_unsigned(ctx.get(inst.args[2]))))


@register(Op.GroupNonUniformBroadcastFirst)
def _broadcast_first(ctx, inst):
    _check_scope(ctx, inst)
    active = ctx.lanes.by_subgroup(ctx.mask)
    first = np.repeat(_first_active(active), ctx.lanes.subgroup_size)
    ctx.set(inst.result_id, _read_lane(ctx, ctx.get(inst.args[1]), first))


def _ballot_bits(ctx, pred_by_sg):
    """(subgroups, S) bools -> (lanes, 4) uint32 ballot words, the same in every lane of a subgroup."""
    n, s = pred_by_sg.shape
    bits = np.zeros((n, 128), np.uint8)
    bits[:, :s] = pred_by_sg
    words = np.packbits(bits, axis=1, bitorder="little").view(np.uint32)  # (n, 4)
    return np.repeat(words, s, axis=0)


@register(Op.GroupNonUniformBallot)
def _ballot(ctx, inst):
    _check_scope(ctx, inst)
    v, active = _subgroups(ctx, ctx.get(inst.args[1]))
    ctx.set(inst.result_id, _ballot_bits(ctx, v & active).astype(inst.dtype))


def _bit_of(ctx, words, index):
    w = np.broadcast_to(np.asarray(as_unsigned(words)).astype(np.uint32), (ctx.lanes.count, 4))
    idx = np.broadcast_to(np.asarray(index).astype(np.int64), (ctx.lanes.count,))
    word = w[np.arange(ctx.lanes.count), np.clip(idx // 32, 0, 3)]
    return ((word >> (idx % 32).astype(np.uint32)) & 1).astype(bool)


@register(Op.GroupNonUniformInverseBallot)
def _inverse_ballot(ctx, inst):
    _check_scope(ctx, inst)
    own = ctx.lanes.local_index % ctx.lanes.subgroup_size
    ctx.set(inst.result_id, _bit_of(ctx, ctx.get(inst.args[1]), own))


@register(Op.GroupNonUniformBallotBitExtract)
def _ballot_bit_extract(ctx, inst):
    _check_scope(ctx, inst)
    ctx.set(inst.result_id, _bit_of(ctx, ctx.get(inst.args[1]), as_unsigned(ctx.get(inst.args[2]))))


def _ballot_bools(ctx, words):
    w = np.ascontiguousarray(np.broadcast_to(np.asarray(as_unsigned(words)).astype(np.uint32), (ctx.lanes.count, 4)))
    bits = np.unpackbits(w.view(np.uint8), axis=1, bitorder="little")[:, :ctx.lanes.subgroup_size]
    return bits.astype(bool)


@register(Op.GroupNonUniformBallotBitCount)
def _ballot_bit_count(ctx, inst):
    _check_scope(ctx, inst)
    op = inst.literals[0]
    bits = _ballot_bools(ctx, ctx.get(inst.args[1]))
    own = (ctx.lanes.local_index % ctx.lanes.subgroup_size)[:, None]
    j = np.arange(bits.shape[1])[None, :]
    if op == GroupOperation.Reduce:
        sel = bits
    elif op == GroupOperation.InclusiveScan:
        sel = bits & (j <= own)
    elif op == GroupOperation.ExclusiveScan:
        sel = bits & (j < own)
    else:
        ctx.unsupported(f"OpGroupNonUniformBallotBitCount with GroupOperation {op}")
    ctx.set(inst.result_id, sel.sum(axis=1).astype(inst.dtype))


@register(Op.GroupNonUniformBallotFindLSB, Op.GroupNonUniformBallotFindMSB)
def _ballot_find(ctx, inst):
    _check_scope(ctx, inst)
    bits = _ballot_bools(ctx, ctx.get(inst.args[1]))
    if inst.opcode == Op.GroupNonUniformBallotFindLSB:
        idx = np.argmax(bits, axis=1)
    else:
        idx = bits.shape[1] - 1 - np.argmax(bits[:, ::-1], axis=1)
    ctx.set(inst.result_id, np.where(bits.any(axis=1), idx, -1).astype(np.int64).astype(inst.dtype))


SHUFFLES = {
    Op.GroupNonUniformShuffle: lambda own, x: x,
    Op.GroupNonUniformShuffleXor: lambda own, x: own ^ x,
    Op.GroupNonUniformShuffleUp: lambda own, x: own - x,
    Op.GroupNonUniformShuffleDown: lambda own, x: own + x,
    Op.GroupNonUniformQuadBroadcast: lambda own, x: (own & ~3) + x,
    Op.GroupNonUniformQuadSwap: lambda own, x: own ^ (x + 1),
}


def _shuffle(rule):
    def handler(ctx, inst):
        _check_scope(ctx, inst)
        own = (ctx.lanes.local_index % ctx.lanes.subgroup_size).astype(np.int64)
        x = np.asarray(as_unsigned(ctx.get(inst.args[2]))).astype(np.int64)
        ctx.set(inst.result_id, _read_lane(ctx, ctx.get(inst.args[1]), rule(own, x)))
    return handler


for _op, _rule in SHUFFLES.items():
    register(_op)(_shuffle(_rule))


@register(Op.GroupNonUniformRotateKHR)
def _rotate(ctx, inst):
    _check_scope(ctx, inst)
    s = ctx.lanes.subgroup_size
    cluster = ctx.const_int(inst.args[3]) if len(inst.args) > 3 else s
    own = (ctx.lanes.local_index % s).astype(np.int64)
    delta = np.asarray(as_unsigned(ctx.get(inst.args[2]))).astype(np.int64)
    source = own - own % cluster + (own + delta) % cluster
    ctx.set(inst.result_id, _read_lane(ctx, ctx.get(inst.args[1]), source))
