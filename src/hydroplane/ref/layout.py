"""What the reference executor needs of a `hydroplane.spirv.types` type: its value's shape and dtype,
and where its scalars lie in memory.

A value of a type has a leading lane axis (see docs/ref.md): a scalar is shaped (W,), a vector
(W, n), a matrix (W, columns, rows), an array of numeric elements (W, length, *element), where
W is the lane count or 1 for a value every lane shares (`value_shape` gives the part after W).
A struct value (and an array of structs) is a tuple of member values. A cooperative matrix is
(instances, rows, cols) where instances counts subgroups or workgroups (its scope), not lanes.

Memory layout is `hydroplane.spirv.types`' own: explicit decorations (Offset, ArrayStride,
MatrixStride, RowMajor) where a type carries them, and the "scalar" rule where it has none
(Function, Private and Workgroup variables without explicit layout: every scalar aligned to its
own size, structs to their largest member). A bool, which has no size in explicitly laid out
memory, takes one byte in the executor's own memory.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hydroplane.ref.errors import InvalidModuleError
from hydroplane.spirv import types as T

MAX_TEMPLATE_ELEMENTS = 1 << 22
RULE = "scalar"
_BYTE = T.U8


def value_shape(t: T.Type) -> tuple[int, ...] | None:
    """The per-lane shape of a numeric value of `t`; None for tuple-valued and other types."""
    if isinstance(t, T.Scalar):
        return ()
    if isinstance(t, T.Vector):
        return (t.count,)
    if isinstance(t, T.Matrix):
        return (t.columns, t.column.count)
    if isinstance(t, T.Array) and t.length is not None:
        inner = value_shape(t.element)
        return None if inner is None else (t.length, *inner)
    return None


def value_dtype(t: T.Type | None) -> np.dtype | None:
    """The NumPy dtype of a numeric value of `t` (a cooperative matrix's component's); None otherwise."""
    if isinstance(t, T.Scalar):
        return t.dtype
    if isinstance(t, T.Vector | T.CoopMatrix):
        return t.component.dtype
    if isinstance(t, T.Matrix):
        return t.column.component.dtype
    if isinstance(t, T.Array) and t.length is not None and value_shape(t.element) is not None:
        return value_dtype(t.element)
    return None


@lru_cache(maxsize=4096)
def _in_memory(t: T.Type) -> T.Type:
    """`t` with every bool a byte (the executor's memory keeps a bool in one byte)."""
    if isinstance(t, T.Scalar):
        return _BYTE if t.kind == "bool" else t
    if isinstance(t, T.Vector):
        return T.Vector(_in_memory(t.component), t.count)
    if isinstance(t, T.Array):
        return T.Array(_in_memory(t.element), t.length, t.stride)
    if isinstance(t, T.Struct):
        return T.Struct(tuple(T.Member(_in_memory(m.type), m.offset, m.matrix_stride, m.row_major, m.name)
                              for m in t.members), t.block, t.name)
    return t


@lru_cache(maxsize=4096)
def size_of(t: T.Type) -> int:
    """Bytes an object of this type occupies; TypeError for a type with no memory layout."""
    try:
        return T.size(_in_memory(t), RULE)
    except T.TypeModelError as err:
        raise TypeError(str(err)) from None


def has_layout(t: T.Type) -> bool:
    """Whether objects of `t` can live in memory (cooperative matrices and opaque types cannot)."""
    try:
        size_of(t)
        return True
    except TypeError:
        return False


@lru_cache(maxsize=4096)
def array_stride(t: T.Array) -> int:
    """Bytes between the elements of an array: its ArrayStride, else the scalar-layout stride."""
    return t.stride if t.stride is not None else T.array_stride(_in_memory(t), RULE)


@lru_cache(maxsize=4096)
def member_offsets(t: T.Struct) -> tuple[int, ...]:
    """The byte offset of each member: the Offset decorations, else the scalar layout's."""
    return tuple(T.member_offsets(_in_memory(t), RULE))


def matrix_stride(t: T.Matrix, decorated: int | None, row_major: bool = False) -> int:
    """Bytes between a matrix's columns (rows when row-major): the MatrixStride decoration, else packed."""
    return decorated if decorated is not None else T.matrix_stride(t, RULE, row_major=row_major)


@lru_cache(maxsize=4096)
def element_template(t: T.Type, mstride: int | None = None, row_major: bool = False,
                     vstride: int | None = None) -> np.ndarray:
    """Byte offsets, relative to the object, of every scalar of a numeric type, shaped like its value.

    `mstride` and `row_major` are the MatrixStride/RowMajor of the struct member the matrix sits in;
    `vstride` spaces a vector's components (a column of a RowMajor matrix: the MatrixStride)."""
    if isinstance(t, T.Scalar):
        out = np.zeros((), np.int64)
    elif isinstance(t, T.Vector):
        out = np.arange(t.count, dtype=np.int64) * (vstride or t.component.dtype.itemsize)
    elif isinstance(t, T.Matrix):
        item = t.column.component.dtype.itemsize
        stride = matrix_stride(t, mstride, row_major)
        col = np.arange(t.columns, dtype=np.int64)[:, None]
        row = np.arange(t.column.count, dtype=np.int64)[None, :]
        out = row * stride + col * item if row_major else col * stride + row * item
    elif isinstance(t, T.Array) and t.length is not None:
        if t.length > MAX_TEMPLATE_ELEMENTS:
            raise InvalidModuleError(f"a whole-array access of {t.length} elements ({t}) is more than the "
                                     f"executor's {MAX_TEMPLATE_ELEMENTS}")
        inner = element_template(t.element, mstride, row_major)
        steps = np.arange(t.length, dtype=np.int64) * array_stride(t)
        out = steps.reshape((t.length,) + (1,) * inner.ndim) + inner[None]
    else:
        raise TypeError(f"type {t} is not numeric")
    out.setflags(write=False)
    return out
