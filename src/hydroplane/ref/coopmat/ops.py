"""Opcode handlers for cooperative matrices (KHR, legacy NV, NV2 workgroup scope and tensors, EXT
maintenance1), registered with the interpreter's op table; the semantics live beside it in coopmat/.

A matrix value is (instances, rows, cols); lane-level values are (lanes, ...); `instances.ScopeLanes`
converts between the two. Operands the spec requires to be the same across a scope instance (pointers, strides,
layouts) are read from the instance's active lanes and checked; tangled instructions (load, store,
MulAdd, Reduce, conversions of Use, tensor load/store) first check that the whole scope instance
reached them (the non-uniform diagnostic, seed 002).
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.coopmat import arith as ar
from hydroplane.ref.coopmat import matrix as cm
from hydroplane.ref.coopmat import memory as mm
from hydroplane.ref.coopmat import reduce as rd
from hydroplane.ref.coopmat.instances import CM, ScopeLanes, distribution, full, lane_index, owner_lanes, per_instance
from hydroplane.ref.layout import size_of, value_dtype
from hydroplane.ref.ops import HANDLERS, Op, register
from hydroplane.ref.ops_memory import check_uniform
from hydroplane.ref.values import as_signed
from hydroplane.spirv.enums import FPRoundingMode


def coop_handler(*opcodes, type=None):
    """Register a handler; a semantic error (CoopMatError) becomes an 'invalid' diagnostic."""

    def wrap(fn):
        def handler(ctx, inst):
            try:
                fn(ctx, inst)
            except cm.CoopMatError as exc:
                ctx.diagnose("invalid", str(exc))
        handler.__name__ = fn.__name__
        register(*opcodes, type=type)(handler)
        return fn
    return wrap


# -- load / store (KHR, NV) -------------------------------------------------------------------------

def _element_offsets(ctx, sc, inst_idx, ptr, t: CM, layout: mm.Layout, stride) -> np.ndarray:
    base = per_instance(ctx, sc, ptr.offset, "the cooperative-matrix pointer")[inst_idx].astype(np.int64)
    stride = as_signed(np.asarray(stride)).astype(np.int64)[inst_idx]
    if len(stride) and (stride == stride[0]).all():  # one stride (the usual case): one (rows, cols) table
        offsets = mm.element_offsets(t.rows, t.cols, layout, int(stride[0]), size_of(ptr.type),
                                     t.component.dtype.itemsize)
    else:
        offsets = mm.element_offsets(t.rows, t.cols, layout, stride, size_of(ptr.type), t.component.dtype.itemsize)
    return base[:, None, None] + offsets


def _region_rows(ptr, lanes: np.ndarray):
    rows = ptr.region.rows(lanes)
    return rows[:, None, None] if isinstance(rows, np.ndarray) else rows


def _holders(ctx, sc, inst_idx: np.ndarray, t: CM) -> np.ndarray:
    """(instances, rows, cols): the lane holding each element of each active instance. With every
    instance active it is one array per matrix shape and scope for the batch (never changed), so
    memory's per-lanes bookkeeping (race tracking) is reused."""
    if len(inst_idx) != sc.count:
        return sc.first_lane[inst_idx][:, None, None] + owner_lanes(sc, distribution(ctx), t.rows, t.cols)
    kept = ctx.__dict__.setdefault("_coop_holders", {})
    key = (t.scope, t.rows, t.cols)
    if key not in kept:
        kept[key] = sc.first_lane[:, None, None] + owner_lanes(sc, distribution(ctx), t.rows, t.cols)
    return kept[key]


def _check_alignment(ctx, sc, inst_idx, ptr, t: CM, layout: mm.Layout, stride) -> None:
    """Vulkan (VUID-RuntimeSpirv-OpCooperativeMatrixLoadKHR-08986): the pointer and the stride of a KHR load
    or store are aligned to the lesser of 16 bytes and the natural size of a row (row-major) or column."""
    line = (t.cols if layout == mm.Layout.RowMajorKHR else t.rows) * t.component.dtype.itemsize
    align = min(16, line)
    base = per_instance(ctx, sc, ptr.offset, "the cooperative-matrix pointer")[inst_idx].astype(np.int64)
    step = as_signed(np.asarray(stride)).astype(np.int64)[inst_idx] * size_of(ptr.type)
    bad = (base % align != 0) | (step % align != 0)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        ctx.diagnose("misaligned", f"{t} {layout.name} at byte {int(base[k])} with a stride of {int(step[k])} bytes: "
                     f"Vulkan requires both to be multiples of {align} bytes (a {line}-byte "
                     f"{'row' if layout == mm.Layout.RowMajorKHR else 'column'}, at most 16)",
                     sc.first_lane[inst_idx[bad]])


def load_matrix(ctx, ptr, t: CM, layout: mm.Layout, stride_value, aligned: bool = False) -> np.ndarray:
    """(instances, rows, cols) loaded through `ptr` by every active instance (others zero); `aligned`: check
    the KHR alignment rule."""
    sc = ScopeLanes(ctx, t.scope)
    inst_idx, first = sc.first_active(ctx.mask)
    if not len(inst_idx):
        return np.zeros((sc.count, t.rows, t.cols), t.component.dtype)
    stride = per_instance(ctx, sc, stride_value, "the cooperative-matrix stride")
    if aligned and (ctx.options or {}).get("check_alignment", True):
        _check_alignment(ctx, sc, inst_idx, ptr, t, layout, stride)
    offs = _element_offsets(ctx, sc, inst_idx, ptr, t, layout, stride)
    lanes = _holders(ctx, sc, inst_idx, t)
    values = ctx.memory.read(ptr.region, _region_rows(ptr, first), offs, t.component.dtype, lanes)
    if len(inst_idx) == sc.count:
        return values
    out = np.zeros((sc.count, t.rows, t.cols), t.component.dtype)
    out[inst_idx] = values
    return out


def store_matrix(ctx, ptr, t: CM, mats: np.ndarray, layout: mm.Layout, stride_value, aligned: bool = False) -> None:
    sc = ScopeLanes(ctx, t.scope)
    inst_idx, first = sc.first_active(ctx.mask)
    if not len(inst_idx):
        return
    stride = per_instance(ctx, sc, stride_value, "the cooperative-matrix stride")
    if aligned and (ctx.options or {}).get("check_alignment", True):
        _check_alignment(ctx, sc, inst_idx, ptr, t, layout, stride)
    offs = _element_offsets(ctx, sc, inst_idx, ptr, t, layout, stride)
    lanes = _holders(ctx, sc, inst_idx, t)
    values = full(mats, sc.count)[inst_idx].astype(t.component.dtype, copy=False)
    ctx.memory.write(ptr.region, _region_rows(ptr, first), offs, values, lanes)


def _optional_stride(ctx, inst, position: int, t: CM, layout: mm.Layout):
    if len(inst.operands) > position and inst.operands[position].kind == "IdRef":
        return ctx.get(inst.operands[position].value)
    return np.array([t.cols if layout == mm.Layout.RowMajorKHR else t.rows], np.int64)  # tightly packed


@coop_handler(Op.CooperativeMatrixLoadKHR)
def _load_khr(ctx, inst):
    t = inst.type
    check_uniform(ctx, t.scope, inst.name)
    layout = mm.layout_of(ctx.const_int(inst.args[1]))
    stride = _optional_stride(ctx, inst, 2, t, layout)
    ctx.set(inst.result_id, load_matrix(ctx, ctx.get(inst.args[0]), t, layout, stride, aligned=True))


@coop_handler(Op.CooperativeMatrixStoreKHR)
def _store_khr(ctx, inst):
    t = ctx.type_of(inst.args[1])
    check_uniform(ctx, t.scope, inst.name)
    layout = mm.layout_of(ctx.const_int(inst.args[2]))
    stride = _optional_stride(ctx, inst, 3, t, layout)
    store_matrix(ctx, ctx.get(inst.args[0]), t, ctx.get(inst.args[1]), layout, stride, aligned=True)


def _nv_layout(ctx, ident) -> mm.Layout:
    sc_mask = np.asarray(ctx.get(ident)).reshape(-1)
    if not (sc_mask == sc_mask[0]).all():
        raise cm.CoopMatError("ColumnMajor must be the same in every invocation")
    return mm.layout_from_column_major(bool(sc_mask[0]))


@coop_handler(Op.CooperativeMatrixLoadNV)
def _load_nv(ctx, inst):
    t = inst.type
    check_uniform(ctx, t.scope, inst.name)
    layout = _nv_layout(ctx, inst.args[2])
    ctx.set(inst.result_id, load_matrix(ctx, ctx.get(inst.args[0]), t, layout, ctx.get(inst.args[1])))


@coop_handler(Op.CooperativeMatrixStoreNV)
def _store_nv(ctx, inst):
    t = ctx.type_of(inst.args[1])
    check_uniform(ctx, t.scope, inst.name)
    layout = _nv_layout(ctx, inst.args[3])
    store_matrix(ctx, ctx.get(inst.args[0]), t, ctx.get(inst.args[1]), layout, ctx.get(inst.args[2]))


# -- MulAdd, Length -------------------------------------------------------------------------------------

@coop_handler(Op.CooperativeMatrixMulAddKHR)
def _muladd_khr(ctx, inst):
    t = inst.type
    check_uniform(ctx, t.scope, inst.name)
    n = ScopeLanes(ctx, t.scope).count
    a, b, c = (full(ctx.get(i), n) for i in inst.args[:3])
    operands = inst.literals[0] if inst.literals else 0
    if ar.is_float(a.dtype) and ar.is_float(b.dtype):
        a, b = _float64_operand(ctx, a), _float64_operand(ctx, b)
    ctx.set(inst.result_id, ar.muladd(a, b, c, t.component.dtype, operands))


F64_OPERANDS_KEPT = 8


def _float64_operand(ctx, value: np.ndarray) -> np.ndarray:
    """A float MulAdd operand as float64 (exact); the same array object used again (a GEMM's A and B
    tiles meet several MulAdds) reuses its conversion. Values are never changed in place, and the
    batch's context keeps the last few conversions with their arrays, so an id is never reused."""
    kept = ctx.__dict__.setdefault("_float64_operands", [])
    for source, converted in kept:
        if source is value:
            return converted
    converted = value.astype(np.float64)
    kept.append((value, converted))
    if len(kept) > F64_OPERANDS_KEPT:
        kept.pop(0)
    return converted


@coop_handler(Op.CooperativeMatrixMulAddNV)
def _muladd_nv(ctx, inst):
    t = inst.type
    check_uniform(ctx, t.scope, inst.name)
    n = ScopeLanes(ctx, t.scope).count
    a, b, c = (full(ctx.get(i), n) for i in inst.args[:3])
    signed = [x.dtype.kind == "i" for x in (a, b, c)] + [t.component.dtype.kind == "i"]
    operands = sum(bit for bit, s in zip((1, 2, 4, 8), signed) if s)  # legacy NV: the types say it
    ctx.set(inst.result_id, ar.muladd(a, b, c, t.component.dtype, operands))


@coop_handler(Op.CooperativeMatrixLengthKHR, Op.CooperativeMatrixLengthNV)
def _length(ctx, inst):
    t = ctx.type(inst.args[0])
    if ctx.lanes.virtual:  # flat lanes (a PerElementOp/Reduce function); spec constants get real ones
        ctx.diagnose("unsupported", f"{inst.name} in a function applied element by element: its lanes are "
                     f"not invocations, so the number holding the matrix is unknown")
    holders = ScopeLanes(ctx, t.scope).holders
    ctx.set(inst.result_id, np.array([distribution(ctx).length(t.rows, t.cols, holders)], inst.dtype))


# -- composite access ------------------------------------------------------------------------------------

def _plain(ctx, inst) -> None:
    """The interpreter's own handler: composites *of* matrices (arrays, structs) are not ours."""
    HANDLERS[inst.opcode](ctx, inst)


@coop_handler(Op.CompositeExtract, type=CM)
def _composite_extract(ctx, inst):
    t = ctx.type_of(inst.args[0])
    if not isinstance(t, CM):
        return _plain(ctx, inst)
    if len(inst.literals) != 1:
        raise cm.CoopMatError(f"OpCompositeExtract from a cooperative matrix takes one index, got {inst.literals}")
    sc = ScopeLanes(ctx, t.scope)
    mats = full(ctx.get(inst.args[0]), sc.count)
    ctx.set(inst.result_id, sc.to_lanes(cm.extract(mats, inst.literals[0], sc.holders, distribution(ctx))))


@coop_handler(Op.CompositeInsert, type=CM)
def _composite_insert(ctx, inst):
    t = inst.type
    if not isinstance(t, CM):
        return _plain(ctx, inst)
    sc = ScopeLanes(ctx, t.scope)
    mats = full(ctx.get(inst.args[1]), sc.count)
    values = sc.by_instance(np.asarray(ctx.get(inst.args[0])))
    out = cm.insert(mats, values, inst.literals[0], sc.holders, distribution(ctx), sc.by_instance(ctx.mask))
    ctx.set(inst.result_id, out)


@coop_handler(Op.CompositeConstruct, type=CM)
def _composite_construct(ctx, inst):
    t = inst.type
    if not isinstance(t, CM):
        return _plain(ctx, inst)
    if len(inst.args) != 1:
        raise cm.CoopMatError(f"OpCompositeConstruct of a cooperative matrix takes one scalar, got {len(inst.args)}")
    value = np.asarray(ctx.get(inst.args[0]))
    if value.shape[0] == 1:
        ctx.set(inst.result_id, cm.construct(value.reshape(1), t, 1))
        return
    sc = ScopeLanes(ctx, t.scope)
    ctx.set(inst.result_id, cm.construct(sc.by_instance(value), t, sc.holders, distribution(ctx)))


@coop_handler(Op.MatrixTimesScalar, type=CM)
def _matrix_times_scalar(ctx, inst):
    t = inst.type
    sc = ScopeLanes(ctx, t.scope)
    mats = full(ctx.get(inst.args[0]), sc.count)
    scalar = np.asarray(ctx.get(inst.args[1]))
    scalars = scalar.reshape(1) if scalar.shape[0] == 1 else sc.by_instance(scalar)
    ctx.set(inst.result_id, ar.times_scalar(mats, scalars, sc.holders, distribution(ctx)))


# -- conversions -------------------------------------------------------------------------------------------

CONVERSION_NAMES = {
    Op.FConvert: "FConvert", Op.ConvertFToS: "ConvertFToS", Op.ConvertFToU: "ConvertFToU",
    Op.ConvertSToF: "ConvertSToF", Op.ConvertUToF: "ConvertUToF", Op.SConvert: "SConvert", Op.UConvert: "UConvert",
}


def _rounding(ctx, inst) -> FPRoundingMode:
    mode = ctx.program.decoration(inst.result_id, "FPRoundingMode")
    return FPRoundingMode(mode[0]) if mode else FPRoundingMode.RTE


@coop_handler(*CONVERSION_NAMES, type=CM)
def _convert(ctx, inst):
    t = inst.type
    value = ctx.get(inst.args[0])
    ctx.set(inst.result_id, ar.convert(np.asarray(value), CONVERSION_NAMES[inst.opcode], t.component.dtype,
                                       _rounding(ctx, inst)))


@coop_handler(Op.CooperativeMatrixConvertUseEXT)
def _convert_use(ctx, inst):
    t = inst.type
    src = ctx.type_of(inst.args[0])
    check_uniform(ctx, t.scope, inst.name)
    mats = full(ctx.get(inst.args[0]), ScopeLanes(ctx, t.scope).count)
    transpose = ctx.program.decoration(inst.result_id, "CooperativeMatrixTransposeEXT") is not None
    nv2 = "CooperativeMatrixConversionsNV" in ctx.program.capabilities
    if nv2 and not transpose and src.component.dtype != t.component.dtype:
        ctx.set(inst.result_id, ar.convert_nv(mats, src, t))
    else:
        ctx.set(inst.result_id, ar.convert_use(mats, src, t, transpose))


@coop_handler(Op.CooperativeMatrixTransposeNV)
def _transpose_nv(ctx, inst):
    t = inst.type
    check_uniform(ctx, t.scope, inst.name)
    src = ctx.type_of(inst.args[0])
    ctx.set(inst.result_id, ar.transpose_nv(full(ctx.get(inst.args[0]), ScopeLanes(ctx, t.scope).count),
                                            src, t))


# -- Reduce, PerElementOp, GetCoordinate -------------------------------------------------------------------

def _element_call(ctx, function_id: int):
    def call(*args):
        count = len(args[0])
        out = np.asarray(ctx.call(function_id, [np.asarray(a) for a in args], lanes=count))
        if out.shape[:1] == (1,) and count != 1:  # a value the same in every lane (a constant every element took)
            out = np.broadcast_to(out, (count, *out.shape[1:]))
        return out
    return call


@coop_handler(Op.CooperativeMatrixReduceEXT)
def _reduce(ctx, inst):
    t = inst.type
    check_uniform(ctx, t.scope, inst.name)
    src = ctx.type_of(inst.args[0])
    mats = full(ctx.get(inst.args[0]), ScopeLanes(ctx, t.scope).count)
    out = rd.reduce(mats, src, t, inst.literals[0], _element_call(ctx, inst.args[1]))
    ctx.set(inst.result_id, out)


@coop_handler(Op.CooperativeMatrixPerElementOpEXT)
def _per_element(ctx, inst):
    t = inst.type
    sc = ScopeLanes(ctx, t.scope)
    mats = full(ctx.get(inst.args[0]), sc.count)
    func = ctx.program.functions[inst.args[1]]
    row_type, col_type = (value_dtype(p) for p in func.type.params[:2])
    extras = []
    for ident in inst.args[2:]:
        value = np.asarray(ctx.get(ident))
        if isinstance(ctx.type_of(ident), CM):
            extras.append(rd.MatrixOperand(full(value, sc.count)))
        elif value.shape[0] == 1:
            extras.append(rd.LaneOperand(value[0], per="uniform"))
        else:
            extras.append(rd.LaneOperand(sc.by_instance(value), per="lane"))
    call = _element_call(ctx, inst.args[1])

    def func_call(row, col, element, *rest):
        return call(row.astype(row_type), col.astype(col_type), element, *rest)

    ctx.set(inst.result_id, rd.per_element_op(mats, t, func_call, extras, sc.holders, distribution(ctx)))


@coop_handler(Op.CooperativeMatrixGetCoordinateEXT)
def _get_coordinate(ctx, inst):
    t = ctx.type_of(inst.args[0])
    sc = ScopeLanes(ctx, t.scope)
    index = lane_index(ctx, sc, ctx.get(inst.args[1]))
    coords = cm.get_coordinate(index, t.rows, t.cols, sc.holders, sc.count, distribution(ctx))
    ctx.set(inst.result_id, sc.to_lanes(coords).astype(inst.dtype))

