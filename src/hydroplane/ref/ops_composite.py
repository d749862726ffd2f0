"""Composite and vector/matrix instructions: construct, extract, insert, shuffle, dot, matrix products.

Numeric composites are arrays (W, *shape): component i of a vector is v[:, i], column c of a
matrix m[:, c]. Structs and arrays of structs are tuples.
"""

from __future__ import annotations

import numpy as np

from hydroplane.ref.layout import value_dtype, value_shape
from hydroplane.ref.ops import Op, register
from hydroplane.ref.values import broadcast_lanes, width
from hydroplane.spirv import types as T


def construct(t: T.Type, parts: list):
    """A composite of type `t` from its constituents (the rules of OpCompositeConstruct)."""
    if isinstance(t, T.CoopMatrix):
        s = np.asarray(parts[0])
        return np.broadcast_to(s.reshape(s.shape[0], 1, 1), (s.shape[0], t.rows, t.cols)).astype(t.component.dtype)
    if value_shape(t) is None:
        return tuple(parts)
    w = max(width(p) for p in parts)
    parts = [broadcast_lanes(p, w) for p in parts]
    if isinstance(t, T.Vector):
        cols = [p.reshape(w, -1) for p in parts]
        return np.concatenate(cols, axis=1).astype(value_dtype(t), copy=False)
    return np.stack(parts, axis=1).astype(value_dtype(t), copy=False)


def extract(value, indexes):
    for i in indexes:
        if isinstance(value, tuple):
            value = value[i]
        else:
            value = value[:, i]
    return value


def insert(composite, obj, indexes):
    if not indexes:
        return obj
    i, rest = indexes[0], indexes[1:]
    if isinstance(composite, tuple):
        return composite[:i] + (insert(composite[i], obj, rest),) + composite[i + 1:]
    w = max(width(composite), width(obj))
    out = np.array(broadcast_lanes(composite, w))
    sub = insert(out[:, i], obj, rest)
    out[:, i] = sub
    return out


@register(Op.CompositeConstruct)
def _composite_construct(ctx, inst):
    ctx.set(inst.result_id, construct(inst.type, [ctx.get(i) for i in inst.args]))


@register(Op.CompositeExtract)
def _composite_extract(ctx, inst):
    ctx.set(inst.result_id, extract(ctx.get(inst.args[0]), inst.literals))


@register(Op.CompositeInsert)
def _composite_insert(ctx, inst):
    obj, comp = ctx.get(inst.args[0]), ctx.get(inst.args[1])
    ctx.set(inst.result_id, insert(comp, obj, inst.literals))


@register(Op.CopyObject, Op.CopyLogical)
def _copy(ctx, inst):
    ctx.set(inst.result_id, ctx.get(inst.args[0]))


def _index(v: np.ndarray) -> np.ndarray:
    return v.astype(np.int64)


@register(Op.VectorExtractDynamic)
def _vector_extract_dynamic(ctx, inst):
    vec, idx = ctx.get(inst.args[0]), _index(ctx.get(inst.args[1]))
    w = max(vec.shape[0], idx.shape[0])
    vec = np.broadcast_to(vec, (w,) + vec.shape[1:])
    idx = np.broadcast_to(idx, (w,))
    ok = (idx >= 0) & (idx < vec.shape[1])
    r = vec[np.arange(w), np.where(ok, idx, 0)]
    ctx.set(inst.result_id, np.where(ok, r, np.zeros((), r.dtype)))


@register(Op.VectorInsertDynamic)
def _vector_insert_dynamic(ctx, inst):
    vec, comp, idx = ctx.get(inst.args[0]), ctx.get(inst.args[1]), _index(ctx.get(inst.args[2]))
    w = max(vec.shape[0], comp.shape[0], idx.shape[0])
    out = np.array(np.broadcast_to(vec, (w,) + vec.shape[1:]))
    idx = np.broadcast_to(idx, (w,))
    ok = (idx >= 0) & (idx < vec.shape[1])
    rows = np.arange(w)[ok]
    out[rows, idx[ok]] = np.broadcast_to(comp, (w,))[ok]
    ctx.set(inst.result_id, out)


@register(Op.VectorShuffle)
def _vector_shuffle(ctx, inst):
    a, b = ctx.get(inst.args[0]), ctx.get(inst.args[1])
    w = max(a.shape[0], b.shape[0])
    both = np.concatenate([np.broadcast_to(a, (w,) + a.shape[1:]), np.broadcast_to(b, (w,) + b.shape[1:])], axis=1)
    picks = [c if c != 0xFFFFFFFF else 0 for c in inst.literals]
    ctx.set(inst.result_id, both[:, picks])


@register(Op.Transpose)
def _transpose(ctx, inst):
    ctx.set(inst.result_id, np.swapaxes(ctx.get(inst.args[0]), 1, 2).copy())


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sum of products along the last axis, left to right, in the operands' precision."""
    prod = a * b
    acc = prod[..., 0]
    for i in range(1, prod.shape[-1]):
        acc = acc + prod[..., i]
    return acc


@register(Op.Dot)
def _op_dot(ctx, inst):
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, _dot(ctx.get(inst.args[0]), ctx.get(inst.args[1])))


@register(Op.VectorTimesScalar)
def _vector_times_scalar(ctx, inst):
    v, s = ctx.get(inst.args[0]), ctx.get(inst.args[1])
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, v * s.reshape(s.shape + (1,) * (v.ndim - 1)))


@register(Op.MatrixTimesScalar)
def _matrix_times_scalar(ctx, inst):
    m, s = ctx.get(inst.args[0]), ctx.get(inst.args[1])
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, m * s.reshape(s.shape + (1,) * (m.ndim - 1)))


@register(Op.MatrixTimesVector)
def _matrix_times_vector(ctx, inst):
    m, v = ctx.get(inst.args[0]), ctx.get(inst.args[1])  # m (W, cols, rows), v (W, cols)
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, _dot(np.swapaxes(m, 1, 2), v[:, None, :]))


@register(Op.VectorTimesMatrix)
def _vector_times_matrix(ctx, inst):
    v, m = ctx.get(inst.args[0]), ctx.get(inst.args[1])  # v (W, rows), m (W, cols, rows)
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, _dot(m, v[:, None, :]))


@register(Op.MatrixTimesMatrix)
def _matrix_times_matrix(ctx, inst):
    a, b = ctx.get(inst.args[0]), ctx.get(inst.args[1])  # a (W, k, rows), b (W, cols, k)
    with np.errstate(all="ignore"):
        # result column c = a @ b[:, c]: element (c, r) = sum_k a[k, r] * b[c, k]
        ctx.set(inst.result_id, _dot(np.swapaxes(a, 1, 2)[:, None, :, :], b[:, :, None, :]))


@register(Op.OuterProduct)
def _outer_product(ctx, inst):
    a, b = ctx.get(inst.args[0]), ctx.get(inst.args[1])  # column (rows), row (cols)
    with np.errstate(all="ignore"):
        ctx.set(inst.result_id, b[:, :, None] * a[:, None, :])
