"""Opcode handlers for NV2 tensor addressing: OpCreateTensorLayoutNV/ViewNV and their setters (values
are per-lane object arrays of immutable `TensorLayout`/`TensorView`), and
OpCooperativeMatrixLoadTensorNV/StoreTensorNV through the interpreter's Memory (bounds, races),
with the semantics of coopmat.tensor. Layouts must agree across a scope instance's active lanes.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.coopmat import tensor as tt
from hydroplane.ref.coopmat.instances import CM, ScopeLanes, distribution, full, owner_lanes, per_instance
from hydroplane.ref.coopmat.ops import coop_handler
from hydroplane.ref.ops import Op
from hydroplane.ref.ops_memory import check_uniform
from hydroplane.spirv.enums import TensorAddressingOperands


def _objects(value) -> np.ndarray:
    return value if isinstance(value, np.ndarray) and value.dtype == object else np.array([value], dtype=object)


def _lane_map(ctx, build, *values) -> np.ndarray:
    """Apply `build(obj, *ints)` per lane (memoised per distinct input), as an object array."""
    arrays = [np.asarray(v) if not isinstance(v, np.ndarray) or v.dtype != object else v for v in values]
    width = max(a.shape[0] for a in arrays)
    out = np.empty(width, dtype=object)
    seen = {}
    for lane in range(width):
        key = tuple(a[lane if a.shape[0] > 1 else 0] for a in arrays)
        key = tuple(k if isinstance(k, (tt.TensorLayout, tt.TensorView)) else int(k) for k in key)
        if key not in seen:
            seen[key] = build(*key)
        out[lane] = seen[key]
    return out


def _opaque_constants(ctx, t) -> list[int]:
    return [ctx.const_int(ident) for ident in t.operands]


@coop_handler(Op.CreateTensorLayoutNV)
def _create_layout(ctx, inst):
    dim, clamp = _opaque_constants(ctx, inst.type)
    ctx.set(inst.result_id, _objects(tt.TensorLayout.create(dim, clamp)))


@coop_handler(Op.CreateTensorViewNV)
def _create_view(ctx, inst):
    dim, has_dims, *perm = _opaque_constants(ctx, inst.type)
    ctx.set(inst.result_id, _objects(tt.TensorView.create(dim, bool(has_dims), tuple(perm))))


LAYOUT_SETTERS = {
    Op.TensorLayoutSetDimensionNV: lambda o, *v: o.with_dimension(*v),
    Op.TensorLayoutSetStrideNV: lambda o, *v: o.with_stride(*v),
    Op.TensorLayoutSliceNV: lambda o, *v: o.slice(*v),
    Op.TensorLayoutSetClampValueNV: lambda o, *v: o.with_clamp_value(*v),
    Op.TensorLayoutSetBlockSizeNV: lambda o, *v: o.with_block_size(*v),
    Op.TensorViewSetDimensionNV: lambda o, *v: o.with_dimension(*v),
    Op.TensorViewSetStrideNV: lambda o, *v: o.with_stride(*v),
    Op.TensorViewSetClipNV: lambda o, *v: o.with_clip(*v),
}


@coop_handler(*LAYOUT_SETTERS)
def _set_layout(ctx, inst):
    build = LAYOUT_SETTERS[inst.opcode]
    obj = _objects(ctx.get(inst.args[0]))
    ctx.set(inst.result_id, _lane_map(ctx, build, obj, *(ctx.get(i) for i in inst.args[1:])))


def _tensor_operands(ctx, inst, first_id_operand: int):
    """(layout id, view id or None) of LoadTensorNV/StoreTensorNV, refusing decode functions."""
    kinds = [o.kind for o in inst.operands]
    at = kinds.index("TensorAddressingOperands")
    mask = inst.operands[at].value
    params = [o.value for o in inst.operands[at + 1:]]
    if mask & ~int(TensorAddressingOperands.TensorView):
        ctx.unsupported("LoadTensorNV with DecodeFunc/DecodeVectorFunc is not implemented by the reference executor")
    return inst.operands[first_id_operand].value, (params[0] if mask & TensorAddressingOperands.TensorView else None)


def _tensor_plans(ctx, sc, inst_idx, first, layout_id, view_id, t: CM, for_store: bool):
    layouts = _objects(ctx.get(layout_id))
    views = _objects(ctx.get(view_id)) if view_id is not None else None
    plans = []
    for k, _lane in zip(inst_idx, first):
        layout = per_instance_object(ctx, sc, layouts, k, "the tensor layout")
        view = per_instance_object(ctx, sc, views, k, "the tensor view") if views is not None else None
        plans.append(tt.tensor_addresses(layout, view, t.rows, t.cols, for_store))
    return plans


def per_instance_object(ctx, sc: ScopeLanes, objects: np.ndarray, instance: int, what: str):
    if objects.shape[0] == 1:
        return objects[0]
    lanes = sc.first_lane[instance] + np.flatnonzero(sc.by_instance(ctx.mask)[instance])
    values = {objects[lane] for lane in lanes}
    if len(values) > 1:
        ctx.diagnose("non-uniform", f"{what} must be the same in every invocation of a scope instance", lanes)
    return objects[lanes[0]]


@coop_handler(Op.CooperativeMatrixLoadTensorNV)
def _load_tensor(ctx, inst):
    t = inst.type
    check_uniform(ctx, t.scope, inst.name)
    sc = ScopeLanes(ctx, t.scope)
    out = full(ctx.get(inst.args[1]), sc.count).astype(t.component.dtype, copy=True)
    inst_idx, first = sc.first_active(ctx.mask)
    if len(inst_idx):
        ptr = ctx.get(inst.args[0])
        layout_id, view_id = _tensor_operands(ctx, inst, 2)
        base = per_instance(ctx, sc, ptr.offset, "the tensor pointer")
        owners = owner_lanes(sc, distribution(ctx), t.rows, t.cols)
        layouts = _objects(ctx.get(layout_id))
        plans = _tensor_plans(ctx, sc, inst_idx, first, layout_id, view_id, t, False)
        for k, lane, plan in zip(inst_idx, first, plans):
            if plan.access.any():
                offs = int(base[k]) + plan.index[plan.access] * t.component.dtype.itemsize
                rows = ptr.region.rows(np.array([lane]))
                rows = rows[0] if isinstance(rows, np.ndarray) else rows
                out[k][plan.access] = ctx.memory.read(ptr.region, rows, offs, t.component.dtype,
                                                      sc.first_lane[k] + owners[plan.access])
            if plan.clamped.any():
                layout = per_instance_object(ctx, sc, layouts, k, "the tensor layout")
                size = t.component.dtype.itemsize
                bits = np.array(layout.clamp_value & ((1 << 8 * size) - 1), dtype=f"u{size}")
                out[k][plan.clamped] = bits.view(t.component.dtype)
    ctx.set(inst.result_id, out)


@coop_handler(Op.CooperativeMatrixStoreTensorNV)
def _store_tensor(ctx, inst):
    t = ctx.type_of(inst.args[1])
    check_uniform(ctx, t.scope, inst.name)
    sc = ScopeLanes(ctx, t.scope)
    inst_idx, first = sc.first_active(ctx.mask)
    if not len(inst_idx):
        return
    ptr = ctx.get(inst.args[0])
    mats = full(ctx.get(inst.args[1]), sc.count)
    layout_id, view_id = _tensor_operands(ctx, inst, 2)
    base = per_instance(ctx, sc, ptr.offset, "the tensor pointer")
    owners = owner_lanes(sc, distribution(ctx), t.rows, t.cols)
    for k, lane, plan in zip(inst_idx, first, _tensor_plans(ctx, sc, inst_idx, first, layout_id, view_id, t, True)):
        if plan.access.any():
            offs = int(base[k]) + plan.index[plan.access] * t.component.dtype.itemsize
            rows = ptr.region.rows(np.array([lane]))
            rows = rows[0] if isinstance(rows, np.ndarray) else rows
            ctx.memory.write(ptr.region, rows, offs, mats[k][plan.access].astype(t.component.dtype),
                             sc.first_lane[k] + owners[plan.access])
