"""Runtime values: masked merging of lane-vector values, pointers, and conversion helpers.

A value is a NumPy array whose leading axis is the lane axis (length W = lanes, or 1 when
every lane holds the same value and it broadcasts), a tuple of values (structs, arrays of
structs), a `Pointer`, or for cooperative matrices an array whose leading axis counts scope
instances (subgroups or workgroups).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from hydroplane.ref.layout import value_dtype, value_shape
from hydroplane.spirv.types import Array, CoopMatrix, Struct, Type


class Cell:
    """The value of a register variable; `lanes` counts the lanes of the call that allocated it."""

    __slots__ = ("value", "lanes", "name")

    def __init__(self, lanes: int, name: str = "", value=None):
        self.value = value
        self.lanes = lanes
        self.name = name


@dataclass(eq=False)
class Pointer:
    """A pointer: a memory region plus a byte offset per lane (width W or 1).

    `region` is None for a register variable (`var` is its `Cell`): a Function/Private variable
    that is only loaded and stored whole, kept as a value instead of memory (or, with `elem_of`,
    one element of a cooperative-matrix register variable: OpAccessChain %m %i). `mstride` and
    `row_major` carry the MatrixStride/RowMajor decorations of the struct member the chain
    went through, for matrices inside explicitly laid out blocks.
    """

    region: object | None
    offset: np.ndarray
    type: Type  # the pointee type
    var: Cell | None = None
    mstride: int | None = None
    row_major: bool = False
    elem_stride: int | None = None  # ArrayStride of the pointer type, for OpPtrAccessChain
    vstride: int | None = None  # component spacing of a vector that is a column of a RowMajor matrix
    elem_of: Type | None = None  # the cooperative-matrix type when this points at one element of a matrix
    #                              register variable; `offset` is then the element index per lane

    def with_offset(self, offset: np.ndarray, type: Type, **kw) -> Pointer:
        return replace(self, offset=offset, type=type, **kw)


def expand_mask(mask: np.ndarray, ndim: int) -> np.ndarray:
    """The lane mask shaped to broadcast against a value of `ndim` dimensions."""
    return mask.reshape(mask.shape + (1,) * (ndim - 1)) if ndim > 1 else mask


def merge(mask: np.ndarray, new, old):
    """Lanes where mask is set take `new`, the others keep `old` (values of one type)."""
    if isinstance(new, tuple):
        return tuple(merge(mask, n, o) for n, o in zip(new, old))
    if isinstance(new, Pointer):
        if new.region is not old.region or new.var is not old.var:
            raise TypeError("pointers to different objects cannot be merged per lane")
        return new.with_offset(np.where(mask, new.offset, old.offset), new.type)
    if not isinstance(new, np.ndarray) or not isinstance(old, np.ndarray):
        return new
    m = expand_mask(mask, max(new.ndim, old.ndim))
    return np.where(m, new, old)


def width(value) -> int:
    """Lane width of a value (1 for a shared value)."""
    if isinstance(value, tuple):
        return max((width(v) for v in value), default=1)
    if isinstance(value, Pointer):
        return value.offset.shape[0]
    return value.shape[0]


def broadcast_lanes(value, lanes: int):
    """The value with its lane axis materialised to `lanes` (a view where possible)."""
    if isinstance(value, tuple):
        return tuple(broadcast_lanes(v, lanes) for v in value)
    if isinstance(value, Pointer):
        return value.with_offset(np.broadcast_to(value.offset, (lanes,)), value.type)
    if value.shape[0] == lanes:
        return value
    return np.broadcast_to(value, (lanes,) + value.shape[1:])


def take_lanes(value, lanes: np.ndarray):
    """The value at the given lane indices (a shared value stays shared)."""
    if isinstance(value, tuple):
        return tuple(take_lanes(v, lanes) for v in value)
    if isinstance(value, Pointer):
        return value.with_offset(value.offset if value.offset.shape[0] == 1 else value.offset[lanes], value.type)
    return value if value.shape[0] == 1 else value[lanes]


def as_signed(v: np.ndarray) -> np.ndarray:
    """An integer array reinterpreted as signed of the same width (bool and float unchanged)."""
    if v.dtype.kind == "u":
        return v.view(np.dtype(f"i{v.dtype.itemsize}"))
    return v


def as_unsigned(v: np.ndarray) -> np.ndarray:
    if v.dtype.kind == "i":
        return v.view(np.dtype(f"u{v.dtype.itemsize}"))
    return v


def reinterpret(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Same bits, another dtype of the same width; integers of other widths are cast (wrapping)."""
    if v.dtype == dtype:
        return v
    if v.dtype.itemsize == dtype.itemsize and v.dtype.kind != "b" and dtype.kind != "b":
        return np.ascontiguousarray(v).view(dtype)
    return v.astype(dtype)


def zeros_of(t: Type, lanes: int):
    """A value of type `t` with every component zero (OpConstantNull, undefined values; a cooperative
    matrix has one instance, shared)."""
    shape = value_shape(t)
    if shape is not None:
        return np.zeros((lanes,) + shape, value_dtype(t))
    if isinstance(t, CoopMatrix):
        return np.zeros((1, t.rows, t.cols), t.component.dtype)
    if isinstance(t, Struct):
        return tuple(zeros_of(m, lanes) for m in t.member_types)
    if isinstance(t, Array) and t.length is not None:
        inner = zeros_of(t.element, lanes)
        return tuple(inner for _ in range(t.length))
    raise TypeError(f"no zero value for {t}")
