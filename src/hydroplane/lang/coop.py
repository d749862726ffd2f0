"""Cooperative matrices as values (`hydroplane.coop`): types, constants and builtins of the surface.

    MatA = coop.Matrix[f16, M, K, coop.A]           # component, rows, cols, use[, scope]
    a = coop.load(MatA, buf, offset, stride, coop.RowMajor)
    acc = coop.mul_add(a, b, acc)                   # signedness operands from the component types
    coop.store(acc, out, offset, stride, coop.RowMajor)

Element-wise `+ - * /` between matrices of one type, `m * scalar`, `-m`, `m[i]` element
access (a run-time index needs the matrix in a variable), `coop.length(m)`,
`coop.convert(m, dtype)`, and the EXT maintenance1 operations: `convert_use`, `transpose`,
`map(fn, m, *extra)` (fn(row, col, element, *extra) per element), `reduce(m, mode, combine)`,
`coordinate(m, i)` -> (row, col). `largest_shape(f16, f32)` as a constexpr's value asks the
target for its largest tile. The semantics are in coop_semantic.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from hydroplane.lang.core import TargetQuery, builtin
from hydroplane.lang.errors import SemanticError
from hydroplane.spirv import types
from hydroplane.spirv.enums import CooperativeMatrixLayout, CooperativeMatrixReduce, CooperativeMatrixUse, Scope
from hydroplane.spirv.target import UnsupportedOnTarget

A = CooperativeMatrixUse.MatrixAKHR
B = CooperativeMatrixUse.MatrixBKHR
Accumulator = CooperativeMatrixUse.MatrixAccumulatorKHR
RowMajor = CooperativeMatrixLayout.RowMajorKHR
ColumnMajor = CooperativeMatrixLayout.ColumnMajorKHR
Row = CooperativeMatrixReduce.Row
Column = CooperativeMatrixReduce.Column
Quad2x2 = CooperativeMatrixReduce.CooperativeMatrixReduce2x2
Subgroup = Scope.Subgroup
Workgroup = Scope.Workgroup
SCOPES = (Scope.Subgroup, Scope.Workgroup)


def matrix_type(component, rows, cols, use, scope=Scope.Subgroup) -> types.CoopMatrix:
    """A checked cooperative-matrix type (what `coop.Matrix[...]` makes)."""
    if not isinstance(component, types.Scalar) or component.kind == "bool":
        raise SemanticError(f"a matrix's component is a numeric dtype, not {component!r}")
    for what, n in (("rows", rows), ("cols", cols)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise SemanticError(f"bad matrix shape: {what} must be a positive constexpr int, not {n!r}")
    try:
        use = CooperativeMatrixUse(use) if not isinstance(use, str) else types.coop_use(use)
    except (ValueError, types.TypeModelError):
        raise SemanticError(f"a matrix's use is coop.A, coop.B or coop.Accumulator, not {use!r}") from None
    if scope not in SCOPES:
        raise SemanticError(f"a matrix's scope is coop.Subgroup or coop.Workgroup, not {scope!r}")
    return types.CoopMatrix(component, rows, cols, use, Scope(scope))


@dataclass(frozen=True)
class TargetShape(TargetQuery):
    """A constexpr the target answers: the largest m x n x k tile it offers for A type `a` and accumulator
    `c` (`default` where the target lists no fixed shapes, as the reference executor)."""

    a: object
    c: object
    default: tuple[int, int, int] = (16, 16, 16)
    scope: Scope = Scope.Subgroup

    def resolve(self, target) -> tuple[int, int, int]:
        if target is None:
            raise SemanticError(f"largest_shape({self.a}, {self.c}) asks the target: compile with target=...")
        if target.is_reference:
            return self.default
        try:
            shape = target.largest_shape(self.a, self.c, self.scope)
        except UnsupportedOnTarget as err:
            raise SemanticError(str(err)) from None
        return shape.m, shape.n, shape.k


def largest_shape(a, c, default=(16, 16, 16), scope=Scope.Subgroup) -> TargetShape:
    """`SHAPE: constexpr = coop.largest_shape(f16, f32)`: (M, N, K) of the largest tile the target offers."""
    return TargetShape(a, c, tuple(default), Scope(scope))


class Matrix:
    """`Matrix[component, rows, cols, use]` or `Matrix[component, rows, cols, use, scope]`: a matrix type."""

    def __class_getitem__(cls, item):
        if not isinstance(item, tuple) or len(item) not in (4, 5):
            raise TypeError("Matrix[component, rows, cols, use] or Matrix[component, rows, cols, use, scope]")
        return matrix_type(*item)


@builtin
def load(matrix_type_, source, offset, stride, layout=RowMajor, *, _semantic):
    """A matrix of type `matrix_type_` from a buffer or shared array at element `offset`, rows (or
    columns, ColumnMajor) `stride` elements apart."""
    return _semantic.coop_load(matrix_type_, source, offset, stride, layout)


@builtin
def store(matrix, target, offset, stride, layout=RowMajor, *, _semantic):
    """Store a matrix into a buffer or shared array (as load)."""
    _semantic.coop_store(matrix, target, offset, stride, layout)


@builtin
def mul_add(a, b, c, saturating=False, *, _semantic):
    """a * b + c (a MxK use A, b KxN use B, c MxN Accumulator); integer signedness from the component types."""
    return _semantic.coop_mul_add(a, b, c, saturating)


@builtin
def fill(matrix_type_, value, *, _semantic):
    """A matrix of the type with every element `value`."""
    return _semantic.coop_fill(matrix_type_, value)


@builtin
def length(matrix, *, _semantic):
    """Elements of the matrix held by this invocation (s32)."""
    return _semantic.coop_length(matrix)


@builtin
def convert(matrix, dtype, use=None, *, _semantic):
    """Element-wise conversion to another component type (same shape; same use, or with `use` a float
    Accumulator to A or B in the same step: NV2's conversions, for an input type with no accumulator of its own)."""
    return _semantic.coop_convert(matrix, dtype, use)


@builtin
def convert_use(matrix, use, *, _semantic):
    """Accumulator -> A or B, or A or B -> Accumulator (EXT maintenance1 ConvertUse)."""
    return _semantic.coop_convert_use(matrix, use)


@builtin
def transpose(matrix, use=None, *, _semantic):
    """The transposed matrix with another use (default: Accumulator -> B, A/B -> Accumulator)."""
    return _semantic.coop_transpose(matrix, use)


@builtin
def map(fn, matrix, *extra, _semantic):  # noqa: A001 -- the name the language gives it
    """fn(row, col, element, *extra) for every element: run-time extras (and number literals) are operands
    (an extra matrix gives its element), compile-time ones (buffers, bools, types) are bound in fn."""
    return _semantic.coop_map(fn, matrix, extra)


@builtin
def reduce(matrix, mode, combine, *, _semantic):
    """Combine rows (Row), columns (Column), everything (Row | Column) or 2x2 blocks (Quad2x2) with combine(x, y)."""
    return _semantic.coop_reduce(matrix, mode, combine)


@builtin
def coordinate(matrix, index, *, _semantic):
    """(row, col) of this invocation's element `index` of the matrix."""
    return _semantic.coop_coordinate(matrix, index)
