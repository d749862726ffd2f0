"""Memory instructions: loads, stores, access chains, array length, copies, atomics and barriers."""

from __future__ import annotations

import numpy as np

from hydroplane.ref.access import load_value, store_value
from hydroplane.ref.layout import array_stride, matrix_stride, member_offsets, size_of, value_dtype
from hydroplane.ref.memory import PSB, PSB_REGION_SHIFT, SUBGROUP_ORDERED
from hydroplane.ref.ops import Op, register
from hydroplane.ref.values import Pointer, as_signed, as_unsigned, reinterpret
from hydroplane.ref.visibility import BUFFER_STORAGE, DEVICE_SCOPES
from hydroplane.spirv import types as T
from hydroplane.spirv.enums import Scope


@register(Op.Load)
def _load(ctx, inst):
    ptr = ctx.get(inst.args[0])
    ctx.set(inst.result_id, load_value(ctx, ptr, inst.type))


@register(Op.Store)
def _store(ctx, inst):
    ptr = ctx.get(inst.args[0])
    t = ctx.type_of(inst.args[1])
    store_value(ctx, ptr, t, ctx.get(inst.args[1]))


@register(Op.CopyMemory)
def _copy_memory(ctx, inst):
    target, source = ctx.get(inst.args[0]), ctx.get(inst.args[1])
    store_value(ctx, target, target.type, load_value(ctx, source, source.type))


def _index(v) -> np.ndarray:
    return as_signed(np.asarray(v)).astype(np.int64)


def chain(ctx, base: Pointer, index_ids, result_type: T.Pointer) -> Pointer:
    """Walk struct members, array elements, vector components and matrix columns from `base`."""
    t, off = base.type, base.offset
    mstride, row_major, vstride = base.mstride, base.row_major, base.vstride
    for ident in index_ids:
        if isinstance(t, T.Struct):
            i = ctx.const_int(ident)
            off = off + member_offsets(t)[i]
            member = t.members[i]
            mstride, row_major, t = member.matrix_stride, member.row_major, member.type
        elif isinstance(t, T.Array):
            off = off + _index(ctx.get(ident)) * array_stride(t)
            t = t.element
        elif isinstance(t, T.Vector):
            off = off + _index(ctx.get(ident)) * (vstride or t.component.dtype.itemsize)
            t, vstride = t.component, None
        elif isinstance(t, T.Matrix):
            if row_major:  # column c starts at c * item; its components are MatrixStride apart
                off = off + _index(ctx.get(ident)) * t.column.component.dtype.itemsize
                vstride = matrix_stride(t, mstride, row_major)
            else:
                off = off + _index(ctx.get(ident)) * matrix_stride(t, mstride)
            t = t.column
        else:
            ctx.diagnose("invalid", f"access chain indexes into {t}")
    stride = result_type.stride if isinstance(result_type, T.Pointer) else None
    return Pointer(base.region, off, t, None, mstride, row_major, stride, vstride)


@register(Op.AccessChain, Op.InBoundsAccessChain)
def _access_chain(ctx, inst):
    base = ctx.get(inst.args[0])
    if base.region is None:
        return ctx.set(inst.result_id, _matrix_element_pointer(ctx, base, inst.args[1:]))
    ctx.set(inst.result_id, chain(ctx, base, inst.args[1:], inst.type))


def _matrix_element_pointer(ctx, base: Pointer, index_ids) -> Pointer:
    """`m[i]` on a cooperative-matrix register variable: a pointer whose offset is the element index."""
    if not isinstance(base.type, T.CoopMatrix) or base.elem_of is not None:
        ctx.unsupported(f"an access chain into a register variable of type {base.type} "
                        f"(only one index into a cooperative matrix is supported)")
    if len(index_ids) != 1:
        ctx.diagnose("invalid", f"an access chain into a cooperative matrix takes one index, not {len(index_ids)}")
    index = _index(ctx.get(index_ids[0])).reshape(-1)
    return Pointer(None, index, base.type.component, var=base.var, elem_of=base.type)


@register(Op.PtrAccessChain, Op.InBoundsPtrAccessChain)
def _ptr_access_chain(ctx, inst):
    base = ctx.get(inst.args[0])
    stride = base.elem_stride
    if stride is None:
        stride = size_of(base.type)
    moved = base.with_offset(base.offset + _index(ctx.get(inst.args[1])) * stride, base.type)
    ctx.set(inst.result_id, chain(ctx, moved, inst.args[2:], inst.type))


@register(Op.ArrayLength)
def _array_length(ctx, inst):
    ptr = ctx.get(inst.args[0])
    member = inst.literals[0]
    st = ptr.type
    arr = st.members[member].type
    start = ptr.offset + member_offsets(st)[member]
    length = (ptr.region.nbytes - start) // array_stride(arr)
    ctx.set(inst.result_id, np.maximum(length, 0).astype(inst.dtype))


@register(Op.ConvertUToPtr)
def _convert_u_to_ptr(ctx, inst):
    addr = as_unsigned(ctx.get(inst.args[0])).astype(np.int64)
    ctx.set(inst.result_id, Pointer(PSB, addr, ctx.program.pointee(inst.type), elem_stride=inst.type.stride))


@register(Op.ConvertPtrToU)
def _convert_ptr_to_u(ctx, inst):
    ptr = ctx.get(inst.args[0])
    if ptr.region is not PSB:
        ctx.unsupported(f"OpConvertPtrToU of a {getattr(ptr.region, 'storage', 'register')} pointer")
    ctx.set(inst.result_id, ptr.offset.astype(np.uint64).astype(inst.dtype))


# -- atomics ---------------------------------------------------------------------------------

ATOMIC_RMW = {
    Op.AtomicExchange: ("any", lambda old, v: v),
    Op.AtomicIAdd: ("any", np.add),
    Op.AtomicISub: ("any", np.subtract),
    Op.AtomicSMin: ("s", np.minimum),
    Op.AtomicUMin: ("u", np.minimum),
    Op.AtomicSMax: ("s", np.maximum),
    Op.AtomicUMax: ("u", np.maximum),
    Op.AtomicAnd: ("any", np.bitwise_and),
    Op.AtomicOr: ("any", np.bitwise_or),
    Op.AtomicXor: ("any", np.bitwise_xor),
    Op.AtomicFAddEXT: ("any", np.add),
    Op.AtomicFMinEXT: ("any", np.fmin),
    Op.AtomicFMaxEXT: ("any", np.fmax),
}
_VIEW = {"s": as_signed, "u": as_unsigned, "any": lambda v: v}


def _atomic(ctx, ptr: Pointer, dtype, update, values: list):
    """Apply `update(old, *values) -> new` lane by lane in lane order; return the old values."""
    lanes = ctx.active_lanes()
    out = np.zeros(ctx.lanes.count, dtype)
    if not len(lanes):
        return out
    region = ptr.region
    offs = ptr.offset[lanes] if ptr.offset.shape[0] > 1 else np.broadcast_to(ptr.offset, lanes.shape)
    rows = np.broadcast_to(region.rows(lanes), lanes.shape)
    vals = [np.broadcast_to(v, (ctx.lanes.count,))[lanes] if v.shape[0] > 1 else np.broadcast_to(v, lanes.shape)
            for v in values]
    mem = ctx.memory
    if region is not PSB:
        bad = mem._in_bounds(region, offs, dtype.itemsize, lanes, "atomic")
        if bad is not None:
            keep = ~bad
            lanes, offs, rows, vals = lanes[keep], offs[keep], rows[keep], [v[keep] for v in vals]
    if mem.visibility is not None and (region is PSB or region.storage in BUFFER_STORAGE):
        _hand_over(ctx, mem, region, lanes, offs)
    key = rows.astype(np.int64) * (1 << 40) + offs
    if len(np.unique(key)) == len(key):
        old = mem.read(region, rows, offs, dtype, None) if region is not PSB else mem.read(PSB, 0, offs, dtype, lanes)
        new = update(old, *vals)
        _atomic_write(mem, region, rows, offs, np.asarray(new, dtype), lanes)
        out[lanes] = old
        return out
    for i, lane in enumerate(lanes):
        r, o = rows[i:i + 1], offs[i:i + 1]
        old = mem.read(region, r, o, dtype, None) if region is not PSB else mem.read(PSB, 0, o, dtype, lanes[i:i + 1])
        new = update(old, *(v[i:i + 1] for v in vals))
        _atomic_write(mem, region, r, o, np.asarray(new, dtype), lanes[i:i + 1])
        out[lane] = old[0]
    return out


def _hand_over(ctx, mem, region, lanes, offs) -> None:
    """The atomic's part in the order of buffer memory between workgroups (ref.visibility), lane by lane in lane
    order (the order the executor serialises them in). Every atomic's semantics are its third operand."""
    inst = ctx.inst
    semantics = ctx.const_int(inst.args[2])
    reads, writes = inst.opcode != Op.AtomicStore, inst.opcode != Op.AtomicLoad
    for lane, offset in zip(lanes.tolist(), offs.tolist()):
        target = region
        if region is PSB:
            which = (offset >> PSB_REGION_SHIFT) - 1
            if not 0 <= which < len(mem.psb_regions):
                continue
            target, offset = mem.psb_regions[which], offset & ((1 << PSB_REGION_SHIFT) - 1)
        mem.visibility.atomic(target, offset, lane, semantics, reads, writes, reads and writes)


def _atomic_write(mem, region, rows, offs, values, lanes):
    if region is PSB:
        mem.write(PSB, 0, offs, values, lanes)
        return
    mem._scatter(region, rows, offs, values)
    if region.track:
        b = (offs.reshape(-1, 1) + np.arange(values.dtype.itemsize)).reshape(-1)
        region.written[np.repeat(np.broadcast_to(rows, offs.shape).reshape(-1), values.dtype.itemsize), b] = True


def _atomic_rmw(how, fn):
    def handler(ctx, inst):
        ptr = ctx.get(inst.args[0])
        dt = inst.dtype
        value = reinterpret(ctx.get(inst.args[3]), dt)
        view = _VIEW[how]

        def update(old, v):
            with np.errstate(all="ignore"):
                return reinterpret(np.asarray(fn(view(old), view(v))), dt)
        ctx.set(inst.result_id, _atomic(ctx, ptr, dt, update, [value]))
    return handler


for _op, (_how, _fn) in ATOMIC_RMW.items():
    register(_op)(_atomic_rmw(_how, _fn))


@register(Op.AtomicIIncrement, Op.AtomicIDecrement)
def _atomic_step(ctx, inst):
    ptr = ctx.get(inst.args[0])
    dt = inst.dtype
    step = 1 if inst.opcode == Op.AtomicIIncrement else -1
    one = np.array([step]).astype(dt)
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, _atomic(ctx, ptr, dt, lambda old, v: old + v, [one]))


@register(Op.AtomicCompareExchange)
def _atomic_compare_exchange(ctx, inst):
    ptr = ctx.get(inst.args[0])
    dt = inst.dtype
    value = reinterpret(ctx.get(inst.args[4]), dt)
    comparator = reinterpret(ctx.get(inst.args[5]), dt)
    ctx.set(inst.result_id, _atomic(ctx, ptr, dt, lambda old, v, c: np.where(old == c, v, old), [value, comparator]))


@register(Op.AtomicLoad)
def _atomic_load(ctx, inst):
    ptr = ctx.get(inst.args[0])
    dt = inst.dtype
    ctx.set(inst.result_id, _atomic(ctx, ptr, dt, lambda old: old, []))


@register(Op.AtomicStore)
def _atomic_store(ctx, inst):
    ptr = ctx.get(inst.args[0])
    dt = value_dtype(ptr.type)
    value = reinterpret(ctx.get(inst.args[3]), dt)
    _atomic(ctx, ptr, dt, lambda old, v: v, [value])


# -- barriers --------------------------------------------------------------------------------

def check_uniform(ctx, scope: int, what: str) -> None:
    """Diagnose when part of a workgroup or subgroup (by Scope) is active, part not."""
    lanes = ctx.lanes
    if lanes.virtual:
        return
    if scope == Scope.Workgroup:
        active, valid = lanes.by_workgroup(ctx.mask), lanes.by_workgroup(lanes.valid)
    elif scope == Scope.Subgroup:
        active, valid = lanes.by_subgroup(ctx.mask), lanes.by_subgroup(lanes.valid)
    else:
        return
    some = active.any(axis=1)
    missing = valid & ~active & some[:, None]
    if missing.any():
        name = "workgroup" if scope == Scope.Workgroup else "subgroup"
        missing_lanes = np.flatnonzero(missing.reshape(-1))
        ctx.diagnose("non-uniform", f"{what} reached in non-uniform control flow: "
                     f"{len(missing_lanes)} invocations of the {name} did not reach it (listed)", missing_lanes)


def _device_fence(ctx, scope: int, semantics_id: int) -> None:
    """A barrier's or fence's release and acquire of buffer memory at device scope (ref.visibility)."""
    if ctx.memory.visibility is not None and scope in DEVICE_SCOPES:
        ctx.memory.visibility.fence(ctx.active_lanes(), ctx.const_int(semantics_id))


@register(Op.ControlBarrier)
def _control_barrier(ctx, inst):
    scope = ctx.const_int(inst.args[0])
    check_uniform(ctx, scope, "OpControlBarrier")
    _device_fence(ctx, ctx.const_int(inst.args[1]), inst.args[2])
    if scope in (Scope.Workgroup, Scope.Device, Scope.CrossDevice):
        rows = np.flatnonzero(ctx.lanes.by_workgroup(ctx.mask).any(axis=1))
        for region in ctx.memory.tracked_regions:
            region.reset_epoch(rows)
    elif scope == Scope.Subgroup:
        # an access by a subgroup that met here is now ordered for every invocation of that
        # subgroup (recorded as SUBGROUP_ORDERED - subgroup), still racing with other subgroups;
        # accesses recorded for several readers (-2) cannot be attributed and stay
        lanes = ctx.lanes
        met = lanes.by_subgroup(ctx.mask).any(axis=1).reshape(lanes.workgroups, lanes.subgroups_per_workgroup)
        for region in ctx.memory.tracked_regions:
            for table in (region.writer, region.reader):
                owner = np.where(table >= 0, table // lanes.subgroup_size, 0)
                ordered = (table >= 0) & np.take_along_axis(met, owner, axis=1)
                table[ordered] = SUBGROUP_ORDERED - owner[ordered]


@register(Op.MemoryBarrier)
def _memory_barrier(ctx, inst):
    _device_fence(ctx, ctx.const_int(inst.args[0]), inst.args[1])
