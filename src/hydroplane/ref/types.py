"""The types of a module as Python objects, with the NumPy shape and dtype of their values.

A value of a type has a leading lane axis (see docs/ref.md): a scalar is shaped (W,), a vector
(W, n), a matrix (W, columns, rows), an array of numeric elements (W, length, *element), where
W is the lane count or 1 for a value every lane shares. A struct value (and an array of structs)
is a tuple of member values. A cooperative matrix is (instances, rows, cols) where instances
counts subgroups or workgroups (its scope), not lanes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from hydroplane.ref.errors import InvalidModuleError

FLOAT_DTYPES = {
    (16, None): np.dtype(np.float16),
    (32, None): np.dtype(np.float32),
    (64, None): np.dtype(np.float64),
    (16, "BFloat16KHR"): np.dtype(ml_dtypes.bfloat16),
    (8, "Float8E4M3EXT"): np.dtype(ml_dtypes.float8_e4m3fn),
    (8, "Float8E5M2EXT"): np.dtype(ml_dtypes.float8_e5m2),
}


class Type:
    """Base of every type; `shape` is the per-lane component shape, None for tuple-valued types."""

    shape: tuple[int, ...] | None = None
    dtype: np.dtype | None = None

    @property
    def numeric(self) -> bool:
        return self.shape is not None


@dataclass(eq=False)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(eq=False)
class BoolType(Type):
    shape = ()
    dtype = np.dtype(np.bool_)

    def __str__(self) -> str:
        return "bool"


@dataclass(eq=False)
class IntType(Type):
    width: int
    signed: bool
    shape = ()

    def __post_init__(self):
        self.dtype = np.dtype(f"{'i' if self.signed else 'u'}{self.width // 8}")

    def __str__(self) -> str:
        return f"{'i' if self.signed else 'u'}{self.width}"


@dataclass(eq=False)
class FloatType(Type):
    width: int
    encoding: str | None = None  # FPEncoding name, None for IEEE binary
    shape = ()

    def __post_init__(self):
        self.dtype = FLOAT_DTYPES[(self.width, self.encoding)]

    def __str__(self) -> str:
        return self.encoding or f"f{self.width}"


@dataclass(eq=False)
class VectorType(Type):
    component: Type
    count: int

    def __post_init__(self):
        self.shape = (self.count,)
        self.dtype = self.component.dtype

    def __str__(self) -> str:
        return f"vec{self.count}<{self.component}>"


@dataclass(eq=False)
class MatrixType(Type):
    column: VectorType
    columns: int

    def __post_init__(self):
        self.shape = (self.columns, self.column.count)
        self.dtype = self.column.dtype

    def __str__(self) -> str:
        return f"mat{self.columns}x{self.column.count}<{self.column.component}>"


@dataclass(eq=False)
class ArrayType(Type):
    element: Type
    length: int | None  # None for OpTypeRuntimeArray
    stride: int | None  # ArrayStride decoration, None when the type has no explicit layout

    def __post_init__(self):
        if self.element.shape is not None and self.length is not None:
            self.shape = (self.length, *self.element.shape)
            self.dtype = self.element.dtype

    def __str__(self) -> str:
        return f"{self.element}[{'' if self.length is None else self.length}]"


@dataclass(eq=False)
class StructType(Type):
    members: list[Type]
    offsets: list[int | None]  # Offset decorations
    matrix_strides: list[int | None]  # MatrixStride decorations
    row_major: list[bool]
    block: bool = False

    def __str__(self) -> str:
        return "struct{" + ", ".join(map(str, self.members)) + "}"


@dataclass(eq=False)
class PointerType(Type):
    storage: str  # StorageClass name
    pointee_id: int
    stride: int | None = None  # ArrayStride on the pointer type (for OpPtrAccessChain)
    pointee: Type | None = None  # resolved after every type is known (forward pointers)

    def __str__(self) -> str:
        return f"ptr<{self.storage}, {self.pointee}>"


@dataclass(eq=False)
class FunctionType(Type):
    result: Type
    params: list[Type]


@dataclass(eq=False)
class CooperativeMatrixType(Type):
    """OpTypeCooperativeMatrixKHR / NV: values are (instances, rows, cols) arrays."""

    component: Type
    scope: int  # Scope enumerant value: 2 Workgroup, 3 Subgroup
    rows: int
    cols: int
    use: int | None  # CooperativeMatrixUse value; None for the NV legacy type
    family: str = "KHR"

    def __post_init__(self):
        self.dtype = self.component.dtype

    def __str__(self) -> str:
        return f"coopmat<{self.component}, scope {self.scope}, {self.rows}x{self.cols}, use {self.use}>"


@dataclass(eq=False)
class OpaqueType(Type):
    """A type the executor carries but whose values are Python objects (NV2 tensor layouts, ...)."""

    opcode: int
    operands: list = field(default_factory=list)

    def __str__(self) -> str:
        return f"opaque({self.opcode})"


MAX_TEMPLATE_ELEMENTS = 1 << 22
SCOPE_WORKGROUP = 2
SCOPE_SUBGROUP = 3


def scalar_of(t: Type) -> Type:
    """The scalar component type of a scalar, vector, matrix or cooperative matrix type."""
    while True:
        if isinstance(t, VectorType):
            t = t.component
        elif isinstance(t, MatrixType):
            t = t.column
        elif isinstance(t, CooperativeMatrixType):
            t = t.component
        elif isinstance(t, ArrayType):
            t = t.element
        else:
            return t


def natural_alignment(t: Type) -> int:
    """Alignment used where a type has no explicit layout (Workgroup, Function, Private)."""
    if isinstance(t, StructType):
        return max((natural_alignment(m) for m in t.members), default=1)
    if isinstance(t, ArrayType):
        return natural_alignment(t.element)
    if isinstance(t, PointerType):
        return 8
    s = scalar_of(t)
    return s.dtype.itemsize if s.dtype is not None else 1


def size_of(t: Type) -> int:
    """Bytes an object of this type occupies (explicit layout where decorated, natural otherwise)."""
    if isinstance(t, (BoolType, IntType, FloatType)):
        return t.dtype.itemsize
    if isinstance(t, VectorType):
        return t.count * t.component.dtype.itemsize
    if isinstance(t, MatrixType):
        return t.columns * size_of(t.column)
    if isinstance(t, ArrayType):
        if t.length is None:
            return 0
        return t.length * array_stride(t)
    if isinstance(t, StructType):
        offs = member_offsets(t)
        end = 0
        for off, m in zip(offs, t.members):
            end = max(end, off + size_of(m))
        align = natural_alignment(t)
        return -(-end // align) * align if not t.offsets or None in t.offsets else end
    if isinstance(t, PointerType):
        return 8
    raise TypeError(f"type {t} has no size in memory")


def array_stride(t: ArrayType) -> int:
    if t.stride is not None:
        return t.stride
    size = size_of(t.element)
    align = natural_alignment(t.element)
    return -(-size // align) * align


def member_offsets(t: StructType) -> list[int]:
    if t.offsets and None not in t.offsets:
        return list(t.offsets)
    out, pos = [], 0
    for m in t.members:
        align = natural_alignment(m)
        pos = -(-pos // align) * align
        out.append(pos)
        pos += size_of(m)
    return out


def matrix_stride(t: MatrixType, decorated: int | None) -> int:
    return decorated if decorated is not None else size_of(t.column)


def element_template(t: Type, mstride: int | None = None, row_major: bool = False,
                     vstride: int | None = None) -> np.ndarray:
    """Byte offsets, relative to the object, of every scalar of a numeric type, shaped like its value.

    `vstride` spaces a vector's components (a column of a RowMajor matrix: the MatrixStride)."""
    if isinstance(t, (BoolType, IntType, FloatType)):
        return np.zeros((), np.int64)
    if isinstance(t, VectorType):
        return np.arange(t.count, dtype=np.int64) * (vstride or t.component.dtype.itemsize)
    if isinstance(t, MatrixType):
        item = t.column.component.dtype.itemsize
        stride = matrix_stride(t, mstride)
        col = np.arange(t.columns, dtype=np.int64)[:, None]
        row = np.arange(t.column.count, dtype=np.int64)[None, :]
        return row * stride + col * item if row_major else col * stride + row * item
    if isinstance(t, ArrayType) and t.length is not None:
        if t.length > MAX_TEMPLATE_ELEMENTS:
            raise InvalidModuleError(f"a whole-array access of {t.length} elements ({t}) is more than the "
                                     f"executor's {MAX_TEMPLATE_ELEMENTS}")
        inner = element_template(t.element, mstride, row_major)
        steps = np.arange(t.length, dtype=np.int64) * array_stride(t)
        return steps.reshape((t.length,) + (1,) * inner.ndim) + inner[None]
    raise TypeError(f"type {t} is not numeric")
