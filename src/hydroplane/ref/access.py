"""Typed loads and stores through pointers: whole values of any type, gathered per lane.

`load_value(ctx, pointer, type)` and `store_value(ctx, pointer, type, value)` act on the active
lanes; `element_offsets` gives the byte offsets of a numeric type's scalars (for handlers that
gather their own shapes, such as cooperative-matrix loads).
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.coopmat.instances import load_element, store_element
from hydroplane.ref.coopmat.matrix import CoopMatError
from hydroplane.ref.layout import array_stride, element_template, member_offsets, value_dtype, value_shape
from hydroplane.ref.memory import PSB
from hydroplane.ref.values import Pointer, merge, zeros_of
from hydroplane.spirv import types as T


def load_value(ctx, ptr: Pointer, t: T.Type):
    """The value of type `t` at `ptr` in the active lanes (zeros elsewhere; shared when uniform)."""
    if ptr.elem_of is not None:
        return _load_matrix_element(ctx, ptr)
    if ptr.region is None:
        if ptr.var.value is None:
            return zeros_of(t, 1)
        return ptr.var.value
    lanes = ctx.active_lanes()
    if not len(lanes):
        return zeros_of(t, 1) if value_shape(t) is not None or isinstance(t, T.Struct) else None
    region = ptr.region
    if ptr.offset.shape[0] == 1 and region.row_of_lane is None:
        return _read(ctx, region, 0, ptr.offset, t, ptr.mstride, ptr.row_major, lanes[:1], ptr.vstride)
    offs = ptr.offset[lanes] if ptr.offset.shape[0] > 1 else np.broadcast_to(ptr.offset, lanes.shape)
    value = _read(ctx, region, region.rows(lanes), offs, t, ptr.mstride, ptr.row_major, lanes, ptr.vstride)
    return _spread(value, lanes, ctx.lanes.count)


def store_value(ctx, ptr: Pointer, t: T.Type, value) -> None:
    """Store `value` (type `t`) at `ptr` in the active lanes."""
    if ptr.elem_of is not None:
        return _store_matrix_element(ctx, ptr, value)
    if ptr.region is None:
        cell = ptr.var
        if cell.value is None or int(np.count_nonzero(ctx.mask)) == cell.lanes:
            cell.value = value
        else:
            mask = ctx.mask
            if isinstance(t, T.CoopMatrix):
                mask = ctx.instance_mask(t.scope)
            cell.value = merge(mask, value, cell.value)
        return
    lanes = ctx.active_lanes()
    if not len(lanes):
        return
    region = ptr.region
    offs = ptr.offset[lanes] if ptr.offset.shape[0] > 1 else np.broadcast_to(ptr.offset, lanes.shape)
    _write(ctx, region, region.rows(lanes), offs, t, ptr.mstride, ptr.row_major, _take(value, lanes), lanes,
           ptr.vstride)


def _matrix_of(ptr: Pointer):
    t = ptr.elem_of
    return ptr.var.value if ptr.var.value is not None else zeros_of(t, 1)


def _load_matrix_element(ctx, ptr: Pointer):
    """Each lane's element `ptr.offset` of a cooperative-matrix register variable (the lanes' view)."""
    try:
        return load_element(ctx, ptr, _matrix_of(ptr), ptr.elem_of)
    except CoopMatError as exc:
        ctx.diagnose("out-of-bounds", f"a load through an element pointer into {ptr.var.name}: {exc}")
        return np.zeros(ctx.lanes.count, ptr.elem_of.component.dtype)  # collect mode: the load reads zeros


def _store_matrix_element(ctx, ptr: Pointer, value) -> None:
    """Each active lane's element `ptr.offset` of a cooperative-matrix register variable set to its value."""
    try:
        ptr.var.value = store_element(ctx, ptr, _matrix_of(ptr), ptr.elem_of, value)
    except CoopMatError as exc:  # collect mode: the store is dropped
        ctx.diagnose("out-of-bounds", f"a store through an element pointer into {ptr.var.name}: {exc}")


def _take(value, lanes):
    if isinstance(value, tuple):
        return tuple(_take(v, lanes) for v in value)
    if isinstance(value, Pointer):
        return value.offset if value.offset.shape[0] == 1 else value.offset[lanes]
    return value if value.shape[0] == 1 else value[lanes]


def _spread(value, lanes: np.ndarray, count: int):
    """A value gathered for `lanes` placed in a full-width value (other lanes zero)."""
    if len(lanes) == count:
        return value
    if isinstance(value, tuple):
        return tuple(_spread(v, lanes, count) for v in value)
    if isinstance(value, Pointer):
        return value.with_offset(_spread(value.offset, lanes, count), value.type)
    out = np.zeros((count,) + value.shape[1:], value.dtype)
    out[lanes] = value
    return out


def element_offsets(t: T.Type, mstride=None, row_major=False) -> np.ndarray:
    return element_template(t, mstride, row_major)


def _element_addresses(t, rows, offs, lanes, mstride, row_major, vstride):
    """Rows, byte offsets and lanes of every element of a scalar/vector/matrix `t`, per lane."""
    tmpl = element_template(t, mstride, row_major, vstride)
    n = offs.shape[0]
    extra = (1,) * tmpl.ndim
    o = offs.reshape((n,) + extra) + tmpl
    r = rows if np.ndim(rows) == 0 else np.reshape(rows, (n,) + extra)
    return r, o, lanes.reshape((lanes.shape[0],) + extra)


def _read(ctx, region, rows, offs, t, mstride, row_major, lanes, vstride=None):
    if isinstance(t, T.Pointer):
        addr = ctx.memory.read(region, rows, offs, np.dtype(np.uint64), lanes)
        return Pointer(PSB, addr.astype(np.int64), ctx.program.pointee(t), elem_stride=t.stride)
    if value_shape(t) is not None:
        r, o, ln = _element_addresses(t, rows, offs, lanes, mstride, row_major, vstride)
        return ctx.memory.read(region, r, o, value_dtype(t), ln)
    if isinstance(t, T.Struct):
        return tuple(_read(ctx, region, rows, offs + off, m.type, m.matrix_stride, m.row_major, lanes)
                     for m, off in zip(t.members, member_offsets(t)))
    if isinstance(t, T.Array) and t.length is not None:
        stride = array_stride(t)
        return tuple(_read(ctx, region, rows, offs + i * stride, t.element, mstride, row_major, lanes)
                     for i in range(t.length))
    ctx.diagnose("unsupported", f"a load of type {t}")


def _write(ctx, region, rows, offs, t, mstride, row_major, value, lanes, vstride=None):
    if isinstance(t, T.Pointer):
        ctx.memory.write(region, rows, offs, np.asarray(value).astype(np.uint64), lanes)
        return
    if value_shape(t) is not None:
        r, o, ln = _element_addresses(t, rows, offs, lanes, mstride, row_major, vstride)
        ctx.memory.write(region, r, o, np.asarray(value).astype(value_dtype(t), copy=False), ln)
        return
    if isinstance(t, T.Struct):
        for i, (m, off) in enumerate(zip(t.members, member_offsets(t))):
            _write(ctx, region, rows, offs + off, m.type, m.matrix_stride, m.row_major, value[i], lanes)
        return
    if isinstance(t, T.Array) and t.length is not None:
        stride = array_stride(t)
        for i in range(t.length):
            _write(ctx, region, rows, offs + i * stride, t.element, mstride, row_major, value[i], lanes)
        return
    ctx.diagnose("unsupported", f"a store of type {t}")
